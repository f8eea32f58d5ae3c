"""One writer per store directory across processes, readers during writes, and the document lifecycle
(issues 12 and 16) on the embedded store. Figures are printed, never timed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
from pathrag.store import StoreError, StoreLocked

from .fakes import ScriptedLLM

TESTS = str(Path(__file__).parent)


def make(directory: Path, llm: ScriptedLLM | None = None, **config) -> PathRAGIndex:
    return PathRAGIndex(directory, llm=llm or ScriptedLLM(), embedder=HashingEmbedder(64),
                        config=IndexConfig(**config))


def doc(i: int) -> Document:
    return Document(id=f"d{i}", text=f"ENTITY N{i} | concept | Node {i}.\nLINK N{i} | HUB | n{i} joins the hub. | k | 2")


def contents(index: PathRAGIndex) -> dict:
    return {"documents": sorted(index.documents),
            "entities": sorted(e.model_dump_json() for e in index.graph.iter_entities()),
            "relations": sorted(r.model_dump_json() for r in index.graph.iter_relations())}


HOLDER = textwrap.dedent("""
    import sys, time
    from pathrag.store import WriterLock
    lock = WriterLock(sys.argv[1])
    lock.acquire()
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    lock.release()
    print("released", flush=True)
    time.sleep(30)
""")


def hold_lock(directory: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory), str(seconds)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_writer_is_refused_naming_the_holder_and_a_killed_holder_leaves_no_lock(tmp_path: Path) -> None:
    index = make(tmp_path / "kb")
    index.insert([doc(0)])
    holder = hold_lock(tmp_path / "kb", 60)
    llm = ScriptedLLM()
    blocked = make(tmp_path / "kb", llm)
    try:
        with pytest.raises(StoreLocked, match=f"being written by process {holder.pid}"):
            blocked.insert([doc(1)])
        with pytest.raises(StoreLocked, match=f"process {holder.pid}"):
            blocked.delete(["d0"])
        assert llm.calls == 0 and "d1" not in blocked.documents  # refused before paying for anything
        assert blocked.retrieve("N0", keyword_llm=False).paths is not None  # readers are not blocked
    finally:
        holder.send_signal(signal.SIGKILL)  # kill -9 while holding the lock
        holder.wait()
    assert blocked.insert([doc(1)]).documents == 1  # the dead holder's lock is gone
    assert sorted(blocked.documents) == ["d0", "d1"]


def test_a_writer_can_wait_for_the_lock(tmp_path: Path) -> None:
    make(tmp_path / "kb").insert([doc(0)])
    holder = hold_lock(tmp_path / "kb", 0.5)
    try:
        assert make(tmp_path / "kb", lock_timeout=30).insert([doc(1)]).documents == 1
        assert holder.stdout is not None and holder.stdout.readline().strip() == "released"
    finally:
        holder.kill()
        holder.wait()
    holder = hold_lock(tmp_path / "kb", 60)
    try:
        with pytest.raises(StoreLocked, match=r"waited 0.2 s"):
            make(tmp_path / "kb", lock_timeout=0.2).insert([doc(2)])
    finally:
        holder.kill()
        holder.wait()


WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from fakes import ScriptedLLM
    from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
    first, count = int(sys.argv[2]), int(sys.argv[3])
    index = PathRAGIndex(sys.argv[1], llm=ScriptedLLM(delay=0.002), embedder=HashingEmbedder(64),
                         config=IndexConfig(lock_timeout=120))
    for i in range(first, first + count):  # one document per commit: many chances to interleave
        index.insert([Document(id=f"d{{i}}", text=f"ENTITY N{{i}} | concept | Node {{i}}.\\nLINK N{{i}} | HUB | n{{i}} joins the hub. | k | 2")])
    print("done")
""")


def test_two_processes_writing_one_store_lose_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "kb"
    script = WRITER.format(tests=TESTS)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(store), str(first), "15"], stdout=subprocess.PIPE,
                              text=True) for first in (0, 100)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0] and all("done" in o for o in outputs)
    clean = make(tmp_path / "clean")
    clean.insert([doc(i) for i in [*range(15), *range(100, 115)]])
    shared = make(store)
    assert contents(shared) == contents(clean)  # every document, and HUB merged from all 30
    with capsys.disabled():
        print(f"\ntwo writer processes, 15 one-document commits each: {len(shared.documents)} documents, 0 lost")


def test_readers_never_fail_or_see_half_a_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = make(tmp_path / "kb")
    index.insert([doc(i) for i in range(6)])
    question = "N7 and N1"

    def answer() -> list:
        return [(p.nodes, round(p.score, 9)) for p in index.retrieve(question, keyword_llm=False, top_k=50).paths]

    without = answer()
    index.insert([doc(7)])
    with_seven = answer()
    assert without != with_seven
    errors: list[BaseException] = []
    seen = {"before/after": 0, "neither": 0}
    writing = threading.Event()
    writing.set()

    def reader() -> None:
        while writing.is_set():
            try:
                found = answer()
            except BaseException as exc:  # every failure is a failed user request
                errors.append(exc)
                return
            seen["before/after" if found in (without, with_seven) else "neither"] += 1

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for _ in range(10):
            index.delete(["d7"])
            index.insert([doc(7)])
    finally:
        writing.clear()
        for t in threads:
            t.join()
    assert errors == [] and seen["neither"] == 0 and seen["before/after"] > 0
    with capsys.disabled():
        print(f"\n3 reader threads during 20 commits: {seen['before/after']} retrievals, 0 errors, "
              "each equal to the answer before or after a commit")


# -- the document lifecycle -----------------------------------------------------------------------------


def test_an_emptied_document_is_removed(tmp_path: Path) -> None:
    index = make(tmp_path / "kb")
    index.insert([doc(1), doc(2)])
    summary = index.insert([Document(id="d1", text="   ")])
    assert (summary.removed, summary.documents, summary.unchanged) == (1, 0, 0)
    alone = make(tmp_path / "alone")
    alone.insert([doc(2)])
    assert contents(index) == contents(alone)
    assert index.insert([Document(id="never-seen", text="")]).removed == 0


def test_the_same_id_twice_in_one_insert_with_different_texts_is_an_error(tmp_path: Path) -> None:
    llm = ScriptedLLM()
    index = make(tmp_path / "kb", llm)
    with pytest.raises(ValueError, match="'x' appears twice in one insert"):
        index.insert([Document(id="x", text="ENTITY A | t | one"), Document(id="x", text="ENTITY B | t | two")])
    assert llm.calls == 0 and index.documents == {}
    assert index.insert([doc(1), doc(1)]).unchanged == 1  # the very same document twice is harmless


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only files anyway")
def test_a_store_that_cannot_be_written_fails_before_any_llm_call(tmp_path: Path) -> None:
    store = tmp_path / "kb"
    make(store).insert([doc(1)])
    for path in [store, *store.iterdir()]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    llm = ScriptedLLM()
    try:
        with pytest.raises(StoreError, match="cannot be written"):
            make(store, llm).insert([doc(2)])
        assert llm.calls == 0
    finally:
        for path in [store, *store.iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_a_lock_file_that_cannot_be_created_fails_before_any_llm_call(tmp_path: Path) -> None:
    """The same check, reachable as root: the writer lock cannot be opened for writing."""
    store = tmp_path / "kb"
    make(store).insert([doc(1)])
    (store / "pathrag.lock").unlink()
    (store / "pathrag.lock").mkdir()  # an obstacle even root cannot open as a file
    llm = ScriptedLLM()
    with pytest.raises(StoreError, match="cannot be written") as caught:
        make(store, llm).insert([doc(2)])
    assert llm.calls == 0 and "\n" not in str(caught.value)
