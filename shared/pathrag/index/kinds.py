"""The graph and vector stores an index makes for itself, told apart from those passed in.

An index given no graph or vector index makes its own (:meth:`~pathrag.index.backend.IndexBackend.own_graph`,
:meth:`~pathrag.index.backend.IndexBackend.own_vectors`): a NetworkX graph and in-memory vector indexes, or
the graph and vector tables of a SQLite store. A commit stages its writes to those (applied with its
records, all at once), checks them against the records, counts them and copies them when saving; any other
store is written as the commit goes and is left to its own checks. :class:`StoreKinds` is the one place that
knows these classes: every backend answers through its ``kinds`` (a custom backend may give another).

>>> from pathrag import HashingEmbedder, InMemoryVectorIndex, NetworkXGraphStore
>>> kinds = StoreKinds()
>>> kinds.stages(NetworkXGraphStore()), kinds.in_store(InMemoryVectorIndex(HashingEmbedder(8)))
(True, False)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..graphs.base import GraphStore
from ..graphs.memory import NetworkXGraphStore
from ..models import Entity, Relation
from ..sqlite import SQLiteGraphStore, SQLiteVectorIndex
from ..vectors.base import Embedder, VectorIndex
from ..vectors.memory import InMemoryVectorIndex

__all__ = ["StoreKinds"]

_OWN_KINDS = (NetworkXGraphStore, SQLiteGraphStore, InMemoryVectorIndex, SQLiteVectorIndex)

Rows = list[tuple[str, str, Mapping[str, Any], bytes]]


class StoreKinds:
    """What an index may do with a graph or vector store, by its kind (see the module docstring)."""

    def stages(self, store: GraphStore | VectorIndex) -> bool:
        """Whether a commit stages its writes to ``store`` and applies them with its records (an own kind)."""
        return isinstance(store, _OWN_KINDS)

    def in_store(self, store: GraphStore | VectorIndex) -> bool:
        """Whether ``store`` is kept in a SQLite store's tables (counted by a store's quick check)."""
        return isinstance(store, (SQLiteGraphStore, SQLiteVectorIndex))

    def ids(self, index: VectorIndex) -> set[str] | None:
        """Every item id of an own vector index, to check against the records (``None``: another kind)."""
        return set(index.ids()) if isinstance(index, (SQLiteVectorIndex, InMemoryVectorIndex)) else None

    def file_problems(self, index: VectorIndex) -> list[str]:
        """What is wrong with the saved search files of a store's vector index (none for other kinds)."""
        return index.check_files() if isinstance(index, SQLiteVectorIndex) else []

    def graph_counts(self, graph: GraphStore) -> dict[str, int]:
        """``entities`` and ``relations`` of an own graph (nothing for another kind)."""
        if isinstance(graph, NetworkXGraphStore):
            return {"entities": len(graph.graph), "relations": graph.graph.number_of_edges()}
        if isinstance(graph, SQLiteGraphStore):
            return {"entities": len(graph), "relations": graph.number_of_relations()}
        return {}

    def graph_contents(self, graph: GraphStore) -> tuple[Iterable[Entity], Iterable[Relation]] | None:
        """Every entity and relation of an own graph, for :meth:`pathrag.PathRAGIndex.check` (``None``:
        another kind, which is not checked)."""
        if isinstance(graph, (SQLiteGraphStore, NetworkXGraphStore)):
            return graph.iter_entities(), graph.iter_relations()
        return None

    def memory_ids(self, index: VectorIndex) -> list[str] | None:
        """The item ids of an in-memory vector index (``None``: another kind)."""
        return index.ids() if isinstance(index, InMemoryVectorIndex) else None

    def memory_graph(self, graph: GraphStore) -> NetworkXGraphStore | None:
        """``graph`` when it is an in-memory one, whose contents a save copies into a new store."""
        return graph if isinstance(graph, NetworkXGraphStore) else None

    def memory_rows(self, index: VectorIndex) -> Rows | None:
        """The rows of an in-memory vector index, which a save copies into a new store (``None``: another kind)."""
        return index.rows() if isinstance(index, InMemoryVectorIndex) else None

    def memory_embedder(self, index: VectorIndex) -> Embedder | None:
        """The embedder of an in-memory vector index (its name is recorded by a save)."""
        return index.embedder if isinstance(index, InMemoryVectorIndex) else None
