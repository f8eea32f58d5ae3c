"""Graph reads of the embedded store in few round trips (issue 25): a hop of a path search is a constant
number of statements, whatever the graph and the frontier, and reads the kept degrees (format 3) with the
same answer as counting them; the passage ranking reads what it reached in a few statements a round; the full
check compares the kept degrees with a recount."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pathrag import HashingEmbedder, NetworkXGraphStore, PathRAGIndex, Relation
from pathrag.models import Entity
from pathrag.query.passage_rank import PassageRank, named_source, ranked_ids, similar_source, spread
from pathrag.query.steps import run
from pathrag.sqlite import SQLiteGraphStore, SQLiteStore, SQLiteVectorIndex
from pathrag.vectors.base import VectorHit, VectorItem


def rel(source: str, target: str) -> Relation:
    return Relation(source=source, target=target, description=f"{source} and {target}", keywords=("k",))


def random_relations(size: int, seed: int) -> list[Relation]:
    """About 3 relations per node, a hub (N0) related to a third of the nodes, self-loops, and pairs
    recorded both ways round (kept as two relations on a store with ``directed_relations``)."""
    rng = random.Random(seed)
    pairs = {(f"N{rng.randrange(size)}", f"N{rng.randrange(size)}") for _ in range(3 * size)}
    pairs |= {("N0", f"N{n}") for n in rng.sample(range(1, size), size // 3)}
    pairs |= {(f"N{n}", "N0") for n in rng.sample(range(1, size), size // 10)}
    return [rel(a, b) for a, b in sorted(pairs)]


def graph_of(tmp_path: Path, relations: list[Relation], *, directed_relations: bool = False) -> SQLiteGraphStore:
    store = SQLiteStore(tmp_path)
    graph = SQLiteGraphStore(store, directed_relations=directed_relations)
    graph.upsert_relations(relations)
    graph.upsert_entities([Entity(name="LONER"), Entity(name="N1")])
    return graph


@contextmanager
def statements(store: SQLiteStore) -> Iterator[list[str]]:
    """The statements run on the store's reader inside one snapshot (where every read of a retrieval runs)."""
    seen: list[str] = []
    with store.snapshot():
        conn = store._r()
        conn.set_trace_callback(seen.append)
        try:
            yield seen
        finally:
            conn.set_trace_callback(None)


def requests_of(graph: SQLiteGraphStore, rng: random.Random, count: int) -> dict[str, int | None]:
    names = sorted(e.name for e in graph.iter_entities())
    return {name: rng.choice([None, 0, 1, 2, 5, 50]) for name in rng.sample([*names, "GHOST"], count)}


@pytest.mark.parametrize("size", [30, 600])
def test_a_hop_is_two_statements_whatever_the_graph(tmp_path: Path, size: int) -> None:
    graph = graph_of(tmp_path, random_relations(size, seed=size))
    rng = random.Random(1)
    for directed in (False, True):
        for count in (1, 5, 25):
            requests = requests_of(graph, rng, count)
            keep = set(rng.sample(sorted(requests), count // 2)) | {"N0"}
            with statements(graph.store) as seen:
                graph.neighborhoods(requests, directed=directed, keep=keep)
            assert len(seen) <= 2, seen  # the requested nodes with degrees; their neighbours with degrees
    names = {e.name: 0 for e in graph.iter_entities()}  # what `pathrag stats` asks: every degree
    with statements(graph.store) as seen:
        hoods = graph.neighborhoods(names)
    assert len(seen) == 1 and len(hoods) == len(names)
    graph.store.close()


@pytest.mark.parametrize("directed_relations", [False, True])
def test_neighbourhoods_from_kept_degrees_equal_counted_ones_and_networkx(
    tmp_path: Path, directed_relations: bool
) -> None:
    relations = random_relations(300, seed=3)
    graph = graph_of(tmp_path, relations, directed_relations=directed_relations)
    memory = NetworkXGraphStore(directed_relations=directed_relations)
    memory.upsert_relations(relations)
    memory.upsert_entities([Entity(name="LONER"), Entity(name="N1")])
    counting = SQLiteGraphStore(SQLiteStore(tmp_path), directed_relations=directed_relations)
    counting.store.format_version = 2  # as a store that could not be upgraded: degrees counted per hop
    assert graph.kept_degrees and not counting.kept_degrees
    rng = random.Random(4)
    for directed in (False, True):
        for count in (1, 10, 60, 302):
            requests = requests_of(graph, rng, count)
            keep = set(rng.sample([*requests, "N0", "N7", "GHOST"], min(count, 20)))
            kept = graph.neighborhoods(requests, directed=directed, keep=keep)
            with statements(counting.store) as seen:
                assert counting.neighborhoods(requests, directed=directed, keep=keep) == kept
            assert len(seen) <= 4  # the entities, their degrees, the pairs, the neighbours' degrees
            assert memory.neighborhoods(requests, directed=directed, keep=keep) == kept
    graph.delete_entities(["N0"])  # the hub gone: every degree it gave is taken back
    requests = dict.fromkeys((e.name for e in graph.iter_entities()), None)
    assert graph.neighborhoods(requests) == counting.neighborhoods(requests)
    graph.store.close()
    counting.store.close()


class PerItem:
    """The store's chunk index behind the plain VectorIndex protocol: texts read one ``get`` at a time."""

    def __init__(self, index: SQLiteVectorIndex) -> None:
        self.index = index
        self.gets = 0

    def query(self, text: str, k: int) -> list[VectorHit]:
        return [VectorHit(h.id, h.score, h.metadata) for h in self.index.query(text, k)]  # hits without text

    def get(self, item_id: str) -> VectorItem | None:
        self.gets += 1
        return self.index.get(item_id)


def passages_store(tmp_path: Path) -> tuple[SQLiteGraphStore, SQLiteVectorIndex, list[str]]:
    rng = random.Random(5)
    store = SQLiteStore(tmp_path)
    graph = SQLiteGraphStore(store)
    index = SQLiteVectorIndex(store, "chunks", HashingEmbedder(32))
    sources: dict[str, list[str]] = {}
    relations, items = [], []
    for i in range(150):
        names = [f"E{n}" for n in rng.sample(range(60), 4)]
        cid = f"c{i}"
        for name in names:
            sources.setdefault(name, []).append(cid)
        relations += [rel(a, b) for a, b in zip(names, names[1:], strict=False)]
        items.append(VectorItem(cid, f"{cid}: " + " and ".join(names), {"entities": names}))
    graph.upsert_relations(relations)
    graph.upsert_entities([Entity(name=n, source_ids=tuple(s)) for n, s in sources.items()])
    index.upsert(items)
    return graph, index, sorted(sources)


def test_passage_ranking_reads_in_few_statements_with_the_same_ranking(tmp_path: Path) -> None:
    graph, index, names = passages_store(tmp_path)
    plain = PerItem(index)

    def ranked(index: Any) -> tuple[list[str], PassageRank]:
        hits = index.query("E1 and E2", 60)
        flow = PassageRank(alpha=0.8)
        flow.add_source(similar_source(hits))
        flow.add_source(named_source(graph.get_entities(names[:5])))
        run(spread(flow, graph, index))
        return ranked_ids(flow, [hit.id for hit in hits]), flow

    with statements(graph.store) as seen:
        batched, flow = ranked(index)
    read = len(flow.neighbours)  # entities and passages read from the store
    assert len(batched) >= 60 and len(flow.passages) >= 60 and read >= 100
    assert len(seen) <= read / 4, (len(seen), read)  # batched per round, not one read per node reached
    with graph.store.snapshot():
        assert ranked(plain)[0] == batched
    assert plain.gets >= 60  # the plain index answered one get per passage, with the same ranking
    graph.store.close()


def test_the_full_check_compares_kept_degrees_with_a_recount(tmp_path: Path) -> None:
    index = PathRAGIndex(tmp_path, embedder=HashingEmbedder(32))
    assert index.check() == []
    index.close()
    db = sqlite3.connect(tmp_path / "pathrag.sqlite", isolation_level=None)
    db.execute("INSERT INTO relations VALUES ('A', 'B', '', '[]', 1.0, '[]'), ('B', 'C', '', '[]', 1.0, '[]')")
    db.execute("UPDATE degrees SET degree = 7 WHERE name = 'B'")
    db.execute("INSERT INTO degrees VALUES ('Z', 1, 1)")
    index = PathRAGIndex(tmp_path, embedder=HashingEmbedder(32), check_on_open=False)
    found = [p for p in index.check() if "degrees" in p]
    assert found == [
        "2 entities whose kept degrees differ from a recount of the relations, e.g. 'B' (kept 7/1, counted 2/1)"
    ]
    index._backend.store.format_version = 2  # type: ignore[union-attr]  # an older store keeps none: nothing to check
    assert index._backend.check_degrees() == []
    index.close()
