"""The indexing pipeline with scripted models: merging, gleaning, cache, limits, retries, delete, crashes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pathrag import Document, Entity, HashingEmbedder, IndexConfig, PathRAGIndex, Relation, find_key_paths
from pathrag.index.extraction import ExtractionConfig
from pathrag.index.front import chunk_id
from pathrag.sqlite import unpack_records

from ..fakes import Crash, ScriptedLLM

FAST = dict(retry_initial_wait=0.001, retry_max_wait=0.002)

DOC_A = Document(
    id="a",
    chunks=(
        "ENTITY Mara | person | Harbour pilot.\nENTITY Saltmere | location | Fishing town.\n"
        "LINK Mara | Saltmere | Mara lives in Saltmere. | home | 6",
        "ENTITY Mara | person | Sails at night.\nENTITY Tide Board | organization | Runs the port.\n"
        "LINK Tide Board | Mara | The Tide Board employs Mara. | employment | 8",
    ),
)
DOC_B = Document(
    id="b",
    chunks=(
        "ENTITY Mara | pilot | Pilot of the Gull.\nENTITY Gull | object | A small boat.\n"
        "LINK Saltmere | Mara | Mara was born in Saltmere. | birthplace, home | 3\n"
        "LINK Mara | Gull | Mara owns the Gull. | ownership | 5",
    ),
)


def make(tmp_path=None, llm=None, **config) -> PathRAGIndex:
    # the paper's prompt: its records carry strengths and it gleans, which these tests count (the compact
    # prompt's pipeline, packs and all, is tested in test_packing.py)
    return PathRAGIndex(
        tmp_path,
        llm=llm or ScriptedLLM(),
        embedder=HashingEmbedder(64),
        config=IndexConfig(**{**FAST, **config}),
        extractor="llm",
    )


def rows(store: Path, sql: str) -> list[tuple]:
    """Rows of the committed state of the store in ``store`` (read-only)."""
    conn = sqlite3.connect(f"file:{store / 'pathrag.sqlite'}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def snapshot(index: PathRAGIndex) -> dict:
    """Everything an index holds, order-insensitively."""
    g = index.graph
    return {
        "entities": sorted(e.model_dump_json() for e in g.iter_entities()),
        "relations": sorted(r.model_dump_json() for r in g.iter_relations()),
        "vectors": {
            name: sorted((i, idx.get(i).text) for i in idx.ids()) for name, idx in index.vector_indexes.items()
        },
        "documents": {k: v.chunks for k, v in index.documents.items()},
    }


# -- merging across chunks and documents ---------------------------------------------------------


async def test_insert_merges_entities_and_relations_across_chunks_and_documents():
    index = make()
    first = await index.ainsert([DOC_A])
    assert (first.documents, first.chunks, first.chunks_extracted) == (1, 2, 2)
    second = await index.ainsert([DOC_B])
    mara = index.graph.get_entities(["MARA"])["MARA"]
    assert mara.type == "person"  # 2 × person beat 1 × pilot
    assert mara.description == "Harbour pilot. Sails at night. Pilot of the Gull."
    assert set(mara.source_ids) == {chunk_id(c) for c in DOC_A.chunks + DOC_B.chunks}
    home = index.graph.get_relations([("MARA", "SALTMERE")])[("MARA", "SALTMERE")]
    assert home.pair == ("MARA", "SALTMERE")  # undirected identity: B's SALTMERE->MARA merged in
    assert home.weight == 9.0 and home.keywords == ("home", "birthplace")
    assert home.description == "Mara lives in Saltmere. Mara was born in Saltmere."
    assert second.entities == 3 and second.relations == 2  # what B touched: MARA, SALTMERE, GULL + 2 links
    assert index.graph.get_entities(["GULL"])["GULL"].type == "object"


async def test_relation_endpoints_without_entity_records_are_created():
    index = make()
    await index.ainsert([Document(text="LINK Ida | Wall | Ida designed the wall. | design | 7")])
    ida = index.graph.get_entities(["IDA", "WALL"])
    assert set(ida) == {"IDA", "WALL"} and ida["WALL"].description == ""
    assert ida["IDA"].source_ids == (chunk_id("LINK Ida | Wall | Ida designed the wall. | design | 7"),)


async def test_directed_relation_identity_keeps_both_directions():
    index = make(directed_relations=True)
    await index.ainsert([DOC_A, DOC_B])
    pairs = {r.pair for r in index.graph.iter_relations()}
    assert {("MARA", "SALTMERE"), ("SALTMERE", "MARA")} <= pairs


async def test_long_descriptions_are_summarised_once():
    llm = ScriptedLLM()
    chunks = tuple(f"ENTITY Mara | person | Fact number {i} about Mara and her many voyages." for i in range(8))
    index = make(llm=llm, summary_threshold_tokens=40)
    summary = await index.ainsert([Document(id="d", chunks=chunks)])
    assert index.graph.get_entities(["MARA"])["MARA"].description.startswith("SUMMARY of 8 descriptions")
    assert summary.llm_calls == 8 * 2 + 1  # extraction + gleaning per chunk, one summary
    again = await index.ainsert([Document(id="e", text="ENTITY Gull | object | A boat.")])
    assert again.llm_calls == 2  # MARA untouched: no new summary


# -- calls, cache, concurrency, retries, failures ------------------------------------------------


async def test_calls_per_chunk_are_one_plus_gleanings_with_early_stop():
    llm = ScriptedLLM()
    chunk = "ENTITY Mara | person | Pilot.\nLATE Gull | object | Her boat."
    index = make(llm=llm, extraction=ExtractionConfig(max_gleaning=3))
    await index.ainsert([chunk])
    # first answer, a gleaning that finds GULL, a gleaning that finds nothing new → stop
    assert llm.calls == 3
    assert set(index.graph.get_entities(["MARA", "GULL"])) == {"MARA", "GULL"}
    no_glean = ScriptedLLM()
    await make(llm=no_glean, extraction=ExtractionConfig(max_gleaning=0)).ainsert([chunk])
    assert no_glean.calls == 1


async def test_reinsert_of_unchanged_documents_makes_zero_calls(tmp_path):
    llm = ScriptedLLM()
    index = make(tmp_path, llm)
    await index.ainsert([DOC_A, DOC_B])
    calls = llm.calls
    again = await index.ainsert([DOC_A, DOC_B])
    assert (again.llm_calls, again.unchanged, again.documents, llm.calls) == (0, 2, 0, calls)
    reopened = make(tmp_path, llm)
    assert (await reopened.ainsert([DOC_B, DOC_A])).llm_calls == 0
    assert llm.calls == calls


async def test_cache_serves_same_chunks_in_a_new_document(tmp_path):
    llm = ScriptedLLM()
    index = make(tmp_path, llm)
    await index.ainsert([DOC_A])
    renamed = Document(id="a-copy", chunks=DOC_A.chunks)
    result = await index.ainsert([renamed])
    assert result.llm_calls == 0 and result.chunks == 2  # chunks known by content
    index.delete(["a"])
    assert index.graph.get_entities(["MARA"])  # still held by the copy


async def test_llm_cache_answers_repeated_prompts_and_can_be_disabled(tmp_path):
    llm = ScriptedLLM()
    text = "ENTITY Mara | person | Pilot."
    first = make(tmp_path / "x", llm)
    await first.ainsert([Document(id="1", text=text)])
    first.delete(["1"])  # the chunk is gone, but its answers stay cached
    redo = await first.ainsert([Document(id="1", text=text)])
    assert (redo.llm_calls, redo.cache_hits) == (0, 2)
    no_cache = make(tmp_path / "y", llm, cache=False)
    await no_cache.ainsert([Document(id="1", text=text)])
    no_cache.delete(["1"])
    assert (await no_cache.ainsert([Document(id="1", text=text)])).llm_calls == 2
    assert rows(tmp_path / "y", "SELECT COUNT(*) FROM llm_cache") == [(0,)]
    assert rows(tmp_path / "x", "SELECT COUNT(*) FROM llm_cache") == [(2,)]


async def test_concurrency_limit_is_honoured():
    llm = ScriptedLLM(delay=0.01)
    docs = [Document(id=str(i), text=f"ENTITY E{i} | concept | Thing {i}.") for i in range(20)]
    await make(llm=llm, max_concurrency=3).ainsert(docs)
    assert llm.max_in_flight == 3


async def test_transient_errors_are_retried_then_succeed():
    llm = ScriptedLLM(fail_times={"flaky": 2})
    summary = await make(llm=llm).ainsert([Document(id="f", text="ENTITY Flaky | concept | flaky source.")])
    assert summary.failures == [] and summary.llm_calls == 4  # 2 failures + extraction + gleaning
    assert make(llm=llm).llm is not None


async def test_a_chunk_that_keeps_failing_is_reported_and_skipped_then_retried_later(tmp_path):
    llm = ScriptedLLM(always_fail=("BROKEN",))
    index = make(tmp_path, llm, max_attempts=2)
    doc = Document(id="d", chunks=("ENTITY Good | concept | Fine.", "ENTITY Bad | concept | BROKEN text."))
    summary = await index.ainsert([doc, DOC_A])
    assert [f.chunk_id for f in summary.failures] == [chunk_id(doc.chunks[1])]
    assert summary.failures[0].document_ids == ("d",) and "ConnectionError" in summary.failures[0].error
    assert set(index.graph.get_entities(["GOOD", "BAD", "MARA"])) == {"GOOD", "MARA"}
    llm.always_fail = ()
    retry = await index.ainsert([doc, DOC_A])
    assert retry.unchanged == 1 and retry.chunks_extracted == 1 and retry.llm_calls == 2
    assert set(index.graph.get_entities(["GOOD", "BAD"])) == {"GOOD", "BAD"}


async def test_changed_document_replaces_its_old_version():
    index = make()
    await index.ainsert([Document(id="d", text="ENTITY Old | concept | Gone soon.")])
    await index.ainsert([Document(id="d", text="ENTITY New | concept | Here now.")])
    assert set(index.graph.get_entities(["OLD", "NEW"])) == {"NEW"}
    assert len(index.chunk_index) == 1


# -- delete ---------------------------------------------------------------------------------------


async def test_delete_rebuilds_survivors_without_llm_calls(tmp_path):
    llm = ScriptedLLM()
    index = make(tmp_path, llm)
    await index.ainsert([DOC_A, DOC_B])
    calls = llm.calls
    result = await index.adelete(["b", "nope"])
    assert llm.calls == calls and result.llm_calls == 0
    assert result.missing == ["nope"] and result.documents == 1
    assert "GULL" not in index.graph.get_entities(["GULL"])
    mara = index.graph.get_entities(["MARA"])["MARA"]
    assert mara.description == "Harbour pilot. Sails at night."
    home = index.graph.get_relations([("MARA", "SALTMERE")])[("MARA", "SALTMERE")]
    assert home.weight == 6.0 and home.keywords == ("home",)
    assert result.entities_removed == 1 and result.relations_removed == 1


async def test_delete_reorients_a_relation_whose_first_record_went_away():
    index = make()
    await index.ainsert([Document(id="1", text="LINK X | Y | x to y | k | 1")])
    await index.ainsert([Document(id="2", text="LINK Y | X | y to x | k | 2")])
    assert [r.pair for r in index.graph.iter_relations()] == [("X", "Y")]
    await index.adelete(["1"])
    assert [(r.pair, r.weight) for r in index.graph.iter_relations()] == [(("Y", "X"), 2.0)]


WORDS = ["ALPHA", "BETA", "GAMMA", "DELTA", "EPSILON"]
facts = st.lists(
    st.one_of(
        st.builds(
            lambda n, d: f"ENTITY {n} | {d} | {n} note {d}.",
            st.sampled_from(WORDS),
            st.sampled_from(["person", "place"]),
        ),
        st.builds(
            lambda a, b, w: f"LINK {a} | {b} | {a} with {b} ({w}). | k{w} | {w}",
            st.sampled_from(WORDS),
            st.sampled_from(WORDS),
            st.integers(1, 9),
        ),
    ),
    min_size=1,
    max_size=4,
)
documents = st.lists(facts.map("\n".join), min_size=1, max_size=3).map(tuple)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a_chunks=documents, b_chunks=documents)
def test_insert_a_insert_b_delete_b_equals_insert_a(a_chunks, b_chunks):
    a, b = Document(id="A", chunks=a_chunks), Document(id="B", chunks=b_chunks)
    alone = make(summary_threshold_tokens=12)
    alone.insert([a])
    churned = make(summary_threshold_tokens=12)
    churned.insert([a])
    churned.insert([b])
    result = churned.delete(["B"])
    assert snapshot(churned) == snapshot(alone)
    assert result.llm_calls == 0


# -- persistence and crashes -----------------------------------------------------------------------


async def test_persistence_round_trip(tmp_path):
    index = make(tmp_path)
    await index.ainsert([DOC_A, DOC_B])
    index.close()
    reopened = make(tmp_path)
    assert snapshot(reopened) == snapshot(index)
    assert reopened.entity_index.query("MARA pilot", 2) == index.entity_index.query("MARA pilot", 2)
    assert find_key_paths(reopened.graph, ["GULL", "TIDE BOARD"]) == find_key_paths(index.graph, ["GULL", "TIDE BOARD"])
    # one file (plus SQLite's write-ahead log while the store is open, and the writers' lock file)
    assert set(os.listdir(tmp_path)) - {"pathrag.sqlite-wal", "pathrag.sqlite-shm", "pathrag.lock"} == {
        "pathrag.sqlite"
    }


async def test_save_to_another_directory_makes_a_complete_copy(tmp_path):
    llm = ScriptedLLM()
    index = make(llm=llm)  # in memory
    await index.ainsert([DOC_A, DOC_B])
    with pytest.raises(ValueError, match="no directory"):
        index.save()
    index.save(tmp_path / "copy")
    copy = make(tmp_path / "copy", llm)
    assert snapshot(copy) == snapshot(index)
    calls = llm.calls
    copy.delete(["b"])
    assert (await copy.ainsert([DOC_B])).llm_calls == 0 and llm.calls == calls  # the cache came along
    assert index.directory is None


async def test_crash_mid_insert_then_rerun_completes_and_pays_only_the_rest(tmp_path):
    docs = [
        Document(id=str(i), text=f"ENTITY N{i} | concept | Node {i}.\nLINK N{i} | HUB | n{i} joins. | k | 2")
        for i in range(6)
    ]
    clean = make(tmp_path / "clean")
    await clean.ainsert(docs)
    crashing = ScriptedLLM(crash_on_call=7)  # mid-way through the 12 calls (6 chunks × 2)
    index = make(tmp_path / "crash", crashing, max_concurrency=1)
    with pytest.raises(Crash):
        await index.ainsert(docs)
    index.close()
    saved = rows(tmp_path / "crash", "SELECT COUNT(*) FROM chunks")[0][0]
    answered = crashing.calls - 1  # every call before the crash returned, and its answer was cached
    survivor = ScriptedLLM()
    rerun = make(tmp_path / "crash", survivor)
    summary = await rerun.ainsert(docs)
    assert summary.documents == 6 and summary.chunks_extracted == 6 - saved < 6
    assert survivor.calls == 12 - answered  # nothing answered before the crash is paid for again
    assert snapshot(rerun) == snapshot(clean)


KILL_SCRIPT = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, {tests!r})
    from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
    from fakes import ScriptedLLM
    docs = [Document(id=str(i),
                     text=f"ENTITY N{{i}} | concept | Node {{i}}.\\nLINK N{{i}} | HUB | n{{i}} joins. | k | 2")
            for i in range(40)]
    index = PathRAGIndex(sys.argv[1], llm=ScriptedLLM(delay=0.02), embedder=HashingEmbedder(64),
                         config=IndexConfig(max_concurrency=2), extractor="llm")
    asyncio.run(index.ainsert(docs))
    print("finished")
""")


def test_sigkill_mid_insert_then_rerun_completes(tmp_path):
    store = tmp_path / "store"
    script = tmp_path / "insert.py"
    script.write_text(KILL_SCRIPT.format(tests=str(Path(__file__).parents[1])))
    proc = subprocess.Popen([sys.executable, str(script), str(store)], stdout=subprocess.PIPE, text=True)

    def saved() -> int:
        try:
            return rows(store, "SELECT COUNT(*) FROM chunks")[0][0]
        except sqlite3.Error:  # not created yet
            return 0

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and saved() < 10:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the insert finished before it could be killed"
    assert rows(store, "SELECT COUNT(*) FROM documents") == [(0,)]  # the commit never started
    saved = rows(store, "SELECT COUNT(*) FROM chunks")[0][0]
    assert 10 <= saved < 40

    docs = [
        Document(id=str(i), text=f"ENTITY N{i} | concept | Node {i}.\nLINK N{i} | HUB | n{i} joins. | k | 2")
        for i in range(40)
    ]
    llm = ScriptedLLM()
    rerun = make(store, llm)
    summary = rerun.insert(docs)
    assert summary.documents == 40 and summary.failures == []
    assert summary.chunks_extracted == 40 - saved  # every saved extraction is reused
    clean = make(tmp_path / "clean")
    clean.insert(docs)
    assert snapshot(rerun) == snapshot(clean)
    assert {d for (d,) in rows(store, "SELECT id FROM documents")} == set(map(str, range(40)))


# -- bad input -------------------------------------------------------------------------------------


async def test_bad_input_is_a_clear_error_or_an_empty_result():
    index = make()
    assert (await index.ainsert([])).documents == 0
    assert (await index.ainsert(["   ", Document(text="")])).documents == 0
    with pytest.raises(TypeError, match="pathrag.Document or str"):
        await index.ainsert([42])
    with pytest.raises(ValueError, match="JSON-serialisable"):
        await index.ainsert([Document(text="x", metadata={"when": object()})])
    with pytest.raises(ValueError, match="embedder"):
        PathRAGIndex(llm=ScriptedLLM())
    with pytest.raises(ValueError, match="no llm"):
        await PathRAGIndex(embedder=HashingEmbedder()).ainsert(["ENTITY A | b | c"])
    assert (await index.adelete("missing")).missing == ["missing"]


def test_sync_insert_works_inside_a_running_event_loop():
    import asyncio

    async def inside():
        index = make()
        return index.insert([DOC_A])  # a sync call from async code must not call asyncio.run in this loop

    assert asyncio.run(inside()).documents == 1


def test_entity_and_relation_models_round_trip_through_chunk_records(tmp_path):
    index = make(tmp_path)
    index.insert([DOC_A])
    lines = [unpack_records(records) for (records,) in rows(tmp_path, "SELECT records FROM chunks")]
    assert all(Entity.model_validate(e) for line in lines for e in line["entities"])
    assert all(Relation.model_validate(r) for line in lines for r in line["relations"])
