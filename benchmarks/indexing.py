"""Indexing throughput against the ideal, with a scripted LLM of fixed latency.

Ideal wall time = LLM calls × latency / concurrency: what a pipeline with zero overhead would take.
The run indexes N single-chunk documents into a fresh directory (journal, cache and snapshots on disk,
as in real use), then inserts the same documents again, which must cost zero calls.

    python benchmarks/indexing.py [--chunks 1000] [--latencies 0.05,0.5] [--concurrency 16] [--gleaning 1]

Per-call CPU work (building prompts, parsing answers, journalling) runs on the event loop between calls,
so the shorter the simulated latency, the larger its share: 50 ms shows the overhead, 500 ms is closer
to a real extraction call.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import re
import tempfile
import time

from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
from pathrag.index.extraction import ExtractionConfig

TEXT = re.compile(r"NOW THE REAL TEXT\nText:\n(.*?)\nOutput:\n", re.S)


class FixedLatencyLLM:
    """Answers every prompt after ``latency`` seconds; extraction answers list the chunk's facts."""

    name = "fixed-latency"

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.calls = 0

    def complete(self, prompt: str) -> str:  # pragma: no cover - the benchmark is async
        raise NotImplementedError

    async def acomplete(self, prompt: str) -> str:
        self.calls += 1
        await asyncio.sleep(self.latency)
        if prompt.rstrip().endswith("Missing records:") or prompt.rstrip().endswith("Merged description:"):
            return "<|COMPLETE|>" if "Missing" in prompt[-40:] else "A merged description."
        found = TEXT.findall(prompt)
        records = []
        for line in (found[-1] if found else "").splitlines():
            a, b, c = line.split(" ")
            records += [
                f'("entity"<|>{a}<|>concept<|>{a} is mentioned with {b}.)',
                f'("relationship"<|>{a}<|>{b}<|>{a} relates to {b} via {c}.<|>{c}<|>5)',
            ]
        return "##\n".join(records) + "<|COMPLETE|>"


def corpus(chunks: int, seed: int) -> list[Document]:
    rng = random.Random(seed)
    names = [f"ENTITY{i}" for i in range(max(50, chunks // 4))]
    return [
        Document(
            id=f"doc{i}",
            text="\n".join(f"{rng.choice(names)} {rng.choice(names)} topic{rng.randrange(20)}" for _ in range(6)),
        )
        for i in range(chunks)
    ]


async def measure(docs: list[Document], latency: float, args: argparse.Namespace) -> str:
    llm = FixedLatencyLLM(latency)
    config = IndexConfig(max_concurrency=args.concurrency, extraction=ExtractionConfig(max_gleaning=args.gleaning))
    with tempfile.TemporaryDirectory() as directory:
        # the paper's prompt: its gleaning rounds are what --gleaning varies, and the stand-in answers its format
        index = PathRAGIndex(directory, llm=llm, embedder=HashingEmbedder(), config=config, extractor="llm")
        start = time.perf_counter()
        first = await index.ainsert(docs)
        wall = time.perf_counter() - start
        start = time.perf_counter()
        again = await index.ainsert(docs)
        rewall = time.perf_counter() - start
        index.close()
    ideal = first.llm_calls * latency / args.concurrency
    failures = f" ({len(first.failures)} failed)" if first.failures else ""
    return (
        f"| {latency * 1000:.0f} ms | {first.llm_calls}{failures} | {first.llm_calls / len(docs):.2f} | "
        f"{wall:.2f} | {ideal:.2f} | {100 * ideal / wall:.1f} % | {again.llm_calls} | {rewall:.2f} |"
    )


async def run(args: argparse.Namespace) -> None:
    docs = corpus(args.chunks, args.seed)
    print(f"machine: {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs")
    print(f"{args.chunks} single-chunk documents, concurrency {args.concurrency}, max_gleaning {args.gleaning}\n")
    print("| latency | LLM calls | calls/chunk | wall s | ideal s | % of ideal | re-insert calls | re-insert s |")
    print("|---|---|---|---|---|---|---|---|")
    for latency in args.latencies:
        print(await measure(docs, latency, args), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument(
        "--latencies",
        type=lambda v: [float(x) for x in v.split(",")],
        default=[0.05, 0.5],
        help="comma-separated seconds per LLM call",
    )
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--gleaning", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
