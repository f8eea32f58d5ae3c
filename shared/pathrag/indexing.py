"""The indexing pipeline: documents → chunks → LLM extraction → merged graph and vector indexes.

:class:`PathRAGIndex` keeps a knowledge graph (any :class:`~pathrag.GraphStore`), three vector indexes
(entities, relations, chunks) and, under one directory, the chunk records and an LLM answer cache.

Every entity and relation is a pure function of the extraction records of the chunks that mention
it (see :mod:`pathrag.merging`). Insert and delete therefore just change the set of live chunks and
rebuild what they touch, which makes both idempotent: re-running an interrupted insert completes it,
and ``insert(A); insert(B); delete(B)`` leaves exactly what ``insert(A)`` alone leaves.

Crash safety: each chunk's extraction is journalled the moment it finishes, and the LLM cache too,
so a re-run after a crash (even ``kill -9``) re-extracts only chunks whose results were not saved.
Snapshots (graph, vectors, documents) are replaced atomically; the document table is written last.

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
import functools
import hashlib
import json
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential
from tqdm.auto import tqdm

from .extraction import ExtractionConfig, extract_records
from .graph import GraphStore, NetworkXGraphStore
from .llm import LanguageModel, as_language_model
from .merging import merge_entity, merge_relation, relation_key
from .models import Entity, Relation
from .prompts import build_summary_prompt
from .retrieval import RetrievalResult, aretrieve, retrieve
from .storage import Journal, read_json, write_json
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
    "run_sync",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")

STATE_FILE = "documents.json"
CHUNKS_FILE = "chunks.jsonl"
CACHE_FILE = "llm_cache.jsonl"
VECTOR_FILES = {"entities": "entities.vectors.json", "relations": "relations.vectors.json",
                "chunks": "chunks.vectors.json"}


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def chunk_id(text: str) -> str:
    """Content id of a chunk: the same text always gets the same id."""
    return f"chunk-{_digest(text)}"


def entity_vector_id(name: str) -> str:
    return f"ent-{_digest(name)}"


def relation_vector_id(key: tuple[str, str]) -> str:
    return f"rel-{_digest(*key)}"


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
    graph store. Reopening a directory reloads everything it holds.
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
    ) -> None:
        self.config = config or IndexConfig()
        self.directory = Path(directory) if directory is not None else None
        self.llm = as_language_model(llm) if llm is not None else None
        given = {"entities": entity_index, "relations": relation_index, "chunks": chunk_index}
        if embedder is None and any(v is None for v in given.values()):
            raise ValueError("pass an embedder, or all three of entity_index, relation_index and chunk_index")
        self.vector_indexes: dict[str, VectorIndex] = {
            name: index if index is not None else InMemoryVectorIndex(embedder)  # type: ignore[arg-type]
            for name, index in given.items()
        }
        self._owns_graph = graph is None
        if graph is None:
            graph = (NetworkXGraphStore.load(self.directory) if self.directory else NetworkXGraphStore())
            graph.directed_relations = self.config.directed_relations
        self.graph = graph
        self.documents: dict[str, dict[str, Any]] = {}
        self.chunks: dict[str, dict[str, Any]] = {}
        self.summaries: dict[str, str] = {}  # kept apart from the optional cache: deletes must not pay
        self._cache: dict[str, str] = {}
        self._chunk_journal = Journal(self.directory / CHUNKS_FILE) if self.directory else None
        self._cache_journal = Journal(self.directory / CACHE_FILE) if self.directory else None
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._line_tokens = functools.lru_cache(maxsize=8192)(
            lambda line: count_tokens(line, self.config.token_counter))
        if self.directory is not None:
            self._load()

    # -- public API --------------------------------------------------------------------------------

    def _operation_lock(self) -> asyncio.Lock:
        """One insert or delete at a time (per event loop: the sync twins each run their own loop)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

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
        async with self._operation_lock():
            return await self._insert(_as_documents(documents))

    def insert(self, documents: Iterable[Document | str]) -> InsertSummary:
        """Sync twin of :meth:`ainsert` (safe to call from inside a running event loop)."""
        return run_sync(self.ainsert(documents))

    async def adelete(self, document_ids: Iterable[str]) -> DeleteSummary:
        """Remove documents; what only they supported disappears, the rest is rebuilt without an LLM
        (except to summarise a merged description never summarised before)."""
        if isinstance(document_ids, str):
            document_ids = [document_ids]
        async with self._operation_lock():
            return await self._delete(list(document_ids))

    def delete(self, document_ids: Iterable[str]) -> DeleteSummary:
        """Sync twin of :meth:`adelete`."""
        return run_sync(self.adelete(document_ids))

    async def aadd_records(
        self, document_id: str, entities: Sequence[Entity], relations: Sequence[Relation]
    ) -> InsertSummary:
        """Add records extracted elsewhere (an imported graph, say) as document ``document_id``, without LLM.

        They merge with extracted records by the same rules, survive later inserts and deletes of other
        documents, and go away with ``delete([document_id])``. Adding again under the same id replaces them.
        """
        if not isinstance(document_id, str) or not document_id.strip():
            raise ValueError("document_id must be a non-empty string")
        async with self._operation_lock():
            entity_rows = [e.model_dump(mode="json") for e in entities]
            relation_rows = [r.model_dump(mode="json") for r in relations]
            content = _digest(document_id, json.dumps([entity_rows, relation_rows], sort_keys=True))
            old = self.documents.get(document_id)
            if old is not None and old["hash"] == content:
                return InsertSummary(unchanged=1)
            released = self._unref(document_id, old["chunks"]) if old is not None else set()
            cid = f"records-{content}"
            self._store_chunk(cid, "", entity_rows, relation_rows)["refs"][document_id] = 0
            self.documents[document_id] = {"hash": content, "chunks": [cid], "metadata": {"records": True},
                                           "failed": []}
            released.discard(cid)
            run = _Run(self.config.max_concurrency)
            rebuilt = await self._rebuild([cid, *sorted(released)], run)
            await self._sync_chunk_vectors([], released)
            self._commit()
            return InsertSummary(documents=1, chunks=1, entities=len(rebuilt.entities),
                                 relations=len(rebuilt.relations), llm_calls=run.calls)

    def add_records(self, document_id: str, entities: Sequence[Entity], relations: Sequence[Relation]) -> InsertSummary:
        """Sync twin of :meth:`aadd_records`."""
        return run_sync(self.aadd_records(document_id, entities, relations))

    def retrieve(self, query: str, *, keyword_llm: bool = True, **params: Any) -> RetrievalResult:
        """Key paths for ``query`` from this index (see :func:`pathrag.retrieval.retrieve`).

        The index's LLM extracts the query keywords unless ``keyword_llm=False``.
        """
        return retrieve(query, graph=self.graph, entity_index=self.entity_index,
                        llm=self.llm if keyword_llm else None, **params)

    async def aretrieve(self, query: str, *, keyword_llm: bool = True, **params: Any) -> RetrievalResult:
        """Async twin of :meth:`retrieve`."""
        return await aretrieve(query, graph=self.graph, entity_index=self.entity_index,
                               llm=self.llm if keyword_llm else None, **params)

    def save(self, directory: str | os.PathLike[str] | None = None) -> None:
        """Write a complete snapshot atomically, file by file, to ``directory`` (default: the index's own).

        Inserts and deletes already save to the index's own directory; another directory gets a copy
        (cache included) that ``PathRAGIndex(directory, ...)`` reopens. The index keeps its own directory.
        """
        target = Path(directory) if directory is not None else self.directory
        if target is None:
            raise ValueError("this index has no directory: call save(directory)")
        self._save(target)

    def close(self) -> None:
        for journal in (self._chunk_journal, self._cache_journal):
            if journal is not None:
                journal.close()

    def stats(self) -> dict[str, int]:
        live = [c for c in self.chunks.values() if c["refs"]]
        return {"documents": len(self.documents), "chunks": len(live),
                **({"entities": len(self.graph.graph), "relations": self.graph.graph.number_of_edges()}
                   if isinstance(self.graph, NetworkXGraphStore) else {})}

    # -- insert ------------------------------------------------------------------------------------

    async def _insert(self, documents: list[Document]) -> InsertSummary:
        summary = InsertSummary()
        run = _Run(self.config.max_concurrency)
        todo: dict[str, tuple[Document, str, dict[str, str]]] = {}  # id -> (doc, content hash, chunk id -> text)
        for doc in documents:
            content = doc.content_hash()
            doc_id = doc.id or f"doc-{content}"
            known = self.documents.get(doc_id)
            if doc_id in todo or (known and known["hash"] == content and not known["failed"]):
                summary.unchanged += 1
                continue
            todo[doc_id] = (doc, content, {chunk_id(t): t for t in doc.chunk_texts()})
        # Chunks in document order; ones already extracted (now or before a crash) are not paid again.
        planned: dict[str, tuple[str, list[str]]] = {}
        for doc_id, (_, _, chunks) in todo.items():
            for cid, text in chunks.items():
                planned.setdefault(cid, (text, []))[1].append(doc_id)
        missing = [cid for cid in planned if cid not in self.chunks]
        failed = await self._extract_all({cid: planned[cid] for cid in missing}, run, summary)

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
            self.documents[doc_id] = {"hash": content, "chunks": chunk_ids, "metadata": doc.metadata,
                                      "failed": sorted(c for c in chunk_ids if c in failed)}
            summary.documents += 1
        summary.chunks = len(dict.fromkeys(touched_chunks))
        released -= set(touched_chunks)
        rebuilt = await self._rebuild(touched_chunks + sorted(released), run)
        summary.entities, summary.relations = len(rebuilt.entities), len(rebuilt.relations)
        await self._sync_chunk_vectors(newly_live, released)
        self._commit()
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
        released: set[str] = set()
        for doc_id in dict.fromkeys(document_ids):
            doc = self.documents.pop(doc_id, None)
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
        self._commit()
        summary.llm_calls = run.calls
        return summary

    def _store_chunk(
        self, cid: str, text: str, entities: list[dict[str, Any]], relations: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """Keep a chunk's extraction records and journal them at once (no document claims it yet)."""
        record = {"id": cid, "text": text, "entities": entities, "relations": relations}
        if self._chunk_journal is not None:
            self._chunk_journal.append(record)
        self.chunks[cid] = {**record, "refs": {}}
        return self.chunks[cid]

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

    def _ordered_live_chunks(self) -> list[dict[str, Any]]:
        """Live chunks in a stable order: by document (sorted id), then position in it."""
        order = {cid: (doc_id, position) for cid, chunk in self.chunks.items() if chunk["refs"]
                 for doc_id, position in [min(chunk["refs"].items())]}
        return [self.chunks[cid] for cid in sorted(order, key=order.__getitem__)]

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
        for chunk in self._ordered_live_chunks():
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
        await self.chunk_index.aupsert([
            VectorItem(cid, self.chunks[cid]["text"], {"chunk_id": cid}) for cid in dict.fromkeys(added)])
        for cid in gone:
            self.chunks.pop(cid, None)

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
            self._cache[key] = answer
            if self._cache_journal is not None:
                self._cache_journal.append({"key": key, "answer": answer})
        return answer

    # -- persistence -------------------------------------------------------------------------------

    def _load(self) -> None:
        assert self.directory is not None
        state = read_json(self.directory / STATE_FILE, {})
        self.documents = state.get("documents", {})
        self.summaries = state.get("summaries", {})
        for record in self._chunk_journal.read() if self._chunk_journal else ():
            if "id" in record and "entities" in record:
                self.chunks[record["id"]] = {**record, "refs": {}}
        # The document table is the commit record: it alone says which chunks are live.
        for doc_id, doc in self.documents.items():
            for position, cid in enumerate(doc["chunks"]):
                if cid in self.chunks:
                    self.chunks[cid]["refs"][doc_id] = position
        if self.config.cache and self._cache_journal is not None:
            self._cache = {r["key"]: r["answer"] for r in self._cache_journal.read() if "key" in r}
        for name, index in self.vector_indexes.items():
            if isinstance(index, InMemoryVectorIndex):
                index.load(self.directory / VECTOR_FILES[name])

    def _commit(self) -> None:
        if self.directory is not None:
            self._save(self.directory)

    def _save(self, target: Path) -> None:
        target.mkdir(parents=True, exist_ok=True)
        own = self.directory is not None and target.resolve() == self.directory.resolve()
        # compaction keeps live chunks and extractions that no document claims yet (a failed run's)
        chunks = ({k: v for k, v in c.items() if k != "refs"} for c in self.chunks.values())
        (self._chunk_journal if own and self._chunk_journal else Journal(target / CHUNKS_FILE)).rewrite(chunks)
        if not own and self.config.cache:
            Journal(target / CACHE_FILE).rewrite({"key": k, "answer": a} for k, a in self._cache.items())
        for name, index in self.vector_indexes.items():
            if isinstance(index, InMemoryVectorIndex):
                index.save(target / VECTOR_FILES[name])
        if self._owns_graph and isinstance(self.graph, NetworkXGraphStore):
            self.graph.save(target)
        # the document table is the commit record: written last
        write_json(target / STATE_FILE, {"version": 1, "documents": self.documents, "summaries": self.summaries})


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
        if doc.chunk_texts():
            out.append(doc)
    return out


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
