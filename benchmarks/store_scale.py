"""The embedded store at scale (issue 17): what one small write and one cold retrieval cost as it grows.

Builds stores of N synthetic documents through the public API (``PathRAGIndex(directory, ...)``), with an
instant scripted LLM so that only the store's own cost shows: each document is one chunk naming 6 entities
(drawn from a pool of N names) and 5 relations between them, embedded with ``HashingEmbedder(256)``.
Then, per size:

* one-document insert and one-document delete, median of 5 (each a whole commit: extraction of one chunk,
  merge, graph and vector writes), in a fresh interpreter: the first write of a process loads what a
  writer keeps in memory (the document table and the chunks' extraction records), so it is reported apart
  ("first write"), with the writer's peak RSS;
* open + first retrieval, in a fresh interpreter (``PathRAGIndex(directory)`` then ``retrieve`` without the
  keyword LLM): wall time and that process's peak RSS;
* size on disk, and what the issue's bound compares it with: the texts plus float32 vectors (entities,
  relations, chunks).

    python benchmarks/store_scale.py [--sizes 1000,10000,20000] [--dimensions 256] [--keep DIR]

The same script runs against older code (the JSON-file store) for the baseline, e.g.::

    git worktree add /tmp/old <commit>
    PYTHONPATH=/tmp/old/shared python benchmarks/store_scale.py --sizes 1000,10000,20000
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path

import pathrag
from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
from pathrag.index.extraction import ExtractionConfig

TEXT = re.compile(r"NOW THE REAL TEXT\nText:\n(.*?)\nOutput:\n", re.S)
CONFIG = IndexConfig(extraction=ExtractionConfig(max_gleaning=0), max_concurrency=16)
DIMENSIONS = 256  # --dimensions: 384 is MiniLM's, 1536 OpenAI's small model


class InstantLLM:
    """Answers an extraction prompt at once with the facts written into the chunk (``ENTITY name|description``
    and ``LINK a|b|description`` lines; ``vector_scale.py`` writes with it too)."""

    name = "instant"

    def complete(self, prompt: str) -> str:
        found = TEXT.findall(prompt)
        records = []
        for line in (found[-1] if found else "").splitlines():
            kind, _, rest = line.partition(" ")
            fields = rest.split("|")
            if kind == "ENTITY" and len(fields) == 2:
                records.append(f'("entity"<|>{fields[0]}<|>concept<|>{fields[1]})')
            elif kind == "LINK" and len(fields) == 3:
                records.append(f'("relationship"<|>{fields[0]}<|>{fields[1]}<|>{fields[2]}<|>link<|>5)')
        return "##".join(records) + "<|COMPLETE|>"

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


def document(i: int, pool: int, rng: random.Random) -> Document:
    names = [f"E{n}" for n in rng.sample(range(pool), 6)]
    lines = [f"ENTITY {n}|{n} appears in document {i}, which says something about it." for n in names]
    lines += [f"LINK {a}|{b}|In document {i}, {a} works with {b}." for a, b in pairwise(names)]
    return Document(id=f"doc{i}", text="\n".join(lines))


def open_index(directory: Path) -> PathRAGIndex:
    # the stand-in answers the paper prompt's format
    return PathRAGIndex(
        directory, llm=InstantLLM(), embedder=HashingEmbedder(DIMENSIONS), config=CONFIG, extractor="llm"
    )


def disk_size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def build(directory: Path, size: int, seed: int) -> tuple[float, list[Document]]:
    rng = random.Random(seed)
    docs = [document(i, size, rng) for i in range(size)]
    started = time.perf_counter()
    index = open_index(directory)
    for start in range(0, size, 1000):
        index.insert(docs[start : start + 1000])
    index.close()
    return time.perf_counter() - started, docs


PROBE = """
import sys, time
def peak_kb():  # VmHWM: this process's own peak (ru_maxrss would include the parent's, kept across exec)
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1])
from pathrag import HashingEmbedder, PathRAGIndex
rss_imported = peak_kb()
started = time.perf_counter()
index = PathRAGIndex(sys.argv[1], embedder=HashingEmbedder(int(sys.argv[2])))
result = index.retrieve("How is E1 connected to E2 and E3?", keyword_llm=False)
done = time.perf_counter()
print(done - started, peak_kb(), rss_imported, len(result.paths))
"""


def probe(directory: Path) -> tuple[float, float, float, int]:
    """Open + first retrieval in a fresh interpreter: seconds, peak RSS MB, RSS MB after imports, paths."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(directory), str(DIMENSIONS)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATHRAG_TOKENIZER": "approximate"},
        check=True,
    ).stdout.split()
    return float(out[0]), int(out[1]) / 1024, int(out[2]) / 1024, int(out[3])


def peak_mb() -> float:
    """This process's own peak RSS (VmHWM; ru_maxrss would include the parent's, kept across exec)."""
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmHWM")).split()[1]) / 1024


def writes(directory: Path, size: int, seed: int) -> dict[str, float]:
    """In this (fresh) process: open, one cold insert (the first write loads what a writer keeps in
    memory), then five one-document inserts and five deletes; medians, and the writer's peak RSS."""
    index = open_index(directory)
    rng = random.Random(seed + 1)
    extra = [document(size + i, size, rng) for i in range(6)]
    started = time.perf_counter()
    index.insert(extra[:1])
    cold = time.perf_counter() - started
    index.delete([extra[0].id])
    inserts, deletes = [], []
    for doc in extra[1:]:
        started = time.perf_counter()
        index.insert([doc])
        inserts.append(time.perf_counter() - started)
    for doc in extra[1:]:
        started = time.perf_counter()
        index.delete([doc.id])
        deletes.append(time.perf_counter() - started)
    index.close()
    return {"cold": cold, "insert": statistics.median(inserts), "delete": statistics.median(deletes), "peak": peak_mb()}


def measure(size: int, root: Path, seed: int) -> dict[str, float]:
    directory = root / f"store-{size}"
    shutil.rmtree(directory, ignore_errors=True)
    built, docs = build(directory, size, seed)
    cold, peak, imported, paths = probe(directory)
    size_on_disk = disk_size(directory)
    index = open_index(directory)
    stats = index.stats()
    index.close()
    texts = sum(len(d.text.encode()) for d in docs)
    vectors = (stats.get("entities", 0) + stats.get("relations", 0) + stats["chunks"]) * DIMENSIONS * 4
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--writes",
            str(directory),
            "--sizes",
            str(size),
            "--seed",
            str(seed),
            "--dimensions",
            str(DIMENSIONS),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    written = dict(zip(("cold", "insert", "delete", "peak"), map(float, out), strict=True))
    return {
        "size": size,
        "entities": stats.get("entities", 0),
        "relations": stats.get("relations", 0),
        "build s": built,
        "insert ms": written["insert"] * 1000,
        "delete ms": written["delete"] * 1000,
        "first write s": written["cold"],
        "writer MB": written["peak"],
        "open+retrieve s": cold,
        "peak MB": peak,
        "imports MB": imported,
        "paths": paths,
        "disk MB": size_on_disk / 1e6,
        "texts+vectors MB": (texts + vectors) / 1e6,
    }


def main() -> None:
    global DIMENSIONS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,20000")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build the stores here and keep them")
    parser.add_argument("--dimensions", type=int, default=DIMENSIONS, help="of the hashing embedder's vectors")
    parser.add_argument("--writes", type=Path, help=argparse.SUPPRESS)  # the fresh writer process
    args = parser.parse_args()
    DIMENSIONS = args.dimensions
    os.environ.setdefault("PATHRAG_TOKENIZER", "approximate")
    if args.writes is not None:
        r = writes(args.writes, int(args.sizes), args.seed)
        print(r["cold"], r["insert"], r["delete"], r["peak"])
        return
    root = args.keep or Path(tempfile.mkdtemp(prefix="pathrag-scale-"))
    print(
        f"pathrag from {Path(pathrag.__file__).parent}; Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {platform.machine()}; {DIMENSIONS}-dimensional vectors"
    )
    header = (
        "documents",
        "entities",
        "relations",
        "build",
        "1-doc insert",
        "1-doc delete",
        "writer: first write",
        "writer peak RSS",
        "open + 1 retrieval",
        "reader peak RSS (after imports)",
        "on disk",
        "texts + f32 vectors",
        "ratio",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            r = measure(size, root, args.seed)
            print(
                f"| {r['size']:,} | {r['entities']:,} | {r['relations']:,} | {r['build s']:.0f} s | "
                f"{r['insert ms']:.0f} ms | {r['delete ms']:.0f} ms | {r['first write s']:.2f} s | "
                f"{r['writer MB']:.0f} MB | {r['open+retrieve s']:.2f} s | "
                f"{r['peak MB']:.0f} MB ({r['imports MB']:.0f} MB) | {r['disk MB']:.1f} MB | "
                f"{r['texts+vectors MB']:.1f} MB | {r['disk MB'] / r['texts+vectors MB']:.2f}× |",
                flush=True,
            )
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
