"""The embedded store at 10⁴–10⁶ entities × 384 / 1,536 dimensions (issue 25): import, open, reads, reads after
writes, a mixed workload and the vector search's recall, each section on its own.

Stores are built through the public API: :meth:`pathrag.PathRAGIndex.add_records` (what ``pathrag import``
and the importers use), one call per streamed batch of ``--batch`` entities (document ``bulk:<n>``), with a
scripted LLM that answers at once (no keyword LLM at query time) and :class:`TopicEmbedder`, a fast
deterministic numpy embedder whose vectors are structured: a text's vector is its topic's centroid (the
``topic<k>`` word in it, else a hash of the text) plus seeded noise, so that the nearest neighbours of a
query are a cluster and an approximate search's recall means something. The graph: every entity names its
topic, has about two relations (one to a neighbour in the id order, one to a random entity or, one time in
ten, to one of a few hubs), and every five entities share one passage (chunks ≈ N/5).

Sections (``--only``, comma separated; all by default):

* ``build``: import time (batches streamed, never all held) and the importing process's peak RSS;
* ``open``: open + first retrieval in a fresh interpreter, and that process's peak RSS;
* ``read``: retrieval p50/p95 with the query vector given (the embedder's time is measured and taken
  off; it is a dictionary look-up for the prepared queries), default retrieval parameters, the query
  text as its own keyword (``keyword_llm=False``);
* ``after-write``: the first read after a one-document write against a steady read (medians of 5);
* ``mixed``: one one-document insert per second in one process, readers in another, ``--seconds`` long:
  reader p50/p95 and throughput, against the same reader alone;
* ``recall``: per vector space, the store's search time per query vector and recall@10 against exact
  numpy search over the same vectors (200 sampled queries).

    python benchmarks/vector_scale.py [--sizes 10000] [--dims 384] [--only build,read] [--keep DIR]

With ``--keep DIR`` the stores are built (or reused, when complete) in ``DIR/<size>x<dims>`` and kept.
"""

from __future__ import annotations

import argparse
import json
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
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from store_scale import InstantLLM as WriterLLM  # extraction: the ENTITY / LINK lines of a document

import pathrag
from pathrag import Entity, IndexConfig, PathRAGIndex, Relation, VectorItem
from pathrag.index.extraction import ExtractionConfig

SECTIONS = ("build", "open", "read", "after-write", "mixed", "recall")
TOPICS = 512  # clusters of the embedder's vectors
HUBS = 8  # entities that one relation in ten goes to
PER_PASSAGE = 5  # entities citing one passage
TOPIC = re.compile(r"topic(\d+)")
CONFIG = IndexConfig(extraction=ExtractionConfig(max_gleaning=0))
QUERIES = 200


class TopicEmbedder:
    """Deterministic, fast and structured: ``unit(centroid[topic] + noise)``, the topic read from the first
    ``topic<k>`` of the text (else a hash of it), the noise two rows of a seeded bank picked by hashes of
    the text. Vectorised: a batch costs a few numpy operations. ``given`` maps a text to a vector returned
    as is (the prepared queries: embedding them costs a dictionary look-up); ``seconds`` adds up the time
    spent embedding, so a caller can take it off."""

    name = "topic-embedder"

    def __init__(self, dimensions: int, *, seed: int = 7, noise: float = 0.35) -> None:
        rng = np.random.default_rng(seed)
        self.dimensions = dimensions
        self._centroids = rng.standard_normal((TOPICS, dimensions)).astype(np.float32)
        self._bank = (rng.standard_normal((4096, dimensions)) * (noise / np.sqrt(2))).astype(np.float32)
        self.given: dict[str, list[float]] = {}
        self.seconds = 0.0

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The unit vectors of ``texts`` as one float32 matrix."""
        topics = np.empty(len(texts), dtype=np.int64)
        first = np.empty(len(texts), dtype=np.int64)
        second = np.empty(len(texts), dtype=np.int64)
        for row, text in enumerate(texts):
            found = TOPIC.search(text)
            h = zlib.crc32(text.encode())
            topics[row] = int(found.group(1)) % TOPICS if found else h % TOPICS
            first[row], second[row] = h & 4095, (h >> 12) & 4095
        out: np.ndarray = self._centroids[topics] + self._bank[first] + self._bank[second]
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        missing = [t for t in texts if t not in self.given]
        made = dict(zip(missing, self.vectors(missing), strict=True)) if missing else {}  # rows, not lists
        out = [self.given[t] if t in self.given else made[t] for t in texts]
        self.seconds += time.perf_counter() - started
        return out

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


class InstantLLM:
    """Any prompt answered at once with nothing (the import makes no LLM call; this keeps it honest)."""

    name = "instant"

    def complete(self, prompt: str) -> str:
        return "<|COMPLETE|>"

    async def acomplete(self, prompt: str) -> str:
        return ""


def topic_of(i: int) -> int:
    return zlib.crc32(f"E{i}".encode()) % TOPICS


def batch(start: int, stop: int, size: int, seed: int) -> tuple[list[Entity], list[Relation], list[VectorItem]]:
    """Entities ``start..stop-1`` of a graph of ``size``: their records, relations and passages."""
    rng = random.Random(seed * 1_000_003 + start)
    entities, relations, passages = [], [], []
    for i in range(start, stop):
        topic = topic_of(i)
        entities.append(
            Entity(
                name=f"E{i}",
                type=f"kind{i % 7}",
                description=f"E{i} belongs to topic{topic}, item {i} of the synthetic graph.",
                source_ids=(f"P{i // PER_PASSAGE}",),
            )
        )
        near = i - 1 if i > 0 else 1
        far = rng.randrange(HUBS) if rng.random() < 0.1 else rng.randrange(size)
        for other in (near, far):
            if other != i:
                relations.append(
                    Relation(
                        source=f"E{i}",
                        target=f"E{other}",
                        description=f"E{i} relates to E{other} in topic{topic}.",
                        keywords=(f"link{i % 11}",),
                        weight=1.0,
                        source_ids=(f"P{i // PER_PASSAGE}",),
                    )
                )
    for p in range(start // PER_PASSAGE, (stop + PER_PASSAGE - 1) // PER_PASSAGE):
        members = range(p * PER_PASSAGE, min((p + 1) * PER_PASSAGE, size))
        names = [f"E{m}" for m in members]
        text = f"Passage {p} in topic{topic_of(p * PER_PASSAGE)} mentions " + ", ".join(names) + "."
        passages.append(VectorItem(f"P{p}", text, {"chunk_id": f"P{p}", "entities": sorted(names)}))
    return entities, relations, passages


def batches(
    size: int, step: int, seed: int
) -> Iterator[tuple[int, tuple[list[Entity], list[Relation], list[VectorItem]]]]:
    """The graph in batches, made one at a time (the import streams: no batch outlives its call)."""
    for number, start in enumerate(range(0, size, step)):
        yield number, batch(start, min(start + step, size), size, seed)


def open_index(directory: Path, dims: int) -> PathRAGIndex:
    return PathRAGIndex(directory, llm=InstantLLM(), embedder=TopicEmbedder(dims), config=CONFIG)


def peak_mb() -> float:
    """This process's own peak RSS (VmHWM: ru_maxrss would include the parent's, kept across exec)."""
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmHWM")).split()[1]) / 1024


# -- build ------------------------------------------------------------------------------------------


def build(directory: Path, size: int, dims: int, step: int, seed: int) -> dict[str, Any]:
    """Import the graph in batches; per batch seconds, and this process's peak RSS."""
    index = open_index(directory, dims)
    started = time.perf_counter()
    per_batch = []
    for number, (entities, relations, passages) in batches(size, step, seed):
        t = time.perf_counter()
        index.add_records(f"bulk:{number}", entities, relations, vector_items={"chunks": passages})
        per_batch.append(time.perf_counter() - t)
        print(f"  batch {number}: {per_batch[-1]:.1f} s, peak RSS {peak_mb():.0f} MB", file=sys.stderr, flush=True)
    index.close()  # returns once the last batch is folded into the saved search indexes
    total = time.perf_counter() - started
    index = open_index(directory, dims)  # the counts, once the import has ended
    stats = index.stats()
    index.close()
    (directory / "bench.json").write_text(json.dumps({"size": size, "dims": dims, "seed": seed, "built": total}))
    return {"seconds": total, "batches": per_batch, "peak": peak_mb(), "stats": stats}


def build_child(directory: Path, size: int, dims: int, step: int, seed: int) -> None:
    """``--build-child``: the import in a process of its own (its peak RSS is the import's), as JSON."""
    print(json.dumps(build(directory, size, dims, step, seed)))


# -- reads ------------------------------------------------------------------------------------------


def small_document(tag: str, size: int, rng: random.Random) -> pathrag.Document:
    """A one-chunk document naming three stored entities and two new ones, linked in a chain."""
    topic = rng.randrange(TOPICS)
    names = [f"E{rng.randrange(size)}" for _ in range(3)] + [f"NEW{tag}A", f"NEW{tag}B"]
    lines = [f"ENTITY {n}|{n} is written about again in topic{topic} ({tag})." for n in names]
    lines += [f"LINK {a}|{b}|In topic{topic}, {a} meets {b} ({tag})." for a, b in zip(names, names[1:], strict=False)]
    return pathrag.Document(id=f"write:{tag}", text="\n".join(lines))


def queries(size: int, count: int, seed: int) -> list[str]:
    """Questions naming two entities and a topic (the embedder places each in its topic's cluster)."""
    rng = random.Random(seed + 99)
    return [
        f"How is E{rng.randrange(size)} related to E{rng.randrange(size)} in topic{rng.randrange(TOPICS)}?"
        for _ in range(count)
    ]


def reader(directory: Path, dims: int) -> tuple[PathRAGIndex, TopicEmbedder]:
    embedder = TopicEmbedder(dims)
    index = PathRAGIndex(directory, llm=WriterLLM(), embedder=embedder, config=CONFIG)
    return index, embedder


def timed_retrieve(index: PathRAGIndex, embedder: TopicEmbedder, query: str) -> float:
    """One retrieval's seconds without the query's embedding (the prepared vectors are a look-up, and the
    embedder's own time is taken off all the same)."""
    if query not in embedder.given:
        embedder.given[query] = list(embedder.vectors([query])[0])
    embedder.seconds = 0.0
    started = time.perf_counter()
    index.retrieve(query, keyword_llm=False)
    return time.perf_counter() - started - embedder.seconds


def percentiles(values: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


PROBE = """
import json, sys, time
sys.path.insert(0, sys.argv[3])
import vector_scale as vs
started = time.perf_counter()
index, embedder = vs.reader(vs.Path(sys.argv[1]), int(sys.argv[2]))
opened = time.perf_counter()
index.retrieve(sys.argv[4], keyword_llm=False)
done = time.perf_counter()
print(json.dumps({"open": opened - started, "first": done - opened, "peak": vs.peak_mb()}))
"""


def section_open(directory: Path, size: int, dims: int, seed: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(directory), str(dims), str(Path(__file__).parent), queries(size, 1, seed)[0]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(json.loads(out))


def section_read(directory: Path, size: int, dims: int, seed: int, count: int = 60) -> dict[str, float]:
    index, embedder = reader(directory, dims)
    asked = queries(size, count + 3, seed)
    for query in asked[:3]:  # warm: the first read loads what reads keep
        timed_retrieve(index, embedder, query)
    times = [timed_retrieve(index, embedder, query) for query in asked[3:]]
    index.close()
    p50, p95 = percentiles(times)
    return {"p50": p50, "p95": p95, "queries": len(times)}


def section_after_write(directory: Path, size: int, dims: int, seed: int, rounds: int = 5) -> dict[str, float]:
    """Median over ``rounds`` of: a one-document insert, the first read after it, a steady read; then the
    documents deleted again (the store is left as built)."""
    index, embedder = reader(directory, dims)
    rng = random.Random(seed + 5)
    asked = queries(size, 2 * rounds + 2, seed + 1)
    timed_retrieve(index, embedder, asked[0])
    writes, first, steady = [], [], []
    docs = [small_document(f"aw{n}", size, rng) for n in range(rounds)]
    try:
        for n, doc in enumerate(docs):
            started = time.perf_counter()
            index.insert([doc])
            writes.append(time.perf_counter() - started)
            first.append(timed_retrieve(index, embedder, asked[2 * n + 1]))
            steady.append(timed_retrieve(index, embedder, asked[2 * n + 2]))
    finally:
        index.delete([str(doc.id) for doc in docs])
        index.close()
    return {
        "write": statistics.median(writes),
        "first": statistics.median(first),
        "steady": statistics.median(steady),
    }


WRITER = """
import sys, time, random
sys.path.insert(0, sys.argv[3])
import vector_scale as vs
index, _ = vs.reader(vs.Path(sys.argv[1]), int(sys.argv[2]))
size, seconds = int(sys.argv[4]), float(sys.argv[5])
rng = random.Random(11)
ids, times = [], []
start = time.perf_counter()
n = 0
while time.perf_counter() - start < seconds:
    doc = vs.small_document(f"mx{n}", size, rng)
    t = time.perf_counter()
    index.insert([doc])
    times.append(time.perf_counter() - t)
    ids.append(doc.id)
    n += 1
    time.sleep(max(0.0, start + n - time.perf_counter()))  # one a second
index.delete(ids)
index.close()
print(len(times), sorted(times)[len(times) // 2] if times else 0.0)
"""


def _read_for(index: PathRAGIndex, embedder: TopicEmbedder, asked: list[str], seconds: float) -> list[float]:
    times: list[float] = []
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        times.append(timed_retrieve(index, embedder, asked[len(times) % len(asked)]))
    return times


def section_mixed(directory: Path, size: int, dims: int, seed: int, seconds: float) -> dict[str, float]:
    """Readers alone for ``seconds``, then the same while another process inserts one document a second."""
    index, embedder = reader(directory, dims)
    asked = queries(size, 200, seed + 2)
    for query in asked[:3]:
        timed_retrieve(index, embedder, query)
    alone = _read_for(index, embedder, asked, seconds)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(directory), str(dims), str(Path(__file__).parent), str(size), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.0)  # its imports and first write under way
    mixed = _read_for(index, embedder, asked, seconds - 1.0)
    out, _ = writer.communicate()
    index.close()
    inserts, insert_p50 = out.split()
    a50, a95 = percentiles(alone)
    m50, m95 = percentiles(mixed)
    return {
        "alone p50": a50,
        "alone p95": a95,
        "alone qps": len(alone) / seconds,
        "p50": m50,
        "p95": m95,
        "qps": len(mixed) / (seconds - 1.0),
        "inserts": int(inserts),
        "insert p50": float(insert_p50),
    }


def _stored_vectors(directory: Path, space: str) -> tuple[list[str], np.ndarray]:
    """A space's ids and vectors, read straight from the store's file (read-only), into one matrix."""
    import sqlite3

    db = sqlite3.connect(f"file:{directory / 'pathrag.sqlite'}?mode=ro", uri=True)
    try:
        ((count,),) = db.execute("SELECT COUNT(*) FROM vectors WHERE space = ?", (space,)).fetchall()
        first = db.execute("SELECT length(vector) FROM vectors WHERE space = ? LIMIT 1", (space,)).fetchall()
        matrix = np.empty((count, first[0][0] // 4 if first else 0), dtype="<f4")
        ids = []
        for row, (item_id, blob) in enumerate(db.execute("SELECT id, vector FROM vectors WHERE space = ?", (space,))):
            ids.append(item_id)
            matrix[row] = np.frombuffer(blob, dtype="<f4")
    finally:
        db.close()
    return ids, matrix


def section_recall(directory: Path, size: int, dims: int, seed: int, k: int = 10) -> dict[str, dict[str, float]]:
    """Per space: the store's search time per query vector and recall@k against exact search."""
    index, embedder = reader(directory, dims)
    asked = queries(size, QUERIES, seed + 3)
    found: dict[str, dict[str, float]] = {}
    for space in ("entities", "relations", "chunks"):
        ids, matrix = _stored_vectors(directory, space)
        vectors = embedder.vectors(asked)
        for query, vector in zip(asked, vectors, strict=True):
            embedder.given[query] = list(vector)
        vindex = index.vector_indexes[space]
        vindex.query(asked[0], k)  # warm: the first search loads what searches keep
        times, recalls = [], []
        for query, vector in zip(asked, vectors, strict=True):
            embedder.seconds = 0.0
            started = time.perf_counter()
            hits = vindex.query(query, k)
            times.append(time.perf_counter() - started - embedder.seconds)
            scores = matrix @ vector
            top = np.argpartition(-scores, k - 1)[:k]
            exact = {ids[i] for i in top}
            recalls.append(len(exact & {hit.id for hit in hits}) / k)
        p50, p95 = percentiles(times)
        found[space] = {"vectors": len(ids), "p50": p50, "p95": p95, "recall": statistics.mean(recalls)}
        del matrix
    index.close()
    return found


# -- driver ------------------------------------------------------------------------------------------


def machine() -> str:
    return (
        f"{platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"pathrag from {Path(pathrag.__file__).parent}"
    )


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    print(f"\n### {title}\n\nMachine: {machine()}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |", flush=True)


def ensure_store(root: Path, size: int, dims: int, args: argparse.Namespace, built: list[list[str]]) -> Path:
    """The store of ``size`` × ``dims`` under ``root``: reused when complete (``bench.json``), else built in a
    process of its own (and the build reported)."""
    directory = root / f"{size}x{dims}"
    recorded = directory / "bench.json"
    if recorded.exists() and json.loads(recorded.read_text()).get("seed") == args.seed and "build" not in args.only:
        return directory
    shutil.rmtree(directory, ignore_errors=True)
    out = subprocess.run(
        [sys.executable, __file__, "--build-child", str(directory), "--sizes", str(size), "--dims", str(dims)]
        + ["--batch", str(args.batch), "--seed", str(args.seed)],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    ).stdout
    r = json.loads(out)
    batches_s = r["batches"]
    built.append(
        [
            f"{size:,}",
            str(dims),
            f"{r['stats'].get('entities', 0):,} / {r['stats'].get('relations', 0):,} / {r['stats'].get('chunks', 0):,}",
            f"{len(batches_s)} × {args.batch:,}",
            f"{r['seconds']:.1f} s",
            f"{min(batches_s):.1f} / {max(batches_s):.1f} s",
            f"{r['peak']:.0f} MB",
        ]
    )
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--sizes", default="10000", help="entities, comma separated (10000,100000,1000000)")
    parser.add_argument("--dims", default="384", help="dimensions, comma separated (384,1536)")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"sections, comma separated: {','.join(SECTIONS)}")
    parser.add_argument("--keep", type=Path, help="build the stores here (DIR/<size>x<dims>), reuse and keep them")
    parser.add_argument("--batch", type=int, default=100_000, help="entities per add_records call")
    parser.add_argument("--seconds", type=float, default=20.0, help="of the mixed workload")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--build-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("PATHRAG_TOKENIZER", "approximate")
    if args.build_child is not None:
        build_child(args.build_child, int(args.sizes), int(args.dims), args.batch, args.seed)
        return
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(args.only) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {','.join(SECTIONS)}")
    root = args.keep or Path(tempfile.mkdtemp(prefix="pathrag-vectors-"))
    rows: dict[str, list[list[str]]] = {section: [] for section in SECTIONS}
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            for dims in (int(d) for d in args.dims.split(",")):
                run_sections(root, size, dims, args, rows)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    report(rows, args)


def run_sections(root: Path, size: int, dims: int, args: argparse.Namespace, rows: dict[str, list[list[str]]]) -> None:
    directory = ensure_store(root, size, dims, args, rows["build"])
    shape = [f"{size:,}", str(dims)]
    if "open" in args.only:
        r = section_open(directory, size, dims, args.seed)
        rows["open"].append([*shape, f"{r['open']:.2f} s", f"{r['first']:.2f} s", f"{r['peak']:.0f} MB"])
    if "read" in args.only:
        r = section_read(directory, size, dims, args.seed)
        rows["read"].append([*shape, f"{r['p50'] * 1000:.1f} ms", f"{r['p95'] * 1000:.1f} ms", str(r["queries"])])
    if "after-write" in args.only:
        r = section_after_write(directory, size, dims, args.seed)
        rows["after-write"].append(
            [
                *shape,
                f"{r['write'] * 1000:.0f} ms",
                f"{r['first'] * 1000:.1f} ms",
                f"{r['steady'] * 1000:.1f} ms",
                f"{r['first'] / r['steady']:.1f}×",
            ]
        )
    if "mixed" in args.only:
        r = section_mixed(directory, size, dims, args.seed, args.seconds)
        rows["mixed"].append(
            [
                *shape,
                f"{r['alone p50'] * 1000:.1f} / {r['alone p95'] * 1000:.1f} ms, {r['alone qps']:.1f}/s",
                f"{r['p50'] * 1000:.1f} / {r['p95'] * 1000:.1f} ms, {r['qps']:.1f}/s",
                f"{r['p95'] / r['p50']:.1f}×",
                f"{r['inserts']} (p50 {r['insert p50'] * 1000:.0f} ms)",
            ]
        )
    if "recall" in args.only:
        for space, r in section_recall(directory, size, dims, args.seed).items():
            rows["recall"].append(
                [
                    *shape,
                    space,
                    f"{int(r['vectors']):,}",
                    f"{r['p50'] * 1000:.2f} / {r['p95'] * 1000:.2f} ms",
                    f"{r['recall']:.4f}",
                ]
            )


HEADERS = {
    "build": (
        "Import (add_records, streamed batches)",
        (
            "entities",
            "dims",
            "stored entities / relations / passages",
            "batches",
            "import",
            "batch min / max",
            "peak RSS",
        ),
    ),
    "open": ("Open + first retrieval (fresh interpreter)", ("entities", "dims", "open", "first retrieval", "peak RSS")),
    "read": (
        "Retrieval, query embedding excluded (default parameters, keywords = the query, no LLM)",
        ("entities", "dims", "p50", "p95", "queries"),
    ),
    "after-write": (
        "A read right after a one-document insert (medians of 5)",
        ("entities", "dims", "insert", "first read after", "steady read", "ratio"),
    ),
    "mixed": (
        "Mixed workload: one insert a second in one process, a reader in another",
        ("entities", "dims", "reader alone p50 / p95, throughput", "with the writer", "p95 / p50", "inserts"),
    ),
    "recall": (
        f"Vector search per query vector and recall@10 against exact numpy search ({QUERIES} queries)",
        ("entities", "dims", "space", "vectors", "search p50 / p95", "recall@10"),
    ),
}


def report(rows: dict[str, list[list[str]]], args: argparse.Namespace) -> None:
    for section in SECTIONS:
        if rows[section]:
            title, header = HEADERS[section]
            table(title, header, rows[section])


if __name__ == "__main__":
    main()
