"""Upgrades of store files written by older versions, one step per format version.

Each step runs in its own write transaction and re-reads the version first (another process may have
upgraded the store meanwhile). A store that cannot be upgraded now (read-only, or another writer holding it
too long) stays at its version: every read works on it, and writes keep its format.

    >>> import tempfile
    >>> from pathrag.sqlite import SQLiteStore
    >>> SQLiteStore(tempfile.mkdtemp()).format_version  # a new store is written in the current format
    4
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

from .schema import COUNT_DEGREES, FORMAT_VERSION, SCHEMA_VECTORS, STORED_TEXT, VECTOR_TRIGGERS

if TYPE_CHECKING:
    from .store import SQLiteStore

__all__ = ["upgrade"]

logger = logging.getLogger(__name__)


def _chunk_texts_once(store: SQLiteStore) -> None:
    """1 -> 2: the vectors table without the copies of chunk texts (its ``text`` may now be empty)."""
    store.execute(SCHEMA_VECTORS.replace("vectors", "vectors_v2"))
    store.execute(f"INSERT INTO vectors_v2 SELECT v.space, v.id, {STORED_TEXT}, v.metadata, v.vector FROM vectors v")
    store.execute("DROP TABLE vectors")  # its triggers go with it
    store.execute("ALTER TABLE vectors_v2 RENAME TO vectors")


def _degrees_and_vector_log(store: SQLiteStore) -> None:
    """2 -> 3: degrees counted once from the relations, and a vector log starting now (search indexes
    built before it are rebuilt)."""
    for trigger in VECTOR_TRIGGERS:  # a vectors table the previous step replaced lost them
        store.execute(trigger)
    store.execute("DELETE FROM degrees")
    store.execute(COUNT_DEGREES)
    store.execute("DELETE FROM vector_log")


def _mentions_describe(store: SQLiteStore) -> None:
    """3 -> 4: which mentions describe the entity (see :func:`~pathrag.sqlite.codec.mention_rows`). The
    rows kept say 1, "may describe it", which is always safe: a rebuild then reads those chunks, as it did."""
    if "describes" not in {row[1] for row in store.wread("PRAGMA table_info(mentions)")}:
        store.execute("ALTER TABLE mentions ADD COLUMN describes INTEGER NOT NULL DEFAULT 1")


STEPS: dict[int, Callable[[SQLiteStore], None]] = {
    2: _chunk_texts_once,
    3: _degrees_and_vector_log,
    4: _mentions_describe,
}
"""The step that brings a store to each format version from the one before."""
assert max(STEPS) == FORMAT_VERSION


def upgrade(store: SQLiteStore) -> None:
    """Bring ``store`` to :data:`~pathrag.sqlite.schema.FORMAT_VERSION`, step by step; stop at the first
    step that cannot run now (logged), leaving the store at the last version it reached."""
    start = store.format_version
    for version in range(start + 1, FORMAT_VERSION + 1):
        try:
            with store.transaction():
                ((found,),) = store.wread("SELECT value FROM meta WHERE key = 'format_version'")
                if int(found) < version:
                    STEPS[version](store)
                    store.set_meta({"format_version": version})
                store.format_version = max(version, int(found))
        except sqlite3.OperationalError as exc:
            logger.info("%s stays in format %d (%s)", store.path, store.format_version, exc)
            return
    if store.format_version > start:
        logger.info("%s: upgraded from store format %d to %d", store.path, start, store.format_version)
