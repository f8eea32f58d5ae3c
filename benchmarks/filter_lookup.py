"""Benchmark: how a filtered retrieval finds its documents in a store, with and without the SQL narrowing.

What is measured
----------------
A store holds ``--documents`` document rows (one chunk each) spread over ``--users`` users, written
straight into its tables (no extraction: only the lookup is measured). A filter ``{"user": "u7"}`` is
looked up as a filtered retrieval does (:meth:`pathrag.index.sources.CommittedDocuments.matching_chunks`,
in one committed read), first with the store's SQL narrowing (:func:`pathrag.index.sources._prefilter`),
then reading every document's metadata; both must find the same chunks.

Run (from the repository root)::

    python benchmarks/filter_lookup.py                       # 50,000 documents, 100 users
    python benchmarks/filter_lookup.py --documents 200000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import pathrag.index.sources as sources
from pathrag import HashingEmbedder, PathRAGIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=50_000)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        index = PathRAGIndex(directory, embedder=HashingEmbedder(64))
        store = index._store
        assert store is not None
        with store.transaction():
            store.executemany(
                "INSERT INTO documents VALUES (?, ?, ?, ?)",
                [
                    (f"d{n}", f"h{n}", json.dumps({"user": f"u{n % args.users}", "source": f"files/{n}.md"}), "[]")
                    for n in range(args.documents)
                ],
            )
            store.executemany(
                "INSERT INTO doc_chunks VALUES (?, ?, ?)", [(f"d{n}", 0, f"chunk-{n}") for n in range(args.documents)]
            )

        def lookup() -> set[str]:
            return index.read_committed(lambda *_: index.committed_documents().matching_chunks({"user": "u7"}))

        found = {}
        narrowing = sources._prefilter
        for label in ("narrowed in SQL", "every document read"):
            sources._prefilter = narrowing if label == "narrowed in SQL" else (lambda _filter: ("", []))
            lookup()  # warm-up
            start = time.perf_counter()
            for _ in range(args.repeats):
                found[label] = lookup()
            took = (time.perf_counter() - start) / args.repeats
            print(f"{label:20s} {len(found[label]):,} chunks of {args.documents:,} documents: {took * 1000:.0f} ms")
        sources._prefilter = narrowing
        index.close()
        if len(set(map(frozenset, found.values()))) != 1:
            raise SystemExit("the two lookups disagree")


if __name__ == "__main__":
    main()
