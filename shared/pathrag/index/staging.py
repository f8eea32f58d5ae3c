"""The change set of a commit: its graph and vector writes, computed first and applied all at once.

Planning a commit is slow (LLM summaries, embeddings); applying it must be short: readers of an in-memory
index see every change the moment it is made, and a store's transaction blocks other writers while it
is open. So :class:`~pathrag.PathRAGIndex` plans against these stand-ins instead of the graph and vector
indexes it owns: reads go to the real objects (the committed state), writes are recorded (vectors are
embedded at once, since that is the slow part), and :meth:`Staged.apply` makes them in one synchronous
run: in memory, with readers shown the state before until then; on a store, inside one short transaction
(see :mod:`pathrag.index.backend`). A failed plan changes nothing: the recorded writes are dropped. A failed
apply changes nothing either: a store's transaction rolls back, and in memory (``undo=True``) each write
first notes what it will overwrite, put back if a later write raises.

>>> import asyncio
>>> from pathrag import NetworkXGraphStore, Relation
>>> graph = NetworkXGraphStore()
>>> staged = Staged()
>>> asyncio.run(staged.graph(graph).aupsert_relations([Relation(source="A", target="B")]))
>>> len(graph), staged.apply(), len(graph)
(0, None, 2)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from ..graphs.base import GraphStore
from ..models import Entity, Relation
from ..vectors.base import Embedder, VectorItem

__all__ = ["StageableIndex", "Staged"]

logger = logging.getLogger(__name__)


class StageableIndex(Protocol):
    """A vector index a commit can stage: it says which items changed, and stores given vectors."""

    embedder: Embedder

    def changed(self, items: Sequence[VectorItem]) -> list[VectorItem]:
        """The items whose text or metadata differ from what the index holds."""

    def upsert_vectors(self, items: Sequence[VectorItem], vectors: Sequence[Sequence[float]]) -> None:
        """Store items with the vectors given."""

    def delete(self, ids: Iterable[str]) -> None:
        """Remove items by id."""


_Write = tuple[Callable[[], None], Callable[[], Callable[[], None]]]
"""A recorded write, and what notes the state it changes (returning what puts that state back)."""


class Staged:
    """The recorded writes of one commit, and stand-ins that record them."""

    def __init__(self, embedded: dict[int, dict[str, Sequence[float]]] | None = None) -> None:
        # text -> vector per live index, kept by the caller across plans of one commit: planning it again
        # (another writer committed first) embeds only the texts that changed
        self._embedded = embedded if embedded is not None else {}
        self._writes: list[_Write] = []
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

    def apply(self, *, undo: bool = False) -> None:
        """Make the recorded writes, in order, without yielding to the event loop. With ``undo`` (no
        transaction to roll back: in memory), all or nothing: a write that raises has the writes before it,
        and itself, undone (in reverse order) before the exception propagates."""
        writes, self._writes[:] = list(self._writes), []
        if not undo:
            for write, _ in writes:
                write()
            return
        undos: list[Callable[[], None]] = []
        try:
            for write, journal in writes:
                undos.append(journal())  # before the write: it may raise half-way through
                write()
        except BaseException:
            _put_back(undos)
            raise


def _put_back(undos: list[Callable[[], None]]) -> None:
    """Undo the writes made, last first; one that cannot be undone is logged and the others still are."""
    for put_back in reversed(undos):
        try:
            put_back()
        except Exception:
            logger.exception("a failed commit could not undo one of its writes: the index may hold part of it")


def _relations_of(live: GraphStore, pairs: Sequence[tuple[str, str]]) -> list[Relation]:
    """The stored relations of ``pairs`` either way round, each once, as stored."""
    found = live.get_relations([*pairs, *((t, s) for s, t in pairs)])
    return list({r.pair: r for r in found.values()}.values())


def _undo_upsert_entities(live: GraphStore, names: list[str]) -> Callable[[], None]:
    before = live.get_entities(names)
    new = [n for n in dict.fromkeys(names) if n not in before]  # no relation of theirs is left to undo

    def undo() -> None:
        live.delete_entities(new)
        live.upsert_entities(before.values())

    return undo


def _undo_upsert_relations(live: GraphStore, pairs: list[tuple[str, str]]) -> Callable[[], None]:
    before = _relations_of(live, pairs)  # a merge may re-orient a relation: both ways round
    ends = list(dict.fromkeys(n for pair in pairs for n in pair))
    known = live.get_entities(ends)

    def undo() -> None:
        live.delete_relations([*pairs, *((t, s) for s, t in pairs)])
        live.upsert_relations(before)
        live.delete_entities([n for n in ends if n not in known])  # endpoints the write created bare

    return undo


def _undo_delete_entities(live: GraphStore, names: list[str]) -> Callable[[], None]:
    entities = live.get_entities(names)
    hoods = live.neighborhoods(dict.fromkeys(entities, None))
    relations = _relations_of(live, [(n, v) for n, hood in hoods.items() for v in [n, *hood.neighbors]])

    def undo() -> None:
        live.upsert_entities(entities.values())
        live.upsert_relations(relations)

    return undo


def _undo_delete_relations(live: GraphStore, pairs: list[tuple[str, str]]) -> Callable[[], None]:
    before = list({r.pair: r for r in live.get_relations(pairs).values()}.values())
    return lambda: live.upsert_relations(before)


def _undo_vectors(live: StageableIndex, ids: list[str]) -> Callable[[], None]:
    """What puts back the items ``ids`` of ``live`` (an index that cannot note them is left as it is)."""
    entries, restore = getattr(live, "entries", None), getattr(live, "restore", None)
    if entries is None or restore is None:
        return lambda: None
    held = entries(ids)
    return lambda: restore(held)


class _StagedGraph:
    """Reads from the live graph; writes recorded. The rebuild never reads what it writes in a commit."""

    def __init__(self, live: GraphStore, writes: list[_Write]) -> None:
        self._live, self._writes = live, writes

    def __getattr__(self, name: str) -> Any:  # reads: neighborhoods, get_entities, ...
        return getattr(self._live, name)

    def upsert_entities(self, entities: Iterable[Entity], *, merge: Any = None) -> None:
        entities, live = list(entities), self._live
        if entities:
            names = [e.name for e in entities]
            self._writes.append(
                (lambda: live.upsert_entities(entities, merge=merge), lambda: _undo_upsert_entities(live, names))
            )

    def upsert_relations(self, relations: Iterable[Relation], *, merge: Any = None) -> None:
        relations, live = list(relations), self._live
        if relations:
            pairs = [r.pair for r in relations]
            self._writes.append(
                (lambda: live.upsert_relations(relations, merge=merge), lambda: _undo_upsert_relations(live, pairs))
            )

    def delete_entities(self, names: Iterable[str]) -> None:
        names, live = list(names), self._live
        if names:
            self._writes.append((lambda: live.delete_entities(names), lambda: _undo_delete_entities(live, names)))

    def delete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        pairs, live = [(s, t) for s, t in pairs], self._live
        if pairs:
            self._writes.append((lambda: live.delete_relations(pairs), lambda: _undo_delete_relations(live, pairs)))

    async def aupsert_entities(self, entities: Iterable[Entity], *, merge: Any = None) -> None:
        self.upsert_entities(entities, merge=merge)

    async def aupsert_relations(self, relations: Iterable[Relation], *, merge: Any = None) -> None:
        self.upsert_relations(relations, merge=merge)

    async def adelete_entities(self, names: Iterable[str]) -> None:
        self.delete_entities(names)

    async def adelete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        self.delete_relations(pairs)


def _compact(vectors: Sequence[Sequence[float]]) -> Sequence[Sequence[float]]:
    """The rows of one float32 matrix for an embedder's vectors of one length (as lists of Python floats,
    a commit of a bulk import's 3·10⁵ vectors of 384 dimensions held 3.7 GB until applied; as a matrix,
    0.46 GB); anything else as given, for the index to refuse or convert as it does."""
    if len(vectors) == 0:  # an embedder may return a numpy matrix: no truth value
        return vectors
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError):  # ragged, or not numbers: the index says what is wrong
        return vectors
    return list(matrix) if matrix.ndim == 2 and len(matrix) == len(vectors) else vectors


class _StagedVectors:
    """Reads from the live index; upserts embedded now and stored at :meth:`Staged.apply`."""

    def __init__(self, live: StageableIndex, writes: list[_Write], embedded: dict[str, Sequence[float]]) -> None:
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
        self._embedded.update(zip(texts, _compact(vectors), strict=True))

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
        live, ids = self._live, [item.id for item in items]
        self._writes.append((lambda: live.upsert_vectors(items, vectors), lambda: _undo_vectors(live, ids)))

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        self._held.update((i, None) for i in ids)
        live = self._live
        if ids:
            self._writes.append((lambda: live.delete(ids), lambda: _undo_vectors(live, ids)))

    async def adelete(self, ids: Iterable[str]) -> None:
        self.delete(ids)
