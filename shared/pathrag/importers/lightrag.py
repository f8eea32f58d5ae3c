"""Import a LightRAG or PathRAG working directory.

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
"""

from __future__ import annotations

import base64
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from ..files import check_regular_file
from ..graphs.base import GraphStore
from ..ids import entity_vector_id, relation_key, relation_vector_id
from ..index.front import PathRAGIndex
from ..names import normalize_name
from ..vectors.base import VectorIndex, checked_vectors, vector_upserts
from .collector import Collector, ImportSummary, ImportTarget

logger = logging.getLogger(__name__)

__all__ = ["LIGHTRAG_CHUNKS", "LIGHTRAG_DOCS", "LIGHTRAG_GRAPH", "LIGHTRAG_VECTORS", "SEP", "import_lightrag"]

SEP = "<SEP>"
LIGHTRAG_GRAPH = "graph_chunk_entity_relation.graphml"
LIGHTRAG_CHUNKS = "kv_store_text_chunks.json"
LIGHTRAG_DOCS = "kv_store_full_docs.json"
LIGHTRAG_VECTORS = {"entities": "vdb_entities.json", "relations": "vdb_relationships.json", "chunks": "vdb_chunks.json"}


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
    target = ImportTarget.of(store, entity_index, relation_index, chunk_index)

    collector = Collector()
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


def _split(value: Any) -> list[str]:
    """A LightRAG ``<SEP>``-joined field as its parts."""
    return [] if value is None else str(value).split(SEP)


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


def _lightrag_vectors(root: Path, target: ImportTarget) -> dict[str, dict[str, np.ndarray]]:
    """For each target index, item id -> vector from the matching vdb file (first row wins on a clash)."""
    found: dict[str, dict[str, np.ndarray]] = {}
    for name, index in target.indexes.items():
        path = root / LIGHTRAG_VECTORS[name]
        if index is None or not path.exists():
            continue
        vector_upserts(index, "reuse_vectors")  # before reading the file: refused at once
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
