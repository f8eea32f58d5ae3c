"""Import LangChain graph documents, by duck typing (LangChain is not imported).

LangChain graph documents (anything with ``.nodes``, ``.relationships`` and ``.source``): ``Node.id`` →
name, ``Node.type`` → type (the default ``Node`` → empty), ``properties["description"]`` → description;
``Relationship.type`` → a keyword, its ``properties["description"]`` / ``["weight"]`` → description /
weight (default 1, so repeated relations count their mentions); ``source.page_content`` → one chunk whose
id is :func:`pathrag.ids.chunk_id` of the text, the source id of everything in that document.

>>> from pathrag import NetworkXGraphStore
>>> class Node:
...     def __init__(self, id, type="Node", properties=None):
...         self.id, self.type, self.properties = id, type, properties or {}
>>> class Rel:
...     def __init__(self, source, target, type):
...         self.source, self.target, self.type, self.properties = source, target, type, {}
>>> class GraphDoc:
...     def __init__(self, nodes, relationships):
...         self.nodes, self.relationships, self.source = nodes, relationships, None
>>> ada, lab = Node("Ada", "Person"), Node("Lab", "Place")
>>> store = NetworkXGraphStore()
>>> import_graph_documents([GraphDoc([ada, lab], [Rel(ada, lab, "WORKS_AT")])], store).relations
1
>>> store.get_relations([("ADA", "LAB")])[("ADA", "LAB")].keywords
('WORKS_AT',)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..graphs.base import GraphStore
from ..ids import chunk_id
from ..index.front import PathRAGIndex
from ..vectors.base import VectorIndex
from .collector import Collector, ImportSummary, ImportTarget, property_description

__all__ = ["import_graph_documents"]


def import_graph_documents(
    graph_documents: Iterable[Any],
    store: GraphStore | PathRAGIndex,
    *,
    entity_index: VectorIndex | None = None,
    relation_index: VectorIndex | None = None,
    chunk_index: VectorIndex | None = None,
    document_id: str = "import:graph-documents",
) -> ImportSummary:
    """Import LangChain graph documents (``GraphDocument`` from langchain-neo4j or langchain-community,
    or anything shaped like them). See the module docstring for the mapping."""
    target = ImportTarget.of(store, entity_index, relation_index, chunk_index)
    collector = Collector()
    summary = ImportSummary()
    for doc in graph_documents:
        if not (hasattr(doc, "nodes") and hasattr(doc, "relationships")):
            raise TypeError(f"expected graph documents with .nodes and .relationships, got {type(doc).__name__}")
        summary.documents += 1
        text = getattr(getattr(doc, "source", None), "page_content", None)
        sources: tuple[str, ...] = ()
        if isinstance(text, str) and text.strip():
            sources = (chunk_id(text),)
            collector.chunks[sources[0]] = text
        listed = set()
        for node in doc.nodes:
            listed.add(node.id)
            collector.entity(node.id, getattr(node, "type", ""), [property_description(node)], sources)
        for rel in doc.relationships:
            for end in (rel.source, rel.target):
                if end.id not in listed:  # an endpoint the document does not list: keep its type
                    listed.add(end.id)
                    collector.entity(end.id, getattr(end, "type", ""), [], sources)
            properties = getattr(rel, "properties", None) or {}
            collector.relation(
                rel.source.id,
                rel.target.id,
                [property_description(rel)],
                [rel.type],
                properties.get("weight", 1.0),
                sources,
            )
    return collector.write(target, summary, document_id)
