"""Looking at a whole index: its check, its counts, and its export into a new store.

These read what the write phases leave: the document and chunk records, the graph and the vector indexes of
the index's own kinds (see :mod:`pathrag.index.kinds`), and what the backend keeps. Each takes the
:class:`~pathrag.PathRAGIndex` whose public methods (:meth:`~pathrag.PathRAGIndex.check`,
:meth:`~pathrag.PathRAGIndex.stats`, :meth:`~pathrag.PathRAGIndex.save`) call it.

>>> from pathrag import HashingEmbedder, PathRAGIndex
>>> index = PathRAGIndex(embedder=HashingEmbedder(8))
>>> check(index), stats(index)["entities"]
([], 0)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from .._version import __version__
from ..graphs.base import GraphStore
from ..ids import entity_vector_id, relation_vector_id
from ..sqlite import SQLiteStore, write_snapshot
from ..vectors.base import VectorIndex
from ..vectors.embedders import embedder_name_of
from .merging import relation_key
from .records import ChunkRecord, DocumentRecord, cited

if TYPE_CHECKING:
    from .front import PathRAGIndex

__all__ = ["check", "export", "stats"]


def check(index: PathRAGIndex) -> list[str]:
    """The problems :meth:`pathrag.PathRAGIndex.check` reports, one line each."""
    chunks = index.chunks
    problems = _lost_chunks(index.documents.items(), chunks)
    names, keys = _mentioned(chunks.values(), directed=index.config.directed_relations)
    problems += _check_graph(index, names, keys)
    problems += index._backend.check_degrees()  # a store's kept degrees against a recount
    wanted = {
        "entities": {entity_vector_id(n) for n in names},
        "relations": {relation_vector_id(k) for k in keys},
        "chunks": {c for c, chunk in chunks.items() if chunk.refs and chunk.text},
    }
    # passages an import's records cite: an importer put them in the chunk index
    passages = cited(c for c in chunks.values() if c.refs and not c.text)
    kinds = index._backend.kinds
    for name, vectors in index.vector_indexes.items():
        held = kinds.ids(vectors)
        if held is not None:
            want = wanted[name] | (held & passages if name == "chunks" else set())
            if held != want:
                problems.append(f"{name} vectors: {len(want - held)} missing, {len(held - want)} without an owner")
        problems += kinds.file_problems(vectors)  # the saved search files, every byte
    return problems


def _lost_chunks(documents: Iterable[tuple[str, DocumentRecord]], chunks: Mapping[str, ChunkRecord]) -> list[str]:
    """A line for each document some of whose chunks are missing (and did not fail to extract)."""
    problems = []
    for doc_id, doc in sorted(documents):
        lost = [c for c in doc.chunks if c not in chunks and c not in doc.failed]
        if lost:
            problems.append(f"document {doc_id!r}: {len(lost)} chunk(s) missing, e.g. {lost[0]}")
    return problems


def _mentioned(chunks: Iterable[ChunkRecord], *, directed: bool) -> tuple[set[str], set[tuple[str, str]]]:
    """The entity names and relation keys the live chunks mention."""
    names: set[str] = set()
    keys: set[tuple[str, str]] = set()
    for chunk in chunks:
        if chunk.refs:
            names.update(e["name"] for e in chunk.entities)
            for r in chunk.relations:
                names.update((r["source"], r["target"]))
                keys.add(relation_key(r["source"], r["target"], directed=directed))
    return names, keys


def _check_graph(index: PathRAGIndex, names: set[str], keys: set[tuple[str, str]]) -> list[str]:
    """The graph's problems (of the index's own kinds only): entities and relations no live chunk mentions,
    and live mentions missing."""
    contents = index._backend.kinds.graph_contents(index.graph)
    if contents is None:
        return []
    entities, relations = contents
    directed, problems = index.config.directed_relations, []
    stored = {e.name for e in entities}
    stored_keys = {relation_key(r.source, r.target, directed=directed) for r in relations}
    for label, extra, missing in (
        ("entities", stored - names, names - stored),
        ("relations", stored_keys - keys, keys - stored_keys),
    ):
        if extra:
            problems.append(f"{len(extra)} {label} no live document mentions, e.g. {sorted(extra)[0]}")
        if missing:
            problems.append(
                f"{len(missing)} {label} of live documents missing from the graph, e.g. {sorted(missing)[0]}"
            )
    return problems


def stats(index: PathRAGIndex) -> dict[str, int]:
    """The counts :meth:`pathrag.PathRAGIndex.stats` reports, from one committed state."""
    backend = index._backend

    def count(graph: GraphStore, indexes: Mapping[str, VectorIndex]) -> dict[str, int]:
        counts = backend.stats(indexes["chunks"])
        counts.update(backend.kinds.graph_counts(graph))
        return counts

    return index.read_committed(count)  # one committed state: a commit landing meanwhile is not half-counted


def export(index: PathRAGIndex, store: SQLiteStore) -> None:
    """Write ``index`` into the new, empty ``store`` (see :meth:`pathrag.PathRAGIndex.save`)."""
    kinds = index._backend.kinds
    vectors = {
        name: rows for name, vectors in index.vector_indexes.items() if (rows := kinds.memory_rows(vectors)) is not None
    }
    graph = kinds.memory_graph(index.graph) if index._owns_graph else None
    embedder = kinds.memory_embedder(index.entity_index)
    name = embedder_name_of(embedder) if embedder is not None else None
    write_snapshot(
        store,
        documents={doc_id: doc.row() for doc_id, doc in index.documents.items()},
        chunks=(c.row() for c in index.chunks.values()),
        summaries=dict(index.summaries.items()),
        cache=dict(index._cache.items()) if index.config.cache else {},
        entities=graph.iter_entities() if graph else (),
        relations=graph.iter_relations() if graph else (),
        vectors=vectors,
        meta={
            "pathrag_version": __version__,
            "directed_relations": int(index.config.directed_relations),
            **({"embedder": name} if name else {}),
        },
    )
