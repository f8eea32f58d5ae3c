"""Bring knowledge graphs built by other tools into a pathrag store, without a single LLM call.

Four sources: a LightRAG or PathRAG working directory, HippoRAG's OpenIE triples, LangChain graph
documents, and a LlamaIndex property graph store (the last two by duck typing: neither framework is
imported). The target is a
:class:`~pathrag.GraphStore` (optionally with vector indexes) or a :class:`~pathrag.PathRAGIndex`,
whose graph and vector indexes are then used; call ``index.save()`` afterwards to persist it.

Every imported item goes through pathrag's own rules: names become merge keys
(:func:`pathrag.names.normalize_name`: quotes dropped, upper-cased), types are lower-cased,
records naming the same entity or relation are merged as :mod:`pathrag.index.merging` merges extractions
(type by majority, descriptions joined, weights summed, source ids united; relations undirected
unless the target's ``directed_relations``), and vector texts and ids are those
:class:`~pathrag.PathRAGIndex` writes.

Into a :class:`~pathrag.PathRAGIndex`, an import is stored as the records of one document,
``document_id`` (default ``import:<kind>:<name>``; see :meth:`~pathrag.PathRAGIndex.add_records`): the
imported records merge with extracted ones, survive later inserts, and ``index.delete([document_id])``
removes them. Importing again under the same id replaces the previous import. Into a bare
:class:`~pathrag.GraphStore`, merged items are written directly and replace stored ones of the same name.

Field mapping (LightRAG / PathRAG working directory):

==================================  ====================================================================
``graph_chunk_entity_relation.graphml``
node id                             ``Entity.name`` (normalised; ``"ALEX"`` and ``Alex`` become ``ALEX``)
node ``entity_type``                ``Entity.type`` (lower-case; ``UNKNOWN`` → empty)
node ``description``                ``Entity.description``: ``<SEP>``-separated parts, quotes stripped,
                                    joined with spaces
node ``source_id``                  ``Entity.source_ids`` (split on ``<SEP>``)
edge endpoints                      ``Relation.source`` / ``target`` (normalised; self-loops skipped)
edge ``weight``                     ``Relation.weight`` (summed when two edges merge)
edge ``description``                ``Relation.description`` (as for nodes)
edge ``keywords``                   ``Relation.keywords`` (split on ``<SEP>`` and commas)
edge ``source_id``                  ``Relation.source_ids``
``kv_store_text_chunks.json``       ``{chunk id: {"content", "full_doc_id", ...}}`` → chunk index items
                                    (id = the chunk id, so source ids resolve; metadata ``chunk_id``)
``kv_store_full_docs.json``         counted only (``documents``)
``vdb_entities.json``,              with ``reuse_vectors=True``: nano-vectordb rows (``entity_name``;
``vdb_relationships.json``,         ``src_id``/``tgt_id``; ``__id__``) give the vectors of the matching
``vdb_chunks.json``                 items instead of re-embedding; items without a row are embedded
==================================  ====================================================================

HippoRAG OpenIE JSON (``{"docs": [...]}`` or the list itself; one item per passage): ``passage`` (else
``title`` + newline + ``text``, else ``text``) → one chunk whose id is :func:`pathrag.ids.chunk_id` of
the text, cited by everything extracted from it; ``extracted_entities`` → entities (no type, no
description); each ``extracted_triples`` row ``[subject, predicate, object]`` → a relation subject → object
with keyword ``predicate`` and description ``"subject predicate object"`` (the triple read as a
sentence). Rows that are not three non-empty strings are skipped and counted.

LangChain graph documents (anything with ``.nodes``, ``.relationships`` and ``.source``): ``Node.id`` →
name, ``Node.type`` → type (the default ``Node`` → empty), ``properties["description"]`` → description;
``Relationship.type`` → a keyword, its ``properties["description"]`` / ``["weight"]`` → description /
weight (default 1, so repeated relations count their mentions); ``source.page_content`` → one chunk whose
id is :func:`pathrag.ids.chunk_id` of the text, the source id of everything in that document.

LlamaIndex property graph store (``get()`` and ``get_triplets(ids=...)``): ``EntityNode.name`` → name,
``label`` → type (the default ``entity`` → empty), ``properties["description"]`` (or
``"entity_description"``) → description, ``properties["triplet_source_id"]`` → source id;
``Relation.label`` → a keyword, ``properties["description"]`` (or ``"relationship_description"``) →
description; ``ChunkNode`` text → chunk index item under the node's id. Structural edges (``SOURCE``,
``NEXT``, ``PREVIOUS``, ``PARENT``, ``CHILD``, ``MENTIONS``) and edges touching chunk nodes are skipped.
Other properties are not imported.

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

import base64
import json
import logging
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from ._sync import run_sync
from .files import check_regular_file
from .graphs.base import GraphStore
from .ids import chunk_id, entity_vector_id, relation_vector_id
from .index.front import PathRAGIndex
from .index.merging import join_descriptions, merge_records, relation_key
from .models import Entity, Relation
from .names import clean_description, normalize_name, normalize_type, split_keywords
from .vectors.base import VectorIndex, VectorItem, checked_vectors
from .vectors.items import aput_vectors, chunk_metadata, entity_vector_item, relation_vector_item

logger = logging.getLogger(__name__)

__all__ = ["ImportSummary", "import_graph_documents", "import_lightrag", "import_openie", "import_property_graph"]

SEP = "<SEP>"
LIGHTRAG_GRAPH = "graph_chunk_entity_relation.graphml"
LIGHTRAG_CHUNKS = "kv_store_text_chunks.json"
LIGHTRAG_DOCS = "kv_store_full_docs.json"
LIGHTRAG_VECTORS = {"entities": "vdb_entities.json", "relations": "vdb_relationships.json", "chunks": "vdb_chunks.json"}
STRUCTURAL_RELATIONS = frozenset({"SOURCE", "NEXT", "PREVIOUS", "PARENT", "CHILD", "MENTIONS"})
_UNTYPED = frozenset({"node", "entity", "unknown"})  # the other tools' "no type" markers


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
class _Target:
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
    ) -> _Target:
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


class _Collector:
    """Records from a foreign graph, normalised and merged by pathrag's rules, then written in one go."""

    def __init__(self) -> None:
        self.entities: dict[str, list[Entity]] = {}
        self.relations: dict[tuple[str, str], list[Relation]] = {}
        self.chunks: dict[str, str] = {}
        self.skipped = 0
        self.spellings: dict[str, set[str]] = {}  # merge key -> the distinct names the source used

    def entity(self, name: Any, entity_type: Any, descriptions: Iterable[Any], source_ids: Iterable[Any]) -> None:
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
        target: _Target,
        summary: ImportSummary,
        document_id: str,
        vectors: Mapping[str, Mapping[str, Sequence[float] | np.ndarray]] | None = None,
    ) -> ImportSummary:
        """Merge and write everything; ``vectors`` maps index name -> item id -> a vector to reuse."""
        graph, directed, indexes = target.graph, target.directed, target.indexes
        entity_records = [e for records in self.entities.values() for e in records]
        relation_records = [r for records in self.relations.values() for r in records]
        entities, relations = merge_records(entity_records, relation_records, directed=directed)
        mentions = self._mentions()
        items = {
            "entities": [entity_vector_item(e) for e in entities],
            "relations": [relation_vector_item(r, directed=directed) for r in relations],
            "chunks": [
                VectorItem(cid, text, chunk_metadata(cid, mentions.get(cid, ()))) for cid, text in self.chunks.items()
            ],
        }
        vectors = vectors or {}
        if target.index is not None:
            # the index embeds what it rebuilds: only the vectors to reuse go in with the records (so that
            # the rebuild finds those items unchanged), and the passages; all in the records' one commit
            put = {
                name: items[name] if name == "chunks" else [i for i in items[name] if i.id in vectors.get(name, {})]
                for name, index in indexes.items()
                if index is not None
            }
            # an entity named only as a relation end goes in as a bare record citing those relations' sources
            bare = [Entity(name=e.name, source_ids=e.source_ids) for e in entities if e.name not in self.entities]
            target.index.add_records(
                document_id, [*entity_records, *bare], relation_records, vector_items=put, vectors=vectors
            )
            summary.vectors_reused += sum(i.id in vectors.get(name, {}) for name, got in put.items() for i in got)
        else:
            for name, index in indexes.items():
                if index is not None:
                    summary.vectors_reused += run_sync(aput_vectors(index, items[name], vectors.get(name, {})))
            graph.upsert_entities(entities)
            graph.upsert_relations(relations)
        summary.entities, summary.relations, summary.chunks = len(entities), len(relations), len(self.chunks)
        summary.skipped += self.skipped
        summary.merged = sum(len(names) - 1 for names in self.spellings.values())
        return summary


def import_lightrag(
    directory: str | os.PathLike[str],
    store: GraphStore | PathRAGIndex,
    *,
    entity_index: VectorIndex | None = None,
    relation_index: VectorIndex | None = None,
    chunk_index: VectorIndex | None = None,
    reuse_vectors: bool = False,
    document_id: str | None = None,
) -> ImportSummary:
    """Import a LightRAG or PathRAG working directory (see the module docstring for the mapping).

    Vectors are re-embedded by each given index, unless ``reuse_vectors``: then the directory's
    nano-vectordb files supply them (same embedding model required; one embedding call checks the
    dimension). Reuse needs indexes with ``upsert_vectors(items, vectors)`` (``InMemoryVectorIndex`` has it).
    """
    root = Path(directory)
    graph_file = root / LIGHTRAG_GRAPH
    check_regular_file(graph_file)  # a FIFO would block the read forever
    if not graph_file.is_file():
        raise ValueError(f"{root} has no {LIGHTRAG_GRAPH}: not a LightRAG/PathRAG working directory")
    try:
        graph = nx.read_graphml(graph_file)
    except Exception as exc:  # networkx raises several kinds for a damaged file
        raise ValueError(f"cannot read {graph_file}: {exc}") from exc
    chunks = _read_json_object(root / LIGHTRAG_CHUNKS)
    documents = _read_json_object(root / LIGHTRAG_DOCS)
    target = _Target.of(store, entity_index, relation_index, chunk_index)

    collector = _Collector()
    for name, data in graph.nodes(data=True):
        collector.entity(name, data.get("entity_type"), _split(data.get("description")), _split(data.get("source_id")))
    for a, b, data in graph.edges(data=True):
        collector.relation(
            a,
            b,
            _split(data.get("description")),
            _split(data.get("keywords")),
            data.get("weight", 1.0),
            _split(data.get("source_id")),
        )
    for cid, record in chunks.items():
        text = record.get("content") if isinstance(record, Mapping) else None
        if isinstance(text, str) and text.strip():
            collector.chunks[str(cid)] = text
    vectors = _lightrag_vectors(root, target) if reuse_vectors else None
    return collector.write(
        target,
        ImportSummary(documents=len(documents)),
        document_id or f"import:lightrag:{root.resolve().name}",
        vectors,
    )


def import_openie(
    source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any],
    store: GraphStore | PathRAGIndex,
    *,
    entity_index: VectorIndex | None = None,
    relation_index: VectorIndex | None = None,
    chunk_index: VectorIndex | None = None,
    document_id: str | None = None,
) -> ImportSummary:
    """Import HippoRAG-style OpenIE results: passages with their entities and ``[s, p, o]`` triples.

    ``source`` is a JSON file or its parsed content. Each passage becomes a chunk with its real text,
    so every entity and relation cites the passage it came from (see the module docstring for the
    mapping). Malformed rows are skipped and counted in ``summary.skipped``, never raised.

    Args:
        source: path of the OpenIE JSON file, or the loaded ``{"docs": [...]}`` object or docs list.
        store: a graph store or a :class:`~pathrag.PathRAGIndex` to import into.
        document_id: the import's document id in an index (default ``import:openie:<file name>``).

    Raises:
        ValueError: the file cannot be read or holds no list of passages.

    >>> from pathrag import NetworkXGraphStore
    >>> docs = [{"passage": "Ada works at the Lab.", "extracted_entities": ["Ada", "Lab"],
    ...          "extracted_triples": [["Ada", "works at", "Lab"], ["Ada", "only two"]]}]
    >>> store = NetworkXGraphStore()
    >>> summary = import_openie(docs, store)
    >>> (summary.entities, summary.relations, summary.chunks, summary.skipped)
    (2, 1, 1, 1)
    >>> store.get_relations([("ADA", "LAB")])[("ADA", "LAB")].description
    'Ada works at Lab'
    """
    name = "openie"
    if isinstance(source, (str, os.PathLike)):
        path = check_regular_file(source)
        name = path.stem
        try:
            source = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read {path}: {exc}") from exc
    docs = source.get("docs") if isinstance(source, Mapping) else source
    if isinstance(docs, (str, bytes)) or not isinstance(docs, Sequence):
        raise ValueError("OpenIE data should be a list of passages or an object with a 'docs' list")
    target = _Target.of(store, entity_index, relation_index, chunk_index)
    collector = _Collector()
    summary = ImportSummary()
    for doc in docs:
        text = _openie_passage(doc)
        if text is None or not isinstance(doc, Mapping):  # only a mapping has a passage
            collector.skipped += 1
            continue
        summary.documents += 1
        sources = (chunk_id(text),)
        collector.chunks[sources[0]] = text
        entities = doc.get("extracted_entities")
        for entity in entities if isinstance(entities, list) else ():
            if isinstance(entity, str) and entity.strip():
                collector.entity(entity, "", [], sources)
            else:
                collector.skipped += 1
        triples = doc.get("extracted_triples")
        for row in triples if isinstance(triples, list) else ():
            if not (
                isinstance(row, (list, tuple))
                and len(row) == 3
                and all(isinstance(part, str) and part.strip() for part in row)
            ):
                collector.skipped += 1
                continue
            subject, predicate, obj = (" ".join(part.split()) for part in row)
            collector.relation(subject, obj, [f"{subject} {predicate} {obj}"], [predicate], 1.0, sources)
    return collector.write(target, summary, document_id or f"import:openie:{name}")


def _openie_passage(doc: Any) -> str | None:
    """The passage text of one OpenIE item (``None`` when it has none)."""
    if not isinstance(doc, Mapping):
        return None
    text = doc.get("passage")
    if not (isinstance(text, str) and text.strip()):
        title, body = doc.get("title"), doc.get("text")
        if isinstance(body, str) and body.strip():
            text = f"{title}\n{body}" if isinstance(title, str) and title.strip() else body
    return text.strip() if isinstance(text, str) and text.strip() else None


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
    target = _Target.of(store, entity_index, relation_index, chunk_index)
    collector = _Collector()
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
            collector.entity(node.id, getattr(node, "type", ""), [_property_description(node)], sources)
        for rel in doc.relationships:
            for end in (rel.source, rel.target):
                if end.id not in listed:  # an endpoint the document does not list: keep its type
                    listed.add(end.id)
                    collector.entity(end.id, getattr(end, "type", ""), [], sources)
            properties = getattr(rel, "properties", None) or {}
            collector.relation(
                rel.source.id,
                rel.target.id,
                [_property_description(rel)],
                [rel.type],
                properties.get("weight", 1.0),
                sources,
            )
    return collector.write(target, summary, document_id)


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
    target = _Target.of(store, entity_index, relation_index, chunk_index)
    nodes = list(graph_store.get())
    triplets: dict[tuple[str, str, str], tuple[Any, Any, Any]] = {}
    ids = [node.id for node in nodes]
    for start in range(0, len(ids), batch_size):
        for subject, relation, obj in graph_store.get_triplets(ids=ids[start : start + batch_size]):
            triplets.setdefault((subject.id, relation.label, obj.id), (subject, relation, obj))

    collector = _Collector()
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
            [_property_description(relation, "relationship_description")],
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


# -- helpers ----------------------------------------------------------------------------------------


def _strings(values: Iterable[Any]) -> list[str]:
    return [str(v).strip() for v in values if v is not None and str(v).strip()]


def _split(value: Any) -> list[str]:
    """A LightRAG ``<SEP>``-joined field as its parts."""
    return [] if value is None else str(value).split(SEP)


def _description(parts: Iterable[Any]) -> str:
    return join_descriptions(clean_description(p) for p in _strings(parts))


def _weight(value: Any) -> float:
    try:
        weight = float(value)
    except (TypeError, ValueError):
        return 1.0
    return weight if math.isfinite(weight) else 1.0


def _property_description(item: Any, *alternatives: str) -> str:
    properties = getattr(item, "properties", None) or {}
    for key in ("description", "entity_description", *alternatives):
        if properties.get(key):
            return str(properties[key])
    return ""


def _is_entity(node: Any) -> bool:
    return hasattr(node, "name") and not hasattr(node, "text")


def _llama_entity(collector: _Collector, node: Any) -> None:
    collector.entity(
        node.name,
        getattr(node, "label", ""),
        [_property_description(node)],
        [(node.properties or {}).get("triplet_source_id")],
    )


def _read_json_object(path: Path) -> dict[str, Any]:
    """A JSON object file ({} when absent)."""
    if not path.exists():
        return {}
    check_regular_file(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} should hold a JSON object, found {type(data).__name__}")
    return data


def _nano_vectors(path: Path) -> tuple[int, list[tuple[Mapping[str, Any], np.ndarray]]]:
    """A nano-vectordb file as (dimension, [(row metadata, vector)])."""
    data = _read_json_object(path)
    try:
        dim = int(data["embedding_dim"])
        matrix = np.frombuffer(base64.b64decode(data["matrix"]), dtype="<f4").reshape(-1, dim)
        rows = list(data["data"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path} is not a nano-vectordb file: {exc}") from exc
    if len(rows) != len(matrix):
        raise ValueError(f"{path} has {len(rows)} rows of metadata but {len(matrix)} vectors")
    return dim, list(zip(rows, matrix, strict=True))


def _lightrag_vectors(root: Path, target: _Target) -> dict[str, dict[str, np.ndarray]]:
    """For each target index, item id -> vector from the matching vdb file (first row wins on a clash)."""
    found: dict[str, dict[str, np.ndarray]] = {}
    for name, index in target.indexes.items():
        path = root / LIGHTRAG_VECTORS[name]
        if index is None or not path.exists():
            continue
        if not hasattr(index, "upsert_vectors"):
            raise TypeError(
                f"reuse_vectors needs vector indexes with upsert_vectors(items, vectors); "
                f"{type(index).__name__} has none"
            )
        dim, rows = _nano_vectors(path)
        embedder = getattr(index, "embedder", None)
        if (
            embedder is not None
            and rows
            and len(checked_vectors(embedder, embedder.embed(["dimension check"]), 1)[0]) != dim
        ):
            raise ValueError(
                f"{path.name} holds {dim}-dimensional vectors but the {name} index embeds to another "
                f"dimension: reusing vectors needs the embedding model that made them"
            )
        vectors: dict[str, np.ndarray] = {}
        unusable = 0
        for meta, vector in rows:
            if not np.isfinite(vector).all():  # NaN or inf: never found if stored; embedded anew instead
                unusable += 1
                continue
            if name == "entities":
                key = normalize_name(str(meta.get("entity_name", "")))
                item_id = entity_vector_id(key) if key else None
            elif name == "relations":
                a, b = normalize_name(str(meta.get("src_id", ""))), normalize_name(str(meta.get("tgt_id", "")))
                item_id = relation_vector_id(relation_key(a, b, directed=target.directed)) if a and b else None
            else:
                item_id = str(meta.get("__id__", "")) or None
            if item_id is not None:
                vectors.setdefault(item_id, vector)
        if unusable:
            logger.warning("%s: %d vectors hold NaN or infinite numbers; their items are embedded anew", path, unusable)
        found[name] = vectors
    return found
