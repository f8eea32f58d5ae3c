"""A slow, literal transcription of the pruning spec, used as the oracle in property tests.

It shares no code with pathrag.query.pruning: whole-graph traversal, networkx's simple-path enumeration.
"""

from __future__ import annotations

import networkx as nx


def traversal_neighbors(g: nx.Graph, u, directed: bool) -> set:
    if g.is_directed():
        nbrs = set(g.successors(u)) if directed else set(g.successors(u)) | set(g.predecessors(u))
    else:
        nbrs = set(g.neighbors(u))
    nbrs.discard(u)
    return nbrs


def propagate(g: nx.Graph, s, *, alpha=0.8, theta=0.05, max_hops=3, directed=False):
    """Return (resources, expandable set)."""
    if s not in g:
        return {}, set()
    deg = {u: len(traversal_neighbors(g, u, directed)) for u in g}
    S = {s: 1.0}
    expandable = {s}
    layer = [s]
    hop = 0
    while layer and (max_hops is None or hop < max_hops):
        received: dict = {}
        for u in sorted(layer):
            if deg[u] == 0:
                continue
            for v in traversal_neighbors(g, u, directed):
                if v not in S:
                    received[v] = received.get(v, 0.0) + alpha * S[u] / deg[u]
        S.update(received)
        hop += 1
        layer = [v for v in received if deg[v] > 0 and received[v] / deg[v] >= theta]
        if max_hops is None or hop < max_hops:
            expandable.update(layer)
        else:
            layer = []
    return S, expandable


def key_paths(g, seeds, *, alpha=0.8, theta=0.05, max_hops=3, top_k=15, paths_per_pair=None, directed=False):
    """Return [(nodes, score)] best first, per the spec."""
    seeds = sorted(set(seeds) & set(g.nodes))
    traversal = g if (directed or not g.is_directed()) else g.to_undirected(as_view=True)
    cutoff = max_hops if max_hops is not None else len(g)
    best: dict = {}
    for s in seeds:
        S, expandable = propagate(g, s, alpha=alpha, theta=theta, max_hops=max_hops, directed=directed)
        for t in seeds:
            if t == s or t not in S:
                continue
            for path in nx.all_simple_paths(traversal, s, t, cutoff=cutoff):
                nodes = tuple(path)
                if any(n not in S for n in nodes) or any(n not in expandable for n in nodes[1:-1]):
                    continue
                score = sum(S[n] for n in nodes) / (len(nodes) - 1)
                key = nodes if directed else min(nodes, nodes[::-1])
                rank = (-score, len(nodes), nodes)
                if key not in best or rank < best[key]:
                    best[key] = rank
    pairs: dict = {}
    for rank in best.values():
        nodes = rank[2]
        pair = (nodes[0], nodes[-1]) if directed else tuple(sorted((nodes[0], nodes[-1])))
        pairs.setdefault(pair, []).append(rank)
    pooled = []
    for ranks in pairs.values():
        ranks.sort()
        pooled.extend(ranks if paths_per_pair is None else ranks[:paths_per_pair])
    pooled.sort()
    return [(rank[2], -rank[0]) for rank in pooled[:top_k]]
