"""A bulk import streams: importing batch after batch through ``add_records`` holds the records of a few
batches at most, however many were imported before, even when every batch names entities of earlier
ones (a hub, the previous batch's last entity, random earlier entities).

Counted, not timed: every chunk record the store hands out is watched (weakly), and at each read the
records still alive are counted.
"""

from __future__ import annotations

import random
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

import pathrag.index.records as records_module
import pathrag.index.tables as tables_module
from pathrag import Document, Entity, HashingEmbedder, PathRAGIndex, Relation
from pathrag.index.merging import merge_records, relation_key
from pathrag.index.records import ChunkRecord

from ..fakes import ScriptedLLM

BATCH = 200
BATCHES = 7
HUBS = 3


def _batch(number: int) -> tuple[list[Entity], list[Relation]]:
    rng = random.Random(number)
    start = number * BATCH
    entities = [
        Entity(name=f"E{i}", type="thing", description=f"E{i} of batch {number}.", source_ids=(f"p{i // 5}",))
        for i in range(start, start + BATCH)
    ]
    relations = []
    for i in range(start, start + BATCH):
        others = {i - 1 if i else 1, rng.randrange(HUBS) if i % 4 == 0 else rng.randrange(max(1, start))}
        relations += [Relation(source=f"E{i}", target=f"E{o}", description=f"E{i} and E{o}.") for o in others - {i}]
    return entities, relations


class _Watch:
    """Every chunk record read from the store, weakly; at each read, how many records are alive."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.alive: weakref.WeakValueDictionary[int, ChunkRecord] = weakref.WeakValueDictionary()
        self.peak = 0
        fetch = tables_module._fetch_chunks

        def watched(store: Any, ids: list[str] | None) -> dict[str, ChunkRecord]:
            found = fetch(store, ids)
            self.alive.update((id(c), c) for c in found.values())
            self.peak = max(self.peak, self.held())
            return found

        monkeypatch.setattr(tables_module, "_fetch_chunks", watched)
        monkeypatch.setattr(tables_module, "_READ_BUDGET", 1)  # one chunk a query: what a big store does

    def held(self) -> int:
        return _records(list(self.alive.values()))


def _records(chunks: Iterable[ChunkRecord]) -> int:
    return sum(len(c.entities) + len(c.relations) for c in chunks)


def test_import_holds_a_few_batches_at_most(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    watch = _Watch(monkeypatch)
    index = PathRAGIndex(tmp_path / "store", embedder=HashingEmbedder(16))
    per_batch, peaks = 0, []
    try:
        for number in range(BATCHES):
            entities, relations = _batch(number)
            per_batch = max(per_batch, len(entities) + len(relations))
            watch.peak = 0
            summary = index.add_records(f"bulk:{number}", entities, relations)
            assert summary.documents == 1
            peaks.append(watch.peak)
        stats = index.stats()
    finally:
        index.close()
    assert stats["imports"] == BATCHES
    assert stats["records"] >= BATCHES * BATCH
    # every later batch names entities of each earlier one (the hubs are in batch 0), so each reads them
    # all; held at once, the last batch's peak would be about BATCHES batches' records
    assert max(peaks) <= 3 * per_batch, (peaks, per_batch)
    assert peaks[-1] <= peaks[2] + per_batch, peaks  # not growing with what was imported before


def test_streamed_rebuild_merges_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same records imported into a store (chunks streamed one at a time) and into memory (every
    chunk held) give the same graph."""
    monkeypatch.setattr(tables_module, "_READ_BUDGET", 1)
    stored = PathRAGIndex(tmp_path / "store", embedder=HashingEmbedder(16))
    memory = PathRAGIndex(embedder=HashingEmbedder(16))
    try:
        for number in range(4):
            entities, relations = _batch(number)
            stored.add_records(f"bulk:{number}", entities, relations)
            memory.add_records(f"bulk:{number}", entities, relations)
        stored.delete(["bulk:1"])
        memory.delete(["bulk:1"])
        names = [f"E{i}" for i in range(4 * BATCH)] + ["E-missing"]
        assert stored.graph.get_entities(names) == memory.graph.get_entities(names)
        pairs = [(r.source, r.target) for number in range(4) for r in _batch(number)[1]]
        assert stored.graph.get_relations(pairs) == memory.graph.get_relations(pairs)
    finally:
        stored.close()
        memory.close()


class _MatrixEmbedder:
    """Returns one numpy matrix per call (the commit keeps planned vectors as float32 rows of one)."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder(8)

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        return np.asarray(self._inner.embed(texts), dtype=np.float64)

    async def aembed(self, texts: Sequence[str]) -> Any:
        return self.embed(texts)


@pytest.mark.parametrize("in_store", [False, True])
def test_planned_vectors_as_rows_of_one_matrix(tmp_path: Path, in_store: bool) -> None:
    index = PathRAGIndex(tmp_path / "store" if in_store else None, embedder=_MatrixEmbedder())
    try:
        index.add_records("x", [Entity(name="A"), Entity(name="B")], [Relation(source="A", target="B")])
        hits = index.entity_index.query("A", 2)
        assert {hit.metadata["name"] for hit in hits} == {"A", "B"}
        assert [hit.metadata["source"] for hit in index.relation_index.query("A B", 5)] == ["A"]
    finally:
        index.close()


def test_a_later_write_reads_only_the_pieces_of_a_batch_that_mention_its_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pathrag.index.front.RECORDS_PER_PIECE", 50)
    index = PathRAGIndex(tmp_path / "store", embedder=HashingEmbedder(16))
    entities, relations = _batch(0)
    imported = index.add_records("bulk:0", entities, relations)
    pieces = -(-max(len(entities), len(relations)) // 50)
    assert imported.chunks == pieces == len(index.documents["bulk:0"].chunks) > 1
    watch = _Watch(monkeypatch)
    index.add_records("later", [Entity(name="E120", type="thing", description="Seen again.")], [])
    # E120's own piece, and the pieces whose relations end at it: a few of the batch's pieces, not all
    assert 0 < watch.peak <= 3 * (50 + 50)
    assert "Seen again." in index.graph.get_entities(["E120"])["E120"].description
    index.delete(["bulk:0"])
    assert set(index.graph.get_entities(["E120", "E7"])) == {"E120"}
    index.close()


def _chunks_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the chunks every rebuild from now on reads, appended as they are read."""
    read: list[str] = []
    read_chunks = records_module.RecordTables.read_chunks

    def watched(self: Any, cids: list[str]) -> Any:
        read.extend(cids)
        return read_chunks(self, cids)

    monkeypatch.setattr(records_module.RecordTables, "read_chunks", watched)
    return read


def _full_merge(index: PathRAGIndex) -> tuple[dict[str, Entity], dict[tuple[str, str], Relation]]:
    """The graph merged again from every live chunk (what a rebuild of everything would write): chunks in
    the order of their first claim, a relation end cited by the chunks with text naming it."""
    chunks = {cid: index.chunks[cid] for doc in index.documents.values() for cid in doc.chunks if cid in index.chunks}
    order = sorted(chunks, key=lambda cid: min(chunks[cid].refs.items()))
    endpoints: dict[str, list[str]] = {}
    for cid in order:
        for r in chunks[cid].relations:
            for end in (r["source"], r["target"]):
                endpoints.setdefault(end, []).extend([cid] if chunks[cid].text else [])
    entities, relations = merge_records(
        [Entity.model_validate(e) for cid in order for e in chunks[cid].entities],
        [Relation.model_validate(r) for cid in order for r in chunks[cid].relations],
        endpoint_sources=endpoints,
    )
    return {e.name: e for e in entities}, {relation_key(*r.pair): r for r in relations}


@pytest.mark.parametrize("in_store", [False, True])
def test_a_rebuild_that_reads_only_what_can_change_writes_the_full_merge(tmp_path: Path, in_store: bool) -> None:
    """Imports naming other batches' entities as relation ends (earlier, later, not yet imported), texts
    naming them, deletes and re-imports: after each write the graph is the merge of every live chunk."""
    rng = random.Random(5)
    index = PathRAGIndex(tmp_path if in_store else None, llm=ScriptedLLM(), embedder=HashingEmbedder(16))
    names = [f"N{i}" for i in range(40)]

    def imported(number: int) -> tuple[list[Entity], list[Relation]]:
        own = names[number * 8 : number * 8 + 8]
        return (
            [Entity(name=n, type=f"t{number}", description=f"{n} in batch {number}.", source_ids=("p",)) for n in own],
            [Relation(source=n, target=rng.choice(names), description=f"{n} link.", weight=1.0) for n in own],
        )

    def text(number: int) -> str:
        a, b, c = rng.sample(names, 3)
        return f"ENTITY {a} | person | {a} as told.\nLINK {b} | {c} | Met once. | meeting | 3"

    steps = [("add", n) for n in range(5)] + [("text", n) for n in range(3)]
    steps += [("delete", "bulk:1"), ("add", 1), ("delete", "t0"), ("delete", "bulk:3"), ("add", 3), ("add", 0)]
    try:
        for kind, what in steps:
            if kind == "add":
                index.add_records(f"bulk:{what}", *imported(int(what)))
            elif kind == "text":
                index.insert([Document(id=f"t{what}", text=text(int(what)))])
            else:
                index.delete([str(what)])
            entities, relations = _full_merge(index)
            graph = index.graph
            assert {e.name: e for e in graph.iter_entities()} == entities, (kind, what)
            assert {relation_key(*r.pair): r for r in graph.iter_relations()} == relations, (kind, what)
            assert index.check() == []
    finally:
        index.close()


def test_a_later_batch_naming_earlier_entities_only_as_relation_ends_reads_none_of_their_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pathrag.index.front.RECORDS_PER_PIECE", 50)
    index = PathRAGIndex(tmp_path / "store", embedder=HashingEmbedder(16))
    index.add_records("bulk:0", *_batch(0))
    earlier = set(index.documents["bulk:0"].chunks)
    read = _chunks_read(monkeypatch)
    entities, relations = _batch(1)  # its relations end at batch 0's entities, never describe them
    assert {r.target for r in relations} & {e.name for e in _batch(0)[0]}
    index.add_records("bulk:1", entities, relations)
    assert read and not set(read) & earlier
    assert index.graph.get_entities(["E0"])["E0"].description == "E0 of batch 0."
    index.add_records("again", [Entity(name="E7", type="thing", description="Seen again.")], [])
    assert set(read) & earlier  # describing an earlier entity reads its piece
    assert index.graph.get_entities(["E7"])["E7"].description == "Seen again. E7 of batch 0."  # "again" < "bulk:0"
    index.close()


@pytest.mark.parametrize("in_store", [False, True])
def test_a_new_relation_between_names_an_earlier_piece_names_reads_not_that_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_store: bool
) -> None:
    index = PathRAGIndex(tmp_path if in_store else None, embedder=HashingEmbedder(16))
    hub = Entity(name="H", type="hub", description="The hub.")
    index.add_records("bulk:0", [hub], [Relation(source="A", target="B"), Relation(source="A", target="H")])
    (earlier,) = index.documents["bulk:0"].chunks
    read = _chunks_read(monkeypatch)
    # bulk:0 names both B and H, but holds no B-H relation: the graph has none to merge with
    index.add_records("bulk:1", [], [Relation(source="B", target="H", weight=2.0)])
    assert earlier not in read
    index.add_records("bulk:2", [], [Relation(source="H", target="A", weight=5.0)])
    assert earlier in read  # A-H is in the graph: bulk:0 holds a record of it
    assert index.graph.get_relations([("A", "H"), ("B", "H")]) == {
        ("A", "H"): Relation(source="A", target="H", weight=6.0),
        ("B", "H"): Relation(source="B", target="H", weight=2.0),
    }
    assert index.graph.get_entities(["H"])["H"].description == "The hub."
    assert index.check() == []
    index.close()
