"""Benchmark: key-path retrieval latency of ``pathrag.find_key_paths`` on heavy-tailed graphs.

What is measured
----------------
For each synthetic graph family and size, and for two ways of choosing the query's seed
entities, we time ``find_key_paths(graph, seeds)`` with 40 seeds:

* graph families (simple, undirected, string node ids ``"n0"``, ``"n1"``, ...):
  - ``powerlaw``: configuration model whose degree sequence is ``floor(Pareto(1.2))``
    (shuffled stubs, self-loops and parallel edges dropped) -- about 2 edges per node and
    hubs of degree ~10^3 at 10^4 nodes, ~10^5 at 10^6 nodes;
  - ``ba``: Barabasi-Albert preferential attachment with m=2;
* seed modes: ``uniform`` (uniformly random nodes) and ``degree`` (probability proportional to
  degree, as keyword search tends to hit popular entities).

Per configuration: one warm-up query, then ``--repeats`` queries, each with a freshly drawn seed
set.  We report p50/p95 latency, paths returned and their mean hop count, the peak memory of
one query under ``tracemalloc`` (a separate run, since tracing slows Python down), the graph's
build time and the process's RSS (current and peak so far: the process is reused across graphs,
and freed memory is not always returned to the OS).  After each build the graph is moved out of the
cyclic GC's reach with ``gc.freeze()``, as a long-running service should do: otherwise a full
collection (~1.5 s at 10^6 nodes) can land inside a timed query.

The baseline reproduces the per-query work of the PathRAG reference implementation: rebuild an
adjacency from *all* edges, then for every ordered pair of distinct seeds enumerate every simple
path of at most 3 edges by DFS (counting them, with a trivial score).  It is a slightly
conservative rendition (dict-of-sets instead of a fresh ``nx.Graph``, no expansion past depth 3,
no async overhead), so the speed-ups are lower bounds.  It runs under a per-query time limit and
is repeated (up to 3 times) only while it stays cheap; a timed-out baseline yields a "> X x"
lower bound on the speed-up.

Run (from the repository root)::

    PYTHONPATH=shared python benchmarks/path_retrieval.py                 # 10^4 and 10^5 nodes
    PYTHONPATH=shared python benchmarks/path_retrieval.py --million       # ... and 10^6 nodes
    PYTHONPATH=shared python benchmarks/path_retrieval.py --sizes 10000 --repeats 5 --baseline-timeout 0
    PYTHONPATH=shared python benchmarks/path_retrieval.py --theta 0.01       # looser pruning

Progress goes to stderr; the Markdown report goes to stdout.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import resource
import statistics
import sys
import time
import tracemalloc
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

import networkx as nx

try:  # allow running without PYTHONPATH=shared
    import pathrag
except ImportError:  # pragma: no cover - convenience only
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))
    import pathrag

N_SEEDS = 40
PARETO_SHAPE = 1.2
BA_M = 2
MAX_HOPS = 3


# --------------------------------------------------------------------------- graph generators


def _graph_from_edges(n: int, edges: Iterable[tuple[int, int]]) -> nx.Graph:
    """A simple undirected ``nx.Graph`` on ``"n0".."n{n-1}"``; self-loops dropped, parallels merged."""
    names = [f"n{i}" for i in range(n)]
    graph = nx.Graph()
    graph.add_nodes_from(names)
    graph.add_edges_from((names[u], names[v]) for u, v in edges if u != v)
    return graph


def powerlaw_configuration_graph(n: int, rng: random.Random) -> nx.Graph:
    """Configuration model with ``floor(Pareto(PARETO_SHAPE))`` degrees, via shuffled stubs."""
    degrees = [min(int(rng.paretovariate(PARETO_SHAPE)), n - 1) for _ in range(n)]
    if sum(degrees) % 2:
        degrees[rng.randrange(n)] += 1
    stubs = [node for node, degree in enumerate(degrees) for _ in range(degree)]
    rng.shuffle(stubs)
    return _graph_from_edges(n, zip(stubs[::2], stubs[1::2], strict=True))  # an even number of stubs


def barabasi_albert_graph(n: int, rng: random.Random, m: int = BA_M) -> nx.Graph:
    """Barabasi-Albert graph (as ``nx.barabasi_albert_graph``: star on m+1 nodes to start),
    using the repeated-nodes list for O(1) preferential sampling."""
    edges = [(0, i) for i in range(1, m + 1)]
    repeated = [0] * m + list(range(1, m + 1))  # each node appears once per unit of degree
    for source in range(m + 1, n):
        targets: set[int] = set()
        while len(targets) < m:
            targets.add(rng.choice(repeated))
        for target in targets:
            edges.append((source, target))
            repeated.append(target)
        repeated.extend([source] * m)
    return _graph_from_edges(n, edges)


FAMILIES: dict[str, Callable[[int, random.Random], nx.Graph]] = {
    "powerlaw": powerlaw_configuration_graph,
    "ba": barabasi_albert_graph,
}


# --------------------------------------------------------------------------- seeds


class SeedSampler:
    """Draws seed sets of distinct nodes, uniformly or with probability proportional to degree."""

    def __init__(self, graph: nx.Graph, rng: random.Random) -> None:
        self.nodes = list(graph.nodes)
        self.cumulative = list(accumulate(degree for _, degree in graph.degree(self.nodes)))
        self.rng = rng

    def draw(self, mode: str, k: int = N_SEEDS) -> list[str]:
        if mode == "uniform":
            return self.rng.sample(self.nodes, k)
        chosen: dict[str, None] = {}
        total = self.cumulative[-1]
        while len(chosen) < k:
            index = bisect_left(self.cumulative, self.rng.random() * total)
            chosen.setdefault(self.nodes[min(index, len(self.nodes) - 1)], None)
        return list(chosen)


# --------------------------------------------------------------------------- baseline


class _Timeout(Exception):
    pass


def baseline_query(graph: nx.Graph, seeds: Sequence[str], limit: float) -> tuple[float | None, int]:
    """PathRAG-reference-style query: rebuild the adjacency, then DFS every ordered seed pair.

    Returns ``(seconds, paths_found)``; ``seconds`` is ``None`` if ``limit`` was exceeded.
    """
    start = time.perf_counter()
    deadline = start + limit
    adjacency: dict[str, set[str]] = {}
    for u, v in graph.edges():
        adjacency.setdefault(u, set()).add(v)
        adjacency.setdefault(v, set()).add(u)

    steps = found = 0
    score = 0.0

    def dfs(current: str, target: str, path: list[str]) -> None:
        nonlocal steps, found, score
        steps += 1
        if not steps & 0x3FFF and time.perf_counter() > deadline:
            raise _Timeout
        if current == target:
            found += 1
            score += 1.0 / (len(path) - 1)
            return
        if len(path) > MAX_HOPS:
            return
        for neighbor in adjacency.get(current, ()):
            if neighbor not in path:
                dfs(neighbor, target, path + [neighbor])

    try:
        for source in seeds:
            for target in seeds:
                if source != target:
                    dfs(source, target, [source])
    except _Timeout:
        return None, found
    return time.perf_counter() - start, found


# --------------------------------------------------------------------------- measurement


@dataclass
class Row:
    family: str
    nodes: int
    edges: int
    max_degree: int
    mode: str
    p50_ms: float
    p95_ms: float
    paths: float
    hops: float | None  # None: no paths returned
    peak_kib: float
    baseline_s: float | None  # None: timed out; nan: not run
    speedup: str


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil
    return ordered[int(rank) - 1]


def measure(graph: nx.Graph, family: str, mode: str, sampler: SeedSampler, args: argparse.Namespace) -> Row:
    seed_sets = [sampler.draw(mode) for _ in range(args.repeats + 1)]
    pathrag.find_key_paths(graph, seed_sets[0], theta=args.theta)  # warm-up
    latencies, counts, hops = [], [], []
    for seeds in seed_sets[1:]:
        t0 = time.perf_counter()
        paths = pathrag.find_key_paths(graph, seeds, theta=args.theta)
        latencies.append((time.perf_counter() - t0) * 1000)
        counts.append(len(paths))
        hops.extend(p.hops for p in paths)

    tracemalloc.start()
    pathrag.find_key_paths(graph, seed_sets[1], theta=args.theta)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    p50 = statistics.median(latencies)
    baseline_s: float | None = float("nan")
    speedup = "n/a"
    if args.baseline_timeout > 0:
        runs: list[float] = []
        for seeds in seed_sets[1:4]:
            seconds, _ = baseline_query(graph, seeds, args.baseline_timeout)
            if seconds is None:
                break
            runs.append(seconds)
            if sum(runs) > args.baseline_timeout:
                break
        if runs:
            baseline_s = statistics.median(runs)
            speedup = f"{baseline_s * 1000 / p50:,.0f}x"
        else:
            baseline_s = None
            speedup = f"> {args.baseline_timeout * 1000 / p50:,.0f}x"
        print(f"    baseline runs (s): {[round(r, 2) for r in runs] or 'timed out'}", file=sys.stderr)

    return Row(
        family,
        graph.number_of_nodes(),
        graph.number_of_edges(),
        max(d for _, d in graph.degree()),
        mode,
        p50,
        percentile(latencies, 95),
        statistics.mean(counts),
        statistics.mean(hops) if hops else None,
        peak / 1024,
        baseline_s,
        speedup,
    )


# --------------------------------------------------------------------------- reporting


def machine_info() -> str:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"- platform: {platform.platform()}\n- python: {sys.version.split()[0]}, networkx {nx.__version__}\n"
        f"- cpus: {os.cpu_count()} x {cpu}"
    )


def rss_mib() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MiB (current falls back to peak off Linux)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024, peak
    except OSError:
        pass
    return peak, peak


def markdown_table(rows: Sequence[Row], limit: float) -> str:
    lines = [
        "| graph | nodes | edges | max deg | seeds | p50 ms | p95 ms | paths | hops | peak KiB "
        "| baseline s | speed-up |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r.baseline_s is None:
            base = f"> {limit:g}"
        elif r.baseline_s != r.baseline_s:  # nan: not run
            base = "-"
        else:
            base = f"{r.baseline_s:.2f}"
        hops = "-" if r.hops is None else f"{r.hops:.2f}"
        lines.append(
            f"| {r.family} | {r.nodes:,} | {r.edges:,} | {r.max_degree:,} | {r.mode} | {r.p50_ms:.1f} | "
            f"{r.p95_ms:.1f} | {r.paths:.1f} | {hops} | {r.peak_kib:,.0f} | {base} | {r.speedup} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated node counts")
    parser.add_argument("--million", action="store_true", help="also run at 1,000,000 nodes")
    parser.add_argument("--repeats", type=int, default=20, help="timed queries per configuration")
    parser.add_argument(
        "--baseline-timeout",
        type=float,
        default=60.0,
        help="per-query limit for the reference baseline, seconds (0 disables it)",
    )
    parser.add_argument("--seed", type=int, default=2024, help="RNG seed")
    parser.add_argument("--theta", type=float, default=0.05, help="find_key_paths pruning threshold")
    args = parser.parse_args(argv)

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.million and 1_000_000 not in sizes:
        sizes.append(1_000_000)

    rows: list[Row] = []
    builds: list[str] = []
    for family, generate in FAMILIES.items():
        for n in sizes:
            rng = random.Random(f"{args.seed}-{family}-{n}")
            gc.disable()  # millions of small tuples: the cyclic GC would dominate build time
            t0 = time.perf_counter()
            graph = generate(n, rng)
            build_s = time.perf_counter() - t0
            gc.enable()
            # Move the graph out of the collector's reach, as a long-running service should: otherwise
            # the occasional full collection (~1.5 s at 10^6 nodes) lands inside some timed query.
            gc.collect()
            gc.freeze()
            rss, peak_rss = rss_mib()
            builds.append(
                f"| {family} | {n:,} | {graph.number_of_edges():,} | {build_s:.1f} | {rss:,.0f} | {peak_rss:,.0f} |"
            )
            print(
                f"built {family} n={n:,} m={graph.number_of_edges():,} in {build_s:.1f}s, RSS {rss:,.0f} MiB",
                file=sys.stderr,
            )
            sampler = SeedSampler(graph, rng)
            for mode in ("uniform", "degree"):
                row = measure(graph, family, mode, sampler, args)
                rows.append(row)
                print(
                    f"  {mode}: p50 {row.p50_ms:.1f} ms, p95 {row.p95_ms:.1f} ms, speed-up {row.speedup}",
                    file=sys.stderr,
                )
            del graph, sampler
            gc.unfreeze()
            gc.collect()

    print("## Machine\n")
    print(machine_info())
    print(
        f"\n## Key-path retrieval ({N_SEEDS} seeds, {args.repeats} queries per row, seed {args.seed}, "
        f"find_key_paths defaults, theta={args.theta:g})\n"
    )
    print(markdown_table(rows, args.baseline_timeout))
    print("\n## Graph generation (RSS: whole process, after the build)\n")
    print("| graph | nodes | edges | build s | RSS MiB | peak RSS MiB |\n|---|---:|---:|---:|---:|---:|")
    print("\n".join(builds))


if __name__ == "__main__":
    main()
