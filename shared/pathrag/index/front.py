"""The indexing pipeline: documents → chunks → LLM extraction → merged graph and vector indexes.

:class:`PathRAGIndex` keeps a knowledge graph (any :class:`~pathrag.GraphStore`), three vector indexes
(entities, relations, chunks) and, under one directory, the chunk records and an LLM answer cache.

Every entity and relation is a pure function of the extraction records of the chunks that mention
it (see :mod:`pathrag.index.merging`). Insert and delete therefore just change the set of live chunks and
rebuild what they touch, which makes both idempotent: re-running an interrupted insert completes it,
and ``insert(A); insert(B); delete(B)`` leaves exactly what ``insert(A)`` alone leaves.

Every write runs in one order (:meth:`PathRAGIndex._commit`): extract (LLM), saving each chunk's
records and each LLM answer the moment it arrives, so a re-run after a crash (even ``kill -9``)
re-extracts only chunks whose results were not saved; then plan the change against the committed state
(merge, LLM summaries, embeddings) into a change set; then apply it at once, visible all at once or not
at all. Where it lands is a backend's business (:mod:`pathrag.index.backend`): memory, or a directory holding
one SQLite file (:mod:`pathrag.sqlite`), where a change set is one short transaction and processes
writing the same store extract side by side and take turns only to plan and apply. A directory in the
older JSON format is migrated on first open.

:class:`PathRAGIndex` coordinates; each concern lives in its own module: where the index is kept in
:mod:`pathrag.index.backend`, the typed document and chunk records and their rows in :mod:`pathrag.index.records`,
the change set of a commit in :mod:`pathrag.index.staging`, the LLM calls (cache, retries, concurrency, usage)
in :mod:`pathrag.llm.calls`, the rebuild of entities, relations and their vectors from the chunk records
in :mod:`pathrag.index.rebuild` (merged by :func:`pathrag.index.merging.merge_records`), and what gets embedded under
which id in :mod:`pathrag.vectors.items`; the values it takes and returns (:class:`Document`,
:class:`IndexConfig`, the summaries) are :mod:`pathrag.index.values`, its embedder stand-ins
:mod:`pathrag.vectors.embedders`.

Why this module is longer than the others (~800 lines): it is one class, :class:`PathRAGIndex`, whose
methods are the steps of the one commit order (extract, plan, apply) and the public API over them, sync
and async. Each step is already a short method calling the modules above; cutting the class in two would
put one write's sequence in two files.

>>> import asyncio
>>> from pathrag import PathRAGIndex, HashingEmbedder
>>> async def llm(prompt):
...     return (
...         '("entity"<|>Alice<|>person<|>A pilot.)##'
...         '("relationship"<|>Alice<|>Saltmere<|>Alice lives in Saltmere.<|>home<|>7)<|COMPLETE|>'
...     )
>>> index = PathRAGIndex(llm=llm, embedder=HashingEmbedder())
>>> summary = index.insert(["Alice, a pilot, lives in Saltmere."])
>>> summary.documents, summary.entities, summary.relations
(1, 2, 1)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from tqdm.auto import tqdm

from .._sync import run_sync
from .._version import __version__
from ..errors import MissingEmbedderError, StoreDamaged, StoreError
from ..graphs.base import GraphStore
from ..graphs.memory import NetworkXGraphStore
from ..ids import chunk_id, digest, entity_vector_id, record_chunk_id, relation_vector_id
from ..llm.calls import LLMCaller, OperationCalls
from ..llm.client import LanguageModel, RememberingLanguageModel, as_language_model
from ..models import Entity, Relation
from ..names import check_name
from ..query.retrieval import RetrievalResult, aretrieve, retrieve
from ..sqlite import STORE_FILE, SQLiteGraphStore, SQLiteStore, SQLiteVectorIndex, store_exists, write_snapshot
from ..sqlite.legacy import legacy_files
from ..vectors.base import Embedder, VectorIndex, VectorItem
from ..vectors.embedders import LazyEmbedder, MissingEmbedder, embedder_from_name, embedder_name_of
from ..vectors.items import aput_vectors, entity_vector_item, relation_vector_item
from ..vectors.memory import InMemoryVectorIndex
from .backend import IndexBackend, MemoryBackend, SQLiteBackend
from .estimate import IndexEstimate
from .extractors import Extractor, as_extractor
from .merging import relation_key
from .rebuild import Rebuilt, Summariser, rebuild, sync_chunk_vectors
from .records import ChunkRecord, DocumentRecord, cited
from .staging import Staged
from .values import INSERT_BATCH, ChunkFailure, DeleteSummary, Document, IndexConfig, InsertSummary, iter_documents

__all__ = [
    "ChunkFailure",
    "ChunkRecord",
    "DeleteSummary",
    "Document",
    "DocumentRecord",
    "IndexConfig",
    "InsertSummary",
    "LazyEmbedder",
    "MissingEmbedder",
    "MissingEmbedderError",
    "PathRAGIndex",
    "chunk_id",
    "entity_vector_id",
    "entity_vector_item",
    "relation_vector_id",
    "relation_vector_item",
    "aput_vectors",
    "run_sync",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")

STATE_FILE = STORE_FILE  # the file whose presence says "an index lives here"
PATHRAG_VERSION = __version__  # the distribution's version, written in _version.py


class PathRAGIndex:
    """A PathRAG knowledge-graph index, optionally persisted under ``directory``.

    ``llm`` extracts and summarises (a :class:`~pathrag.LanguageModel` or a ``prompt -> str`` function,
    sync or async). ``embedder`` feeds the default in-memory vector indexes; pass ``entity_index``,
    ``relation_index`` and ``chunk_index`` to use other vector stores, and ``graph`` for another
    graph store. With a ``directory``, everything lives in its ``pathrag.sqlite`` (see
    :mod:`pathrag.sqlite`), opened lazily: a retrieval reads only what it needs. The store records the
    embedder's name (``embedder_name``, by default derived from the embedder) and refuses another one.

    An existing store opens without ``embedder``: with the one it records when the core can make it
    (``hashing-<dim>``, see :func:`embedder_from_name`), else with a :class:`MissingEmbedder`, so that
    reads that embed nothing work and a query or a write that must embed raises
    :class:`MissingEmbedderError` (a write before changing anything). Without a directory, or with one
    that holds no store yet, pass an embedder.

    ``extractor`` turns chunks into records: ``"llm"`` (the default) asks ``llm``; ``"lexical"`` needs no model
    at all (names and the sentences joining them, see :mod:`pathrag.index.lexical`), so with the
    :class:`~pathrag.HashingEmbedder` a folder is indexed with no key and no network. One store holds both kinds:
    indexing a document again with the other extractor replaces its records (see
    :mod:`pathrag.index.extractors`). With ``llm`` given, the lexical index still asks it for description
    summaries and query keywords.

    ``backend`` keeps the index somewhere else: an :class:`~pathrag.index.backend.IndexBackend` of your own
    (one class; :class:`pathrag.testing.IndexBackendContract` is its test suite). By default it is the
    SQLite store of ``directory``, or memory without one.

    Opening a store checks, with a few counts over its indexes (12 ms for 10,000 documents, 124 ms for 100,000),
    that graph rows, vectors and the documents' chunks agree, and raises :class:`~pathrag.errors.StoreDamaged`
    (one line: the store, what disagrees, how to rebuild) when they do not; ``check_on_open=False`` opens
    it as it is (to see every problem with :meth:`check`, or to read what is left).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        llm: LanguageModel | Callable[[str], str] | Callable[[str], Awaitable[str]] | None = None,
        embedder: Embedder | None = None,
        graph: GraphStore | None = None,
        entity_index: VectorIndex | None = None,
        relation_index: VectorIndex | None = None,
        chunk_index: VectorIndex | None = None,
        config: IndexConfig | None = None,
        embedder_name: str | None = None,
        backend: IndexBackend | None = None,
        check_on_open: bool = True,
        extractor: str | Extractor = "llm",
    ) -> None:
        if backend is not None and directory is not None:
            raise ValueError("pass a directory (the built-in SQLite store) or a backend, not both")
        self.config = config or IndexConfig()
        self.llm = as_language_model(llm) if llm is not None else None
        self.extractor = as_extractor(extractor)
        given = {"entities": entity_index, "relations": relation_index, "chunks": chunk_index}
        recorded = embedder is None and any(v is None for v in given.values())  # the store's own embedder
        if backend is None:
            backend = self._builtin_backend(directory, recorded, embedder_name or embedder_name_of(embedder), given)
        elif recorded and not (embedder_name or backend.meta().get("embedder")):
            raise ValueError("pass an embedder, or all three of entity_index, relation_index and chunk_index")
        self.directory = backend.directory
        self._backend = backend
        self._store = backend.store  # the store of a directory (None in memory)
        if recorded:  # an existing store opened without an embedder: the one it records
            name = embedder_name or backend.meta().get("embedder")
            embedder = embedder_from_name(name) or MissingEmbedder(name, backend.directory or "(the backend)")
        self._embedder = embedder  # the embedder of the index's own vector indexes (if any)
        self.vector_indexes: dict[str, VectorIndex] = {}
        for name, index in given.items():
            if index is None:
                assert embedder is not None  # checked above: an index is missing only when an embedder is given
                index = backend.own_vectors(name, embedder)
            self.vector_indexes[name] = index
        self._owns_graph = graph is None
        directed = self.config.directed_relations
        self.graph = graph if graph is not None else backend.own_graph(directed_relations=directed)
        # Document and chunk records: rows of the store fetched on first use (a retrieval never needs
        # them, a write only its own), or dicts in memory.
        self._records = backend.records
        self._staged: Staged | None = None  # the change set of the commit being planned (see staging.py)
        self.summaries = backend.summaries
        self._cache = backend.cache
        config = self.config
        self._llm_calls = LLMCaller(
            self._cache,
            use_cache=config.cache,
            max_attempts=config.max_attempts,
            retry_initial_wait=config.retry_initial_wait,
            retry_max_wait=config.retry_max_wait,
            token_counter=config.token_counter,
        )
        self._summariser = Summariser(
            self.summaries,
            threshold_tokens=config.summary_threshold_tokens,
            max_words=config.summary_max_words,
            language=config.extraction.language,
            token_counter=config.token_counter,
        )
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        if check_on_open:
            self.quick_check()

    def quick_check(self) -> None:
        """Raise :class:`~pathrag.errors.StoreDamaged` (and close the store) when cheap counts of the store
        disagree (see :meth:`pathrag.index.backend.IndexBackend.quick_check`): what :meth:`check` would find of a
        lost or extra vector or graph row, at the cost of a few ``COUNT`` queries over indexes. Run on open
        unless ``check_on_open=False``."""
        spaces = [name for name, index in self.vector_indexes.items() if isinstance(index, SQLiteVectorIndex)]
        try:
            problems = self._backend.quick_check(
                spaces, graph=self._owns_graph and isinstance(self.graph, SQLiteGraphStore)
            )
        except StoreError:  # a store file SQLite cannot read, say (StoreDamaged): closed as well
            self._backend.close()
            raise
        if problems:
            self._backend.close()
            raise StoreDamaged(self._store.path if self._store is not None else Path(f"{self.directory}"), problems)

    def _builtin_backend(
        self,
        directory: str | os.PathLike[str] | None,
        recorded: bool,
        embedder_name: str | None,
        given: Mapping[str, VectorIndex | None],
    ) -> IndexBackend:
        """The SQLite store of ``directory``, or memory without one (``recorded``: no embedder was given,
        so the store must exist to say which embeddings it holds)."""
        path = Path(directory) if directory is not None else None
        if recorded and (path is None or not (store_exists(path) or legacy_files(path))):
            raise ValueError(
                "pass an embedder, or all three of entity_index, relation_index and chunk_index"
                + (f" (no store in {path} yet to take the embedder from)" if path else "")
            )
        if path is None:
            return MemoryBackend()
        return SQLiteBackend.open(
            path,
            embedder=embedder_name,
            vector_kind="external" if any(v is not None for v in given.values()) else "sqlite-exact",
            directed_relations=self.config.directed_relations,
        )

    # -- the document and chunk tables, loaded on first use ------------------------------------------

    @property
    def documents(self) -> MutableMapping[str, DocumentRecord]:
        """Document id -> its :class:`~pathrag.index.records.DocumentRecord` (read-only for callers; iterating
        it reads every document of the store)."""
        return self._records.documents

    @property
    def chunks(self) -> MutableMapping[str, ChunkRecord]:
        """Chunk id -> its :class:`~pathrag.index.records.ChunkRecord`: text, extraction records and ``refs``
        (document id -> position)."""
        return self._records.chunks

    def chunk_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The text of each live chunk among ``ids`` (unknown, released and record-only chunks are left out)."""
        return self._records.chunk_texts(ids)

    async def _commit(self, plan: Callable[[], Awaitable[T]]) -> T:
        """Plan a commit and apply it. ``plan`` reads the committed state and writes the change through the
        record tables, :meth:`_written_graph` and :meth:`_written_index`: merged entities and relations,
        LLM summaries and embeddings go into a change set (:mod:`pathrag.index.staging`), applied at the end at
        once (:meth:`pathrag.index.backend.IndexBackend.apply`): no LLM or embedding call runs while a store's
        transaction is open.

        In a store, when the index owns its graph and vector indexes, the plan is made before the writer
        lock; under it, it is applied if no other process committed meanwhile, else made again, paying
        only for what that commit changed (summaries are kept by prompt, embeddings by text). A graph or
        vector store passed in is written as the plan goes, so a plan that may be thrown away must not
        touch it: then the plan is made under the lock."""
        backend = self._backend
        embedded: dict[int, dict[str, Sequence[float]]] = {}  # vectors by text, kept across plans
        staged: Staged | None = None
        try:
            if backend.plans_ahead and self._stages_everything():
                backend.refresh()
                result, staged = await self._plan(plan, embedded)
            async with backend.applying(self.config.lock_timeout) as overtaken:
                while staged is None or overtaken or not backend.apply(staged):
                    if staged is not None:
                        backend.abandon()
                        backend.refresh()
                    result, staged = await self._plan(plan, embedded)
                    overtaken = False
        except BaseException:
            backend.abandon()
            raise
        return result

    async def _plan(
        self, plan: Callable[[], Awaitable[T]], embedded: dict[int, dict[str, Sequence[float]]]
    ) -> tuple[T, Staged]:
        """Run ``plan`` with a fresh change set (``embedded``: the vectors of earlier plans of this commit)."""
        self._backend.begin()
        self._staged = staged = Staged(embedded)
        try:
            return await plan(), staged
        finally:
            self._staged = None

    def _stages_everything(self) -> bool:
        """Whether the graph and every vector index are kinds a commit stages (the index's own kinds)."""
        return isinstance(self.graph, _OWN_GRAPHS) and all(
            isinstance(index, (InMemoryVectorIndex, SQLiteVectorIndex)) for index in self.vector_indexes.values()
        )

    # -- public API --------------------------------------------------------------------------------

    def _operation_lock(self) -> asyncio.Lock:
        """One insert or delete at a time (per event loop: the sync twins each run their own loop)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """One write of this index at a time: per event loop (the operation lock), across threads (each sync
        call runs its own loop) and, for a directory, announced to other processes: with ``lock_timeout``
        0 it is refused at once while another process writes; otherwise they extract side by side and take
        turns to plan and apply (see :meth:`pathrag.sqlite.WriterLock.abegin`)."""
        async with self._operation_lock(), self._backend.writing(self.config.lock_timeout):
            yield

    @property
    def entity_index(self) -> VectorIndex:
        """The vector index of entities (name and description)."""
        return self.vector_indexes["entities"]

    @property
    def relation_index(self) -> VectorIndex:
        """The vector index of relations (keywords, endpoints and description)."""
        return self.vector_indexes["relations"]

    @property
    def chunk_index(self) -> VectorIndex:
        """The vector index of chunk texts."""
        return self.vector_indexes["chunks"]

    async def ainsert(self, documents: Iterable[Document | str]) -> InsertSummary:
        """Index new or changed documents; unchanged ones cost nothing. See the module docstring.

        ``documents`` is read as it goes, :data:`~pathrag.index.values.INSERT_BATCH` documents at a time, each
        batch one commit: an insert of any number of documents takes bounded memory."""
        async with self._writing():
            summary, seen = InsertSummary(), dict[str, str]()
            for batch in _batches(iter_documents(documents), INSERT_BATCH):
                summary.add(await self._insert(batch, seen))
            return summary

    def insert(self, documents: Iterable[Document | str]) -> InsertSummary:
        """Sync twin of :meth:`ainsert` (safe to call from inside a running event loop)."""
        return run_sync(self.ainsert(documents))

    def estimate(self, documents: Iterable[Document | str]) -> IndexEstimate:
        """What :meth:`insert` of ``documents`` would cost: calls and tokens, with no model call and no write
        (see :mod:`pathrag.index.estimate`; unchanged documents and chunks extracted already cost nothing).

        >>> from pathrag import HashingEmbedder
        >>> index = PathRAGIndex(embedder=HashingEmbedder(64))
        >>> cost = index.estimate(["Mara Quill sails the Gull to Saltmere."])
        >>> cost.chunks_to_extract, cost.calls, cost.max_calls
        (1, 1, 2)
        """
        estimate = IndexEstimate(extractor=self.extractor.name)
        seen: dict[str, str] = {}
        self._backend.refresh()
        for batch in _batches(iter_documents(documents), INSERT_BATCH):
            todo, unchanged, planned, missing = self._plan_insert(batch, set(), seen)
            estimate.documents += len(todo)
            estimate.unchanged += unchanged
            estimate.chunks += len(planned)
            for cid in missing:
                estimate.add(self.extractor.cost(planned[cid][0], self.config.extraction, self.config.token_counter))
        return estimate

    async def adelete(self, document_ids: Iterable[str]) -> DeleteSummary:
        """Remove documents; what only they supported disappears, the rest is rebuilt without an LLM
        (except to summarise a merged description never summarised before)."""
        if isinstance(document_ids, str):
            document_ids = [document_ids]
        async with self._writing():
            return await self._delete(list(document_ids))

    def delete(self, document_ids: Iterable[str]) -> DeleteSummary:
        """Sync twin of :meth:`adelete`."""
        return run_sync(self.adelete(document_ids))

    async def aadd_records(
        self,
        document_id: str,
        entities: Sequence[Entity],
        relations: Sequence[Relation],
        *,
        vector_items: Mapping[str, Sequence[VectorItem]] | None = None,
        vectors: Mapping[str, Mapping[str, Sequence[float] | np.ndarray]] | None = None,
    ) -> InsertSummary:
        """Add records extracted elsewhere (an imported graph, say) as document ``document_id``, without LLM.

        They merge with extracted records by the same rules, survive later inserts and deletes of other
        documents, and go away with ``delete([document_id])``. Adding again under the same id replaces them.
        Names are used as given: pass them through :func:`pathrag.names.normalize_name` to merge with
        extracted ones (the importers do).

        Args:
            document_id: the id the records are kept (and deleted) under.
            entities: entity records; several of one name merge.
            relations: relation records; several of one pair merge.
            vector_items: index name (``"entities"``, ``"relations"``, ``"chunks"``) -> items written in the
                same commit, before the records are merged: the passages an importer brings, or items
                whose vectors are reused (see ``vectors``).
            vectors: index name -> item id -> a vector to store as given instead of embedding the item.

        Raises:
            pathrag.names.EntityNameError: a name no store can hold (nothing is written).
            TypeError: ``vectors`` for an index without ``upsert_vectors`` (nothing is written).
        """
        if not isinstance(document_id, str) or not document_id.strip():
            raise ValueError("document_id must be a non-empty string")
        for name in dict.fromkeys([e.name for e in entities] + [n for r in relations for n in r.pair]):
            check_name(name)  # refused up front (as the graph stores would), never renamed
        vector_items, vectors = vector_items or {}, vectors or {}
        for name, known in vectors.items():
            if known and not hasattr(self.vector_indexes[name], "upsert_vectors"):
                raise TypeError(
                    f"reusing vectors needs a vector index with upsert_vectors(), not "
                    f"{type(self.vector_indexes[name]).__name__}"
                )
        entity_rows = [e.model_dump(mode="json") for e in entities]
        relation_rows = [r.model_dump(mode="json") for r in relations]
        # the items and reused vectors that come with the records count too: new passages are a change
        extras = [
            [name, [[i.id, i.text, dict(i.metadata)] for i in items], sorted(vectors.get(name, {}))]
            for name, items in sorted(vector_items.items())
        ]
        content = digest(document_id, json.dumps([entity_rows, relation_rows, *extras], sort_keys=True))
        run = OperationCalls(self.config.max_concurrency)

        async def plan() -> InsertSummary:
            old = self.documents.get(document_id)
            if old is not None and old.hash == content:
                return InsertSummary(unchanged=1)
            self._check_writable()
            released = self._records.unref(document_id, old.chunks) if old is not None else set()
            pieces = _record_pieces(content, len(entity_rows), len(relation_rows))
            for position, (cid, part) in enumerate(pieces):
                validated = (entities[part], relations[part])  # a rebuild takes them as they are
                self._records.store_chunk(cid, "", entity_rows[part], relation_rows[part], validated=validated)
                self._records.claim(cid, document_id, position)
                released.discard(cid)
            cids = [cid for cid, _ in pieces]
            self._records.set_document(document_id, DocumentRecord(content, cids, {"records": True}, []))
            for name, items in vector_items.items():
                await aput_vectors(self._written_index(name), items, vectors.get(name, {}))
            rebuilt = await self._rebuild([*cids, *sorted(released)], run)
            await self._sync_chunk_vectors([], released)
            return InsertSummary(
                documents=1, chunks=len(cids), entities=len(rebuilt.entities), relations=len(rebuilt.relations)
            )

        async with self._writing():
            summary = await self._commit(plan)
        summary.llm_calls = run.calls
        return summary

    def add_records(
        self,
        document_id: str,
        entities: Sequence[Entity],
        relations: Sequence[Relation],
        **vector_items_and_vectors: Any,
    ) -> InsertSummary:
        """Sync twin of :meth:`aadd_records`."""
        return run_sync(self.aadd_records(document_id, entities, relations, **vector_items_and_vectors))

    def retrieve(self, query: str, *, keyword_llm: bool = True, **params: Any) -> RetrievalResult:
        """Key paths and source passages for ``query`` from this index (see :func:`pathrag.query.retrieval.retrieve`).

        The index's LLM extracts the query keywords unless ``keyword_llm=False``. The answer comes from one
        committed state, whatever writes run meanwhile (see :meth:`aread_committed`); a read that is run
        again asks the LLM nothing new.
        """
        llm = self._keyword_model(keyword_llm)
        return self.read_committed(
            lambda graph, indexes: retrieve(
                query,
                graph=graph,
                entity_index=indexes["entities"],
                passage_index=indexes["chunks"],
                relation_index=indexes["relations"],
                llm=llm,
                **params,
            )
        )

    async def aretrieve(self, query: str, *, keyword_llm: bool = True, **params: Any) -> RetrievalResult:
        """Async twin of :meth:`retrieve`."""
        llm = self._keyword_model(keyword_llm)
        return await self.aread_committed(
            lambda graph, indexes: aretrieve(
                query,
                graph=graph,
                entity_index=indexes["entities"],
                passage_index=indexes["chunks"],
                relation_index=indexes["relations"],
                llm=llm,
                **params,
            )
        )

    def _keyword_model(self, wanted: bool) -> LanguageModel | None:
        return RememberingLanguageModel(self.llm) if wanted and self.llm is not None else None

    async def aread_committed(self, read: Callable[[GraphStore, Mapping[str, VectorIndex]], Awaitable[T]]) -> T:
        """``await read(graph, vector_indexes)`` on one committed state of the index, while writes go on.

        With a directory, the reads share one SQLite read transaction: the last commit before the first
        read. Without one, a commit's writes reach the in-memory graph and vector indexes in one
        synchronous run at its end; a read that overlapped that run (from another thread) is run again,
        and one starting during it waits for its end (a few milliseconds). A graph or vector index you
        passed in yourself, other than the in-memory kinds, is read as it is: its own store decides what
        a read sees.
        """
        return await self._backend.aread_committed(read, self.graph, self.vector_indexes)

    def read_committed(self, read: Callable[[GraphStore, Mapping[str, VectorIndex]], T]) -> T:
        """Sync twin of :meth:`aread_committed`.

        >>> from pathrag import HashingEmbedder
        >>> index = PathRAGIndex(embedder=HashingEmbedder(64))
        >>> index.read_committed(lambda graph, indexes: len(indexes["chunks"]))
        0
        """
        return self._backend.read_committed(read, self.graph, self.vector_indexes)

    def _graph_staged(self) -> bool:
        """Whether the open commit stages its graph writes and applies them with its records (the index's
        own graph kinds)."""
        return self._staged is not None and isinstance(self.graph, _OWN_GRAPHS)

    def _written_graph(self) -> GraphStore:
        """The graph a commit writes to: the one it owns through a stand-in holding the writes back until its
        end (another graph store is written as the commit goes: its own store decides what readers see)."""
        if self._graph_staged():
            assert self._staged is not None
            return self._staged.graph(self.graph)
        return self.graph

    def _written_index(self, name: str) -> VectorIndex:
        """The vector index a commit writes to (see :meth:`_written_graph`)."""
        index = self.vector_indexes[name]
        if self._staged is not None and isinstance(index, (InMemoryVectorIndex, SQLiteVectorIndex)):
            return self._staged.vectors(index)
        return index

    def save(self, directory: str | os.PathLike[str] | None = None) -> None:
        """Write a complete copy to ``directory`` atomically (default: the index's own directory).

        Inserts and deletes already commit to the index's own directory, so saving there does nothing
        more; another directory gets a copy (cache included) that ``PathRAGIndex(directory, ...)``
        reopens. The index keeps its own directory.
        """
        target = Path(directory) if directory is not None else self.directory
        if target is None:
            raise ValueError("this index has no directory: call save(directory)")
        self._backend.save(target, self._export)

    def close(self) -> None:
        """Close the store's connections (an index without a directory has nothing to close)."""
        self._backend.close()

    def check(self) -> list[str]:
        """Check that documents, chunks, entities, relations and vectors agree; one line per problem.

        Every document's chunks exist (unless their extraction failed), every entity and relation is
        mentioned by a live chunk and every live mention is in the graph, and each has its vector (for the
        store's own vector indexes). Commits are atomic, so a problem means the file was damaged or
        edited by hand: rebuild the store (re-insert the documents into a new directory; the LLM cache of
        the old one is not needed for that, but copying its directory first keeps it).
        """
        problems: list[str] = []
        directed = self.config.directed_relations
        for doc_id, doc in sorted(self.documents.items()):
            lost = [c for c in doc.chunks if c not in self.chunks and c not in doc.failed]
            if lost:
                problems.append(f"document {doc_id!r}: {len(lost)} chunk(s) missing, e.g. {lost[0]}")
        names: set[str] = set()
        keys: set[tuple[str, str]] = set()
        # passages an import's records cite: an importer put them in the chunk index
        passages = cited(c for c in self.chunks.values() if c.refs and not c.text)
        for chunk in self.chunks.values():
            if chunk.refs:
                names.update(e["name"] for e in chunk.entities)
                for r in chunk.relations:
                    names.update((r["source"], r["target"]))
                    keys.add(relation_key(r["source"], r["target"], directed=directed))
        problems += self._check_graph(names, keys)
        problems += self._backend.check_degrees()  # a store's kept degrees against a recount
        wanted = {
            "entities": {entity_vector_id(n) for n in names},
            "relations": {relation_vector_id(k) for k in keys},
            "chunks": {c for c, chunk in self.chunks.items() if chunk.refs and chunk.text},
        }
        for name, index in self.vector_indexes.items():
            if isinstance(index, (SQLiteVectorIndex, InMemoryVectorIndex)):
                held = set(index.ids())
                want = wanted[name] | (held & passages if name == "chunks" else set())
                if held != want:
                    problems.append(f"{name} vectors: {len(want - held)} missing, {len(held - want)} without an owner")
            if isinstance(index, SQLiteVectorIndex):
                problems += index.check_files()  # the saved search files, every byte
        return problems

    def _check_graph(self, names: set[str], keys: set[tuple[str, str]]) -> list[str]:
        """The graph's problems for :meth:`check` (of the index's own kinds only): entities and relations
        no live chunk mentions, and live mentions missing."""
        if not isinstance(self.graph, (SQLiteGraphStore, NetworkXGraphStore)):
            return []
        directed, problems = self.config.directed_relations, []
        stored = {e.name for e in self.graph.iter_entities()}
        stored_keys = {relation_key(r.source, r.target, directed=directed) for r in self.graph.iter_relations()}
        for label, extra, missing in (
            ("entities", stored - names, names - stored),
            ("relations", stored_keys - keys, keys - stored_keys),
        ):
            if extra:
                problems.append(f"{len(extra)} {label} no live document mentions, e.g. {sorted(extra)[0]}")
            if missing:
                problems.append(
                    f"{len(missing)} {label} of live documents missing from the graph, e.g. {sorted(missing)[0]}"
                )
        return problems

    def stats(self) -> dict[str, int]:
        """Counts: ``documents`` (imports included), ``imports`` (documents made by :meth:`add_records`)
        and the ``records`` they hold, ``chunks`` (passages with text: the documents' chunks and the
        passages an importer put in the chunk index), ``entities`` and ``relations``."""

        def count(graph: GraphStore, indexes: Mapping[str, VectorIndex]) -> dict[str, int]:
            counts = self._backend.stats(indexes["chunks"])
            if isinstance(graph, NetworkXGraphStore):
                counts.update(entities=len(graph.graph), relations=graph.graph.number_of_edges())
            elif isinstance(graph, SQLiteGraphStore):
                counts.update(entities=len(graph), relations=graph.number_of_relations())
            return counts

        return self.read_committed(count)  # one committed state: a commit landing meanwhile is not half-counted

    # -- insert ------------------------------------------------------------------------------------

    async def _insert(self, documents: list[Document], seen: dict[str, str]) -> InsertSummary:
        """One commit of an insert; ``seen``: the content hash of every document id of the insert so far."""
        summary = InsertSummary()
        run = OperationCalls(self.config.max_concurrency)
        failed: set[str] = set()
        shown = False
        while True:
            # Extraction first, with no lock but this index's own: each chunk's records are saved as they
            # arrive (by content: another process may save the same chunk, the first one is kept).
            self._backend.refresh()
            todo, _, planned, missing = self._plan_insert(documents, failed, seen)
            if todo and not shown:
                shown = True
                self._check_writable()  # before paying for any LLM call
                saved = len(planned) - len(missing)
                self._phase(
                    f"{len(todo):,} new or changed document{'s' * (len(todo) != 1)}: {len(missing):,} of "
                    f"{len(planned):,} chunk{'s' * (len(planned) != 1)} to extract"
                    + (f", {saved:,} saved already" if saved else "")
                )
            failed |= await self._extract_all({cid: planned[cid] for cid in missing}, run, summary)
            del todo, planned, missing  # planned again under the lock: not held twice
            done = await self._commit(functools.partial(self._insert_change, documents, set(failed), run, seen))
            if done is not None:
                break
            # else another writer dropped chunks this insert needs since they were extracted: again
        for name in ("unchanged", "documents", "removed", "replaced", "chunks", "entities", "relations"):
            setattr(summary, name, getattr(done, name))
        summary.llm_calls, summary.cache_hits = run.calls, run.hits
        summary.prompt_tokens, summary.completion_tokens = run.prompt_tokens, run.completion_tokens
        return summary

    def _plan_insert(
        self, documents: list[Document], failed: set[str], given: dict[str, str]
    ) -> tuple[dict[str, tuple[Document, str, dict[str, str]]], int, dict[str, tuple[str, list[str]]], list[str]]:
        """What an insert changes, read from the committed state: the new or changed documents (id -> doc,
        content hash, chunk id -> text), how many are unchanged, their chunks (id -> text, document ids) in
        document order, and those to extract (not saved before, now or before a crash, and not failed).
        ``given``: the content hash of each document id met so far in this insert (one version per id)."""
        todo: dict[str, tuple[Document, str, dict[str, str]]] = {}
        unchanged = 0
        self.documents.prefetch(d.id or f"doc-{d.content_hash()}" for d in documents)  # type: ignore[attr-defined]
        for doc in documents:
            content = self.extractor.content_hash(doc)  # an extractor's name is in it: another one re-extracts
            doc_id = doc.id or f"doc-{doc.content_hash()}"
            if given.setdefault(doc_id, content) != content:
                raise ValueError(
                    f"document id {doc_id!r} appears twice in one insert with different texts: pass one version per id"
                )
            known = self.documents.get(doc_id)
            if not doc.chunk_texts() and known is None:
                continue  # an empty document nobody knows: nothing to do
            if doc_id in todo or (known and known.hash == content and not known.failed):
                unchanged += 1
                continue
            todo[doc_id] = (doc, content, {self.extractor.chunk_id(t): t for t in doc.chunk_texts()})
        planned: dict[str, tuple[str, list[str]]] = {}
        for doc_id, (_, _, chunks) in todo.items():
            for cid, text in chunks.items():
                planned.setdefault(cid, (text, []))[1].append(doc_id)
        self.chunks.prefetch(planned)  # type: ignore[attr-defined]
        missing = [cid for cid in planned if cid not in self.chunks and cid not in failed]
        return todo, unchanged, planned, missing

    async def _insert_change(
        self, documents: list[Document], failed: set[str], run: OperationCalls, seen: dict[str, str]
    ) -> InsertSummary | None:
        """Plan an insert against the committed state: claim the extracted chunks for the new and changed
        documents and rebuild what they touch. ``None`` (nothing planned): a chunk to claim is missing."""
        todo, unchanged, _, missing = self._plan_insert(documents, failed, seen)
        if missing:
            return None
        summary = InsertSummary(unchanged=unchanged)
        released: set[str] = set()
        touched_chunks: list[str] = []
        newly_live: list[str] = []
        for doc_id, (doc, content, chunks) in todo.items():
            old = self.documents.get(doc_id)
            if old is not None:  # a changed document replaces its previous version
                released.update(self._records.unref(doc_id, old.chunks))
            chunk_ids = list(chunks)
            for position, cid in enumerate(chunk_ids):
                if cid in self.chunks:
                    if not self.chunks[cid].refs or cid in released:
                        newly_live.append(cid)
                    self._records.claim(cid, doc_id, position)
                    touched_chunks.append(cid)
            if not chunk_ids:  # the document was emptied: it goes, as with delete()
                self._records.set_document(doc_id, None)
                summary.removed += 1
                continue
            self._records.set_document(
                doc_id,
                DocumentRecord(content, chunk_ids, doc.metadata, sorted(c for c in chunk_ids if c in failed)),
            )
            summary.documents += 1
            if old is not None and old.hash != content:
                summary.replaced.append(doc_id)
        summary.chunks = len(dict.fromkeys(touched_chunks))
        released -= set(touched_chunks)
        phase = self._phase if todo else None  # nothing changed: no phases to show
        rebuilt = await self._rebuild(touched_chunks + sorted(released), run, phase)
        summary.entities, summary.relations = len(rebuilt.entities), len(rebuilt.relations)
        if phase is not None and newly_live:
            live = len(dict.fromkeys(newly_live))
            phase(f"embedding {live:,} chunk{'s' * (live != 1)}")
        await self._sync_chunk_vectors(newly_live, released)
        if phase is not None:
            phase("committing…")
        return summary

    async def _extract_all(
        self, planned: dict[str, tuple[str, list[str]]], run: OperationCalls, summary: InsertSummary
    ) -> set[str]:
        """Extract every planned chunk concurrently; journal each result as it lands."""
        if planned and self.llm is None and self.extractor.uses_llm:
            raise ValueError("this index has no llm, so it cannot extract new chunks (or pass extractor='lexical')")
        ask = (lambda prompt: self._ask(prompt, run)) if self.llm is not None else None
        failed: set[str] = set()
        shown = self.config.show_progress and bool(planned)  # no bar when every chunk is saved already
        progress = tqdm(total=len(planned), unit="chunk", desc="extracting", disable=not shown)
        counts = {"entities": 0, "relations": 0}

        async def one(cid: str, text: str, doc_ids: list[str]) -> None:
            try:
                done = await self.extractor.extract(text, cid, ask, self.config.extraction)
            except StoreDamaged:  # the store's file, not the chunk: no other chunk can be saved either
                raise
            except Exception as exc:  # reported and skipped: one bad chunk must not sink the run
                logger.warning("chunk %s failed after retries: %r", cid, exc)
                summary.failures.append(ChunkFailure(cid, tuple(doc_ids), f"{type(exc).__name__}: {exc}"))
                failed.add(cid)
            else:
                self._records.store_chunk(
                    cid,
                    text,
                    [e.model_dump(mode="json") for e in done.result.entities],
                    [r.model_dump(mode="json") for r in done.result.relations],
                )
                summary.chunks_extracted += 1
                summary.records_dropped += done.result.dropped
                summary.records_skipped += done.result.skipped
                summary.records_ungrounded += done.result.ungrounded
                counts["entities"] += len(done.result.entities)
                counts["relations"] += len(done.result.relations)
            progress.update(1)
            progress.set_postfix_str(  # raw counts: merging the same names across chunks makes them smaller
                f"{run.calls} calls, {run.prompt_tokens + run.completion_tokens:,} tokens, before merging "
                f"{counts['entities']} entities, {counts['relations']} relations",
                refresh=False,
            )

        # A few workers take the chunks in turn from one queue, instead of a task per chunk from the start: the
        # tasks of 10^6 tiny documents held 10 GB before the first answer. Twice the model's concurrency keeps
        # it busy while some wait to retry.
        queue = iter(list(planned.items()))

        async def worker() -> None:
            for cid, (text, doc_ids) in queue:
                await one(cid, text, doc_ids)

        workers = min(len(planned), 2 * self.config.max_concurrency)
        tasks = [asyncio.ensure_future(worker()) for _ in range(workers)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            # Cancellation or an interrupt: stop the other chunks too instead of leaving them running.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            progress.close()
        return failed

    def _phase(self, text: str) -> None:
        """With ``show_progress``: one line on stderr saying which step of a write starts (after the bars)."""
        if self.config.show_progress:
            tqdm.write(text, file=sys.stderr)

    # -- delete ------------------------------------------------------------------------------------

    async def _delete(self, document_ids: list[str]) -> DeleteSummary:
        run = OperationCalls(self.config.max_concurrency)

        async def plan() -> DeleteSummary:
            summary = DeleteSummary()
            if any(doc_id in self.documents for doc_id in document_ids):
                self._check_writable(embeds=False)  # a delete embeds only the descriptions it changes
            released: set[str] = set()
            for doc_id in dict.fromkeys(document_ids):
                doc = self._records.set_document(doc_id, None)
                if doc is None:
                    summary.missing.append(doc_id)
                    continue
                released.update(self._records.unref(doc_id, doc.chunks))
                summary.documents += 1
            summary.chunks = len(released)
            rebuilt = await self._rebuild(sorted(released), run)
            summary.entities_removed = len(rebuilt.gone_entities)
            summary.relations_removed = len(rebuilt.gone_relations)
            summary.entities_updated, summary.relations_updated = len(rebuilt.entities), len(rebuilt.relations)
            await self._sync_chunk_vectors([], released)
            return summary

        summary = await self._commit(plan)
        summary.llm_calls = run.calls
        return summary

    def _check_writable(self, *, embeds: bool = True) -> None:
        """Fail in one line before any LLM call when the store cannot be written, or for a write that
        ``embeds``, when a lazy embedder cannot be made (see :class:`LazyEmbedder`, :class:`MissingEmbedder`)."""
        self._backend.check_writable()
        if embeds and isinstance(self._embedder, LazyEmbedder):
            self._embedder.ready()

    # -- rebuilding the graph and vectors from chunk records (see pathrag.index.rebuild) ------------------

    async def _rebuild(
        self, chunk_ids: Sequence[str], run: OperationCalls, on_phase: Callable[[str], None] | None = None
    ) -> Rebuilt:
        """Recompute every entity and relation mentioned by ``chunk_ids`` from the live chunks."""
        ask = (lambda prompt: self._ask(prompt, run)) if self.llm is not None else None
        return await rebuild(
            chunk_ids,
            self._records,
            self._written_graph(),
            self._written_index("entities"),
            self._written_index("relations"),
            lambda item, label, records: self._summariser.summarise(item, label, records, ask),
            directed=self.config.directed_relations,
            on_phase=on_phase,
            needs_summary=self._summariser.needs_summary,
            graph_follows_records=self._graph_staged(),
        )

    async def _sync_chunk_vectors(self, added: Sequence[str], released: set[str]) -> None:
        await sync_chunk_vectors(self._records, self._written_index("chunks"), added, released)

    async def _ask(self, prompt: str, run: OperationCalls) -> str:
        """The index's LLM, behind its cache, the operation's concurrency limit and retries."""
        assert self.llm is not None
        return await self._llm_calls.ask(self.llm, prompt, run)

    # -- persistence -------------------------------------------------------------------------------

    def _export(self, store: SQLiteStore) -> None:
        """Write this index into the new, empty ``store`` (see :meth:`save`)."""
        vectors = {
            name: index.rows() for name, index in self.vector_indexes.items() if isinstance(index, InMemoryVectorIndex)
        }
        graph = self.graph if self._owns_graph and isinstance(self.graph, NetworkXGraphStore) else None
        write_snapshot(
            store,
            documents={doc_id: doc.row() for doc_id, doc in self.documents.items()},
            chunks=(c.row() for c in self.chunks.values()),
            summaries=dict(self.summaries.items()),
            cache=dict(self._cache.items()) if self.config.cache else {},
            entities=graph.iter_entities() if graph else (),
            relations=graph.iter_relations() if graph else (),
            vectors=vectors,
            meta={
                "pathrag_version": PATHRAG_VERSION,
                "directed_relations": int(self.config.directed_relations),
                **({"embedder": name} if (name := self._embedder_name()) else {}),
            },
        )

    def _embedder_name(self) -> str | None:
        index = self.entity_index
        return embedder_name_of(index.embedder) if isinstance(index, InMemoryVectorIndex) else None


_OWN_GRAPHS = (NetworkXGraphStore, SQLiteGraphStore)  # the graphs a commit stages and writes with its records

RECORDS_PER_PIECE = 1000
"""Records kept together under one record chunk by :meth:`PathRAGIndex.aadd_records` (up to this many
entities and this many relations): a later write that touches a few names decodes only the pieces that
mention them (about 5 ms each), not every record of a bulk import (about 1.5 s per 10⁵ entities)."""


def _batches(items: Iterator[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter), read as they are needed; none for no items."""
    while batch := list(itertools.islice(items, size)):
        yield batch


def _record_pieces(content: str, entities: int, relations: int) -> list[tuple[str, slice]]:
    """The record chunks of one :meth:`PathRAGIndex.aadd_records` call of ``entities`` and ``relations``
    records: ids from its content and place, and the slice of each kind of record each one holds."""
    count = max(1, -(-entities // RECORDS_PER_PIECE), -(-relations // RECORDS_PER_PIECE))
    step = RECORDS_PER_PIECE
    return [
        (record_chunk_id(content if count == 1 else f"{content}:{n}"), slice(n * step, (n + 1) * step))
        for n in range(count)
    ]
