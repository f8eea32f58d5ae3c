"""The last phase of a write: a planned change set applied at once (see :mod:`pathrag.index.staging`).

:class:`Committer` runs a plan (a coroutine of :mod:`pathrag.index.plan` that reads the committed state and
writes through the record tables, :meth:`Committer.written_graph` and :meth:`Committer.written_index`) with
a fresh change set, then has the backend apply it. No LLM or embedding call runs while a store's
transaction is open: they are all made while planning.

In a store, when the index owns its graph and vector indexes, the plan is made before the writer lock;
under it, it is applied if no other process committed meanwhile, else made again, paying only for what
that commit changed (summaries are kept by prompt, embeddings by text). A graph or vector store passed in
is written as the plan goes, so a plan that may be thrown away must not touch it: then the plan is made
under the lock.

>>> import asyncio
>>> from pathrag import HashingEmbedder, NetworkXGraphStore, InMemoryVectorIndex
>>> from pathrag.index.backend import MemoryBackend
>>> backend = MemoryBackend()
>>> graph = NetworkXGraphStore()
>>> indexes = {name: InMemoryVectorIndex(HashingEmbedder(8)) for name in ("entities", "relations", "chunks")}
>>> committer = Committer(backend, graph, indexes, lock_timeout=0.0)
>>> async def plan() -> str:
...     from pathrag import Entity
...     await committer.written_graph().aupsert_entities([Entity(name="A")])
...     return "planned"
>>> asyncio.run(committer.commit(plan)), len(graph)
('planned', 1)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

from ..graphs.base import GraphStore
from ..vectors.base import VectorIndex
from .backend import IndexBackend
from .staging import Staged

__all__ = ["Committer"]

T = TypeVar("T")


class Committer:
    """Plans and applies the commits of one index (its ``graph`` and ``vector_indexes``) on ``backend``."""

    def __init__(
        self,
        backend: IndexBackend,
        graph: GraphStore,
        vector_indexes: Mapping[str, VectorIndex],
        *,
        lock_timeout: float,
    ) -> None:
        self.backend = backend
        self.graph = graph
        self.vector_indexes = vector_indexes
        self.lock_timeout = lock_timeout
        self.staged: Staged | None = None  # the change set of the commit being planned

    async def commit(self, plan: Callable[[], Awaitable[T]]) -> T:
        """Plan a commit with ``plan`` and apply it (see the module docstring); ``plan``'s answer."""
        backend = self.backend
        embedded: dict[int, dict[str, Sequence[float]]] = {}  # vectors by text, kept across plans
        staged: Staged | None = None
        try:
            if backend.plans_ahead and self.stages_everything():
                backend.refresh()
                result, staged = await self._plan(plan, embedded)
            async with backend.applying(self.lock_timeout) as overtaken:
                while staged is None or overtaken or not backend.apply(staged):
                    if staged is not None:
                        backend.abandon()
                        backend.refresh()
                    result, staged = await self._plan(plan, embedded)
                    overtaken = False
        except BaseException:
            backend.abandon()
            raise
        return result

    async def _plan(
        self, plan: Callable[[], Awaitable[T]], embedded: dict[int, dict[str, Sequence[float]]]
    ) -> tuple[T, Staged]:
        """Run ``plan`` with a fresh change set (``embedded``: the vectors of earlier plans of this commit)."""
        self.backend.begin()
        self.staged = staged = Staged(embedded)
        try:
            return await plan(), staged
        finally:
            self.staged = None

    def stages_everything(self) -> bool:
        """Whether the graph and every vector index are kinds a commit stages (the index's own kinds)."""
        stages = self.backend.kinds.stages
        return stages(self.graph) and all(stages(index) for index in self.vector_indexes.values())

    def graph_staged(self) -> bool:
        """Whether the open commit stages its graph writes and applies them with its records."""
        return self.staged is not None and self.backend.kinds.stages(self.graph)

    def written_graph(self) -> GraphStore:
        """The graph a commit writes to: the one it owns through a stand-in holding the writes back until its
        end (another graph store is written as the commit goes: its own store decides what readers see)."""
        if self.staged is not None and self.backend.kinds.stages(self.graph):
            return self.staged.graph(self.graph)
        return self.graph

    def written_index(self, name: str) -> VectorIndex:
        """The vector index ``name`` a commit writes to (see :meth:`written_graph`)."""
        index = self.vector_indexes[name]
        if self.staged is not None and self.backend.kinds.stages(index):
            return self.staged.vectors(index)  # type: ignore[arg-type]  # an own kind: stageable
        return index
