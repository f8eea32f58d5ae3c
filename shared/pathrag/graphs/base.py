"""The graph store protocol the core reads and writes through, and the base class of the stores.

Path search needs one operation, :meth:`GraphStore.neighborhoods`: for a whole frontier of nodes at
once, each node's traversal degree and its neighbours with *their* degrees. A database backend answers
it in one round trip per hop. A node whose degree exceeds the requested limit lists only the
neighbours in ``keep`` (the seeds and the nodes already known to be expandable): this is how a hub
with 10⁴ neighbours costs nothing when none of them can matter.

>>> import networkx as nx
>>> from pathrag.graphs.memory import NetworkXGraphStore
>>> store = NetworkXGraphStore(nx.Graph([("a", "b"), ("b", "c")]))
>>> store.neighborhoods({"b": None})["b"]
Neighborhood(degree=2, neighbors={'a': 1, 'c': 1})
>>> store.neighborhoods({"b": 0}, keep={"c"})["b"]
Neighborhood(degree=2, neighbors={'c': 1})
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from typing_extensions import override

from ..models import Entity, Relation

__all__ = [
    "stored_pair",
    "BaseGraphStore",
    "GraphStore",
    "Merge",
    "Neighborhood",
    "entity_attrs",
    "entity_from_attrs",
    "relation_attrs",
    "relation_from_attrs",
]

T = TypeVar("T", Entity, Relation)
R = TypeVar("R")
Merge = Callable[[T, T], T]
"""A merge hook: ``merge(existing, incoming) -> stored``."""


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
