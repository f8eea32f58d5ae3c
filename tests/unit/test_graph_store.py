"""The networkx store's own features (wrapping graphs, directed relations, persistence) and
BaseGraphStore's async twins. The GraphStore contract (pathrag.testing) runs on every store in
test_graph_store_contract.py."""

from __future__ import annotations

import asyncio
import json
import os
import threading

import networkx as nx
import pytest

from pathrag import (
    BaseGraphStore,
    Entity,
    GraphStore,
    Neighborhood,
    NetworkXGraphStore,
    Relation,
    as_graph_store,
    find_key_paths,
)
from pathrag.files import atomic_write_text


def build() -> NetworkXGraphStore:
    store = NetworkXGraphStore()
    store.upsert_entities(
        [
            Entity(name="ALICE", type="person", description="A navigator.", source_ids=["c1"]),
            Entity(name="HARBOUR", type="location", description='A port with "quotes" and\nnewlines.'),
        ]
    )
    store.upsert_relations(
        [
            Relation(
                source="ALICE",
                target="HARBOUR",
                description="Alice sails from the harbour.",
                keywords=["sailing", "home port"],
                weight=3,
                source_ids=["c1", "c2"],
            ),
            Relation(source="HARBOUR", target="ÉCLUSE", description="Unicode endpoint, created bare."),
        ]
    )
    return store


def test_is_a_graph_store():
    assert isinstance(NetworkXGraphStore(), GraphStore)
    assert as_graph_store(nx.Graph()).__class__ is NetworkXGraphStore
    store = build()
    assert as_graph_store(store) is store


def test_directed_identity_keeps_both_directions():
    store = NetworkXGraphStore(directed_relations=True)
    store.upsert_relations(
        [Relation(source="A", target="B", description="ab"), Relation(source="B", target="A", description="ba")]
    )
    found = store.get_relations([("A", "B"), ("B", "A")])
    assert (found[("A", "B")].description, found[("B", "A")].description) == ("ab", "ba")


def test_save_and_load_round_trip(tmp_path):
    store = build()
    path = store.save(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "pathrag-graph" and len(data["relations"]) == 2
    loaded = NetworkXGraphStore.load(tmp_path)
    assert list(loaded.iter_entities()) == list(store.iter_entities())
    assert list(loaded.iter_relations()) == list(store.iter_relations())
    assert find_key_paths(loaded, ["ALICE", "ÉCLUSE"]) == find_key_paths(store, ["ALICE", "ÉCLUSE"])
    assert [t for t in os.listdir(tmp_path) if t.endswith(".tmp")] == []


def test_load_missing_directory_is_empty_and_corrupt_file_is_a_clear_error(tmp_path):
    assert len(NetworkXGraphStore.load(tmp_path / "nothing-here")) == 0
    (tmp_path / "graph.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="cannot read graph file"):
        NetworkXGraphStore.load(tmp_path)
    (tmp_path / "graph.json").write_text('{"format": "other"}', encoding="utf-8")
    with pytest.raises(ValueError, match="pathrag-graph"):
        NetworkXGraphStore.load(tmp_path)


def test_atomic_write_keeps_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "graph.json"
    atomic_write_text(target, "old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["graph.json"]


def test_neighborhoods_limits_and_degrees():
    g = nx.DiGraph([("hub", f"x{i}") for i in range(10)] + [("y", "hub"), ("x0", "hub"), ("hub", "hub")])
    store = NetworkXGraphStore(g)
    full = store.neighborhoods({"hub": None})["hub"]
    assert full.degree == 11  # distinct in ∪ out neighbours, self-loop excluded
    assert set(full.neighbors) == {f"x{i}" for i in range(10)} | {"y"}
    assert full.neighbors["x0"] == 1 and full.neighbors["y"] == 1
    limited = store.neighborhoods({"hub": 5}, keep={"y", "x3", "ghost", "hub"})["hub"]
    assert limited.degree == 11 and limited.neighbors == {"y": 1, "x3": 1}
    out_only = store.neighborhoods({"hub": None, "ghost": None}, directed=True)
    assert set(out_only) == {"hub"} and out_only["hub"].degree == 10 and "y" not in out_only["hub"].neighbors


def test_wrapping_rejects_non_graphs():
    with pytest.raises(TypeError):
        NetworkXGraphStore({"a": "b"})  # type: ignore[arg-type]


# -- BaseGraphStore: the async twins of the sync methods ------------------------------------------


class Recording(BaseGraphStore):
    """Records which thread ran each sync method and what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, object, dict]] = []

    def _record(self, name, arg, **kwargs):
        self.calls.append((name, threading.get_ident(), arg, kwargs))

    def neighborhoods(self, requests, *, directed=False, keep=()):
        self._record("neighborhoods", requests, directed=directed, keep=keep)
        return {name: Neighborhood(0, {}) for name in requests}

    def get_entities(self, names):
        self._record("get_entities", names)
        return {name: Entity(name=name) for name in names}

    def get_relations(self, pairs):
        self._record("get_relations", pairs)
        return {pair: Relation(source=pair[0], target=pair[1]) for pair in pairs}

    def upsert_entities(self, entities, *, merge=None):
        self._record("upsert_entities", entities, merge=merge)

    def upsert_relations(self, relations, *, merge=None):
        self._record("upsert_relations", relations, merge=merge)

    def delete_entities(self, names):
        self._record("delete_entities", names)

    def delete_relations(self, pairs):
        self._record("delete_relations", pairs)


class OnTheLoop(Recording):
    async_in_thread = False


async def run_every_twin(store: Recording) -> list:
    merge = lambda old, new: new  # noqa: E731
    return [
        await store.aneighborhoods({"A": None}, directed=True, keep={"B"}),
        await store.aget_entities(n for n in ["A"]),
        await store.aget_relations(p for p in [("A", "B")]),
        await store.aupsert_entities((e for e in [Entity(name="A")]), merge=merge),
        await store.aupsert_relations((r for r in [Relation(source="A", target="B")]), merge=merge),
        await store.adelete_entities(n for n in ["A"]),
        await store.adelete_relations(p for p in [("A", "B")]),
    ]


@pytest.mark.parametrize("cls", [Recording, OnTheLoop])
def test_base_class_async_twins_run_the_sync_methods(cls):
    store = cls()
    answers = asyncio.run(run_every_twin(store))
    assert isinstance(store, GraphStore)
    assert answers == [
        {"A": Neighborhood(0, {})},
        {"A": Entity(name="A")},
        {("A", "B"): Relation(source="A", target="B")},
        None,
        None,
        None,
        None,
    ]
    assert [name for name, *_ in store.calls] == [
        "neighborhoods",
        "get_entities",
        "get_relations",
        "upsert_entities",
        "upsert_relations",
        "delete_entities",
        "delete_relations",
    ]
    here = threading.get_ident()
    assert all((thread != here) is cls.async_in_thread for _, thread, _, _ in store.calls)
    # generators were turned into lists on the caller's side; keyword arguments passed through
    assert all(isinstance(arg, list) for name, _, arg, _ in store.calls if name != "neighborhoods")
    assert store.calls[0][3] == {"directed": True, "keep": {"B"}}
    assert store.calls[3][3]["merge"] is store.calls[4][3]["merge"] is not None


def test_a_store_missing_a_sync_method_cannot_be_made():
    class Partial(BaseGraphStore):
        def neighborhoods(self, requests, *, directed=False, keep=()):
            return {}

    with pytest.raises(TypeError, match="abstract"):
        Partial()  # type: ignore[abstract]


def test_shipped_stores_use_the_base_class_as_documented():
    from pathrag.graphs.cypher import CypherGraphStore

    assert issubclass(NetworkXGraphStore, BaseGraphStore) and NetworkXGraphStore.async_in_thread is False
    assert issubclass(CypherGraphStore, BaseGraphStore) and CypherGraphStore.async_in_thread is True
    assert "aneighborhoods" not in vars(NetworkXGraphStore) and "aget_entities" not in vars(CypherGraphStore)
