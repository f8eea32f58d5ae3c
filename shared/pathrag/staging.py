"""The change set of a commit: its graph and vector writes, computed first and applied all at once.

Planning a commit is slow (LLM summaries, embeddings); applying it must be short: readers of an in-memory
index see every change the moment it is made, and a store's transaction blocks other writers while it
is open. So :class:`~pathrag.PathRAGIndex` plans against these stand-ins instead of the graph and vector
indexes it owns: reads go to the real objects (the committed state), writes are recorded (vectors are
embedded at once, since that is the slow part), and :meth:`Staged.apply` makes them in one synchronous
run: in memory, with readers shown the state before until then; on a store, inside one short transaction
(see :mod:`pathrag.backend`). A failed plan changes nothing: the recorded writes are dropped.

>>> import asyncio
>>> from pathrag import NetworkXGraphStore, Relation
>>> graph = NetworkXGraphStore()
>>> staged = Staged()
>>> asyncio.run(staged.graph(graph).aupsert_relations([Relation(source="A", target="B")]))
>>> len(graph), staged.apply(), len(graph)
(0, None, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from .graph import GraphStore
from .models import Entity, Relation
from .vectors import Embedder, VectorItem

__all__ = ["StageableIndex", "Staged"]


class StageableIndex(Protocol):
    """A vector index a commit can stage: it says which items changed, and stores given vectors."""

    embedder: Embedder

    def changed(self, items: Sequence[VectorItem]) -> list[VectorItem]:
        """The items whose text or metadata differ from what the index holds."""

    def upsert_vectors(self, items: Sequence[VectorItem], vectors: Sequence[Sequence[float]]) -> None:
        """Store items with the vectors given."""

    def delete(self, ids: Iterable[str]) -> None:
        """Remove items by id."""


class Staged:
    """The recorded writes of one commit, and stand-ins that record them."""

    def __init__(self, embedded: dict[int, dict[str, Sequence[float]]] | None = None) -> None:
        # text -> vector per live index, kept by the caller across plans of one commit: planning it again
        # (another writer committed first) embeds only the texts that changed
        self._embedded = embedded if embedded is not None else {}
        self._writes: list[Callable[[], None]] = []
        self._vectors: dict[int, _StagedVectors] = {}  # one stand-in per live index: it knows the commit's items

    def __bool__(self) -> bool:
        """Whether any write was recorded."""
        return bool(self._writes)

    def graph(self, live: GraphStore) -> _StagedGraph:
        """A stand-in for ``live`` whose writes wait for :meth:`apply`."""
        return _StagedGraph(live, self._writes)

    def vectors(self, live: StageableIndex) -> _StagedVectors:
        """A stand-in for ``live`` whose writes wait for :meth:`apply` (embedding happens at once); the
        same one for every call with ``live`` in this commit."""
        if id(live) not in self._vectors:
            self._vectors[id(live)] = _StagedVectors(live, self._writes, self._embedded.setdefault(id(live), {}))
        return self._vectors[id(live)]

    def apply(self) -> None:
        """Make the recorded writes, in order, without yielding to the event loop."""
        writes, self._writes[:] = list(self._writes), []
        for write in writes:
            write()


class _StagedGraph:
    """Reads from the live graph; writes recorded. The rebuild never reads what it writes in a commit."""

    def __init__(self, live: GraphStore, writes: list[Callable[[], None]]) -> None:
        self._live, self._writes = live, writes

    def __getattr__(self, name: str) -> Any:  # reads: neighborhoods, get_entities, ...
        return getattr(self._live, name)

    def upsert_entities(self, entities: Iterable[Entity], *, merge: Any = None) -> None:
        entities = list(entities)
        if entities:
            self._writes.append(lambda: self._live.upsert_entities(entities, merge=merge))

    def upsert_relations(self, relations: Iterable[Relation], *, merge: Any = None) -> None:
        relations = list(relations)
        if relations:
            self._writes.append(lambda: self._live.upsert_relations(relations, merge=merge))

    def delete_entities(self, names: Iterable[str]) -> None:
        names = list(names)
        if names:
            self._writes.append(lambda: self._live.delete_entities(names))

    def delete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        pairs = list(pairs)
        if pairs:
            self._writes.append(lambda: self._live.delete_relations(pairs))

    async def aupsert_entities(self, entities: Iterable[Entity], *, merge: Any = None) -> None:
        self.upsert_entities(entities, merge=merge)

    async def aupsert_relations(self, relations: Iterable[Relation], *, merge: Any = None) -> None:
        self.upsert_relations(relations, merge=merge)

    async def adelete_entities(self, names: Iterable[str]) -> None:
        self.delete_entities(names)

    async def adelete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        self.delete_relations(pairs)


class _StagedVectors:
    """Reads from the live index; upserts embedded now and stored at :meth:`Staged.apply`."""

    def __init__(
        self, live: StageableIndex, writes: list[Callable[[], None]], embedded: dict[str, Sequence[float]]
    ) -> None:
        self._live, self._writes, self._embedded = live, writes, embedded
        self._held: dict[str, VectorItem | None] = {}  # what this commit wrote so far (None: deleted)

    def __getattr__(self, name: str) -> Any:  # reads: query, get, ids, ...
        return getattr(self._live, name)

    def __len__(self) -> int:
        return len(self._live)  # type: ignore[arg-type]

    def _fresh(self, items: Sequence[VectorItem]) -> list[VectorItem]:
        """Items that differ from what the index will hold: this commit's writes first, then the live index."""
        latest = {item.id: item for item in items}  # the last of duplicate ids wins, as in the index
        held = {i: item for i, item in latest.items() if i in self._held}
        unheld = self._live.changed([item for i, item in latest.items() if i not in self._held])
        return [item for i, item in held.items() if self._held[i] != item] + unheld

    def _embedding(self, fresh: list[VectorItem]) -> list[str]:
        """The texts of ``fresh`` to embed: those no earlier plan of this commit embedded."""
        return [item.text for item in fresh if item.text not in self._embedded]

    def _remember(self, texts: list[str], vectors: Sequence[Sequence[float]]) -> None:
        if len(vectors) != len(texts):  # refused now, while planning, not when applying
            raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(texts)} texts")
        self._embedded.update(zip(texts, vectors, strict=True))

    def upsert(self, items: Sequence[VectorItem]) -> None:
        fresh = self._fresh(items)
        if fresh:
            texts = self._embedding(fresh)
            self._remember(texts, self._live.embedder.embed(texts) if texts else [])
            self.upsert_vectors(fresh, [self._embedded[item.text] for item in fresh])

    async def aupsert(self, items: Sequence[VectorItem]) -> None:
        fresh = self._fresh(items)
        if fresh:
            texts = self._embedding(fresh)
            self._remember(texts, await self._live.embedder.aembed(texts) if texts else [])
            self.upsert_vectors(fresh, [self._embedded[item.text] for item in fresh])

    def upsert_vectors(self, items: Sequence[VectorItem], vectors: Sequence[Sequence[float]]) -> None:
        items, vectors = list(items), list(vectors)
        if len(vectors) != len(items):  # refused now, while planning, not when applying
            raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(items)} texts")
        self._held.update((item.id, item) for item in items)
        self._writes.append(lambda: self._live.upsert_vectors(items, vectors))

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        self._held.update((i, None) for i in ids)
        if ids:
            self._writes.append(lambda: self._live.delete(ids))

    async def adelete(self, ids: Iterable[str]) -> None:
        self.delete(ids)
