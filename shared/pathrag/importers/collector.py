"""What every importer shares: the records of a foreign graph, normalised and merged by pathrag's rules,
then written in one go into a graph store or a :class:`~pathrag.PathRAGIndex` (:class:`Collector`), and
what an import reports (:class:`ImportSummary`).

The rules are pathrag's own (see :mod:`pathrag.importers`): names normalised into merge keys, records
merged as :mod:`pathrag.index.merging` merges extractions, vector texts and ids as the index writes them.

>>> from pathrag import NetworkXGraphStore
>>> collector = Collector()
>>> collector.entity("Ada", "Person", ["A mathematician."], ["c1"])
>>> collector.relation("Ada", "lab", ["Ada works at the lab."], ["works at"], 1, ["c1"])
>>> store = NetworkXGraphStore()
>>> collector.write(ImportTarget.of(store, None, None, None), ImportSummary(), "import:example").entities
2
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._sync import run_sync
from ..graphs.base import GraphStore
from ..index.front import PathRAGIndex
from ..index.merging import join_descriptions, merge_records
from ..models import Entity, Relation
from ..names import clean_description, normalize_name, normalize_type, split_keywords
from ..vectors.base import VectorIndex, VectorItem
from ..vectors.items import aput_vectors, chunk_metadata, entity_vector_item, relation_vector_item

__all__ = ["Collector", "ImportSummary", "ImportTarget", "property_description"]

_UNTYPED = frozenset({"node", "entity", "unknown"})  # the other tools' "no type" markers


@dataclass
@dataclass
class ImportSummary:
    """What an import wrote: distinct entities, relations and chunks after merging; documents seen;
    records skipped (empty names, self-relations); vectors taken from the source instead of embedded;
    ``merged``: spellings that normalisation folded into another one (``"ALEX"`` and ``Alex``: 1)."""

    entities: int = 0
    relations: int = 0
    chunks: int = 0
    documents: int = 0
    skipped: int = 0
    vectors_reused: int = 0
    merged: int = 0


@dataclass
class ImportTarget:
    """Where an import writes: a graph store (and the vector indexes given with it), or an index's own."""

    graph: GraphStore
    directed: bool
    indexes: dict[str, VectorIndex | None]
    index: PathRAGIndex | None = None

    @classmethod
    def of(
        cls,
        store: GraphStore | PathRAGIndex,
        entity_index: VectorIndex | None,
        relation_index: VectorIndex | None,
        chunk_index: VectorIndex | None,
    ) -> ImportTarget:
        """The target of an import into ``store`` (an index imports into its own vector indexes only)."""
        given = {"entities": entity_index, "relations": relation_index, "chunks": chunk_index}
        if isinstance(store, PathRAGIndex):
            if any(index is not None and index is not store.vector_indexes[name] for name, index in given.items()):
                raise ValueError(
                    "a PathRAGIndex imports into its own vector indexes: pass no entity_index, "
                    "relation_index or chunk_index with it"
                )
            return cls(store.graph, store.config.directed_relations, dict(store.vector_indexes), store)
        if not isinstance(store, GraphStore):
            raise TypeError(f"expected a pathrag GraphStore or PathRAGIndex to import into, got {type(store).__name__}")
        return cls(store, bool(getattr(store, "directed_relations", False)), given)


class Collector:
    """Records from a foreign graph, normalised and merged by pathrag's rules, then written in one go."""

    def __init__(self) -> None:
        self.entities: dict[str, list[Entity]] = {}
        self.relations: dict[tuple[str, str], list[Relation]] = {}
        self.chunks: dict[str, str] = {}
        self.skipped = 0
        self.spellings: dict[str, set[str]] = {}  # merge key -> the distinct names the source used

    def entity(self, name: Any, entity_type: Any, descriptions: Iterable[Any], source_ids: Iterable[Any]) -> None:
        """Collect an entity record (a nameless one is skipped and counted)."""
        key = normalize_name(str(name))
        if not key:
            self.skipped += 1
            return
        self.spellings.setdefault(key, set()).add(str(name).strip())
        kind = normalize_type(str(entity_type or ""))
        self.entities.setdefault(key, []).append(
            Entity(
                name=key,
                type="" if kind in _UNTYPED else kind,
                description=_description(descriptions),
                source_ids=tuple(_strings(source_ids)),
            )
        )

    def relation(
        self,
        source: Any,
        target: Any,
        descriptions: Iterable[Any],
        keywords: Iterable[Any],
        weight: Any,
        source_ids: Iterable[Any],
    ) -> None:
        """Collect a relation record (one with a nameless end, or from an entity to itself, is skipped and
        counted)."""
        a, b = normalize_name(str(source)), normalize_name(str(target))
        if not a or not b or a == b:
            self.skipped += 1
            return
        for key, raw in ((a, source), (b, target)):
            self.spellings.setdefault(key, set()).add(str(raw).strip())
        self.relations.setdefault((a, b), []).append(
            Relation(
                source=a,
                target=b,
                description=_description(descriptions),
                keywords=tuple(split_keywords(_strings(keywords))),
                weight=_weight(weight),
                source_ids=tuple(_strings(source_ids)),
            )
        )

    def _mentions(self) -> dict[str, set[str]]:
        """Chunk id -> the entity names its records name (relation ends included)."""
        found: dict[str, set[str]] = {}
        for name, records in self.entities.items():
            for record in records:
                for cid in record.source_ids:
                    found.setdefault(cid, set()).add(name)
        for (a, b), relations in self.relations.items():
            for relation in relations:
                for cid in relation.source_ids:
                    found.setdefault(cid, set()).update((a, b))
        return found

    def write(
        self,
        target: ImportTarget,
        summary: ImportSummary,
        document_id: str,
        vectors: Mapping[str, Mapping[str, Sequence[float] | np.ndarray]] | None = None,
    ) -> ImportSummary:
        """Merge and write everything; ``vectors`` maps index name -> item id -> a vector to reuse."""
        entity_records = [e for records in self.entities.values() for e in records]
        relation_records = [r for records in self.relations.values() for r in records]
        entities, relations = merge_records(entity_records, relation_records, directed=target.directed)
        items = self._vector_items(entities, relations, target.directed)
        vectors = vectors or {}
        if target.index is not None:
            # an entity named only as a relation end goes in as a bare record citing those relations' sources
            bare = [Entity(name=e.name, source_ids=e.source_ids) for e in entities if e.name not in self.entities]
            records = ([*entity_records, *bare], relation_records)
            summary.vectors_reused += _add_to_index(target, document_id, records, items, vectors)
        else:
            for name, index in target.indexes.items():
                if index is not None:
                    summary.vectors_reused += run_sync(aput_vectors(index, items[name], vectors.get(name, {})))
            target.graph.upsert_entities(entities)
            target.graph.upsert_relations(relations)
        summary.entities, summary.relations, summary.chunks = len(entities), len(relations), len(self.chunks)
        summary.skipped += self.skipped
        summary.merged = sum(len(names) - 1 for names in self.spellings.values())
        return summary

    def _vector_items(
        self, entities: Sequence[Entity], relations: Sequence[Relation], directed: bool
    ) -> dict[str, list[VectorItem]]:
        """What each vector index holds for the merged records and the passages, as the index writes them."""
        mentions = self._mentions()
        return {
            "entities": [entity_vector_item(e) for e in entities],
            "relations": [relation_vector_item(r, directed=directed) for r in relations],
            "chunks": [
                VectorItem(cid, text, chunk_metadata(cid, mentions.get(cid, ()))) for cid, text in self.chunks.items()
            ],
        }


def _add_to_index(
    target: ImportTarget,
    document_id: str,
    records: tuple[list[Entity], list[Relation]],
    items: Mapping[str, list[VectorItem]],
    vectors: Mapping[str, Mapping[str, Sequence[float] | np.ndarray]],
) -> int:
    """Add the records to the target index as document ``document_id``; how many vectors were reused.

    The index embeds what it rebuilds: only the vectors to reuse go in with the records (so that the rebuild
    finds those items unchanged), and the passages; all in the records' one commit."""
    assert target.index is not None
    put = {
        name: items[name] if name == "chunks" else [i for i in items[name] if i.id in vectors.get(name, {})]
        for name, index in target.indexes.items()
        if index is not None
    }
    target.index.add_records(document_id, *records, vector_items=put, vectors=vectors)
    return sum(i.id in vectors.get(name, {}) for name, got in put.items() for i in got)


def _strings(values: Iterable[Any]) -> list[str]:
    return [str(v).strip() for v in values if v is not None and str(v).strip()]


def _description(parts: Iterable[Any]) -> str:
    return join_descriptions(clean_description(p) for p in _strings(parts))


def _weight(value: Any) -> float:
    try:
        weight = float(value)
    except (TypeError, ValueError):
        return 1.0
    return weight if math.isfinite(weight) else 1.0


def property_description(item: Any, *alternatives: str) -> str:
    """The description a foreign node or relation keeps in its ``properties`` (``""``: none)."""
    properties = getattr(item, "properties", None) or {}
    for key in ("description", "entity_description", *alternatives):
        if properties.get(key):
            return str(properties[key])
    return ""
