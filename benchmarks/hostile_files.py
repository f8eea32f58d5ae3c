"""The probes of issue 39: what nothing beside the store may do to it.

    python benchmarks/hostile_files.py                       # every probe but the big insert (~10 min, 2 cores)
    python benchmarks/hostile_files.py --probes wal,hops     # some of them
    python benchmarks/hostile_files.py --probes insert --documents 1000000   # one insert of 10^6 tiny documents

Probes (each prints one table row; nothing is timed against a limit, the figures are what the run saw):

- ``wal``: library opens (``SQLiteStore`` and ``read_store_info``) and ``pathrag stats`` runs of a store while
  another process inserts one document at a time (pausing up to 30 ms between them), never waiting for the
  lock: false "WAL is damaged" alarms, and writes a reader refused.
- ``garble``: 8 random bytes garbled at a random place of the graph part of a saved HNSW segment (a space of
  70,000 vectors of 384 dimensions), each copy searched 40 times by a new process walking the graphs and
  compared with exact search: crashes, wrong top-10s (scores neither exact search's nor the undamaged files'), refusals
  (rebuilt from the rows).
- ``edits``: garbled int8 vectors, an edited scale, a segment listed in place of another of the same size, a
  FIFO or ``/dev/zero`` in place of the manifest or a segment (the same space in two segments): wrong top-10s
  over 40 searches, hangs, crashes (a search process may take 6 GB at most).
- ``folds``: two processes writing and folding the same space for ``--seconds``, searching between writes:
  failed searches, and searches that differ from exact search.
- ``firstquery``: a new reader's first query after a commit of 10^5 vectors of 384 dimensions beside a saved
  index (50,000 vectors): its time, the next query's, and the whole process's.
- ``symlink``: ``pathrag.lock`` replaced by a link to another file, then an insert: the file's fate.
- ``hops``: ``pathrag paths`` on the demo store at every hostile ``max_hops`` / θ / α: the slowest run and the
  most memory (the whole command, its start included).
- ``insert``: one ``insert`` of ``--documents`` tiny documents with a model that answers after a short wait,
  as one over the network does: peak memory, time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "shared")]  # run from a checkout without installing
os.environ.setdefault("PATHRAG_TOKENIZER", "approximate")  # no tokenizer download: the probes are offline
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'shared'}"}
QUESTION = "How is Odric Pelham connected to the Lantern Night Flood?"


def _python(code: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout,
        check=False,
    )


# -- wal ---------------------------------------------------------------------------------------------

WRITER = """
import random, sys, time
from pathlib import Path
sys.path[:0] = [sys.argv[3]]
from tests import reliability_kit as kit
from pathrag.errors import StoreError, StoreLocked
index = kit.open_index(Path(sys.argv[1]), lock_timeout=0)
refused = failed = 0
deadline = time.monotonic() + float(sys.argv[2])
i = 10_000
while time.monotonic() < deadline:
    try:
        index.insert([kit.doc(i)])
    except StoreLocked:
        refused += 1
    except StoreError as exc:
        failed += 1
        print(exc, file=sys.stderr)
    i += 1
    time.sleep(random.uniform(0, 0.03))  # a pause: the readers' checks start on a quiet store, then it commits
index.close()
print(i - 10_000, refused, failed)
"""


def probe_wal(work: Path, opens: int, cli_runs: int) -> dict[str, Any]:
    from pathrag.errors import StoreError
    from pathrag.sqlite import SQLiteStore, read_store_info
    from tests import reliability_kit as kit

    store = work / "wal"
    index = kit.open_index(store)
    index.insert([kit.doc(0)])
    index.close()
    seconds = 10 + opens / 40 + cli_runs * 1.5  # the writer outlasts the opens and the stats runs
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(store), str(seconds), str(ROOT)],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    time.sleep(2)
    alarms = done = stats_alarms = 0
    started = time.monotonic()
    while done < opens and time.monotonic() - started < seconds / 2:
        try:
            SQLiteStore(store, create=False).close()
            read_store_info(store)
        except StoreError as exc:
            alarms += "is damaged" in str(exc)
        done += 1
    runs = 0
    for _ in range(cli_runs):
        if writer.poll() is not None:
            break
        runs += 1
        run = subprocess.run(
            [sys.executable, "-m", "langchain_pathrag.cli", "stats", "--store", str(store)],
            capture_output=True,
            text=True,
            env=ENV,
            check=False,
        )
        stats_alarms += "is damaged" in run.stderr
    out, _ = writer.communicate()
    inserts, refused, failed = (int(v) for v in out.split())
    return {
        "probe": "opens while another process inserts one document at a time (lock_timeout=0)",
        "trials": f"{done:,} library opens, {runs} stats runs, {inserts:,} inserts",
        "bad": f"{alarms + stats_alarms} false alarms; {refused} writes refused; {failed} failed",
    }


# -- garbled and edited index files ----------------------------------------------------------------

BUILD = """
import sys, random
from pathlib import Path
from pathrag import HashingEmbedder
from pathrag.sqlite import SQLiteStore, SQLiteVectorIndex, ann
from pathrag.vectors.base import VectorItem
ann.SEGMENT_LIMIT = int(sys.argv[3])
rng = random.Random(0)
words = [f"w{i}" for i in range(5000)]
index = SQLiteVectorIndex(SQLiteStore(sys.argv[1]), "entities", HashingEmbedder(384))
items = [VectorItem(f"e{i}", " ".join(rng.choices(words, k=6)), {}) for i in range(int(sys.argv[2]))]
for start in range(0, len(items), 10_000):
    index.upsert(items[start:start + 10_000])
index.catch_up()
print(len(index._index.segments))
"""

EXACT = """
import numpy as np
from pathrag.sqlite.vectors import _units

def exact(index, text, k):
    # the k best scores by exact search over the rows (an index told to search exactly still opens saved
    # files); scores, not ids: equal scores may come in any order
    query = _units([index.embedder.embed([text])[0]])[0]
    rows = index.store.read("SELECT id, vector FROM vectors WHERE space = ?", (index.space,))
    matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<f4").reshape(len(rows), -1)
    return [round(float(score), 5) for score in sorted(matrix @ query, reverse=True)[:k]]
"""

SEARCH = (
    EXACT
    + """
import json, random, sys
from pathlib import Path
from pathrag import HashingEmbedder
from pathrag.sqlite import SQLiteStore, SQLiteVectorIndex
rng = random.Random(1)
words = [f"w{i}" for i in range(5000)]
asked = [" ".join(rng.choices(words, k=3)) for _ in range(40)]
store = SQLiteStore(sys.argv[1])
ann = SQLiteVectorIndex(store, "entities", HashingEmbedder(384))
ann._index.fold_soon = lambda: None  # nothing rebuilt meanwhile: every search goes through what it opened
got = [[round(h.score, 5) for h in ann.query(q, 10)] for q in asked]
want = [exact(ann, q, 10) for q in asked]
print(json.dumps({"got": got, "want": want, "refused": ann._index.refused >= 0}))
"""
)


def _copy(base: Path, target: Path) -> Path:
    shutil.copytree(base, target, symlinks=True)
    return target


def _limited() -> None:
    """A search process's memory bound: the old code read ``/dev/zero`` as a manifest until memory ran out."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


def _searched(trial: Path, control: dict[str, Any] | None = None, timeout: float = 900) -> dict[str, Any]:
    """40 searches of ``trial`` in a process of their own: ``wrong``, those whose top 10 is neither exact
    search's nor that of the undamaged files (``control``: what the graph walk misses by itself)."""
    try:
        run = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(SEARCH), str(trial)],
            capture_output=True,
            text=True,
            env=ENV,
            timeout=timeout,
            check=False,
            preexec_fn=_limited,
        )
    except subprocess.TimeoutExpired:
        return {"crashed": False, "hung": True}
    if run.returncode != 0:
        return {"crashed": True, "code": run.returncode, "stderr": run.stderr[-300:]}
    found = json.loads(run.stdout.splitlines()[-1])
    same = control["got"] if control else found["want"]
    wrong = sum(g != w and g != c for g, w, c in zip(found["got"], found["want"], same, strict=True))
    return {"crashed": False, "wrong": wrong, **found}


def _saved(base: Path) -> tuple[Path, list[Path]]:
    manifest = max(base.glob("pathrag-entities.*.usearch.json"), key=lambda p: int(p.name.split(".")[1]))
    return manifest, sorted(base.glob("pathrag-entities.*.*.usearch"))


def probe_garble(work: Path, vectors: int, trials: int) -> dict[str, Any]:
    base = work / "garble-base"
    built = _python(BUILD, str(base), str(vectors), str(1 << 17), timeout=3600)
    assert built.returncode == 0, built.stderr
    _, segments = _saved(base)
    data = segments[0].read_bytes()
    graph = vectors * 384 + 64  # usearch saves the int8 vectors first, then the graph's links
    control = _searched(base)  # the undamaged files: what the graph walk misses by itself
    rng = random.Random(39)
    crashes = wrong = refused = 0
    for n in range(trials):  # one process per garble: a crash ends only its own trial
        trial = _copy(base, work / f"garble-{n}")
        at = rng.randrange(graph, len(data) - 8)
        garbled = bytearray(data)
        garbled[at : at + 8] = rng.randbytes(8)
        (trial / segments[0].name).write_bytes(garbled)
        found = _searched(trial, control)
        crashes += found["crashed"]
        wrong += found.get("wrong", 0) > 0
        refused += found.get("refused", 0)
        shutil.rmtree(trial)
    return {
        "probe": f"8 garbled bytes at a random place of the graph of a {len(data) / 1e6:.0f} MB segment "
        f"({vectors:,} vectors of 384 dimensions), 40 searches each",
        "trials": trials,
        "bad": f"{crashes} crashed, {wrong} answered wrongly; {refused} refused and searched from the rows "
        f"(the undamaged files: {control['wrong']} of 40 top-10s other than exact search's)",
    }


def _rewrite(manifest: Path, change: Any) -> None:
    import zlib

    content = json.loads(manifest.read_text())
    if not isinstance(content, dict) or "crc32" not in content:  # an earlier version's manifest
        manifest.write_text(json.dumps(change(content)))
        return
    body = change({k: v for k, v in content.items() if k != "crc32"})
    body["crc32"] = zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    manifest.write_text(json.dumps(body))


def _edits(base: Path, vectors: int) -> dict[str, Any]:
    """Each edit of issue 39 rows 3 and 6, as a function of a copy of the store (``base``: in two segments of
    ``vectors // 2`` vectors)."""
    manifest, segments = _saved(base)

    def garbled(trial: Path) -> None:
        path = trial / segments[0].name
        data = bytearray(path.read_bytes())
        rng = random.Random(3)
        for _ in range(2000):  # int8 components: usearch saves the vectors first, then the graph
            at = rng.randrange(64, 64 + vectors // 2 * 384)
            data[at] = rng.randrange(256)
        path.write_bytes(data)

    def scale(trial: Path) -> None:
        _rewrite(trial / manifest.name, lambda c: {**c, "scale": c["scale"] / 20} if isinstance(c, dict) else c)

    def twice(trial: Path) -> None:  # the first segment in place of the second, of the same size
        def change(content: Any) -> Any:
            listed = content["segments"] if isinstance(content, dict) else content
            twice = [listed[0], listed[0], *listed[2:]]
            return {**content, "segments": twice} if isinstance(content, dict) else twice

        _rewrite(trial / manifest.name, change)

    def fifo(name: str) -> Any:
        def change(trial: Path) -> None:
            (trial / name).unlink()
            os.mkfifo(trial / name)

        return change

    def zero(trial: Path) -> None:
        (trial / manifest.name).unlink()
        (trial / manifest.name).symlink_to("/dev/zero")

    return {
        "2,000 garbled int8 components": garbled,
        "the scale divided by 20": scale,
        "a segment listed twice": twice,
        "a FIFO as the manifest": fifo(manifest.name),
        "a FIFO as a segment": fifo(segments[0].name),
        "/dev/zero as the manifest": zero,
    }


def probe_edits(work: Path, vectors: int) -> list[dict[str, Any]]:
    base = work / "edits-base"
    built = _python(BUILD, str(base), str(vectors), str(vectors // 2), timeout=3600)  # two equal segments
    assert built.returncode == 0, built.stderr
    rows = []
    control = _searched(base)
    for name, edit in _edits(base, vectors).items():
        trial = _copy(base, work / "edit")
        edit(trial)
        found = _searched(trial, control, timeout=120)
        outcome = (
            "hung"
            if found.get("hung")
            else "crashed"
            if found["crashed"]
            else f"{found['wrong']} of 40 wrong, {'refused and rebuilt' if found['refused'] else 'used'}"
        )
        rows.append({"probe": f"{name}: 40 searches", "trials": 1, "bad": outcome})
        shutil.rmtree(trial)
    return rows


# -- concurrent folds ------------------------------------------------------------------------------

FOLDER = (
    EXACT
    + """
import random, sys, time
from pathlib import Path
from pathrag import HashingEmbedder
from pathrag.sqlite import SQLiteStore, SQLiteVectorIndex
from pathrag.sqlite import ann
from pathrag.vectors.base import VectorItem
ann.SEGMENT_LIMIT = 1 << 12
seed, seconds = int(sys.argv[2]), float(sys.argv[3])
rng = random.Random(seed)
words = [f"w{i}" for i in range(3000)]
store = SQLiteStore(sys.argv[1])
index = SQLiteVectorIndex(store, "entities", HashingEmbedder(64), exact_limit=64 * 2000)
failures = differ = searches = 0
deadline = time.monotonic() + seconds
n = 0
while time.monotonic() < deadline:
    ids = [f"p{seed}-{n}-{i}" for i in range(500)]
    index.upsert([VectorItem(i, " ".join(rng.choices(words, k=5)), {}) for i in ids])
    if n % 3 == 2:
        index.delete(ids[:200])
    index.catch_up()
    for _ in range(5):
        q = " ".join(rng.choices(words, k=3))
        try:
            with store.snapshot():
                got, want = [round(h.score, 5) for h in index.query(q, 10)], exact(index, q, 10)
            differ += got != want
        except Exception as exc:
            failures += 1
            print(repr(exc), file=sys.stderr)
        searches += 1
    n += 1
print(searches, failures, differ)
"""
)


def probe_folds(work: Path, seconds: float) -> dict[str, Any]:
    store = work / "folds"
    store.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(FOLDER), str(store), str(seed), str(seconds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        for seed in (1, 2)
    ]
    totals = [0, 0, 0]
    crashed = 0
    for proc in procs:
        out, err = proc.communicate()
        if proc.returncode != 0:
            crashed += 1
            print(err[-500:], file=sys.stderr)
            continue
        for n, value in enumerate(out.split()):
            totals[n] += int(value)
    return {
        "probe": f"two processes writing, folding and searching one space for {seconds:.0f} s",
        "trials": f"{totals[0]:,} searches",
        "bad": f"{totals[1]} failed, {totals[2]} differed from exact search; {crashed} processes crashed",
    }


# -- a reader's first query after a big commit -----------------------------------------------------------

COMMIT = """
import random, sys
from pathrag import HashingEmbedder
from pathrag.sqlite import SQLiteStore, SQLiteVectorIndex
from pathrag.vectors.base import VectorItem
rng = random.Random(int(sys.argv[3]))
words = [f"w{i}" for i in range(5000)]
index = SQLiteVectorIndex(SQLiteStore(sys.argv[1]), "entities", HashingEmbedder(384))
first, count = int(sys.argv[4]), int(sys.argv[2])
index.upsert([VectorItem(f"e{i}", " ".join(rng.choices(words, k=6)), {}) for i in range(first, first + count)])
if sys.argv[5] == "fold":
    index.catch_up()
"""

FIRST_QUERY = """
import sys, time
from pathrag import HashingEmbedder
from pathrag.sqlite import SQLiteStore, SQLiteVectorIndex
index = SQLiteVectorIndex(SQLiteStore(sys.argv[1]), "entities", HashingEmbedder(384))
started = time.monotonic()
index.query("w1 w2 w3", 10)
first = time.monotonic() - started
started = time.monotonic()
index.query("w4 w5 w6", 10)
print(round(first, 2), round(time.monotonic() - started, 3))
"""


def probe_first_query(work: Path, vectors: int) -> dict[str, Any]:
    store = work / "first"
    for args in ((str(50_000), "1", "0", "fold"), (str(vectors), "2", "50000", "no")):  # saved, then a big commit
        made = _python(COMMIT, str(store), *args, timeout=3600)
        assert made.returncode == 0, made.stderr[-2000:]
    started = time.monotonic()
    run = _python(FIRST_QUERY, str(store), timeout=3600)
    assert run.returncode == 0, run.stderr[-2000:]
    first, second = run.stdout.split()
    return {
        "probe": f"a reader's first query after a commit of {vectors:,} vectors (384 dimensions) beside a saved index",
        "trials": 1,
        "bad": f"first query {first} s, the next {second} s; the process {time.monotonic() - started:.1f} s",
    }


# -- the lock file -----------------------------------------------------------------------------------


def probe_symlink(work: Path) -> dict[str, Any]:
    from tests import reliability_kit as kit

    store = work / "shared"
    index = kit.open_index(store)
    index.insert([kit.doc(0)])
    index.close()
    victim = work / "authorized_keys"
    victim.write_text("ssh-ed25519 AAAA someone@host\n")
    (store / "pathrag.lock").unlink()
    (store / "pathrag.lock").symlink_to(victim)
    index = kit.open_index(store)
    try:
        index.insert([kit.doc(2)])
        outcome = "insert went through"
    except Exception as exc:
        outcome = f"refused: {type(exc).__name__}"
    finally:
        index.close()
    intact = victim.read_text() == "ssh-ed25519 AAAA someone@host\n"
    return {
        "probe": "pathrag.lock a symbolic link to another file, then an insert",
        "trials": 1,
        "bad": f"{outcome}; the file {'left as it was' if intact else 'OVERWRITTEN'}",
    }


# -- hops ----------------------------------------------------------------------------------------------


def probe_hops(work: Path) -> dict[str, Any]:
    demo = work / "demo"
    subprocess.run(
        [sys.executable, "-m", "langchain_pathrag.cli", "demo", "--store", str(demo), "--no-prompts"],
        capture_output=True,
        env=ENV,
        check=True,
    )
    command = [sys.executable, "-m", "langchain_pathrag.cli", "paths", QUESTION, "--store", str(demo), "--num-seeds"]
    slowest, biggest, failed, runs = (0.0, ""), (0, ""), 0, 0
    for theta in ("0.05", "0.01", "0.001", "0.000001", "0"):
        for hops in ("3", "8", "12", "32", "null"):
            for alpha in ("0.8", "1"):
                if hops == "null" and theta == "0":
                    continue  # refused: unbounded by design
                args = ["40", "--theta", theta, "--param", f"alpha={alpha}", "--param", f"max_hops={hops}"]
                started = time.monotonic()
                child = subprocess.Popen(command + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
                _, status, usage = os.wait4(child.pid, 0)
                seconds = time.monotonic() - started
                label = f"θ={theta} max_hops={hops} α={alpha}"
                failed += os.waitstatus_to_exitcode(status) != 0
                slowest = max(slowest, (seconds, label))
                biggest = max(biggest, (usage.ru_maxrss // 1024, label))
                runs += 1
    return {
        "probe": "pathrag paths on the demo store, --num-seeds 40, every θ / max_hops / α (the whole command)",
        "trials": runs,
        "bad": f"slowest {slowest[0]:.2f} s ({slowest[1]}); most memory {biggest[0]} MB ({biggest[1]}); "
        f"{failed} failed",
    }


# -- one big insert ---------------------------------------------------------------------------------

INSERT = """
import asyncio, sys, threading, time
from pathlib import Path
from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex

def rss():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS"))

peak = [0]
def sample():
    while True:
        peak[0] = max(peak[0], rss())
        time.sleep(0.2)
threading.Thread(target=sample, daemon=True).start()

class Model:
    name = "waiting"
    async def acomplete(self, prompt):
        await asyncio.sleep(0.0001)  # as a model over the network does: the call waits
        return "<|COMPLETE|>"
    def complete(self, prompt):
        return asyncio.run(self.acomplete(prompt))

n = int(sys.argv[2])
index = PathRAGIndex(Path(sys.argv[1]), llm=Model(), embedder=HashingEmbedder(64), config=IndexConfig())
started = time.monotonic()
summary = index.insert(Document(id=f"d{i}", text=f"T{i} is tiny document number {i}.") for i in range(n))
index.close()
print(summary.documents, round(time.monotonic() - started, 1), peak[0])
"""


def probe_insert(work: Path, documents: int) -> dict[str, Any]:
    run = _python(INSERT, str(work / "insert"), str(documents), timeout=24 * 3600)
    assert run.returncode == 0, run.stderr[-2000:]
    done, seconds, peak = run.stdout.split()
    return {
        "probe": f"one insert of {documents:,} tiny documents (a model that waits 0.1 ms), HashingEmbedder(64)",
        "trials": f"{int(done):,} documents in {float(seconds):.0f} s",
        "bad": f"peak {int(peak):,} MB",
    }


# ------------------------------------------------------------------------------------------------------

PROBES = ("wal", "garble", "edits", "folds", "firstquery", "symlink", "hops")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", default=",".join(PROBES), help=f"among {', '.join(PROBES)}, insert")
    parser.add_argument("--opens", type=int, default=1000, help="library opens under writes (default 1,000)")
    parser.add_argument("--stats", type=int, default=40, help="pathrag stats runs under writes (default 40)")
    parser.add_argument("--vectors", type=int, default=70_000, help="vectors of the garbled space (default 70,000)")
    parser.add_argument("--trials", type=int, default=30, help="random 8-byte garbles (default 30)")
    parser.add_argument("--seconds", type=float, default=60.0, help="concurrent folds (default 60)")
    parser.add_argument("--documents", type=int, default=1_000_000, help="documents of the insert probe")
    args = parser.parse_args()
    wanted = args.probes.split(",")
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in wanted:
            print(f"-- {name}", flush=True)
            if name == "wal":
                rows.append(probe_wal(work, args.opens, args.stats))
            elif name == "garble":
                rows.append(probe_garble(work, args.vectors, args.trials))
            elif name == "edits":
                rows.extend(probe_edits(work, args.vectors))
            elif name == "folds":
                rows.append(probe_folds(work, args.seconds))
            elif name == "firstquery":
                rows.append(probe_first_query(work, 100_000))
            elif name == "symlink":
                rows.append(probe_symlink(work))
            elif name == "hops":
                rows.append(probe_hops(work))
            elif name == "insert":
                rows.append(probe_insert(work, args.documents))
            print(f"   {rows[-1]}", flush=True)
    print("\n| probe | trials | outcome |\n|---|---|---|")
    for row in rows:
        print(f"| {row['probe']} | {row['trials']} | {row['bad']} |")
    print(
        f"\n{platform.machine()}, {platform.system()}, Python {platform.python_version()}, {os.cpu_count()} cores, "
        f"total {time.monotonic() - started:.0f} s"
    )


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
