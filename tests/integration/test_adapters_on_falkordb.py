"""Both adapters on a real graph database (issue #6, item 4): the same answers as on the embedded stores.

* LangChain: ``PathRAGIndexer(graph_store=CypherGraphStore.from_falkordb(...))`` indexes, retrieves and
  deletes exactly as with the default networkx store.
* LlamaIndex: ``PathRAGRetriever`` over ``FalkorDBPropertyGraphStore`` (LlamaIndex's own store, hops
  pushed down to one Cypher query each, seeds from the store's vector index) returns the same paths as
  over ``SimplePropertyGraphStore`` holding the same graph, and as the generic ``get_triplets`` path.
* Neo4j (``CypherGraphStore.from_neo4j`` and ``Neo4jPropertyGraphStore``): the same checks, only when
  ``NEO4J_URI`` (and ``NEO4J_USERNAME``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``) point at a server; the
  LlamaIndex store needs APOC and an empty database.

FalkorDB is the session server of ``tests/integration/falkordb_server.py`` (unix socket only).
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
from langchain_core.documents import Document as LCDocument
from llama_index.core import Document, PropertyGraphIndex
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.indices.property_graph import SimpleLLMPathExtractor

from langchain_pathrag import PathRAGIndexer
from llama_index_pathrag import HashingEmbedding, PathRAGExtractor, PathRAGQueryEngine, PathRAGRetriever
from llama_index_pathrag.graph import CypherPropertyGraphAdapter, PropertyGraphStoreAdapter, cypher_runner
from pathrag import Entity, Relation, find_key_paths
from pathrag.graphs.cypher import CypherGraphStore
from pathrag.index.front import run_sync

from ..langchain_fakes import HARBOUR, QUESTION, WALL, ScriptedChatModel, embeddings
from ..llama_index_fakes import KEYWORDS_HEAD, ScriptedLlamaLLM

# -- LangChain: PathRAGIndexer / PathRAGRetriever over CypherGraphStore --------------------------------


def documents(docs: list[LCDocument]) -> list[tuple]:
    return [(d.id, d.page_content, d.metadata) for d in docs]  # metadata holds kind, score, nodes, hops, sources


def nodes_of(docs: list[LCDocument]) -> set[str]:
    return {n for d in docs for n in d.metadata["nodes"]}


@pytest.mark.parametrize("use_async", [False, True])
async def test_langchain_indexer_on_falkordb_matches_the_embedded_store(falkordb_graph, use_async):
    store = CypherGraphStore.from_falkordb(falkordb_graph)
    on_falkordb = PathRAGIndexer(ScriptedChatModel(), embeddings(), graph_store=store)
    embedded = PathRAGIndexer(ScriptedChatModel(), embeddings())
    for indexer in (on_falkordb, embedded):
        summary = await indexer.aadd_documents([HARBOUR, WALL]) if use_async else indexer.add_documents([HARBOUR, WALL])
        assert (summary.documents, summary.entities, summary.relations, summary.failures) == (2, 6, 8, [])

    async def paths(indexer: PathRAGIndexer) -> list[LCDocument]:
        retriever = indexer.as_retriever()
        return await retriever.ainvoke(QUESTION) if use_async else retriever.invoke(QUESTION)

    store.round_trips = 0
    before = await paths(on_falkordb)
    assert before and documents(before) == documents(await paths(embedded))
    assert {"IDA", "SEA WALL", "MARA"} <= nodes_of(before)
    # the names the question spells: one query; passages: the anchor's flow, one query per hop (max_hops=3),
    # one for the entities it reached; query-aware paths: one for the candidate relations; the paper's paths
    # between the named entities: one query per hop and one for their relations; the fill: one for entities
    assert store.round_trips <= 1 + (3 + 1) + 1 + (3 + 1) + 1

    for indexer in (on_falkordb, embedded):
        summary = await indexer.adelete(["wall"]) if use_async else indexer.delete("wall")
        assert (summary.documents, summary.entities_removed) == (1, 2)
    after = await paths(on_falkordb)
    assert after and documents(after) == documents(await paths(embedded))
    assert nodes_of(after) == {"MARA", "SALTMERE", "TIDE BOARD", "GULL"}
    # gone from the database itself, not just from the answer
    assert set(store.get_entities(["IDA", "SEA WALL", "MARA"])) == {"MARA"}
    assert store.get_relations([("TIDE BOARD", "IDA"), ("SEA WALL", "SALTMERE")]) == {}


def test_langchain_index_directory_reopens_over_the_same_falkordb_graph(falkordb_graph, tmp_path):
    """Scaled out: the graph lives in the database, documents and vectors in the directory."""
    first = PathRAGIndexer(
        ScriptedChatModel(),
        embeddings(),
        path=tmp_path / "kb",
        graph_store=CypherGraphStore.from_falkordb(falkordb_graph),
    )
    first.add_documents([HARBOUR, WALL])
    expected = first.as_retriever(llm=None).invoke(QUESTION)
    assert not (tmp_path / "kb" / "graph.json").exists()  # the database is the graph's only home

    llm = ScriptedChatModel()
    reopened = PathRAGIndexer.load(
        tmp_path / "kb", llm=llm, embeddings=embeddings(), graph_store=CypherGraphStore.from_falkordb(falkordb_graph)
    )
    assert documents(reopened.as_retriever(llm=None).invoke(QUESTION)) == documents(expected)
    again = reopened.add_documents([HARBOUR, WALL])
    assert (again.unchanged, again.llm_calls, llm.prompts) == (2, 0, [])


# -- LlamaIndex: PathRAGRetriever over LlamaIndex's own database stores ---------------------------------

KEYWORDS = {QUESTION: json.dumps({"high_level": ["connections"], "low_level": ["Mara", "Sea Wall"]})}
TRIPLET_DOCS = [
    "TRIPLET Mara | works for | Tide Board\nTRIPLET Tide Board | hired | Ida",
    ("TRIPLET Ida | designed | Sea Wall\nTRIPLET Sea Wall | protects | Saltmere\nTRIPLET Mara | lives in | Saltmere"),
]


def build_index(store, llm, extractor=None, texts=(HARBOUR.page_content, WALL.page_content)) -> PropertyGraphIndex:
    """``texts`` in ``store`` through ``PropertyGraphIndex`` (entity embeddings included)."""
    return PropertyGraphIndex.from_documents(
        [Document(text=t) for t in texts],
        llm=llm,
        property_graph_store=store,
        embed_model=HashingEmbedding(64),
        kg_extractors=[extractor or PathRAGExtractor(llm=llm, graph_store=store)],
        use_async=False,
    )


def summary(nodes) -> list[tuple]:
    return [(n.node.metadata["kind"], tuple(n.node.metadata["nodes"]), round(n.score, 9), n.node.text) for n in nodes]


class Counted:
    """Counts a property-graph store's ``get_triplets`` and ``vector_query`` calls."""

    def __init__(self, store) -> None:
        self.calls = {"get_triplets": 0, "vector_query": 0}
        for name in self.calls:
            setattr(store, name, self._counting(name, getattr(store, name)))

    def _counting(self, name, method):
        def counted(*args, **kwargs):
            self.calls[name] += 1
            return method(*args, **kwargs)

        return counted


def falkordb_pg_store_on(server, graph, **options):
    """LlamaIndex's ``FalkorDBPropertyGraphStore`` on the test server's unix socket (``unix://`` URL)."""
    falkordb_store = pytest.importorskip(
        "llama_index.graph_stores.falkordb", reason="llama-index-graph-stores-falkordb is not installed"
    )
    return falkordb_store.FalkorDBPropertyGraphStore(url=f"unix://{server.socket}", database=graph.name, **options)


@pytest.fixture
def falkordb_pg_store(falkordb_server, falkordb_graph):
    store = falkordb_pg_store_on(falkordb_server, falkordb_graph)
    try:
        yield store
    finally:
        store.close()


def check_same_paths_as_the_in_memory_store(store) -> None:
    """Build the corpus in ``store`` and in a ``SimplePropertyGraphStore``; both retrievers must agree."""
    llm = ScriptedLlamaLLM(keywords=KEYWORDS)
    database, memory = build_index(store, llm), build_index(SimplePropertyGraphStore(), llm)
    assert store.supports_vector_queries  # seeds come from the database's own vector index
    params = {"embed_model": HashingEmbedding(64), "llm": llm, "keyword_llm": True, "num_seeds": 4, "top_k": 8}
    on_database = PathRAGRetriever(store, **params)
    on_memory = PathRAGRetriever(memory.property_graph_store, vector_store=memory.vector_store, **params)

    counted = Counted(store)
    got = on_database.retrieve(QUESTION)
    assert got and summary(got) == summary(on_memory.retrieve(QUESTION))
    assert {"MARA", "SEA WALL"} <= {n for node in got for n in node.node.metadata["nodes"]}
    assert "IDA —design→ SEA WALL" in "\n".join(n.node.text for n in got)
    assert counted.calls["vector_query"] == 2  # one per low-level keyword
    assert counted.calls["get_triplets"] == 1  # hops pushed down: only the path texts' relations

    # the ready-made engine over each index sends the model the same prompt
    for index in (database, memory):
        PathRAGQueryEngine.from_index(index, llm=llm, keyword_llm=True, num_seeds=4, top_k=8).query(QUESTION)
    answers = [p for p in llm.prompts if QUESTION in p and not p.startswith(KEYWORDS_HEAD)]
    assert len(answers) == 2 and answers[0] == answers[1] and "IDA —design→ SEA WALL" in answers[0]


def test_llama_index_retriever_on_falkordb_property_graph_store(falkordb_pg_store):
    check_same_paths_as_the_in_memory_store(falkordb_pg_store)


async def test_llama_index_async_retrieval_on_falkordb_property_graph_store(falkordb_pg_store):
    llm = ScriptedLlamaLLM(keywords=KEYWORDS)
    build_index(falkordb_pg_store, llm)
    retriever = PathRAGRetriever(falkordb_pg_store, embed_model=HashingEmbedding(64), llm=llm, num_seeds=4, top_k=8)
    assert summary(await retriever.aretrieve(QUESTION)) == summary(retriever.retrieve(QUESTION)) != []


def test_llama_index_graph_from_simple_llm_path_extractor_on_falkordb(falkordb_pg_store):
    """Relation labels become relationship types (with spaces) in FalkorDB; the paths read the same."""
    llm = ScriptedLlamaLLM()
    answers = []
    for store in (falkordb_pg_store, SimplePropertyGraphStore()):
        index = build_index(store, llm, SimpleLLMPathExtractor(llm=llm), TRIPLET_DOCS)
        retriever = PathRAGRetriever(
            store, vector_store=index.vector_store, embed_model=HashingEmbedding(64), num_seeds=5, top_k=10
        )
        answers.append(summary(retriever.retrieve("Mara Sea Wall")))
    assert answers[0] and answers[0] == answers[1]
    types = {
        row["type"]
        for row in falkordb_pg_store.structured_query("CALL db.relationshipTypes() YIELD relationshipType AS type")
    }
    assert {"Designed", "Lives in", "MENTIONS"} <= types  # one relationship type per label, provenance too
    assert "Ida —designed→ Sea wall" in [text for *_, text in answers[0]]


@pytest.mark.parametrize("corpus", ["pathrag", "simple_llm_paths"])
@pytest.mark.parametrize("use_async", [False, True])
def test_pushed_down_hops_give_the_generic_paths(falkordb_pg_store, corpus, use_async):
    """On either kind of LlamaIndex graph (one relation label; several, with spaces, plus MENTIONS and
    chunks) the pushed-down retriever returns exactly the generic one's nodes, with no get_triplets per hop."""
    llm = ScriptedLlamaLLM(keywords=KEYWORDS)
    if corpus == "pathrag":
        build_index(falkordb_pg_store, llm)
        query, knowledge = QUESTION, {"RELATED_TO"}
    else:
        build_index(falkordb_pg_store, llm, SimpleLLMPathExtractor(llm=llm), TRIPLET_DOCS)
        query, knowledge = "Mara Sea Wall", {"Works for", "Hired", "Designed", "Protects", "Lives in"}
    assert falkordb_pg_store.structured_query("MATCH (c:Chunk) RETURN count(c) AS n")[0]["n"] > 0  # provenance too
    params = {"embed_model": HashingEmbedding(64), "llm": llm, "num_seeds": 5, "top_k": 10}
    answers, calls = [], []
    for pushdown in (True, False):
        retriever = PathRAGRetriever(falkordb_pg_store, pushdown=pushdown, **params)
        assert type(retriever._graph()) is (CypherPropertyGraphAdapter if pushdown else PropertyGraphStoreAdapter)
        counted = Counted(falkordb_pg_store)
        answers.append(summary(run_sync(retriever.aretrieve(query)) if use_async else retriever.retrieve(query)))
        calls.append(counted.calls["get_triplets"])
        del falkordb_pg_store.get_triplets, falkordb_pg_store.vector_query  # back to the class methods
    assert answers[0] and answers[0] == answers[1]
    assert calls[0] == 1 <= calls[1]  # pushed down: only the path texts' relations come from get_triplets
    chunks = {row["id"] for row in falkordb_pg_store.structured_query("MATCH (c:Chunk) RETURN c.id AS id")}
    assert not chunks & {n for _, nodes, *_ in answers[0] for n in nodes}

    # the hops themselves: one query each, over the knowledge types only, never get_triplets
    seeds = [row["id"] for row in falkordb_pg_store.structured_query("MATCH (e:__Entity__) RETURN e.id AS id")]
    pushed, generic = (
        CypherPropertyGraphAdapter(falkordb_pg_store, cypher_runner(falkordb_pg_store)),
        PropertyGraphStoreAdapter(falkordb_pg_store),
    )
    counted = Counted(falkordb_pg_store)
    paths = find_key_paths(pushed, seeds, top_k=40)
    assert counted.calls["get_triplets"] == 0 and 1 <= pushed.cypher.round_trips <= 3
    assert set(pushed.cypher.traverse) == knowledge  # MENTIONS left out
    assert paths and paths == find_key_paths(generic, seeds, top_k=40)


def test_pushdown_is_only_for_cypher_stores(falkordb_pg_store):
    assert cypher_runner(SimplePropertyGraphStore()) is None
    assert cypher_runner(falkordb_pg_store)("RETURN 1", {}, False) == [[1]]
    retriever = PathRAGRetriever(
        SimplePropertyGraphStore(),
        vector_store=build_index(SimplePropertyGraphStore(), ScriptedLlamaLLM()).vector_store,
        embed_model=HashingEmbedding(64),
    )
    assert type(retriever._graph()) is PropertyGraphStoreAdapter
    # a graph without knowledge relationships traverses through the generic path (which finds nothing)
    empty = CypherPropertyGraphAdapter(falkordb_pg_store, cypher_runner(falkordb_pg_store))
    assert empty.neighborhoods({"Nobody": None}) == {} and empty.cypher is None


def test_long_lists_survive_with_sanitizing_off(falkordb_server, falkordb_graph):
    """The LlamaIndex stores drop list values of 128+ items from query results unless
    ``sanitize_query_output=False``: a relation supported by many chunks would lose its ``source_ids``."""
    many = [f"chunk-{i}" for i in range(200)]
    store = falkordb_pg_store_on(falkordb_server, falkordb_graph, sanitize_query_output=False)
    try:
        writer = PropertyGraphStoreAdapter(store)
        writer.upsert_entities([Entity(name="A"), Entity(name="B")])
        writer.upsert_relations([Relation(source="A", target="B", source_ids=many)])
        assert PropertyGraphStoreAdapter(store).get_relations([("B", "A")])[("B", "A")].source_ids == tuple(many)
    finally:
        store.close()


# -- Neo4j: only with a server ---------------------------------------------------------------------


def neo4j_server(what: str) -> tuple[str, str, str, str | None]:
    """``(uri, user, password, database)`` from the environment, with TCP allowed; skips without a server."""
    uri = os.environ.get("NEO4J_URI")
    if not uri:
        pytest.skip(f"NEO4J_URI is not set: no Neo4j server to run {what} against")
    import pytest_socket

    pytest_socket.enable_socket()  # the suite blocks TCP; this server needs it
    return (
        uri,
        os.environ.get("NEO4J_USERNAME", os.environ.get("NEO4J_USER", "neo4j")),
        os.environ.get("NEO4J_PASSWORD", ""),
        os.environ.get("NEO4J_DATABASE"),
    )


@pytest.fixture
def neo4j_pg_store():
    uri, user, password, database = neo4j_server("LlamaIndex's Neo4jPropertyGraphStore")
    neo4j_store = pytest.importorskip(
        "llama_index.graph_stores.neo4j", reason="llama-index-graph-stores-neo4j is not installed"
    )
    store = neo4j_store.Neo4jPropertyGraphStore(username=user, password=password, url=uri, database=database or "neo4j")
    try:
        # LlamaIndex's store has fixed labels: a test cannot keep to its own corner of a shared database
        if store.structured_query("MATCH (n:__Node__) RETURN count(n) AS n")[0]["n"]:
            pytest.skip("the Neo4j database already holds LlamaIndex data; point NEO4J_DATABASE at an empty one")
        yield store
        store.structured_query("MATCH (n:__Node__) DETACH DELETE n")  # it was empty before the test
    finally:
        store.close()


def test_llama_index_retriever_on_neo4j_property_graph_store(neo4j_pg_store):
    check_same_paths_as_the_in_memory_store(neo4j_pg_store)


def test_langchain_indexer_on_neo4j_matches_the_embedded_store():
    uri, user, password, database = neo4j_server("the LangChain indexer")
    neo4j = pytest.importorskip("neo4j")
    label = f"T{uuid.uuid4().hex}"  # this test's own label in a possibly shared database
    with neo4j.GraphDatabase.driver(uri, auth=(user, password)) as driver:
        store = CypherGraphStore.from_neo4j(driver, database, label=label)
        try:
            on_neo4j = PathRAGIndexer(ScriptedChatModel(), embeddings(), graph_store=store)
            embedded = PathRAGIndexer(ScriptedChatModel(), embeddings())
            for indexer in (on_neo4j, embedded):
                indexer.add_documents([HARBOUR, WALL])
            before = on_neo4j.as_retriever().invoke(QUESTION)
            assert before and documents(before) == documents(embedded.as_retriever().invoke(QUESTION))
            for indexer in (on_neo4j, embedded):
                indexer.delete("wall")
            after = on_neo4j.as_retriever().invoke(QUESTION)
            assert after and documents(after) == documents(embedded.as_retriever().invoke(QUESTION))
            assert nodes_of(after) == {"MARA", "SALTMERE", "TIDE BOARD", "GULL"}
        finally:
            driver.execute_query(f"MATCH (n:{label}) DETACH DELETE n", database_=database)
            driver.execute_query(f"DROP CONSTRAINT pathrag_{label}_name IF EXISTS", database_=database)
