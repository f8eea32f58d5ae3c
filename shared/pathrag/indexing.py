"""The indexing pipeline: documents → chunks → LLM extraction → merged graph and vector indexes.

:class:`PathRAGIndex` keeps a knowledge graph (any :class:`~pathrag.GraphStore`), three vector indexes
(entities, relations, chunks) and, under one directory, the chunk records and an LLM answer cache.

Every entity and relation is a pure function of the extraction records of the chunks that mention
it (see :mod:`pathrag.merging`). Insert and delete therefore just change the set of live chunks and
rebuild what they touch, which makes both idempotent: re-running an interrupted insert completes it,
and ``insert(A); insert(B); delete(B)`` leaves exactly what ``insert(A)`` alone leaves.

Persistence (:mod:`pathrag.store`): a directory holds one SQLite file. Each chunk's extraction and
each LLM answer is written the moment it arrives, so a re-run after a crash (even ``kill -9``)
re-extracts only chunks whose results were not saved. Everything else a commit changes (documents,
graph, vectors, summaries) is written in one transaction: visible all at once or not at all.
A directory in the older JSON format is migrated on first open.

>>> import asyncio
>>> from pathrag import PathRAGIndex, HashingEmbedder
>>> async def llm(prompt):
...     return '("entity"<|>Alice<|>person<|>A pilot.)##("relationship"<|>Alice<|>Saltmere<|>Alice lives in Saltmere.<|>home<|>7)<|COMPLETE|>'
>>> index = PathRAGIndex(llm=llm, embedder=HashingEmbedder())
>>> summary = index.insert(["Alice, a pilot, lives in Saltmere."])
>>> summary.documents, summary.entities, summary.relations
(1, 2, 1)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import os
import shutil
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator, MutableMapping  # (kept apart: the rows the store fetches lazily)
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential
from tqdm.auto import tqdm

from .extraction import ExtractionConfig, check_name, extract_records
from .graph import GraphStore, NetworkXGraphStore
from .llm import LanguageModel, as_language_model
from .merging import merge_entity, merge_relation, relation_key
from .models import Entity, Relation
from .prompts import build_summary_prompt
from .retrieval import RetrievalResult, aretrieve, retrieve
from .store import (
    STORE_FILE,
    SQLiteGraphStore,
    SQLiteStore,
    SQLiteVectorIndex,
    StoreError,
    WriterLock,
    dumps,
    mentioned_names,
    migrate_json_store,
    pack_records,
    pack_text,
    unpack_records,
    unpack_text,
    write_snapshot,
)
from .tokens import TokenCounter, count_tokens
from .vectors import Embedder, InMemoryVectorIndex, VectorIndex, VectorItem

__all__ = [
    "ChunkFailure",
    "DeleteSummary",
    "Document",
    "IndexConfig",
    "InsertSummary",
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
PATHRAG_VERSION = "0.1.0"


def embedder_name_of(embedder: Embedder | None) -> str | None:
    """The name a store records for its embedder: ``hashing-<dim>`` for :class:`HashingEmbedder`,
    else the embedder's ``name`` attribute if it has one (``None``: not recorded, not checked)."""
    from .vectors import HashingEmbedder

    if isinstance(embedder, HashingEmbedder):
        return f"hashing-{embedder.dimensions}"
    name = getattr(embedder, "name", None)
    return name if isinstance(name, str) and name else None


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def chunk_id(text: str) -> str:
    """Content id of a chunk: the same text always gets the same id."""
    return f"chunk-{_digest(text)}"


def entity_vector_id(name: str) -> str:
    return f"ent-{_digest(name)}"


def relation_vector_id(key: tuple[str, str]) -> str:
    return f"rel-{_digest(*key)}"


def chunk_metadata(cid: str, entities: Iterable[str]) -> dict[str, Any]:
    """A chunk vector's metadata: its id and the entities extracted from it (retrieval starts the flow
    from the best passage's entities)."""
    return {"chunk_id": cid, "entities": sorted(set(entities))}


def _mentioned(chunk: Mapping[str, Any]) -> list[str]:
    """The entity names a chunk's extraction records name, relation ends included."""
    names = [e["name"] for e in chunk.get("entities", ())]
    for r in chunk.get("relations", ()):
        names += [r["source"], r["target"]]
    return names


def entity_vector_item(entity: Entity) -> VectorItem:
    """How an entity is embedded: its name and description."""
    return VectorItem(entity_vector_id(entity.name), f"{entity.name}\n{entity.description}".strip(),
                      {"name": entity.name})


def relation_vector_item(relation: Relation, *, directed: bool = False) -> VectorItem:
    """How a relation is embedded: keywords, endpoints and description."""
    text = f"{', '.join(relation.keywords)}\n{relation.source}\n{relation.target}\n{relation.description}"
    return VectorItem(relation_vector_id(relation_key(relation.source, relation.target, directed=directed)),
                      text.strip(), {"source": relation.source, "target": relation.target})


class Document(BaseModel):
    """A document to index: its text, or its chunks already split (the adapters use their splitters).

    Without ``chunks`` the whole text is one chunk. Without ``id`` the id is a hash of the content.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = ""
    id: str | None = None
    chunks: tuple[str, ...] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def chunk_texts(self) -> list[str]:
        texts = self.chunks if self.chunks is not None else (self.text,)
        return [t for t in texts if t.strip()]

    def content_hash(self) -> str:
        return _digest(*self.chunk_texts())


@dataclass(frozen=True)
class IndexConfig:
    """Knobs of the pipeline. The defaults follow the paper and the reference implementation."""

    extraction: ExtractionConfig = field(default_factory=ExtractionConfig)
    max_concurrency: int = 8
    max_attempts: int = 4
    retry_initial_wait: float = 1.0
    retry_max_wait: float = 30.0
    cache: bool = True
    summary_threshold_tokens: int = 500
    summary_max_words: int = 150
    directed_relations: bool = False
    show_progress: bool = False
    token_counter: TokenCounter | None = None
    lock_timeout: float = 0.0
    """Seconds a write waits for another process's write to the same directory to finish (0: fail at once)."""

    def __post_init__(self) -> None:
        if self.max_concurrency < 1 or self.max_attempts < 1:
            raise ValueError("max_concurrency and max_attempts must be at least 1")


@dataclass(frozen=True)
class ChunkFailure:
    chunk_id: str
    document_ids: tuple[str, ...]
    error: str


@dataclass
class InsertSummary:
    """What an insert did and cost."""

    documents: int = 0
    unchanged: int = 0
    chunks: int = 0
    chunks_extracted: int = 0
    entities: int = 0
    relations: int = 0
    llm_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: list[ChunkFailure] = field(default_factory=list)
    removed: int = 0
    """Known documents given again with no text: removed, as :meth:`PathRAGIndex.delete` would."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class DeleteSummary:
    documents: int = 0
    missing: list[str] = field(default_factory=list)
    chunks: int = 0
    entities_removed: int = 0
    relations_removed: int = 0
    entities_updated: int = 0
    relations_updated: int = 0
    llm_calls: int = 0


class _Run:
    """What the concurrent LLM calls of one insert or delete share: the limit and the counters."""

    def __init__(self, max_concurrency: int) -> None:
        self.semaphore = asyncio.Semaphore(max_concurrency)  # created inside the operation's own loop
        self.calls = self.hits = self.prompt_tokens = self.completion_tokens = 0


@dataclass
class _Rebuilt:
    entities: list[Entity]
    relations: list[Relation]
    gone_entities: list[str]
    gone_relations: list[tuple[str, str]]


class PathRAGIndex:
    """A PathRAG knowledge-graph index, optionally persisted under ``directory``.

    ``llm`` extracts and summarises (a :class:`~pathrag.LanguageModel` or a ``prompt -> str`` function,
    sync or async). ``embedder`` feeds the default in-memory vector indexes; pass ``entity_index``,
    ``relation_index`` and ``chunk_index`` to use other vector stores, and ``graph`` for another
    graph store. With a ``directory``, everything lives in its ``pathrag.sqlite`` (see
    :mod:`pathrag.store`), opened lazily: a retrieval reads only what it needs. The store records the
    embedder's name (``embedder_name``, by default derived from the embedder) and refuses another one.
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
    ) -> None:
        self.config = config or IndexConfig()
        self.directory = Path(directory) if directory is not None else None
        self.llm = as_language_model(llm) if llm is not None else None
        given = {"entities": entity_index, "relations": relation_index, "chunks": chunk_index}
        if embedder is None and any(v is None for v in given.values()):
            raise ValueError("pass an embedder, or all three of entity_index, relation_index and chunk_index")
        self._store: SQLiteStore | None = None
        if self.directory is not None:
            self._store = _open_store(self.directory, self.config, embedder_name or embedder_name_of(embedder),
                                      "external" if any(v is not None for v in given.values()) else "sqlite-exact")
        store = self._store
        self.vector_indexes: dict[str, VectorIndex] = {
            name: index if index is not None else (
                SQLiteVectorIndex(store, name, embedder) if store is not None  # type: ignore[arg-type]
                else InMemoryVectorIndex(embedder))  # type: ignore[arg-type]
            for name, index in given.items()
        }
        self._owns_graph = graph is None
        if graph is None:
            graph = (SQLiteGraphStore(store, directed_relations=self.config.directed_relations) if store is not None
                     else NetworkXGraphStore(directed_relations=self.config.directed_relations))
        self.graph = graph
        # Rows of the store, fetched on first use (a retrieval never needs them, a write only its own).
        self._documents: _LazyRows = _LazyRows()
        self._chunks: _LazyRows = _LazyRows()
        # In memory: entity name -> ids of the chunks whose records mention it (a store has a table).
        self._mentions: dict[str, set[str]] = {}
        self._reset_tables()
        self._dirty_documents: set[str] = set()
        self._seen_commit = -1  # the store's commit counter when the tables above were loaded or written
        # Without a store: commits so far (odd while one runs) and, while one runs, a copy of the graph and
        # vector indexes as they were before it, for readers (see _committing and aread_committed).
        self._read_state: tuple[int, _Frozen | None] = (0, None)
        self._writer_lock = WriterLock(self.directory) if store is not None else None  # type: ignore[arg-type]
        self.summaries = _Table(store, "summaries", "text")  # apart from the optional cache: deletes must not pay
        self._cache = _Table(store, "llm_cache", "answer", packed=True)  # kept compressed: rarely read
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._line_tokens = functools.lru_cache(maxsize=8192)(
            lambda line: count_tokens(line, self.config.token_counter))

    # -- the document and chunk tables, loaded on first use ------------------------------------------

    @property
    def documents(self) -> MutableMapping[str, dict[str, Any]]:
        """Document id -> ``{"hash", "chunks", "metadata", "failed"}`` (read-only for callers; iterating
        it reads every document of the store)."""
        return self._documents

    @property
    def chunks(self) -> MutableMapping[str, dict[str, Any]]:
        """Chunk id -> its text, extraction records and ``refs`` (document id -> position)."""
        return self._chunks

    def _reset_tables(self) -> None:
        """Forget what was fetched from the store (after a rollback, or another process's commit)."""
        store = self._store
        if store is None:
            return
        self._documents = _LazyRows(functools.partial(_fetch_documents, store), functools.partial(_fetch_documents, store, None))
        self._chunks = _LazyRows(functools.partial(_fetch_chunks, store), functools.partial(_fetch_chunks, store, None))

    def _note_mentions(self, chunk: dict[str, Any], *, forget: bool = False) -> None:
        """Keep the chunk's mentions: a row per entity name in the store, else in memory."""
        names = mentioned_names(chunk["entities"], chunk["relations"])
        if self._store is not None:
            if not forget:
                self._store.executemany("INSERT OR IGNORE INTO mentions VALUES (?, ?)",
                                        [(n, chunk["id"]) for n in names])
            return  # forgetting: the chunk's rows go with it (see _sync_chunk_vectors)
        for name in names:
            if forget:
                held = self._mentions.get(name)
                if held is not None:
                    held.discard(chunk["id"])
                    if not held:
                        del self._mentions[name]
            else:
                self._mentions.setdefault(name, set()).add(chunk["id"])

    def chunk_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The text of each live chunk among ``ids`` (unknown, released and record-only chunks are left out)."""
        ids = list(dict.fromkeys(ids))
        if self._store is not None:
            rows = self._store.read(
                "SELECT c.id, c.text FROM chunks c WHERE c.id IN (SELECT value FROM json_each(?)) AND c.text != '' "
                "AND EXISTS (SELECT 1 FROM doc_chunks d WHERE d.chunk_id = c.id)", (dumps(ids),))
            found = dict(rows)
            return {cid: found[cid] for cid in ids if cid in found}
        return {cid: chunk["text"] for cid in ids
                if (chunk := self.chunks.get(cid)) is not None and chunk["refs"] and chunk["text"]}

    @contextlib.contextmanager
    def _committing(self) -> Any:
        """The span of one commit: one store transaction; on failure the in-memory tables are reloaded.

        Without a store, a copy of the graph, vector indexes and tables as they were before the commit is
        what readers get for as long as it runs (see :meth:`aread_committed`), and what a failed commit
        returns to."""
        if self._store is None:
            version = self._read_state[0]
            before = self._frozen()
            tables = self._table_copies()
            self._read_state = (version + 1, before)
            try:
                yield
            except BaseException:
                self._roll_back(before, tables)
                raise
            finally:
                self._read_state = (version + 2, None)
            return
        self._dirty_documents = set()
        try:
            with self._store.transaction():
                yield
                self._write_documents()
                self._seen_commit = self._store.count_commit()
        except BaseException:
            self._reset_tables()  # they may hold the rolled-back changes
            for table in (self._cache, self.summaries):  # paid-for answers are kept all the same
                table.flush_pending()
            raise
        else:
            self._reset_tables()  # committed: a long-lived writer keeps no more than one write's rows
        finally:
            for table in (self._cache, self.summaries):
                table.clear_pending()

    # -- public API --------------------------------------------------------------------------------

    def _operation_lock(self) -> asyncio.Lock:
        """One insert or delete at a time (per event loop: the sync twins each run their own loop)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """One write at a time: per event loop (the operation lock) and, for a directory, across processes
        (the store's writer lock). Another process's commits since ours are picked up first."""
        async with self._operation_lock():
            if self._store is None:
                yield
                return
            await self._writer_lock.aacquire(self.config.lock_timeout)
            try:
                current = self._store.commit_count()
                if current != self._seen_commit:  # written by someone else meanwhile (or never read): reload
                    self._reset_tables()
                    self._seen_commit = current
                yield
            finally:
                self._writer_lock.release()

    @property
    def entity_index(self) -> VectorIndex:
        return self.vector_indexes["entities"]

    @property
    def relation_index(self) -> VectorIndex:
        return self.vector_indexes["relations"]

    @property
    def chunk_index(self) -> VectorIndex:
        return self.vector_indexes["chunks"]

    async def ainsert(self, documents: Iterable[Document | str]) -> InsertSummary:
        """Index new or changed documents; unchanged ones cost nothing. See the module docstring."""
        async with self._writing():
            return await self._insert(_as_documents(documents))

    def insert(self, documents: Iterable[Document | str]) -> InsertSummary:
        """Sync twin of :meth:`ainsert` (safe to call from inside a running event loop)."""
        return run_sync(self.ainsert(documents))

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
        vectors: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
    ) -> InsertSummary:
        """Add records extracted elsewhere (an imported graph, say) as document ``document_id``, without LLM.

        They merge with extracted records by the same rules, survive later inserts and deletes of other
        documents, and go away with ``delete([document_id])``. Adding again under the same id replaces them.
        Names are used as given: pass them through :func:`pathrag.extraction.normalize_name` to merge with
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
            pathrag.extraction.EntityNameError: a name no store can hold (nothing is written).
            TypeError: ``vectors`` for an index without ``upsert_vectors`` (nothing is written).
        """
        if not isinstance(document_id, str) or not document_id.strip():
            raise ValueError("document_id must be a non-empty string")
        for name in [e.name for e in entities] + [n for r in relations for n in r.pair]:
            check_name(name)  # refused up front (as the graph stores would), never renamed
        vector_items, vectors = vector_items or {}, vectors or {}
        for name, known in vectors.items():
            if known and not hasattr(self.vector_indexes[name], "upsert_vectors"):
                raise TypeError(f"reusing vectors needs a vector index with upsert_vectors(), not "
                                f"{type(self.vector_indexes[name]).__name__}")
        async with self._writing():
            entity_rows = [e.model_dump(mode="json") for e in entities]
            relation_rows = [r.model_dump(mode="json") for r in relations]
            content = _digest(document_id, json.dumps([entity_rows, relation_rows], sort_keys=True))
            old = self.documents.get(document_id)
            if old is not None and old["hash"] == content:
                return InsertSummary(unchanged=1)
            self._check_writable()
            run = _Run(self.config.max_concurrency)
            with self._committing():
                released = self._unref(document_id, old["chunks"]) if old is not None else set()
                cid = f"records-{content}"
                self._store_chunk(cid, "", entity_rows, relation_rows)["refs"][document_id] = 0
                self._set_document(document_id, {"hash": content, "chunks": [cid], "metadata": {"records": True},
                                                 "failed": []})
                released.discard(cid)
                for name, items in vector_items.items():
                    await aput_vectors(self.vector_indexes[name], items, vectors.get(name, {}))
                rebuilt = await self._rebuild([cid, *sorted(released)], run)
                await self._sync_chunk_vectors([], released)
            return InsertSummary(documents=1, chunks=1, entities=len(rebuilt.entities),
                                 relations=len(rebuilt.relations), llm_calls=run.calls)

    def add_records(self, document_id: str, entities: Sequence[Entity], relations: Sequence[Relation],
                    **vector_items_and_vectors: Any) -> InsertSummary:
        """Sync twin of :meth:`aadd_records`."""
        return run_sync(self.aadd_records(document_id, entities, relations, **vector_items_and_vectors))

    def retrieve(self, query: str, *, keyword_llm: bool = True, **params: Any) -> RetrievalResult:
        """Key paths and source passages for ``query`` from this index (see :func:`pathrag.retrieval.retrieve`).

        The index's LLM extracts the query keywords unless ``keyword_llm=False``. The answer comes from one
        committed state, whatever writes run meanwhile (see :meth:`aread_committed`).
        """
        return self.read_committed(lambda graph, indexes: retrieve(
            query, graph=graph, entity_index=indexes["entities"], passage_index=indexes["chunks"],
            llm=self.llm if keyword_llm else None, **params))

    async def aretrieve(self, query: str, *, keyword_llm: bool = True, **params: Any) -> RetrievalResult:
        """Async twin of :meth:`retrieve`."""
        return await self.aread_committed(lambda graph, indexes: aretrieve(
            query, graph=graph, entity_index=indexes["entities"], passage_index=indexes["chunks"],
            llm=self.llm if keyword_llm else None, **params))

    async def aread_committed(self, read: Callable[[GraphStore, Mapping[str, VectorIndex]], Awaitable[T]]) -> T:
        """``await read(graph, vector_indexes)`` on one committed state of the index, while writes go on.

        With a directory, the reads share one SQLite read transaction: the last commit before the first
        read. Without one, a read that overlaps a commit gets a copy of the graph and vector indexes made
        when the commit began; a read that began before a commit and outlived its start is run again (the
        state it saw may be half written). Readers never wait for a writer. A graph or vector index you
        passed in yourself is read as it is (no copy): its own store decides what a read sees.
        """
        if self._store is not None:
            with self._store.snapshot():
                return await read(self.graph, self.vector_indexes)
        while True:
            seen = self._read_state
            try:
                result = await read(*self._state(seen))
            except Exception:
                if self._overtaken(seen):
                    continue  # it read a commit half written: read again
                raise
            if not self._overtaken(seen):
                return result

    def read_committed(self, read: Callable[[GraphStore, Mapping[str, VectorIndex]], T]) -> T:
        """Sync twin of :meth:`aread_committed`.

        >>> from pathrag import HashingEmbedder
        >>> index = PathRAGIndex(embedder=HashingEmbedder(64))
        >>> index.read_committed(lambda graph, indexes: len(indexes["chunks"]))
        0
        """
        if self._store is not None:
            with self._store.snapshot():
                return read(self.graph, self.vector_indexes)
        while True:
            seen = self._read_state
            try:
                result = read(*self._state(seen))
            except Exception:
                if self._overtaken(seen):
                    continue
                raise
            if not self._overtaken(seen):
                return result

    def _state(self, seen: tuple[int, _Frozen | None]) -> _Frozen:
        return seen[1] or (self.graph, self.vector_indexes)

    def _overtaken(self, seen: tuple[int, _Frozen | None]) -> bool:
        """Whether a read of the live objects (no copy) overlapped the start of a commit."""
        return seen[1] is None and self._read_state[0] != seen[0]

    def _table_copies(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, set[str]]]:
        """The in-memory document, chunk and mention tables, copied deep enough for a commit to change."""
        chunks = {cid: {**chunk, "refs": dict(chunk["refs"])} for cid, chunk in self.chunks.items()}
        return dict(self.documents), chunks, {name: set(ids) for name, ids in self._mentions.items()}

    def _roll_back(self, before: _Frozen, tables: tuple[dict[str, Any], dict[str, Any], dict[str, set[str]]]) -> None:
        """Return an in-memory index to ``before`` (copied again: readers may still hold ``before``)."""
        graph, indexes = before
        if graph is not self.graph and isinstance(self.graph, NetworkXGraphStore):
            self.graph.graph = graph.graph.copy()  # type: ignore[attr-defined]
        for name, index in self.vector_indexes.items():
            if isinstance(index, InMemoryVectorIndex) and isinstance(indexes[name], InMemoryVectorIndex):
                index.restore(indexes[name])  # type: ignore[arg-type]
        documents, chunks, self._mentions = tables
        self._documents, self._chunks = _LazyRows(), _LazyRows()
        self._documents.update(documents)
        self._chunks.update(chunks)

    def _frozen(self) -> _Frozen:
        """The graph and vector indexes as they are now, copied where this index owns them in memory (the
        graph as one networkx copy; vector indexes by their dicts, no vector copied)."""
        graph = self.graph
        if self._owns_graph and isinstance(graph, NetworkXGraphStore):
            graph = NetworkXGraphStore(graph.graph.copy(), directed_relations=graph.directed_relations)
        return graph, {name: index.copy() if isinstance(index, InMemoryVectorIndex) else index
                       for name, index in self.vector_indexes.items()}

    def save(self, directory: str | os.PathLike[str] | None = None) -> None:
        """Write a complete copy to ``directory`` atomically (default: the index's own directory).

        Inserts and deletes already commit to the index's own directory, so saving there does nothing
        more; another directory gets a copy (cache included) that ``PathRAGIndex(directory, ...)``
        reopens. The index keeps its own directory.
        """
        target = Path(directory) if directory is not None else self.directory
        if target is None:
            raise ValueError("this index has no directory: call save(directory)")
        if self._store is not None:
            if self.directory is not None and target.resolve() != self.directory.resolve():
                self._store.copy_to(target)
            return
        target.mkdir(parents=True, exist_ok=True)
        self._export(target)

    def close(self) -> None:
        """Close the store's connections (an index without a directory has nothing to close)."""
        if self._store is not None:
            self._store.close()

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
            lost = [c for c in doc["chunks"] if c not in self.chunks and c not in doc["failed"]]
            if lost:
                problems.append(f"document {doc_id!r}: {len(lost)} chunk(s) missing, e.g. {lost[0]}")
        names: set[str] = set()
        keys: set[tuple[str, str]] = set()
        # passages an import's records cite: an importer put them in the chunk index
        cited = _cited(c for c in self.chunks.values() if c["refs"] and not c["text"])
        for chunk in self.chunks.values():
            if chunk["refs"]:
                names.update(e["name"] for e in chunk["entities"])
                for r in chunk["relations"]:
                    names.update((r["source"], r["target"]))
                    keys.add(relation_key(r["source"], r["target"], directed=directed))
        if isinstance(self.graph, (SQLiteGraphStore, NetworkXGraphStore)):
            stored = {e.name for e in self.graph.iter_entities()}
            stored_keys = {relation_key(r.source, r.target, directed=directed) for r in self.graph.iter_relations()}
            for label, extra, missing in (("entities", stored - names, names - stored),
                                          ("relations", stored_keys - keys, keys - stored_keys)):
                if extra:
                    problems.append(f"{len(extra)} {label} no live document mentions, e.g. {sorted(extra)[0]}")
                if missing:
                    problems.append(f"{len(missing)} {label} of live documents missing from the graph, "
                                    f"e.g. {sorted(missing)[0]}")
        wanted = {"entities": {entity_vector_id(n) for n in names},
                  "relations": {relation_vector_id(k) for k in keys},
                  "chunks": {c for c, chunk in self.chunks.items() if chunk["refs"] and chunk["text"]}}
        for name, index in self.vector_indexes.items():
            if isinstance(index, (SQLiteVectorIndex, InMemoryVectorIndex)):
                held = set(index.ids())
                want = wanted[name] | (held & cited if name == "chunks" else set())
                if held != want:
                    problems.append(f"{name} vectors: {len(want - held)} missing, "
                                    f"{len(held - want)} without an owner")
        return problems

    def stats(self) -> dict[str, int]:
        """Counts: ``documents`` (imports included), ``imports`` (documents made by :meth:`add_records`)
        and the ``records`` they hold, ``chunks`` (passages with text: the documents' chunks and the
        passages an importer put in the chunk index), ``entities`` and ``relations``."""
        if self._store is not None:
            store = self._store
            (documents,), = store.read("SELECT COUNT(*) FROM documents")
            # an import's records live in a chunk without text: it is not a passage
            (chunks,), = store.read("SELECT COUNT(DISTINCT d.chunk_id) FROM doc_chunks d "
                                    "JOIN chunks c ON c.id = d.chunk_id WHERE c.text != ''")
            records = store.read("SELECT d.doc_id, c.records FROM doc_chunks d JOIN chunks c ON c.id = d.chunk_id "
                                 "WHERE c.text = '' AND c.id LIKE 'records-%'")
            held = [unpack_records(blob) for _, blob in records]
            # an import's passages: chunk vectors without a chunk row, cited by a live import's records
            cited = _cited(held)
            imported = sum(vid in cited for (vid,) in store.read(
                "SELECT v.id FROM vectors v WHERE v.space = 'chunks' "
                "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = v.id)"))
            counts = {"documents": documents, "chunks": chunks + imported,
                      "imports": len({doc_id for doc_id, _ in records})}
        else:
            live = {cid: c for cid, c in self.chunks.items() if c["refs"]}
            held = [c for cid, c in live.items() if not c["text"] and cid.startswith("records-")]
            own, cited = self.chunk_index, _cited(held)
            imported = (sum(cid in cited and cid not in self.chunks for cid in own.ids())
                        if isinstance(own, InMemoryVectorIndex) else 0)
            counts = {"documents": len(self.documents), "chunks": sum(1 for c in live.values() if c["text"]) + imported,
                      "imports": len({doc_id for c in held for doc_id in c["refs"]})}
        counts["records"] = sum(len(r.get("entities", ())) + len(r.get("relations", ())) for r in held)
        if isinstance(self.graph, NetworkXGraphStore):
            counts.update(entities=len(self.graph.graph), relations=self.graph.graph.number_of_edges())
        elif isinstance(self.graph, SQLiteGraphStore):
            counts.update(entities=len(self.graph), relations=self.graph.number_of_relations())
        return counts

    # -- insert ------------------------------------------------------------------------------------

    async def _insert(self, documents: list[Document]) -> InsertSummary:
        summary = InsertSummary()
        run = _Run(self.config.max_concurrency)
        todo: dict[str, tuple[Document, str, dict[str, str]]] = {}  # id -> (doc, content hash, chunk id -> text)
        given: dict[str, str] = {}
        self.documents.prefetch(d.id or f"doc-{d.content_hash()}" for d in documents)  # type: ignore[attr-defined]
        for doc in documents:
            content = doc.content_hash()
            doc_id = doc.id or f"doc-{content}"
            if given.setdefault(doc_id, content) != content:
                raise ValueError(f"document id {doc_id!r} appears twice in one insert with different texts: "
                                 "pass one version per id")
            known = self.documents.get(doc_id)
            if not doc.chunk_texts() and known is None:
                continue  # an empty document nobody knows: nothing to do
            if doc_id in todo or (known and known["hash"] == content and not known["failed"]):
                summary.unchanged += 1
                continue
            todo[doc_id] = (doc, content, {chunk_id(t): t for t in doc.chunk_texts()})
        # Chunks in document order; ones already extracted (now or before a crash) are not paid again.
        planned: dict[str, tuple[str, list[str]]] = {}
        for doc_id, (_, _, chunks) in todo.items():
            for cid, text in chunks.items():
                planned.setdefault(cid, (text, []))[1].append(doc_id)
        self.chunks.prefetch(planned)  # type: ignore[attr-defined]
        missing = [cid for cid in planned if cid not in self.chunks]
        if todo:
            self._check_writable()  # before paying for any LLM call
        failed = await self._extract_all({cid: planned[cid] for cid in missing}, run, summary)

        with self._committing():
            released: set[str] = set()
            touched_chunks: list[str] = []
            newly_live: list[str] = []
            for doc_id, (doc, content, chunks) in todo.items():
                old = self.documents.get(doc_id)
                if old is not None:  # a changed document replaces its previous version
                    released.update(self._unref(doc_id, old["chunks"]))
                chunk_ids = list(chunks)
                for position, cid in enumerate(chunk_ids):
                    if cid in self.chunks:
                        if not self.chunks[cid]["refs"] or cid in released:
                            newly_live.append(cid)
                        self.chunks[cid]["refs"][doc_id] = position
                        touched_chunks.append(cid)
                if not chunk_ids:  # the document was emptied: it goes, as with delete()
                    self._set_document(doc_id, None)
                    summary.removed += 1
                    continue
                self._set_document(doc_id, {"hash": content, "chunks": chunk_ids, "metadata": doc.metadata,
                                            "failed": sorted(c for c in chunk_ids if c in failed)})
                summary.documents += 1
            summary.chunks = len(dict.fromkeys(touched_chunks))
            released -= set(touched_chunks)
            rebuilt = await self._rebuild(touched_chunks + sorted(released), run)
            summary.entities, summary.relations = len(rebuilt.entities), len(rebuilt.relations)
            await self._sync_chunk_vectors(newly_live, released)
        summary.llm_calls, summary.cache_hits = run.calls, run.hits
        summary.prompt_tokens, summary.completion_tokens = run.prompt_tokens, run.completion_tokens
        return summary

    async def _extract_all(
        self, planned: dict[str, tuple[str, list[str]]], run: _Run, summary: InsertSummary
    ) -> set[str]:
        """Extract every planned chunk concurrently; journal each result as it lands."""
        if planned and self.llm is None:
            raise ValueError("this index has no llm, so it cannot extract new chunks")
        failed: set[str] = set()
        progress = tqdm(total=len(planned), unit="chunk", desc="extracting", disable=not self.config.show_progress)
        counts = {"entities": 0, "relations": 0}

        async def one(cid: str, text: str, doc_ids: list[str]) -> None:
            try:
                done = await extract_records(text, lambda p: self._ask(p, run), self.config.extraction,
                                             chunk_id=cid)
            except Exception as exc:  # reported and skipped: one bad chunk must not sink the run
                logger.warning("chunk %s failed after retries: %r", cid, exc)
                summary.failures.append(ChunkFailure(cid, tuple(doc_ids), f"{type(exc).__name__}: {exc}"))
                failed.add(cid)
            else:
                self._store_chunk(cid, text, [e.model_dump(mode="json") for e in done.result.entities],
                                  [r.model_dump(mode="json") for r in done.result.relations])
                summary.chunks_extracted += 1
                counts["entities"] += len(done.result.entities)
                counts["relations"] += len(done.result.relations)
            progress.update(1)
            progress.set_postfix(calls=run.calls, tokens=run.prompt_tokens + run.completion_tokens,
                                 **counts, refresh=False)

        tasks = [asyncio.ensure_future(one(cid, text, doc_ids)) for cid, (text, doc_ids) in planned.items()]
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

    # -- delete ------------------------------------------------------------------------------------

    async def _delete(self, document_ids: list[str]) -> DeleteSummary:
        summary = DeleteSummary()
        run = _Run(self.config.max_concurrency)
        if any(doc_id in self.documents for doc_id in document_ids):
            self._check_writable()
        with self._committing():
            released: set[str] = set()
            for doc_id in dict.fromkeys(document_ids):
                doc = self._set_document(doc_id, None)
                if doc is None:
                    summary.missing.append(doc_id)
                    continue
                released.update(self._unref(doc_id, doc["chunks"]))
                summary.documents += 1
            summary.chunks = len(released)
            rebuilt = await self._rebuild(sorted(released), run)
            summary.entities_removed, summary.relations_removed = len(rebuilt.gone_entities), len(rebuilt.gone_relations)
            summary.entities_updated, summary.relations_updated = len(rebuilt.entities), len(rebuilt.relations)
            await self._sync_chunk_vectors([], released)
        summary.llm_calls = run.calls
        return summary

    def _store_chunk(
        self, cid: str, text: str, entities: list[dict[str, Any]], relations: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """Keep a chunk's extraction records and write them at once (no document claims it yet).

        Outside a commit this is its own tiny transaction: a crash later on does not lose the LLM's work.
        """
        record = {"id": cid, "text": text, "entities": entities, "relations": relations}
        chunks = self.chunks
        if self._store is not None:
            with self._store.transaction():  # the chunk and its mentions: both or neither survive a crash
                self._store.execute("INSERT OR REPLACE INTO chunks VALUES (?, ?, ?)",
                                    (cid, text, pack_records(entities, relations)))
                self._store.execute("DELETE FROM mentions WHERE chunk_id = ?", (cid,))
                self._note_mentions(record)
        else:
            if cid in chunks:
                self._note_mentions(chunks[cid], forget=True)
            self._note_mentions(record)
        chunks[cid] = {**record, "refs": {}}
        return chunks[cid]

    def _set_document(self, doc_id: str, doc: dict[str, Any] | None) -> dict[str, Any] | None:
        """Replace (or with ``None`` remove) a document row; returns the previous one."""
        old = self.documents.pop(doc_id, None)
        if doc is not None:
            self.documents[doc_id] = doc
        self._dirty_documents.add(doc_id)
        return old

    def _write_documents(self) -> None:
        """Write the document rows this commit changed (inside its transaction)."""
        store, dirty = self._store, sorted(self._dirty_documents)
        if store is None or not dirty:
            return
        ids = dumps(dirty)
        store.execute("DELETE FROM doc_chunks WHERE doc_id IN (SELECT value FROM json_each(?))", (ids,))
        store.execute("DELETE FROM documents WHERE id IN (SELECT value FROM json_each(?))", (ids,))
        kept = [(d, self.documents[d]) for d in dirty if d in self.documents]
        store.executemany("INSERT INTO documents VALUES (?, ?, ?, ?)", [
            (d, doc["hash"], dumps(doc["metadata"]), dumps(doc["failed"])) for d, doc in kept])
        store.executemany("INSERT INTO doc_chunks VALUES (?, ?, ?)", [
            (d, position, cid) for d, doc in kept for position, cid in enumerate(doc["chunks"])])
        self._dirty_documents = set()

    def _check_writable(self) -> None:
        """Fail in one line before any LLM call when the store cannot be written."""
        if self._store is not None:
            self._store.check_writable()

    def _unref(self, doc_id: str, chunk_ids: Iterable[str]) -> set[str]:
        """Drop ``doc_id``'s claim on its chunks; return the chunks nobody claims any more."""
        orphaned = set()
        for cid in chunk_ids:
            chunk = self.chunks.get(cid)
            if chunk is not None:
                chunk["refs"].pop(doc_id, None)
                if not chunk["refs"]:
                    orphaned.add(cid)
        return orphaned

    # -- rebuilding the graph from chunk records ---------------------------------------------------

    def _ordered_live_chunks(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """The live chunks mentioning any of ``names``, in a stable order: by document (sorted id), then
        position in it. Only those chunks are read, so a write costs the same whatever the store's size."""
        chunks = self.chunks
        if self._store is not None:
            candidates = {cid for cid, in self._store.wread(
                "SELECT DISTINCT chunk_id FROM mentions WHERE name IN (SELECT value FROM json_each(?))",
                (dumps(sorted(names)),))}
            chunks.prefetch(candidates)  # type: ignore[attr-defined]
        else:
            candidates = set().union(*(self._mentions.get(n, ()) for n in names))
        order = {cid: (doc_id, position) for cid in candidates if (chunk := chunks.get(cid)) and chunk["refs"]
                 for doc_id, position in [min(chunk["refs"].items())]}
        return [chunks[cid] for cid in sorted(order, key=order.__getitem__)]

    async def _rebuild(self, chunk_ids: Sequence[str], run: _Run) -> _Rebuilt:
        """Recompute every entity and relation mentioned by ``chunk_ids`` from the live chunks."""
        directed = self.config.directed_relations
        touched_entities: set[str] = set()
        touched_relations: set[tuple[str, str]] = set()
        for cid in chunk_ids:
            chunk = self.chunks.get(cid)
            if chunk is None:
                continue
            touched_entities.update(e["name"] for e in chunk["entities"])
            for r in chunk["relations"]:
                touched_entities.update((r["source"], r["target"]))
                touched_relations.add(relation_key(r["source"], r["target"], directed=directed))
        if not touched_entities:
            return _Rebuilt([], [], [], [])

        entity_records: dict[str, list[Entity]] = {name: [] for name in touched_entities}
        endpoint_chunks: dict[str, list[str]] = {name: [] for name in touched_entities}
        relation_records: dict[tuple[str, str], list[Relation]] = {key: [] for key in touched_relations}
        for chunk in self._ordered_live_chunks(touched_entities):
            for e in chunk["entities"]:
                if e["name"] in entity_records:
                    entity_records[e["name"]].append(Entity.model_validate(e))
            for r in chunk["relations"]:
                key = relation_key(r["source"], r["target"], directed=directed)
                if key in relation_records:
                    relation_records[key].append(Relation.model_validate(r))
                for end in (r["source"], r["target"]):
                    if end in endpoint_chunks:
                        endpoint_chunks[end].append(chunk["id"])

        names = sorted(touched_entities)
        gone_entities = [n for n in names if not entity_records[n] and not endpoint_chunks[n]]
        entities = list(await asyncio.gather(*(
            # an entity that only appears as a relation endpoint still comes from those chunks
            self._summarised(merge_entity(n, entity_records[n], extra_source_ids=[
                c for c in endpoint_chunks[n] if self.chunks[c]["text"]]),  # record-only chunks have no text
                             n, entity_records[n], run)
            for n in names if entity_records[n] or endpoint_chunks[n])))
        keys = sorted(touched_relations)
        gone_relations = [k for k in keys if not relation_records[k]]
        merged = {k: merge_relation(relation_records[k]) for k in keys if relation_records[k]}
        relations = list(await asyncio.gather(*(
            self._summarised(r, f"{r.source} -> {r.target}", relation_records[k], run) for k, r in merged.items())))

        await self.graph.adelete_relations(gone_relations)
        await self.graph.adelete_entities(gone_entities)
        await self.graph.aupsert_entities(entities)
        await self.graph.aupsert_relations(relations)  # replaces, whichever way round it was stored

        await self.entity_index.adelete([entity_vector_id(n) for n in gone_entities])
        await self.entity_index.aupsert([entity_vector_item(e) for e in entities])
        await self.relation_index.adelete([relation_vector_id(k) for k in gone_relations])
        await self.relation_index.aupsert([relation_vector_item(r, directed=directed) for r in relations])
        return _Rebuilt(entities, relations, gone_entities, gone_relations)

    async def _summarised(self, item: T, label: str, records: Sequence[Entity | Relation], run: _Run) -> T:
        """Replace a long merged description with an LLM summary, remembered by its exact input."""
        description: str = item.description  # type: ignore[attr-defined]
        if count_tokens(description, self.config.token_counter) <= self.config.summary_threshold_tokens:
            return item
        parts = list(dict.fromkeys(r.description.strip() for r in records if r.description.strip()))
        prompt = build_summary_prompt(label, parts, language=self.config.extraction.language,
                                      max_words=self.config.summary_max_words)
        key = _digest(prompt)
        if key not in self.summaries:
            if self.llm is None:
                return item  # nothing to summarise with: keep the full text rather than fail
            try:
                self.summaries[key] = " ".join((await self._ask(prompt, run)).split())
            except Exception as exc:
                logger.warning("summary of %s failed, keeping the joined descriptions: %r", label, exc)
                return item
        return item.model_copy(update={"description": self.summaries[key] or description})  # type: ignore[attr-defined]

    async def _sync_chunk_vectors(self, added: Sequence[str], released: set[str]) -> None:
        gone = sorted(cid for cid in released if not self.chunks.get(cid, {}).get("refs"))
        await self.chunk_index.adelete([cid for cid in gone if self.chunks.get(cid, {}).get("text")])
        # the passages an importer put in the chunk index go with the last import citing them
        dropped = _cited(self.chunks[cid] for cid in gone if cid in self.chunks and not self.chunks[cid]["text"])
        if dropped:
            dropped -= _cited(self._live_record_chunks())
            await self.chunk_index.adelete(sorted(cid for cid in dropped if cid not in self.chunks))
        await self.chunk_index.aupsert([
            VectorItem(cid, self.chunks[cid]["text"], chunk_metadata(cid, _mentioned(self.chunks[cid])))
            for cid in dict.fromkeys(added)])
        for cid in gone:
            chunk = self.chunks.pop(cid, None)
            if chunk is not None:
                self._note_mentions(chunk, forget=True)
        if self._store is not None and gone:
            self._store.execute("DELETE FROM chunks WHERE id IN (SELECT value FROM json_each(?))", (dumps(gone),))
            self._store.execute("DELETE FROM mentions WHERE chunk_id IN (SELECT value FROM json_each(?))",
                                (dumps(gone),))

    def _live_record_chunks(self) -> list[dict[str, Any]]:
        """The record chunks (imports, :meth:`add_records`) some document still claims."""
        ids = ([row[0] for row in self._store.wread("SELECT id FROM chunks WHERE id LIKE 'records-%'")]
               if self._store is not None else [cid for cid in self.chunks if cid.startswith("records-")])
        return [chunk for cid in ids if (chunk := self.chunks.get(cid)) is not None and chunk["refs"]]

    # -- the LLM, behind cache, concurrency limit and retries --------------------------------------

    def _usage_tokens(self, text: str) -> int:
        """Token count for the usage report, line by line with a memo: prompts share most lines."""
        return sum(self._line_tokens(line) for line in text.split("\n")) + text.count("\n")

    async def _ask(self, prompt: str, run: _Run) -> str:
        assert self.llm is not None
        key = _digest(self.llm.name, prompt)
        if self.config.cache and key in self._cache:
            run.hits += 1
            return self._cache[key]
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.max_attempts),
            wait=wait_random_exponential(multiplier=self.config.retry_initial_wait, max=self.config.retry_max_wait),
            retry=retry_if_exception_type(Exception),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                async with run.semaphore:  # the limit covers calls, not back-off sleeps
                    run.calls += 1
                    answer = await self.llm.acomplete(prompt)
        run.prompt_tokens += self._usage_tokens(prompt)
        run.completion_tokens += self._usage_tokens(answer)
        if self.config.cache:
            self._cache[key] = answer  # written at once: a crash does not make us pay for it again
        return answer

    # -- persistence -------------------------------------------------------------------------------

    def _export(self, target: Path) -> None:
        """Write this (in-memory) index as a new store in ``target``, replacing any store there."""
        staging = target / ".saving"
        shutil.rmtree(staging, ignore_errors=True)
        store = SQLiteStore(staging)
        vectors = {name: index.rows() for name, index in self.vector_indexes.items()
                   if isinstance(index, InMemoryVectorIndex)}
        graph = self.graph if self._owns_graph and isinstance(self.graph, NetworkXGraphStore) else None
        try:
            write_snapshot(
                store, documents=self.documents,
                chunks=({k: v for k, v in c.items() if k != "refs"} for c in self.chunks.values()),
                summaries=dict(self.summaries.items()), cache=dict(self._cache.items()) if self.config.cache else {},
                entities=graph.iter_entities() if graph else (), relations=graph.iter_relations() if graph else (),
                vectors=vectors, meta={"pathrag_version": PATHRAG_VERSION,
                                       "directed_relations": int(self.config.directed_relations),
                                       **({"embedder": name} if (name := self._embedder_name()) else {})})
        finally:
            store.close()
        for suffix in ("-wal", "-shm"):
            (target / (STORE_FILE + suffix)).unlink(missing_ok=True)
        os.replace(staging / STORE_FILE, target / STORE_FILE)
        shutil.rmtree(staging, ignore_errors=True)

    def _embedder_name(self) -> str | None:
        index = self.entity_index
        return embedder_name_of(index.embedder) if isinstance(index, InMemoryVectorIndex) else None


def _cited(record_chunks: Iterable[Mapping[str, Any]]) -> set[str]:
    """The chunk ids the records of these chunks cite as their sources."""
    return {sid for chunk in record_chunks for r in (*chunk.get("entities", ()), *chunk.get("relations", ()))
            for sid in r.get("source_ids", ())}


_Frozen = tuple[GraphStore, dict[str, VectorIndex]]


class _LazyRows(MutableMapping[str, dict[str, Any]]):
    """Rows of a store table, fetched by key on first use and then kept with this process's changes;
    iterating fetches the rest. Without ``fetch`` it is a plain dict (an in-memory index)."""

    def __init__(self, fetch: Callable[[list[str]], dict[str, dict[str, Any]]] | None = None,
                 fetch_all: Callable[[], dict[str, dict[str, Any]]] | None = None) -> None:
        self._rows: dict[str, dict[str, Any]] = {}
        self._absent: set[str] = set()  # known not to exist (or deleted here): never fetched again
        self._fetch, self._fetch_all = fetch, fetch_all
        self._complete = fetch is None

    def prefetch(self, keys: Iterable[str]) -> None:
        """Fetch the rows of ``keys`` not known yet, in one query."""
        if self._complete:
            return
        wanted = [k for k in dict.fromkeys(keys) if k not in self._rows and k not in self._absent]
        if wanted:
            assert self._fetch is not None
            found = self._fetch(wanted)
            self._rows.update(found)
            self._absent.update(k for k in wanted if k not in found)

    def __getitem__(self, key: str) -> dict[str, Any]:
        self.prefetch([key])
        return self._rows[key]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        self.prefetch([key])
        return key in self._rows

    def __setitem__(self, key: str, value: dict[str, Any]) -> None:
        self._rows[key] = value
        self._absent.discard(key)

    def __delitem__(self, key: str) -> None:
        self.prefetch([key])
        del self._rows[key]
        self._absent.add(key)

    def __iter__(self) -> Iterator[str]:
        if not self._complete:
            assert self._fetch_all is not None
            for key, row in self._fetch_all().items():
                if key not in self._rows and key not in self._absent:
                    self._rows[key] = row
            self._complete = True
        return iter(list(self._rows))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _fetch_documents(store: SQLiteStore, ids: list[str] | None) -> dict[str, dict[str, Any]]:
    """Document rows (all of them for ``ids=None``) with their chunk lists, as the writer sees them."""
    where, params = ("WHERE id IN (SELECT value FROM json_each(?))", (dumps(ids),)) if ids is not None else ("", ())
    docs = {doc_id: {"hash": content, "chunks": [], "metadata": json.loads(metadata), "failed": json.loads(failed)}
            for doc_id, content, metadata, failed in store.wread(
                f"SELECT id, hash, metadata, failed FROM documents {where} ORDER BY rowid", params)}
    where = where.replace("WHERE id", "WHERE doc_id")
    for doc_id, _, cid in store.wread(f"SELECT doc_id, position, chunk_id FROM doc_chunks {where} "
                                      "ORDER BY doc_id, position", params):
        if doc_id in docs:
            docs[doc_id]["chunks"].append(cid)
    return docs


def _fetch_chunks(store: SQLiteStore, ids: list[str] | None) -> dict[str, dict[str, Any]]:
    """Chunk rows with their records and ``refs`` (document id -> position; the document rows are the
    commit record: they alone say which chunks are live). Called for a chunk before any document of the
    running operation changes its claim on it, so the stored claims are the current ones."""
    where, params = ("WHERE id IN (SELECT value FROM json_each(?))", (dumps(ids),)) if ids is not None else ("", ())
    chunks = {cid: {"id": cid, "text": text, **unpack_records(records), "refs": {}}
              for cid, text, records in store.wread(f"SELECT id, text, records FROM chunks {where} ORDER BY rowid",
                                                    params)}
    where = where.replace("WHERE id", "WHERE chunk_id")
    for cid, doc_id, position in store.wread(f"SELECT chunk_id, doc_id, position FROM doc_chunks {where}", params):
        if cid in chunks:
            chunks[cid]["refs"][doc_id] = position
    return chunks


class _Table:
    """A string -> string table: a dict in memory, or rows of the store (written at once, or with the
    open commit) so that nothing is loaded before it is needed."""

    def __init__(self, store: SQLiteStore | None, table: str, column: str, *, packed: bool = False) -> None:
        self._store = store
        self._pack: Callable[[str], str | bytes] = pack_text if packed else str
        self._memory: dict[str, str] = {}
        self._get = f"SELECT {column} FROM {table} WHERE key = ?"
        self._put = f"INSERT OR REPLACE INTO {table} VALUES (?, ?)"
        self._all = f"SELECT key, {column} FROM {table}"
        self._pending: dict[str, str] = {}  # written inside the open commit: rewritten if it rolls back

    def get(self, key: str) -> str | None:
        if self._store is None:
            return self._memory.get(key)
        rows = self._store.wread(self._get, (key,))
        return unpack_text(rows[0][0]) if rows else None

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __getitem__(self, key: str) -> str:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: str) -> None:
        if self._store is None:
            self._memory[key] = value
        else:
            if self._store.in_transaction:
                self._pending[key] = value
            self._store.execute(self._put, (key, self._pack(value)))

    def flush_pending(self) -> None:
        """After a rollback: write again what the rolled-back commit had written (LLM answers)."""
        pending, self._pending = self._pending, {}
        if self._store is not None and pending:
            self._store.executemany(self._put, [(key, self._pack(value)) for key, value in pending.items()])

    def clear_pending(self) -> None:
        self._pending = {}

    def items(self) -> list[tuple[str, str]]:
        if self._store is None:
            return list(self._memory.items())
        return [(key, unpack_text(value)) for key, value in self._store.wread(self._all)]


def _open_store(directory: Path, config: IndexConfig, embedder: str | None, vector_kind: str) -> SQLiteStore:
    """Open (migrating a JSON-format directory first) and check the store's record of its embedder."""
    migrate_json_store(directory)
    store = SQLiteStore(directory)
    meta = store.meta()
    recorded = meta.get("embedder")
    if recorded and embedder and recorded != embedder:
        store.close()
        raise StoreError(f"the store {directory} was built with the embeddings {recorded!r}, not {embedder!r}: "
                         "open it with the same embeddings, or use another directory")
    wanted = {"pathrag_version": PATHRAG_VERSION, "vector_index": vector_kind,
              **({"embedder": embedder} if embedder and not recorded else {}),
              **({} if "directed_relations" in meta else {"directed_relations": int(config.directed_relations)})}
    changed = {k: v for k, v in wanted.items() if meta.get(k) != str(v)}
    if changed:
        try:
            with store.transaction():
                store.set_meta(changed)
        except sqlite3.OperationalError:  # a read-only store still answers queries
            pass
    return store


def _as_documents(documents: Iterable[Document | str]) -> list[Document]:
    if isinstance(documents, (str, Document)):
        documents = [documents]
    out = []
    for doc in documents:
        if isinstance(doc, str):
            doc = Document(text=doc)
        elif not isinstance(doc, Document):
            raise TypeError(f"expected pathrag.Document or str, got {type(doc).__name__}")
        try:
            json.dumps(doc.metadata)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"document metadata must be JSON-serialisable: {exc}") from exc
        if doc.chunk_texts() or doc.id is not None:  # an emptied document with an id removes it
            out.append(doc)
    return out


VECTOR_BATCH = 256
"""Items per vector upsert: keeps each embedding request a sensible size."""


async def aput_vectors(index: VectorIndex, items: Sequence[VectorItem],
                       vectors: Mapping[str, Sequence[float]] | None = None) -> int:
    """Upsert ``items``: those with a vector in ``vectors`` stored as given (no embedding), the rest
    embedded, :data:`VECTOR_BATCH` at a time. Returns how many reused a vector.

    >>> from pathrag import HashingEmbedder, InMemoryVectorIndex
    >>> index = InMemoryVectorIndex(HashingEmbedder(8))
    >>> asyncio.run(aput_vectors(index, [VectorItem("a", "x"), VectorItem("b", "y")], {"a": [1.0] * 8}))
    1

    Raises:
        TypeError: ``vectors`` for an index without ``upsert_vectors``.
    """
    vectors = vectors or {}
    known = [item for item in items if item.id in vectors]
    fresh = [item for item in items if item.id not in vectors]
    if known and not hasattr(index, "upsert_vectors"):
        raise TypeError(f"reusing vectors needs a vector index with upsert_vectors(), not {type(index).__name__}")
    for start in range(0, len(known), VECTOR_BATCH):
        batch = known[start : start + VECTOR_BATCH]
        index.upsert_vectors(batch, [list(map(float, vectors[item.id])) for item in batch])  # type: ignore[attr-defined]
    for start in range(0, len(fresh), VECTOR_BATCH):
        await index.aupsert(fresh[start : start + VECTOR_BATCH])
    return len(known)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from sync code: directly when no loop is running, else on a private thread.

    Library code must never call ``asyncio.run`` inside a caller's running loop (it raises), and
    blocking that loop would deadlock on work scheduled in it.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc

    worker = threading.Thread(target=target, name="pathrag-sync")
    worker.start()
    worker.join()
    if "error" in result:
        raise result["error"]
    return result["value"]
