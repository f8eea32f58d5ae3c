"""The evidence retrieval: passages ranked by the flow from what the passages, the question and the key paths say."""

from __future__ import annotations

import asyncio

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pathrag import (
    BaseGraphStore,
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
from pathrag.graphs.base import Neighborhood
from pathrag.query import passage_rank
from pathrag.query.context import result_context
from pathrag.query.passage_rank import PassageRank
from pathrag.query.steps import run
from pathrag.vectors.items import chunk_metadata, entity_vector_item, relation_vector_item

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


# -- passages: the flow from what the question names reaches the bridge ------------------------------

# Q: "Who founded the company that built the Orla bridge?"  P1 says Kessel Works built the bridge; P2
# says who founded Kessel Works (the answer) but shares few words with the question; P3 is a look-alike
# about another bridge's founder that the graph does not connect.
P1 = "The company that built the Orla bridge was Kessel Works, in 1902."
P2 = "Kessel Works was the company Ida Marr founded; she was an engineer from Vell."
P3 = "The Grey bridge company was founded by Tom Pike."


def _evidence_fixture(metadata: bool = True):
    entities = [
        Entity(name="ORLA BRIDGE", source_ids=["p1"]),
        Entity(name="KESSEL WORKS", source_ids=["p1", "p2"]),
        Entity(name="IDA MARR", source_ids=["p2"]),
        Entity(name="VELL", source_ids=["p2"]),
        Entity(name="GREY BRIDGE", source_ids=["p3"]),
        Entity(name="TOM PIKE", source_ids=["p3"]),
    ]
    relations = [
        Relation(source="KESSEL WORKS", target="ORLA BRIDGE", keywords=["built"], source_ids=["p1"]),
        Relation(source="IDA MARR", target="KESSEL WORKS", keywords=["founded"], source_ids=["p2"]),
        Relation(source="IDA MARR", target="VELL", keywords=["from"], source_ids=["p2"]),
        Relation(source="TOM PIKE", target="GREY BRIDGE", keywords=["founded"], source_ids=["p3"]),
    ]
    graph = NetworkXGraphStore()
    graph.upsert_entities(entities)
    graph.upsert_relations(relations)
    embedder = HashingEmbedder()
    entity_index = InMemoryVectorIndex(embedder)
    entity_index.upsert([entity_vector_item(e) for e in entities])
    relation_index = InMemoryVectorIndex(embedder)
    relation_index.upsert([relation_vector_item(r) for r in relations])
    passages = InMemoryVectorIndex(embedder)
    mentions = {cid: [e.name for e in entities if cid in e.source_ids] for cid in ("p1", "p2", "p3")}
    passages.upsert(
        [
            VectorItem(cid, text, chunk_metadata(cid, mentions[cid]) if metadata else {})
            for cid, text in (("p1", P1), ("p2", P2), ("p3", P3))
        ]
    )
    return {"graph": graph, "entity_index": entity_index, "relation_index": relation_index, "passage_index": passages}


QUESTION = "Who founded the company that built the Orla bridge?"


def test_a_passage_the_search_misses_is_ranked_in_through_the_bridge_entity():
    stores = _evidence_fixture()
    assert {hit.id for hit in stores["passage_index"].query(QUESTION, 2)} == {"p1", "p3"}  # words alone miss p2
    result = retrieve(QUESTION, **stores, num_seeds=3, num_passages=2)
    assert [item.id for item in result.passages] == ["p1", "p2"]  # the flow from Orla bridge reaches Ida Marr
    assert all(item.source_ids == (item.id,) and item.text for item in result.passages)
    scores = [item.score for item in result.passages]
    assert scores == sorted(scores, reverse=True) and 0 < scores[-1] < scores[0] < 1
    assert result.paths[0].nodes == ("ORLA BRIDGE", "KESSEL WORKS", "IDA MARR")  # the key path the flow used
    again = asyncio.run(aretrieve(QUESTION, **stores, num_seeds=3, num_passages=2))
    assert again.items == result.items
    paths_only = retrieve(QUESTION, **stores, num_seeds=3, context="paths")
    assert paths_only.passages == [] and paths_only.paths
    assert [i.path for i in paths_only.paths] == find_key_paths(stores["graph"], paths_only.seeds)  # the paper's


def test_without_entity_metadata_the_flow_reaches_passages_through_the_entities_citing_them():
    stores = _evidence_fixture(metadata=False)  # a passage index that lists no entities: passages are ends
    result = retrieve(QUESTION, **stores, num_seeds=3, num_passages=2)
    assert [item.id for item in result.passages] == ["p1", "p2"]


class _SearchOnly:
    """A passage index that can only search (as a LlamaIndex retriever): no ``get``."""

    def __init__(self, index):
        self.index = index

    def query(self, text, k):
        return self.index.query(text, k)

    async def aquery(self, text, k):
        return self.index.query(text, k)


def test_a_search_only_passage_index_ranks_its_candidates_with_their_own_metadata():
    stores = _evidence_fixture()
    full = retrieve(QUESTION, **stores, num_seeds=3, num_passages=3)
    search_only = retrieve(QUESTION, **{**stores, "passage_index": _SearchOnly(stores["passage_index"])}, num_seeds=3)
    assert search_only.items == full.items  # every passage was a candidate: the flow needed no read
    fewer = retrieve(QUESTION, **{**stores, "passage_index": _SearchOnly(stores["passage_index"])}, num_passages=2)
    # p2 is reached through Kessel Works but cannot be read: it is left out, not shown without its text
    assert sorted(item.id for item in fewer.passages) == ["p1", "p3"] and all(i.text for i in fewer.passages)


# -- the flow is a personalized PageRank, bounded whatever the graph ----------------------------------------


def _bipartite(edges, mentions):
    """A graph store and passage index: entity relations ``edges``, and passage -> entities ``mentions``."""
    graph = NetworkXGraphStore()
    cited: dict[str, list[str]] = {}
    for cid, names in mentions.items():
        for name in names:
            cited.setdefault(name, []).append(cid)
    graph.upsert_entities([Entity(name=name, source_ids=cids) for name, cids in cited.items()])
    graph.upsert_relations([Relation(source=a, target=b) for a, b in edges])
    index = InMemoryVectorIndex(HashingEmbedder(8))
    index.upsert([VectorItem(cid, f"passage {cid}", chunk_metadata(cid, names)) for cid, names in mentions.items()])
    return graph, index


def _personalized_pagerank(graph: nx.Graph, alpha: float, restart: dict) -> dict:
    """The textbook definition, solved directly: p = (1 - alpha)·r + alpha·Wᵀp, W the row-normalised adjacency
    (networkx's own ``pagerank`` needs scipy, which the test extra does not install)."""
    nodes = list(graph)
    position = {node: i for i, node in enumerate(nodes)}
    walk = np.zeros((len(nodes), len(nodes)))
    for node in nodes:
        for neighbour in graph[node]:
            walk[position[node], position[neighbour]] = 1 / len(graph[node])
    r = np.array([restart[node] for node in nodes]) / sum(restart.values())
    p = np.linalg.solve(np.eye(len(nodes)) - alpha * walk.T, (1 - alpha) * r)
    return {node: float(p[position[node]]) for node in nodes}


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_flow_settles_to_the_personalized_pagerank_of_its_restart(data):
    names = [f"E{i}" for i in range(data.draw(st.integers(2, 9)))]
    mentions = {
        f"c{i}": sorted(set(data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=4))))
        for i in range(data.draw(st.integers(1, 6)))
    }
    mentioned = {n for ns in mentions.values() for n in ns}
    edges = data.draw(st.lists(st.tuples(st.sampled_from(sorted(mentioned)), st.sampled_from(sorted(mentioned)))))
    edges = [(a, b) for a, b in edges if a != b]
    graph, index = _bipartite(edges, mentions)
    first = {("entity", data.draw(st.sampled_from(sorted(mentioned)))): 1.0}
    second = {("passage", cid): 1 / len(mentions) for cid in mentions}
    alpha = data.draw(st.sampled_from([0.5, 0.8]))
    flow = PassageRank(alpha=alpha, tolerance=1e-9)
    flow.add_source(first)
    run(passage_rank.spread(flow, graph, index))
    flow.add_source(second)  # continued, as retrieval continues it with the paths' passages
    run(passage_rank.spread(flow, graph, index))
    exact = nx.Graph()  # every node has a neighbour: an entity its passage, a passage its entities
    exact.add_edges_from((("passage", cid), ("entity", n)) for cid, ns in mentions.items() for n in ns)
    exact.add_edges_from((("entity", a), ("entity", b)) for a, b in edges)
    restart = {node: 0.5 * first.get(node, 0.0) + 0.5 * second.get(node, 0.0) for node in exact}
    pagerank = _personalized_pagerank(exact, alpha, restart)
    scores = flow.scores()
    for cid in mentions:
        assert scores.get(cid, 0.0) == pytest.approx(pagerank[("passage", cid)], abs=1e-6)


class _ImplicitGraph(BaseGraphStore):
    """A graph too big to hold: 10⁶ entities ``n0`` .. ``n999999``, each joined to the next (a long line),
    ``n0`` to every other one (a hub), a self-loop on each, and passage ``c{i}`` citing ``n{i}``; answers
    are computed on demand. Counts the neighbours it lists."""

    SIZE = 10**6

    def __init__(self) -> None:
        self.listed = 0

    def _neighbours(self, name: str) -> list[str]:
        i = int(name[1:])
        if i == 0:
            return [f"n{j}" for j in range(1, self.SIZE)]
        return [f"n{j}" for j in {0, i - 1, i + 1} if 0 <= j < self.SIZE and j != i]

    def neighborhoods(self, requests, *, directed=False, keep=()):
        answer = {}
        for name, limit in requests.items():
            degree = self.SIZE - 1 if name == "n0" else len(self._neighbours(name))
            listed = self._neighbours(name) if limit is None or degree <= limit else [n for n in keep if n != name]
            self.listed += len(listed)
            answer[name] = Neighborhood(degree, {n: 3 for n in listed})
        return answer

    def get_entities(self, names):
        return {n: Entity(name=n, source_ids=[f"c{n[1:]}"]) for n in names}

    def get_relations(self, pairs):
        return {}

    def upsert_entities(self, entities, *, merge=None):
        raise NotImplementedError

    def upsert_relations(self, relations, *, merge=None):
        raise NotImplementedError

    def delete_entities(self, names):
        raise NotImplementedError

    def delete_relations(self, pairs):
        raise NotImplementedError


class _ImplicitPassages:
    def get(self, cid):
        return VectorItem(cid, f"passage {cid}", {"entities": [f"n{cid[1:]}"]})


@pytest.mark.parametrize("alpha", [0.8, 1.0])
def test_the_flow_is_bounded_on_a_huge_graph_with_a_hub_and_self_loops(alpha):
    graph = _ImplicitGraph()
    flow = PassageRank(alpha=alpha)
    flow.add_source({("entity", "n500000"): 0.5, ("passage", "c7"): 0.5})
    run(passage_rank.spread(flow, graph, _ImplicitPassages()))
    # the hub is never listed (it would need 10⁶ x the tolerance), and the work stays within the push
    # method's bound: at most 1 / tolerance neighbours per round
    assert graph.listed <= passage_rank.MAX_ROUNDS / passage_rank.PUSH_TOLERANCE
    assert graph.listed < 10_000 and ("entity", "n0") not in flow.neighbours
    scores = flow.scores()
    if alpha < 1:
        assert 0 < sum(scores.values()) <= 1 + 1e-9
        assert passage_rank.ranked_ids(flow, ["c3"])[0] in {"c7", "c500000"}
    else:  # a flow that keeps nothing scores nothing: the candidates keep their order
        assert set(scores.values()) == {0.0} and passage_rank.ranked_ids(flow, ["c3", "c1"]) == ["c3", "c1"]


def test_the_flow_on_an_empty_or_disconnected_graph_keeps_the_restart_where_it_is():
    graph, index = _bipartite([], {"c1": ["A"], "c2": ["B"]})
    flow = PassageRank(alpha=0.8)
    flow.add_source({})  # a source with nothing to say takes no share
    flow.add_source({("passage", "c1"): 1.0})
    flow.add_source({("passage", "nowhere"): 1.0})  # a passage the index does not hold keeps what it gets
    run(passage_rank.spread(flow, graph, index))
    scores = flow.scores()
    # c1 and its one entity pass their share back and forth: c1 keeps 1 / (1 + alpha) of it, as PageRank does
    assert scores["c1"] == pytest.approx(0.5 / 1.8, abs=1e-3) and "c2" not in scores
    assert scores["nowhere"] == pytest.approx(0.5)
    empty = PassageRank(alpha=0.8)
    run(passage_rank.spread(empty, NetworkXGraphStore(), index))
    assert empty.scores() == {}


def test_bad_input_gives_documented_empty_results():
    stores = _evidence_fixture()
    tiny = result_context(retrieve(QUESTION, **stores), max_tokens=1)  # no item fits: none shown, no error
    assert tiny.items == () and tiny.paths == () and tiny.dropped > 0
    nothing = retrieve("Which xyzzy plugh?", **stores)  # names nothing known: similarity still finds some
    assert nothing.passages and nothing.paths
    empty = {
        "graph": NetworkXGraphStore(),
        "entity_index": InMemoryVectorIndex(HashingEmbedder()),
        "relation_index": InMemoryVectorIndex(HashingEmbedder()),
        "passage_index": InMemoryVectorIndex(HashingEmbedder()),
    }
    assert retrieve(QUESTION, **empty).items == []  # an empty store: an empty result
    no_passages = {**stores, "passage_index": InMemoryVectorIndex(HashingEmbedder())}
    result = retrieve(QUESTION, **no_passages)
    assert result.passages == [] and result.paths  # a graph with no passages: paths alone
