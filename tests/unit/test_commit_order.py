"""One commit order for every write (issue 22): extract, then plan the change into a change set, then apply
it in one short transaction. No LLM or embedding call runs inside a store's transaction; the writer lock
is not held while a write extracts; a plan overtaken by another writer's commit is made again, paying only
for what changed; a chunk another writer dropped meanwhile is extracted again from the cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from pathrag import Document, Entity, HashingEmbedder, IndexConfig, PathRAGIndex
from pathrag.errors import StoreLocked
from pathrag.testing.facts import fact_texts

from ..fakes import ScriptedLLM

HUB = [
    Document(id="a", text="ENTITY Hub | place | The harbour.\nLINK Mara | Hub | Mara sails from the hub. | sail | 3"),
    Document(id="b", text="ENTITY Hub | place | A busy port.\nLINK Ida | Hub | Ida mends the hub's walls. | work | 4"),
]


def open_index(directory: Path, llm: object = None, embedder: object = None, **config: object) -> PathRAGIndex:
    config.setdefault("summary_threshold_tokens", 5)  # merged descriptions get summarised: LLM calls in a plan
    config.setdefault("lock_timeout", 30)
    return PathRAGIndex(
        directory,
        llm=llm or ScriptedLLM(),
        embedder=embedder or HashingEmbedder(64),
        config=IndexConfig(**config),
    )


def contents(index: PathRAGIndex) -> dict:
    return {
        "documents": {doc_id: doc.row() for doc_id, doc in sorted(index.documents.items())},
        "entities": sorted(e.model_dump_json() for e in index.graph.iter_entities()),
        "relations": sorted(r.model_dump_json() for r in index.graph.iter_relations()),
        "vectors": {n: sorted((i, v.get(i).text) for i in v.ids()) for n, v in index.vector_indexes.items()},
    }


def clean(tmp_path: Path, docs: Sequence[Document]) -> dict:
    index = open_index(tmp_path / "clean")
    index.insert(docs)
    found = contents(index)
    index.close()
    return found


class Watched(HashingEmbedder):
    """Hashing vectors; notes every text embedded and whether a store transaction was open meanwhile."""

    def __init__(self) -> None:
        super().__init__(64)
        self.index: PathRAGIndex | None = None
        self.texts: list[str] = []
        self.inside: list[str] = []
        self.hook = None

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.index is not None and self.index._store is not None and self.index._store.in_transaction:
            self.inside.extend(texts)
        self.texts.extend(texts)
        if self.hook is not None:
            hook, self.hook = self.hook, None
            hook()
        return self.embed(texts)


class WatchedLLM(ScriptedLLM):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.index: PathRAGIndex | None = None
        self.inside: list[str] = []
        self.hook = None

    async def acomplete(self, prompt: str) -> str:
        if self.index is not None and self.index._store is not None and self.index._store.in_transaction:
            self.inside.append(prompt)
        if self.hook is not None and fact_texts(prompt):  # an extraction prompt
            hook, self.hook = self.hook, None
            hook()
        return await super().acomplete(prompt)


def test_no_llm_or_embedding_call_runs_inside_a_store_transaction(tmp_path: Path) -> None:
    llm, embedder = WatchedLLM(), Watched()
    index = open_index(tmp_path / "kb", llm, embedder)
    llm.index = embedder.index = index
    index.insert(HUB)
    index.add_records("imported", [Entity(name="HUB", type="place", description="Where the boats dock.")], [])
    index.delete(["a", "imported"])
    summaries = [p for p in llm.prompts if p.rstrip().endswith("Merged description:")]
    assert summaries and embedder.texts  # the plans did summarise and embed
    assert llm.inside == [] and embedder.inside == []
    assert contents(index) == clean(tmp_path, HUB[1:])
    index.close()


BLOCKED_WRITER = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from fakes import ScriptedLLM
    from pathrag import Document, Entity, HashingEmbedder, IndexConfig, PathRAGIndex

    class Blocked(ScriptedLLM):
        async def acomplete(self, prompt):
            flag = Path(sys.argv[1]) / "go"
            (Path(sys.argv[1]) / "extracting").touch()
            while not flag.exists():  # extracting: held here until the test says go
                await asyncio.sleep(0.02)
            return await super().acomplete(prompt)

    index = PathRAGIndex(Path(sys.argv[1]) / "kb", llm=Blocked(), embedder=HashingEmbedder(64),
                         config=IndexConfig(lock_timeout=30, summary_threshold_tokens=5))
    index.insert([Document(id="a", text=sys.argv[3])])
    print("finished", flush=True)
""")


@pytest.mark.reliability
def test_a_write_extracting_in_another_process_holds_no_lock_but_refuses_one_that_will_not_wait(
    tmp_path: Path,
) -> None:
    open_index(tmp_path / "kb").close()
    tests = str(Path(__file__).parents[1])
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKED_WRITER, str(tmp_path), tests, HUB[0].text], stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "extracting").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the writer never started extracting"
            time.sleep(0.02)
        with pytest.raises(StoreLocked, match=f"process {proc.pid}"):  # lock_timeout 0: refused at once
            open_index(tmp_path / "kb", lock_timeout=0).insert(HUB[1:])
        other = open_index(tmp_path / "kb")  # waits for the lock, which the extracting writer does not hold
        done = threading.Event()
        worker = threading.Thread(target=lambda: (other.insert(HUB[1:]), done.set()))
        worker.start()
        worker.join(30)
        assert done.is_set(), "the second writer waited for the first one's extraction"
        (tmp_path / "go").touch()
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "finished" in out
        assert contents(other) == clean(tmp_path, HUB)  # the first writer planned again over the second's commit
        other.close()
    finally:
        (tmp_path / "go").touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_plan_overtaken_by_another_commit_is_made_again_paying_only_for_what_changed(tmp_path: Path) -> None:
    """Two writers: the first plans (summaries, embeddings) before the lock; the second commits meanwhile.
    Under the lock the first sees it, plans again against the new state (the hub's merged description now
    has both documents' parts) and embeds no text twice."""
    open_index(tmp_path / "kb").close()
    llm, embedder = WatchedLLM(), Watched()
    first = open_index(tmp_path / "kb", llm, embedder)
    second = open_index(tmp_path / "kb")
    embedder.hook = lambda: second.insert(HUB[1:])  # runs during the first one's plan, before its lock
    first.insert(HUB[:1])
    assert "b" in first.documents and sorted(first.documents) == ["a", "b"]
    assert contents(first) == clean(tmp_path, HUB)
    assert len(embedder.texts) == len(set(embedder.texts))  # the second plan reused the first one's vectors
    first.close()
    second.close()


def test_a_chunk_another_writer_dropped_meanwhile_is_extracted_again_from_the_cache(tmp_path: Path) -> None:
    shared = "ENTITY Gull | object | A small boat.\nLINK Mara | Gull | Mara owns the Gull. | owns | 5"
    new = "ENTITY Ida | person | Builds sea walls.\nLINK Ida | Gull | Ida repairs the Gull. | repair | 2"
    base = open_index(tmp_path / "kb")
    base.insert([Document(id="a", chunks=(shared,))])
    base.close()
    llm = WatchedLLM()
    first = open_index(tmp_path / "kb", llm)
    second = open_index(tmp_path / "kb")
    llm.hook = lambda: second.delete(["a"])  # the shared chunk is dropped while the first extracts the new one
    summary = first.insert([Document(id="b", chunks=(shared, new))])
    assert summary.documents == 1 and summary.chunks == 2
    asked = [p for p in llm.prompts if fact_texts(p)]
    assert asked and all("Ida" in p for p in asked)  # the dropped chunk came back from the LLM cache
    assert contents(first) == clean(tmp_path, [Document(id="b", chunks=(shared, new))])
    first.close()
    second.close()


def test_an_index_without_a_directory_commits_in_the_same_order(tmp_path: Path) -> None:
    embedder = Watched()
    index = PathRAGIndex(llm=ScriptedLLM(), embedder=embedder, config=IndexConfig(summary_threshold_tokens=5))
    seen: list[int] = []
    embedder.hook = lambda: seen.append(len(index.graph))  # the graph is untouched while the plan embeds
    index.insert(HUB)
    assert seen == [0] and len(index.graph) == 3
    assert os.listdir(tmp_path) == []


def test_without_the_writer_lock_a_commit_landing_after_the_check_still_makes_the_plan_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where there is no cross-process lock (no fcntl), the transaction itself checks that the plan's state
    is still the committed one: another writer's commit that lands between the check and the apply is not
    written over."""
    open_index(tmp_path / "kb").close()
    first, second = open_index(tmp_path / "kb"), open_index(tmp_path / "kb")
    backend = first._backend
    lock = backend._lock

    async def no_lock(timeout: float = 0.0) -> None:
        return None

    monkeypatch.setattr(lock, "aacquire", no_lock)
    monkeypatch.setattr(lock, "release", lambda: None)
    refresh, calls = backend.refresh, []

    def refresh_then_commit() -> bool:
        changed = refresh()
        calls.append(changed)
        if len(calls) == 3:  # the check under the (missing) lock: the other commit lands right after it
            second.insert(HUB[1:])
        return changed

    monkeypatch.setattr(backend, "refresh", refresh_then_commit)
    first.insert(HUB[:1])
    assert calls[2] is False and len(calls) == 4  # planned again after the transaction found the other commit
    assert contents(first) == clean(tmp_path, HUB)
    first.close()
    second.close()
