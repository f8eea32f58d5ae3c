"""The store's connections: :class:`SQLiteStore` (a writer and per-thread readers on one file, transactions,
the ``meta`` table, the format upgrade) and the write-step counter of the crash tests. Its reads and read
snapshots are :mod:`pathrag.sqlite.reads`; the file itself (made whole or not at all, refused when it is not a
regular file) :mod:`pathrag.sqlite.storefile`.

Crash testing: every statement the writer sends is a *write step*. With ``PATHRAG_CRASH_AFTER_WRITE=k``
in the environment (or :data:`crash_after_write` of this module set), the process kills itself with SIGKILL
right after its k-th write step, which lets a test stop a commit at each of its boundaries.

>>> import tempfile
>>> store = SQLiteStore(tempfile.mkdtemp())
>>> with store.transaction():
...     store.set_meta({"embedder": "hashing-256"})
>>> store.meta()["embedder"]
'hashing-256'
>>> store.close()
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import StoreError, StoreFormatError
from .migrations import upgrade
from .reads import StoreReads
from .schema import FORMAT, FORMAT_VERSION, SCHEMA, STORE_FILE
from .storefile import (
    can_write,
    create_store_file,
    damage_error,
    new_empty_file,
    read_only_uri,
    read_store_info,
    refuse_special_files,
    store_exists,
)
from .wal import check_wal

__all__ = [
    "STAGED_ROWS",
    "SQLiteStore",
    "crash_after_write",
    "read_store_info",
    "store_exists",
    "write_steps",
    "write_store_info",
]

logger = logging.getLogger(__name__)

_env_crash = os.environ.get("PATHRAG_CRASH_AFTER_WRITE", "").strip()
crash_after_write: int | None = int(_env_crash) if _env_crash.isdigit() else None
"""Test hook: kill this process (SIGKILL) right after this many write steps (``None``: never)."""
write_steps = 0
"""Write steps (SQL statements sent by writers) in this process so far; the crash tests count with it."""


def _batched(rows: Iterator[Sequence[Any]], size: int) -> Iterator[list[Sequence[Any]]]:
    while batch := list(itertools.islice(rows, size)):
        yield batch


def _count_write_step() -> None:
    global write_steps
    write_steps += 1
    if crash_after_write is not None and write_steps >= crash_after_write:
        os.kill(os.getpid(), signal.SIGKILL)


STAGED_ROWS = 1 << 14
"""Rows one statement of :meth:`SQLiteStore.insert_rows` takes (a bounded temporary table: 28 MB of 384-dimensional
vectors rows, 100 MB of 1,536-dimensional ones)."""


class SQLiteStore(StoreReads):
    """One ``pathrag.sqlite`` in ``directory``: a writer connection and a reader connection.

    The writer runs in autocommit mode except inside :meth:`transaction`; the reader only ever sees
    committed state (WAL), so a retrieval running while a commit is being written answers from the state
    before it. Both connections are guarded by locks, so threads may share one store object.
    """

    def __init__(
        self, directory: str | os.PathLike[str], *, create: bool = True, initial_meta: Mapping[str, Any] | None = None
    ) -> None:
        self.directory = Path(directory)
        self.path = self.directory / STORE_FILE
        refuse_special_files(self.path)
        if not self.path.exists():
            if not create:
                raise StoreError(f"no pathrag store at {self.directory}")
            create_store_file(self.path, initial_meta or {})
        self.read_only = not can_write(self.directory, self.path)
        """Opened for reading only (a read-only file, directory or mount): every write is refused."""
        self._writer: sqlite3.Connection | None = None
        self._readers: list[sqlite3.Connection] = []  # one per thread (see _r)
        self._local = threading.local()
        self._idle: list[sqlite3.Connection] = []  # snapshot connections free for the next snapshot
        self._wlock = threading.RLock()
        self._rlock = threading.Lock()  # guards the list of readers only
        self._depth = 0
        self._on_commit: list[Callable[[], object]] = []  # see after_commit
        check_wal(self.path)
        try:
            found = self._read_meta()
        except sqlite3.DatabaseError as exc:
            self.close()
            self._raise_if_damaged(exc)
            raise StoreError(
                f"cannot open {self.path}: {exc} (restore it from a backup, or rebuild the store with a new directory)"
            ) from exc
        try:
            version = int(found.get("format_version", FORMAT_VERSION))
        except (TypeError, ValueError):
            raise StoreError(
                f"{self.path} records format_version {found['format_version']!r}, not a number: its meta table is "
                "damaged (restore it from a backup, or rebuild the store in a new directory)"
            ) from None
        if found.get("format", FORMAT) != FORMAT or version > FORMAT_VERSION:
            raise StoreFormatError(self.path, (found.get("format"), found.get("format_version")), FORMAT_VERSION)
        self.format_version = version
        """The store's format as this object writes it (a store it could not upgrade stays at 1)."""
        if self.read_only:
            return
        if "format" not in found:
            self._w().executemany(
                "INSERT OR IGNORE INTO meta VALUES (?, ?)",
                [("format", FORMAT), ("format_version", str(FORMAT_VERSION))],
            )
        elif self.format_version < FORMAT_VERSION:
            upgrade(self)

    def _read_meta(self) -> dict[str, str]:
        """The ``meta`` table, read on opening; a store SQLite finds read-only is opened read-only."""
        try:
            return dict(self._w().execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.OperationalError as exc:
            if self.read_only or "readonly" not in str(exc):
                raise
        self.close()
        self.read_only = True  # a read-only mount os.access did not tell, say
        return dict(self._w().execute("SELECT key, value FROM meta").fetchall())

    def _raise_if_damaged(self, exc: sqlite3.DatabaseError) -> None:
        """Raise :class:`~pathrag.errors.StoreDamaged` naming the file when ``exc`` is SQLite finding it
        damaged (it names no file); return for any other database error (a lock, a full disk)."""
        error = damage_error(self.path, exc)
        if error is not None:
            raise error from exc

    def _read_only_error(self) -> StoreError:
        return StoreError(f"the store {self.directory} is read-only: cannot write")

    def _w(self) -> sqlite3.Connection:
        """The writer connection, (re)opened on demand: a closed store reopens when used again."""
        if self._writer is None:
            self._writer = self._connect()
            if not self.read_only:  # a read-only store's writer only reads
                self._writer.executescript(SCHEMA)
                # 64 MB of pages (the default is 2 MB): a bulk write of 10^5 vectors then updates the
                # vectors table's indexes from memory, not from disk (45 -> about 30 us a row, measured)
                self._writer.execute("PRAGMA cache_size = -65536")
                # the rows insert_rows stages, and the statement journals, in memory: no temporary file
                # to write (nor to find the disk full for)
                self._writer.execute("PRAGMA temp_store = MEMORY")
        return self._writer

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            return self._connect_read_only()
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
        # Only takes effect on a new file. Vectors are most of a store, and a page wastes what is left
        # after the last whole row it holds: 32 KB pages hold several vectors of any common model
        # (1-12 KB as float32), where 8 KB ones hold a single 6 KB vector (1536 dimensions) and waste 25 %.
        conn.execute("PRAGMA page_size = 32768")
        conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a commit survives the process being killed (the WAL is in the OS cache);
        # only a power loss may drop the last commits, never corrupt the file.
        conn.execute("PRAGMA synchronous = NORMAL")
        # an INSERT OR REPLACE then fires the delete triggers of the row it replaces (see schema)
        conn.execute("PRAGMA recursive_triggers = ON")
        return conn

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that never writes (``mode=ro``). Where no ``-wal`` file exists and none can be made
        (a read-only directory or mount), ``immutable=1`` as well: SQLite then needs no ``-shm`` either, and
        no writer can be changing the file, as a writer in WAL mode needs a ``-wal`` file."""
        conn = sqlite3.connect(
            read_only_uri(self.path), uri=True, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        conn.execute("PRAGMA query_only = ON")
        return conn

    # -- writing -----------------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic commit; nested calls join the outer one. An exception rolls everything back."""
        with self._wlock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            if self.read_only:
                raise self._read_only_error()
            self.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth, self._on_commit = 0, []
                try:
                    self._w().execute("ROLLBACK")
                except sqlite3.DatabaseError as exc:
                    self._raise_if_damaged(exc)
                    raise
                raise
            self._depth, actions, self._on_commit = 0, self._on_commit, []
            self.execute("COMMIT")
        for action in actions:
            try:
                action()
            except Exception as exc:  # the commit stands: its caller must not take it for a failed one
                logger.warning("an action after a commit to %s failed: %r", self.path, exc)

    def after_commit(self, action: Callable[[], object]) -> None:
        """Inside a :meth:`transaction`: call ``action`` once it has committed (never if it rolls back). An
        action that raises is logged, not raised: the commit stands, and its caller must not take it for failed.

        >>> import tempfile
        >>> store = SQLiteStore(tempfile.mkdtemp())
        >>> with store.transaction():
        ...     store.after_commit(lambda: print("committed"))
        ...     store.set_meta({"k": 1})
        committed
        """
        if not self._depth:
            raise RuntimeError("after_commit() is for inside a transaction")
        self._on_commit.append(action)

    @property
    def in_transaction(self) -> bool:
        """Whether a :meth:`transaction` is open."""
        return self._depth > 0

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """One write step (outside a transaction it commits on its own: a journal record)."""
        if self.read_only:
            raise self._read_only_error()
        with self._wlock:
            try:
                cursor = self._w().execute(sql, params)
            except sqlite3.DatabaseError as exc:
                self._raise_if_damaged(exc)
                raise
        _count_write_step()
        return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """One write step running ``sql`` once per row (no rows: nothing is run)."""
        rows = list(rows)
        if not rows:
            return
        if self.read_only:
            raise self._read_only_error()
        with self._wlock:
            try:
                self._w().executemany(sql, rows)
            except sqlite3.DatabaseError as exc:
                self._raise_if_damaged(exc)
                raise
        _count_write_step()

    def insert_rows(self, sql: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Write steps running ``sql`` once per :data:`STAGED_ROWS` of ``rows``, not once per row: ``sql``
        reads them from the table ``{rows}`` (temporary, with ``columns``; ``ORDER BY rowid`` gives them in
        order). For a bulk insert that fires triggers or may stop half-way (an upsert, say). ``rows`` may be
        a generator: a batch of it is made at a time.

        Why: before such a statement changes a page, SQLite keeps a copy of it (once per statement), so
        that it can undo that statement alone. Run once per row, a bulk write copied the same 32 KB pages
        again for every row (``benchmarks/README.md`` has what that cost a bulk import). Run over many rows,
        each page is copied once.

        >>> import tempfile
        >>> store = SQLiteStore(tempfile.mkdtemp())
        >>> with store.transaction():
        ...     store.insert_rows("INSERT INTO meta SELECT k, v FROM {rows} ORDER BY rowid", ("k", "v"), [("a", "1")])
        >>> store.meta()["a"]
        '1'
        """
        batches = _batched(iter(rows), STAGED_ROWS)  # only a batch of rows is ever held (a generator's)
        first = next(batches, None)
        if first is None:
            return
        if self.read_only:
            raise self._read_only_error()
        table = "staged_" + "_".join(columns)
        statement = sql.replace("{rows}", f"temp.{table}")
        with self.transaction():  # all batches or none, inside a caller's transaction or in one of its own
            conn = self._w()
            try:
                conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {table} ({', '.join(columns)})")
                for batch in itertools.chain([first], batches):
                    conn.execute(f"DELETE FROM temp.{table}")
                    conn.executemany(f"INSERT INTO temp.{table} VALUES ({', '.join('?' * len(columns))})", batch)
                    conn.execute(statement)
                    _count_write_step()
                conn.execute(f"DELETE FROM temp.{table}")
            except sqlite3.DatabaseError as exc:
                self._raise_if_damaged(exc)
                raise

    def wread(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """A read by the writer: it sees the writer's own uncommitted changes."""
        with self._wlock:
            try:
                return self._w().execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                self._raise_if_damaged(exc)
                raise

    def bump(self, key: str) -> None:
        """Count a change (a write step of the open transaction, or its own)."""
        self.execute(
            "INSERT INTO meta VALUES (?, '1') ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
            (key,),
        )

    # -- meta --------------------------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        """The ``meta`` table as a dict, read on the writer's connection."""
        return dict(self.wread("SELECT key, value FROM meta"))

    def set_meta(self, values: Mapping[str, Any]) -> None:
        """Write ``values`` into the ``meta`` table (as strings), replacing the keys' old values."""
        self.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, str(v)) for k, v in values.items()])

    def check_dimension(self, dimension: int, found: set[int]) -> None:
        """Record the vectors' dimension on first use; refuse vectors of another one."""
        if len(found) > 1:
            raise StoreError(f"the embedder returned vectors of different dimensions {sorted(found)}")
        recorded = self.meta().get("dimension")
        if recorded is None:
            self.set_meta({"dimension": dimension})
        elif int(recorded) != dimension:
            raise StoreError(
                f"the embedder gives {dimension}-dimensional vectors but {self.path} holds "
                f"{recorded}-dimensional ones: open the store with the embedder it was built with"
            )

    def check_writable(self) -> None:
        """Raise :class:`StoreError` now if a write would fail later (read-only file or directory)."""
        if self.read_only:
            raise self._read_only_error()
        problems = [p for p in (self.directory, self.path) if p.exists() and not os.access(p, os.W_OK)]
        if problems:
            raise StoreError(
                f"the store {self.directory} cannot be written ({problems[0]} is read-only): "
                "fix its permissions or use another directory"
            )

    def commit_count(self) -> int:
        """How many commits the store has seen (any process): tells a writer its loaded tables are stale."""
        rows = self.wread("SELECT value FROM meta WHERE key = 'commits'")
        return int(rows[0][0]) if rows else 0

    def count_commit(self) -> int:
        """Inside a commit: count it, and return the new count."""
        self.bump("commits")
        return self.commit_count()

    # -- whole-store copies ------------------------------------------------------------------------

    def copy_to(self, directory: str | os.PathLike[str]) -> None:
        """Write a consistent copy of the committed store into ``directory`` (replacing its store file)."""
        target = Path(directory) / STORE_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{STORE_FILE}.tmp")
        tmp.unlink(missing_ok=True)
        new_empty_file(tmp)
        dest = sqlite3.connect(tmp)
        try:
            self._r().backup(dest)
        finally:
            dest.close()
        for suffix in ("-wal", "-shm"):
            target.with_name(target.name + suffix).unlink(missing_ok=True)
        os.replace(tmp, target)
        for derived in target.parent.glob("pathrag-*.usearch*"):  # a former store's search indexes
            derived.unlink(missing_ok=True)

    def close(self) -> None:
        """Close both connections (using the store again reopens them)."""
        with self._wlock, self._rlock:
            for conn in [*self._readers, self._writer]:
                if conn is not None:
                    conn.close()
            self._writer = None
            self._readers = []  # threads notice the new list and open a fresh reader
            self._idle = []

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"


def write_store_info(directory: str | os.PathLike[str], **values: Any) -> None:
    """Record ``values`` in the store's ``meta`` table, creating the store if needed."""
    store = SQLiteStore(directory)
    try:
        with store.transaction():
            store.set_meta(values)
    finally:
        store.close()
