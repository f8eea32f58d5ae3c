"""Graph stores: the protocol the core reads and writes through, and the embedded networkx store.

Path search needs one operation, :meth:`GraphStore.neighborhoods`: for a whole frontier of nodes at
once, each node's traversal degree and its neighbours with *their* degrees. A database backend answers
it in one round trip per hop. A node whose degree exceeds the requested limit lists only the
neighbours in ``keep`` (the seeds and the nodes already known to be expandable): this is how a hub
with 10⁴ neighbours costs nothing when none of them can matter.

>>> import networkx as nx
>>> from pathrag.graph import NetworkXGraphStore
>>> store = NetworkXGraphStore(nx.Graph([("a", "b"), ("b", "c")]))
>>> store.neighborhoods({"b": None})["b"]
Neighborhood(degree=2, neighbors={'a': 1, 'c': 1})
>>> store.neighborhoods({"b": 0}, keep={"c"})["b"]
Neighborhood(degree=2, neighbors={'c': 1})
"""

from __future__ import annotations

import asyncio
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

import networkx as nx
from typing_extensions import override

from .models import Entity, Relation
from .names import check_name
from .storage import atomic_write_text

__all__ = [
    "stored_pair",
    "BaseGraphStore",
    "GraphStore",
    "Neighborhood",
    "NetworkXGraphStore",
    "as_graph_store",
]

T = TypeVar("T", Entity, Relation)
R = TypeVar("R")
Merge = Callable[[T, T], T]
"""A merge hook: ``merge(existing, incoming) -> stored``."""

GRAPH_FILE = "graph.json"
_FORMAT = "pathrag-graph"
_VERSION = 1


@dataclass(frozen=True, slots=True)
class Neighborhood:
    """One node's traversal degree and (some of) its neighbours, each with its own traversal degree."""

    degree: int
    neighbors: dict[str, int]


@runtime_checkable
class GraphStore(Protocol):
    """What the core needs from a graph database. Every read and write is batched.

    The structural type: any object with these fourteen methods is a graph store (``isinstance`` works);
    subclass :class:`BaseGraphStore` to write only the seven sync ones. Entities are keyed by name;
    a relation is identified by its pair of endpoints. Unknown names and pairs are left out of
    answers, never an error. ``pathrag.testing.GraphStoreContract`` is the test suite of this contract.
    """

    def neighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        """One hop of a path search, for a whole frontier at once.

        Args:
            requests: node name -> degree limit. A node whose traversal degree is at most its limit
                (``None``: no limit) lists all its neighbours; one above it lists only those in ``keep``.
            directed: ``True``: a node's neighbours are the targets of its out-edges (relations in their
                recorded direction); ``False``: every node sharing a relation with it, either way.
            keep: the names a node over its limit still lists (the seeds and the nodes already known
                to be expandable), when they are its neighbours.

        Returns:
            For each requested node that exists (unknown ones are left out; an isolated entity is
            ``Neighborhood(0, {})``): its traversal degree and its listed neighbours, each with its own
            traversal degree (same ``directed``). Degrees count distinct neighbours, self-loops excluded.
        """
        ...

    async def aneighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        """Async twin of :meth:`neighborhoods`: same arguments, same answer."""
        ...

    def get_entities(self, names: Iterable[str]) -> dict[str, Entity]:
        """Entities by name.

        Args:
            names: entity names (any iterable, duplicates allowed).

        Returns:
            name -> :class:`~pathrag.Entity` for the names that exist; the others are left out.
        """
        ...

    async def aget_entities(self, names: Iterable[str]) -> dict[str, Entity]:
        """Async twin of :meth:`get_entities`."""
        ...

    def get_relations(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Relation]:
        """Relations by pair of endpoints.

        Args:
            pairs: ``(source, target)`` pairs. A pair finds the relation stored either way round
                (only the exact direction on a store with ``directed_relations=True``).

        Returns:
            Keyed by the pair *as asked*; each :class:`~pathrag.Relation` keeps its recorded direction
            (``("B", "A")`` may answer a relation ``A -> B``). Pairs without a relation are left out.
        """
        ...

    async def aget_relations(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Relation]:
        """Async twin of :meth:`get_relations`."""
        ...

    def upsert_entities(self, entities: Iterable[Entity], *, merge: Merge[Entity] | None = None) -> None:
        """Insert or replace entities, keyed by name.

        Args:
            entities: the entities to write; within one batch each sees the ones before it.
            merge: ``merge(existing, incoming) -> stored``, called only for a name already stored;
                without it the incoming entity replaces the stored one.

        Raises:
            EntityNameError: pathrag's stores refuse a name some store cannot hold
                (:func:`pathrag.names.check_name`) before writing anything; they never rename.
        """
        ...

    async def aupsert_entities(self, entities: Iterable[Entity], *, merge: Merge[Entity] | None = None) -> None:
        """Async twin of :meth:`upsert_entities`."""
        ...

    def upsert_relations(self, relations: Iterable[Relation], *, merge: Merge[Relation] | None = None) -> None:
        """Insert or replace relations, identified by their pair of endpoints.

        A relation replaces the one stored on its pair, either way round unless the store has
        ``directed_relations=True``, and is then stored in the new relation's direction. Missing
        endpoints are created as bare entities (no type, description or sources); stored ones are
        left as they are.

        Args:
            relations: the relations to write; within one batch each sees the ones before it.
            merge: ``merge(existing, incoming) -> stored`` for a pair already stored (the result may
                be oriented either way); as for entities otherwise.

        Raises:
            EntityNameError: as :meth:`upsert_entities`, for either endpoint.
        """
        ...

    async def aupsert_relations(self, relations: Iterable[Relation], *, merge: Merge[Relation] | None = None) -> None:
        """Async twin of :meth:`upsert_relations`."""
        ...

    def delete_entities(self, names: Iterable[str]) -> None:
        """Delete entities and every relation touching them; unknown names are ignored.

        Args:
            names: entity names.
        """
        ...

    async def adelete_entities(self, names: Iterable[str]) -> None:
        """Async twin of :meth:`delete_entities`."""
        ...

    def delete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Delete the relation on each pair, found as by :meth:`get_relations`; endpoints stay, and
        pairs without a relation are ignored.

        Args:
            pairs: ``(source, target)`` pairs.
        """
        ...

    async def adelete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Async twin of :meth:`delete_relations`."""
        ...


def stored_pair(
    stored: Mapping[tuple[str, str], Any], source: str, target: str, *, directed: bool
) -> tuple[str, str] | None:
    """The key under which ``stored`` (relations read for some pairs) holds the relation of a pair: the
    pair as given, else, for undirected relations, its reverse; ``None`` if neither.

    >>> stored = {("A", "B"): "r"}
    >>> stored_pair(stored, "B", "A", directed=False), stored_pair(stored, "B", "A", directed=True)
    (('A', 'B'), None)
    """
    if (source, target) in stored:
        return (source, target)
    if not directed and (target, source) in stored:
        return (target, source)
    return None


class BaseGraphStore(GraphStore, ABC):
    """A :class:`GraphStore` written as its seven sync methods: each async twin runs its sync method.

    How is a class choice, :attr:`async_in_thread`:

    * ``True`` (the default, for stores doing blocking I/O: a database client, files): in a worker
      thread (``asyncio.to_thread``), so the event loop keeps running meanwhile. The sync methods must
      then be safe to call from any thread. Iterables are turned into lists first, on the caller's
      thread, so a generator is never consumed by another thread.
    * ``False``: directly, on the event loop's thread. For in-memory stores (a call takes microseconds,
      less than a thread hop, and nothing else then touches the data while it runs) and for stores whose
      sync methods depend on per-thread state, like :class:`pathrag.sqlite.SQLiteGraphStore` (a read
      transaction opened with ``SQLiteStore.snapshot()`` and the writer's transaction lock belong to
      the thread that opened them).

    A store with a real async path (an async driver) overrides those async methods. Check a store
    with :class:`pathrag.testing.GraphStoreContract`.

    >>> class Tiny(BaseGraphStore):  # a store of isolated entities, enough to show the twins
    ...     async_in_thread = False
    ...     def __init__(self): self.entities = {}
    ...     def neighborhoods(self, requests, *, directed=False, keep=()):
    ...         return {name: Neighborhood(0, {}) for name in requests if name in self.entities}
    ...     def get_entities(self, names): return {n: self.entities[n] for n in names if n in self.entities}
    ...     def get_relations(self, pairs): return {}
    ...     def upsert_entities(self, entities, *, merge=None):
    ...         for e in entities:
    ...             old = self.entities.get(e.name)
    ...             self.entities[e.name] = e if old is None or merge is None else merge(old, e)
    ...     def upsert_relations(self, relations, *, merge=None): raise NotImplementedError
    ...     def delete_entities(self, names):
    ...         for name in names: self.entities.pop(name, None)
    ...     def delete_relations(self, pairs): pass
    >>> import asyncio
    >>> store = Tiny()
    >>> asyncio.run(store.aupsert_entities([Entity(name="A")]))
    >>> asyncio.run(store.aneighborhoods({"A": None, "B": None})), isinstance(store, GraphStore)
    ({'A': Neighborhood(degree=0, neighbors={})}, True)
    """

    #: Whether the async twins run the sync methods in a worker thread (see the class docstring).
    async_in_thread: ClassVar[bool] = True

    async def _sync(self, method: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
        """``method(*args, **kwargs)``, in a worker thread if :attr:`async_in_thread`."""
        if self.async_in_thread:
            return await asyncio.to_thread(method, *args, **kwargs)
        return method(*args, **kwargs)

    @abstractmethod
    def neighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        """See :meth:`GraphStore.neighborhoods`."""

    @override
    async def aneighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        return await self._sync(self.neighborhoods, requests, directed=directed, keep=keep)

    @abstractmethod
    def get_entities(self, names: Iterable[str]) -> dict[str, Entity]:
        """See :meth:`GraphStore.get_entities`."""

    @override
    async def aget_entities(self, names: Iterable[str]) -> dict[str, Entity]:
        return await self._sync(self.get_entities, list(names))

    @abstractmethod
    def get_relations(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Relation]:
        """See :meth:`GraphStore.get_relations`."""

    @override
    async def aget_relations(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Relation]:
        return await self._sync(self.get_relations, list(pairs))

    @abstractmethod
    def upsert_entities(self, entities: Iterable[Entity], *, merge: Merge[Entity] | None = None) -> None:
        """See :meth:`GraphStore.upsert_entities`."""

    @override
    async def aupsert_entities(self, entities: Iterable[Entity], *, merge: Merge[Entity] | None = None) -> None:
        await self._sync(self.upsert_entities, list(entities), merge=merge)

    @abstractmethod
    def upsert_relations(self, relations: Iterable[Relation], *, merge: Merge[Relation] | None = None) -> None:
        """See :meth:`GraphStore.upsert_relations`."""

    @override
    async def aupsert_relations(self, relations: Iterable[Relation], *, merge: Merge[Relation] | None = None) -> None:
        await self._sync(self.upsert_relations, list(relations), merge=merge)

    @abstractmethod
    def delete_entities(self, names: Iterable[str]) -> None:
        """See :meth:`GraphStore.delete_entities`."""

    @override
    async def adelete_entities(self, names: Iterable[str]) -> None:
        await self._sync(self.delete_entities, list(names))

    @abstractmethod
    def delete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        """See :meth:`GraphStore.delete_relations`."""

    @override
    async def adelete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        await self._sync(self.delete_relations, list(pairs))


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


def entity_from_attrs(name: Any, data: Mapping[str, Any]) -> Entity:
    """The entity stored as node ``name`` with attributes ``data`` (as :func:`entity_attrs` writes them)."""
    return Entity(
        name=str(name),
        type=str(data.get("type", "") or ""),
        description=str(data.get("description", "") or ""),
        source_ids=data.get("source_ids", ()),
    )


def entity_attrs(entity: Entity) -> dict[str, Any]:
    """The attributes a graph store keeps for ``entity`` besides its name."""
    return {"type": entity.type, "description": entity.description, "source_ids": list(entity.source_ids)}


def relation_from_attrs(key: tuple[Any, Any], data: Mapping[str, Any]) -> Relation:
    """The relation stored as edge ``key`` with attributes ``data`` (as :func:`relation_attrs` writes them)."""
    weight = data.get("weight", 1.0)
    return Relation(
        source=str(key[0]),
        target=str(key[1]),
        description=str(data.get("description", "") or ""),
        keywords=data.get("keywords", ()),
        weight=float(weight) if isinstance(weight, (int, float)) else 1.0,
        source_ids=data.get("source_ids", ()),
    )


def relation_attrs(relation: Relation) -> dict[str, Any]:
    """The attributes a graph store keeps for ``relation`` besides its two ends."""
    return {
        "description": relation.description,
        "keywords": list(relation.keywords),
        "weight": relation.weight,
        "source_ids": list(relation.source_ids),
    }
