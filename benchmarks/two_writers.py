"""Two processes writing one store (issue 22): extraction side by side, plan-and-apply in turns.

    python benchmarks/two_writers.py                          # 200 ms per LLM and per embedding call
    python benchmarks/two_writers.py --latency 0.05 --documents 4   # a quick look
    python benchmarks/two_writers.py --plan-under-lock        # no plan before the lock, for comparison

Each writer process inserts its own ``--documents`` documents (one insert each, two chunks per document,
every document linked to one shared entity) into one store, with ``--latency`` seconds of simulated
latency per LLM call and per embedding call (the scripted model of ``tests/fakes.py``, pathrag's hashing
embeddings). Timed twice: the two writers one after the other, then both at once (``lock_timeout`` set,
so the second waits its turn instead of being refused). A reader process retrieves all along, without
LLM or embedding latency of its own, so its latency is the store's. Both runs must end with the same
store. Nothing is timed against a limit: the figures are what the run observed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "shared")]  # run from a checkout without installing


def doc(i: int) -> Any:
    """Document ``i``: two chunks, entities N{i} and N{i+1}, both linked, N{i} linked to the shared HUB."""
    from pathrag import Document

    return Document(
        id=f"d{i}",
        chunks=(
            f"ENTITY N{i} | concept | Node {i}.\nLINK N{i} | HUB | n{i} joins the hub. | k | 2",
            f"ENTITY N{i + 1} | concept | Node {i + 1}.\nLINK N{i} | N{i + 1} | n{i} precedes n{i + 1}. | order | 1",
        ),
    )


def slow_embedder(latency: float) -> Any:
    """Hashing embeddings (recorded as ``hashing-64``, as the reader's) that take ``latency`` s per call."""
    import asyncio

    from pathrag import HashingEmbedder

    class SlowEmbedder(HashingEmbedder):
        calls = 0

        def embed(self, texts: Any) -> list[list[float]]:
            SlowEmbedder.calls += 1
            time.sleep(latency)
            return super().embed(texts)

        async def aembed(self, texts: Any) -> list[list[float]]:
            SlowEmbedder.calls += 1
            await asyncio.sleep(latency)
            return super().embed(texts)

    return SlowEmbedder(64)


def writer(store: str, first: int, count: int, latency: float, ahead: bool, ready: Any, go: Any, out: Any) -> None:
    from pathrag import IndexConfig, PathRAGIndex
    from pathrag.index.backend import SQLiteBackend
    from tests.fakes import ScriptedLLM

    SQLiteBackend.plans_ahead = ahead  # False: every plan is made under the writer lock

    llm, embedder = ScriptedLLM(delay=latency), slow_embedder(latency)
    index = PathRAGIndex(store, llm=llm, embedder=embedder, config=IndexConfig(lock_timeout=600))
    docs = [doc(i) for i in range(first, first + 2 * count, 2)]
    ready.put("writer")
    go.wait()
    start = time.monotonic()
    for document in docs:
        index.insert([document])
    out.put(("writer", start, time.monotonic(), llm.calls, type(embedder).calls))
    index.close()


def reader(store: str, ready: Any, go: Any, stop: Any, out: Any) -> None:
    from pathrag import HashingEmbedder, PathRAGIndex

    index = PathRAGIndex(store, embedder=HashingEmbedder(64))
    queries = ("N1 and N5", "How is N3 connected to N12?", "HUB", "N107 N108")
    ready.put("reader")
    go.wait()
    latencies: list[float] = []
    while not stop.is_set():
        start = time.monotonic()
        index.retrieve(queries[len(latencies) % len(queries)], keyword_llm=False)
        latencies.append(time.monotonic() - start)
        time.sleep(0.01)
    out.put(("reader", latencies))
    index.close()


def run(store: Path, latency: float, count: int, *, together: bool, ahead: bool = True) -> dict[str, Any]:
    """Both writers (at once, or one after the other) with the reader reading throughout."""
    from pathrag import HashingEmbedder, PathRAGIndex

    PathRAGIndex(store, embedder=HashingEmbedder(64)).close()  # the store exists before the reader opens it
    ctx = multiprocessing.get_context("spawn")
    ready, out, go, stop = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Event()
    read = ctx.Process(target=reader, args=(str(store), ready, go, stop, out))
    writers = [
        ctx.Process(target=writer, args=(str(store), first, count, latency, ahead, ready, go, out))
        for first in (0, 100)
    ]
    read.start()
    waves = [writers] if together else [[w] for w in writers]
    results: list[tuple[Any, ...]] = []
    for number, wave in enumerate(waves):
        for w in wave:
            w.start()
        for _ in range(len(wave) + (number == 0)):  # the reader is ready once
            ready.get()
        go.set()  # later waves find it set: they start as soon as they are ready
        for w in wave:
            w.join()
            results.append(out.get())
    stop.set()
    latencies = out.get()[1]
    read.join()
    spans = [(r[1], r[2]) for r in results]
    seconds = max(end for _, end in spans) - min(start for start, _ in spans)
    if not together:  # one after the other: the two writers' own times (not the start-up between them)
        seconds = sum(end - start for start, end in spans)
    return {
        "seconds": seconds,
        "llm": sum(r[3] for r in results),
        "embeds": sum(r[4] for r in results),
        "reads": len(latencies),
        "p50": statistics.median(latencies) if latencies else 0.0,
        "max": max(latencies, default=0.0),
    }


def contents(store: Path) -> dict[str, Any]:
    from pathrag import HashingEmbedder, PathRAGIndex

    index = PathRAGIndex(store, embedder=HashingEmbedder(64))
    try:
        assert index.check() == [], index.check()
        return {
            "documents": sorted(index.documents),
            "entities": sorted(e.model_dump_json() for e in index.graph.iter_entities()),
            "relations": sorted(r.model_dump_json() for r in index.graph.iter_relations()),
            "vectors": {name: sorted(v.ids()) for name, v in index.vector_indexes.items()},
        }
    finally:
        index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per LLM and per embedding call")
    parser.add_argument("--documents", type=int, default=10, help="documents per writer (one insert each)")
    parser.add_argument("--plan-under-lock", action="store_true", help="make every plan under the writer lock")
    args = parser.parse_args()
    ahead = not args.plan_under_lock
    with tempfile.TemporaryDirectory() as work:
        after = run(Path(work) / "sequential", args.latency, args.documents, together=False, ahead=ahead)
        both = run(Path(work) / "together", args.latency, args.documents, together=True, ahead=ahead)
        same = contents(Path(work) / "sequential") == contents(Path(work) / "together")
    ms = 1000 * args.latency
    print(
        f"Two writer processes, {args.documents} one-document inserts each, {ms:g} ms per LLM call and per "
        f"embedding call; a reader retrieving throughout; plans made {'under' if args.plan_under_lock else 'before'} "
        "the writer lock.\n"
    )
    print("| writers | seconds | vs one after the other | LLM calls | embedding calls | reads | read p50 | read max |")
    print("|---|---|---|---|---|---|---|---|")
    for label, row in (("one after the other", after), ("both at once", both)):
        print(
            f"| {label} | {row['seconds']:.2f} | {row['seconds'] / after['seconds']:.2f}× | {row['llm']} | "
            f"{row['embeds']} | {row['reads']} | {1000 * row['p50']:.1f} ms | {1000 * row['max']:.1f} ms |"
        )
    machine = f"{platform.machine()}, {platform.system()}, Python {platform.python_version()}"
    print(f"\nSame store both ways: {same}. {machine}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
