"""The older JSON store format, all of it: its files, their readers, and its one-time migration.

Before ``pathrag.sqlite`` an index directory held ``documents.json``, ``graph.json`` (a
:class:`~pathrag.NetworkXGraphStore` saved with :meth:`~pathrag.NetworkXGraphStore.save`), the
``chunks.jsonl`` and ``llm_cache.jsonl`` journals, one ``*.vectors.json`` per vector space (an
:class:`~pathrag.vectors.memory.InMemoryVectorIndex` saved with its ``save``) and, for the command line,
``cli.json`` (the embeddings). :func:`migrate_json_store` turns such a directory into a store the first
time it is opened, then moves those files to ``json-store-backup/``.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..files import Journal, atomic_write_text
from ..graphs.memory import NetworkXGraphStore
from .schema import STORE_FILE
from .snapshot import write_snapshot
from .store import SQLiteStore, store_exists

__all__ = [
    "CLI_FILE",
    "LEGACY_BACKUP",
    "LEGACY_FILES",
    "cli_embedder",
    "legacy_files",
    "migrate_json_store",
    "move_legacy_files",
    "read_json",
    "write_json",
]

logger = logging.getLogger(__name__)

CLI_FILE = "cli.json"
"""The command line's record of the embeddings a JSON-format store was built with."""
LEGACY_FILES = (
    "documents.json",
    "graph.json",
    "chunks.jsonl",
    "llm_cache.jsonl",
    "entities.vectors.json",
    "relations.vectors.json",
    "chunks.vectors.json",
    CLI_FILE,
)
LEGACY_BACKUP = "json-store-backup"


def read_json(path: str | os.PathLike[str], default: Any) -> Any:
    """Load a JSON snapshot, or ``default`` when there is none; a damaged file is a clear error."""
    path = Path(path)
    if not path.exists():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write a JSON snapshot atomically."""
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, sort_keys=True))


def cli_embedder(directory: str | os.PathLike[str]) -> str | None:
    """The embeddings spec ``cli.json`` in ``directory`` records (``None``: no file, or it names none).

    Raises:
        ValueError: the file cannot be read or is not JSON (the message names it).
    """
    data = read_json(Path(directory) / CLI_FILE, {})
    spec = data.get("embeddings") if isinstance(data, dict) else None
    return spec if isinstance(spec, str) else None


def legacy_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The files of the pre-SQLite JSON format present in ``directory``."""
    return [Path(directory) / name for name in LEGACY_FILES if (Path(directory) / name).exists()]


def move_legacy_files(directory: Path) -> Path:
    """Move the migrated JSON files aside (kept, not deleted: nothing is lost)."""
    backup = directory / LEGACY_BACKUP
    backup.mkdir(exist_ok=True)
    for path in legacy_files(directory):
        shutil.move(str(path), backup / path.name)
    return backup


def migrate_json_store(directory: str | os.PathLike[str]) -> bool:
    """Turn a store of the pre-SQLite JSON format in ``directory`` into ``pathrag.sqlite``, once.

    Everything is carried over as it is (vectors included: nothing is re-embedded or re-extracted). The
    new file appears atomically, then the JSON files move to ``json-store-backup/``. Returns whether a
    migration happened; a one-line message says so.
    """
    directory = Path(directory)
    found = legacy_files(directory)
    if store_exists(directory) or not [p for p in found if p.name != CLI_FILE]:
        return False
    try:
        return _migrate(directory, found)
    except StoreError:
        raise
    except ValueError as exc:  # a damaged JSON file, named by its reader
        raise StoreError(
            f"{exc} (the JSON store was not migrated): restore the file from a backup, or move the "
            "JSON files aside and index the documents again"
        ) from exc


def _migrate(directory: Path, found: list[Path]) -> bool:
    state = read_json(directory / "documents.json", {})
    chunks = [r for r in Journal(directory / "chunks.jsonl").read() if "id" in r and "entities" in r]
    cache = {r["key"]: r["answer"] for r in Journal(directory / "llm_cache.jsonl").read() if "key" in r}
    _check_no_chunk_lost(directory, state, chunks)
    graph = NetworkXGraphStore.load(directory) if (directory / "graph.json").exists() else None
    vectors = _legacy_vectors(directory)
    meta: dict[str, Any] = {"migrated_from": "json"}
    embedder = cli_embedder(directory)
    if embedder is not None:
        meta["embedder"] = embedder
    if graph is not None:
        meta["directed_relations"] = int(graph.directed_relations)
    staging = directory / ".migrating"
    shutil.rmtree(staging, ignore_errors=True)
    store = SQLiteStore(staging)
    try:
        write_snapshot(
            store,
            documents=state.get("documents", {}),
            chunks=chunks,
            summaries=state.get("summaries", {}),
            cache=cache,
            entities=graph.iter_entities() if graph else (),
            relations=graph.iter_relations() if graph else (),
            vectors=vectors,
            meta=meta,
        )
    finally:
        store.close()  # the last connection: the WAL is folded into the file
    os.replace(staging / STORE_FILE, directory / STORE_FILE)
    shutil.rmtree(staging, ignore_errors=True)
    backup = move_legacy_files(directory)
    logger.warning(
        "pathrag: migrated the JSON store %s to %s (%d documents); the old files are kept in %s",
        directory,
        STORE_FILE,
        len(state.get("documents", {})),
        backup,
    )
    return True


def _check_no_chunk_lost(directory: Path, state: Mapping[str, Any], chunks: list[dict[str, Any]]) -> None:
    """Refuse a torn or garbled journal: migrating would drop the records of the chunks it lacks."""
    known = {r["id"] for r in chunks}
    missing = [
        cid
        for doc in state.get("documents", {}).values()
        for cid in doc.get("chunks", [])
        if cid not in known and cid not in doc.get("failed", [])
    ]
    if missing:
        raise StoreError(
            f"{directory / 'chunks.jsonl'} lacks {len(missing)} chunk(s) that documents.json lists "
            f"(damaged?), e.g. {missing[0]}: restore it from a backup, or move the JSON files aside "
            "and index the documents again"
        )


def _legacy_vectors(directory: Path) -> dict[str, list[tuple[str, str, Mapping[str, Any], bytes]]]:
    """The rows of each vector space saved as ``<space>.vectors.json`` (a space without its file: none)."""
    vectors: dict[str, list[tuple[str, str, Mapping[str, Any], bytes]]] = {}
    for space in ("entities", "relations", "chunks"):
        data = read_json(directory / f"{space}.vectors.json", None)
        if data is not None:
            try:
                vectors[space] = [
                    (r["id"], r["text"], r["metadata"], base64.b64decode(r["vector"])) for r in data["items"]
                ]
            except (KeyError, TypeError, ValueError) as exc:
                raise StoreError(f"cannot read {directory / f'{space}.vectors.json'}: {exc}") from exc
    return vectors
