"""The reliability checks of issue 12, shared by ``tests/unit/test_reliability.py`` (short form) and
``benchmarks/reliability.py`` (long form). Each check returns its figures; the callers assert or print them.

- :func:`run_load`: reader threads and asyncio tasks retrieve while one writer inserts and deletes.
- :func:`run_kill_trials`: a writer process killed with SIGKILL at random moments, then reopened and re-run.
- :func:`run_corruption`: each kind of file of a store directory truncated or garbled.
- :func:`run_two_writers`: two writer processes on one store, refused or waiting.

Writers that get killed run in real processes started by a ``forkserver`` (it imports pathrag once, so a
trial costs a fork, not an interpreter start).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import shutil
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex, RetrievalResult
from pathrag.llm.calls import cache_key
from pathrag.sqlite import LOCK_FILE, STORE_FILE, StoreError, StoreLocked

from .fakes import ScriptedLLM

QUERIES = ("N1 and N5", "How is N3 connected to N12?", "HUB", "N7 N8 N9")


def doc(i: int, version: int = 0) -> Document:
    """A small document: an entity, its link to the hub, and a link to its neighbour (two chunks)."""
    tag = f" (v{version})" if version else ""
    return Document(
        id=f"d{i}",
        chunks=(
            f"ENTITY N{i} | concept | Node {i}{tag}.\nLINK N{i} | HUB | n{i} joins the hub{tag}. | k | 2",
            f"ENTITY N{i + 1} | concept | Node {i + 1}.\nLINK N{i} | N{i + 1} | n{i} precedes n{i + 1}{tag}. | order | 1",  # noqa: E501
        ),
    )


def open_index(directory: Path | None, llm: ScriptedLLM | None = None, dims: int = 64, **config: Any) -> PathRAGIndex:
    config.setdefault("max_concurrency", 2)
    return PathRAGIndex(
        directory, llm=llm or ScriptedLLM(), embedder=HashingEmbedder(dims), config=IndexConfig(**config)
    )


def answer(result: RetrievalResult) -> tuple:
    """What a user gets: every item's kind, id, text and score (rounded against float noise)."""
    return tuple((item.kind, item.id, item.text, round(item.score, 9)) for item in result.items)


def contents(index: PathRAGIndex) -> dict[str, Any]:
    """Everything a commit decides: documents, live chunks, graph and vectors."""
    return {
        "documents": {k: v.hash for k, v in sorted(index.documents.items())},
        "live chunks": sorted(cid for cid, c in index.chunks.items() if c.refs),
        "entities": sorted(e.model_dump_json() for e in index.graph.iter_entities()),
        "relations": sorted(r.model_dump_json() for r in index.graph.iter_relations()),
        "vectors": {
            name: sorted((i, v.get(i).text) for i in v.ids())  # type: ignore[union-attr]
            for name, v in index.vector_indexes.items()
        },
    }


def _forkserver() -> multiprocessing.context.BaseContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    return ctx


# -- load ---------------------------------------------------------------------------------------------


@dataclass
class LoadReport:
    seconds: float
    readers: int
    tasks: int
    queries: int = 0
    writes: int = 0
    errors: int = 0
    inconsistent: int = 0  # results equal to no committed state near the read
    first_error: str = ""

    def row(self) -> dict[str, Any]:
        return {
            "check": f"load: {self.readers} threads + {self.tasks} asyncio tasks + 1 writer, {self.seconds:g} s",
            "queries": self.queries,
            "writes": self.writes,
            "errors": f"{self.errors} raised + {self.inconsistent} mixed states" if self.inconsistent else self.errors,
            "trials": "-",
            "losses": "-",
        }


class _Readers:
    """Threads and asyncio tasks retrieving until stopped, each read recorded with the commits seen around it."""

    def __init__(self, index: PathRAGIndex, states: list[dict[str, tuple]], readers: int, tasks: int) -> None:
        self.index = index
        self.states = states  # states[k]: the answers after k commits of the writer
        self.reads: list[tuple[int, int, str, tuple]] = []
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.tasks = tasks
        self.threads = [threading.Thread(target=self.reader, args=(n,)) for n in range(readers)]
        self.threads.append(threading.Thread(target=self.event_loop))

    def record(self, lo: int, query: str, found: tuple) -> None:
        self.reads.append((lo, len(self.states) - 1, query, found))

    def reader(self, n: int) -> None:
        queries = QUERIES[n % len(QUERIES) :] + QUERIES[: n % len(QUERIES)]
        while not self.stop.is_set():
            for q in queries:
                lo = len(self.states) - 1
                try:
                    found = answer(self.index.retrieve(q, keyword_llm=False))
                except BaseException as exc:  # every failure is a failed user request
                    self.errors.append(exc)
                    return
                self.record(lo, q, found)

    async def task(self, n: int) -> None:
        q = QUERIES[n % len(QUERIES)]
        while not self.stop.is_set():
            lo = len(self.states) - 1
            found = answer(await self.index.aretrieve(q, keyword_llm=False))
            self.record(lo, q, found)
            await asyncio.sleep(0)

    def event_loop(self) -> None:
        async def main() -> None:
            results = await asyncio.gather(*(self.task(n) for n in range(self.tasks)), return_exceptions=True)
            self.errors.extend(r for r in results if isinstance(r, BaseException))

        asyncio.run(main())

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def join(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()

    def inconsistent(self) -> int:
        """Reads whose answer is none of the states committed while they ran (or the one right after)."""
        states = self.states
        return sum(
            all(states[k][q] != found for k in range(lo, min(hi + 2, len(states)))) for lo, hi, q, found in self.reads
        )


def _write_step(index: PathRAGIndex, present: set[int], rng: random.Random) -> None:
    """One commit of the load's writer: delete a document, or insert one (new, or a new version)."""
    if len(present) > 3 and (rng.random() < 0.5 or len(present) > 12):
        gone = rng.choice(sorted(present))
        index.delete([f"d{gone}"])
        present.discard(gone)
    else:
        new = rng.choice([i for i in range(24) if i not in present])
        index.insert([doc(new, version=rng.randrange(3))])
        present.add(new)


def run_load(directory: Path | None, seconds: float, *, readers: int = 4, tasks: int = 4, seed: int = 0) -> LoadReport:
    """Readers (threads and asyncio tasks) retrieve while one writer inserts and deletes documents.

    After each commit the writer records what every query answers in that state; a read started while
    ``lo`` commits were recorded and finished while ``hi`` were must equal the answer of a state in
    ``lo .. hi + 1`` (the next commit may land before it is recorded). ``directory=None``: in memory.
    """
    rng = random.Random(seed)
    report = LoadReport(seconds, readers, tasks)
    index = open_index(directory)
    present = set(range(0, 16, 2))
    index.insert([doc(i) for i in sorted(present)])

    def answers() -> dict[str, tuple]:
        return {q: answer(index.retrieve(q, keyword_llm=False)) for q in QUERIES}

    load = _Readers(index, [answers()], readers, tasks)
    load.start()
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            _write_step(index, present, rng)
            load.states.append(answers())
            report.writes += 1
    except BaseException as exc:
        load.errors.append(exc)
    finally:
        load.join()
        index.close()
    report.queries = len(load.reads)
    report.errors = len(load.errors)
    report.first_error = repr(load.errors[0]) if load.errors else ""
    report.inconsistent = load.inconsistent()
    return report


# -- kill -9 of a writer ----------------------------------------------------------------------------

PLAN: list[tuple[str, Any]] = [
    ("insert", [doc(i) for i in range(0, 8, 2)]),
    ("insert", [doc(i) for i in range(8, 16, 2)]),
    ("delete", ["d2", "d10"]),
    ("insert", [doc(4, version=1), doc(16)]),
]
"""The writer's work: four commits (two inserts, a delete, an insert that changes a document)."""


def run_plan(directory: Path, llm: ScriptedLLM, after_step: Callable[[PathRAGIndex], None] | None = None) -> None:
    index = open_index(directory, llm)  # lock_timeout 0: a lock left behind would fail the re-run
    try:
        for op, arg in PLAN:
            index.insert(arg) if op == "insert" else index.delete(arg)
            if after_step is not None:
                after_step(index)
    finally:
        index.close()


def _plan_worker(directory: str, delay: float) -> None:
    run_plan(Path(directory), ScriptedLLM(delay=delay))


def _state(directory: Path) -> tuple[list[str], dict[str, Any]]:
    index = open_index(directory)
    try:
        return index.check(), contents(index)
    finally:
        index.close()


def _cached(directory: Path) -> set[str]:
    if not (directory / STORE_FILE).exists():
        return set()
    conn = sqlite3.connect(directory / STORE_FILE)
    try:
        return {key for (key,) in conn.execute("SELECT key FROM llm_cache")}
    finally:
        conn.close()


@dataclass
class KillReport:
    trials: int = 0
    killed: int = 0
    finished: int = 0  # the writer finished before the kill landed
    states_seen: dict[int, int] = field(default_factory=dict)  # commits kept -> trials
    losses: int = 0  # a reopened store that failed check() or equals no committed state
    rerun_wrong: int = 0  # a re-run that did not reach the uninterrupted run's store
    repaid: int = 0  # LLM calls of re-runs beyond the chunks left unfinished
    unpaid_calls: int = 0  # LLM calls the re-runs needed (chunks unfinished at the kill)
    problems: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return {
            "check": "kill -9 of a writer process at random moments, reopen, re-run",
            "queries": "-",
            "writes": f"{len(PLAN)} commits per run",
            "errors": self.rerun_wrong + self.repaid,
            "trials": self.trials,
            "losses": self.losses,
        }


def run_kill_trials(workdir: Path, trials: int, *, seed: int = 0, delay: float = 0.03) -> KillReport:
    """Kill a writer process (running :data:`PLAN`) with SIGKILL at a random moment, ``trials`` times.

    Each time the reopened store must pass ``check()`` and equal the state after some number of the
    plan's commits; running the plan again must give the store an uninterrupted run gives, paying the
    LLM only for the chunks whose extraction the killed writer had not saved.
    """
    rng = random.Random(seed)
    ctx = _forkserver()
    clean_llm = ScriptedLLM()
    committed: list[dict[str, Any]] = [contents(open_index(workdir / "empty"))]
    run_plan(workdir / "clean", clean_llm, after_step=lambda index: committed.append(contents(index)))
    needed = {cache_key(clean_llm.name, p): p for p in clean_llm.prompts}
    for name in ("warm", "timed"):  # the first start also starts the fork server: not timed
        started = time.monotonic()
        proc = ctx.Process(target=_plan_worker, args=(str(workdir / name), delay))
        proc.start()
        proc.join()
    span = time.monotonic() - started  # an uninterrupted writer process, start to exit
    report = KillReport()
    for n in range(trials):
        trial = workdir / f"trial-{n}"
        proc = ctx.Process(target=_plan_worker, args=(str(trial), delay))
        proc.start()
        time.sleep(rng.uniform(0.0, span))
        proc.kill()  # SIGKILL (a no-op if the writer already exited)
        proc.join()
        report.trials += 1
        if proc.exitcode == -signal.SIGKILL:
            report.killed += 1
        else:
            report.finished += 1
        problems, found = _state(trial)
        if problems or found not in committed:
            report.losses += 1
            report.problems.append(f"trial {n}: {problems or 'a state no commit left'}")
        else:
            kept = committed.index(found)
            report.states_seen[kept] = report.states_seen.get(kept, 0) + 1
        unpaid = set(needed) - _cached(trial)
        llm = ScriptedLLM()
        try:
            run_plan(trial, llm)
        except StoreError as exc:  # e.g. a lock the dead writer left behind
            report.rerun_wrong += 1
            report.problems.append(f"trial {n}: re-run failed: {exc}")
            continue
        if _state(trial) != ([], committed[-1]):
            report.rerun_wrong += 1
            report.problems.append(f"trial {n}: the re-run's store differs from an uninterrupted run's")
        paid = sorted(cache_key(llm.name, p) for p in llm.prompts)
        report.unpaid_calls += len(unpaid)
        if paid != sorted(unpaid):
            report.repaid += 1
            report.problems.append(f"trial {n}: re-run paid {len(paid)} calls, {len(unpaid)} were unfinished")
        shutil.rmtree(trial)
    return report


# -- damaged files ----------------------------------------------------------------------------------


@dataclass
class Damage:
    file: str
    damage: str  # "truncated" or "garbled"
    outcome: str  # "error" (one line naming the file), "recovered" (nothing lost), or what went wrong
    message: str
    directory: Path


WAL_FRAME_DAMAGE = ("frame garbled", "byte flipped", "cut mid-frame")
"""Damage inside a WAL's frames (past its header): SQLite drops every frame from the first bad one on."""


def damage_file(path: Path, damage: str) -> None:
    data = bytearray(path.read_bytes())
    frame = 24 + int.from_bytes(data[8:12], "big") if damage in WAL_FRAME_DAMAGE else 0
    middle = 32 + ((len(data) - 32) // frame // 2) * frame if frame else 0  # the middle frame's start
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "frame garbled":  # 64 bytes of a page in the middle of the WAL, as a bad sector would
        data[middle + 1000 : middle + 1064] = b"\x00garbled" * 8
        path.write_bytes(data)
    elif damage == "byte flipped":  # one bit of a page in the middle of the WAL
        data[middle + 5000] ^= 1
        path.write_bytes(data)
    elif damage == "cut mid-frame":  # a WAL cut inside its middle frame
        path.write_bytes(data[: middle + frame // 3])
    else:  # garbled: the first bytes overwritten, as a bad sector or a stray write would
        path.write_bytes(b"\x00garbled" * 16 + data[128:])


def _library_open(directory: Path, dims: int = 64) -> tuple[list[str], dict[str, Any]]:
    index = open_index(directory, dims=dims)
    try:
        index.retrieve(QUERIES[0], keyword_llm=False)
        return index.check(), contents(index)
    finally:
        index.close()


ADVICE = ("restore", "rebuild", "move", "index the documents", "upgrade")  # what the user is told to do


def classify(
    directory: Path, path: Path, expected: dict[str, Any], dims: int = 64, earlier: list[dict[str, Any]] = ()
) -> tuple[str, str]:  # type: ignore[assignment]
    """Open the damaged store from Python: a one-line error naming ``path``, everything intact, or (a WAL
    cut short) the state of an earlier commit, as the journal allows."""
    try:
        problems, found = _library_open(directory, dims)
    except (StoreError, ValueError, OSError) as exc:
        message = str(exc)
        if "\n" in message or str(path) not in message or not any(word in message for word in ADVICE):
            return "unclear error", message
        return "error", message
    except Exception as exc:  # noqa: BLE001 - anything else would be a traceback for the user
        return "traceback", f"{type(exc).__name__}: {exc}"
    if not problems and found in earlier:
        return "rolled back", f"the state after commit {earlier.index(found)} of {len(earlier)}"
    if problems or found != expected:
        return "silent loss", "; ".join(problems) or "opened without error but the contents differ"
    return "recovered", ""


def sqlite_store_with_wal(directory: Path) -> Path:
    """A store whose commits are (partly) still in ``pathrag.sqlite-wal``, as a killed writer leaves it."""
    ctx = _forkserver()
    proc = ctx.Process(target=_wal_worker, args=(str(directory),))
    proc.start()
    proc.join()
    return directory


WAL_COMMITS = ([doc(i) for i in range(0, 8, 2)], [doc(i) for i in range(8, 12, 2)])


def _wal_worker(directory: str) -> None:
    index = open_index(Path(directory))
    for docs in WAL_COMMITS:
        index.insert(docs)
    os.kill(os.getpid(), signal.SIGKILL)  # no close: the WAL is not folded into the file


LEGACY_DIMS = 256  # tests/fixtures/legacy_json_store was built with HashingEmbedder(256)


def run_corruption(workdir: Path, legacy_fixture: Path) -> list[Damage]:
    """Truncate or garble each kind of file a store directory can hold, and open the store."""
    results: list[Damage] = []
    closed = workdir / "closed-base"  # a store closed normally: one file (and the lock)
    index = open_index(closed)
    index.insert([doc(i) for i in range(0, 12, 2)])
    index.close()
    killed = sqlite_store_with_wal(workdir / "killed-base")  # commits still in the WAL
    index = open_index(workdir / "earlier")
    earlier = [contents(index)]
    for docs in WAL_COMMITS[:-1]:
        index.insert(docs)
        earlier.append(contents(index))
    index.close()
    for label, base in (("closed store", closed), ("killed writer", killed)):
        expected = _library_open(_copy(base, workdir / f"{label}-expected"))[1]
        for name in [p.name for p in sorted(base.iterdir()) if p.is_file()]:
            frames = WAL_FRAME_DAMAGE if name.endswith("-wal") else ()
            for damage in ("truncated", "garbled", *frames):
                trial = _copy(base, workdir / f"{label}-{name}-{damage}")
                damage_file(trial / name, damage)
                outcome, message = classify(trial, trial / name, expected, earlier=earlier)
                results.append(Damage(f"{name} ({label})", damage, outcome, message, trial))
    legacy_expected = _library_open(_copy(legacy_fixture, workdir / "legacy-expected"), LEGACY_DIMS)[1]
    for path in sorted(legacy_fixture.iterdir()):
        for damage in ("truncated", "garbled"):
            trial = _copy(legacy_fixture, workdir / f"legacy-{path.name}-{damage}")
            damage_file(trial / path.name, damage)
            outcome, message = classify(trial, trial / path.name, legacy_expected, LEGACY_DIMS)
            results.append(Damage(f"{path.name} (JSON store)", damage, outcome, message, trial))
    return results


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


# -- two writer processes -----------------------------------------------------------------------------


def _insert_worker(directory: str, first: int, count: int, lock_timeout: float, delay: float) -> None:
    index = open_index(Path(directory), ScriptedLLM(delay=delay), lock_timeout=lock_timeout)
    try:
        for i in range(first, first + count):  # one document per commit: many chances to interleave
            index.insert([doc(i)])
    except StoreLocked as exc:
        print(f"refused: {exc}", flush=True)
        os._exit(3)
    os._exit(0)


@dataclass
class TwoWriterReport:
    documents: int = 0
    lost: int = 0
    refused_with_pid: bool = False
    refusal: str = ""
    exit_codes: list[int | None] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return {
            "check": "two writer processes on one store (refused at once; then waiting)",
            "queries": "-",
            "writes": f"{self.documents} one-document commits",
            "errors": 0 if self.refused_with_pid else 1,
            "trials": 1,
            "losses": self.lost,
        }


def run_two_writers(workdir: Path, count: int, *, delay: float = 0.01) -> TwoWriterReport:
    """Process A writes ``count`` documents; process B, started while A holds the lock, is refused naming
    A's pid (``lock_timeout=0``); then B runs again waiting for the lock, alongside a third writer C.
    Afterwards the store must equal a clean store of all their documents."""
    ctx = _forkserver()
    store = workdir / "shared"
    report = TwoWriterReport()
    a = ctx.Process(target=_insert_worker, args=(str(store), 0, count, 60.0, delay))
    a.start()
    lock = store / LOCK_FILE
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (lock.exists() and lock.read_text().strip() == str(a.pid)):
        time.sleep(0.01)
    index = open_index(store)
    try:
        index.insert([doc(1000)])
    except StoreLocked as exc:
        report.refusal = str(exc)
        report.refused_with_pid = f"process {a.pid}" in report.refusal and "\n" not in report.refusal
    finally:
        index.close()
    b = ctx.Process(target=_insert_worker, args=(str(store), 1000, count, 120.0, delay))
    c = ctx.Process(target=_insert_worker, args=(str(store), 2000, count, 120.0, delay))
    for p in (b, c):
        p.start()
    for p in (a, b, c):
        p.join()
    report.exit_codes = [p.exitcode for p in (a, b, c)]
    wanted = [*range(count), *range(1000, 1000 + count), *range(2000, 2000 + count)]
    clean = open_index(workdir / "clean")
    clean.insert([doc(i) for i in wanted])
    shared = open_index(store)
    report.documents = len(shared.documents)
    report.lost = sum(f"d{i}" not in shared.documents for i in wanted)
    if contents(shared) != contents(clean) and not report.lost:
        report.lost = -1  # every document listed, but the graph or vectors differ
    shared.close()
    clean.close()
    return report
