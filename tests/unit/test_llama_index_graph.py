"""PropertyGraphStoreAdapter: the core's GraphStore protocol over LlamaIndex property graph stores."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import ChunkNode, EntityNode
from llama_index.core.graph_stores.types import Relation as StoreRelation

from llama_index_pathrag import RELATION_LABEL, PropertyGraphStoreAdapter
from pathrag import Entity, GraphStore, NetworkXGraphStore, Relation, find_key_paths
from pathrag.index.merging import merge_entity
from pathrag.query.context import build_path_texts


class CountingStore(SimplePropertyGraphStore):
    """The in-memory store, counting the batched reads the adapter makes."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, list[str]]] = []

    def get_triplets(self, entity_names=None, **kwargs):
        self.calls.append(("get_triplets", list(entity_names or ())))
        return super().get_triplets(entity_names=entity_names, **kwargs)

    def get(self, properties=None, ids=None):
        self.calls.append(("get", list(ids or ())))
        return super().get(properties=properties, ids=ids)


def store_of(edges, nodes=(), label="LINK", store=None) -> SimplePropertyGraphStore:
    store = store if store is not None else SimplePropertyGraphStore()
    names = dict.fromkeys([*nodes, *(n for edge in edges for n in edge)])
    store.upsert_nodes([EntityNode(name=n) for n in names])
    store.upsert_relations([StoreRelation(label=label, source_id=a, target_id=b) for a, b in edges])
    return store


names = st.sampled_from([f"N{i}" for i in range(9)])
digraphs = st.lists(st.tuples(names, names), max_size=24).map(lambda edges: nx.DiGraph(edges))


@settings(max_examples=150, deadline=None)
@given(graph=digraphs, data=st.data())
def test_neighborhoods_and_key_paths_match_the_networkx_store(graph, data):
    graph.remove_edges_from(list(nx.selfloop_edges(graph)))
    graph.add_nodes_from(data.draw(st.lists(names, max_size=2)))  # isolated entities
    store = store_of(graph.edges, graph.nodes)
    reference = NetworkXGraphStore(graph)
    directed = data.draw(st.booleans())
    requests = data.draw(st.dictionaries(names, st.one_of(st.none(), st.integers(0, 3)), max_size=5))
    keep = data.draw(st.frozensets(names, max_size=4))
    assert PropertyGraphStoreAdapter(store).neighborhoods(
        requests, directed=directed, keep=keep
    ) == reference.neighborhoods(requests, directed=directed, keep=keep)
    seeds = data.draw(st.lists(names, max_size=4, unique=True))
    theta = data.draw(st.sampled_from([0.0, 0.05, 0.3]))
    assert find_key_paths(PropertyGraphStoreAdapter(store), seeds, theta=theta, directed=directed) == find_key_paths(
        reference, seeds, theta=theta, directed=directed
    )


def test_satisfies_the_core_protocol():
    assert isinstance(PropertyGraphStoreAdapter(SimplePropertyGraphStore()), GraphStore)
    with pytest.raises(TypeError, match="PropertyGraphStore"):
        PropertyGraphStoreAdapter(nx.Graph())


def test_provenance_is_not_traversed_and_isolated_differs_from_unknown():
    store = store_of([("A", "B")], nodes=["LONER"])
    chunk = ChunkNode(text="A met B.", id_="chunk-1")
    store.upsert_nodes([chunk, EntityNode(name="doc-1")])
    store.upsert_relations(
        [
            StoreRelation(label="MENTIONS", source_id="chunk-1", target_id="A"),
            StoreRelation(label="SOURCE", source_id="B", target_id="doc-1"),
            StoreRelation(label="CUSTOM", source_id="chunk-1", target_id="B"),
        ]
    )
    adapter = PropertyGraphStoreAdapter(store)
    answer = adapter.neighborhoods({"A": None, "B": None, "LONER": None, "GHOST": None})
    assert {name: (hood.degree, hood.neighbors) for name, hood in answer.items()} == {
        "A": (1, {"B": 1}),
        "B": (1, {"A": 1}),
        "LONER": (0, {}),
    }  # GHOST is unknown, not isolated
    assert list(adapter.get_entities(["A", "chunk-1", "GHOST"])) == ["A"]


def test_at_most_one_store_read_per_hop_and_none_for_relation_texts():
    store = store_of([("S", "A"), ("A", "B"), ("B", "T"), ("S", "C"), ("C", "T"), ("T", "D")], store=CountingStore())
    adapter = PropertyGraphStoreAdapter(store)
    hops: list[int] = []
    original = adapter.neighborhoods

    def counted(requests, **kwargs):
        hops.append(len(requests))
        return original(requests, **kwargs)

    adapter.neighborhoods = counted  # type: ignore[method-assign]
    paths = find_key_paths(adapter, ["S", "T"], max_hops=3)
    build_path_texts(adapter, paths)
    reads = [name for name, _ in store.calls]
    # a hop's neighbours are read once and are the next hop's frontier: at most hops + 1 triplet reads,
    # then one entity read for the texts; the relations were already read during the search
    assert reads == ["get_triplets"] * (len(reads) - 1) + ["get"]
    assert 1 <= len(reads) - 1 <= len(hops) + 1 and len(hops) == 3
    read_names = [n for name, asked in store.calls if name == "get_triplets" for n in asked]
    assert len(read_names) == len(set(read_names))  # nobody's triplets are read twice
    assert paths[0].nodes in {("S", "C", "T"), ("T", "C", "S")}


def test_translation_of_labels_and_properties():
    store = SimplePropertyGraphStore()
    store.upsert_nodes(
        [
            EntityNode(
                name="Alice", label="PERSON", properties={"entity_description": "Pilot.", "triplet_source_id": "c1"}
            ),
            EntityNode(name="Acme"),  # LlamaIndex's default label: untyped
            EntityNode(name="Bob", label="person", properties={"description": "Clerk."}),
        ]
    )
    store.upsert_relations(
        [
            StoreRelation(
                label="WORKS_AT", source_id="Alice", target_id="Acme", properties={"triplet_source_id": "c1"}
            ),
            StoreRelation(
                label="FOUNDED",
                source_id="Acme",
                target_id="Alice",
                properties={"relationship_description": "Alice founded Acme.", "weight": 4},
            ),
            StoreRelation(
                label="KNOWS",
                source_id="Alice",
                target_id="Bob",
                properties={"keywords": "friends, rivals", "weight": "heavy", "source_ids": ["c2", "c3"]},
            ),
        ]
    )
    adapter = PropertyGraphStoreAdapter(store)
    entities = adapter.get_entities(["Alice", "Acme", "Bob"])
    assert entities["Alice"] == Entity(name="Alice", type="PERSON", description="Pilot.", source_ids=["c1"])
    assert entities["Acme"] == Entity(name="Acme")
    relations = adapter.get_relations([("Acme", "Alice"), ("Alice", "Bob"), ("Bob", "Acme")])
    assert set(relations) == {("Acme", "Alice"), ("Alice", "Bob")}  # keyed as asked; no Bob-Acme relation
    both = relations[("Acme", "Alice")]  # two stored relations read as one, merged in label order
    assert (both.pair, both.keywords, both.description, both.weight, both.source_ids) == (
        ("Acme", "Alice"),
        ("founded", "works at"),
        "Alice founded Acme.",
        5.0,
        ("c1",),
    )
    knows = relations[("Alice", "Bob")]
    assert (knows.keywords, knows.weight, knows.source_ids) == (("friends", "rivals"), 1.0, ("c2", "c3"))
    only = adapter.get_relations([("Alice", "Acme")], labels=["FOUNDED"])[("Alice", "Acme")]
    assert only.pair == ("Acme", "Alice") and only.keywords == ("founded",)


def test_paths_over_an_undescribed_graph_read_well():
    store = store_of([("Alice", "Acme")], label="WORKS_AT")
    store_of([("Acme", "Berlin")], label="Located in", store=store)
    adapter = PropertyGraphStoreAdapter(store)
    paths = find_key_paths(adapter, ["Alice", "Berlin"])
    assert build_path_texts(adapter, paths) == [
        "Alice\n  relation Alice -> Acme [works at]\nAcme\n  relation Acme -> Berlin [located in]\nBerlin"
    ]


def test_writes_keep_other_properties_and_replace_relations():
    store = SimplePropertyGraphStore()
    store.upsert_nodes([EntityNode(name="A", label="PERSON", properties={"description": "Old.", "file": "x.md"})])
    adapter = PropertyGraphStoreAdapter(store)
    adapter.upsert_entities([Entity(name="A", description="New.")])
    adapter.upsert_entities(
        [Entity(name="A", type="person", description="Newer.")], merge=lambda old, new: merge_entity("A", [old, new])
    )
    node = store.get(ids=["A"])[0]
    assert (node.label, node.properties) == ("PERSON", {"description": "New. Newer.", "file": "x.md"})
    adapter.upsert_entities([Entity(name="A", type="person", description="Renamed.")])
    assert store.get(ids=["A"])[0].label == "person"  # label = type

    adapter.upsert_relations([Relation(source="A", target="B", description="first", keywords=["k1"], weight=2)])
    assert adapter.get_relations([("B", "A")])[("B", "A")].description == "first"  # a write clears the cache
    adapter.upsert_relations(
        [Relation(source="B", target="A", description="second", weight=3)],
        merge=lambda old, new: old.model_copy(update={"weight": old.weight + new.weight}),
    )
    adapter.upsert_relations([Relation(source="A", target="B", description="third", weight=1)])
    stored = [
        (r.label, r.source_id, r.target_id, r.properties["description"], r.properties["weight"])
        for _, r, _ in store.get_triplets(entity_names=["A"])
    ]
    assert stored == [(RELATION_LABEL, "A", "B", "third", 1.0)]  # replaced, not first-write-wins
    assert store.get(ids=["B"])[0].name == "B"  # a relation creates its missing endpoint
    # deletes remove exactly what they name: the relation, not its endpoints; the entity, not its neighbours
    store.upsert_relations([StoreRelation(label="KNOWS", source_id="A", target_id="B")])
    adapter.delete_relations([("B", "A")])
    assert [r.label for _, r, _ in store.get_triplets(entity_names=["A"])] == ["KNOWS"]
    assert sorted(n.id for n in store.get()) == ["A", "B"]
    adapter.upsert_entities([Entity(name="C")])
    adapter.delete_entities(["B"])
    assert sorted(n.id for n in store.get()) == ["A", "C"] and store.get_triplets(entity_names=["A"]) == []
