"""Query-aware key paths: chains of the relations most like the question, weighted by where they were stated.

The paper's key paths only join seed entities, but the answer to a multi-hop question is usually an entity
the question does not name ("the first president of the association that published X"), and a hop's
relation states what the question asks ("published by", "first president"). So the evidence context's
paths are built from relations, in three steps:

1. **Candidates.** The ``num_relations`` relations whose vectors are nearest the question.
2. **Weight** ``w = max(s, 0) · α^r``: ``s`` is the relation's similarity to the question and ``r`` the
   rank of the best-ranked passage it was extracted from (passages are ranked by the flow from what the
   question's most similar passages and named entities say, see :mod:`pathrag.query.passage_rank`); a
   relation that no ranked passage states counts as if its passage came right after the last one. One
   short triple says little on its own, so its passage's rank, which the flow shapes, vouches for it;
   each step down the ranking discounts it by the flow's own decay α, as each hop does in the flow.
3. **Chains.** In weight order, a relation extends the first path ending at one of its entities (at
   either end, unless that end is an entity the question names: a path runs from a named entity, and
   stops at one), when its other entity is not on that path yet and the path has fewer than ``max_hops``
   relations; otherwise it opens a new path, while fewer than ``top_k`` exist. A path reads from the
   entity the question names at one of its ends, else from its first relation's source. A path's score
   is the sum of its relations' weights, so a chain of relevant hops outranks one of its hops alone,
   times the number of entities the question names on it (at least 1), so a path joining two of them
   outranks one that starts at one.

A path may thus run from an entity the question names, through one it does not (the bridge), to the
answer. When the question names several entities, the paper's key paths between them
(:func:`pathrag.find_key_paths`: its flow, pruning and hop limit) join the candidates, scored the same way
(a relation that is not a candidate weighs 0), so that named entities are connected whenever relations
like the question connect them.

>>> from pathrag import Relation
>>> r1 = Relation(source="JOURNAL X", target="ASSOCIATION Y", keywords=["published by"], source_ids=["c1"])
>>> r2 = Relation(source="HALL", target="ASSOCIATION Y", keywords=["first president of"], source_ids=["c2"])
>>> weighted = weigh_relations([(r1, 0.8), (r2, 0.6)], {"c1": 0, "c2": 1}, alpha=0.8)
>>> [(w.relation.source, round(w.weight, 2)) for w in weighted]
[('JOURNAL X', 0.8), ('HALL', 0.48)]
>>> [(c.nodes, round(c.score, 2)) for c in chain_relations(weighted, origins={"JOURNAL X"})]
[(['JOURNAL X', 'ASSOCIATION Y', 'HALL'], 1.28)]
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..models import Relation, ScoredPath
from .context import path_relations

__all__ = ["Chain", "WeightedRelation", "chain_relations", "merge_chains", "more_chains", "weigh_relations"]


@dataclass(frozen=True)
class WeightedRelation:
    """A candidate relation and its weight (similarity to the question, discounted by its passage's rank)."""

    relation: Relation
    weight: float


@dataclass
class Chain:
    """A path of relations: ``relations[i]`` joins ``nodes[i]`` and ``nodes[i + 1]``."""

    nodes: list[str]
    relations: list[Relation]
    weights: list[float] = field(default_factory=list)
    named: int = 1

    @property
    def score(self) -> float:
        """The sum of the relations' weights, times the number of entities the question names on the path
        (at least 1): a path that joins named entities answers how they connect."""
        return sum(self.weights) * max(self.named, 1)

    @property
    def source_ids(self) -> tuple[str, ...]:
        """The chunks its relations were extracted from, hop by hop, each once."""
        return tuple(dict.fromkeys(cid for relation in self.relations for cid in relation.source_ids))


def weigh_relations(
    candidates: Iterable[tuple[Relation, float]], passage_ranks: Mapping[str, int] | None, *, alpha: float
) -> list[WeightedRelation]:
    """Weigh ``(relation, similarity)`` candidates, best first; relations of weight 0 are left out.

    ``passage_ranks``: chunk id -> rank (0 = best) of the candidate passages; ``None`` when there are no
    passages, and then a weight is the similarity alone. Ties keep the candidates' order.
    """
    unranked = len(passage_ranks) if passage_ranks else 0  # right after the last candidate passage
    weighted = []
    for relation, similarity in candidates:
        if passage_ranks is None:
            weight = max(similarity, 0.0)
        else:
            rank = min((passage_ranks[c] for c in relation.source_ids if c in passage_ranks), default=unranked)
            weight = max(similarity, 0.0) * alpha**rank
        if weight > 0:
            weighted.append(WeightedRelation(relation, weight))
    weighted.sort(key=lambda w: -w.weight)  # stable: ties keep the candidates' order
    return weighted


def _other(relation: Relation, name: str) -> str:
    return relation.target if relation.source == name else relation.source


def _extend(chain: Chain, item: WeightedRelation, origins: Collection[str], max_hops: int | None) -> bool:
    """Add ``item`` at an end of ``chain`` it touches, if the rule allows (see the module docstring)."""
    if max_hops is not None and len(chain.relations) >= max_hops:
        return False
    relation = item.relation
    ends = {relation.source, relation.target}
    for at_end in (True, False):
        joint = chain.nodes[-1] if at_end else chain.nodes[0]
        if joint not in ends or _other(relation, joint) in chain.nodes:
            continue
        if joint in origins:  # a named entity at an end of a path stays its end: the path starts there
            continue
        if at_end:
            chain.nodes.append(_other(relation, joint))
            chain.relations.append(relation)
            chain.weights.append(item.weight)
        else:
            chain.nodes.insert(0, _other(relation, joint))
            chain.relations.insert(0, relation)
            chain.weights.insert(0, item.weight)
        return True
    return False


def _reindex(at_ends: dict[str, list[int]], index: int, chain: Chain, relation: Relation) -> None:
    """After chain ``index`` grew by ``relation``: it ends at the node it reached, no more at the joint."""
    for node in (relation.source, relation.target):
        listed = at_ends.setdefault(node, [])
        is_end = node in (chain.nodes[0], chain.nodes[-1])
        if is_end and index not in listed:
            insort(listed, index)
        elif not is_end and index in listed:
            listed.remove(index)


def chain_relations(
    weighted: Sequence[WeightedRelation],
    *,
    origins: Collection[str] = (),
    max_paths: int = 15,
    max_hops: int | None = 3,
) -> list[Chain]:
    """Chain weighted relations (best first) into at most ``max_paths`` paths, best first.

    ``origins``: the entities the question names; a path touching one starts there. A relation is offered
    only to the paths ending at one of its entities (an index of the paths' ends), in the order they were
    opened, so the work grows with the relations, not with relations times paths.
    """
    chains: list[Chain] = []
    at_ends: dict[str, list[int]] = {}  # node -> the chains (by opening order) that end there
    for item in weighted:
        relation = item.relation
        touching = sorted({*at_ends.get(relation.source, ()), *at_ends.get(relation.target, ())})
        extended = next((i for i in touching if _extend(chains[i], item, origins, max_hops)), None)
        if extended is not None:
            _reindex(at_ends, extended, chains[extended], relation)
            continue
        if len(chains) >= max_paths:
            continue
        start = relation.target if relation.target in origins and relation.source not in origins else relation.source
        chains.append(Chain([start, _other(relation, start)], [relation], [item.weight]))
        for end in (relation.source, relation.target):
            at_ends.setdefault(end, []).append(len(chains) - 1)
    for chain in chains:
        chain.named = sum(node in origins for node in chain.nodes)
        if chain.nodes[-1] in origins and chain.nodes[0] not in origins:  # read it from the named entity
            chain.nodes.reverse()
            chain.relations.reverse()
            chain.weights.reverse()
    chains.sort(key=lambda c: -c.score)  # stable: equal scores keep the order they were opened in
    return chains


def more_chains(
    weighted: Sequence[WeightedRelation],
    key: Sequence[Chain],
    *,
    origins: Collection[str] = (),
    max_hops: int | None = 3,
) -> list[Chain]:
    """The further paths: the relations the ``key`` chains leave out, chained the same way with no limit
    on their number, best first (the evidence layout shows them after the key paths while room allows)."""
    used = {frozenset(relation.pair) for chain in key for relation in chain.relations}
    left = [item for item in weighted if frozenset(item.relation.pair) not in used]
    return chain_relations(left, origins=origins, max_paths=len(left), max_hops=max_hops)


def merge_chains(
    chains: Sequence[Chain],
    joining: Sequence[ScoredPath],
    relations: Mapping[tuple[str, str], Relation],
    weighted: Sequence[WeightedRelation],
    max_paths: int,
    origins: Collection[str] = (),
) -> list[Chain]:
    """``chains`` and the paper's key paths between the named entities (``joining``, their relations in
    ``relations`` keyed by walking pair), each path scored by the weights of its relations (0 for a
    relation not among the candidates); paths of score 0 are left out, a path found twice is kept once.
    The ``max_paths`` best, best first."""
    weight = {frozenset(w.relation.pair): w.weight for w in weighted}
    merged = {tuple(chain.nodes): chain for chain in chains}
    for path in joining:
        nodes = [str(n) for n in path.nodes]
        hops = path_relations(nodes, relations)
        if any(h is None for h in hops) or tuple(nodes) in merged or tuple(reversed(nodes)) in merged:
            continue
        known = [h for h in hops if h is not None]
        weights = [weight.get(frozenset(h.pair), 0.0) for h in known]
        if sum(weights) > 0:
            merged[tuple(nodes)] = Chain(nodes, known, weights, sum(node in origins for node in nodes))
    return sorted(merged.values(), key=lambda c: -c.score)[:max_paths]
