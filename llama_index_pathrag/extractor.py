"""``PathRAGExtractor``: pathrag's extraction as a ``PropertyGraphIndex`` kg extractor, with merging.

Each chunk is extracted with the core's prompt, parser and gleaning (:func:`pathrag.extraction.extract_records`)
through any LlamaIndex LLM, ``num_workers`` chunks at a time. The records are then merged by the core's rules
(:mod:`pathrag.merging`): descriptions joined without repeats, the most frequent type, summed weights,
united keywords; relations are undirected (A→B and B→A are one relation, first direction kept).

LlamaIndex stores do not merge (within one insert the last duplicate wins, across inserts the first), so:

* within one call (one insert), every entity and relation is emitted once, already merged, in the
  metadata of the first chunk that mentions it;
* with ``graph_store=`` (the index's store), entities and relations already stored are merged with the
  new records and written to the store directly (LlamaIndex would skip them), and only new ones are
  emitted. A stored item counts as one earlier record (a new description it already contains verbatim
  is not appended again), and its embedding keeps the text of its first insert. Re-inserting a chunk
  counts its records again (weights), as LlamaIndex re-extracts it.

Emitted entities are ``EntityNode`` (label = type, property ``description``) and relations ``Relation``
(label ``RELATED_TO``; properties ``description``, ``keywords``, ``weight``, ``source_ids``).

Model output is untrusted: malformed records are skipped (the parser never raises). A failing LLM call
fails the whole call before anything is written (LlamaIndex LLM clients retry on their own).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from llama_index.core.async_utils import run_jobs
from llama_index.core.bridge.pydantic import Field
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, PropertyGraphStore
from llama_index.core.llms import LLM
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent

from pathrag import Entity, Relation
from pathrag.extraction import ExtractionConfig, ExtractionResult, extract_records
from pathrag.indexing import run_sync
from pathrag.merging import merge_entity, merge_relation, relation_key

from .graph import RELATION_LABEL, PropertyGraphStoreAdapter, entity_id, entity_to_node, relation_to_store

__all__ = ["PathRAGExtractor"]

logger = logging.getLogger(__name__)
T = TypeVar("T", Entity, Relation)


class PathRAGExtractor(TransformComponent):
    """Extract entities and relations with pathrag's prompt, merged by pathrag's rules (see the module doc).

    >>> from llama_index.core.graph_stores import SimplePropertyGraphStore
    >>> from llama_index.core.llms import MockLLM
    >>> store = SimplePropertyGraphStore()
    >>> extractor = PathRAGExtractor(llm=MockLLM(), graph_store=store, num_workers=2)
    >>> extractor.num_workers, extractor.config.max_gleaning
    (2, 1)

    Use it as ``PropertyGraphIndex.from_documents(docs, property_graph_store=store,
    kg_extractors=[extractor], embed_model=...)``.
    """

    llm: LLM
    config: ExtractionConfig = Field(default_factory=ExtractionConfig)
    num_workers: int = Field(default=4, ge=1, description="Chunks extracted at the same time.")
    show_progress: bool = False
    graph_store: PropertyGraphStore | None = Field(
        default=None, exclude=True, description="The index's store, to merge with what is already stored.")

    def __init__(
        self,
        llm: LLM | None = None,
        *,
        graph_store: PropertyGraphStore | None = None,
        config: ExtractionConfig | None = None,
        num_workers: int = 4,
        show_progress: bool = False,
    ) -> None:
        from llama_index.core import Settings  # resolved lazily: the default needs OpenAI

        super().__init__(llm=llm or Settings.llm, config=config or ExtractionConfig(), num_workers=num_workers,
                         show_progress=show_progress, graph_store=graph_store)

    @classmethod
    def class_name(cls) -> str:
        return "PathRAGExtractor"

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Sync twin of :meth:`acall` (safe inside a running event loop)."""
        return run_sync(self.acall(nodes, **kwargs))

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Extract every node, merge, and append the results to ``metadata["nodes"]`` / ``["relations"]``."""
        nodes = list(nodes)
        results = await run_jobs([self._extract(node) for node in nodes], workers=self.num_workers,
                                 show_progress=self.show_progress, desc="PathRAG extraction")
        emitted = await self._merge(nodes, results)
        for node, (entities, relations) in zip(nodes, emitted):
            # chained extractors append to what earlier ones left
            node.metadata[KG_NODES_KEY] = [*(node.metadata.get(KG_NODES_KEY) or []), *entities]
            node.metadata[KG_RELATIONS_KEY] = [*(node.metadata.get(KG_RELATIONS_KEY) or []), *relations]
        return nodes

    async def _ask(self, prompt: str) -> str:
        return (await self.llm.acomplete(prompt)).text

    async def _extract(self, node: BaseNode) -> ExtractionResult:
        text = node.get_content(metadata_mode=MetadataMode.LLM)
        if not text.strip():
            return ExtractionResult()
        done = await extract_records(text, self._ask, self.config, chunk_id=node.node_id)
        if done.result.skipped:
            logger.info("chunk %s: %d malformed records skipped", node.node_id, done.result.skipped)
        return done.result

    async def _merge(self, nodes: list[BaseNode], results: list[ExtractionResult]) -> list[tuple[list, list]]:
        """Merge the batch (and what is stored); return what each chunk emits."""
        entity_records: dict[str, list[Entity]] = {}
        endpoint_chunks: dict[str, list[str]] = {}
        relation_records: dict[tuple[str, str], list[Relation]] = {}
        home: dict[object, int] = {}  # entity name or relation key -> first chunk mentioning it
        for i, (node, result) in enumerate(zip(nodes, results)):
            for e in result.entities:
                name = entity_id(e.name)  # the store's key for the name
                entity_records.setdefault(name, []).append(e.model_copy(update={"name": name}))
                home.setdefault(name, i)
            for r in result.relations:
                r = r.model_copy(update={"source": entity_id(r.source), "target": entity_id(r.target)})
                key = relation_key(r.source, r.target)
                relation_records.setdefault(key, []).append(r)
                home.setdefault(key, i)
                for end in r.pair:
                    endpoint_chunks.setdefault(end, []).append(node.node_id)
                    home.setdefault(end, i)

        names = list(dict.fromkeys([*entity_records, *endpoint_chunks]))
        adapter = PropertyGraphStoreAdapter(self.graph_store) if self.graph_store is not None else None
        stored_entities = await adapter.aget_entities(names) if adapter else {}
        stored_relations = await adapter.aget_relations(relation_records, labels=[RELATION_LABEL]) if adapter else {}

        emitted: list[tuple[list, list]] = [([], []) for _ in nodes]
        updated_entities = []
        for name in names:
            old = stored_entities.get(name)
            merged = merge_entity(name, _after(old, entity_records.get(name, [])),
                                  extra_source_ids=endpoint_chunks.get(name, ()))
            if old is None:
                emitted[home[name]][0].append(entity_to_node(merged))
            elif (merged.type, merged.description) != (old.type, old.description):
                updated_entities.append(merged)
        updated_relations = []
        for key, records in relation_records.items():
            old_relation = stored_relations.get(key)
            merged_relation = merge_relation(_after(old_relation, records))
            if old_relation is None:
                emitted[home[key]][1].append(relation_to_store(merged_relation))
            else:
                updated_relations.append(merged_relation)
        if adapter is not None:
            await adapter.aupsert_entities(updated_entities)
            await adapter.aupsert_relations(updated_relations)
        return emitted


def _after(stored: T | None, records: list[T]) -> list[T]:
    """The records to merge: the stored item first (as one earlier record), then the new ones.

    The stored description is already a join, so a new description it contains verbatim adds nothing
    and is not appended again (the core compares whole descriptions; the parts are not stored).
    """
    if stored is None:
        return records
    seen: str = stored.description
    return [stored, *(r if r.description not in seen else r.model_copy(update={"description": ""}) for r in records)]
