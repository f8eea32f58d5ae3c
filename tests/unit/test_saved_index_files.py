"""The saved search files of a big space, damaged or swapped (issue 39 rows 2-4 and 6, items 2 and 3): every
file is checked before usearch maps it (sizes and checksums of the segments, the manifest's own checksum, its
scale against the store's rule, its list of segments), so that a garbled graph never crashes a reader, a
garbled vector or an edited manifest never answers wrongly, and a FIFO or a device never hangs one; each is
rebuilt from the rows. Two processes never fold at once, and a fold that cannot map back a file it wrote
keeps its copy in memory."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest

from pathrag.sqlite import SQLiteStore, SQLiteVectorIndex
from pathrag.sqlite import ann as ann_module
from pathrag.sqlite import segments as segments_module
from pathrag.sqlite.ann import saved_indexes
from pathrag.sqlite.lock import FOLD_LOCK_FILE
from pathrag.sqlite.vectors import _units

from .test_vector_search_index import EMBEDDER, SMALL, hits, items, pair, queries

pytest.importorskip("usearch")
pytestmark = pytest.mark.reliability

ROOT = Path(__file__).parents[2]


def from_rows(index: SQLiteVectorIndex, query: str, k: int = 8) -> list[tuple[str, float]]:
    """The ``k`` best hits as exact search over the store's rows finds them, as :func:`hits` gives them: no
    saved file involved (an index built to search exactly still opens the saved files it finds)."""
    vector = _units([index.embedder.embed([query])[0]])[0]
    rows = index.store.read("SELECT id, vector FROM vectors WHERE space = ?", (index.space,))
    scored = sorted((-float(np.frombuffer(blob, dtype="<f4") @ vector), item) for item, blob in rows)
    return [(item, round(-score, 5)) for score, item in scored[:k]]


def agrees_with_exact_search(ann: SQLiteVectorIndex, asked: list[str]) -> None:
    """Every hit carries its item's true score (no garbled vector, no edited scale answers), and the hits
    hold at least 95 % of exact search's top 8 over all queries: a walk of a sound graph may miss a near
    neighbour now and then (the graphs are built by several threads), a damaged file answers wrongly far
    more often than that."""
    found = total = 0
    for query in asked:
        exact = dict(from_rows(ann, query, k=10**6))
        got, best = hits(ann, query), from_rows(ann, query)
        assert all(exact.get(item) == score for item, score in got), (query, got)
        found += len({item for item, _ in got} & {item for item, _ in best})
        total += len(best)
    assert found >= 0.95 * total, (found, total)


def saved_store(directory: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Path]]:
    """A space of 200 vectors saved in segments of 60, 60, 60 and 20 (graphs walked, not compared one by
    one): its manifest and segment files."""
    monkeypatch.setattr(ann_module, "SEGMENT_LIMIT", 60)
    ann, _ = pair(directory)
    ann.upsert(items(random.Random(5), range(200)))
    ann.catch_up()
    ann.store.close()
    ((_, manifest),) = saved_indexes(directory, "entities")
    segments = sorted(directory.glob("pathrag-entities.*.*.usearch"), key=lambda p: int(p.name.split(".")[2]))
    assert len(segments) == 4
    return manifest, segments


def rewrite(manifest: Path, change) -> None:
    """Edit a manifest and give it a right checksum again (what a damaged disk does not do, a person might)."""
    content = json.loads(manifest.read_text())
    body = change({k: v for k, v in content.items() if k != "crc32"})
    body["crc32"] = zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    manifest.write_text(json.dumps(body))


def answers_as_exact_search_and_rebuilds(directory: Path) -> None:
    ann, _ = pair(directory)
    asked = queries(random.Random(7))
    agrees_with_exact_search(ann, asked)
    assert ann._index.refused >= 0  # the saved files were refused, and the space searched from its rows
    ann.store.close()


GARBLE_SCRIPT = """
import json, random, sys
sys.path[:0] = [{root!r}, {root!r} + "/shared"]
from pathlib import Path
from pathrag.sqlite import ann as ann_module
from tests.unit.test_vector_search_index import hits, pair, queries
from tests.unit.test_saved_index_files import from_rows
ann_module.SEGMENT_LIMIT = 60
wrong = 0
for trial in sys.argv[1:]:
    ann, _ = pair(Path(trial))
    asked = queries(random.Random(7), 10)
    wrong += [hits(ann, q) for q in asked] != [from_rows(ann, q) for q in asked]
    ann.store.close()
print(json.dumps({{"wrong": wrong}}))
"""


def test_eight_garbled_bytes_anywhere_in_a_segment_never_crash_a_reader_nor_answer_wrongly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe of row 2: 8 random bytes garbled at 30 random places of the first segment (its header,
    graph and vectors), each in a copy of the store searched by a reader walking the graphs (a crash ends
    the reader: exit 139, the test fails)."""
    _, segments = saved_store(tmp_path / "base", monkeypatch)
    data = segments[0].read_bytes()
    rng = random.Random(39)
    trials = []
    for n in range(30):
        trial = tmp_path / f"t{n}"
        trial.mkdir()
        for f in (tmp_path / "base").iterdir():
            (trial / f.name).write_bytes(f.read_bytes())
        at = rng.randrange(len(data) - 8)
        garbled = bytearray(data)
        garbled[at : at + 8] = rng.randbytes(8)
        (trial / segments[0].name).write_bytes(garbled)
        trials.append(str(trial))
    run = subprocess.run(
        [sys.executable, "-c", GARBLE_SCRIPT.format(root=str(ROOT)), *trials],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-2000:]}"
    assert json.loads(run.stdout.splitlines()[-1]) == {"wrong": 0}


@pytest.mark.parametrize(
    "damage",
    [
        "a garbled int8 vector",
        "a segment cut short",
        "a segment a symbolic link to its own copy",
        "the manifest's scale edited",
        "the manifest's scale edited, its checksum made right",
        "a segment listed twice",
        "a segment of another space listed",
        "a segment written after the manifest listed",
        "a segment's checksum edited",
        "the manifest garbled",
        "a manifest of an earlier version (no checksums)",
    ],
)
def test_a_damaged_or_edited_file_that_passes_a_sample_is_refused_and_rebuilt_from_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """Row 3: a garbled vector, an edited scale and a segment listed twice passed the old check (row count,
    8 sampled vectors) and answered wrongly; the others test the rest of what a manifest is checked for."""
    manifest, segments = saved_store(tmp_path, monkeypatch)
    if damage == "a garbled int8 vector":
        data = bytearray(segments[1].read_bytes())
        data[200:300] = bytes(100)  # usearch saves the int8 vectors first (60 of 64 bytes), then the graph
        segments[1].write_bytes(data)
    elif damage == "a segment cut short":
        segments[1].write_bytes(segments[1].read_bytes()[:-64])
    elif damage == "a segment a symbolic link to its own copy":
        copy = tmp_path / "elsewhere.usearch"
        copy.write_bytes(segments[1].read_bytes())
        segments[1].unlink()
        segments[1].symlink_to(copy)
    elif damage == "the manifest's scale edited":
        manifest.write_text(manifest.read_text().replace('"scale": ', '"scale": 1'))
    elif damage == "the manifest's scale edited, its checksum made right":
        rewrite(manifest, lambda body: {**body, "scale": body["scale"] * 2})
    elif damage == "a segment listed twice":
        # in place of another of the same size: the row count still agrees, and a sample of its rows too
        rewrite(
            manifest,
            lambda body: {**body, "segments": [body["segments"][0], *body["segments"][0:1], *body["segments"][2:]]},
        )
    elif damage == "a segment of another space listed":
        other = tmp_path / segments[0].name.replace("entities", "relations")
        other.write_bytes(segments[0].read_bytes())
        rewrite(manifest, lambda body: {**body, "segments": [[other.name, *body["segments"][0][1:]]]})
    elif damage == "a segment written after the manifest listed":
        later = segments[0].with_name(segments[0].name.replace(".usearch", "").rsplit(".", 2)[0] + ".99999.0.usearch")
        later.write_bytes(segments[0].read_bytes())
        rewrite(manifest, lambda body: {**body, "segments": [[later.name, *body["segments"][0][1:]]]})
    elif damage == "a segment's checksum edited":
        rewrite(manifest, lambda body: {**body, "segments": [[*body["segments"][0][:2], 12345], *body["segments"][1:]]})
    elif damage == "the manifest garbled":
        data = bytearray(manifest.read_bytes())
        data[len(data) // 2] ^= 0x01
        manifest.write_bytes(data)
    else:
        manifest.write_text(json.dumps([p.name for p in segments]))
    answers_as_exact_search_and_rebuilds(tmp_path)


@pytest.mark.parametrize("place", ["manifest", "segment"])
@pytest.mark.parametrize("kind", ["a FIFO", "/dev/zero"])
def test_a_fifo_or_a_device_in_place_of_a_saved_file_never_hangs_a_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, place: str, kind: str
) -> None:
    """Row 6: every search hung on a FIFO, and read ``/dev/zero`` as a manifest until memory ran out."""
    manifest, segments = saved_store(tmp_path, monkeypatch)
    target = manifest if place == "manifest" else segments[0]
    target.unlink()
    if kind == "a FIFO":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    done: list[bool] = []
    search = threading.Thread(target=lambda: (answers_as_exact_search_and_rebuilds(tmp_path), done.append(True)))
    search.daemon = True
    search.start()
    search.join(60)
    assert done == [True]


def test_stats_check_reads_every_saved_file_and_names_a_damaged_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row 2: ``stats --check`` exited 0 on a segment whose graph was garbled."""
    manifest, segments = saved_store(tmp_path, monkeypatch)
    index = SQLiteVectorIndex(SQLiteStore(tmp_path), "entities", EMBEDDER, exact_limit=SMALL)
    assert index.check_files() == []
    data = bytearray(segments[2].read_bytes())
    data[200:208] = b"garbled!"
    segments[2].write_bytes(data)
    problems = index.check_files()
    assert len(problems) == 1 and manifest.name in problems[0] and "fails its checksum" in problems[0], problems
    assert "rebuilt from the rows" in problems[0]


def test_a_fold_that_cannot_map_back_a_file_it_wrote_keeps_its_copy_and_every_search_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row 4: a file deleted between a fold's save and its map-back (another process's fold removing it)
    left a segment of ``None``, and every later search of the process failed."""
    monkeypatch.setattr(ann_module, "SEGMENT_LIMIT", 60)
    ann, _ = pair(tmp_path)
    real = ann_module.SpaceIndex._save

    def save_then_lose_a_file(self, segments, touched, scale) -> bool:
        saved = real(self, segments, touched, scale)
        segments[0].path.unlink()  # gone before it is mapped back
        return saved

    monkeypatch.setattr(ann_module.SpaceIndex, "_save", save_then_lose_a_file)
    ann.upsert(items(random.Random(8), range(200)))
    ann.catch_up()
    assert ann._index.segments[0].held and ann._index.segments[0].index is not None
    asked = queries(random.Random(9))
    for _ in range(3):
        agrees_with_exact_search(ann, asked)


def test_a_process_never_folds_while_another_one_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fcntl = pytest.importorskip("fcntl")
    monkeypatch.setattr(ann_module, "SEGMENT_LIMIT", 60)
    ann, _ = pair(tmp_path)
    other = os.open(tmp_path / FOLD_LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(other, fcntl.LOCK_EX)  # another process's fold under way
    try:
        ann.upsert(items(random.Random(10), range(200)))
        ann.catch_up()
        asked = queries(random.Random(11))
        agrees_with_exact_search(ann, asked)  # from the rows meanwhile
        assert saved_indexes(tmp_path, "entities") == [] and not ann._index.segments
    finally:
        os.close(other)
    ann.catch_up()
    assert len(saved_indexes(tmp_path, "entities")) == 1 and len(ann._index.segments) == 4


def test_a_fold_never_removes_a_file_a_newer_manifest_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A manifest newer than this process's fold (another process ahead of it) keeps every file it lists."""
    manifest, segments = saved_store(tmp_path, monkeypatch)
    seq = int(manifest.name.split(".")[1])
    newer = manifest.with_name(f"pathrag-entities.{seq + 1000}.usearch.json")
    newer.write_bytes(manifest.read_bytes())  # lists the same files; the store has not reached it
    ann, _ = pair(tmp_path)
    ann.delete([f"e{i}" for i in range(0, 200, 2)])  # touches every segment: each is rewritten
    ann.catch_up()
    assert all(p.exists() for p in segments) and newer.exists()
    asked = queries(random.Random(12))
    agrees_with_exact_search(ann, asked)


def test_opening_the_saved_files_reads_each_once_more_and_maps_them(tmp_path: Path, monkeypatch) -> None:
    """What the checks cost: the segments a new process opens are read through once (for their
    checksums) and then memory-mapped, never loaded into memory."""
    _, segments = saved_store(tmp_path, monkeypatch)
    read: list[int] = []
    real = segments_module.crc32_of
    monkeypatch.setattr(segments_module, "crc32_of", lambda fd, size: (read.append(size), real(fd, size))[1])
    ann, _ = pair(tmp_path)
    ann.query("w1 w2", 3)
    assert sorted(read) == sorted(p.stat().st_size for p in segments)
    assert not any(s.held for s in ann._index.segments)
    ann.store.close()


def test_a_manifest_lists_each_segment_with_its_size_and_checksum(tmp_path: Path, monkeypatch) -> None:
    manifest, segments = saved_store(tmp_path, monkeypatch)
    content = json.loads(manifest.read_text())
    assert content["format"] == ann_module.MANIFEST_FORMAT
    assert content["scale"] == ann_module.int8_scale(EMBEDDER.dimensions)
    assert content["segments"] == [[p.name, p.stat().st_size, zlib.crc32(p.read_bytes())] for p in segments]


def test_a_search_never_folds_itself_and_answers_from_the_rows_while_a_fold_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row 9: a reader's first query after a commit of 10^5 vectors took 16-18 s, folding them itself. A
    search now starts the fold in a thread of its own; meanwhile searches, through writes and deletions of
    the very rows being folded, answer as exact search does, and so do they once the fold is taken in."""
    monkeypatch.setattr(ann_module, "SEGMENT_LIMIT", 60)
    rng = random.Random(13)
    ann, _ = pair(tmp_path)
    ann.upsert(items(rng, range(200)))
    release, building, threads = threading.Event(), threading.Event(), []
    real = ann_module.SpaceIndex._build

    def held_build(self, plan):
        threads.append(threading.current_thread())
        building.set()
        assert release.wait(60)
        return real(self, plan)

    monkeypatch.setattr(ann_module.SpaceIndex, "_build", held_build)
    asked = queries(rng)
    agrees_with_exact_search(ann, asked)  # the first search: from the rows
    assert building.wait(60) and threads[0] is not threading.current_thread()
    ann.delete([f"e{i}" for i in range(0, 200, 4)])  # rows the fold is taking in
    ann.upsert(items(rng, range(1, 200, 4), " changed"))
    ann.upsert(items(rng, range(200, 230)))
    agrees_with_exact_search(ann, asked)
    assert ann._index.pending is not None and ann._index.stale  # the fold is still under way
    release.set()
    ann._index.wait_folded()
    assert ann._index.pending is None and len(ann._index.segments) == 4
    agrees_with_exact_search(ann, asked)
    ann._index.wait_folded()  # the changes made during the first fold, folded by the next search
    assert all(t.name == "pathrag-fold" and t is not threading.current_thread() for t in threads)
    agrees_with_exact_search(ann, asked)


def test_a_fold_that_fails_gives_its_rows_back_to_the_searches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ann, _ = pair(tmp_path)
    ann.upsert(items(random.Random(14), range(200)))

    def failing_build(self, plan):
        raise RuntimeError("no memory left")

    monkeypatch.setattr(ann_module.SpaceIndex, "_build", failing_build)
    with pytest.raises(RuntimeError):
        ann.catch_up()
    ann.delete(["e1", "e2"])
    asked = queries(random.Random(15))
    agrees_with_exact_search(ann, asked)
    assert ann._index.pending is None and not ann._index.segments and len(ann._index.added) == 198


def test_closing_a_store_stops_a_fold_a_search_started_and_writes_nothing_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann, _ = pair(tmp_path)
    ann.upsert(items(random.Random(16), range(200)))
    release, building = threading.Event(), threading.Event()
    real = ann_module.SpaceIndex._build

    def held_build(self, plan):
        building.set()
        assert release.wait(60)
        return real(self, plan)

    monkeypatch.setattr(ann_module.SpaceIndex, "_build", held_build)
    ann.query("w1", 3)
    assert building.wait(60)
    closing = threading.Thread(target=ann.stop_folding)
    closing.start()
    while not ann._index._stop.is_set():  # asked to stop before the fold adds anything
        closing.join(0.01)
    release.set()
    closing.join(60)
    assert not closing.is_alive() and saved_indexes(tmp_path, "entities") == []
    asked = queries(random.Random(17))
    monkeypatch.setattr(ann_module.SpaceIndex, "fold_soon", lambda self: None)
    agrees_with_exact_search(ann, asked)  # its rows searched again
    assert ann._index.pending is None and len(ann._index.added) == 200
