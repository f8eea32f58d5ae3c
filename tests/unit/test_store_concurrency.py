"""One writer per store directory across processes (the library and the command line's ``--wait``) and the
document lifecycle (issues 12 and 16) on the embedded store. Readers during writes, killed writers and
writer processes side by side are in the reliability suite, ``tests/unit/test_reliability.py``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
from pathrag.sqlite import StoreError, StoreLocked

from ..fakes import ScriptedLLM


def make(directory: Path, llm: ScriptedLLM | None = None, **config) -> PathRAGIndex:
    return PathRAGIndex(directory, llm=llm or ScriptedLLM(), embedder=HashingEmbedder(64), config=IndexConfig(**config))


def doc(i: int) -> Document:
    return Document(
        id=f"d{i}", text=f"ENTITY N{i} | concept | Node {i}.\nLINK N{i} | HUB | n{i} joins the hub. | k | 2"
    )


def contents(index: PathRAGIndex) -> dict:
    return {
        "documents": sorted(index.documents),
        "entities": sorted(e.model_dump_json() for e in index.graph.iter_entities()),
        "relations": sorted(r.model_dump_json() for r in index.graph.iter_relations()),
    }


HOLDER = textwrap.dedent("""
    import sys, time
    from pathrag.sqlite import WriterLock
    lock = WriterLock(sys.argv[1])
    lock.acquire()
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    lock.release()
    print("released", flush=True)
    time.sleep(30)
""")


def hold_lock(directory: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.reliability
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


@pytest.mark.reliability
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


# Two writer processes that both lose nothing, and readers during writes: tests/unit/test_reliability.py
# (run_two_writers and run_load of tests/reliability_kit.py) check them with figures.


@pytest.mark.reliability
def test_the_command_line_refuses_or_waits_for_a_store_another_process_writes(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from langchain_pathrag.cli import app
    from pathrag.demo import demo_data

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = Path(str(demo_data()))
    source = data / "corpus" / "02-greyfen-expansion-plan.md"
    store = tmp_path / "kb"
    assert CliRunner().invoke(app, ["index", str(source), "--store", str(store), "--replay", str(data)]).exit_code == 0
    other = tmp_path / "other.md"
    other.write_text((data / "corpus" / "06-morrow-inquiry-findings.md").read_text(encoding="utf-8"), encoding="utf-8")
    openie = Path(__file__).parents[1] / "fixtures" / "musique_small" / "openie_sample.json"
    holder = hold_lock(store, 60)
    try:
        for args in (
            ["index", str(other), "--replay", str(data)],
            ["delete", "02-greyfen-expansion-plan.md"],
            ["import", "openie", str(openie)],
            ["delete", "02-greyfen-expansion-plan.md", "--wait", "0.2"],
        ):
            result = CliRunner().invoke(app, [*args, "--store", str(store)])
            assert result.exit_code == 1 and "Traceback" not in result.output, result.output
            lines = [line for line in result.stderr.splitlines() if not line.startswith("Reading ")]  # index's first
            assert len(lines) == 1 and f"being written by process {holder.pid}" in lines[0]
            assert "add --wait SECONDS" in result.stderr
        assert "waited 0.2 s" in result.stderr
    finally:
        holder.kill()
        holder.wait()
    holder = hold_lock(store, 0.5)  # lets go after half a second: --wait gets the store
    try:
        result = CliRunner().invoke(
            app, ["index", str(other), "--store", str(store), "--replay", str(data), "--wait", "30"]
        )
        assert result.exit_code == 0, result.output
    finally:
        holder.kill()
        holder.wait()
    holder = hold_lock(store, 0.5)
    try:
        result = CliRunner().invoke(app, ["import", "openie", str(openie), "--store", str(store), "--wait", "30"])
        assert result.exit_code == 0, result.output
    finally:
        holder.kill()
        holder.wait()
    from pathrag.sqlite import read_store_info

    index = PathRAGIndex(store, embedder=HashingEmbedder(256), embedder_name=read_store_info(store)["embedder"])
    # nothing lost, and each refused write went through once it waited
    assert sorted(index.documents) == ["02-greyfen-expansion-plan.md", "import:openie:openie_sample", "other.md"]
    index.close()


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
        with pytest.raises(StoreError, match="is read-only: cannot write"):
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
    # refused on opening, as any non-regular file in place of a store file is (issue 24)
    with pytest.raises(StoreError, match=r"pathrag.lock is not a regular file \(a folder\)") as caught:
        make(store, llm).insert([doc(2)])
    assert llm.calls == 0 and "\n" not in str(caught.value)


async def test_overlapping_async_reads_each_see_the_state_committed_when_they_began(tmp_path: Path) -> None:
    import asyncio

    from pathrag import Entity

    index = PathRAGIndex(tmp_path, embedder=HashingEmbedder(64))
    index.add_records("a", [Entity(name="A")], [])

    async def slow_count(graph, indexes) -> int:
        count = len(indexes["entities"])
        await asyncio.sleep(0.3)  # still reading while the commit below lands
        return count

    async def count(graph, indexes) -> int:
        return len(indexes["entities"])

    long_read = asyncio.create_task(index.aread_committed(slow_count))
    await asyncio.sleep(0.05)
    await asyncio.to_thread(index.add_records, "b", [Entity(name="B")], [])  # committed by another thread
    assert await index.aread_committed(count) == 2  # its own snapshot, not the long read's
    assert await long_read == 1
    assert await index.aread_committed(count) == 2


def test_threads_writing_one_in_memory_index_take_turns(tmp_path: Path) -> None:
    import threading

    from pathrag import Entity

    index = PathRAGIndex(embedder=HashingEmbedder(64))
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(15):
                index.add_records(f"t{n}-{i}", [Entity(name=f"E{n}-{i}")], [])
        except BaseException as exc:  # noqa: BLE001 - every failure counts
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and index.check() == []
    assert len(index.documents) == 45 and len(index.entity_index) == 45 and len(index.graph) == 45


def test_an_in_memory_read_run_again_after_a_commit_asks_the_keyword_model_once() -> None:
    import threading

    from pathrag import Entity

    index = PathRAGIndex(embedder=HashingEmbedder(64))
    index.add_records("a", [Entity(name="A")], [])
    calls = []

    def keywords(prompt: str) -> str:  # a commit lands while the model is being asked
        calls.append(prompt)
        writer = threading.Thread(target=index.add_records, args=(f"b{len(calls)}", [Entity(name="B")], []))
        writer.start()
        writer.join()
        return '{"high_level_keywords": [], "low_level_keywords": ["A"]}'

    index.llm = pathrag_model(keywords)
    result = index.retrieve("Where is A?", keyword_llm=True)
    assert len(calls) == 1 and result.seeds  # read again on the new state, the answer remembered
    assert len(index.documents) == 2


def pathrag_model(func):
    from pathrag import as_language_model

    return as_language_model(func)
