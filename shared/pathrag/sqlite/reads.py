"""The reading side of :class:`~pathrag.sqlite.SQLiteStore`: per-thread readers and read snapshots.

A read sees committed state only (WAL): the last commit, or the one an open :meth:`StoreReads.snapshot` of the
calling thread or asyncio task started at, so that a retrieval running while a commit lands answers wholly
from the state before it or after it.
"""

from __future__ import annotations

import contextlib
import contextvars
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

__all__ = ["StoreReads"]

_SNAPSHOTS: contextvars.ContextVar[Mapping[StoreReads, sqlite3.Connection]] = contextvars.ContextVar(
    "pathrag_snapshots", default=MappingProxyType({})
)
"""The open read snapshot of each store, per thread and asyncio task (see :meth:`SQLiteStore.snapshot`)."""


class StoreReads:
    """The reads of a store (its connections and state are declared here, made by
    :class:`~pathrag.sqlite.SQLiteStore`)."""

    _local: threading.local
    _readers: list[sqlite3.Connection]
    _idle: list[sqlite3.Connection]
    _rlock: threading.Lock

    def _connect(self) -> sqlite3.Connection:
        raise NotImplementedError

    def _raise_if_damaged(self, exc: sqlite3.DatabaseError) -> None:
        raise NotImplementedError

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
        try:
            conn.execute("BEGIN")
            conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()  # the snapshot starts at the first read
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            self._raise_if_damaged(exc)
            raise
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
            except sqlite3.DatabaseError as exc:
                self._raise_if_damaged(exc)
                raise
            else:
                with self._rlock:
                    if generation is self._readers:  # not closed meanwhile
                        self._idle.append(conn)

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """A read of the last committed state (or of this thread's open :meth:`snapshot`)."""
        try:
            return self._r().execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            self._raise_if_damaged(exc)
            raise

    def stream(self, sql: str, params: Sequence[Any] = (), batch: int = 1000) -> Iterator[tuple[Any, ...]]:
        """Rows of a read on this thread's reader, a batch at a time (inside a snapshot: of that state)."""
        try:
            cursor = self._r().execute(sql, params)
        except sqlite3.DatabaseError as exc:
            self._raise_if_damaged(exc)
            raise
        yield from self._fetch_batches(cursor, batch, close=False)

    def iread(self, sql: str, params: Sequence[Any] = (), batch: int = 2000) -> Iterator[tuple[Any, ...]]:
        """Rows of a committed-state query, streamed in batches (one read transaction throughout): inside a
        :meth:`snapshot` (of the calling thread or task when this is called), of that snapshot's state."""
        held = _SNAPSHOTS.get().get(self)
        if held is not None:
            return self._fetch_batches(held.execute(sql, params), batch)
        return self._iread_own(sql, params, batch)

    def _fetch_batches(self, cursor: sqlite3.Cursor, batch: int, *, close: bool = True) -> Iterator[tuple[Any, ...]]:
        try:
            while True:
                try:
                    rows = cursor.fetchmany(batch)
                except sqlite3.DatabaseError as exc:
                    self._raise_if_damaged(exc)
                    raise
                if not rows:
                    return
                yield from rows
        finally:
            if close:
                cursor.close()

    def _iread_own(self, sql: str, params: Sequence[Any], batch: int) -> Iterator[tuple[Any, ...]]:
        conn = self._connect()  # its own connection: the shared reader stays free meanwhile
        try:
            try:
                conn.execute("PRAGMA query_only = ON")
                cursor = conn.execute(sql, params)
            except sqlite3.DatabaseError as exc:
                self._raise_if_damaged(exc)
                raise
            yield from self._fetch_batches(cursor, batch)
        finally:
            conn.close()

    def counter(self, key: str) -> int:
        """A change counter kept in ``meta``, as this thread's reader sees it."""
        rows = self.read("SELECT value FROM meta WHERE key = ?", (key,))
        return int(rows[0][0]) if rows else 0
