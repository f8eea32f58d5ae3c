"""How big the store's HNSW segments should be and how wide a search walks them (issue 25).

The embedded store saves a big vector space as several HNSW graphs ("segments", see
``pathrag.sqlite.ann.SEGMENT_LIMIT``) and searches each for the best ``k + 70 + k/4`` candidates, which it
then re-scores exactly. This measures, on the clustered vectors of ``vector_scale.py``'s embedder, for each
split of the same vectors into segments: the time to add them (int8, the store's build settings, every
core), and per walk width (``expansion_search``: see :data:`WIDTHS`) the HNSW search time per query (the
segments one after the other) and recall@10 and @500 after the exact re-scoring, against exact search, per
metric the graphs compare int8 copies by (``--metrics``) and way of making those copies (``--casts``: the
store's :func:`~pathrag.sqlite.ann.int8_copies`, or usearch's own cast of float32). The queries are the
questions of ``vector_scale.py`` (each in one topic's cluster), embedded the same way.

    python benchmarks/hnsw_segments.py [--vectors 524288] [--segments 2,4] [--metrics cos,ip,l2sq] \\
        [--casts steps,usearch]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from vector_scale import TOPICS, TopicEmbedder, queries

from pathrag.sqlite.ann import BUILD, METRIC, int8_copies, int8_scale

WIDTHS = {  # how wide each segment is walked, for k hits and the store's margin m = 70 + k/4
    "k + m": lambda k, m: k + m,  # as wide as the candidates asked for
    "k + 2m": lambda k, m: k + 2 * m,  # the margin twice: what the store does
    "2(k + m)": lambda k, m: 2 * (k + m),
}


def clustered(count: int, dims: int, seed: int) -> np.ndarray:
    """``count`` unit vectors as the store benchmark's embedder makes them (one of 512 topics each)."""
    rng = np.random.default_rng(seed)
    texts = [f"item {i} of topic{rng.integers(TOPICS)}" for i in range(count)]
    return TopicEmbedder(dims).vectors(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", type=int, default=1 << 19)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--segments", default="2,4", help="splits to compare, comma separated")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--metrics", default=METRIC, help="usearch metrics to compare, comma separated (cos,ip)")
    parser.add_argument(
        "--casts", default="steps", help="int8 copies to compare, comma separated: steps (the store's), usearch"
    )
    args = parser.parse_args()
    from usearch.index import Index

    vectors = clustered(args.vectors, args.dims, seed=1)
    keys = np.arange(len(vectors), dtype=np.uint64)
    # what a retrieval asks: a question in one topic's cluster, whose nearest neighbours are near-ties among
    # that cluster's members (a stored vector with a little noise finds itself: too easy to tell metrics apart)
    asked = TopicEmbedder(args.dims).vectors(queries(len(vectors), args.queries, seed=3))
    exact = {k: np.argsort(-(asked @ vectors.T), axis=1)[:, :k] for k in (10, 500)}
    print(f"{len(vectors):,} vectors x {args.dims}, {os.cpu_count()} cores, build {BUILD}\n")
    print("| int8 copies | metric | segments | vectors each | add | walk | k | search per query | recall@k |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    scales = {"steps": int8_scale(args.dims), "usearch": None}  # usearch: it casts float32 itself
    splits = [
        (cast, metric, int(s))
        for cast in args.casts.split(",")
        for metric in args.metrics.split(",")
        for s in args.segments.split(",")
    ]
    for cast, metric, count in splits:
        scale = scales[cast]
        parts = np.array_split(np.arange(len(vectors)), count)
        started = time.perf_counter()
        graphs = []
        for rows in parts:
            graph = Index(ndim=args.dims, metric=metric, dtype="i8", **BUILD)
            graph.add(keys[rows], int8_copies(vectors[rows], scale), threads=os.cpu_count() or 1)
            graphs.append(graph)
        rate = len(vectors) / (time.perf_counter() - started)
        for walk, width in WIDTHS.items():
            for k in (10, 500):
                margin = 70 + k // 4
                wanted = k + margin  # what the store asks each segment for
                seconds, found = 0.0, 0
                for query, truth in zip(asked, exact[k], strict=True):
                    started = time.perf_counter()
                    copy = int8_copies(query, scale)
                    hits = []
                    for graph in graphs:
                        graph.expansion_search = width(k, margin)
                        result = graph.search(copy, wanted)
                        hits += zip(result.distances.tolist(), result.keys.tolist(), strict=True)
                    candidates = np.array([key for _, key in sorted(hits)[:wanted]])
                    seconds += time.perf_counter() - started
                    best = candidates[np.argsort(-(vectors[candidates] @ query))[:k]]
                    found += len(set(best.tolist()) & set(truth.tolist()))
                print(
                    f"| {cast} | {metric} | {count} | {len(parts[0]):,} | {rate:,.0f}/s | {walk} | {k} | "
                    f"{seconds / len(asked) * 1000:.2f} ms | {found / (k * len(asked)):.4f} |"
                )


if __name__ == "__main__":
    main()
