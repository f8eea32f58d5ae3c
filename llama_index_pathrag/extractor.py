"""``PathRAGExtractor``: pathrag's extraction as a ``PropertyGraphIndex`` kg extractor, with merging and deletes.

Each chunk is extracted by the core's extractor (``extractor=``: the compact prompt by default, small chunks packed
into one call with ``config.pack_tokens``, see :mod:`pathrag.index.packing`; ``"llm"``: the paper's prompt and
gleaning; ``"lexical"``: no model) through any LlamaIndex LLM, ``num_workers`` calls at a time. The records are
then merged by the core's rules (:mod:`pathrag.index.merging`): descriptions joined without repeats, the most
frequent type, summed weights, united keywords; relations are undirected (A→B and B→A are one relation, first
direction kept).

Provenance, as in the core: every entity and relation keeps the records it was merged from, chunk by chunk,
in its property ``pathrag_sources`` (JSON: chunk id, document id, records), and every chunk lists in its
metadata ``pathrag_extracted`` (JSON; hidden from the LLM and from embeddings) the entities and relations
its records touched. An entity or relation is always the merge of the records of its live chunks, so:

* within one call (one insert), every entity and relation is emitted once, already merged, in the
  metadata of the first chunk that mentions it (LlamaIndex stores do not merge: within an insert the last
  duplicate wins, across inserts the first);
* with ``graph_store=`` (the index's store), stored entities and relations that the new records touch are
  re-merged and written to the store directly (LlamaIndex would skip them); only new ones are emitted;
* a document re-inserted (the same ``ref_doc_id``) replaces its earlier version: records of its chunks
  that are not in the new call are dropped, and what only they supported is deleted;
* ``index.delete_ref_doc(doc_id)`` works: LlamaIndex deletes a document's chunks with
  ``graph_store.delete(ids=[chunk id])``, and the extractor hooks that method of the store it is given.
  Before the store deletes, the records of that chunk's whole document are dropped and every entity and
  relation they touched is re-merged from the records left (deleted when none are). No LLM call. Whole
  documents, because LlamaIndex may skip chunks (see :meth:`PathRAGExtractor._aforget_documents_of`);
  :meth:`PathRAGExtractor.delete_sources` drops single chunks.

Entities and relations stored before this provenance existed (or by other extractors) count as one record
that no delete removes. Entity embeddings are LlamaIndex's, written at an entity's first insert; with
``embed_model=`` the extractor re-embeds entities whose description changes later, and an entity that
disappears has its embedding removed from ``vector_store=`` when given (stores with their own vector
search, such as FalkorDB's, drop it with the node).

Emitted entities are ``EntityNode`` (label = type, property ``description``) and relations ``Relation``
(label ``RELATED_TO``; properties ``description``, ``keywords``, ``weight``, ``source_ids``).

Model output is untrusted: malformed records are skipped (the parser never raises), records naming what their
chunk never spells (a model parroting the prompt's examples, as ``MockLLM`` does) are dropped (see
:mod:`pathrag.index.grounding`), and the records over a chunk's cap (:func:`pathrag.index.extraction.max_records_for`)
are dropped; all are counted in the log and in the chunk's ``pathrag_extracted`` metadata (``skipped``,
``ungrounded``, ``dropped``). Every call asks for at most ``config.max_answer_tokens`` tokens (``max_tokens``, for
an LLM that has that setting). A failing LLM call fails the whole call before anything is written (LlamaIndex LLM
clients retry on their own).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from llama_index.core.async_utils import run_jobs
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    TRIPLET_SOURCE_KEY,
    VECTOR_SOURCE_KEY,
    ChunkNode,
    EntityNode,
    LabelledNode,
    PropertyGraphStore,
)
from llama_index.core.graph_stores.types import Relation as StoreRelation
from llama_index.core.llms import LLM
from llama_index.core.schema import BaseNode, MetadataMode, TextNode, TransformComponent
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from typing_extensions import override

from pathrag import Entity, Relation
from pathrag.index.extraction import ChunkExtraction, ExtractionConfig, ExtractionResult, max_records_for
from pathrag.index.extractors import as_extractor
from pathrag.index.front import run_sync
from pathrag.index.merging import merge_records, relation_key

from .graph import (
    PropertyGraphStoreAdapter,
    entity_from_node,
    entity_id,
    entity_to_node,
    relation_from_store,
    relation_to_store,
)

__all__ = ["EXTRACTED_KEY", "SOURCES_KEY", "PathRAGExtractor"]

logger = logging.getLogger(__name__)

#: Property of entities and relations: the records they are merged from, chunk by chunk (JSON).
SOURCES_KEY = "pathrag_sources"
#: Metadata of chunks: the entities and relations their records touched (JSON), and the malformed records
#: ``skipped``, the records naming what the chunk never spells ``ungrounded`` and the records over the per-chunk
#: cap ``dropped`` when there were any.
EXTRACTED_KEY = "pathrag_extracted"

Key = tuple[str, str]


@dataclass
class _Source:
    """The records one chunk contributed to one entity or relation.

    ``chunk`` is ``""`` for an item stored without provenance (it then stands for one record no delete
    removes). ``endpoint``: the chunk names the entity as a relation endpoint.
    """

    chunk: str
    doc: str | None
    records: list[Any] = field(default_factory=list)  # Entity or Relation
    endpoint: bool = False
    legacy: bool = False


def _dump(sources: Sequence[_Source], drop: set[str]) -> str:
    rows = []
    for s in sources:
        rows.append(
            {
                "chunk": s.chunk,
                "doc": s.doc,
                "endpoint": s.endpoint,
                "records": [r.model_dump(mode="json", exclude=drop) for r in s.records],
            }
        )
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))


def _parse(raw: Any, what: str) -> list[dict[str, Any]] | None:
    if not isinstance(raw, str):
        return None
    try:
        rows = json.loads(raw)
    except ValueError:
        logger.warning("%s: unreadable %s property, treated as one record", what, SOURCES_KEY)
        return None
    return rows if isinstance(rows, list) else None


def _rows_to_sources(
    rows: list[dict[str, Any]] | None, make: Callable[[dict[str, Any], str], Any], what: str
) -> list[_Source] | None:
    """Sources from stored rows; ``None`` (treat the item as one record) when they do not read."""
    if rows is None:
        return None
    try:
        return [
            _Source(
                str(row["chunk"]),
                row.get("doc"),
                [make(record, str(row["chunk"])) for record in row["records"]],
                endpoint=bool(row.get("endpoint")),
            )
            for row in rows
        ]
    except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        logger.warning("%s: unreadable %s property (%s), treated as one record", what, SOURCES_KEY, exc)
        return None


def _entity_sources(node: LabelledNode) -> list[_Source]:
    sources = _rows_to_sources(
        _parse(node.properties.get(SOURCES_KEY), node.id),
        lambda record, chunk: Entity(name=node.id, source_ids=(chunk,) if chunk else (), **record),
        node.id,
    )
    if sources is None:  # stored without provenance: the whole item is one record
        return [_Source("", None, [entity_from_node(node)], legacy=True)]
    return sources


def _relation_sources(relations: Sequence[StoreRelation]) -> list[_Source]:
    out: list[_Source] = []
    for relation in relations:  # normally one; a store holding both directions gives two
        what = f"{relation.source_id} -> {relation.target_id}"
        sources = _rows_to_sources(
            _parse(relation.properties.get(SOURCES_KEY), what),
            lambda record, chunk: Relation(source_ids=(chunk,) if chunk else (), **record),
            what,
        )
        out += sources if sources is not None else [_Source("", None, [relation_from_store(relation)], legacy=True)]
    return out


def _without_repeats(sources: Sequence[_Source]) -> list[Any]:
    """All records in order. A legacy item's description is already a join, so a later description it
    contains verbatim adds nothing (the parts were never stored)."""
    seen = " ".join(r.description for s in sources if s.legacy for r in s.records)
    out = []
    for s in sources:
        for r in s.records:
            out.append(
                r if s.legacy or not seen or r.description not in seen else r.model_copy(update={"description": ""})
            )
    return out


def _merge(
    entities: Mapping[str, Sequence[_Source]], relations: Mapping[Key, Sequence[_Source]]
) -> tuple[dict[str, Entity], dict[Key, Relation]]:
    """Each entity and relation merged from its sources by the core's rules
    (:func:`pathrag.index.merging.merge_records`). An entity without records or a live chunk naming it as a
    relation end, or a relation without records, is left out: it is gone."""
    endpoints = {
        name: chunks
        for name, sources in entities.items()
        if (chunks := [s.chunk for s in sources if s.endpoint and s.chunk])
    }
    merged_entities, merged_relations = merge_records(
        [r for sources in entities.values() for r in _without_repeats(sources)],
        [r for sources in relations.values() for r in _without_repeats(sources)],
        endpoint_sources=endpoints,
    )
    return {e.name: e for e in merged_entities}, {relation_key(r.source, r.target): r for r in merged_relations}


def _first_chunk(sources: Sequence[_Source]) -> str | None:
    return next((s.chunk for s in sources if s.chunk), None)


@dataclass
class _Batch:
    """The sources one call contributes, in chunk order, and where each item is first mentioned."""

    entities: dict[str, list[_Source]] = field(default_factory=dict)
    relations: dict[Key, list[_Source]] = field(default_factory=dict)
    home: dict[object, int] = field(default_factory=dict)


@dataclass
class _Written:
    """What a reconciliation leaves for LlamaIndex to insert: new entities and relations, by name / key."""

    entities: dict[str, EntityNode] = field(default_factory=dict)
    relations: dict[Key, StoreRelation] = field(default_factory=dict)


def _replaced_chunks(batch: _Batch, dropped: Sequence[LabelledNode]) -> set[str]:
    """The chunks whose stored sources go: the dropped ones, and the batch's own (re-extracted)."""
    return (
        {n.id for n in dropped}
        | {s.chunk for sources in batch.entities.values() for s in sources}
        | {s.chunk for sources in batch.relations.values() for s in sources}
    )


def _touched_items(batch: _Batch, dropped: Sequence[LabelledNode]) -> tuple[list[str], list[Key]]:
    """The entities and relations to re-merge: the batch's, then those the dropped chunks touched."""
    touched_names, touched_keys = _touched(dropped)
    names = list(dict.fromkeys([*batch.entities, *touched_names]))
    return names, list(dict.fromkeys([*batch.relations, *touched_keys]))


@dataclass
class _Stored:
    """The stored entities and relations a reconciliation re-merges (none without a store)."""

    nodes: dict[str, LabelledNode] = field(default_factory=dict)
    relations: dict[Key, list[StoreRelation]] = field(default_factory=dict)

    @classmethod
    async def load(cls, adapter: PropertyGraphStoreAdapter | None, names: list[str], keys: list[Key]) -> _Stored:
        if adapter is None:
            return cls()
        nodes = await adapter.store.aget(ids=names) if names else []
        return cls(
            {n.id: n for n in nodes if isinstance(n, EntityNode)},
            await adapter.aget_store_relations(keys),
        )

    def live_sources(
        self, names: list[str], keys: list[Key], batch: _Batch, replaced: set[str]
    ) -> tuple[dict[str, list[_Source]], dict[Key, list[_Source]]]:
        """Each item's sources: the stored ones of chunks not ``replaced``, then the batch's."""
        entities = {name: [*self._kept(name, replaced), *batch.entities.get(name, [])] for name in names}
        relations = {
            key: [
                *(s for s in _relation_sources(self.relations.get(key, [])) if s.chunk not in replaced),
                *batch.relations.get(key, []),
            ]
            for key in keys
        }
        return entities, relations

    def _kept(self, name: str, replaced: set[str]) -> list[_Source]:
        node = self.nodes.get(name)
        return [] if node is None else [s for s in _entity_sources(node) if s.chunk not in replaced]


def _with_provenance(props: dict[str, Any], sources: Sequence[_Source]) -> dict[str, Any]:
    """``props`` pointing LlamaIndex's provenance at a live chunk (FalkorDB links it with MENTIONS)."""
    first = _first_chunk(sources)
    return {**props, **({TRIPLET_SOURCE_KEY: first} if first else {})}


@dataclass
class _Changes:
    """What a reconciliation changes in the store, and what it leaves for LlamaIndex to insert (``written``)."""

    written: _Written = field(default_factory=_Written)
    gone_entities: list[str] = field(default_factory=list)
    updated: list[Entity] = field(default_factory=list)
    entity_props: dict[str, dict[str, Any]] = field(default_factory=dict)
    gone_relations: list[Key] = field(default_factory=list)
    replaced: list[Relation] = field(default_factory=list)
    relation_props: dict[Key, dict[str, Any]] = field(default_factory=dict)

    def entity(
        self, name: str, node: LabelledNode | None, sources: Sequence[_Source], merged: Entity | None, batch: _Batch
    ) -> None:
        """One entity's change: gone, new (emitted when the batch mentions it), updated, or none."""
        props = {SOURCES_KEY: _dump(sources, {"name", "source_ids"})}
        if merged is None:
            if node is not None:
                self.gone_entities.append(name)
        elif node is None:
            if name in batch.entities:
                self.written.entities[name] = entity_to_node(merged, props)
        elif props[SOURCES_KEY] != node.properties.get(SOURCES_KEY) or _described(merged) != _described(
            entity_from_node(node)
        ):
            self.updated.append(merged)
            self.entity_props[name] = _with_provenance(props, sources)

    def relation(
        self,
        key: Key,
        stored: Sequence[StoreRelation],
        sources: Sequence[_Source],
        merged: Relation | None,
        batch: _Batch,
    ) -> None:
        """One relation's change: gone, new (emitted when the batch mentions it), replaced, or none."""
        props = {SOURCES_KEY: _dump(sources, {"source_ids"})}
        if merged is None:
            if stored:
                self.gone_relations.append(key)
        elif not stored:
            if key in batch.relations:
                self.written.relations[key] = relation_to_store(merged, properties=props)
        elif (
            len(stored) > 1
            or props[SOURCES_KEY] != stored[0].properties.get(SOURCES_KEY)
            or merged != relation_from_store(stored[0])
        ):
            self.replaced.append(merged)
            self.relation_props[merged.pair] = _with_provenance(props, sources)
            if len(stored) > 1 or (stored[0].source_id, stored[0].target_id) != merged.pair:
                self.gone_relations.append(key)  # the direction changed: some stores would keep both


def _described(entity: Entity) -> tuple[str, str]:
    return entity.type, entity.description


class PathRAGExtractor(TransformComponent):
    """Extract entities and relations with pathrag's prompt, merged by pathrag's rules (see the module doc).

    >>> from llama_index.core.graph_stores import SimplePropertyGraphStore
    >>> from llama_index.core.llms import MockLLM
    >>> store = SimplePropertyGraphStore()
    >>> extractor = PathRAGExtractor(llm=MockLLM(), graph_store=store, num_workers=2)
    >>> extractor.num_workers, extractor.config.max_gleaning
    (2, 1)

    Use it as ``PropertyGraphIndex.from_documents(docs, property_graph_store=store,
    kg_extractors=[extractor], embed_model=...)``. With ``graph_store`` (the index's store) it merges with
    what is stored and makes ``index.delete_ref_doc`` remove what only that document supported: it hooks
    ``graph_store.delete`` (see the module doc). ``vector_store``: where ``PropertyGraphIndex`` keeps entity
    embeddings (pass the same one to the index), so that deleted entities lose theirs too. ``embed_model``
    (the index's): entities whose description changes after their first insert are re-embedded, in the
    graph store when it has its own vector search, else in ``vector_store``; without it they keep the
    embedding of their first insert. ``extractor``: ``"llm"`` (pathrag's prompt), ``"compact"`` (its short
    prompt, :mod:`pathrag.index.compact`) or ``"lexical"`` (no model at all: ``llm`` is not needed nor resolved
    from ``Settings``; see :mod:`pathrag.index.lexical`).
    """

    llm: LLM | None
    config: ExtractionConfig = Field(default_factory=ExtractionConfig)
    extractor: str = Field(
        default="compact", description="'compact', 'llm' (the paper's prompt) or 'lexical' (no model)."
    )
    num_workers: int = Field(default=4, ge=1, description="Extraction calls at the same time.")
    show_progress: bool = False
    graph_store: PropertyGraphStore | None = Field(
        default=None, exclude=True, description="The index's store, to merge with what is already stored."
    )
    vector_store: BasePydanticVectorStore | None = Field(
        default=None, exclude=True, description="The index's vector store of entity embeddings, to clean on delete."
    )
    embed_model: BaseEmbedding | None = Field(
        default=None, exclude=True, description="The index's embed model, to re-embed entities whose text changes."
    )

    def __init__(
        self,
        llm: LLM | None = None,
        *,
        graph_store: PropertyGraphStore | None = None,
        vector_store: BasePydanticVectorStore | None = None,
        embed_model: BaseEmbedding | None = None,
        config: ExtractionConfig | None = None,
        num_workers: int = 4,
        show_progress: bool = False,
        extractor: str = "compact",
    ) -> None:
        from llama_index.core import Settings  # resolved lazily: the default needs OpenAI

        if graph_store is not None and not isinstance(graph_store, PropertyGraphStore):
            raise TypeError(f"graph_store must be a llama_index PropertyGraphStore, got {type(graph_store).__name__}")
        # pydantic's __init__ takes every field; mypy reads TransformComponent's own fields only
        modelled = as_extractor(extractor).uses_llm  # a bad name is refused here, naming the parameter
        super().__init__(  # type: ignore[call-arg]
            llm=llm or (Settings.llm if modelled else None),
            extractor=extractor,
            config=config or ExtractionConfig(),
            num_workers=num_workers,
            show_progress=show_progress,
            graph_store=graph_store,
            vector_store=vector_store,
            embed_model=embed_model,
        )
        if graph_store is not None:
            if PropertyGraphStoreAdapter(graph_store).deletes_relations:
                _hook_deletes(graph_store, self)
            else:
                logger.warning(
                    "%s cannot delete single relations: index.delete_ref_doc will not remove what "
                    "PathRAGExtractor extracted from that document",
                    type(graph_store).__name__,
                )

    @classmethod
    @override
    def class_name(cls) -> str:
        return "PathRAGExtractor"

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Sync twin of :meth:`acall` (safe inside a running event loop)."""
        return run_sync(self.acall(nodes, **kwargs))

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Extract every node, merge, and append the results to ``metadata["nodes"]`` / ``["relations"]``."""
        nodes = list(nodes)
        results = await self._extract_all(nodes)
        batch = self._batch(nodes, results)
        written = await self._reconcile(batch, await self._stale_chunks(nodes, batch))
        emitted: list[tuple[list[EntityNode], list[StoreRelation]]] = [([], []) for _ in nodes]
        for name, node in written.entities.items():
            emitted[batch.home[name]][0].append(node)
        for key, relation in written.relations.items():
            emitted[batch.home[key]][1].append(relation)
        for chunk, (entities, relations) in zip(nodes, emitted, strict=True):
            # chained extractors append to what earlier ones left
            chunk.metadata[KG_NODES_KEY] = [*(chunk.metadata.get(KG_NODES_KEY) or []), *entities]
            chunk.metadata[KG_RELATIONS_KEY] = [*(chunk.metadata.get(KG_RELATIONS_KEY) or []), *relations]
        return nodes

    async def _ask(self, prompt: str) -> str:
        assert self.llm is not None  # set unless the extractor is lexical, which asks nothing
        if "max_tokens" in type(self.llm).model_fields:  # OpenAI, OpenAILike...: the output cap, per call
            return (await self.llm.acomplete(prompt, max_tokens=self.config.max_answer_tokens)).text
        return (await self.llm.acomplete(prompt)).text

    async def _extract_all(self, nodes: list[BaseNode]) -> list[ExtractionResult]:
        """The records of every node, in order: the extractor's calls (several small chunks in one, for the
        compact prompt) ``num_workers`` at a time; an empty chunk has none, a failed call fails them all."""
        extractor = as_extractor(self.extractor)
        texts = [node.get_content(metadata_mode=MetadataMode.LLM) for node in nodes]
        chunks = [(node.node_id, text) for node, text in zip(nodes, texts, strict=True) if text.strip()]
        ask = self._ask if self.llm is not None else None
        calls = extractor.packs(chunks, self.config)
        answered = await run_jobs(
            [extractor.extract_pack(pack, ask, self.config) for pack in calls],
            workers=self.num_workers,
            show_progress=self.show_progress,
            desc="PathRAG extraction",
        )
        found = iter([done for results in answered for done in results])  # in the chunks' order
        return [
            self._kept(node.node_id, text, next(found)) if text.strip() else ExtractionResult()
            for node, text in zip(nodes, texts, strict=True)
        ]

    @staticmethod
    def _kept(node_id: str, text: str, done: ChunkExtraction | Exception) -> ExtractionResult:
        """One chunk's records, its failure raised (the whole call fails before anything is written)."""
        if isinstance(done, Exception):
            raise done
        skipped, dropped, ungrounded = done.result.skipped, done.result.dropped, done.result.ungrounded
        if skipped or dropped or ungrounded:  # (the extraction also warns of dropped records)
            logger.info(
                "chunk %s: %d malformed records skipped, %d naming what the chunk never spells and %d over the "
                "cap of %d per chunk dropped",
                node_id,
                skipped,
                ungrounded,
                dropped,
                max_records_for(text),
            )
        return done.result

    @staticmethod
    def _batch(nodes: list[BaseNode], results: list[ExtractionResult]) -> _Batch:
        """Group the records by entity and relation, chunk by chunk; note what each chunk touched."""
        batch = _Batch()
        for i, (node, result) in enumerate(zip(nodes, results, strict=True)):
            doc = node.ref_doc_id
            entities: dict[str, _Source] = {}
            relations: dict[Key, _Source] = {}
            for e in result.entities:
                name = entity_id(e.name)  # the store's key for the name
                entities.setdefault(name, _Source(node.node_id, doc)).records.append(
                    e.model_copy(update={"name": name})
                )
            for r in result.relations:
                r = r.model_copy(update={"source": entity_id(r.source), "target": entity_id(r.target)})
                relations.setdefault(relation_key(r.source, r.target), _Source(node.node_id, doc)).records.append(r)
                for end in r.pair:
                    entities.setdefault(end, _Source(node.node_id, doc)).endpoint = True
            for name, source in entities.items():
                batch.entities.setdefault(name, []).append(source)
                batch.home.setdefault(name, i)
            for key, source in relations.items():
                batch.relations.setdefault(key, []).append(source)
                batch.home.setdefault(key, i)
            counts = {
                k: n
                for k, n in (
                    ("skipped", result.skipped),
                    ("ungrounded", result.ungrounded),
                    ("dropped", result.dropped),
                )
                if n
            }
            node.metadata[EXTRACTED_KEY] = json.dumps(
                {"entities": sorted(entities), "relations": sorted(relations), **counts}, ensure_ascii=False
            )
            for keys in (node.excluded_llm_metadata_keys, node.excluded_embed_metadata_keys):
                if EXTRACTED_KEY not in keys:
                    keys.append(EXTRACTED_KEY)
        return batch

    async def _chunks_of(self, docs: set[str]) -> list[ChunkNode]:
        """The stored chunks of these documents (by ``ref_doc_id``)."""
        store = self.graph_store
        if store is None or not docs:
            return []
        if isinstance(store, SimplePropertyGraphStore):  # one pass instead of one scan per document
            found: list[LabelledNode] = [
                n
                for n in store.graph.nodes.values()
                if isinstance(n, ChunkNode) and n.properties.get("ref_doc_id") in docs
            ]
        else:
            found = [n for doc in sorted(docs) for n in await store.aget(properties={"ref_doc_id": doc})]
        return [n for n in found if isinstance(n, ChunkNode)]

    async def _stale_chunks(self, nodes: list[BaseNode], batch: _Batch) -> list[ChunkNode]:
        """Stored chunks of the documents in this call that the call does not hold: an earlier version's."""
        current = {node.node_id for node in nodes}
        docs = {node.ref_doc_id for node in nodes} - {None}
        return [n for n in await self._chunks_of(docs) if n.id not in current]  # type: ignore[arg-type]

    async def _reconcile(self, batch: _Batch, dropped: Sequence[LabelledNode]) -> _Written:
        """Re-merge everything ``batch`` or the ``dropped`` chunks touch; write changes to the store.

        Sources of the dropped chunks and of the batch's own chunks (re-extracted) are replaced by the
        batch's. Returns the entities and relations that are new, for LlamaIndex to insert.
        """
        names, keys = _touched_items(batch, dropped)
        adapter = PropertyGraphStoreAdapter(self.graph_store) if self.graph_store is not None else None
        stored = await _Stored.load(adapter, names, keys)
        entity_sources, relation_sources = stored.live_sources(names, keys, batch, _replaced_chunks(batch, dropped))
        merged_entities, merged_relations = _merge(entity_sources, relation_sources)
        changes = _Changes()
        for name in names:
            changes.entity(name, stored.nodes.get(name), entity_sources[name], merged_entities.get(name), batch)
        for key in keys:
            changes.relation(
                key, stored.relations.get(key, []), relation_sources[key], merged_relations.get(key), batch
            )
        if adapter is not None:
            await self._apply(adapter, changes, stored)
        return changes.written

    async def _apply(self, adapter: PropertyGraphStoreAdapter, changes: _Changes, stored: _Stored) -> None:
        """Write a reconciliation's changes to the store (and the entity vectors kept outside it)."""
        gone_relations = changes.gone_relations
        if gone_relations and not adapter.deletes_relations:
            # inserts keep working on such stores; only replaced knowledge cannot be fully removed
            logger.warning(
                "%s cannot delete single relations: %d relation(s) no longer supported are kept",
                type(adapter.store).__name__,
                len(gone_relations),
            )
            gone_relations = []
        embeddings = await self._embed(  # the embedded text is the name and the description
            [e for e in changes.updated if e.description != entity_from_node(stored.nodes[e.name]).description]
        )
        in_store = adapter.store.supports_vector_queries
        await adapter.adelete_relations(gone_relations)
        await adapter.adelete_entities(changes.gone_entities)
        await adapter.aupsert_entities(
            changes.updated,
            properties=changes.entity_props,
            keep_label=False,
            embeddings=embeddings if in_store else None,
        )
        await adapter.aupsert_relations(changes.replaced, properties=changes.relation_props)
        if self.vector_store is not None and not in_store:
            await self._drop_vectors([*changes.gone_entities, *embeddings])
            if embeddings:
                nodes = [n for n in await adapter.store.aget(ids=list(embeddings)) if isinstance(n, EntityNode)]
                await self._add_vectors(nodes, embeddings)

    async def _embed(self, entities: list[Entity]) -> dict[str, list[float]]:
        """New embeddings of ``entities``, embedded as LlamaIndex embeds the nodes this extractor emits."""
        if self.embed_model is None or not entities:
            return {}
        texts = [str(entity_to_node(e)) for e in entities]
        vectors = await self.embed_model.aget_text_embedding_batch(texts)
        return {e.name: list(v) for e, v in zip(entities, vectors, strict=True)}

    async def _drop_vectors(self, names: list[str]) -> None:
        assert self.vector_store is not None
        if not names:
            return
        if self.vector_store.stores_text:  # nodes got their own ids: find them by the entity they hold
            await self.vector_store.adelete_nodes(
                filters=MetadataFilters(
                    filters=[MetadataFilter(key=VECTOR_SOURCE_KEY, value=names, operator=FilterOperator.IN)]
                )
            )
        else:  # PropertyGraphIndex gives each vector its entity's id
            await self.vector_store.adelete_nodes(node_ids=names)

    async def _add_vectors(self, nodes: list[EntityNode], embeddings: Mapping[str, list[float]]) -> None:
        """Entity vectors written as ``PropertyGraphIndex`` writes them (text, metadata, id)."""
        assert self.vector_store is not None
        rows = []
        for node in nodes:
            row = TextNode(
                text=str(entity_to_node(entity_from_node(node))),
                metadata={VECTOR_SOURCE_KEY: node.id, **node.properties},
                embedding=embeddings[node.id],
            )
            if not self.vector_store.stores_text:
                row.id_ = node.id
            rows.append(row)
        await self.vector_store.async_add(rows)

    async def adelete_sources(self, chunk_ids: Iterable[str]) -> None:
        """Drop the records of these chunks (LlamaIndex node ids) and re-merge, or delete, everything they
        touched, in ``graph_store``. The chunks themselves are left to the caller (LlamaIndex deletes them).

        Raises:
            ValueError: the extractor has no ``graph_store``.
        """
        if self.graph_store is None:
            raise ValueError("PathRAGExtractor needs graph_store= (the index's store) to delete from it")
        ids = [chunk_ids] if isinstance(chunk_ids, str) else list(dict.fromkeys(chunk_ids))
        if not ids:
            return
        # what each chunk touched is in its own metadata: a chunk no longer stored has nothing to drop
        chunks = [n for n in await self.graph_store.aget(ids=ids) if isinstance(n, ChunkNode)]
        if chunks:
            await self._reconcile(_Batch(), chunks)

    def delete_sources(self, chunk_ids: Iterable[str]) -> None:
        """Sync twin of :meth:`adelete_sources`."""
        run_sync(self.adelete_sources(chunk_ids))

    async def _aforget_documents_of(self, ids: list[str]) -> None:
        """What the store's ``delete(ids=...)`` hook does: the documents of the chunks among ``ids`` lose
        all their extracted knowledge, whole.

        Per document rather than per chunk because LlamaIndex does not delete a document's chunks
        reliably: ``delete_ref_doc(doc_id, delete_from_docstore=True)`` (llama-index-core 0.14) walks the
        document's chunk list while removing from it, so every other chunk is never deleted and never
        seen here. A chunk deleted on its own through ``index.delete_nodes`` therefore takes its
        document's knowledge with it (re-inserting the document restores it); use
        :meth:`delete_sources` to drop single chunks.
        """
        assert self.graph_store is not None
        chunks = [n for n in await self.graph_store.aget(ids=ids) if isinstance(n, ChunkNode)]
        if not chunks:
            return
        docs = {str(n.properties["ref_doc_id"]) for n in chunks if n.properties.get("ref_doc_id")}
        siblings = [n for n in await self._chunks_of(docs) if n.id not in {c.id for c in chunks}]
        await self._reconcile(_Batch(), [*chunks, *siblings])


def _touched(chunks: Sequence[LabelledNode]) -> tuple[list[str], list[Key]]:
    """The entities and relations the chunks' records touched, from their ``pathrag_extracted`` metadata."""
    names: dict[str, None] = {}
    keys: dict[Key, None] = {}
    for chunk in chunks:
        raw = chunk.properties.get(EXTRACTED_KEY)
        if not isinstance(raw, str):
            continue
        try:
            touched = json.loads(raw)
            names.update(dict.fromkeys(str(n) for n in touched.get("entities", ())))
            keys.update(dict.fromkeys((str(a), str(b)) for a, b in touched.get("relations", ())))
        except (ValueError, TypeError, AttributeError):
            logger.warning("chunk %s: unreadable %s metadata, its records stay", chunk.id, EXTRACTED_KEY)
    return list(names), list(keys)


_HOOK_ATTRIBUTE = "_pathrag_delete_hook"
_R = TypeVar("_R")


class _Hook(Generic[_R]):
    """A store method replaced on one store instance, and the extractor to tell first."""

    def __init__(self, original: Callable[..., _R], extractor: PathRAGExtractor) -> None:
        self.original = original
        self.extractor = extractor


class _DeleteHook(_Hook[None]):
    """Replaces ``delete`` on one store instance: drops the deleted chunks' records first, then deletes.

    LlamaIndex's ``delete_ref_doc`` deletes a document's chunks one ``delete(ids=[chunk id])`` at a time,
    and never tells an extractor; this is the one place that sees it. Other deletes pass through.
    """

    def __call__(
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        properties: dict[str, Any] | None = None,
        ids: list[str] | None = None,
    ) -> None:
        if ids:
            run_sync(self.extractor._aforget_documents_of(list(ids)))
        self.original(entity_names=entity_names, relation_names=relation_names, properties=properties, ids=ids)


class _AsyncDeleteHook(_Hook[Awaitable[None]]):
    """The same as :class:`_DeleteHook` for a store whose ``adelete`` does not go through ``delete``."""

    async def __call__(
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        properties: dict[str, Any] | None = None,
        ids: list[str] | None = None,
    ) -> None:
        if ids:
            await self.extractor._aforget_documents_of(list(ids))
        await self.original(entity_names=entity_names, relation_names=relation_names, properties=properties, ids=ids)


def _hook_deletes(store: PropertyGraphStore, extractor: PathRAGExtractor) -> bool:
    """Install (or re-point) the delete hook on ``store``; ``False`` when the store refuses attributes."""
    hooks = getattr(store, _HOOK_ATTRIBUTE, None)
    if isinstance(hooks, list):
        for hook in hooks:  # a newer extractor (e.g. after reloading the index) takes over
            hook.extractor = extractor
        return True
    try:
        delete_hook = _DeleteHook(store.delete, extractor)
        installed: list[_Hook[Any]] = [delete_hook]
        store.delete = delete_hook  # type: ignore[method-assign]
        if type(store).adelete is not PropertyGraphStore.adelete:  # the default adelete calls delete
            adelete_hook = _AsyncDeleteHook(store.adelete, extractor)
            installed.append(adelete_hook)
            store.adelete = adelete_hook  # type: ignore[method-assign]
        setattr(store, _HOOK_ATTRIBUTE, installed)
    except (AttributeError, TypeError, ValueError) as exc:
        logger.warning(
            "cannot hook %s.delete (%s): delete_ref_doc will not remove extracted knowledge; "
            "call PathRAGExtractor.delete_sources(chunk_ids) yourself",
            type(store).__name__,
            exc,
        )
        return False
    return True
