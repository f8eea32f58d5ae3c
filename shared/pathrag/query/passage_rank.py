"""Passages ranked from the paths: the paper's flow, run to convergence over entities and passages.

The evidence context (``context="evidence"``, the default) ranks its passages by where the question's
evidence flows in the graph, so that a passage no similarity search reaches (the second or third hop
of a multi-hop question) is ranked in when the graph connects it to what the question says.

**Graph.** Entities, joined by their relations, and passages, each joined to the entities extracted
from it (an entity's ``source_ids`` one way, a passage's ``entities`` metadata the other).

**Restart.** Three sources of evidence, each made a distribution, share the restart equally (a source
with nothing to say gives its share to the others):

1. *what the passages say*: the ``num_passages`` passages most similar to the question, in proportion
   to their similarity scaled to [0, 1] between the least and the most similar of them;
2. *what the question names*: the entities it spells out (:mod:`pathrag.query.linking`), each in inverse
   proportion to the number of passages naming it (a name found everywhere says little about any one
   passage);
3. *what the paths found*: the passages the ``top_k`` key paths' relations were stated in, each path
   in proportion to its score, split equally over its passages.

**Flow.** The paper's flow, with one change: a node keeps ``1 - α`` of what reaches it and passes
``α`` on, split equally over its neighbours, *every time* something reaches it, not once. Run to
convergence, this is a personalized PageRank with damping ``α`` from the restart (HippoRAG 2 ranks
passages the same way, from other seeds). It is computed by the push method (Andersen, Chung and Lang,
2006): a node passes on what it holds only when that is at least :data:`PUSH_TOLERANCE` per neighbour,
the rule of the paper's θ. So at most ``1 / (PUSH_TOLERANCE · (1 - α))`` neighbour visits happen,
whatever the size of the graph; a hub that receives little is never expanded, and a node is read
from the store only when it is about to pass something on, one batched read per kind per round.

**Stages.** Retrieval runs the flow in two stages (:meth:`PassageRank.add_source` continues it): the
first two sources rank the passages that weigh the key paths' relations (:mod:`pathrag.query.query_paths`);
then the third joins and the flow, continued, ranks the passages returned.

**Score.** A passage's rank, plus ``1 - α`` of what it holds unspread at the end (what it would keep by
passing it on). Passages best first; the candidates the flow never reached keep their similarity
order after those it did. The README's benchmark section has the measured recall.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..graphs.base import GraphStore
from ..models import Entity, RetrievedItem
from ..vectors.base import VectorHit, VectorIndex, VectorItem
from .steps import Step, Steps

__all__ = [
    "MAX_ROUNDS",
    "PUSH_TOLERANCE",
    "PassageRank",
    "named_source",
    "paths_source",
    "ranked_ids",
    "read_passages",
    "similar_source",
    "spread",
]

#: A node passes on what it holds only when that is at least this much per neighbour (the restart
#: sums to 1). Recall@5 on the dev sets moves by at most 2 points between 10⁻³ and 10⁻⁵; 10⁻⁴ reads
#: about a thousand nodes a question there.
PUSH_TOLERANCE = 1e-4

#: At most this many rounds of pushes, each one batched read per kind. A round pushes only nodes holding
#: at least the tolerance per neighbour, so it visits at most ``1 / PUSH_TOLERANCE`` neighbours: the
#: bound that holds even when ``alpha`` is 1 and nothing is kept (the dev sets need 20 to 40 rounds).
MAX_ROUNDS = 100

_ENTITY, _PASSAGE = "entity", "passage"
Node = tuple[str, str]  # (kind, name or chunk id)


def _normalised(weights: Mapping[str, float]) -> dict[str, float]:
    positive = {key: value for key, value in weights.items() if value > 0}
    total = sum(positive.values())
    return {key: value / total for key, value in positive.items()} if total > 0 else {}


def similar_source(candidates: Sequence[VectorHit]) -> dict[Node, float]:
    """What the passages say: the candidates, in proportion to their similarity scaled to [0, 1] between
    the least and the most similar of them (all alike when they are equally similar).

    >>> from pathrag import VectorHit
    >>> source = similar_source([VectorHit("c1", 0.9), VectorHit("c2", 0.5), VectorHit("c3", 0.7)])
    >>> {node: round(share, 3) for node, share in source.items()}
    {('passage', 'c1'): 0.667, ('passage', 'c3'): 0.333}
    """
    scores = [hit.score for hit in candidates]
    low, high = min(scores, default=0.0), max(scores, default=0.0)
    scaled = {hit.id: (hit.score - low) / (high - low) if high > low else 1.0 for hit in candidates}
    return {(_PASSAGE, cid): share for cid, share in _normalised(scaled).items()}


def named_source(named: Mapping[str, Entity]) -> dict[Node, float]:
    """What the question names: its entities, each in inverse proportion to the passages naming it.

    >>> from pathrag import Entity
    >>> named_source({"ADA": Entity(name="ADA", source_ids=["c1"]),
    ...               "LAB": Entity(name="LAB", source_ids=["c1", "c2", "c3"])})
    {('entity', 'ADA'): 0.75, ('entity', 'LAB'): 0.25}
    """
    weights = {name: 1.0 / max(len(entity.source_ids), 1) for name, entity in named.items()}
    return {(_ENTITY, name): share for name, share in _normalised(weights).items()}


def paths_source(paths: Sequence[RetrievedItem]) -> dict[Node, float]:
    """What the paths found: the passages their relations were stated in, each path in proportion to its
    score, split equally over its passages."""
    stated: dict[str, float] = {}
    for path in paths:
        for cid in path.source_ids:
            stated[cid] = stated.get(cid, 0.0) + max(path.score, 0.0) / len(path.source_ids)
    return {(_PASSAGE, cid): share for cid, share in _normalised(stated).items()}


@dataclass
class PassageRank:
    """A personalized PageRank in progress: settled rank, unspread residual, and what the store said of
    each node reached. The restart is the sources added so far, in equal shares (:meth:`add_source`);
    ``alpha`` is the share a node passes on, ``tolerance`` the least it passes on per neighbour."""

    alpha: float
    tolerance: float = PUSH_TOLERANCE
    sources: int = 0
    rank: dict[Node, float] = field(default_factory=dict)
    residual: dict[Node, float] = field(default_factory=dict)
    degree: dict[Node, int] = field(default_factory=dict)  # known degrees (a hub's, before its neighbours)
    neighbours: dict[Node, tuple[Node, ...]] = field(default_factory=dict)
    passages: dict[str, VectorItem] = field(default_factory=dict)  # what is known of each passage
    touched: set[Node] = field(default_factory=set)  # nodes whose residual grew since last looked at

    def add_source(self, source: Mapping[Node, float]) -> None:
        """Give ``source`` (a distribution) an equal share of the restart, after what is spread already.

        A PageRank is linear in its restart, and the push method keeps ``rank + PageRank(residual)`` equal
        to the PageRank of the restart so far; so scaling both by ``n / (n + 1)`` and adding the new source
        at ``1 / (n + 1)`` to the residual continues the same flow: nothing spread is spread again. An
        empty source changes nothing.

        >>> state = PassageRank(alpha=0.8)
        >>> state.add_source({("entity", "A"): 1.0}); state.add_source({("entity", "B"): 1.0})
        >>> state.residual
        {('entity', 'A'): 0.5, ('entity', 'B'): 0.5}
        """
        if not source:
            return
        keep = self.sources / (self.sources + 1)
        self.rank = {node: keep * value for node, value in self.rank.items()}
        self.residual = {node: keep * value for node, value in self.residual.items()}
        for node, share in source.items():
            self.residual[node] = self.residual.get(node, 0.0) + share / (self.sources + 1)
        self.touched.update(source)
        self.sources += 1

    def pushable(self, node: Node) -> bool:
        """Whether ``node`` holds enough to pass on (unknown degree: at least one neighbour assumed)."""
        return self.residual.get(node, 0.0) >= self.tolerance * max(self.degree.get(node, 1), 1)

    def push(self, node: Node) -> tuple[Node, ...]:
        """Settle ``node``: keep ``1 - α`` of what it holds, pass ``α`` on, split equally over its neighbours.
        Returns the neighbours it passed to."""
        held = self.residual.pop(node)
        targets = self.neighbours[node]
        if not targets:  # nothing to pass it to: it keeps everything
            self.rank[node] = self.rank.get(node, 0.0) + held
            return ()
        self.rank[node] = self.rank.get(node, 0.0) + (1 - self.alpha) * held
        share = self.alpha * held / len(targets)
        for target in targets:
            self.residual[target] = self.residual.get(target, 0.0) + share
        return targets

    def scores(self) -> dict[str, float]:
        """Each reached passage's score: its rank plus ``1 - α`` of its unspread residual."""
        scores: dict[str, float] = {}
        for (kind, key), value in self.rank.items():
            if kind == _PASSAGE:
                scores[key] = value
        for (kind, key), value in self.residual.items():
            if kind == _PASSAGE:
                scores[key] = scores.get(key, 0.0) + (1 - self.alpha) * value
        return scores


def _passage_entities(item: VectorItem | None) -> tuple[str, ...]:
    listed = item.metadata.get("entities") if item is not None and isinstance(item.metadata, Mapping) else None
    if isinstance(listed, (list, tuple)):
        return tuple(dict.fromkeys(str(name) for name in listed))
    return ()


def read_passages(index: VectorIndex, ids: Sequence[str]) -> dict[str, VectorItem]:
    """The items ``index`` holds for ``ids``: in one read where it has ``get_many`` (the embedded store's),
    else through its ``get(id)`` for each (none without a ``get``)."""
    if not ids:
        return {}
    many = getattr(index, "get_many", None)
    if callable(many):
        return dict(many(ids))
    lookup = getattr(index, "get", None)
    if not callable(lookup):
        return {}
    return {item_id: item for item_id in dict.fromkeys(ids) if (item := lookup(item_id)) is not None}


def _read_step(index: VectorIndex, ids: Sequence[str]) -> Step:
    return Step(lambda: read_passages(index, ids), None)  # vector indexes read their items synchronously


def _neighbourhoods_step(graph: GraphStore, limits: Mapping[str, int | None], directed: bool) -> Step:
    return Step(
        lambda: graph.neighborhoods(limits, directed=directed), lambda: graph.aneighborhoods(limits, directed=directed)
    )


def _entities_step(graph: GraphStore, names: Sequence[str]) -> Step:
    return Step(lambda: graph.get_entities(names), lambda: graph.aget_entities(names))


def _learn_entities(
    state: PassageRank, names: Sequence[str], hoods: Mapping[str, Any], entities: Mapping[str, Entity]
) -> None:
    """Record each entity's degree (relations + passages) and, when it can push now, its neighbours."""
    for name in names:
        node = (_ENTITY, name)
        hood, entity = hoods.get(name), entities.get(name)
        passages = entity.source_ids if entity is not None else ()
        relations = hood.degree if hood is not None else 0
        state.degree[node] = relations + len(passages)
        listed = hood.neighbors if hood is not None else {}
        if len(listed) == relations:  # every neighbour listed (not a hub over its limit)
            state.neighbours[node] = (*((_ENTITY, n) for n in listed), *((_PASSAGE, c) for c in passages))


def spread(
    state: PassageRank, graph: GraphStore, passage_index: VectorIndex, *, directed: bool = False
) -> Steps[PassageRank]:
    """Push ``state``'s residual through entities and passages until no node holds enough to pass on.

    Yields its reads (:mod:`pathrag.query.steps`): per round, one batch of neighbourhoods and entities for the
    entities about to pass something on for the first time, one batch of passage items likewise.
    Returns ``state`` (``scores()`` ranks the passages; ``passages`` holds what was read of them).
    """
    for _ in range(MAX_ROUNDS):
        waiting = sorted(node for node in state.touched if state.pushable(node))
        if not waiting:
            break
        yield from _learn(
            state, graph, passage_index, [node for node in waiting if node not in state.neighbours], directed
        )
        state.touched = set()
        for node in waiting:
            if node in state.neighbours and state.pushable(node):
                state.touched.update(state.push(node))
    return state


def _learn(
    state: PassageRank, graph: GraphStore, passage_index: VectorIndex, unknown: Sequence[Node], directed: bool
) -> Steps[None]:
    """Read what the store says of ``unknown`` nodes: their degrees, and their neighbours where they can
    pass something on (one batched read per kind)."""
    entities = [key for kind, key in unknown if kind == _ENTITY]
    passages = [key for kind, key in unknown if kind == _PASSAGE]
    if entities:
        # a node can pass on at most what it holds: a hub with more neighbours than that allows is
        # listed without them (its degree is learnt, and it waits until it receives more)
        limits = {name: int(state.residual[(_ENTITY, name)] / state.tolerance) for name in entities}
        hoods = yield _neighbourhoods_step(graph, limits, directed)
        found = yield _entities_step(graph, entities)
        _learn_entities(state, entities, hoods, found)
    unread = [cid for cid in passages if cid not in state.passages]  # the candidates came with theirs
    if unread:
        state.passages.update((yield _read_step(passage_index, unread)))
    for cid in passages:
        listed = _passage_entities(state.passages.get(cid))
        state.degree[(_PASSAGE, cid)] = len(listed)
        state.neighbours[(_PASSAGE, cid)] = tuple((_ENTITY, name) for name in listed)


def ranked_ids(state: PassageRank, candidates: Iterable[str]) -> list[str]:
    """Passage ids best first: those the flow gave a score by score (ties by id), then the other
    candidates in their given order (all of them when ``alpha`` is 1: a flow that keeps nothing scores
    nothing)."""
    scores = {cid: score for cid, score in state.scores().items() if score > 0}
    reached = sorted(scores, key=lambda cid: (-scores[cid], cid))
    seen = set(reached)
    return reached + [cid for cid in candidates if cid not in seen]
