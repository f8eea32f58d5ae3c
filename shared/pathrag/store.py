"""The embedded store: one SQLite file per index directory, one transaction per commit.

Layout of ``pathrag.sqlite`` (see :data:`SCHEMA`): ``meta`` (format, pathrag version, embedder name and
dimension, vector-index kind), ``documents`` + ``doc_chunks`` (which document claims which chunk, at
which position: the provenance of everything else), ``chunks`` (each chunk's text and extraction
records, written as soon as its extraction finishes), ``entities`` and ``relations`` (the merged graph,
indexed both ways for neighbourhood queries), ``vectors`` (float32 BLOBs per space: entities,
relations, chunks), ``llm_cache`` and ``summaries``.

Why SQLite: a commit (insert, delete, import) is one ``BEGIN IMMEDIATE … COMMIT`` on one file, so it is
visible all at once or not at all whatever moment the process dies; WAL mode lets readers keep reading
the last committed state while the writer writes; a write touches only the rows it changes, and opening
reads nothing until a query needs it.

Crash testing: every statement the writer sends is a *write step*. With ``PATHRAG_CRASH_AFTER_WRITE=k``
in the environment (or :data:`crash_after_write` set), the process kills itself with SIGKILL right
after its k-th write step, which lets a test stop a commit at each of its boundaries.

>>> import tempfile
>>> store = SQLiteStore(tempfile.mkdtemp())
>>> with store.transaction():
...     store.set_meta({"embedder": "hashing-256"})
>>> store.meta()["embedder"]
'hashing-256'
>>> store.close()
"""

from __future__ import annotations

import base64
import contextvars
import json
import logging
import os
import shutil
import signal
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np
from typing_extensions import override

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from .errors import StoreError, StoreFormatError, StoreLocked
from .graph import BaseGraphStore, Neighborhood
from .models import Entity, Relation
from .names import check_name
from .vectors import Embedder, VectorHit, VectorIndex, VectorItem

T = TypeVar("T", Entity, Relation)
Merge = Callable[[T, T], T]

__all__ = [
    "LEGACY_FILES",
    "STORE_FILE",
    "SQLiteGraphStore",
    "SQLiteStore",
    "SQLiteVectorIndex",
    "StoreError",
    "StoreLocked",
    "WriterLock",
    "crash_after_write",
    "read_store_info",
    "pack_records",
    "pack_text",
    "unpack_records",
    "unpack_text",
    "write_store_info",
]

logger = logging.getLogger(__name__)

STORE_FILE = "pathrag.sqlite"
LOCK_FILE = "pathrag.lock"
FORMAT = "pathrag-store"
FORMAT_VERSION = 2  # 2: a chunk's vector keeps no copy of the chunk's text
LEGACY_FILES = (
    "documents.json",
    "graph.json",
    "chunks.jsonl",
    "llm_cache.jsonl",
    "entities.vectors.json",
    "relations.vectors.json",
    "chunks.vectors.json",
    "cli.json",
)
LEGACY_BACKUP = "json-store-backup"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, hash TEXT NOT NULL, metadata TEXT NOT NULL, failed TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS doc_chunks (
    doc_id TEXT NOT NULL, position INTEGER NOT NULL, chunk_id TEXT NOT NULL, PRIMARY KEY (doc_id, position));
CREATE INDEX IF NOT EXISTS doc_chunks_by_chunk ON doc_chunks (chunk_id);
CREATE TABLE IF NOT EXISTS chunks (id TEXT PRIMARY KEY, text TEXT NOT NULL, records BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS entities (
    name TEXT PRIMARY KEY, type TEXT NOT NULL, description TEXT NOT NULL, source_ids TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS relations (
    source TEXT NOT NULL, target TEXT NOT NULL, description TEXT NOT NULL, keywords TEXT NOT NULL,
    weight REAL NOT NULL, source_ids TEXT NOT NULL, PRIMARY KEY (source, target));
CREATE INDEX IF NOT EXISTS relations_by_target ON relations (target, source);
CREATE TABLE IF NOT EXISTS vectors (
    space TEXT NOT NULL, id TEXT NOT NULL, text TEXT, metadata TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (space, id));
CREATE TABLE IF NOT EXISTS mentions (
    name TEXT NOT NULL, chunk_id TEXT NOT NULL, PRIMARY KEY (name, chunk_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_by_chunk ON mentions (chunk_id);
CREATE TABLE IF NOT EXISTS llm_cache (key TEXT PRIMARY KEY, answer TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS summaries (key TEXT PRIMARY KEY, text TEXT NOT NULL);
"""

SCHEMA_VECTORS = next(part.strip() + ";" for part in SCHEMA.split(";") if "TABLE IF NOT EXISTS vectors" in part)
# The text a vector row keeps: none when a chunk with the same id holds it (chunk ids hash their text),
# and, reading, the row's own text or else that chunk's. Both expect the vector row as ``v``.
_STORED_TEXT = "CASE WHEN v.text = (SELECT c.text FROM chunks c WHERE c.id = v.id) THEN NULL ELSE v.text END"
_WRITE_VECTOR = (
    f"INSERT OR REPLACE INTO vectors SELECT v.space, v.id, {_STORED_TEXT}, v.metadata, v.vector "
    "FROM (SELECT ? AS space, ? AS id, ? AS text, ? AS metadata, ? AS vector) v"
)
_WRITE_VECTOR_V1 = "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)"  # format 1: text NOT NULL
_READ_TEXT = "COALESCE(v.text, (SELECT c.text FROM chunks c WHERE c.id = v.id), '')"

_env_crash = os.environ.get("PATHRAG_CRASH_AFTER_WRITE", "").strip()
crash_after_write: int | None = int(_env_crash) if _env_crash.isdigit() else None
"""Test hook: kill this process (SIGKILL) right after this many write steps (``None``: never)."""
write_steps = 0
"""Write steps (SQL statements sent by writers) in this process so far; the crash tests count with it."""


def _count_write_step() -> None:
    global write_steps
    write_steps += 1
    if crash_after_write is not None and write_steps >= crash_after_write:
        os.kill(os.getpid(), signal.SIGKILL)


_SNAPSHOTS: contextvars.ContextVar[Mapping[SQLiteStore, sqlite3.Connection]] = contextvars.ContextVar(
    "pathrag_snapshots", default=MappingProxyType({})
)
"""The open read snapshot of each store, per thread and asyncio task (see :meth:`SQLiteStore.snapshot`)."""


class SQLiteStore:
    """One ``pathrag.sqlite`` in ``directory``: a writer connection and a reader connection.

    The writer runs in autocommit mode except inside :meth:`transaction`; the reader only ever sees
    committed state (WAL), so a retrieval running while a commit is being written answers from the state
    before it. Both connections are guarded by locks, so threads may share one store object.
    """

    def __init__(self, directory: str | os.PathLike[str], *, create: bool = True) -> None:
        self.directory = Path(directory)
        self.path = self.directory / STORE_FILE
        if not self.path.exists():
            if not create:
                raise StoreError(f"no pathrag store at {self.directory}")
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the store directory {self.directory}: {exc}") from exc
        self._writer: sqlite3.Connection | None = None
        self._readers: list[sqlite3.Connection] = []  # one per thread (see _r)
        self._local = threading.local()
        self._idle: list[sqlite3.Connection] = []  # snapshot connections free for the next snapshot
        self._wlock = threading.RLock()
        self._rlock = threading.Lock()  # guards the list of readers only
        self._depth = 0
        check_wal(self.path)
        try:
            found = dict(self._w().execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot open {self.path}: {exc} (restore it from a backup, or rebuild the store with a new directory)"
            ) from exc
        if found.get("format", FORMAT) != FORMAT or int(found.get("format_version", FORMAT_VERSION)) > FORMAT_VERSION:
            raise StoreFormatError(self.path, (found.get("format"), found.get("format_version")), FORMAT_VERSION)
        self.format_version = int(found.get("format_version", FORMAT_VERSION))
        """The store's format as this object writes it (a store it could not upgrade stays at 1)."""
        if "format" not in found:
            self._w().executemany(
                "INSERT OR IGNORE INTO meta VALUES (?, ?)",
                [("format", FORMAT), ("format_version", str(FORMAT_VERSION))],
            )
        elif self.format_version < 2:
            self._upgrade_vectors()

    def _upgrade_vectors(self) -> None:
        """Format 1 -> 2, in one transaction: the vectors table without the copies of chunk texts (its
        ``text`` may now be empty). A store that cannot be upgraded now (read-only, or another writer
        holding it too long) stays at 1: every read works on both, and writes keep every text."""
        try:
            with self.transaction():
                ((version,),) = self.wread("SELECT value FROM meta WHERE key = 'format_version'")
                if int(version) >= 2:  # another process upgraded it meanwhile
                    self.format_version = int(version)
                    return
                self.execute(SCHEMA_VECTORS.replace("vectors", "vectors_v2"))
                self.execute(
                    f"INSERT INTO vectors_v2 SELECT v.space, v.id, {_STORED_TEXT}, v.metadata, v.vector FROM vectors v"
                )
                self.execute("DROP TABLE vectors")
                self.execute("ALTER TABLE vectors_v2 RENAME TO vectors")
                self.set_meta({"format_version": 2})
                self.format_version = 2
        except sqlite3.OperationalError as exc:
            logger.info("%s stays in format 1 (%s)", self.path, exc)
            return
        if self.format_version == 2 and version == "1":
            logger.info("%s: upgraded to store format 2 (chunk texts no longer stored twice)", self.path)

    def _w(self) -> sqlite3.Connection:
        """The writer connection, (re)opened on demand: a closed store reopens when used again."""
        if self._writer is None:
            self._writer = self._connect()
            self._writer.executescript(SCHEMA)
        return self._writer

    def _r(self) -> sqlite3.Connection:
        """The reader connection: the open :meth:`snapshot`'s of this thread or task, else this thread's."""
        held = _SNAPSHOTS.get().get(self)
        if held is not None:
            return held
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "store_generation", None) is not self._readers:
            conn = self._reader()
            self._local.conn, self._local.store_generation = conn, self._readers
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn = self._connect()
        conn.execute("PRAGMA query_only = ON")
        with self._rlock:
            self._readers.append(conn)
        return conn

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read inside sees one committed state (a read transaction), so that a retrieval running
        while a commit lands answers wholly from the state before it or after it.

        The snapshot belongs to the calling thread or asyncio task (a context variable), on a connection
        of its own: overlapping tasks on one event loop each read their own state, and each snapshot ends
        when its own block does. Nested snapshots of one thread or task share the outer one."""
        if self in _SNAPSHOTS.get():
            yield
            return
        with self._rlock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._reader()
        generation = self._readers
        conn.execute("BEGIN")
        conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()  # the snapshot starts at the first read
        token = _SNAPSHOTS.set({**_SNAPSHOTS.get(), self: conn})
        try:
            yield
        finally:
            _SNAPSHOTS.reset(token)
            try:
                if conn.in_transaction:
                    conn.execute("COMMIT")
            except sqlite3.ProgrammingError:  # closed by close() meanwhile
                pass
            else:
                with self._rlock:
                    if generation is self._readers:  # not closed meanwhile
                        self._idle.append(conn)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
        # Only takes effect on a new file. Vectors are most of a store, and a page wastes what is left
        # after the last whole row it holds: 32 KB pages hold several vectors of any common model
        # (1-12 KB as float32), where 8 KB ones hold a single 6 KB vector (1536 dimensions) and waste 25 %.
        conn.execute("PRAGMA page_size = 32768")
        conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a commit survives the process being killed (the WAL is in the OS cache);
        # only a power loss may drop the last commits, never corrupt the file.
        conn.execute("PRAGMA synchronous = NORMAL")
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
            self.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                self._w().execute("ROLLBACK")
                raise
            self._depth = 0
            self.execute("COMMIT")

    @property
    def in_transaction(self) -> bool:
        """Whether a :meth:`transaction` is open."""
        return self._depth > 0

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """One write step (outside a transaction it commits on its own: a journal record)."""
        with self._wlock:
            cursor = self._w().execute(sql, params)
        _count_write_step()
        return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """One write step running ``sql`` once per row (no rows: nothing is run)."""
        rows = list(rows)
        if not rows:
            return
        with self._wlock:
            self._w().executemany(sql, rows)
        _count_write_step()

    def wread(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """A read by the writer: it sees the writer's own uncommitted changes."""
        with self._wlock:
            return self._w().execute(sql, params).fetchall()

    # -- reading -----------------------------------------------------------------------------------

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """A read of the last committed state (or of this thread's open :meth:`snapshot`)."""
        return self._r().execute(sql, params).fetchall()

    def stream(self, sql: str, params: Sequence[Any] = (), batch: int = 1000) -> Iterator[tuple[Any, ...]]:
        """Rows of a read on this thread's reader, a batch at a time (inside a snapshot: of that state)."""
        cursor = self._r().execute(sql, params)
        while rows := cursor.fetchmany(batch):
            yield from rows

    def iread(self, sql: str, params: Sequence[Any] = (), batch: int = 2000) -> Iterator[tuple[Any, ...]]:
        """Rows of a committed-state query, streamed in batches (one read transaction throughout)."""
        conn = self._connect()  # its own connection: the shared reader stays free meanwhile
        try:
            conn.execute("PRAGMA query_only = ON")
            cursor = conn.execute(sql, params)
            while rows := cursor.fetchmany(batch):
                yield from rows
        finally:
            conn.close()

    def counter(self, key: str) -> int:
        """A change counter kept in ``meta``, as this thread's reader sees it."""
        rows = self.read("SELECT value FROM meta WHERE key = ?", (key,))
        return int(rows[0][0]) if rows else 0

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
        dest = sqlite3.connect(tmp)
        try:
            self._r().backup(dest)
        finally:
            dest.close()
        for suffix in ("-wal", "-shm"):
            target.with_name(target.name + suffix).unlink(missing_ok=True)
        os.replace(tmp, target)

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


_WAL_MAGIC = (0x377F0682, 0x377F0683)  # little- or big-endian checksums (sqlite.org/fileformat.html#wal)


def _wal_checksum(data: bytes, big_endian: bool) -> tuple[int, int]:
    words = np.frombuffer(data, dtype=">u4" if big_endian else "<u4").tolist()
    s0 = s1 = 0
    for x0, x1 in zip(words[::2], words[1::2], strict=True):
        s0 = (s0 + x0 + s1) & 0xFFFFFFFF
        s1 = (s1 + x1 + s0) & 0xFFFFFFFF
    return s0, s1


def _wal_damage(wal: Path) -> str | None:
    """Why SQLite would ignore this WAL file, or part of it (``None``: it looks whole).

    SQLite drops a WAL whose header is bad, and every frame after a torn one, without a word: the
    commits in them would be lost silently. Checked: the header's magic, version and checksum. (A tail
    cut off cannot be told from a writer killed mid-transaction: SQLite keeps the commits before it.)"""
    try:
        with wal.open("rb") as handle:
            header = handle.read(32)
            size = os.fstat(handle.fileno()).st_size
    except OSError:
        return None
    if size == 0:
        return None
    if len(header) < 32:
        return f"{size} bytes, shorter than its header"
    magic, version, page_size = (
        int.from_bytes(header[:4], "big"),
        int.from_bytes(header[4:8], "big"),
        int.from_bytes(header[8:12], "big"),
    )
    if magic not in _WAL_MAGIC or version != 3007000:
        return "its header is not a WAL header"
    if _wal_checksum(header[:24], magic & 1 == 1) != (
        int.from_bytes(header[24:28], "big"),
        int.from_bytes(header[28:32], "big"),
    ):
        return "its header checksum is wrong"
    if page_size < 512 or page_size & (page_size - 1):
        return f"its header gives an impossible page size ({page_size})"
    return None


def _writer_active(directory: Path) -> bool:
    """Whether a process holds the writer lock or is in a write (a live writer may be appending to the WAL
    right now: extractions are saved outside the writer lock, see :meth:`WriterLock.abegin`)."""
    if fcntl is None:
        return True
    for path, probe in ((directory / LOCK_FILE, fcntl.LOCK_SH), (directory, fcntl.LOCK_EX)):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, probe | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)  # a flock: closing never touches SQLite's own (POSIX) locks on other files
    return False


def check_wal(path: Path) -> None:
    """Refuse to open ``path`` when its ``-wal`` file is damaged, instead of letting SQLite drop the
    commits it holds. Skipped while a writer holds the lock."""
    wal = path.with_name(path.name + "-wal")
    if not path.exists() or not wal.exists() or _writer_active(path.parent):
        return
    reason = _wal_damage(wal)
    if reason is not None:
        raise StoreError(
            f"{wal} is damaged ({reason}): SQLite would drop the commits it holds without a word; "
            f"restore the store directory from a backup, or move {wal.name} aside to open the store "
            "as of its last checkpoint (the commits in it are then lost)"
        )


class WriterLock:
    """One writer per store directory across processes: an advisory ``flock`` on ``pathrag.lock``.

    The file holds the writer's pid, for the error message. The operating system drops the lock when its
    holder dies, even by ``kill -9``, so a crash never leaves a store locked (the stale pid in the file
    is just overwritten by the next writer). Readers take no lock. Where ``fcntl`` does not exist
    (Windows), there is no cross-process lock: SQLite still serialises the commits themselves.

    An index holds the lock only to plan and apply a change; the whole write, extraction included, is
    spanned by :meth:`abegin` and :meth:`end` (a second ``flock``, on the directory), so that a writer
    that will not wait is still refused while another one extracts.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / LOCK_FILE
        self._fd: int | None = None
        self._active: int | None = None  # the directory, flocked from abegin() to end()
        self._threads = threading.Lock()  # flock is per open file: threads of one process queue here

    def _try(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(
                f"the store {self.path.parent} cannot be written ({exc.strerror}: {self.path}): "
                "fix its permissions or use another directory"
            ) from exc
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def holder(self) -> str:
        """The pid written in the lock file (the last writer's), or ``"?"`` if it cannot be read."""
        try:
            return self.path.read_text().strip() or "?"
        except OSError:
            return "?"

    def _locked_error(self, timeout: float) -> StoreLocked:
        return StoreLocked(self.path.parent, self.holder(), max(timeout, 0.0))

    def acquire(self, timeout: float = 0.0) -> None:
        """Take the lock, polling up to ``timeout`` seconds; :class:`StoreLocked` names the holder's pid."""
        deadline = time.monotonic() + timeout
        if not self._threads.acquire(timeout=max(timeout, 0.0) if timeout > 0 else -1):
            raise self._locked_error(timeout)
        try:
            while not self._try():
                if time.monotonic() >= deadline:
                    raise self._locked_error(timeout)
                time.sleep(0.05)
        except BaseException:
            self._threads.release()
            raise

    async def aacquire(self, timeout: float = 0.0) -> None:
        """:meth:`acquire` without blocking the event loop while it waits."""
        import asyncio

        deadline = time.monotonic() + timeout
        while not self._threads.acquire(blocking=False):
            if time.monotonic() >= deadline and timeout > 0:
                raise self._locked_error(timeout)
            await asyncio.sleep(0.01)
        try:
            while not self._try():
                if time.monotonic() >= deadline:
                    raise self._locked_error(timeout)
                await asyncio.sleep(0.05)
        except BaseException:
            self._threads.release()
            raise

    def release(self) -> None:
        """Drop the lock if this object holds it (otherwise do nothing)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing drops the flock; the pid stays in the file, harmlessly
            self._threads.release()

    async def abegin(self, timeout: float = 0.0) -> None:
        """Start a write, before its extraction: the lock itself is taken later, for plan-and-apply only.

        Every write holds a ``flock`` on the store directory from here to :meth:`end`. With ``timeout`` 0
        (do not wait for other writers) it is exclusive, and the write is refused at once, naming the pid,
        when another one is under way, extracting or applying, as when it held the lock throughout. With a
        ``timeout``, writes share it: they extract side by side and take turns only for the lock, and one
        waits here (up to ``timeout``) only for an exclusive write to end."""
        import asyncio

        if fcntl is None:
            return
        try:
            fd = os.open(self.path.parent, os.O_RDONLY)
        except OSError as exc:
            raise StoreError(f"the store {self.path.parent} cannot be opened ({exc.strerror})") from exc
        exclusive, deadline = timeout <= 0, time.monotonic() + timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() >= deadline:
                        raise self._locked_error(timeout) from None
                    await asyncio.sleep(0.05)
            # Taken and dropped at once: names this process in the lock file as the latest writer, and
            # refuses (when not waiting) a writer that holds the lock without this protocol.
            if self._threads.acquire(blocking=False):
                try:
                    if self._try():
                        os.close(self._fd)  # type: ignore[arg-type]
                        self._fd = None
                    elif exclusive:
                        raise self._locked_error(timeout)
                finally:
                    self._threads.release()
        except BaseException:
            os.close(fd)
            raise
        self._active = fd

    def end(self) -> None:
        """End the write :meth:`abegin` started (releasing the lock too, if still held)."""
        self.release()
        fd, self._active = self._active, None
        if fd is not None:
            os.close(fd)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def pack_records(entities: list[dict[str, Any]], relations: list[dict[str, Any]]) -> bytes:
    """A chunk's extraction records as stored: zlib-compressed JSON (their field names repeat a lot)."""
    return zlib.compress(dumps({"entities": entities, "relations": relations}).encode("utf-8"), 6)


def mentioned_names(entities: Iterable[Mapping[str, Any]], relations: Iterable[Mapping[str, Any]]) -> list[str]:
    """The entity names a chunk's records mention (relation ends included): its rows in ``mentions``."""
    names = {e["name"] for e in entities}
    names.update(n for r in relations for n in (r["source"], r["target"]))
    return sorted(names)


def pack_text(text: str) -> bytes:
    """A long text as stored where it is rarely read (LLM answers): zlib-compressed UTF-8."""
    return zlib.compress(text.encode("utf-8"), 6)


def unpack_text(value: bytes | str) -> str:
    """The text :func:`pack_text` stored (stores of format 1 hold plain text: returned as it is)."""
    return zlib.decompress(value).decode("utf-8") if isinstance(value, bytes) else value


def unpack_records(blob: bytes | str) -> dict[str, Any]:
    """``{"entities": [...], "relations": [...]}`` from :func:`pack_records`."""
    records: dict[str, Any] = json.loads(zlib.decompress(blob) if isinstance(blob, bytes) else blob)
    return records


def store_exists(directory: str | os.PathLike[str]) -> bool:
    return (Path(directory) / STORE_FILE).exists()


def legacy_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The files of the pre-SQLite JSON format present in ``directory``."""
    return [Path(directory) / name for name in LEGACY_FILES if (Path(directory) / name).exists()]


def read_store_info(directory: str | os.PathLike[str]) -> dict[str, str] | None:
    """The ``meta`` table of the store in ``directory`` without opening it for writing (``None``: no store)."""
    path = Path(directory) / STORE_FILE
    if not path.exists():
        return None
    check_wal(path)  # a damaged WAL would read as an older (or empty) store
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
        try:
            return dict(conn.execute("SELECT key, value FROM meta").fetchall())
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"cannot read {path}: {exc} (restore it from a backup, or rebuild the store in a new directory)"
        ) from exc


def write_store_info(directory: str | os.PathLike[str], **values: Any) -> None:
    """Record ``values`` in the store's ``meta`` table, creating the store if needed."""
    store = SQLiteStore(directory)
    try:
        with store.transaction():
            store.set_meta(values)
    finally:
        store.close()


def move_legacy_files(directory: Path) -> Path:
    """Move the migrated JSON files aside (kept, not deleted: nothing is lost)."""
    backup = directory / LEGACY_BACKUP
    backup.mkdir(exist_ok=True)
    for path in legacy_files(directory):
        shutil.move(str(path), backup / path.name)
    return backup


# -- the graph and the vectors on the store ----------------------------------------------------------

_IN = "(SELECT value FROM json_each(?))"  # a JSON array as an SQL set: no limit on the number of names


def _entity_row(entity: Entity) -> tuple[str, str, str, str]:
    return (entity.name, entity.type, entity.description, dumps(list(entity.source_ids)))


def _entity_of(row: Sequence[Any]) -> Entity:
    return Entity(name=row[0], type=row[1], description=row[2], source_ids=json.loads(row[3]))


def _relation_row(r: Relation) -> tuple[Any, ...]:
    return (r.source, r.target, r.description, dumps(list(r.keywords)), r.weight, dumps(list(r.source_ids)))


def _relation_of(row: Sequence[Any]) -> Relation:
    return Relation(
        source=row[0],
        target=row[1],
        description=row[2],
        keywords=json.loads(row[3]),
        weight=row[4],
        source_ids=json.loads(row[5]),
    )


_REL_COLUMNS = "source, target, description, keywords, weight, source_ids"


class SQLiteGraphStore(BaseGraphStore):
    """A :class:`~pathrag.GraphStore` on the ``entities`` and ``relations`` tables of a store.

    Same semantics as :class:`~pathrag.NetworkXGraphStore` (a directed graph whose relations are, unless
    ``directed_relations``, identified by their unordered pair and stored in the direction first seen).
    Reads see the last committed state; writes join the store's open transaction. Each hop of a path
    search is a few indexed queries, whatever the size of the graph.
    """

    # The async twins call the sync methods on the caller's thread, not in a worker thread: a reader's
    # snapshot (SQLiteStore.snapshot) and the writer's transaction lock belong to the thread that opened
    # them, so `with store.snapshot(): await graph.aget_entities(...)` must read on that same thread.
    async_in_thread = False

    def __init__(self, store: SQLiteStore, *, directed_relations: bool = False) -> None:
        self.store = store
        self.directed_relations = directed_relations

    # -- traversal ---------------------------------------------------------------------------------

    def _adjacency_sql(self, directed: bool, filtered: bool) -> str:
        keep = f" AND target IN {_IN}" if filtered else ""
        out = f"SELECT source, target FROM relations WHERE source IN {_IN} AND target != source{keep}"
        if directed:
            return out
        keep_in = f" AND source IN {_IN}" if filtered else ""
        return f"{out} UNION SELECT target, source FROM relations WHERE target IN {_IN} AND source != target{keep_in}"

    def _pairs(
        self, nodes: Collection[str], directed: bool, keep: Collection[str] | None = None
    ) -> list[tuple[Any, ...]]:
        if not nodes:
            return []
        names = dumps(list(nodes))
        if keep is None:
            params: tuple[str, ...] = (names,) if directed else (names, names)
        else:
            kept = dumps(list(keep))
            params = (names, kept) if directed else (names, kept, names, kept)
        return self.store.read(self._adjacency_sql(directed, keep is not None), params)

    def _degrees(self, nodes: Collection[str], directed: bool) -> dict[str, int]:
        if not nodes:
            return {}
        names = dumps(list(nodes))
        rows = self.store.read(
            f"SELECT source, COUNT(*) FROM ({self._adjacency_sql(directed, False)}) GROUP BY source",
            (names,) if directed else (names, names),
        )
        found = dict.fromkeys(nodes, 0)
        found.update(rows)
        return found

    @override
    def neighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        if not requests:
            return {}
        known = {
            row[0]
            for row in self.store.read(
                f"SELECT name FROM entities WHERE name IN {_IN}", (dumps([str(n) for n in requests]),)
            )
        }
        asked = [u for u in requests if u in known]
        degree = self._degrees(asked, directed)
        whole = [u for u in asked if (limit := requests[u]) is None or degree[u] <= limit]
        capped = [u for u in asked if u not in set(whole)]
        neighbours: dict[str, list[str]] = {u: [] for u in asked}
        for u, v in self._pairs(whole, directed):
            neighbours[u].append(v)
        if capped and keep:
            for u, v in self._pairs(capped, directed, keep):
                neighbours[u].append(v)
        wanted = {v for vs in neighbours.values() for v in vs if v not in degree}
        degree.update(self._degrees(wanted, directed))
        return {u: Neighborhood(degree[u], {v: degree[v] for v in sorted(neighbours[u])}) for u in asked}

    # -- reads -------------------------------------------------------------------------------------

    @override
    def get_entities(self, names: Iterable[str]) -> dict[str, Entity]:
        names = list(names)
        if not names:
            return {}
        rows = {
            row[0]: row
            for row in self.store.read(
                f"SELECT name, type, description, source_ids FROM entities WHERE name IN {_IN}", (dumps(names),)
            )
        }
        return {name: _entity_of(rows[name]) for name in names if name in rows}

    def _relation_rows(self, pairs: Sequence[tuple[str, str]], *, writer: bool) -> dict[tuple[str, str], Relation]:
        """Stored relations whose (source, target) is one of ``pairs`` or (undirected) its reverse."""
        if not pairs:
            return {}
        wanted = [list(p) for p in pairs]
        if not self.directed_relations:
            wanted += [[t, s] for s, t in pairs]
        sql = (
            f"SELECT {', '.join('r.' + c.strip() for c in _REL_COLUMNS.split(','))} FROM json_each(?) j "
            "JOIN relations r ON r.source = json_extract(j.value, '$[0]') AND r.target = json_extract(j.value, '$[1]')"
        )
        rows = (self.store.wread if writer else self.store.read)(sql, (dumps(wanted),))
        return {(row[0], row[1]): _relation_of(row) for row in rows}

    def _key(self, stored: Mapping[tuple[str, str], Any], source: str, target: str) -> tuple[str, str] | None:
        if (source, target) in stored:
            return (source, target)
        if not self.directed_relations and (target, source) in stored:
            return (target, source)
        return None

    @override
    def get_relations(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Relation]:
        pairs = [(source, target) for source, target in pairs]
        stored = self._relation_rows(pairs, writer=False)
        found: dict[tuple[str, str], Relation] = {}
        for pair in pairs:
            key = self._key(stored, *pair)
            if key is not None:
                found[pair] = stored[key]
        return found

    def iter_entities(self) -> Iterator[Entity]:
        """Every entity, in insertion order (streamed)."""
        for row in self.store.iread("SELECT name, type, description, source_ids FROM entities ORDER BY rowid"):
            yield _entity_of(row)

    def iter_relations(self) -> Iterator[Relation]:
        """Every relation, in insertion order (streamed)."""
        for row in self.store.iread(f"SELECT {_REL_COLUMNS} FROM relations ORDER BY rowid"):
            yield _relation_of(row)

    def __len__(self) -> int:
        return int(self.store.read("SELECT COUNT(*) FROM entities")[0][0])

    def number_of_relations(self) -> int:
        """How many relations are stored."""
        return int(self.store.read("SELECT COUNT(*) FROM relations")[0][0])

    # -- writes ------------------------------------------------------------------------------------

    @override
    def upsert_entities(self, entities: Iterable[Entity], *, merge: Merge[Entity] | None = None) -> None:
        entities = list(entities)
        if not entities:
            return
        for entity in entities:  # refused, never renamed: see pathrag.names.check_name
            check_name(entity.name)
        with self.store.transaction():
            if merge is not None:
                rows = self.store.wread(
                    f"SELECT name, type, description, source_ids FROM entities WHERE name IN {_IN}",
                    (dumps([e.name for e in entities]),),
                )
                current = {row[0]: _entity_of(row) for row in rows}
                merged = []
                for entity in entities:
                    if entity.name in current:
                        entity = merge(current[entity.name], entity)
                    current[entity.name] = entity
                    merged.append(entity)
                entities = merged
            self.store.executemany(
                "INSERT INTO entities VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET type = excluded.type, "
                "description = excluded.description, source_ids = excluded.source_ids",
                [_entity_row(e) for e in entities],
            )

    @override
    def upsert_relations(self, relations: Iterable[Relation], *, merge: Merge[Relation] | None = None) -> None:
        relations = list(relations)
        if not relations:
            return
        for name in (n for r in relations for n in r.pair):
            check_name(name)
        with self.store.transaction():
            stored = self._relation_rows([r.pair for r in relations], writer=True)
            removed: dict[tuple[str, str], None] = {}
            written: dict[tuple[str, str], Relation] = {}
            for relation in relations:
                key = self._key(stored, relation.source, relation.target)
                if key is not None and merge is not None:
                    relation = merge(stored[key], relation)
                if key is not None and key != relation.pair:  # the merge may have re-oriented it
                    del stored[key]
                    written.pop(key, None)
                    removed[key] = None
                removed.pop(relation.pair, None)
                stored[relation.pair] = written[relation.pair] = relation
            ends = dict.fromkeys(n for r in written.values() for n in r.pair)
            self.store.executemany("INSERT OR IGNORE INTO entities VALUES (?, '', '', '[]')", [(n,) for n in ends])
            self.store.executemany("DELETE FROM relations WHERE source = ? AND target = ?", list(removed))
            self.store.executemany(
                f"INSERT INTO relations ({_REL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (source, target) "
                "DO UPDATE SET description = excluded.description, keywords = excluded.keywords, "
                "weight = excluded.weight, source_ids = excluded.source_ids",
                [_relation_row(r) for r in written.values()],
            )

    @override
    def delete_entities(self, names: Iterable[str]) -> None:
        names = dumps(list(names))
        if names == "[]":
            return
        with self.store.transaction():
            self.store.execute(f"DELETE FROM relations WHERE source IN {_IN} OR target IN {_IN}", (names, names))
            self.store.execute(f"DELETE FROM entities WHERE name IN {_IN}", (names,))

    @override
    def delete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        pairs = [(source, target) for source, target in pairs]
        if not pairs:
            return
        with self.store.transaction():
            stored = self._relation_rows(pairs, writer=True)
            keys = {key: None for pair in pairs if (key := self._key(stored, *pair)) is not None}
            self.store.executemany("DELETE FROM relations WHERE source = ? AND target = ?", list(keys))

    def __repr__(self) -> str:
        return f"SQLiteGraphStore({self.store.path})"


_HIT_TEXT = "text" in getattr(VectorHit, "__dataclass_fields__", {})  # hits carry their item's text


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


class SQLiteVectorIndex(VectorIndex):
    """Exact cosine search over one space of the ``vectors`` table (float32 BLOBs, unit length).

    The first query loads the space's vectors into one numpy matrix (reloaded only after a commit);
    search is a matrix-vector product, exact, with ties broken by id.
    """

    def __init__(self, store: SQLiteStore, space: str, embedder: Embedder) -> None:
        self.store = store
        self.space = space
        self.embedder = embedder
        self._cache: tuple[int, list[str], np.ndarray] | None = None
        self._counter = f"vector_writes:{space}"

    def __len__(self) -> int:
        return int(self.store.read("SELECT COUNT(*) FROM vectors WHERE space = ?", (self.space,))[0][0])

    def __contains__(self, item_id: object) -> bool:
        return bool(self.store.read("SELECT 1 FROM vectors WHERE space = ? AND id = ?", (self.space, item_id)))

    def ids(self) -> list[str]:
        """Every item id of the space, sorted."""
        return [row[0] for row in self.store.read("SELECT id FROM vectors WHERE space = ? ORDER BY id", (self.space,))]

    def get(self, item_id: str) -> VectorItem | None:
        """The item stored under ``item_id`` in this space, or ``None``."""
        rows = self.store.read(
            f"SELECT {_READ_TEXT}, v.metadata FROM vectors v WHERE v.space = ? AND v.id = ?", (self.space, item_id)
        )
        return VectorItem(item_id, rows[0][0], json.loads(rows[0][1])) if rows else None

    def changed(self, items: Sequence[VectorItem]) -> list[VectorItem]:
        """Items whose text or metadata is new or different: the only ones worth paying to embed."""
        fresh = {item.id: item for item in items}  # the last of duplicate ids wins
        if not fresh:
            return []
        rows = self.store.wread(
            f"SELECT v.id, {_READ_TEXT}, v.metadata FROM vectors v WHERE v.space = ? AND v.id IN {_IN}",
            (self.space, dumps(list(fresh))),
        )
        same = {
            i for i, text, metadata in rows if fresh[i].text == text and dict(fresh[i].metadata) == json.loads(metadata)
        }
        return [item for i, item in fresh.items() if i not in same]

    def _store(self, items: Sequence[VectorItem], vectors: Sequence[Sequence[float]]) -> None:
        if len(vectors) != len(items):
            raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(items)} texts")
        if not items:
            return
        blobs = [_unit(np.asarray(v, dtype="<f4")).astype("<f4").tobytes() for v in vectors]
        with self.store.transaction():
            self.store.check_dimension(len(vectors[0]), {len(b) // 4 for b in blobs})
            self.store.executemany(
                _WRITE_VECTOR if self.store.format_version >= 2 else _WRITE_VECTOR_V1,
                [
                    (self.space, item.id, item.text, dumps(dict(item.metadata)), blob)
                    for item, blob in zip(items, blobs, strict=True)
                ],
            )
            self.store.bump(self._counter)  # readers' cached matrices are now stale

    @override
    def upsert(self, items: Sequence[VectorItem]) -> None:
        changed = self.changed(items)
        if changed:
            self._store(changed, self.embedder.embed([item.text for item in changed]))

    @override
    async def aupsert(self, items: Sequence[VectorItem]) -> None:
        changed = self.changed(items)
        if changed:
            self._store(changed, await self.embedder.aembed([item.text for item in changed]))

    def upsert_vectors(self, items: Sequence[VectorItem], vectors: Sequence[Sequence[float]]) -> None:
        """Store items with vectors computed elsewhere (e.g. reused from an imported index)."""
        self._store(items, vectors)

    @override
    def delete(self, ids: Iterable[str]) -> None:
        ids = dumps(list(ids))
        if ids != "[]":
            with self.store.transaction():
                self.store.execute(f"DELETE FROM vectors WHERE space = ? AND id IN {_IN}", (self.space, ids))
                self.store.bump(self._counter)

    @override
    async def adelete(self, ids: Iterable[str]) -> None:
        self.delete(ids)

    def _matrix(self) -> tuple[list[str], np.ndarray]:
        """The space's ids and unit vectors as one float32 matrix, reloaded only after a change.

        Call inside :meth:`SQLiteStore.snapshot`: the change counter and the rows are then one state."""
        version = self.store.counter(self._counter)
        if self._cache is None or self._cache[0] != version:
            self._cache = None  # let the old matrix go before the new one is built
            ((count,),) = self.store.read("SELECT COUNT(*) FROM vectors WHERE space = ?", (self.space,))
            first = self.store.read("SELECT length(vector) FROM vectors WHERE space = ? LIMIT 1", (self.space,))
            size = first[0][0] if first else 0
            # filled row by row from a cursor: no list of every blob, no second copy of the matrix
            matrix = np.empty((count, size // 4), dtype="<f4")
            ids: list[str] = []
            for row, (item_id, blob) in enumerate(
                self.store.stream("SELECT id, vector FROM vectors WHERE space = ?", (self.space,))
            ):
                if row == count:  # cannot happen inside a snapshot; guards a misuse outside one
                    break
                if len(blob) != size:
                    raise StoreError(
                        f"{self.store.path}: the {self.space} vectors have different dimensions "
                        f"({size // 4} and {len(blob) // 4}); rebuild the store"
                    )
                ids.append(item_id)
                matrix[row] = np.frombuffer(blob, dtype="<f4")
            self._cache = (version, ids, matrix[: len(ids)])
        return self._cache[1], self._cache[2]

    def _search(self, vector: Sequence[float], k: int) -> list[VectorHit]:
        with self.store.snapshot():  # the matrix and the hits' metadata from one committed state
            ids, matrix = self._matrix()
            if k <= 0 or not ids:
                return []
            query = _unit(np.asarray(vector, dtype=np.float32))
            if query.shape[0] != matrix.shape[1]:
                raise StoreError(
                    f"the embedder gives {query.shape[0]}-dimensional vectors but {self.store.path} "
                    f"holds {matrix.shape[1]}-dimensional ones: open the store with the embedder it "
                    "was built with"
                )
            scores = matrix @ query
            k = min(k, len(ids))
            top = np.argpartition(-scores, k - 1)[:k]
            ranked = sorted(top.tolist(), key=lambda i: (-float(scores[i]), ids[i]))
            found = {
                i: (md, text)
                for i, md, text in self.store.read(
                    f"SELECT v.id, v.metadata, {_READ_TEXT} FROM vectors v WHERE v.space = ? AND v.id IN {_IN}",
                    (self.space, dumps([ids[i] for i in ranked])),
                )
            }
        hits = []
        for i in ranked:
            metadata, text = found[ids[i]]
            extra = {"text": text} if _HIT_TEXT else {}
            hits.append(VectorHit(ids[i], float(scores[i]), json.loads(metadata), **extra))
        return hits

    @override
    def query(self, text: str, k: int) -> list[VectorHit]:
        return self._search(self.embedder.embed([text])[0], k)

    @override
    async def aquery(self, text: str, k: int) -> list[VectorHit]:
        return self._search((await self.embedder.aembed([text]))[0], k)

    def __repr__(self) -> str:
        return f"SQLiteVectorIndex({self.store.path}, {self.space!r})"


# -- whole snapshots: migration of the JSON format, and copies of in-memory indexes ------------------


def write_snapshot(
    store: SQLiteStore,
    *,
    documents: Mapping[str, Mapping[str, Any]],
    chunks: Iterable[Mapping[str, Any]],
    summaries: Mapping[str, str],
    cache: Mapping[str, str],
    entities: Iterable[Entity] = (),
    relations: Iterable[Relation] = (),
    vectors: Mapping[str, Iterable[tuple[str, str, Mapping[str, Any], bytes]]] = {},
    meta: Mapping[str, Any] = {},
) -> None:
    """Write a whole index into ``store`` in one transaction (its tables are expected to be empty)."""
    with store.transaction():
        store.set_meta(meta)
        store.executemany(
            "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?)",
            [
                (doc_id, doc["hash"], dumps(doc.get("metadata", {})), dumps(doc.get("failed", [])))
                for doc_id, doc in documents.items()
            ],
        )
        store.executemany(
            "INSERT OR REPLACE INTO doc_chunks VALUES (?, ?, ?)",
            [
                (doc_id, position, cid)
                for doc_id, doc in documents.items()
                for position, cid in enumerate(doc["chunks"])
            ],
        )
        chunks = list(chunks)
        store.executemany(
            "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?)",
            [(c["id"], c.get("text", ""), pack_records(c.get("entities", []), c.get("relations", []))) for c in chunks],
        )
        store.executemany(
            "INSERT OR IGNORE INTO mentions VALUES (?, ?)",
            [
                (name, c["id"])
                for c in chunks
                for name in mentioned_names(c.get("entities", []), c.get("relations", []))
            ],
        )
        store.executemany("INSERT OR REPLACE INTO summaries VALUES (?, ?)", list(summaries.items()))
        store.executemany(
            "INSERT OR REPLACE INTO llm_cache VALUES (?, ?)",
            [(key, pack_text(answer)) for key, answer in cache.items()],
        )
        store.executemany("INSERT OR IGNORE INTO entities VALUES (?, ?, ?, ?)", [_entity_row(e) for e in entities])
        relations = list(relations)
        store.executemany(
            "INSERT OR IGNORE INTO entities VALUES (?, '', '', '[]')", [(n,) for r in relations for n in r.pair]
        )
        store.executemany(
            f"INSERT OR REPLACE INTO relations ({_REL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            [_relation_row(r) for r in relations],
        )
        dimension = None
        for space, rows in vectors.items():
            rows = list(rows)
            if rows:
                dimension = len(rows[0][3]) // 4
            write = _WRITE_VECTOR if store.format_version >= 2 else _WRITE_VECTOR_V1
            store.executemany(write, [(space, i, text, dumps(dict(md)), blob) for i, text, md, blob in rows])
        if dimension is not None and "dimension" not in meta:
            store.set_meta({"dimension": dimension})


def migrate_json_store(directory: str | os.PathLike[str]) -> bool:
    """Turn a store of the pre-SQLite JSON format in ``directory`` into ``pathrag.sqlite``, once.

    Everything is carried over as it is (vectors included: nothing is re-embedded or re-extracted). The
    new file appears atomically, then the JSON files move to ``json-store-backup/``. Returns whether a
    migration happened; a one-line message says so.
    """
    directory = Path(directory)
    found = legacy_files(directory)
    if store_exists(directory) or not [p for p in found if p.name != "cli.json"]:
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
    from .graph import NetworkXGraphStore  # the old format's readers
    from .storage import Journal, read_json

    state = read_json(directory / "documents.json", {})
    chunks = [r for r in Journal(directory / "chunks.jsonl").read() if "id" in r and "entities" in r]
    cache = {r["key"]: r["answer"] for r in Journal(directory / "llm_cache.jsonl").read() if "key" in r}
    known = {r["id"] for r in chunks}
    missing = [
        cid
        for doc in state.get("documents", {}).values()
        for cid in doc.get("chunks", [])
        if cid not in known and cid not in doc.get("failed", [])
    ]
    if missing:  # a torn or garbled journal: migrating would drop those chunks' records
        raise StoreError(
            f"{directory / 'chunks.jsonl'} lacks {len(missing)} chunk(s) that documents.json lists "
            f"(damaged?), e.g. {missing[0]}: restore it from a backup, or move the JSON files aside "
            "and index the documents again"
        )
    graph = NetworkXGraphStore.load(directory) if (directory / "graph.json").exists() else None
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
    meta: dict[str, Any] = {"migrated_from": "json"}
    cli = read_json(directory / "cli.json", {}) if (directory / "cli.json").exists() else {}
    if isinstance(cli, dict) and isinstance(cli.get("embeddings"), str):
        meta["embedder"] = cli["embeddings"]
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
