"""The embedded default graph store: a networkx graph in memory, saved as one JSON file.

>>> store = NetworkXGraphStore()
>>> store.upsert_relations([Relation(source="A", target="B")])
>>> store.neighborhoods({"A": None})["A"]
Neighborhood(degree=1, neighbors={'B': 1})
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import networkx as nx
from typing_extensions import override

from ..files import atomic_write_text
from ..models import Entity, Relation
from ..names import check_name
from .base import (
    BaseGraphStore,
    GraphStore,
    Merge,
    Neighborhood,
    entity_attrs,
    entity_from_attrs,
    relation_attrs,
    relation_from_attrs,
)

__all__ = ["GRAPH_FILE", "NetworkXGraphStore", "as_graph_store"]

GRAPH_FILE = "graph.json"
_FORMAT = "pathrag-graph"
_VERSION = 1


class NetworkXGraphStore(BaseGraphStore):
    """The embedded default: a graph in memory, persisted as one JSON file in a directory.

    Wraps a ``networkx.Graph`` or ``DiGraph`` without copying it; nodes are entity names, and entity and
    relation fields live in node and edge attributes. ``directed_relations=False`` (the default) treats
    A→B and B→A as the same relation, stored once in the direction first seen. Writes refuse a name
    some store cannot hold (:func:`~pathrag.names.check_name`), so a graph built here moves to a
    database; reads take any node, and :meth:`load` reads back whatever was saved.

    >>> store = NetworkXGraphStore()
    >>> store.upsert_relations([Relation(source="A", target="B", description="A owns B")])
    >>> store.get_relations([("B", "A")])[("B", "A")].description
    'A owns B'
    """

    async_in_thread = False  # in memory: the async twins call the sync methods directly

    def __init__(self, graph: nx.Graph | None = None, *, directed_relations: bool = False) -> None:
        if graph is not None and not isinstance(graph, nx.Graph):
            raise TypeError(f"expected a networkx graph, got {type(graph).__name__}")
        self.graph: nx.Graph = nx.DiGraph() if graph is None else graph
        self.directed_relations = directed_relations

    # -- traversal ---------------------------------------------------------------------------------

    def _views(self, directed: bool) -> tuple[Mapping[Any, Mapping[Any, Any]], Mapping[Any, Mapping[Any, Any]] | None]:
        """Adjacency maps whose keys, together, are a node's traversal neighbours."""
        g = self.graph
        if not g.is_directed():
            return g._adj, None
        return (g._succ, None) if directed else (g._succ, g._pred)

    @override
    def neighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        out_adj, in_adj = self._views(directed)
        degree_cache: dict[Any, int] = {}

        def degree(u: Any) -> int:
            d = degree_cache.get(u)
            if d is None:
                outs = out_adj[u]
                if in_adj is None:
                    d = len(outs) - (u in outs)
                else:
                    ins = in_adj[u]
                    small, large = (outs, ins) if len(outs) <= len(ins) else (ins, outs)
                    d = len(large) + sum(1 for v in small if v not in large) - (u in outs or u in ins)
                degree_cache[u] = d
            return d

        def listed(u: Any) -> Iterator[Any]:
            yield from out_adj[u]
            if in_adj is not None:
                outs = out_adj[u]
                yield from (v for v in in_adj[u] if v not in outs)

        def adjacent(u: Any, v: Any) -> bool:
            return v in out_adj[u] or (in_adj is not None and v in in_adj[u])

        keep = keep if isinstance(keep, (set, frozenset)) else set(keep)
        result: dict[str, Neighborhood] = {}
        for u, limit in requests.items():
            if u not in out_adj:
                continue
            d = degree(u)
            if limit is None or d <= limit:
                candidates: Iterable[Any] = listed(u)
            elif d <= len(keep):  # scan whichever side is smaller
                candidates = (v for v in listed(u) if v in keep)
            else:
                candidates = (v for v in keep if v in out_adj and adjacent(u, v))
            result[u] = Neighborhood(d, {v: degree(v) for v in candidates if v != u})
        return result

    # -- reads -------------------------------------------------------------------------------------

    def _edge_key(self, source: str, target: str) -> tuple[str, str] | None:
        """The stored (source, target) of a relation, trying the reverse when relations are undirected."""
        g = self.graph
        if g.has_edge(source, target):
            return (source, target)
        if g.is_directed() and not self.directed_relations and g.has_edge(target, source):
            return (target, source)
        return None

    @override
    def get_entities(self, names: Iterable[str]) -> dict[str, Entity]:
        nodes = self.graph.nodes
        return {name: entity_from_attrs(name, nodes[name]) for name in names if name in nodes}

    @override
    def get_relations(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Relation]:
        found: dict[tuple[str, str], Relation] = {}
        for source, target in pairs:
            key = self._edge_key(source, target)
            if key is not None:
                found[(source, target)] = relation_from_attrs(key, self.graph.edges[key])
        return found

    def iter_entities(self) -> Iterator[Entity]:
        """Every entity, in insertion order."""
        for name, data in self.graph.nodes(data=True):
            yield entity_from_attrs(name, data)

    def iter_relations(self) -> Iterator[Relation]:
        """Every relation, in insertion order."""
        for source, target, data in self.graph.edges(data=True):
            yield relation_from_attrs((source, target), data)

    # -- writes ------------------------------------------------------------------------------------

    @override
    def upsert_entities(self, entities: Iterable[Entity], *, merge: Merge[Entity] | None = None) -> None:
        entities = list(entities)
        for entity in entities:  # all first: a refused name leaves the graph untouched
            check_name(entity.name)
        self._upsert_entities(entities, merge)

    def _upsert_entities(self, entities: Iterable[Entity], merge: Merge[Entity] | None) -> None:
        nodes = self.graph.nodes
        for entity in entities:
            if merge is not None and entity.name in nodes:
                entity = merge(entity_from_attrs(entity.name, nodes[entity.name]), entity)
            self.graph.add_node(entity.name)
            attrs = nodes[entity.name]
            attrs.clear()
            attrs.update(entity_attrs(entity))

    @override
    def upsert_relations(self, relations: Iterable[Relation], *, merge: Merge[Relation] | None = None) -> None:
        relations = list(relations)
        for relation in relations:
            check_name(relation.source)
            check_name(relation.target)
        self._upsert_relations(relations, merge)

    def _upsert_relations(self, relations: Iterable[Relation], merge: Merge[Relation] | None) -> None:
        g = self.graph
        for relation in relations:
            key = self._edge_key(relation.source, relation.target)
            if key is not None and merge is not None:
                relation = merge(relation_from_attrs(key, g.edges[key]), relation)
            if key is not None and key != relation.pair:
                g.remove_edge(*key)  # the merge may have re-oriented the relation
            g.add_edge(relation.source, relation.target)
            attrs = g.edges[relation.pair]
            attrs.clear()
            attrs.update(relation_attrs(relation))

    @override
    def delete_entities(self, names: Iterable[str]) -> None:
        self.graph.remove_nodes_from(list(names))

    @override
    def delete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        for pair in pairs:
            key = self._edge_key(*pair)
            if key is not None:
                self.graph.remove_edge(*key)

    # -- persistence -------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The store as plain JSON data (the on-disk format)."""
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "directed_relations": self.directed_relations,
            "entities": [e.model_dump() for e in self.iter_entities()],
            "relations": [r.model_dump() for r in self.iter_relations()],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NetworkXGraphStore:
        """A store from the data :meth:`to_json` gives.

        Raises:
            ValueError: ``data`` is not a pathrag graph document of this version.
        """
        if data.get("format") != _FORMAT or data.get("version") != _VERSION:
            raise ValueError(f"not a {_FORMAT} v{_VERSION} document")
        store = cls(directed_relations=bool(data.get("directed_relations", False)))
        # What was saved is read back as it is, even names written before stores checked them.
        store._upsert_entities((Entity.model_validate(e) for e in data["entities"]), None)
        store._upsert_relations((Relation.model_validate(r) for r in data["relations"]), None)
        return store

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``graph.json`` into ``directory`` atomically; returns the file's path."""
        path = Path(directory) / GRAPH_FILE
        atomic_write_text(path, json.dumps(self.to_json(), ensure_ascii=False))
        return path

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> NetworkXGraphStore:
        """Load a store saved by :meth:`save`; a directory without a graph gives an empty store."""
        path = Path(directory) / GRAPH_FILE
        if not path.exists():
            return cls()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read graph file {path}: {exc}") from exc
        return cls.from_json(data)

    def __len__(self) -> int:
        return int(self.graph.number_of_nodes())

    def __repr__(self) -> str:
        g = self.graph
        return f"NetworkXGraphStore({g.number_of_nodes()} entities, {g.number_of_edges()} relations)"


def as_graph_store(graph: GraphStore | nx.Graph) -> GraphStore:
    """Accept a :class:`GraphStore` as is and wrap a networkx graph (without copying it)."""
    if isinstance(graph, nx.Graph):
        return NetworkXGraphStore(graph)
    if isinstance(graph, GraphStore):
        return graph
    raise TypeError(f"expected a networkx graph or a pathrag.GraphStore, got {type(graph).__name__}")
