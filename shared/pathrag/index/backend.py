"""Where an index keeps what it commits, and how a commit lands there: :class:`MemoryBackend` (an index
without a directory) or :class:`SQLiteBackend` (a store directory, see :mod:`pathrag.sqlite`).

:class:`~pathrag.PathRAGIndex` runs every write the same way, whatever the backend: extract (LLM calls;
each chunk's records saved as they arrive), plan the change against the committed state into a change set
(:class:`~pathrag.index.staging.Staged`: merged entities and relations, LLM summaries, embeddings), then apply
the change set at once. A backend supplies the parts that differ:

- write exclusion: :meth:`IndexBackend.writing` spans a whole write (one per index object at a time; a
  store also tells other processes), :meth:`IndexBackend.applying` the plan-and-apply (a store's writer
  lock, across processes) and says whether another writer committed since the tables were read;
- the commit of a change set: :meth:`~IndexBackend.begin`, :meth:`~IndexBackend.apply` (one synchronous
  run in memory; one short transaction in a store, with no LLM or embedding call inside) and
  :meth:`~IndexBackend.abandon`;
- a committed read (:meth:`~IndexBackend.read_committed`), counts (:meth:`~IndexBackend.stats`), a copy
  in another directory (:meth:`~IndexBackend.save`);
- the tables: records, summaries, LLM cache, and the graph and vector indexes an index owns;
- which graph and vector stores are the index's own kinds, staged, checked, counted and saved with its
  records (:attr:`IndexBackend.kinds`, :mod:`pathrag.index.kinds`): the index asks, it never probes a class.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from pathlib import Path
from typing import TypeVar

from typing_extensions import override

from .._version import __version__
from ..errors import EmbedderMismatch, PathRAGError
from ..graphs.base import GraphStore
from ..graphs.memory import NetworkXGraphStore
from ..ids import RECORD_CHUNK_LIKE, is_record_chunk
from ..sqlite import STORE_FILE, SQLiteGraphStore, SQLiteStore, SQLiteVectorIndex, WriterLock, unpack_records
from ..sqlite.legacy import migrate_json_store
from ..sqlite.schema import DEGREES_COUNTED
from ..vectors.base import Embedder, VectorIndex
from ..vectors.memory import InMemoryVectorIndex
from .kinds import StoreKinds
from .records import ChunkRecord, RecordTables, cited
from .staging import Staged
from .tables import MemoryRecordTables, SQLiteRecordTables, SQLiteStringTable, StringTable

logger = logging.getLogger(__name__)

__all__ = ["IndexBackend", "MemoryBackend", "SQLiteBackend"]

T = TypeVar("T")
Read = Callable[[GraphStore, Mapping[str, VectorIndex]], T]


class IndexBackend:
    """The part of an index that depends on where it is kept (see the module docstring)."""

    directory: Path | None = None
    store: SQLiteStore | None = None
    plans_ahead = False
    """Whether a plan may be made before :meth:`applying` (re-planned there if another writer committed)."""
    kinds = StoreKinds()
    """Which graph and vector stores are the index's own kinds (staged by a commit, checked, counted, saved)."""

    def __init__(self, records: RecordTables, summaries: StringTable, cache: StringTable) -> None:
        self.records = records
        self.summaries = summaries  # apart from the optional cache: deletes must not pay for summaries again
        self.cache = cache
        self._writer = threading.Lock()  # one write of an index object at a time, whichever thread

    # -- what the index owns -----------------------------------------------------------------------

    def own_graph(self, *, directed_relations: bool) -> GraphStore:
        """The graph store of an index given none."""
        raise NotImplementedError

    def own_vectors(self, name: str, embedder: Embedder) -> VectorIndex:
        """The vector index ``name`` (entities, relations, chunks) of an index given none."""
        raise NotImplementedError

    def meta(self) -> dict[str, str]:
        """What the store records about itself (nothing in memory)."""
        return {}

    # -- write exclusion ---------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def writing(self, lock_timeout: float) -> AsyncIterator[None]:
        """A whole write (extraction included): one per index object at a time, whichever thread."""
        while not self._writer.acquire(blocking=False):  # polled: never blocks a loop
            await asyncio.sleep(0.005)
        try:
            yield
        finally:
            self._writer.release()

    @contextlib.asynccontextmanager
    async def applying(self, lock_timeout: float) -> AsyncIterator[bool]:
        """Plan-and-apply; yields whether another writer committed since the tables were last read."""
        yield False

    def refresh(self) -> bool:
        """Pick up other writers' commits (the tables are read again); whether there were any."""
        return False

    # -- the commit of a change set ----------------------------------------------------------------

    def begin(self) -> None:
        """A plan starts: the record tables collect its changes from now on."""
        self.records.start_commit()

    def apply(self, staged: Staged) -> bool:
        """Apply the planned change set and the record tables' changes, all at once; ``False`` (nothing
        applied): another writer committed since the tables were read, plan again."""
        raise NotImplementedError

    def abandon(self) -> None:
        """The plan failed or was overtaken: nothing of it is applied, and the tables forget it."""
        raise NotImplementedError

    # -- reads -------------------------------------------------------------------------------------

    async def aread_committed(
        self, read: Read[Awaitable[T]], graph: GraphStore, indexes: Mapping[str, VectorIndex]
    ) -> T:
        """``await read(graph, indexes)`` on one committed state."""
        raise NotImplementedError

    def read_committed(self, read: Read[T], graph: GraphStore, indexes: Mapping[str, VectorIndex]) -> T:
        """Sync twin of :meth:`aread_committed`."""
        raise NotImplementedError

    def stats(self, chunk_index: VectorIndex) -> dict[str, int]:
        """``documents``, ``chunks`` (passages with text, an import's included), ``imports``, ``records``."""
        raise NotImplementedError

    def quick_check(self, spaces: Collection[str], *, graph: bool) -> list[str]:
        """What cheap counts say disagrees (an empty list: nothing found), for the index's own vector
        ``spaces`` (entities, relations, chunks) and, with ``graph``, its own graph: a part of
        :meth:`pathrag.PathRAGIndex.check` cheap enough to run on every open (nothing in memory)."""
        return []

    def check_degrees(self) -> list[str]:
        """What a recount of the graph's degrees says disagrees with those the store keeps (an empty list:
        nothing found): a part of :meth:`pathrag.PathRAGIndex.check` (nothing kept in memory, nor in a
        store of format 2)."""
        return []

    # -- the rest ----------------------------------------------------------------------------------

    def check_writable(self) -> None:
        """Raise now if a write would fail later (a read-only store)."""

    def save(self, target: Path, export: Callable[[SQLiteStore], None]) -> None:
        """Write a complete copy to ``target``; ``export`` writes what the index holds into a new store."""
        raise NotImplementedError

    def close(self) -> None:
        """Close what is open (nothing in memory)."""


class MemoryBackend(IndexBackend):
    """An index without a directory: dicts, a NetworkX graph and in-memory vector indexes.

    A commit's change set is applied in one synchronous run; readers of other threads see the state
    before it until then (a version counter, odd while a commit is being applied). The record tables
    collect a commit's changes in a layer the apply publishes (:class:`~pathrag.index.rows.LayeredRows`):
    counts and chunk texts are the committed ones while it plans. A failed commit changes nothing: the
    layer is dropped, and an apply that raises half-way undoes its graph and vector writes."""

    def __init__(self) -> None:
        self._tables = MemoryRecordTables()
        super().__init__(self._tables, StringTable(), StringTable())
        self._version = 0

    @override
    def own_graph(self, *, directed_relations: bool) -> GraphStore:
        return NetworkXGraphStore(directed_relations=directed_relations)

    @override
    def own_vectors(self, name: str, embedder: Embedder) -> VectorIndex:
        return InMemoryVectorIndex(embedder)

    @override
    def begin(self) -> None:
        super().begin()
        self.records.begin_undo()

    @override
    def apply(self, staged: Staged) -> bool:
        self._version += 1
        try:
            staged.apply(undo=True)  # all or nothing: a write that raises has the change set's writes undone
            self.records.write_commit()  # the record tables' changes published with the graph and vectors'
            self.records.end_undo()
        finally:
            self._version += 1
        return True

    @override
    def abandon(self) -> None:
        self.records.undo()
        self.records.end_undo()

    @override
    async def aread_committed(
        self, read: Read[Awaitable[T]], graph: GraphStore, indexes: Mapping[str, VectorIndex]
    ) -> T:
        # A read that overlapped a commit being applied (from another thread) is run again, and one
        # starting during it waits for its end (a few milliseconds).
        while True:
            version = self._version
            if version % 2:
                await asyncio.sleep(0.001)
                continue
            try:
                result = await read(graph, indexes)
            except Exception:
                if self._version != version:
                    continue  # it read a commit half applied: read again
                raise
            if self._version == version:
                return result

    @override
    def read_committed(self, read: Read[T], graph: GraphStore, indexes: Mapping[str, VectorIndex]) -> T:
        while True:
            version = self._version
            if version % 2:
                time.sleep(0.001)
                continue
            try:
                result = read(graph, indexes)
            except Exception:
                if self._version != version:
                    continue
                raise
            if self._version == version:
                return result

    @override
    def stats(self, chunk_index: VectorIndex) -> dict[str, int]:
        # the committed rows, not a planning commit's (copied at once: a commit lands in them in place)
        chunks = dict(self._tables.committed_chunks)
        live = {cid: c for cid, c in chunks.items() if c.refs}
        held = [c for cid, c in live.items() if not c.text and is_record_chunk(cid)]
        passages = cited(held)
        imported = sum(cid in passages and cid not in chunks for cid in self.kinds.memory_ids(chunk_index) or ())
        return {
            "documents": len(self._tables.committed_documents),
            "chunks": sum(1 for c in live.values() if c.text) + imported,
            "imports": len({doc_id for c in held for doc_id in c.refs}),
            "records": sum(len(c.entities) + len(c.relations) for c in held),
        }

    def save(self, target: Path, export: Callable[[SQLiteStore], None]) -> None:
        """Write the index as a new store in ``target``, replacing any store there (atomically)."""
        target.mkdir(parents=True, exist_ok=True)
        staging = target / ".saving"
        shutil.rmtree(staging, ignore_errors=True)
        store = SQLiteStore(staging)
        try:
            export(store)
        finally:
            store.close()
        for suffix in ("-wal", "-shm"):
            (target / (STORE_FILE + suffix)).unlink(missing_ok=True)
        os.replace(staging / STORE_FILE, target / STORE_FILE)
        shutil.rmtree(staging, ignore_errors=True)


class SQLiteBackend(IndexBackend):
    """An index in a store directory: one SQLite file, read by snapshots, written by one process at a time.

    Writes announce themselves to other processes (:meth:`~pathrag.sqlite.WriterLock.abegin`) and extract
    side by side; plan-and-apply holds the store's writer lock, after picking up the commits of other
    processes (the store's commit counter). A change set is applied in one ``BEGIN IMMEDIATE … COMMIT``.
    """

    plans_ahead = True

    def __init__(self, store: SQLiteStore) -> None:
        super().__init__(
            SQLiteRecordTables(store),
            SQLiteStringTable(store, "summaries", "text"),
            SQLiteStringTable(store, "llm_cache", "answer", packed=True),  # kept compressed: rarely read
        )
        self.store = self._db = store
        self.directory = store.directory
        self._lock = WriterLock(store.directory)
        self._seen = -1  # the store's commit counter when the record tables were last read or written
        self._vectors: list[SQLiteVectorIndex] = []  # brought up to date after each commit
        self._committed = False
        self._folder: concurrent.futures.ThreadPoolExecutor | None = None  # folds them into their saved files
        self._folding: concurrent.futures.Future[None] | None = None

    @classmethod
    def open(
        cls, directory: Path, *, embedder: str | None, vector_kind: str, directed_relations: bool
    ) -> SQLiteBackend:
        """Open (migrating a JSON-format directory first) and check the store's record of its embedder."""
        migrate_json_store(directory)
        created = {  # a new store is made with these rows, at once (see SQLiteStore)
            "pathrag_version": __version__,
            "vector_index": vector_kind,
            "directed_relations": int(directed_relations),
            **({"embedder": embedder} if embedder else {}),
        }
        store = SQLiteStore(directory, initial_meta=created)
        meta = store.meta()
        recorded = meta.get("embedder")
        if recorded and embedder and recorded != embedder:
            store.close()
            raise EmbedderMismatch(directory, recorded, embedder)
        wanted = {
            "pathrag_version": __version__,
            "vector_index": vector_kind,
            **({"embedder": embedder} if embedder and not recorded else {}),
            **({} if "directed_relations" in meta else {"directed_relations": int(directed_relations)}),
        }
        changed = {k: v for k, v in wanted.items() if meta.get(k) != str(v)}
        if changed and not store.read_only:
            try:
                with store.transaction():
                    store.set_meta(changed)
            except sqlite3.OperationalError:  # a read-only store still answers queries
                pass
        return cls(store)

    @override
    def own_graph(self, *, directed_relations: bool) -> GraphStore:
        return SQLiteGraphStore(self._db, directed_relations=directed_relations)

    @override
    def own_vectors(self, name: str, embedder: Embedder) -> VectorIndex:
        index = SQLiteVectorIndex(self._db, name, embedder)
        index.keep_written()  # taken in after each commit (_catch_up): the rows need not be read back
        self._vectors.append(index)
        return index

    @override
    def meta(self) -> dict[str, str]:
        return self._db.meta()

    @contextlib.asynccontextmanager
    @override
    async def writing(self, lock_timeout: float) -> AsyncIterator[None]:
        if self._db.read_only:  # before the lock file, which cannot be made there either
            self._db.check_writable()
        async with super().writing(lock_timeout):
            await self._lock.abegin(lock_timeout)
            try:
                yield
            finally:
                self._lock.end()

    @contextlib.asynccontextmanager
    @override
    async def applying(self, lock_timeout: float) -> AsyncIterator[bool]:
        await self._lock.aacquire(lock_timeout)
        try:
            yield self.refresh()
        finally:
            self._lock.release()
        if self._committed:  # after the lock: other writers need not wait for it
            self._committed = False
            self._catch_up()

    @override
    def refresh(self) -> bool:
        current = self._db.commit_count()
        if current == self._seen:
            return False
        self.records.reset()  # written by someone else meanwhile (or never read): read again
        self._seen = current
        return True

    @override
    def apply(self, staged: Staged) -> bool:
        if staged or self.records.changed():  # nothing to change: no transaction, no commit counted
            try:
                with self._db.transaction():
                    # The writer lock keeps other commits out; checked here all the same, so that the plan's
                    # state is the committed one even where there is no lock (no fcntl: Windows).
                    if self._db.commit_count() != self._seen:
                        raise _Overtaken
                    staged.apply()
                    self.records.write_commit()
                    self._seen = self._db.count_commit()
            except _Overtaken:
                return False
            self._committed = True
        self.records.reset()  # committed: a long-lived writer keeps no more than one write's rows
        return True

    def _catch_up(self) -> None:
        """After a commit: the vector search indexes take in its changes now, not at the next query (a
        failure here loses nothing: the commit stands, and the next query tries again).

        They do it in a thread of this store's own, while the writer goes on: a bulk import writes its next
        batch meanwhile. Taking in the changed rows (their vectors handed over by the writer at the commit, not
        read back: see ``keep_written`` in :meth:`own_vectors`) and folding them into the saved HNSW files (C++
        that releases the GIL) overlap the writer's work. One at a time: the
        next commit waits for the last one first, so an import never holds more than one batch's vectors
        apart. A query that needs an index meanwhile waits for it (its lock); :meth:`close` waits for the
        last one."""
        self.wait_folded()
        if self._folder is None:
            self._folder = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pathrag-fold")
        self._folding = self._folder.submit(self._take_in)

    def _take_in(self) -> None:
        for index in self._vectors:
            try:
                index.catch_up()
            except Exception as exc:  # the changes are taken in, or folded, next time
                logger.warning("%r could not take in the last commit yet: %r", index, exc)

    def wait_folded(self) -> None:
        """Return once the folds started by this process's commits have ended."""
        if self._folding is not None:
            concurrent.futures.wait([self._folding])
            self._folding = None

    @override
    def abandon(self) -> None:
        self.records.reset()  # they may hold the changes that were not applied

    @override
    async def aread_committed(
        self, read: Read[Awaitable[T]], graph: GraphStore, indexes: Mapping[str, VectorIndex]
    ) -> T:
        with self._db.snapshot():
            return await read(graph, indexes)

    @override
    def read_committed(self, read: Read[T], graph: GraphStore, indexes: Mapping[str, VectorIndex]) -> T:
        with self._db.snapshot():
            return read(graph, indexes)

    @override
    def stats(self, chunk_index: VectorIndex) -> dict[str, int]:
        with self._db.snapshot():  # one committed state (shared with an enclosing committed read)
            return self._counts()

    def _counts(self) -> dict[str, int]:
        store = self._db
        ((documents,),) = store.read("SELECT COUNT(*) FROM documents")
        # an import's records live in a chunk without text: it is not a passage
        ((chunks,),) = store.read(
            "SELECT COUNT(DISTINCT d.chunk_id) FROM doc_chunks d JOIN chunks c ON c.id = d.chunk_id WHERE c.text != ''"
        )
        records = store.read(
            "SELECT d.doc_id, c.id, c.records FROM doc_chunks d "
            f"JOIN chunks c ON c.id = d.chunk_id WHERE c.text = '' AND c.id LIKE '{RECORD_CHUNK_LIKE}'"
        )
        held = [_record_chunk(cid, blob) for _, cid, blob in records]
        # an import's passages: chunk vectors without a chunk row, cited by a live import's records
        passages = cited(held)
        imported = sum(
            vid in passages
            for (vid,) in store.read(
                "SELECT v.id FROM vectors v WHERE v.space = 'chunks' "
                "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = v.id)"
            )
        )
        return {
            "documents": documents,
            "chunks": chunks + imported,
            "imports": len({doc_id for doc_id, _, _ in records}),
            "records": sum(len(c.entities) + len(c.relations) for c in held),
        }

    @override
    def quick_check(self, spaces: Collection[str], *, graph: bool) -> list[str]:
        # Counts over indexes only (no vector, text or record is read), in one committed state. A graph row
        # and its vector are written in the same commit, so their counts agree on an undamaged store; so
        # does every document's chunk have a row (unless its extraction failed) and, with text, a vector.
        problems: list[str] = []
        with self._db.snapshot():
            for space, table in (("entities", "entities"), ("relations", "relations")):
                if graph and space in spaces:
                    problems += _disagree(self._db, space, table)
            ((unembedded,),) = self._db.read(_CHUNKS_WITHOUT_VECTOR) if "chunks" in spaces else ((0,),)
            ((lost,),) = self._db.read(_LOST_CHUNKS)
        if unembedded:
            problems.append(f"{unembedded} chunks without a vector")
        if lost:
            problems.append(f"{lost} chunks of documents missing")
        return problems

    @override
    def check_degrees(self) -> list[str]:
        if self._db.format_version < 3:  # counted on every read: nothing kept to check
            return []
        with self._db.snapshot():
            rows = self._db.read(_DEGREES_DIFFER)
        if not rows:
            return []
        name, kept, counted = rows[0]
        return [
            f"{len(rows)} entities whose kept degrees differ from a recount of the relations, e.g. {name!r} "
            f"(kept {kept or 'none'}, counted {counted or 'none'})"
        ]

    @override
    def check_writable(self) -> None:
        self._db.check_writable()

    def save(self, target: Path, export: Callable[[SQLiteStore], None]) -> None:
        """Every commit is in the directory already: another one gets a consistent copy of the store."""
        if target.resolve() != self._db.directory.resolve():
            self._db.copy_to(target)

    @override
    def close(self) -> None:
        self.wait_folded()  # an import's last batch goes into its saved search indexes before the end
        if self._folder is not None:
            self._folder.shutdown()
            self._folder = None
        for index in self._vectors:
            index.stop_folding()  # one a search started: nothing is written in the directory after close
        self._db.close()


# The documents' chunks that have no row and are not among their document's failed extractions (the
# failed list is read only for a chunk without a row).
_LOST_CHUNKS = (
    "SELECT COUNT(*) FROM doc_chunks d INDEXED BY doc_chunks_by_chunk "
    "WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = d.chunk_id) "
    "AND NOT EXISTS (SELECT 1 FROM documents doc, json_each(doc.failed) f "
    "WHERE doc.id = d.doc_id AND f.value = d.chunk_id)"
)
# The documents' chunks with text (a record chunk has none: told by its id) that have no vector. The other
# way round is not counted: an import's passage may share a released chunk's id (check() tells them apart).
_CHUNKS_WITHOUT_VECTOR = (
    "SELECT COUNT(DISTINCT d.chunk_id) FROM doc_chunks d "
    f"WHERE d.chunk_id NOT LIKE '{RECORD_CHUNK_LIKE}' "
    "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = 'chunks' AND v.id = d.chunk_id) "
    "AND EXISTS (SELECT 1 FROM chunks c WHERE c.id = d.chunk_id)"
)

# The entities whose kept degrees (the degrees table, format 3) differ from a recount of the relations, each
# with both as "degree/out_degree" (NULL where there is no row), in name order: the counted rows against the
# kept ones, then the kept rows of entities with no relation to count (self-loops aside).
_DEGREES_DIFFER = f"""
WITH counted(name, degree, out_degree) AS ({DEGREES_COUNTED})
SELECT c.name, d.degree || '/' || d.out_degree, c.degree || '/' || c.out_degree
FROM counted c LEFT JOIN degrees d ON d.name = c.name
WHERE d.name IS NULL OR d.degree != c.degree OR d.out_degree != c.out_degree
UNION ALL
SELECT d.name, d.degree || '/' || d.out_degree, NULL FROM degrees d
WHERE NOT EXISTS (SELECT 1 FROM relations r WHERE r.source = d.name AND r.target != r.source)
AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.target = d.name AND r.source != r.target)
ORDER BY 1
"""


def _disagree(store: SQLiteStore, space: str, table: str) -> list[str]:
    """The rows of a graph table and the vectors of its space, when their counts differ."""
    ((rows,),) = store.read(f"SELECT COUNT(*) FROM {table}")
    ((vectors,),) = store.read("SELECT COUNT(*) FROM vectors WHERE space = ?", (space,))
    if rows == vectors:
        return []
    singular = {"entities": "entity", "relations": "relation"}[space]
    if rows > vectors:
        return [f"{rows - vectors} {space} without a vector ({rows} {space}, {vectors} {singular} vectors)"]
    return [f"{vectors - rows} {singular} vectors without an owner ({rows} {space}, {vectors} {singular} vectors)"]


class _Overtaken(PathRAGError):
    """Raised inside a transaction to roll it back: another writer committed after the plan read."""


def _record_chunk(cid: str, blob: bytes | str) -> ChunkRecord:
    """A record chunk (an import's) from its stored records, without its claims."""
    rows = unpack_records(blob)
    return ChunkRecord(cid, "", rows.get("entities", []), rows.get("relations", []))
