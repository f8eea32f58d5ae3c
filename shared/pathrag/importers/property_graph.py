"""Import a LlamaIndex property graph store, by duck typing (LlamaIndex is not imported).

LlamaIndex property graph store (``get()`` and ``get_triplets(ids=...)``): ``EntityNode.name`` → name,
``label`` → type (the default ``entity`` → empty), ``properties["description"]`` (or
``"entity_description"``) → description, ``properties["triplet_source_id"]`` → source id;
``Relation.label`` → a keyword, ``properties["description"]`` (or ``"relationship_description"``) →
description; ``ChunkNode`` text → chunk index item under the node's id. Structural edges (``SOURCE``,
``NEXT``, ``PREVIOUS``, ``PARENT``, ``CHILD``, ``MENTIONS``) and edges touching chunk nodes are skipped.
Other properties are not imported.
"""

from __future__ import annotations

from typing import Any

from ..graphs.base import GraphStore
from ..index.front import PathRAGIndex
from ..vectors.base import VectorIndex
from .collector import Collector, ImportSummary, ImportTarget, property_description

__all__ = ["STRUCTURAL_RELATIONS", "import_property_graph"]

STRUCTURAL_RELATIONS = frozenset({"SOURCE", "NEXT", "PREVIOUS", "PARENT", "CHILD", "MENTIONS"})


def import_property_graph(
    graph_store: Any,
    store: GraphStore | PathRAGIndex,
    *,
    entity_index: VectorIndex | None = None,
    relation_index: VectorIndex | None = None,
    chunk_index: VectorIndex | None = None,
    batch_size: int = 500,
    document_id: str = "import:property-graph",
) -> ImportSummary:
    """Import a LlamaIndex ``PropertyGraphStore`` (any store with ``get()`` and ``get_triplets(ids=...)``;
    triplets are read ``batch_size`` node ids at a time). See the module docstring for the mapping."""
    if not (callable(getattr(graph_store, "get", None)) and callable(getattr(graph_store, "get_triplets", None))):
        raise TypeError(
            f"expected a property graph store with get() and get_triplets(), got {type(graph_store).__name__}"
        )
    target = ImportTarget.of(store, entity_index, relation_index, chunk_index)
    nodes = list(graph_store.get())
    triplets: dict[tuple[str, str, str], tuple[Any, Any, Any]] = {}
    ids = [node.id for node in nodes]
    for start in range(0, len(ids), batch_size):
        for subject, relation, obj in graph_store.get_triplets(ids=ids[start : start + batch_size]):
            triplets.setdefault((subject.id, relation.label, obj.id), (subject, relation, obj))

    collector = Collector()
    touched: set[str] = set()  # nodes in any triplet: entities only in structural ones are artefacts
    recorded: set[str] = set()
    for key in sorted(triplets):  # stores may list triplets in any order; the result must not depend on it
        subject, relation, obj = triplets[key]
        touched.update((subject.id, obj.id))
        if str(relation.label).upper() in STRUCTURAL_RELATIONS or not (_is_entity(subject) and _is_entity(obj)):
            continue
        for node in (subject, obj):
            if node.id not in recorded:
                recorded.add(node.id)
                _llama_entity(collector, node)
        collector.relation(
            subject.name,
            obj.name,
            [property_description(relation, "relationship_description")],
            [relation.label],
            (relation.properties or {}).get("weight", 1.0),
            [(relation.properties or {}).get("triplet_source_id")],
        )
    for node in sorted(nodes, key=lambda n: str(n.id)):
        if _is_entity(node) and node.id not in touched:  # an entity with no relation at all
            _llama_entity(collector, node)
        elif isinstance(getattr(node, "text", None), str) and node.text.strip():
            collector.chunks[str(node.id)] = node.text
    return collector.write(target, ImportSummary(), document_id)


def _is_entity(node: Any) -> bool:
    return hasattr(node, "name") and not hasattr(node, "text")


def _llama_entity(collector: Collector, node: Any) -> None:
    collector.entity(
        node.name,
        getattr(node, "label", ""),
        [property_description(node)],
        [(node.properties or {}).get("triplet_source_id")],
    )
