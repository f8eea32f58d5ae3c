"""Bounded work whatever the settings or the input (issue 39 rows 7 and 8, item 5): the path search walks at
most :data:`~pathrag.params.PATH_STEPS` steps and :data:`~pathrag.params.MAX_HOPS` relations, so no setting of
``max_hops`` or θ makes one query enumerate an exponential number of paths, while the paper's settings never
come near the bound (their paths are the same as without it: the oracle tests of test_pruning.py); an insert
reads its documents as it goes and extracts them through a few workers, a batch a commit."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

from pathrag import Document, HashingEmbedder, IndexConfig, PathParams, PathRAGIndex, RetrievalParams, find_key_paths
from pathrag.demo import load_questions, open_demo_index
from pathrag.index import front as indexing_module
from pathrag.params import MAX_HOPS, PATH_STEPS
from pathrag.query import pruning as pruning_module
from pathrag.sqlite import STORE_FILE

from ..fakes import ScriptedLLM

pytestmark = pytest.mark.reliability


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The steps each start's walk took, as the searches run."""
    steps: list[int] = []
    real = pruning_module._Propagation.paths_to

    def counting(self, targets, budget) -> Iterator:
        yield from real(self, targets, budget)
        steps.append(self.walked)

    monkeypatch.setattr(pruning_module._Propagation, "paths_to", counting)
    return steps


def in_a_thread(work, seconds: float = 120.0) -> list:
    """``work()`` in a thread, given ``seconds`` to end (an unbounded walk never does)."""
    done: list = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert done, "the search never ended"
    return done[0]


def test_a_dense_graph_at_theta_zero_and_twelve_hops_keeps_the_best_paths_of_a_bounded_walk(
    walked: list[int],
) -> None:
    """30 nodes all linked to each other hold about 10^16 simple paths of up to 12 relations between two of
    them: every one was enumerated and kept."""
    graph = nx.complete_graph([f"n{i:02d}" for i in range(30)])
    seeds = [f"n{i:02d}" for i in range(0, 30, 3)]
    paths = in_a_thread(lambda: find_key_paths(graph, seeds, theta=0.0, max_hops=12, top_k=15))
    assert len(paths) == 15 and all(1 <= p.hops <= 12 for p in paths)
    assert sum(walked) <= PATH_STEPS + len(seeds) * (MAX_HOPS + 2)  # each walk stops within a path of its share
    assert paths[0].hops == 1  # a direct relation scores best, and every direct one is found early


def test_max_hops_none_at_a_vanishing_theta_is_bounded_by_max_hops(walked: list[int]) -> None:
    """α=1 passes everything on: along a chain of 3,000 nodes θ=1e-300 bounds nothing (and the start's
    degree limit, α/θ, was counted up to one by one: the search never began)."""
    chain = nx.path_graph([f"n{i:04d}" for i in range(3000)])
    found = in_a_thread(
        lambda: find_key_paths(chain, ["n0000", "n0020", "n2999"], alpha=1.0, theta=1e-300, max_hops=None)
    )
    assert [p.nodes[-1] for p in found] == ["n0020"] and found[0].hops == 20  # n2999 is beyond MAX_HOPS
    assert max(walked) <= 6 * MAX_HOPS  # each walk goes along the chain at most MAX_HOPS nodes each way


@pytest.mark.parametrize("hops", [0, MAX_HOPS + 1, 10**6])
def test_a_max_hops_beyond_the_cap_is_a_clear_error(hops: int) -> None:
    with pytest.raises(ValueError, match=f"max_hops must be an int from 1 to {MAX_HOPS} or None"):
        PathParams(max_hops=hops)


@pytest.fixture(scope="module")
def demo():
    index, _ = open_demo_index()
    yield index
    index.close()


def test_the_papers_settings_never_come_near_the_bound_on_the_demo_questions(demo, walked: list[int]) -> None:
    per_query = []
    for question in load_questions():
        for context in ("paths", "evidence"):
            walked.clear()
            demo.retrieve(question.question, params=RetrievalParams(context=context))
            per_query.append(sum(walked))
    assert any(per_query) and max(per_query) < PATH_STEPS // 50  # at most 630 steps a query when measured


@pytest.mark.parametrize("theta", [0.05, 0.001, 1e-12, 0.0])
@pytest.mark.parametrize("max_hops", [3, 8, 12, MAX_HOPS, None])
def test_every_hostile_setting_walks_a_bounded_number_of_steps_on_the_demo_store(
    demo, walked: list[int], theta: float, max_hops: int | None
) -> None:
    """The probe of row 7 (``--theta 0.001 --max-hops 12 --num-seeds 40``: killed at 100 s and 5.3 GB), at
    every θ and hop limit, both contexts, α 0.8 and 1: each query's walk within its bound."""
    if max_hops is None and theta == 0:
        pytest.skip("refused: the search would be unbounded")
    question = load_questions()[0].question
    for alpha in (0.8, 1.0):
        for context in ("paths", "evidence"):
            params = RetrievalParams(theta=theta, max_hops=max_hops, alpha=alpha, num_seeds=40, context=context)
            walked.clear()
            result = in_a_thread(lambda params=params: demo.retrieve(question, params=params))
            assert result.paths  # it still finds paths
            assert sum(walked) <= PATH_STEPS + 40 * (MAX_HOPS + 2)


# -- one insert of many documents (row 8) -------------------------------------------------------------


class CountingLLM(ScriptedLLM):
    """Notes how many asyncio tasks exist whenever it is asked (a task per chunk, up front, held 10 GB for
    10^6 tiny documents before the first answer)."""

    def __init__(self) -> None:
        super().__init__(delay=0.001)  # waits, as a model over the network does
        self.tasks = 0

    async def acomplete(self, prompt: str) -> str:
        self.tasks = max(self.tasks, len(asyncio.all_tasks()))
        return await super().acomplete(prompt)


def test_an_insert_extracts_through_a_few_workers_not_a_task_per_chunk(tmp_path: Path) -> None:
    llm = CountingLLM()
    index = PathRAGIndex(tmp_path, llm=llm, embedder=HashingEmbedder(32), config=IndexConfig(max_concurrency=3))
    summary = index.insert([Document(id=f"d{i}", text=f"ENTITY E{i} | thing | Item {i}.") for i in range(300)])
    index.close()
    assert summary.documents == 300 and summary.chunks_extracted == 300
    assert llm.tasks <= 2 * 3 + 2, llm.tasks  # the workers, the insert's own task, the loop's


def test_a_big_insert_reads_its_documents_as_it_goes_and_commits_them_a_batch_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexing_module, "INSERT_BATCH", 10)
    committed: list[int] = []

    def documents() -> Iterator[Document]:
        for i in range(35):
            if i % 10 == 0 and (tmp_path / STORE_FILE).exists():
                conn = sqlite3.connect(tmp_path / STORE_FILE)
                committed.append(conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0])
                conn.close()
            yield Document(id=f"d{i}", text=f"ENTITY E{i} | thing | Item {i}.")

    index = PathRAGIndex(tmp_path, llm=ScriptedLLM(), embedder=HashingEmbedder(32))
    summary = index.insert(documents())
    assert committed == [0, 10, 20, 30]  # each batch committed before the next one is read
    assert (summary.documents, summary.chunks_extracted, summary.entities) == (35, 35, 35)
    assert len(index.documents) == 35 and index.check() == []
    again = index.insert(documents())  # a big insert run again costs nothing
    assert (again.unchanged, again.llm_calls) == (35, 0)
    index.close()


def test_one_version_per_document_id_across_the_batches_of_an_insert(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(indexing_module, "INSERT_BATCH", 2)
    index = PathRAGIndex(tmp_path, llm=ScriptedLLM(), embedder=HashingEmbedder(32))
    docs = [Document(id="a", text="first"), Document(id="b", text="b"), Document(id="a", text="second")]
    with pytest.raises(ValueError, match="appears twice in one insert with different texts"):
        index.insert(docs)
    index.close()
