"""The indexing pipeline: documents → chunks → extraction (an LLM, or rules) → merged graph and vector indexes.

:class:`PathRAGIndex` keeps a knowledge graph (any :class:`~pathrag.GraphStore`), three vector indexes
(entities, relations, chunks) and, under one directory, the chunk records and an LLM answer cache.

Every entity and relation is a pure function of the extraction records of the chunks that mention
it (see :mod:`pathrag.index.merging`). Insert and delete therefore just change the set of live chunks and
rebuild what they touch, which makes both idempotent: re-running an interrupted insert completes it,
and ``insert(A); insert(B); delete(B)`` leaves exactly what ``insert(A)`` alone leaves.

Every write runs in one order, read top to bottom in :mod:`pathrag.index.writes`: extract (LLM,
:mod:`pathrag.index.extract`), saving each chunk's records and each LLM answer the moment it arrives, so a
re-run after a crash (even ``kill -9``) re-extracts only chunks whose results were not saved; then plan the
change against the committed state (merge, LLM summaries, embeddings: :mod:`pathrag.index.plan`) into a
change set; then apply it at once (:mod:`pathrag.index.commit`), visible all at once or not at all. Where
it lands is a backend's business (:mod:`pathrag.index.backend`): memory, or a directory holding one SQLite
file (:mod:`pathrag.sqlite`), where a change set is one short transaction and processes writing the same
store extract side by side and take turns only to plan and apply. A directory in the older JSON format is
migrated on first open (:mod:`pathrag.index.opening`).

:class:`PathRAGIndex` is the public API over those phases, sync and async; its check, counts and export
are :mod:`pathrag.index.inspection`. The typed document and chunk records and their rows are
:mod:`pathrag.index.records`, the change set of a commit :mod:`pathrag.index.staging`, the LLM calls (cache,
retries, concurrency, usage) :mod:`pathrag.llm.calls`, the rebuild of entities, relations and their vectors
from the chunk records :mod:`pathrag.index.rebuild`, and what gets embedded under which id
:mod:`pathrag.vectors.items`; the values it takes and returns (:class:`Document`, :class:`IndexConfig`, the
summaries) are :mod:`pathrag.index.values`, its embedder stand-ins :mod:`pathrag.vectors.embedders`.

>>> import asyncio
>>> from pathrag import PathRAGIndex, HashingEmbedder
>>> async def llm(prompt):  # the compact prompt's records, one per line
...     return "E|Alice|person|A pilot.\\nR|Alice|Saltmere|home|Alice lives in Saltmere.\\nEND"
>>> index = PathRAGIndex(llm=llm, embedder=HashingEmbedder())
>>> summary = index.insert(["Alice, a pilot, lives in Saltmere."])
>>> summary.documents, summary.entities, summary.relations
(1, 2, 1)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .._sync import run_sync
from .._version import __version__
from ..errors import MissingEmbedderError, StoreDamaged, StoreError
from ..graphs.base import GraphStore
from ..ids import chunk_id, digest, entity_vector_id, record_chunk_id, relation_vector_id
from ..llm.client import LanguageModel, RememberingLanguageModel, as_language_model
from ..models import Entity, Relation
from ..names import check_name
from ..params import RetrievalParams, uses_keyword_llm
from ..query.retrieval import RetrievalResult, aretrieve, retrieve
from ..sqlite import STORE_FILE
from ..vectors.base import Embedder, VectorIndex, VectorItem, vector_upserts
from ..vectors.embedders import LazyEmbedder, MissingEmbedder
from ..vectors.items import aput_vectors, entity_vector_item, relation_vector_item
from . import inspection
from .backend import IndexBackend
from .commit import Committer
from .estimate import IndexEstimate
from .extract import select
from .extractors import Extractor, as_extractor
from .opening import open_parts
from .plan import RecordsToAdd
from .rebuild import Summariser
from .records import ChunkRecord, DocumentRecord
from .sources import CommittedDocuments, committed_documents, core_params, finish, wanted_params
from .values import INSERT_BATCH, ChunkFailure, DeleteSummary, Document, IndexConfig, InsertSummary, iter_documents
from .writes import Writer

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

    ``extractor`` turns chunks into records: ``"compact"`` (the default) asks ``llm`` with a short prompt
    (small chunks packed into one call with ``ExtractionConfig(pack_tokens=1200)``, see
    :mod:`pathrag.index.packing`); ``"llm"`` with the paper's prompt and
    gleaning; ``"lexical"`` needs no model at all (names and the sentences joining them, see
    :mod:`pathrag.index.lexical`), so with the :class:`~pathrag.HashingEmbedder` a folder is indexed with no key
    and no network. One store holds every kind: indexing a document again with a model replaces its lexical
    records and the other way round, while a document either model prompt extracted counts as indexed for both
    (see :mod:`pathrag.index.extractors`). With ``llm`` given, the lexical index still asks it for description
    summaries and query keywords.

    ``backend`` keeps the index somewhere else: an :class:`~pathrag.index.backend.IndexBackend` of your own
    (one class; :class:`pathrag.testing.IndexBackendContract` is its test suite). By default it is the
    SQLite store of ``directory``, or memory without one.

    Opening a store checks, with a few counts over its indexes, that graph rows, vectors and the documents'
    chunks agree, and raises :class:`~pathrag.errors.StoreDamaged` (one line: the store, what disagrees, how
    to rebuild) when they do not; ``check_on_open=False`` opens it as it is (to see every problem with
    :meth:`check`, or to read what is left).
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
        extractor: str | Extractor = "compact",
    ) -> None:
        self.config = config = config or IndexConfig()
        self.llm = as_language_model(llm) if llm is not None else None
        self.extractor = as_extractor(extractor)
        parts = open_parts(
            directory,
            embedder=embedder,
            given={"entities": entity_index, "relations": relation_index, "chunks": chunk_index},
            config=config,
            graph=graph,
            embedder_name=embedder_name,
            backend=backend,
        )
        self._backend = backend = parts.backend
        self.directory = backend.directory
        self._store = backend.store  # the store of a directory (None in memory)
        self._embedder = parts.embedder  # the embedder of the index's own vector indexes (if any)
        self.embedder = parts.embedder
        """The embedder of the index's own vector indexes (``None`` when all of them were given); for a store
        opened without its embeddings, a :class:`pathrag.vectors.embedders.MissingEmbedder` that explains."""
        self.vector_indexes: dict[str, VectorIndex] = parts.vector_indexes
        self.graph = parts.graph
        self._owns_graph = parts.owns_graph
        # Document and chunk records: rows of the store fetched on first use (a retrieval never needs
        # them, a write only its own), or dicts in memory.
        self._records = backend.records
        self.summaries = backend.summaries
        self._cache = backend.cache
        summariser = Summariser(
            self.summaries,
            threshold_tokens=config.summary_threshold_tokens,
            max_words=config.summary_max_words,
            language=config.extraction.language,
            token_counter=config.token_counter,
        )
        committer = Committer(backend, self.graph, self.vector_indexes, lock_timeout=config.lock_timeout)
        self._writer = Writer(
            config,
            backend,
            self._records,
            committer,
            summariser,
            lambda: self.llm,
            lambda: self.extractor,
            self._embedder,
        )
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        if check_on_open:
            self.quick_check()

    def quick_check(self) -> None:
        """Raise :class:`~pathrag.errors.StoreDamaged` (and close the store) when cheap counts of the store
        disagree (see :meth:`pathrag.index.backend.IndexBackend.quick_check`): what :meth:`check` would find of a
        lost or extra vector or graph row, at the cost of a few ``COUNT`` queries over indexes. Run on open
        unless ``check_on_open=False``."""
        in_store = self._backend.kinds.in_store
        spaces = [name for name, index in self.vector_indexes.items() if in_store(index)]
        try:
            problems = self._backend.quick_check(spaces, graph=self._owns_graph and in_store(self.graph))
        except StoreError:  # a store file SQLite cannot read, say (StoreDamaged): closed as well
            self._backend.close()
            raise
        if problems:
            self._backend.close()
            raise StoreDamaged(self._store.path if self._store is not None else Path(f"{self.directory}"), problems)

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

    # -- public API --------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """One write of this index at a time: per event loop (a lock of that loop's) and, for a directory,
        announced to other processes: with ``lock_timeout`` 0 it is refused at once while another process
        writes; otherwise they extract side by side and take turns to plan and apply (see
        :meth:`pathrag.sqlite.WriterLock.abegin`)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        async with self._lock[1], self._backend.writing(self.config.lock_timeout):
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
                summary.add(await self._writer.insert(batch, seen))
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
        (1, 1, 1)
        """
        estimate = IndexEstimate(extractor=self.extractor.name)
        seen: dict[str, str] = {}
        self._backend.refresh()
        for batch in _batches(iter_documents(documents), INSERT_BATCH):
            chosen = select(batch, set(), seen, self._records, self.extractor)
            estimate.documents += len(chosen.todo)
            estimate.unchanged += chosen.unchanged
            estimate.chunks += len(chosen.planned)
            missing = [(cid, chosen.planned[cid][0]) for cid in chosen.missing]
            counter, extraction = self.config.token_counter, self.config.extraction
            for pack in self.extractor.packs(missing, extraction, counter):
                estimate.add(self.extractor.cost([text for _, text in pack], extraction, counter), len(pack))
        return estimate

    async def adelete(self, document_ids: Iterable[str]) -> DeleteSummary:
        """Remove documents; what only they supported disappears, the rest is rebuilt without an LLM
        (except to summarise a merged description never summarised before)."""
        if isinstance(document_ids, str):
            document_ids = [document_ids]
        async with self._writing():
            return await self._writer.delete(list(document_ids))

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
            if known:
                vector_upserts(self.vector_indexes[name], "reusing vectors")  # before any write
        entity_rows = [e.model_dump(mode="json") for e in entities]
        relation_rows = [r.model_dump(mode="json") for r in relations]
        # the items and reused vectors that come with the records count too: new passages are a change
        extras = [
            [name, [[i.id, i.text, dict(i.metadata)] for i in items], sorted(vectors.get(name, {}))]
            for name, items in sorted(vector_items.items())
        ]
        content = digest(document_id, json.dumps([entity_rows, relation_rows, *extras], sort_keys=True))
        pieces = _record_pieces(content, len(entity_rows), len(relation_rows))
        added = RecordsToAdd(document_id, content, pieces, entities, relations, vector_items, vectors)
        async with self._writing():
            return await self._writer.add_records(added)

    def add_records(
        self,
        document_id: str,
        entities: Sequence[Entity],
        relations: Sequence[Relation],
        **vector_items_and_vectors: Any,
    ) -> InsertSummary:
        """Sync twin of :meth:`aadd_records`."""
        return run_sync(self.aadd_records(document_id, entities, relations, **vector_items_and_vectors))

    def retrieve(self, query: str, *, keyword_llm: bool | None = None, **params: Any) -> RetrievalResult:
        """Key paths and source passages for ``query`` from this index (see :func:`pathrag.query.retrieval.retrieve`),
        each item with the documents it comes from, and only those matching ``filter=`` when given (see
        :mod:`pathrag.index.sources`).

        Model calls: none by default. The index's LLM extracts the query keywords (one call) only in the
        paper's mode ``context="paths"``, or always with ``keyword_llm=True`` (never with ``False``; see
        :func:`pathrag.params.uses_keyword_llm`). The answer comes from one committed state, whatever writes
        run meanwhile (see :meth:`aread_committed`); a read that is run again asks the LLM nothing new.
        """
        wanted = wanted_params(params)
        llm = _keyword_model(self.llm, keyword_llm, wanted.context)
        return self.read_committed(
            lambda graph, indexes: finish(
                retrieve(query, **_core_arguments(graph, indexes, llm, wanted)), self.committed_documents(), wanted
            )
        )

    async def aretrieve(self, query: str, *, keyword_llm: bool | None = None, **params: Any) -> RetrievalResult:
        """Async twin of :meth:`retrieve`."""
        wanted = wanted_params(params)
        llm = _keyword_model(self.llm, keyword_llm, wanted.context)

        async def read(graph: GraphStore, indexes: Mapping[str, VectorIndex]) -> RetrievalResult:
            found = await aretrieve(query, **_core_arguments(graph, indexes, llm, wanted))
            return finish(found, self.committed_documents(), wanted)

        return await self.aread_committed(read)

    def committed_documents(self) -> CommittedDocuments:
        """The documents of the committed state being read, for :func:`pathrag.index.sources.finish` (call it
        inside :meth:`read_committed`): which documents claim a chunk, their metadata, the filters."""
        return committed_documents(self._records, self._store)

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

    def save(self, directory: str | os.PathLike[str] | None = None) -> None:
        """Write a complete copy to ``directory`` atomically (default: the index's own directory).

        Inserts and deletes already commit to the index's own directory, so saving there does nothing
        more; another directory gets a copy (cache included) that ``PathRAGIndex(directory, ...)``
        reopens. The index keeps its own directory.
        """
        target = Path(directory) if directory is not None else self.directory
        if target is None:
            raise ValueError("this index has no directory: call save(directory)")
        self._backend.save(target, lambda store: inspection.export(self, store))

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
        return inspection.check(self)

    def stats(self) -> dict[str, int]:
        """Counts: ``documents`` (imports included), ``imports`` (documents made by :meth:`add_records`)
        and the ``records`` they hold, ``chunks`` (passages with text: the documents' chunks and the
        passages an importer put in the chunk index), ``entities`` and ``relations``."""
        return inspection.stats(self)


RECORDS_PER_PIECE = 1000
"""Records kept together under one record chunk by :meth:`PathRAGIndex.aadd_records` (up to this many
entities and this many relations): a later write that touches a few names decodes only the pieces that
mention them, not every record of a bulk import."""


def _core_arguments(
    graph: GraphStore, indexes: Mapping[str, VectorIndex], llm: LanguageModel | None, wanted: RetrievalParams
) -> dict[str, Any]:
    """The core retrieval's arguments over one committed state (the filter is applied after it, by ``finish``)."""
    return {
        "graph": graph,
        "entity_index": indexes["entities"],
        "passage_index": indexes["chunks"],
        "relation_index": indexes["relations"],
        "llm": llm,
        "params": core_params(wanted),
    }


def _keyword_model(llm: LanguageModel | None, wanted: bool | None, context: str) -> LanguageModel | None:
    """The model a retrieval asks for keywords (the index's, remembering its answers), or ``None``: see
    :func:`pathrag.params.uses_keyword_llm` for when."""
    return RememberingLanguageModel(llm) if llm is not None and uses_keyword_llm(wanted, context) else None


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
