"""A crash at every write step of a commit (issue 16): insert, delete and import each killed with SIGKILL
right after their k-th write, for every k. The reopened store must equal the state before or after the
operation, re-running it must give the store an uninterrupted run gives, and no LLM answer is paid twice.

The kills are real: each trial forks a child process that sets :data:`pathrag.sqlite.store.crash_after_write`
and dies by SIGKILL; one more trial goes through a fresh interpreter and the ``PATHRAG_CRASH_AFTER_WRITE``
environment variable.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import pathrag.sqlite.store as store_module
from pathrag import Document, Entity, HashingEmbedder, IndexConfig, PathRAGIndex, Relation
from pathrag.llm.calls import cache_key

from ..fakes import ScriptedLLM

pytestmark = [
    pytest.mark.reliability,  # part of the reliability suite (pytest -m reliability)
    pytest.mark.skipif(not hasattr(os, "fork"), reason="the trials fork a child process to kill"),
]

BASE = [
    Document(
        id="A",
        text="ENTITY Mara | person | Harbour pilot.\nENTITY Saltmere | location | Fishing town.\n"
        "LINK Mara | Saltmere | Mara lives in Saltmere. | home | 6",
    ),
    Document(
        id="B",
        chunks=(
            "ENTITY Gull | object | A small boat.\nLINK Mara | Gull | Mara owns the Gull. | owns | 5",
            "ENTITY Ida | person | Builds sea walls.\nLINK Ida | Saltmere | Ida works there. | work | 4",
        ),
    ),
]
INSERTED = [
    Document(
        id="C",
        chunks=(
            "ENTITY Ghost Person | person | Seen once.\nENTITY Ghost Town | location | Empty.\n"
            "LINK Ghost Person | Ghost Town | Haunts it. | haunting | 3",
            "ENTITY Tide Board | organization | Runs the port.\n"
            "LINK Tide Board | Mara | Employs Mara. | employment | 8",
        ),
    ),
    Document(
        id="B",
        chunks=("ENTITY Gull | object | A small boat, repainted.\nLINK Mara | Gull | Mara owns the Gull. | owns | 5",),
    ),  # B changed: one chunk released
]
IMPORTED = (
    [Entity(name="LIGHTHOUSE", type="place", description="Guides boats.")],
    [
        Relation(source="LIGHTHOUSE", target="GULL", description="Guides the Gull.", keywords=("guidance",)),
        Relation(source="LIGHTHOUSE", target="MARA", description="Mara keeps it.", keywords=("keeper",)),
    ],
)

OPERATIONS: dict[str, Callable[[PathRAGIndex], object]] = {
    "insert": lambda index: index.insert(INSERTED),
    "delete": lambda index: index.delete(["A", "B"]),
    "import": lambda index: index.add_records("imported", *IMPORTED),
}


def open_index(directory: Path, llm: ScriptedLLM | None = None) -> PathRAGIndex:
    return PathRAGIndex(
        directory, llm=llm or ScriptedLLM(), embedder=HashingEmbedder(64), config=IndexConfig(max_concurrency=1)
    )


def state(directory: Path) -> dict:
    """Everything a commit decides (documents, live chunks, graph, vectors); not the journal-like rows
    (extractions nobody claims yet, LLM answers), which are written before a commit on purpose."""
    index = open_index(directory)
    try:
        assert index.check() == []  # documents, chunks, graph and vectors agree
        return {
            "documents": dict(sorted(index.documents.items())),
            "live chunks": sorted(cid for cid, c in index.chunks.items() if c.refs),
            "entities": sorted(e.model_dump_json() for e in index.graph.iter_entities()),
            "relations": sorted(r.model_dump_json() for r in index.graph.iter_relations()),
            "vectors": {name: sorted((i, v.get(i).text) for i in v.ids()) for name, v in index.vector_indexes.items()},
        }
    finally:
        index.close()


def cached_keys(directory: Path) -> set[str]:
    conn = sqlite3.connect(directory / store_module.STORE_FILE)
    try:
        return {key for (key,) in conn.execute("SELECT key FROM llm_cache")}
    finally:
        conn.close()


def run_killed(directory: Path, operation: str, k: int, opener: Callable[[Path], PathRAGIndex] | None = None) -> bool:
    """Run ``operation`` on the store (opened by ``opener``, default :func:`open_index`) in a forked child
    that kills itself after write step ``k``.

    Returns True if the child died by SIGKILL, False if the operation finished first."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            index = (opener or open_index)(directory)
            store_module.write_steps = 0
            store_module.crash_after_write = k
            OPERATIONS[operation](index)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, f"the {operation} failed in the child (k={k})"
    return False


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("crash") / "base"
    index = open_index(directory)
    index.insert(BASE)
    index.close()
    return directory


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_a_crash_after_any_write_step_leaves_the_state_before_or_after(
    base: Path, tmp_path: Path, operation: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = state(base)
    clean = tmp_path / "clean"
    shutil.copytree(base, clean)
    llm = ScriptedLLM()
    index = open_index(clean, llm)
    store_module.write_steps = 0
    OPERATIONS[operation](index)
    steps = store_module.write_steps
    index.close()
    after = state(clean)
    prompts = {cache_key(llm.name, p): p for p in llm.prompts}  # every LLM answer the operation needs
    assert after != before and steps > 2

    outcomes = {"before": 0, "after": 0}
    for k in range(1, steps + 2):  # one more than the steps: that trial must finish without a kill
        trial = tmp_path / f"k{k}"
        shutil.copytree(base, trial)
        killed = run_killed(trial, operation, k)
        assert killed == (k <= steps), f"{operation}: step {k} of {steps}"
        found = state(trial)
        assert found in (before, after), f"{operation} killed after write step {k}: a state that is neither"
        outcomes["before" if found == before else "after"] += 1
        # re-running completes it exactly, paying only for answers that were not saved before the kill
        unpaid = set(prompts) - cached_keys(trial)
        survivor = ScriptedLLM()
        rerun = open_index(trial, survivor)
        OPERATIONS[operation](rerun)
        rerun.close()
        assert state(trial) == after, f"{operation}: re-run after a kill at step {k}"
        assert sorted(survivor.prompts) == sorted(prompts[key] for key in unpaid)
        shutil.rmtree(trial)
    assert outcomes["before"] >= 1 and outcomes["after"] >= 1  # the kills did land on both sides of the commit
    with capsys.disabled():
        print(
            f"\n{operation}: {steps} write steps, {steps + 1} trials (one per step + one unkilled): "
            f"{outcomes['before']} left the state before, {outcomes['after']} the state after"
        )


def test_ghost_entities_never_survive_a_crash_during_insert(base: Path, tmp_path: Path) -> None:
    """Issue 16's first reproduction: killed during an insert, the store kept the new entities but no
    document. Now: the ghost entities exist exactly when their document does, and delete removes them."""
    ghost = [
        Document(
            id="ghost",
            text="ENTITY Ghost Person | person | Seen once.\n"
            "ENTITY Ghost Town | location | Empty.\n"
            "LINK Ghost Person | Ghost Town | Haunts it. | haunting | 3",
        )
    ]
    OPERATIONS["ghost"] = lambda index: index.insert(ghost)
    try:
        for k in range(1, 40):
            trial = tmp_path / f"k{k}"
            shutil.copytree(base, trial)
            killed = run_killed(trial, "ghost", k)
            index = open_index(trial)
            names = {e.name for e in index.graph.iter_entities()}
            hits = {h.metadata["name"] for h in index.entity_index.query("ghost person ghost town", 10)}
            listed = "ghost" in index.documents
            assert ({"GHOST PERSON", "GHOST TOWN"} <= names) == listed
            assert ({"GHOST PERSON", "GHOST TOWN"} & names) == ({"GHOST PERSON", "GHOST TOWN"} if listed else set())
            assert bool({"GHOST PERSON", "GHOST TOWN"} & hits) == listed
            index.delete(["ghost"])
            assert not {"GHOST PERSON", "GHOST TOWN"} & {e.name for e in index.graph.iter_entities()}
            index.close()
            shutil.rmtree(trial)
            if not killed:
                break
        assert not killed, "the insert never finished within 40 steps"
    finally:
        del OPERATIONS["ghost"]


def test_documents_are_never_lost_by_a_crash_during_delete(base: Path, tmp_path: Path) -> None:
    """Issue 16's second reproduction: killed during a delete, the store listed A and B without their
    entities, and inserting them again was skipped as unchanged. Now a document is listed exactly when its
    entities are there, and inserting A and B again always restores the full store."""
    full = state(base)
    for k in range(1, 60):
        trial = tmp_path / f"k{k}"
        shutil.copytree(base, trial)
        killed = run_killed(trial, "delete", k)
        index = open_index(trial)
        names = {e.name for e in index.graph.iter_entities()}
        assert ("A" in index.documents) == ("SALTMERE" in names) and ("B" in index.documents) == ("GULL" in names)
        index.insert(BASE)
        index.close()
        assert state(trial) == full
        shutil.rmtree(trial)
        if not killed:
            break
    assert not killed


def test_the_environment_variable_kills_a_real_interpreter(base: Path, tmp_path: Path) -> None:
    trial = tmp_path / "env"
    shutil.copytree(base, trial)
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from fakes import ScriptedLLM
        from pathrag import HashingEmbedder, IndexConfig, PathRAGIndex
        index = PathRAGIndex(sys.argv[1], llm=ScriptedLLM(), embedder=HashingEmbedder(64),
                             config=IndexConfig(max_concurrency=1))
        index.delete(["A", "B"])
        print("finished")
    """)
    before = state(base)
    # opening writes nothing here (the store already records everything), so step 3 is inside the delete
    proc = subprocess.run(
        [sys.executable, "-c", script, str(trial)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATHRAG_CRASH_AFTER_WRITE": "3"},
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL and "finished" not in proc.stdout
    assert state(trial) == before


# -- issue 24 row 9: summaries paid before a kill are not paid again ------------------------------------

SUMMARISED = [  # each entity and relation is described again: merged descriptions that get summarised
    Document(
        id="S",
        chunks=(
            "ENTITY Mara | person | Retired harbour pilot who still rows every morning.\n"
            "ENTITY Saltmere | location | A fishing town on a grey and windy coast.\n"
            "LINK Mara | Saltmere | Mara was born in Saltmere and never left it. | home | 6",
            "ENTITY Ida | person | Engineer who designs the new northern sea walls.\n"
            "LINK Ida | Saltmere | Ida moved to Saltmere to rebuild its harbour walls. | work | 4",
        ),
    )
]


def summary_prompts(prompts: list[str]) -> list[str]:
    return sorted(p for p in prompts if p.rstrip().endswith("Merged description:"))


def saved_summaries(directory: Path) -> set[str]:
    conn = sqlite3.connect(directory / store_module.STORE_FILE)
    try:
        return {key for (key,) in conn.execute("SELECT key FROM summaries")}
    finally:
        conn.close()


def test_summaries_paid_before_a_kill_are_never_paid_again(
    base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24 row 9: a kill inside a commit made the re-run pay every summary again (they were kept in
    the rolled-back transaction). The plan runs outside the transaction now and each summary is saved the
    moment it arrives: after a kill at any write step, the re-run asks only the summaries never answered,
    and none at all once the commit's transaction had started. The LLM answer cache is off, so the
    summaries table alone is what saves them."""
    from pathrag.ids import digest

    def summarising(directory: Path, llm: ScriptedLLM | None = None) -> PathRAGIndex:
        config = IndexConfig(max_concurrency=1, summary_threshold_tokens=5, cache=False)
        return PathRAGIndex(directory, llm=llm or ScriptedLLM(), embedder=HashingEmbedder(64), config=config)

    OPERATIONS["summaries"] = lambda index: index.insert(SUMMARISED)
    try:
        clean = tmp_path / "clean"
        shutil.copytree(base, clean)
        llm = ScriptedLLM()
        index = summarising(clean, llm)
        store_module.write_steps = 0
        index.insert(SUMMARISED)
        steps = store_module.write_steps
        index.close()
        paid = {digest(p): p for p in summary_prompts(llm.prompts)}
        assert len(paid) >= 4  # the case is one that summarises

        inside_commit = 0
        for k in range(1, steps + 1):
            trial = tmp_path / f"k{k}"
            shutil.copytree(base, trial)
            assert run_killed(trial, "summaries", k, summarising)
            unanswered = set(paid) - saved_summaries(trial)
            survivor = ScriptedLLM()
            rerun = summarising(trial, survivor)
            committed = "S" in rerun.documents
            rerun.insert(SUMMARISED)
            rerun.close()
            assert summary_prompts(survivor.prompts) == sorted(paid[key] for key in unanswered), f"step {k}"
            if not unanswered and not committed:  # killed after every summary was paid, before the commit
                inside_commit += 1
                assert summary_prompts(survivor.prompts) == []
            shutil.rmtree(trial)
        assert inside_commit >= 1  # some kills did land between the last summary and the commit
        with capsys.disabled():
            print(
                f"\nsummaries: {len(paid)} summary calls, {steps} write steps; {inside_commit} kills after every "
                "summary was paid and before the commit: 0 summary calls on their re-run"
            )
    finally:
        del OPERATIONS["summaries"]


@pytest.mark.parametrize("operation", ["insert", "delete"])
def test_a_crash_at_any_step_leaves_saved_search_indexes_that_answer_as_the_store(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    """Issue 25: with every vector space searched through a saved HNSW file (the size limit set to 1, so
    any space has one), a kill at any write step leaves files that, with the log, answer exactly as the
    store's rows do, before and after the operation."""
    pytest.importorskip("usearch")
    from pathrag.sqlite import SQLiteVectorIndex
    from pathrag.sqlite.ann import saved_indexes

    monkeypatch.setattr("pathrag.sqlite.ann.EXACT_LIMIT", 1)  # forked children inherit it
    monkeypatch.setattr("pathrag.sqlite.ann.BRUTE_FORCE", True)  # answers independent of the graph's build
    asked = ["Mara Saltmere", "ghost town", "Tide Board employs", "boat"]

    def answers(directory: Path) -> list[list[tuple[str, float]]]:
        index = open_index(directory)
        try:
            found = []
            for name, vectors in sorted(index.vector_indexes.items()):
                assert isinstance(vectors, SQLiteVectorIndex)
                exact = SQLiteVectorIndex(vectors.store, name, vectors.embedder, exact_limit=10**12)
                for query in asked:
                    got = [(h.id, round(h.score, 5)) for h in vectors.query(query, 5)]
                    assert got == [(h.id, round(h.score, 5)) for h in exact.query(query, 5)], (name, query)
                    found.append(got)
            return found
        finally:
            index.close()

    seeded = tmp_path / "seeded"
    shutil.copytree(base, seeded)
    index = open_index(seeded)
    for vectors in index.vector_indexes.values():
        assert isinstance(vectors, SQLiteVectorIndex)
        vectors.catch_up()  # writes the saved indexes
    index.close()
    answers(seeded)
    assert {space for space in ("entities", "relations", "chunks") if saved_indexes(seeded, space)} == {
        "entities",
        "relations",
        "chunks",
    }
    for k in range(1, 60):
        trial = tmp_path / f"k{k}"
        shutil.copytree(seeded, trial)
        killed = run_killed(trial, operation, k)
        answers(trial)
        shutil.rmtree(trial)
        if not killed:
            break
    assert not killed, f"the {operation} never finished within 60 steps"
