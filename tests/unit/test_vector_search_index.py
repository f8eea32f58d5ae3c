"""The embedded store's search index (pathrag.sqlite.ann): a saved HNSW index plus the changes since, kept
in step through the vector log, always answering as exact search over the caller's snapshot does."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from pathrag import HashingEmbedder
from pathrag.sqlite import SQLiteStore, SQLiteVectorIndex
from pathrag.sqlite import ann as ann_module
from pathrag.sqlite import fold as fold_module
from pathrag.sqlite.ann import KeyedMatrix, saved_indexes
from pathrag.vectors.base import VectorItem

pytest.importorskip("usearch")
from usearch.index import Index, MetricKind  # noqa: E402

METRICS = {"l2sq": MetricKind.L2sq, "cos": MetricKind.Cos}

WORDS = [f"w{i}" for i in range(300)]
EMBEDDER = HashingEmbedder(64)
SMALL = 64 * 40  # an index folds changes into a saved file once 40 rows of 64 numbers changed


@pytest.fixture(autouse=True)
def brute_force(monkeypatch: pytest.MonkeyPatch) -> None:
    """Saved indexes searched by brute force: these tests check the bookkeeping around the HNSW graph
    (changes since the file, snapshots, damage), so that its approximation cannot make them flaky; the
    graph's recall has its own test below and is measured in benchmarks/vector_scale.py."""
    monkeypatch.setattr("pathrag.sqlite.ann.BRUTE_FORCE", True)


def items(rng: random.Random, ids: range, tag: str = "") -> list[VectorItem]:
    return [VectorItem(f"e{i}", " ".join(rng.choices(WORDS, k=5)) + tag, {"i": i}) for i in ids]


def hits(index: SQLiteVectorIndex, query: str, k: int = 8) -> list[tuple[str, float]]:
    return [(h.id, round(h.score, 5)) for h in index.query(query, k)]


def queries(rng: random.Random, n: int = 30) -> list[str]:
    return [" ".join(rng.choices(WORDS, k=3)) for _ in range(n)]


def pair(directory: Path, limit: int = SMALL) -> tuple[SQLiteVectorIndex, SQLiteVectorIndex]:
    """An index through the saved HNSW file, and one that always searches exactly, on one store."""
    store = SQLiteStore(directory)
    return (
        SQLiteVectorIndex(store, "entities", EMBEDDER, exact_limit=limit),
        SQLiteVectorIndex(store, "entities", EMBEDDER, exact_limit=10**12),
    )


def test_keyed_matrix_adds_replaces_and_removes() -> None:
    m = KeyedMatrix(2)
    m.add([1, 2, 3], np.array([[1, 0], [0, 1], [0.5, 0.75]], dtype="<f4"))
    m.add([2], np.array([[-1, 0]], dtype="<f4"))  # replaced in place
    m.remove([1, 99])
    assert len(m) == 2 and 1 not in m
    assert sorted(m.search(np.array([1, 0], dtype="<f4"), 1)) == [3]
    keys, matrix = m.items()
    assert dict(zip(keys.tolist(), matrix.tolist(), strict=True)) == {3: [0.5, 0.75], 2: [-1, 0]}


def test_keyed_matrix_keeps_its_rows_when_room_is_reserved() -> None:
    m = KeyedMatrix(2)
    m.add([1], np.array([[1, 0]], dtype="<f4"))
    m.reserve(100)
    m.add(list(range(2, 102)), np.tile(np.array([[0, 1]], dtype="<f4"), (100, 1)))
    m.reserve(10)  # room enough already: nothing moves
    keys, matrix = m.items()
    assert len(m) == 101 and keys[0] == 1 and matrix[0].tolist() == [1, 0] and matrix[1:].tolist() == [[0, 1]] * 100
    assert m.search(np.array([1, 0], dtype="<f4"), 1) == [1]


def test_searches_through_a_saved_index_equal_exact_search_through_writes(tmp_path: Path) -> None:
    rng = random.Random(0)
    ann, exact = pair(tmp_path)
    ann.upsert(items(rng, range(200)))
    asked = queries(rng)
    assert [hits(ann, q) for q in asked] == [hits(exact, q) for q in asked]  # from the rows, while it folds
    ann.catch_up()
    assert [seq for seq, _ in saved_indexes(tmp_path, "entities")] == [ann._index.base_seq]
    assert [hits(ann, q) for q in asked] == [hits(exact, q) for q in asked]  # through the saved index
    ann.delete([f"e{i}" for i in range(0, 200, 3)])
    ann.upsert(items(rng, range(1, 200, 3), " changed"))
    ann.upsert(items(rng, range(200, 230)))
    assert [hits(ann, q) for q in asked] == [hits(exact, q) for q in asked]
    ann.catch_up()
    assert len(saved_indexes(tmp_path, "entities")) == 1  # older files go once a new one is in place
    assert [hits(ann, q) for q in asked] == [hits(exact, q) for q in asked]


def test_a_read_after_a_write_replays_the_log_instead_of_reloading(tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(1)
    ann, exact = pair(tmp_path)
    ann.upsert(items(rng, range(120)))
    ann.query("w1", 3), exact.query("w1", 3)
    monkeypatch.setattr(type(ann._index), "_load", lambda *a: pytest.fail("the space was reloaded"))
    ann.upsert(items(rng, range(120, 125)))
    ann.delete(["e3"])
    assert hits(ann, "w1 w2") == hits(exact, "w1 w2")
    assert ann._index.seq == ann.store.read("SELECT MAX(seq) FROM vector_log")[0][0]


def test_a_new_process_opens_the_saved_index_and_answers_the_same(tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(2)
    ann, exact = pair(tmp_path)
    ann.upsert(items(rng, range(150)))
    ann.catch_up()  # folds into a saved file
    ann.upsert(items(rng, range(150, 160)))  # and changes after it, replayed from the log
    asked = queries(rng)
    expected = [hits(exact, q) for q in asked]
    ann.store.close()
    reopened, _ = pair(tmp_path)
    built = []
    monkeypatch.setattr(type(reopened._index), "_build", lambda self, plan: built.append(1))
    assert [hits(reopened, q) for q in asked] == expected
    assert reopened._index.segments and not built  # opened, not rebuilt


@pytest.mark.parametrize(
    "damage",
    [
        "garbage",
        "cut",
        "other store",
        "newer than the store",
        "manifest not json",
        "manifest names another file",
        "manifest's scale not a number",
        "manifest without a scale",
    ],
)
def test_a_saved_index_that_disagrees_with_the_store_is_rebuilt(tmp_path: Path, damage: str) -> None:
    rng = random.Random(3)
    ann, exact = pair(tmp_path / "a")
    ann.upsert(items(rng, range(150)))
    ann.catch_up()
    ((seq, manifest),) = saved_indexes(tmp_path / "a", "entities")
    path = tmp_path / "a" / f"pathrag-entities.{seq}.0.usearch"  # its one segment
    if damage == "garbage":
        path.write_bytes(os.urandom(path.stat().st_size))
    elif damage == "cut":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "other store":  # same log position, other vectors
        other, _ = pair(tmp_path / "b")
        other.upsert(items(random.Random(99), range(150)))
        other.catch_up()
        ((other_seq, _),) = saved_indexes(tmp_path / "b", "entities")
        assert other_seq == seq
        path.write_bytes((tmp_path / "b" / path.name).read_bytes())
    elif damage == "newer than the store":  # as after restoring an older copy of the store beside its index
        manifest.rename(manifest.with_name(f"pathrag-entities.{seq + 500}.usearch.json"))
    elif damage == "manifest not json":
        manifest.write_text("{not json")
    elif damage == "manifest's scale not a number":
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "scale": "NaN"}))
    elif damage == "manifest without a scale":  # this version's copies, taken for usearch's own cast
        manifest.write_text(json.dumps({"segments": json.loads(manifest.read_text())["segments"]}))
    else:  # a manifest is read, not trusted: it names only this space's segment files beside it
        (tmp_path / "elsewhere.usearch").write_bytes(path.read_bytes())
        manifest.write_text(json.dumps(["../elsewhere.usearch"]))
    asked = queries(rng)
    expected = [hits(exact, q) for q in asked]
    ann.store.close()
    reopened, _ = pair(tmp_path / "a")
    assert [hits(reopened, q) for q in asked] == expected
    reopened.catch_up()
    assert [s.held for s in reopened._index.segments] == [True]  # rebuilt, not opened
    assert [hits(reopened, q) for q in asked] == expected


def test_a_big_space_is_saved_in_segments_and_a_fold_rewrites_only_those_it_touches(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr("pathrag.sqlite.ann.SEGMENT_LIMIT", 60)
    rng = random.Random(11)
    ann, exact = pair(tmp_path)
    ann.upsert(items(rng, range(200)))
    ann.catch_up()
    asked = queries(rng)
    assert [hits(ann, q) for q in asked] == [hits(exact, q) for q in asked]
    segments = ann._index.segments
    assert [len(s.index) for s in segments] == [60, 60, 60, 20]
    assert [s.held for s in segments] == [False, False, False, True]  # only the one taking additions
    first = {s.path.name for s in segments if s.path is not None}
    assert len(first) == 4

    ann.upsert(items(rng, range(200, 245)))  # additions only: the last segment fills, a new one starts
    ann.catch_up()
    names = [s.path.name for s in ann._index.segments if s.path is not None]
    assert [len(s.index) for s in ann._index.segments] == [60, 60, 60, 60, 5]
    assert names[:3] == sorted(first)[:3] and not set(names[3:]) & first  # the full ones untouched

    ann.delete([f"e{i}" for i in range(0, 20)] + [f"e{i}" for i in range(230, 240)])  # in the first and the fourth
    ann.upsert(items(rng, range(300, 340)))
    ann.catch_up()
    after = [s.path.name for s in ann._index.segments if s.path is not None]
    assert after[1:3] == names[1:3] and after[0] != names[0] and after[3] != names[3]
    assert [hits(ann, q) for q in asked] == [hits(exact, q) for q in asked]
    on_disk = sorted(p.name for p in tmp_path.glob("pathrag-entities.*"))
    assert on_disk == sorted([*after, saved_indexes(tmp_path, "entities")[0][1].name])  # older files gone

    ann.store.close()
    reopened, exact = pair(tmp_path)
    assert [hits(reopened, q) for q in asked] == [hits(exact, q) for q in asked]
    assert len(reopened._index.segments) == len(after) and not any(s.held for s in reopened._index.segments)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_walks_segments_with_threads_of_its_own() -> None:
    assert list(ann_module._searchers().map(abs, [-1, -2])) == [1, 2]  # the parent's threads are running
    pid = os.fork()
    if pid == 0:  # the child: threads inherited from the parent are gone, and work given them never runs
        code = 1
        try:
            code = 0 if ann_module._searchers().submit(abs, -3).result(timeout=10) == 3 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_every_graph_a_writer_adds_to_is_built_with_the_build_settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("pathrag.sqlite.ann.SEGMENT_LIMIT", 60)
    rng = random.Random(13)
    ann, _ = pair(tmp_path)
    build = ann_module.BUILD
    ann.upsert(items(rng, range(70)))
    ann.catch_up()
    assert [len(s.index) for s in ann._index.segments] == [60, 10]
    fresh = ann._index.segments[-1].index
    assert (fresh.connectivity, fresh.expansion_add) == (build["connectivity"], build["expansion_add"])
    ann.store.close()
    reopened, _ = pair(tmp_path)  # memory-mapped: usearch does not save the width an add searches
    reopened.upsert(items(rng, range(70, 110)))  # enough to fold: into the last segment, made writable
    reopened.catch_up()
    last = reopened._index.segments[-1]
    assert last.held and len(last.index) == 50
    assert (last.index.connectivity, last.index.expansion_add) == (build["connectivity"], build["expansion_add"])


def test_a_new_spaces_graphs_compare_by_the_metric_and_a_saved_space_keeps_its_own(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("pathrag.sqlite.ann.SEGMENT_LIMIT", 60)
    rng = random.Random(17)
    asked = queries(rng)
    for metric, given in (("l2sq", None), ("cos", "cos")):  # given: what the space's saved segments were built with
        ann, exact = pair(tmp_path / metric)
        if given:
            monkeypatch.setattr("pathrag.sqlite.ann.METRIC", given)
        ann.upsert(items(rng, range(70)))
        ann.catch_up()
        monkeypatch.setattr("pathrag.sqlite.ann.METRIC", "l2sq")  # what this version gives a new space
        ann.store.close()
        reopened, exact = pair(tmp_path / metric)
        reopened.upsert(items(rng, range(70, 160)))  # fills the last segment and starts a new one
        reopened.catch_up()
        segments = reopened._index.segments
        assert len(segments) == 3 and {s.index.metric for s in segments} == {METRICS[metric]}
        assert [hits(reopened, q) for q in asked] == [hits(exact, q) for q in asked]


def test_a_new_spaces_graphs_hold_rounded_int8_copies_and_a_space_saved_without_checksums_is_rebuilt(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr("pathrag.sqlite.ann.SEGMENT_LIMIT", 60)
    rng = random.Random(19)
    asked = queries(rng)
    ann, exact = pair(tmp_path)
    ann.upsert(items(rng, range(70)))
    ann.catch_up()
    scale = ann_module.INT8_STEPS * EMBEDDER.dimensions**0.5
    assert ann._index.scale == scale

    def held(index, segment) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # keys, their int8 copies, rows
        found, rows = index._vectors([int(k) for k in segment.index.keys])
        keys = np.asarray(found, dtype=np.uint64)
        return keys, np.asarray(segment.index.get(keys, dtype="i8")), rows

    for segment in ann._index.segments:
        _, copies, rows = held(ann._index, segment)
        assert np.array_equal(copies, np.clip(np.rint(rows * scale), -127, 127))
    # the same space as an earlier version saved it: its graphs hold usearch's own cast, its manifest lists them
    ann.store.close()
    (_, manifest), names = saved_indexes(tmp_path, "entities")[0], []
    for segment in ann._index.segments:
        assert segment.path is not None
        keys, _, rows = held(ann._index, segment)
        cast = Index(ndim=EMBEDDER.dimensions, metric="l2sq", dtype="i8")
        cast.add(keys, rows)
        cast.save(str(segment.path))
        names.append(segment.path.name)
    manifest.write_text(json.dumps(names))
    reopened, exact = pair(tmp_path)
    assert [hits(reopened, q) for q in asked] == [hits(exact, q) for q in asked]
    # its files cannot be checked before usearch maps them (issue 39): rebuilt once, with the store's own cast
    reopened.upsert(items(rng, range(70, 160)))
    reopened.catch_up()
    assert reopened._index.refused == 70
    assert reopened._index.scale == scale and [len(s.index) for s in reopened._index.segments] == [60, 60, 40]
    for segment in reopened._index.segments:
        _, copies, rows = held(reopened._index, segment)
        assert np.array_equal(copies, np.clip(np.rint(rows * scale), -127, 127))
    assert json.loads(saved_indexes(tmp_path, "entities")[0][1].read_text())["scale"] == scale
    assert [hits(reopened, q) for q in asked] == [hits(exact, q) for q in asked]


def test_a_saved_space_whose_segments_mix_metrics_is_rebuilt(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("pathrag.sqlite.ann.SEGMENT_LIMIT", 60)
    rng = random.Random(18)
    ann, _ = pair(tmp_path)
    ann.upsert(items(rng, range(70)))
    ann.catch_up()
    ann.store.close()
    (seq, _), first = saved_indexes(tmp_path, "entities")[0], ann._index.segments[0].path
    assert first is not None
    saved = Index.restore(str(first))
    keys = np.asarray(saved.keys, dtype=np.uint64)
    mixed = Index(ndim=EMBEDDER.dimensions, metric="cos", dtype="i8")  # the same vectors, compared otherwise
    mixed.add(keys, np.asarray(saved.get(keys, dtype="f32"), dtype="<f4"))
    mixed.save(str(first))
    reopened, exact = pair(tmp_path)
    asked = queries(rng)
    assert [hits(reopened, q) for q in asked] == [hits(exact, q) for q in asked]
    assert reopened._index.refused == seq  # not trusted: rebuilt from the rows, in one metric
    reopened.catch_up()
    assert {s.index.metric for s in reopened._index.segments} == {METRICS["l2sq"]}
    reopened.store.close()
    again, _ = pair(tmp_path)
    assert [hits(again, q) for q in asked] == [hits(exact, q) for q in asked] and again._index.refused == -1


def test_a_reader_on_an_older_snapshot_sees_its_own_state(tmp_path: Path) -> None:
    rng = random.Random(4)
    ann, exact = pair(tmp_path)
    ann.upsert(items(rng, range(150)))
    asked = queries(rng, 10)
    before = [hits(exact, q) for q in asked]
    old_reader_ready, written, seen = threading.Event(), threading.Event(), []

    def old_reader() -> None:
        with ann.store.snapshot():
            ann.store.read("SELECT 1")
            old_reader_ready.set()
            written.wait(10)
            seen.extend(hits(ann, q) for q in asked)

    thread = threading.Thread(target=old_reader)
    thread.start()
    old_reader_ready.wait(10)
    ann.delete([f"e{i}" for i in range(0, 150, 2)])
    ann.upsert(items(rng, range(150, 200), " w1 w2 w3"))
    hits(ann, "w1")  # this process's index moves past the old reader's snapshot
    written.set()
    thread.join()
    assert seen == before


def test_the_log_stays_bounded_and_a_process_behind_it_reloads(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("pathrag.sqlite.vectors._LOG_KEEP", 50)
    rng = random.Random(5)
    ann, exact = pair(tmp_path, limit=10**12)  # no saved index: trimmed to the last entries
    ann.query("w1", 3)
    for start in range(0, 600, 20):
        ann.upsert(items(rng, range(start, start + 20)))
    ((count,),) = ann.store.read("SELECT COUNT(*) FROM vector_log")
    assert count <= 2 * 50 + 20
    assert hits(ann, "w1 w2") == hits(exact, "w1 w2")


def test_a_read_only_store_searches_without_writing_a_file(tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(6)
    ann, exact = pair(tmp_path, limit=10**12)
    ann.upsert(items(rng, range(150)))
    expected = hits(exact, "w1 w2")
    ann.store.close()
    real_access = os.access  # as on a read-only mount (see test_store_hostile.py)
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if mode & os.W_OK else real_access(p, mode, **kw))
    reader, _ = pair(tmp_path)
    assert reader.store.read_only
    assert hits(reader, "w1 w2") == expected
    assert saved_indexes(tmp_path, "entities") == [] and not reader._index.segments


def test_the_log_records_every_change_of_the_vectors_table(tmp_path: Path) -> None:
    ann, _ = pair(tmp_path)
    ann.upsert(items(random.Random(7), range(3)))
    ann.upsert([VectorItem("e1", "changed text", {})])  # INSERT OR REPLACE: its delete counts too
    ann.delete(["e2"])
    db = sqlite3.connect(tmp_path / "pathrag.sqlite")
    rows = db.execute("SELECT rowid FROM vectors").fetchall()
    net: dict[int, int] = {}
    for key, added in db.execute("SELECT key, added FROM vector_log ORDER BY seq"):
        net[key] = added
    assert sorted(k for k, a in net.items() if a) == sorted(r[0] for r in rows)


def test_a_process_takes_a_newer_saved_index_instead_of_folding_itself(tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(8)
    writer, exact = pair(tmp_path)
    reader, _ = pair(tmp_path)  # as another process: its own store connections and index
    writer.upsert(items(rng, range(30)))
    assert hits(reader, "w1") == hits(exact, "w1")  # small: exact, from memory
    writer.upsert(items(rng, range(30, 200)))
    writer.catch_up()  # the writer folds the changes into a new saved file
    assert saved_indexes(tmp_path, "entities")
    monkeypatch.setattr(type(reader._index), "_build", lambda self, plan: pytest.fail("folded again"))
    asked = queries(rng)
    assert [hits(reader, q) for q in asked] == [hits(exact, q) for q in asked]
    assert reader._index.base_seq == writer._index.base_seq


def test_a_commit_brings_the_writers_search_indexes_up_to_date(tmp_path: Path) -> None:
    from pathrag import Document, PathRAGIndex

    from ..fakes import ScriptedLLM

    index = PathRAGIndex(tmp_path, llm=ScriptedLLM(), embedder=EMBEDDER)
    index.insert([Document(id="a", text="ENTITY Mara | person | Harbour pilot.")])
    index._backend.wait_folded()  # taken in by the store's own thread
    for name, vectors in index.vector_indexes.items():
        assert isinstance(vectors, SQLiteVectorIndex)
        ((head,),) = vectors.store.read("SELECT MAX(seq) FROM vector_log WHERE space = ?", (name,))
        assert vectors._index.seq == (head or 0), name  # taken in at the commit, not at a query


def test_the_log_is_never_trimmed_past_the_writers_own_index(tmp_path: Path, monkeypatch) -> None:
    # While a writer's fold runs in its own thread there is no new saved file yet; trimming the log to its
    # last few entries then would make the writer reload the whole space at its next catch-up.
    monkeypatch.setattr("pathrag.sqlite.vectors._LOG_KEEP", 5)
    rng = random.Random(12)
    ann, exact = pair(tmp_path)
    ann.upsert(items(rng, range(20)))
    ann.catch_up()
    loads = []
    load = ann_module.SpaceIndex._load
    monkeypatch.setattr(ann_module.SpaceIndex, "_load", lambda self, *a: (loads.append(a), load(self, *a))[1])
    for start in range(20, 80, 15):  # each write trims the log
        ann.upsert(items(rng, range(start, start + 15)))
    ((floor,),) = ann.store.read("SELECT value FROM meta WHERE key = ?", (ann_module.trim_key("entities"),))
    assert 0 < int(floor) <= ann._index.seq  # trimmed, but not past the writer's position
    ann.catch_up()
    assert not loads  # replayed from the log
    asked = queries(rng)
    assert [hits(ann, q) for q in asked] == [hits(exact, q) for q in asked]


def rows_read_back(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The keys whose rows search indexes read from the store from now on (filled as they are read)."""
    read: list[int] = []
    vectors = ann_module.SpaceIndex._vectors

    def watched(self: ann_module.SpaceIndex, keys: list[int]) -> tuple[list[int], np.ndarray]:
        read.extend(keys)
        return vectors(self, keys)

    monkeypatch.setattr(ann_module.SpaceIndex, "_vectors", watched)
    return read


def held_rows_match_the_store(index: SQLiteVectorIndex) -> int:
    """Assert that the vectors the index holds apart are the store's rows under the same keys; how many."""
    held = index._index.added
    assert held is not None
    keys, vectors = held.items()
    stored = dict(index.store.read("SELECT rowid, vector FROM vectors WHERE space = ?", (index.space,)))
    for key, vector in zip(keys.tolist(), vectors, strict=True):
        assert np.array_equal(np.frombuffer(stored[key], dtype="<f4"), vector), key
    return len(keys)


def test_a_writer_that_keeps_its_writes_takes_them_in_without_reading_them_back(tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(13)
    ann, exact = pair(tmp_path, limit=10**12)  # every row held apart, in the matrix the writes go to
    ann.keep_written()
    ann.upsert(items(rng, range(30)))
    ann.catch_up()  # the first catch-up loads the space
    read = rows_read_back(monkeypatch)
    ann.upsert(items(rng, range(20, 60), " again"))  # ten replaced, thirty added
    ann.delete(["e0"])
    ann.catch_up()
    assert read == [] and ann._index.written == []  # taken from memory, then let go
    assert held_rows_match_the_store(ann) == 59
    asked = queries(rng)
    assert [hits(ann, q) for q in asked] == [hits(exact, q) for q in asked]


def test_a_writers_first_catch_up_replays_a_whole_log_and_reads_every_row_where_it_is_not_whole(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr("pathrag.sqlite.vectors._LOG_KEEP", 5)  # each of these writes would trim the log
    rng = random.Random(15)
    upgraded, _ = pair(tmp_path / "upgraded", limit=10**12)
    upgraded.upsert(items(rng, range(10)))
    upgraded.store.execute("DELETE FROM vector_log")  # as the upgrade to a vector log leaves older rows
    read, batches = rows_read_back(monkeypatch), ann_module._batches
    monkeypatch.setattr(ann_module, "_batches", lambda rows: (read.append(-1), batches(rows))[1])
    for name, rows, reads in (("fresh", 30, 0), ("upgraded", 40, 1)):
        ann, _ = pair(tmp_path / name, limit=10**12)
        ann.keep_written()
        for start in range(10, 40, 10):  # three commits before the index first loads: none may trim the log
            ann.upsert(items(rng, range(start, start + 10)))
        ann.catch_up()
        assert held_rows_match_the_store(ann) == rows, name
        assert len(read) == reads, name  # the whole space read back only where the log misses rows
        assert ann._index.written == []


def test_the_vectors_of_a_write_that_rolled_back_are_never_taken_in(tmp_path: Path) -> None:
    # A rolled-back write gives its log positions back (AUTOINCREMENT is rolled back too): the next write
    # reuses them for other vectors, so what the first one kept must never be taken for them.
    rng = random.Random(14)
    ann, _ = pair(tmp_path, limit=10**12)
    ann.keep_written()
    ann.upsert(items(rng, range(10)))
    ann.catch_up()
    with pytest.raises(ZeroDivisionError), ann.store.transaction():
        ann.upsert(items(rng, range(10, 20), " lost"))
        ((lost,),) = ann.store.wread("SELECT MAX(seq) FROM vector_log")
        _ = 1 / 0
    ann.upsert(items(rng, range(10, 20), " kept"))
    ((kept,),) = ann.store.read("SELECT MAX(seq) FROM vector_log")
    assert kept == lost  # the same positions, other vectors
    ann.catch_up()
    assert held_rows_match_the_store(ann) == 20


def test_a_writing_store_hands_each_commits_vectors_to_its_search_indexes(tmp_path: Path, monkeypatch) -> None:
    from pathrag import Document, PathRAGIndex

    from ..fakes import ScriptedLLM

    index = PathRAGIndex(tmp_path, llm=ScriptedLLM(), embedder=EMBEDDER)
    index.insert([Document(id="a", text="ENTITY Mara | person | Harbour pilot.")])
    index._backend.wait_folded()
    read = rows_read_back(monkeypatch)
    text = "ENTITY Mara | person | Harbour pilot of Saltmere.\nLINK Mara | Saltmere | Her home port. | home | 7"
    index.insert([Document(id="b", text=text)])
    index._backend.wait_folded()
    assert read == []
    for vector_index in index.vector_indexes.values():
        assert isinstance(vector_index, SQLiteVectorIndex)
        assert held_rows_match_the_store(vector_index) == len(vector_index)
    index.close()


def test_a_commit_is_folded_in_the_stores_own_thread_and_close_waits_for_it(tmp_path: Path, monkeypatch) -> None:
    from pathrag import Document, PathRAGIndex

    from ..fakes import ScriptedLLM

    monkeypatch.setattr("pathrag.sqlite.ann.EXACT_LIMIT", 1)  # every change is worth a saved file
    folded: list[str] = []
    build, catch_up = ann_module.SpaceIndex._build, ann_module.SpaceIndex.catch_up
    read: list[str] = []

    def watched_catch_up(self: ann_module.SpaceIndex, ndim: int) -> None:
        read.append(threading.current_thread().name)
        catch_up(self, ndim)

    def slow_build(self: ann_module.SpaceIndex, plan: object) -> object:
        threading.Event().wait(0.2)  # still folding when insert returns
        folded.append(threading.current_thread().name)
        return build(self, plan)

    monkeypatch.setattr(ann_module.SpaceIndex, "_build", slow_build)
    monkeypatch.setattr(ann_module.SpaceIndex, "catch_up", watched_catch_up)
    index = PathRAGIndex(tmp_path, llm=ScriptedLLM(), embedder=EMBEDDER)
    text = "ENTITY Mara | person | Harbour pilot.\nLINK Mara | Saltmere | Her home port. | home | 7"
    index.insert([Document(id="a", text=text)])
    assert len(folded) < 3  # insert returned before the three spaces were folded
    index.close()
    assert len(folded) == 3 and all(name.startswith("pathrag-fold") for name in folded)
    assert len(read) == 3 and all(name.startswith("pathrag-fold") for name in read)  # the rows read there too
    for space in ("entities", "relations", "chunks"):
        assert saved_indexes(tmp_path, space), space  # saved before close returned


def test_the_hnsw_graph_finds_nearly_every_exact_neighbour(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("pathrag.sqlite.ann.BRUTE_FORCE", False)
    rng = random.Random(9)
    ann, exact = pair(tmp_path, limit=64 * 100)
    words = [f"t{i}" for i in range(3000)]
    ann.upsert([VectorItem(f"e{i}", " ".join(rng.choices(words, k=4)), {}) for i in range(1500)])
    ann.catch_up()
    asked = [" ".join(rng.choices(words, k=2)) for _ in range(100)]
    found = sum(len({h for h, _ in hits(ann, q, 10)} & {h for h, _ in hits(exact, q, 10)}) for q in asked)
    assert sum(len(s.index) for s in ann._index.segments) == 1500
    assert found / sum(len(hits(exact, q, 10)) for q in asked) >= 0.95


def test_without_usearch_every_space_is_searched_exactly(tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(10)
    ann, exact = pair(tmp_path / "a")
    ann.upsert(items(rng, range(150)))
    ann.query("w1", 3)  # a saved index exists, made while usearch was there
    monkeypatch.setattr("pathrag.sqlite.ann._usearch", lambda: None)  # a platform without its wheel
    asked = queries(rng)
    expected = [hits(exact, q) for q in asked]
    ann.store.close()
    reopened, _ = pair(tmp_path / "a")
    reopened.upsert(items(rng, range(150, 200)))
    expected_after = [hits(exact, q) for q in asked]
    assert [hits(reopened, q) for q in asked] == expected_after != expected
    assert not reopened._index.segments  # the saved file is not read without usearch; nothing folded


@pytest.mark.skipif(not hasattr(os, "fork"), reason="kills a forked child")
@pytest.mark.parametrize("files_written", [0, 1, 2, 3])
@pytest.mark.parametrize("midway", [False, True], ids=["between files", "before a rename"])
def test_a_kill_while_a_fold_writes_its_files_leaves_indexes_that_answer_as_the_store(
    tmp_path: Path, monkeypatch, files_written: int, midway: bool
) -> None:
    """A fold writes the segments it touches, each aside and renamed, then the list of all: a process
    killed between any of those files (here: 3 segments, then the list), or with one written aside and not
    yet renamed, leaves the last complete list in force, and the next fold removes what the dead one left."""
    monkeypatch.setattr("pathrag.sqlite.ann.SEGMENT_LIMIT", 60)
    rng = random.Random(12)
    ann, exact = pair(tmp_path)
    ann.upsert(items(rng, range(150)))
    ann.catch_up()  # saved as segments of 60, 60 and 30
    ann.delete([f"e{i}" for i in range(10)])  # in the first segment
    ann.upsert(items(rng, range(150, 200)))  # fill the last one and start another
    ann.store.close()
    pid = os.fork()
    if pid == 0:  # the child folds those changes and is killed after writing ``files_written`` files
        try:
            child = SQLiteVectorIndex(SQLiteStore(tmp_path), "entities", EMBEDDER, exact_limit=SMALL)
            written, real = [0], fold_module.write_aside

            def dying(path: Path, write) -> None:
                if written[0] == files_written and midway:  # the file complete, under its temporary name
                    real(path, lambda tmp: (write(tmp), os.kill(os.getpid(), signal.SIGKILL)))
                if written[0] == files_written:
                    os.kill(os.getpid(), signal.SIGKILL)
                written[0] += 1
                real(path, write)

            fold_module.write_aside = dying
            child.catch_up()
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    ((_, manifest),) = saved_indexes(tmp_path, "entities")  # the dead fold wrote no list
    in_force = {manifest.name, *(e[0] for e in json.loads(manifest.read_text())["segments"])}
    left = {p.name for p in tmp_path.glob("*pathrag-entities.*")} - in_force
    assert len(left) == files_written + midway  # its files, named apart from those in force
    reopened, exact = pair(tmp_path)
    asked = queries(rng)
    assert [hits(reopened, q) for q in asked] == [hits(exact, q) for q in asked]
    reopened.upsert(items(rng, range(300, 345)))
    reopened.catch_up()  # a fold of its own: the dead one's files go
    ((_, manifest),) = saved_indexes(tmp_path, "entities")
    on_disk = {p.name for p in tmp_path.glob("*pathrag-entities.*")}
    assert on_disk == {manifest.name, *(e[0] for e in json.loads(manifest.read_text())["segments"])}
    assert [hits(reopened, q) for q in asked] == [hits(exact, q) for q in asked]


def test_the_segment_benchmark_runs_and_reports_every_cast_metric_split_width_and_k() -> None:
    script = Path(__file__).parents[2] / "benchmarks" / "hnsw_segments.py"
    args = ["--vectors", "2048", "--segments", "1,2", "--queries", "5", "--metrics", "cos,l2sq"]
    args += ["--casts", "steps,usearch"]
    out = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, check=True).stdout
    cells = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ")]
    rows = [row for row in cells if row[2].strip().isdigit()]  # the header's third cell is "segments"
    widths = ("k + m", "k + 2m", "2(k + m)")
    assert [tuple(r[n].strip() for n in (0, 1, 2, 5, 6)) for r in rows] == [
        (cast, metric, segments, width, k)
        for cast in ("steps", "usearch")
        for metric in ("cos", "l2sq")
        for segments in ("1", "2")
        for width in widths
        for k in ("10", "500")
    ]
    assert all(0.9 <= float(r[8]) <= 1.0 for r in rows)  # 2,048 vectors: every walk finds nearly all
