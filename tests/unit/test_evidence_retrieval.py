"""The evidence retrieval: the flow from the best passage's entities ranks source passages."""

from __future__ import annotations

import asyncio

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pathrag import (
    Entity,
    HashingEmbedder,
    InMemoryVectorIndex,
    NetworkXGraphStore,
    Relation,
    VectorItem,
    aretrieve,
    aspread_resources,
    find_key_paths,
    propagate_resources,
    retrieve,
    spread_resources,
)

# -- spread_resources is the sum of each start's propagation -------------------------------------------

graphs = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=1, max_size=40).map(
    lambda edges: nx.Graph([(f"n{a}", f"n{b}") for a, b in edges if a != b])
)


@settings(max_examples=150, deadline=None)
@given(graphs, st.data())
def test_spread_is_the_sum_of_single_propagations(graph, data):
    nodes = sorted(graph)
    if not nodes:
        return
    starts = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=4))
    theta = data.draw(st.sampled_from([0.0, 0.05, 0.2]))
    total: dict[str, float] = {}
    for start in set(starts):
        for node, amount in propagate_resources(graph, start, theta=theta).items():
            total[node] = total.get(node, 0.0) + amount
    spread = spread_resources(graph, starts, theta=theta)
    assert spread.keys() == total.keys()
    assert all(spread[n] == pytest.approx(total[n]) for n in total)
    assert asyncio.run(aspread_resources(graph, starts, theta=theta)) == spread


def test_spread_edge_cases():
    graph = nx.path_graph(["a", "b", "c"])
    assert spread_resources(graph, []) == {}
    assert spread_resources(graph, ["unknown"]) == {}
    with pytest.raises(TypeError, match="collection of node names"):
        spread_resources(graph, "abc")


# -- passages: the anchor's flow lifts the passage about the bridge entity ------------------------------

# Q: "Who founded the company that built the Orla bridge?"  P1 (anchor) says Kessel Works built the
# bridge; P2 says who founded Kessel Works (the answer) but shares few words with the question; P3 is a
# look-alike about another bridge's founder that the graph does not connect.
P1 = "The company that built the Orla bridge was Kessel Works, in 1902."
P2 = "Kessel Works was the company Ida Marr founded; she was an engineer from Vell."
P3 = "The Grey bridge company was founded by Tom Pike."


def _evidence_fixture():
    entities = [
        Entity(name="ORLA BRIDGE", source_ids=["p1"]),
        Entity(name="KESSEL WORKS", source_ids=["p1", "p2"]),
        Entity(name="IDA MARR", source_ids=["p2"]),
        Entity(name="VELL", source_ids=["p2"]),
        Entity(name="GREY BRIDGE", source_ids=["p3"]),
        Entity(name="TOM PIKE", source_ids=["p3"]),
    ]
    relations = [
        Relation(source="KESSEL WORKS", target="ORLA BRIDGE", description="built", source_ids=["p1"]),
        Relation(source="IDA MARR", target="KESSEL WORKS", description="founded", source_ids=["p2"]),
        Relation(source="IDA MARR", target="VELL", description="from", source_ids=["p2"]),
        Relation(source="TOM PIKE", target="GREY BRIDGE", description="founded", source_ids=["p3"]),
    ]
    graph = NetworkXGraphStore()
    graph.upsert_entities(entities)
    graph.upsert_relations(relations)
    embedder = HashingEmbedder()
    entity_index = InMemoryVectorIndex(embedder)
    entity_index.upsert([VectorItem(e.name, e.name, {"name": e.name}) for e in entities])
    passages = InMemoryVectorIndex(embedder)
    mentions = {
        "p1": ["ORLA BRIDGE", "KESSEL WORKS"],
        "p2": ["KESSEL WORKS", "IDA MARR", "VELL"],
        "p3": ["GREY BRIDGE", "TOM PIKE"],
    }
    passages.upsert(
        [
            VectorItem(cid, text, {"chunk_id": cid, "entities": mentions[cid]})
            for cid, text in (("p1", P1), ("p2", P2), ("p3", P3))
        ]
    )
    return graph, entity_index, passages


QUESTION = "Who founded the company that built the Orla bridge?"


def test_the_anchor_flow_ranks_the_bridge_passage_above_a_look_alike():
    graph, entity_index, passages = _evidence_fixture()
    similarity = {hit.id: hit.score for hit in passages.query(QUESTION, 3)}
    assert similarity["p3"] > similarity["p2"]  # by words alone the look-alike wins
    result = retrieve(QUESTION, graph=graph, entity_index=entity_index, passage_index=passages, num_seeds=3)
    ranked = [item.id for item in result.passages]
    assert ranked.index("p2") < ranked.index("p3")  # the flow from P1's entities reaches Ida Marr
    scores = {item.id: item.score for item in result.passages}
    assert scores["p3"] == pytest.approx(similarity["p3"])  # no graph evidence: similarity unchanged
    assert similarity["p2"] < scores["p2"] <= similarity["p2"] + abs(similarity["p2"])  # at most doubled (or 0)
    assert all(item.source_ids == (item.id,) and item.text for item in result.passages)
    paths_only = retrieve(
        QUESTION, graph=graph, entity_index=entity_index, passage_index=passages, num_seeds=3, context="paths"
    )
    assert paths_only.passages == [] and paths_only.paths
    assert [i.path for i in paths_only.paths] == find_key_paths(graph, paths_only.seeds)  # the paper's, unchanged
    again = asyncio.run(
        aretrieve(QUESTION, graph=graph, entity_index=entity_index, passage_index=passages, num_seeds=3)
    )
    assert again.items == result.items


def test_passages_the_search_missed_join_as_similar_as_the_least_similar_candidate():
    graph, entity_index, passages = _evidence_fixture()
    top = passages.query(QUESTION, 1)[0]
    assert top.id == "p1"
    result = retrieve(
        QUESTION, graph=graph, entity_index=entity_index, passage_index=passages, num_seeds=3, num_passages=2
    )
    assert {hit.id for hit in passages.query(QUESTION, 2)} == {"p1", "p3"}  # the search misses p2
    floor = min(hit.score for hit in passages.query(QUESTION, 2))
    scores = {item.id: item.score for item in result.passages}
    assert list(scores) == ["p2", "p1"]  # the best two of three candidates; p2 has all the graph evidence
    assert scores["p2"] == pytest.approx(2 * floor)


def test_without_entity_metadata_the_anchor_is_the_seeds_that_cite_it():
    graph, entity_index, _ = _evidence_fixture()
    bare = InMemoryVectorIndex(HashingEmbedder())
    bare.upsert([VectorItem(cid, text) for cid, text in (("p1", P1), ("p2", P2), ("p3", P3))])
    result = retrieve(QUESTION, graph=graph, entity_index=entity_index, passage_index=bare, num_seeds=6)
    ranked = [item.id for item in result.passages]
    assert sorted(ranked) == ["p1", "p2", "p3"]
    assert ranked.index("p2") < ranked.index("p3")  # the seeds citing p1 started the flow to Ida Marr
