"""The embedded graph store: protocol conformance, merge hooks, relation identity, persistence."""

from __future__ import annotations

import json
import os

import networkx as nx
import pytest

from pathrag import Entity, GraphStore, NetworkXGraphStore, Relation, as_graph_store, find_key_paths
from pathrag.graph import atomic_write_text


def build() -> NetworkXGraphStore:
    store = NetworkXGraphStore()
    store.upsert_entities([
        Entity(name="ALICE", type="person", description="A navigator.", source_ids=["c1"]),
        Entity(name="HARBOUR", type="location", description='A port with "quotes" and\nnewlines.'),
    ])
    store.upsert_relations([
        Relation(source="ALICE", target="HARBOUR", description="Alice sails from the harbour.",
                 keywords=["sailing", "home port"], weight=3, source_ids=["c1", "c2"]),
        Relation(source="HARBOUR", target="ÉCLUSE", description="Unicode endpoint, created bare."),
    ])
    return store


def test_is_a_graph_store():
    assert isinstance(NetworkXGraphStore(), GraphStore)
    assert as_graph_store(nx.Graph()).__class__ is NetworkXGraphStore
    store = build()
    assert as_graph_store(store) is store


def test_reads_are_batched_and_skip_unknown_names():
    store = build()
    assert set(store.get_entities(["ALICE", "NOBODY", "ÉCLUSE"])) == {"ALICE", "ÉCLUSE"}
    assert store.get_entities(["ÉCLUSE"])["ÉCLUSE"] == Entity(name="ÉCLUSE")
    found = store.get_relations([("HARBOUR", "ALICE"), ("ALICE", "NOBODY")])
    assert list(found) == [("HARBOUR", "ALICE")]
    relation = found[("HARBOUR", "ALICE")]
    assert relation.pair == ("ALICE", "HARBOUR")  # recorded direction survives a reversed lookup
    assert relation.keywords == ("sailing", "home port") and relation.weight == 3.0


def test_undirected_identity_merges_reverse_relations():
    store = build()
    store.upsert_relations([Relation(source="HARBOUR", target="ALICE", description="replaced")])
    assert store.graph.number_of_edges() == 2
    assert store.get_relations([("ALICE", "HARBOUR")])[("ALICE", "HARBOUR")].description == "replaced"


def test_directed_identity_keeps_both_directions():
    store = NetworkXGraphStore(directed_relations=True)
    store.upsert_relations([Relation(source="A", target="B", description="ab"),
                            Relation(source="B", target="A", description="ba")])
    found = store.get_relations([("A", "B"), ("B", "A")])
    assert (found[("A", "B")].description, found[("B", "A")].description) == ("ab", "ba")


def test_merge_hooks_receive_existing_and_incoming():
    store = build()
    seen = []

    def merge_entity(old: Entity, new: Entity) -> Entity:
        seen.append((old.description, new.description))
        return new.model_copy(update={"description": old.description + " | " + new.description})

    def merge_relation(old: Relation, new: Relation) -> Relation:
        return old.model_copy(update={"weight": old.weight + new.weight})

    store.upsert_entities([Entity(name="ALICE", description="Also a cook.")], merge=merge_entity)
    store.upsert_entities([Entity(name="BRAND NEW", description="fresh")], merge=merge_entity)
    store.upsert_relations([Relation(source="HARBOUR", target="ALICE", weight=2)], merge=merge_relation)
    assert seen == [("A navigator.", "Also a cook.")]  # no merge call for a new entity
    assert store.get_entities(["ALICE"])["ALICE"].description == "A navigator. | Also a cook."
    assert store.get_relations([("ALICE", "HARBOUR")])[("ALICE", "HARBOUR")].weight == 5.0


def test_delete_entities_removes_incident_relations():
    store = build()
    store.delete_entities(["HARBOUR", "UNKNOWN"])
    assert set(store.get_entities(["ALICE", "HARBOUR", "ÉCLUSE"])) == {"ALICE", "ÉCLUSE"}
    assert store.graph.number_of_edges() == 0


def test_delete_relations_either_direction():
    store = build()
    store.delete_relations([("HARBOUR", "ALICE"), ("X", "Y")])
    assert store.get_relations([("ALICE", "HARBOUR")]) == {}
    assert store.get_entities(["ALICE"])  # endpoints stay


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
