"""Flow-based path pruning (PathRAG, Eq. 2–4): resource propagation and key-path search.

From a start node s, resource flows outward layer by layer: S(s) = 1; every *expandable* node u of a
layer sends ``alpha * S(u) / deg(u)`` to each neighbour not yet in any layer, and a node's resource is
the sum it receives in the one layer where it is first reached. s is always expandable; any other u
is expandable iff ``S(u) / deg(u) >= theta``.

A candidate path from seed s to another seed t is a simple path of at most ``max_hops`` edges whose
nodes were all reached from s and whose intermediate nodes are all expandable. Its reliability is
the sum of its nodes' resources (from s) divided by its number of edges.

Why this is cheap: an expandable node other than s holds at least ``theta * deg(u)``, and a layer
holds at most ``alpha**layer`` in total, so only a handful of low-degree nodes are ever expanded.
The one place a hub can appear is the start itself, and when ``alpha / deg(s) < theta`` none of its
neighbours can be expanded: the store is then asked only which *seeds* are adjacent to it. Each hop
of every seed's propagation is answered by one batched :meth:`GraphStore.neighborhoods` call.

>>> import networkx as nx
>>> from pathrag import find_key_paths
>>> g = nx.Graph([("s", "a"), ("s", "b"), ("a", "t"), ("b", "c"), ("b", "d"), ("c", "t")])
>>> [(p.nodes, round(p.score, 5)) for p in find_key_paths(g, ["s", "t"])]
[(('s', 'a', 't'), 0.78), (('t', 'c', 'b', 's'), 0.57333)]
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Generator, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import networkx as nx

from ..graphs.base import GraphStore, Neighborhood
from ..graphs.memory import as_graph_store
from ..models import ScoredPath
from ..params import MAX_HOPS, PATH_STEPS, PathParams

__all__ = [
    "afind_key_paths",
    "apropagate_resources",
    "aspread_resources",
    "find_key_paths",
    "propagate_resources",
    "spread_resources",
    "start_degree_limit",
]

Request = tuple[dict[str, "int | None"], frozenset[str]]
"""One hop's batched question to the store: node -> degree limit, and the ``keep`` set."""

R = TypeVar("R")


def _order(node: Hashable) -> tuple[str, str]:
    """The sort key of a node: its text first, so any hashable nodes (ints, tuples, mixed types) sort, and
    in the order their string labels would (a graph relabelled with ``str`` gives the same paths, scores
    and ties). The second part tells apart distinct nodes with the same text (``1`` and ``"1"``)."""
    return (node, "") if type(node) is str else (str(node), f"{type(node).__qualname__}:{node!r}")


def _ordered(nodes: Iterable[Hashable]) -> tuple[tuple[str, str], ...]:
    return tuple(map(_order, nodes))


def start_degree_limit(params: PathParams) -> int | None:
    """Largest start degree at which the start's neighbours could still be expandable.

    Above it ``alpha / deg(s) < theta``, so the layer-1 nodes, which receive exactly that, can never
    pass the threshold (``None``: no limit, when ``theta`` is 0).

    >>> start_degree_limit(PathParams(alpha=0.8, theta=0.05))
    16
    """
    if params.theta == 0 or params.alpha / params.theta >= 2**53:
        return None  # beyond any degree (and stepping to it one by one, as below, would never end)
    limit = int(params.alpha / params.theta)
    while limit >= 1 and not params.alpha / limit >= params.theta:
        limit -= 1
    while params.alpha / (limit + 1) >= params.theta:
        limit += 1
    return limit


@dataclass
class _Propagation:
    """The state of one start node's propagation, advanced one hop at a time."""

    start: str
    params: PathParams
    resource: dict[str, float] = field(default_factory=dict)
    degree: dict[str, int] = field(default_factory=dict)
    adjacency: dict[str, tuple[str, ...]] = field(default_factory=dict)
    expandable: set[str] = field(default_factory=set)
    frontier: list[str] = field(default_factory=list)
    layer: int = 0
    walked: int = 0  # steps the last paths_to took

    def __post_init__(self) -> None:
        self.resource[self.start] = 1.0
        self.expandable.add(self.start)
        self.frontier.append(self.start)

    def request(self, complete: bool) -> dict[str, int | None]:
        """Degree limits for the frontier. ``complete`` lists every neighbour (for propagate_resources);
        otherwise a hop that cannot create an expandable node lists only ``keep`` neighbours."""
        p = self.params
        if complete:
            return {u: None for u in self.frontier}
        if self.layer == (MAX_HOPS if p.max_hops is None else p.max_hops) - 1:
            return {u: 0 for u in self.frontier}  # the last layer only matters where it hits a seed
        if self.layer == 0:
            return {self.start: start_degree_limit(p)}
        budget = 0.0
        for u in self.frontier:
            budget += p.alpha * self.resource[u] / self.degree[u]
        # A node of the next layer receives at most `budget` and has degree >= 1.
        return {u: (None if budget >= p.theta else 0) for u in self.frontier}

    def absorb(self, answer: Mapping[str, Neighborhood]) -> None:
        """Send resource from the frontier along the answered neighbourhoods; form the next layer."""
        p = self.params
        if self.layer == 0 and self.start not in answer:
            self.frontier = []  # unknown start: nothing to propagate
            return
        incoming: dict[str, float] = {}
        for u in self.frontier:  # sorted, so sums never depend on set order
            hood = answer[u]
            self.degree[u] = hood.degree
            self.adjacency[u] = tuple(hood.neighbors)
            if hood.degree == 0:
                continue
            share = p.alpha * self.resource[u] / hood.degree
            for v, dv in hood.neighbors.items():
                self.degree.setdefault(v, dv)
                if v not in self.resource:
                    incoming[v] = incoming.get(v, 0.0) + share
        self.resource.update(incoming)
        self.layer += 1
        if self.layer >= (MAX_HOPS if p.max_hops is None else p.max_hops):
            self.frontier = []
            return
        self.frontier = sorted(
            (v for v, s in incoming.items() if self.degree[v] > 0 and s / self.degree[v] >= p.theta), key=_order
        )
        self.expandable.update(self.frontier)

    def paths_to(self, targets: Collection[str], steps: int) -> Iterable[tuple[tuple[str, ...], float]]:
        """Every candidate path from the start to a reached target, with its reliability, found within
        ``steps`` steps of the walk (a step: one neighbour looked at); :attr:`walked` counts them."""
        limit = min(len(self.expandable) + 1, MAX_HOPS) if self.params.max_hops is None else self.params.max_hops
        reached_targets = {t for t in targets if t in self.resource and t != self.start}
        self.walked = 0
        if not reached_targets:
            return
        path = [self.start]
        on_path = {self.start}

        def walk(u: str) -> Iterable[tuple[tuple[str, ...], float]]:
            for v in self.adjacency.get(u, ()):
                self.walked += 1
                if self.walked > steps:
                    return
                if v in on_path or v not in self.resource:
                    continue
                path.append(v)
                if v in reached_targets:
                    nodes = tuple(path)
                    self.walked += len(nodes)  # what a found path costs: its nodes ranked and kept
                    yield nodes, sum(self.resource[n] for n in nodes) / (len(nodes) - 1)
                if v in self.expandable and len(path) <= limit:
                    on_path.add(v)
                    yield from walk(v)
                    on_path.discard(v)
                path.pop()

        yield from walk(self.start)


def _propagate(
    starts: Iterable[str], params: PathParams, *, complete: bool, seeds: Collection[str] = ()
) -> Generator[Request, Mapping[str, Neighborhood], list[_Propagation]]:
    """Run every start's propagation in lockstep: one batched store request per hop for all of them."""
    runs = [_Propagation(s, params) for s in starts]
    active = list(runs)
    while active:
        requests: dict[str, int | None] = {}
        for run in active:
            for node, limit in run.request(complete).items():
                if node not in requests:
                    requests[node] = limit
                else:
                    old = requests[node]
                    requests[node] = None if old is None or limit is None else max(old, limit)
        keep: frozenset[str] = frozenset()
        if not complete:
            keep = frozenset(seeds).union(*(run.expandable for run in runs))
        answer = yield requests, keep
        for run in active:
            run.absorb(answer)
        active = [run for run in active if run.frontier]
    return runs


def _search(
    seeds: Iterable[str], params: PathParams
) -> Generator[Request, Mapping[str, Neighborhood], list[ScoredPath]]:
    top_k, paths_per_pair = params.top_k, params.paths_per_pair
    if isinstance(seeds, str):
        raise TypeError("seeds must be a collection of node names, not a single string")
    unique = sorted(set(seeds), key=_order)
    if top_k == 0 or len(unique) < 2:
        return []
    runs = yield from _propagate(unique, params, complete=False, seeds=unique)

    # Best score per path; undirected, a path and its reverse are one path. Ranks compare the nodes'
    # sort keys, never the nodes themselves (ints and strings do not compare); distinct paths have
    # distinct keys, so a comparison never reaches the resources or the nodes after the rank.
    Ranked = tuple[tuple[float, int, tuple[tuple[str, str], ...]], tuple[float, ...], tuple[Hashable, ...]]
    best: dict[tuple[tuple[str, str], ...], Ranked] = {}
    left = PATH_STEPS
    for n, run in enumerate(runs):
        # each start gets an even share of what the starts before it left (see PATH_STEPS)
        for nodes, score in run.paths_to(unique, left // (len(runs) - n)):
            keyed = _ordered(nodes)
            key = keyed if params.directed else min(keyed, keyed[::-1])
            rank = (-score, len(nodes), keyed)
            if key not in best or rank < best[key][0]:
                best[key] = (rank, tuple(run.resource[node] for node in nodes), nodes)
        left -= run.walked

    by_pair: dict[tuple[tuple[str, str], ...], list[Ranked]] = {}
    for ranked in best.values():
        ends = (ranked[0][2][0], ranked[0][2][-1])
        pair = ends if params.directed else tuple(sorted(ends))
        by_pair.setdefault(pair, []).append(ranked)
    pooled: list[Ranked] = []
    for candidates in by_pair.values():
        pooled.extend(candidates if paths_per_pair is None else heapq.nsmallest(paths_per_pair, candidates))
    return [
        ScoredPath(nodes=nodes, score=-rank[0], resources=resources)
        for rank, resources, nodes in heapq.nsmallest(top_k, pooled)
    ]


def _run_sync(store: GraphStore, search: Generator[Request, Mapping[str, Neighborhood], R], directed: bool) -> R:
    try:
        requests, keep = next(search)
        while True:
            requests, keep = search.send(store.neighborhoods(requests, directed=directed, keep=keep))
    except StopIteration as done:
        result: R = done.value  # the search's return value (StopIteration types it Any)
        return result


async def _run_async(store: GraphStore, search: Generator[Request, Mapping[str, Neighborhood], R], directed: bool) -> R:
    try:
        requests, keep = next(search)
        while True:
            answer = await store.aneighborhoods(requests, directed=directed, keep=keep)
            requests, keep = search.send(answer)
    except StopIteration as done:
        result: R = done.value  # the search's return value (StopIteration types it Any)
        return result


def _resources(runs: list[_Propagation]) -> dict[str, float]:
    run = runs[0]
    return dict(run.resource) if run.degree or run.adjacency else {}


def _params(params: PathParams | None, overrides: Mapping[str, Any]) -> PathParams:
    """``params`` (default: the paper's) with keyword ``overrides`` applied and checked."""
    if params is not None and not isinstance(params, PathParams):
        raise TypeError(f"params must be a PathParams, got {type(params).__name__}")
    return (params or PathParams()).override(**overrides)


def propagate_resources(
    graph: GraphStore | nx.Graph, start: str, params: PathParams | None = None, **overrides: Any
) -> dict[str, float]:
    """Resource of every node reached from ``start`` (an unknown start gives ``{}``).

    ``params`` and ``overrides`` as for :func:`find_key_paths` (only the flow's settings matter).

    >>> import networkx as nx
    >>> propagate_resources(nx.path_graph(["a", "b", "c"]), "a")
    {'a': 1.0, 'b': 0.8, 'c': 0.32000000000000006}
    """
    return spread_resources(graph, [start], params, **overrides)


async def apropagate_resources(
    graph: GraphStore | nx.Graph, start: str, params: PathParams | None = None, **overrides: Any
) -> dict[str, float]:
    """Async twin of :func:`propagate_resources`."""
    return await aspread_resources(graph, [start], params, **overrides)


def _starts(starts: Iterable[str]) -> list[str]:
    if isinstance(starts, str):
        raise TypeError("starts must be a collection of node names, not a single string")
    return sorted(set(starts), key=_order)


def _spread(runs: list[_Propagation]) -> dict[str, float]:
    total: dict[str, float] = {}
    for run in runs:
        for node, amount in _resources([run]).items():
            total[node] = total.get(node, 0.0) + amount
    return total


def spread_resources(
    graph: GraphStore | nx.Graph, starts: Iterable[str], params: PathParams | None = None, **overrides: Any
) -> dict[str, float]:
    """The resource every node receives from all ``starts`` together: each start's propagation (as in
    :func:`propagate_resources`) summed, run in lockstep with one store request per hop.

    >>> import networkx as nx
    >>> spread_resources(nx.path_graph(["a", "b", "c"]), ["a", "c"])
    {'a': 1.32, 'b': 1.6, 'c': 1.32}
    """
    params = _params(params, overrides)
    store = as_graph_store(graph)
    unique = _starts(starts)
    if not unique:
        return {}
    return _spread(_run_sync(store, _propagate(unique, params, complete=True), params.directed))


async def aspread_resources(
    graph: GraphStore | nx.Graph, starts: Iterable[str], params: PathParams | None = None, **overrides: Any
) -> dict[str, float]:
    """Async twin of :func:`spread_resources`."""
    params = _params(params, overrides)
    store = as_graph_store(graph)
    unique = _starts(starts)
    if not unique:
        return {}
    return _spread(await _run_async(store, _propagate(unique, params, complete=True), params.directed))


def find_key_paths(
    graph: GraphStore | nx.Graph, seeds: Iterable[str], params: PathParams | None = None, **overrides: Any
) -> list[ScoredPath]:
    """The ``top_k`` most reliable paths between pairs of seeds, best first.

    Every seed starts its own propagation, and paths are scored with the resources of the propagation
    they start from. ``paths_per_pair`` keeps at most that many paths per pair of seeds before pooling
    (``None``, the default, pools them all as the paper does). Undirected, a path found from both ends
    is kept once, with its higher score. Ties break by fewer hops, then by the node names, so the result
    never depends on hash seeds or iteration order. Unknown seeds are skipped.

    Args:
        graph: a :class:`~pathrag.GraphStore` or a networkx graph.
        seeds: the node names to connect.
        params: the settings (:class:`~pathrag.PathParams`, or a :class:`~pathrag.RetrievalParams`);
            default: the paper's.
        overrides: settings changed for this call (``top_k=5``, ``alpha=0.9``...), applied on ``params``.

    Raises:
        TypeError: ``seeds`` is a single string, or an override is not a setting.
        ValueError: a setting out of its range.

    >>> import networkx as nx
    >>> [p.nodes for p in find_key_paths(nx.DiGraph([("a", "b"), ("b", "c")]), ["c", "a"], directed=True)]
    [('a', 'b', 'c')]
    """
    params = _params(params, overrides)
    return _run_sync(as_graph_store(graph), _search(seeds, params), params.directed)


async def afind_key_paths(
    graph: GraphStore | nx.Graph, seeds: Iterable[str], params: PathParams | None = None, **overrides: Any
) -> list[ScoredPath]:
    """Async twin of :func:`find_key_paths`, for stores whose reads are network calls."""
    params = _params(params, overrides)
    return await _run_async(as_graph_store(graph), _search(seeds, params), params.directed)
