"""PathRAGRetriever and PathRAGQueryEngine on real LlamaIndex indexes, stores and engines."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from llama_index.core import Document, PropertyGraphIndex, StorageContext, VectorStoreIndex, load_index_from_storage
from llama_index.core.agent.workflow import ReActAgent
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import EntityNode
from llama_index.core.graph_stores.types import Relation as StoreRelation
from llama_index.core.indices.property_graph import SimpleLLMPathExtractor
from llama_index.core.node_parser import MarkdownNodeParser
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import TextNode
from llama_index.core.tools import QueryEngineTool, RetrieverTool
from llama_index.core.vector_stores import SimpleVectorStore

import pathrag
from llama_index_pathrag import (
    PATHRAG_QA_TEMPLATE,
    HashingEmbedding,
    PathRAGContextPostprocessor,
    PathRAGExtractor,
    PathRAGQueryEngine,
    PathRAGRetriever,
)
from llama_index_pathrag.query_engine import CITED_KEY, item_from_node
from pathrag.llm.prompts import CITATION_INSTRUCTIONS, EVIDENCE_INSTRUCTIONS
from pathrag.query.context import answer_prompt, build_context, build_path_texts, items_context

from ..llama_index_fakes import ANSWER, ScriptedLlamaLLM

ENTITIES = [
    ("MARA VELLO", "person", "Harbour pilot of Saltmere who guides ships through the shoals."),
    ("SALTMERE", "location", "A fishing town on a shallow estuary."),
    ("TIDEWRIGHT & CO", "organization", "Engineering firm that designs sea defences."),
    ("NORTH SEA WALL", "object", "Flood barrier protecting Saltmere's harbour."),
    ("GREAT SURGE", "event", "The storm surge that breached the north sea wall."),
    ("HARBOUR BOARD", "organization", "Body that runs Saltmere's port and hires its pilots."),
]
RELATIONS = [
    ("HARBOUR BOARD", "MARA VELLO", "The Harbour Board employs Mara Vello as pilot.", ["employment"], 8.0),
    ("MARA VELLO", "SALTMERE", "Mara Vello lives and works in Saltmere.", ["home"], 6.0),
    ("HARBOUR BOARD", "SALTMERE", "The Harbour Board governs Saltmere's port.", ["governance"], 7.0),
    ("HARBOUR BOARD", "TIDEWRIGHT & CO", "The Harbour Board hired Tidewright & Co.", ["contract"], 9.0),
    ("TIDEWRIGHT & CO", "NORTH SEA WALL", "Tidewright & Co built the North Sea Wall.", ["construction"], 9.0),
    ("GREAT SURGE", "NORTH SEA WALL", "The Great Surge breached the North Sea Wall.", ["breach", "flood"], 10.0),
    ("GREAT SURGE", "SALTMERE", "The Great Surge flooded Saltmere.", ["flood"], 9.0),
]
QUESTION = "How is Mara Vello connected to the Great Surge?"
KEYWORDS = {QUESTION: json.dumps({"high_level": ["flood"], "low_level": ["Mara Vello", "Great Surge", "Tidewright"]})}
SEEDS = ["MARA VELLO", "GREAT SURGE", "TIDEWRIGHT & CO"]  # the best entity for each keyword


def reference_graph() -> pathrag.NetworkXGraphStore:
    graph = pathrag.NetworkXGraphStore()
    graph.upsert_entities(pathrag.Entity(name=n, type=t, description=d) for n, t, d in ENTITIES)
    graph.upsert_relations(
        pathrag.Relation(source=s, target=t, description=d, keywords=k, weight=w) for s, t, d, k, w in RELATIONS
    )
    return graph


class VectorGraphStore(SimplePropertyGraphStore):
    """The in-memory store plus the vector search that Neo4j-like stores have (cosine over node embeddings)."""

    supports_vector_queries = True

    def vector_query(self, query, **kwargs):
        nodes = [n for n in self.graph.nodes.values() if n.embedding is not None]
        q = np.asarray(query.query_embedding)
        scores = [float(np.dot(n.embedding, q) / (np.linalg.norm(n.embedding) * np.linalg.norm(q))) for n in nodes]
        ranked = sorted(zip(scores, range(len(nodes)), strict=True), key=lambda x: -x[0])[: query.similarity_top_k]
        return [nodes[i] for _, i in ranked], [s for s, _ in ranked]


def hand_built(store=None):
    """The graph as a PropertyGraphIndex holds it: nodes and relations in the store, entity vectors aside."""
    store = store if store is not None else SimplePropertyGraphStore()
    embed = HashingEmbedding(64)
    nodes = [EntityNode(name=n, label=t, properties={"description": d}) for n, t, d in ENTITIES]
    vectors = SimpleVectorStore()
    embeddings = embed.get_text_embedding_batch([f"{n.name}\n{n.properties['description']}" for n in nodes])
    if store.supports_vector_queries:
        for node, embedding in zip(nodes, embeddings, strict=True):
            node.embedding = embedding
    else:
        vectors.add([TextNode(id_=n.id, text=n.name, embedding=e) for n, e in zip(nodes, embeddings, strict=True)])
    store.upsert_nodes(nodes)
    store.upsert_relations(
        [
            StoreRelation(
                label="RELATED_TO", source_id=s, target_id=t, properties={"description": d, "keywords": k, "weight": w}
            )
            for s, t, d, k, w in RELATIONS
        ]
    )
    return store, vectors


def summary(nodes):
    return [
        (n.node.metadata["kind"], tuple(n.node.metadata["nodes"]), round(n.node.metadata["raw_score"], 9), n.node.text)
        for n in nodes
    ]


def expected(seeds, **params):
    graph = reference_graph()
    paths = pathrag.find_key_paths(graph, seeds, **params)
    return [("path", p.nodes, round(p.score, 9), t) for p, t in zip(paths, build_path_texts(graph, paths), strict=True)]


# -- retrieval --------------------------------------------------------------------------------------


def test_keyword_seeds_give_the_core_key_paths():
    store, vectors = hand_built()
    retriever = PathRAGRetriever(
        store,
        vector_store=vectors,
        embed_model=HashingEmbedding(64),
        llm=ScriptedLlamaLLM(keywords=KEYWORDS),
        num_seeds=3,
        top_k=5,
        context="paths",
        similarity_top_k=5,
    )
    nodes = retriever.retrieve(QUESTION)
    assert summary(nodes) == expected(SEEDS, top_k=5)
    assert nodes[0].node.text.startswith("GREAT SURGE (event): The storm surge")
    assert "relation GREAT SURGE -> NORTH SEA WALL [breach, flood]: The Great Surge breached" in nodes[0].node.text
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)  # best first


def test_query_text_seeds_without_a_keyword_model_match_the_core_pipeline():
    store, vectors = hand_built()
    retriever = PathRAGRetriever(
        store,
        vector_store=vectors,
        embed_model=HashingEmbedding(64),
        num_seeds=len(ENTITIES),
        top_k=4,
        max_hops=2,
        alpha=0.7,
        context="paths",
    )
    assert summary(retriever.retrieve(QUESTION)) == expected(
        [n for n, _, _ in ENTITIES], top_k=4, max_hops=2, alpha=0.7
    )


def test_graph_store_vector_search_is_used_when_the_store_has_it():
    store, _ = hand_built(VectorGraphStore())
    retriever = PathRAGRetriever(
        store,
        embed_model=HashingEmbedding(64),
        llm=ScriptedLlamaLLM(keywords=KEYWORDS),
        num_seeds=3,
        top_k=5,
        context="paths",
    )
    assert summary(retriever.retrieve(QUESTION)) == expected(SEEDS, top_k=5)


async def test_async_retrieval_inside_a_running_loop():
    store, vectors = hand_built()
    retriever = PathRAGRetriever(
        store,
        vector_store=vectors,
        embed_model=HashingEmbedding(64),
        llm=ScriptedLlamaLLM(keywords=KEYWORDS),
        num_seeds=3,
        top_k=5,
        context="paths",
    )
    want = expected(SEEDS, top_k=5)
    assert summary(await retriever.aretrieve(QUESTION)) == want
    assert summary(retriever.retrieve(QUESTION)) == want  # the sync path never starts a loop of its own
    composed = PropertyGraphIndex.from_existing(
        store, vector_store=vectors, llm=ScriptedLlamaLLM(), embed_model=HashingEmbedding(64)
    ).as_retriever(sub_retrievers=[retriever])
    assert summary(await composed.aretrieve(QUESTION)) == want


def test_fill_entities_when_paths_are_few():
    store, vectors = hand_built()
    retriever = PathRAGRetriever(
        store, vector_store=vectors, embed_model=HashingEmbedding(64), num_seeds=3, top_k=3, max_hops=1
    )
    nodes = retriever.retrieve("Tidewright & Co engineering firm")  # seeds: Tidewright, Great Surge, Saltmere
    assert [n.node.metadata["kind"] for n in nodes] == ["path", "entity"]
    assert nodes[1].score == 0.0 and nodes[1].node.text.startswith("TIDEWRIGHT & CO (organization)")
    assert nodes[0].node.get_content(metadata_mode="llm") == nodes[0].node.text  # metadata stays out of prompts


def test_bad_input():
    store, vectors = hand_built()
    with pytest.raises(ValueError, match="pass vector_store="):
        PathRAGRetriever(store)
    with pytest.raises(TypeError, match="PropertyGraphStore"):
        PathRAGRetriever(reference_graph(), vector_store=vectors)
    with pytest.raises(TypeError, match="unknown retrieval parameter.*top_n"):
        PathRAGRetriever(store, vector_store=vectors, top_n=3)
    with pytest.raises(ValueError, match="top_k"):
        PathRAGRetriever(store, vector_store=vectors, top_k=-1)
    with pytest.raises(ValueError, match="alpha"):  # checked at construction, not at the first query
        PathRAGRetriever(store, vector_store=vectors, embed_model=HashingEmbedding(64), alpha=1.5)
    ok = PathRAGRetriever(store, vector_store=vectors, embed_model=HashingEmbedding(64))
    assert ok.retrieve("") == [] and ok.retrieve("   ") == []
    empty = PathRAGRetriever(
        SimplePropertyGraphStore(), vector_store=SimpleVectorStore(), embed_model=HashingEmbedding(64)
    )
    assert empty.retrieve(QUESTION) == []


def test_a_failing_or_rambling_keyword_model_falls_back_to_the_query_text():
    store, vectors = hand_built()
    plain = PathRAGRetriever(store, vector_store=vectors, embed_model=HashingEmbedding(64), num_seeds=3)
    for llm in (ScriptedLlamaLLM(fail_keywords=True), ScriptedLlamaLLM(keywords={QUESTION: "{not json"})):
        retriever = PathRAGRetriever(
            store, vector_store=vectors, embed_model=HashingEmbedding(64), llm=llm, num_seeds=3
        )
        assert summary(retriever.retrieve(QUESTION)) == summary(plain.retrieve(QUESTION)) != []


# -- graphs built by LlamaIndex's own extractor, and by ours with persistence ------------------------


def test_graph_built_by_simple_llm_path_extractor():
    llm = ScriptedLlamaLLM()
    docs = [
        Document(text="TRIPLET Alice | works at | Acme\nTRIPLET Acme | located in | Berlin"),
        Document(text="TRIPLET Bob | lives in | Berlin"),
    ]
    index = PropertyGraphIndex.from_documents(
        docs, llm=llm, kg_extractors=[SimpleLLMPathExtractor(llm=llm)], embed_model=HashingEmbedding(64)
    )
    retriever = PathRAGRetriever(
        index.property_graph_store,
        vector_store=index.vector_store,
        embed_model=HashingEmbedding(64),
        num_seeds=4,
        top_k=10,
        context="paths",
    )
    texts = [n.node.text for n in retriever.retrieve("Alice Berlin")]
    assert "Alice\n  relation Alice -> Acme [works at]\nAcme\n  relation Acme -> Berlin [located in]\nBerlin" in texts
    assert all("triplet_source_id" not in t and "SOURCE" not in t for t in texts)


def build_harbour_index(store=None):
    store = store if store is not None else SimplePropertyGraphStore()
    llm = ScriptedLlamaLLM(keywords=KEYWORDS)
    chunks = [f"ENTITY {n} | {t} | {d}" for n, t, d in ENTITIES]
    chunks += [f"LINK {s} | {t} | {d} | {', '.join(k)} | {int(w)}" for s, t, d, k, w in RELATIONS]
    text = "\n\n".join(f"# fact {i}\n{chunk}" for i, chunk in enumerate(chunks))
    index = PropertyGraphIndex.from_documents(
        [Document(text=text)],
        llm=llm,
        property_graph_store=store,
        embed_model=HashingEmbedding(64),
        kg_extractors=[PathRAGExtractor(llm=llm, graph_store=store)],
        transformations=[MarkdownNodeParser()],
        use_async=False,
    )  # LlamaIndex's async insert calls asyncio.run: not inside a running loop
    return index, llm


def test_persist_and_reload_give_the_same_results(tmp_path):
    index, llm = build_harbour_index()
    before = PathRAGQueryEngine.from_index(index, llm=llm, num_seeds=3, top_k=5, context="paths")
    answer = before.query(QUESTION)
    first_prompt = llm.prompts[-1]
    index.storage_context.persist(tmp_path)

    reloaded = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(tmp_path)),
        llm=llm,
        embed_model=HashingEmbedding(64),
        kg_extractors=[PathRAGExtractor(llm=llm)],
    )
    after = PathRAGQueryEngine.from_index(reloaded, llm=llm, num_seeds=3, top_k=5, context="paths")
    again = after.query(QUESTION)
    assert summary(again.source_nodes) == summary(answer.source_nodes)
    assert llm.prompts[-1] == first_prompt
    # same paths as the core on the same graph: the extractor wrote what the core would hold
    assert sorted(summary(again.source_nodes)) == sorted(expected(SEEDS, top_k=5))


# -- the query engine and the prompt ------------------------------------------------------------------


def test_engine_prompt_has_the_query_first_and_paths_ascending():
    index, llm = build_harbour_index()
    engine = PathRAGQueryEngine.from_index(index, llm=llm, num_seeds=3, top_k=5, context="paths")
    response = engine.query(QUESTION)
    assert response.response == ANSWER
    prompt = llm.prompts[-1]
    assert prompt.startswith(f"Question: {QUESTION}\n\nRelational paths from the knowledge graph, least to most")
    # source_nodes come best first, as retriever.retrieve gives them; the prompt shows them least first
    assert [n.node.node_id for n in response.source_nodes] == [
        n.node.node_id for n in engine.retriever.retrieve(QUESTION)
    ]
    scores = [n.node.metadata["raw_score"] for n in response.source_nodes]
    positions = [prompt.index(n.node.text) for n in response.source_nodes]
    assert len(scores) == 5 and scores == sorted(scores, reverse=True) and positions == sorted(positions, reverse=True)
    assert [n.score for n in response.source_nodes] == sorted((n.score for n in response.source_nodes), reverse=True)
    assert response.source_nodes[0].score == 1.0 and all(0.0 <= n.score <= 1.0 for n in response.source_nodes)
    best = response.source_nodes[0].node.text
    assert prompt.index(best) > max(prompt.index(n.node.text) for n in response.source_nodes if n.node.text != best)
    assert "Answer the question above using only the relational paths." in prompt.split(best)[1]
    assert "'kind'" not in prompt and "source_ids" not in prompt
    # the same order as the core's own layout of these paths (ties included)
    graph = reference_graph()
    paths = pathrag.find_key_paths(graph, SEEDS, top_k=5)
    texts = dict(zip(paths, build_path_texts(graph, paths), strict=True))
    core_order = [texts[p] for p in build_context(QUESTION, paths, list(texts.values())).paths]
    assert sorted(core_order, key=prompt.index) == core_order


def test_prompts_are_exposed_and_updatable():
    index, llm = build_harbour_index()
    engine = PathRAGQueryEngine.from_index(index, llm=llm, num_seeds=3, top_k=5)
    prompts = engine.get_prompts()
    assert prompts["response_synthesizer:text_qa_template"].get_template() == PATHRAG_QA_TEMPLATE.get_template()
    engine.update_prompts({"response_synthesizer:text_qa_template": PromptTemplate("Q={query_str}\nP={context_str}")})
    engine.query(QUESTION)
    assert llm.prompts[-1].startswith(f"Q={QUESTION}\nP=")


async def test_engine_async_and_streaming():
    index, llm = build_harbour_index()
    sync_engine = PathRAGQueryEngine.from_index(index, llm=llm, num_seeds=3, top_k=5)
    sync_engine.query(QUESTION)
    sync_prompt = llm.prompts[-1]
    response = await PathRAGQueryEngine.from_index(index, llm=llm, num_seeds=3, top_k=5).aquery(QUESTION)
    assert response.response == ANSWER and llm.prompts[-1] == sync_prompt
    streaming = PathRAGQueryEngine.from_index(index, llm=llm, streaming=True, num_seeds=3, top_k=5)
    streamed = streaming.query(QUESTION)
    assert "".join(streamed.response_gen) == ANSWER and llm.prompts[-1] == sync_prompt


def test_as_query_engine_with_the_template_and_postprocessor_gives_the_same_prompt():
    index, llm = build_harbour_index()
    PathRAGQueryEngine.from_index(index, llm=llm, keyword_llm=False, num_seeds=3, top_k=4).query(QUESTION)
    reference = llm.prompts[-1]
    retriever = PathRAGRetriever(
        index.property_graph_store,
        vector_store=index.vector_store,
        embed_model=HashingEmbedding(64),
        num_seeds=3,
        top_k=4,
    )
    engine = index.as_query_engine(
        sub_retrievers=[retriever],
        llm=llm,
        text_qa_template=PATHRAG_QA_TEMPLATE,
        node_postprocessors=[PathRAGContextPostprocessor()],
    )
    engine.query(QUESTION)
    assert llm.prompts[-1] == reference
    with pytest.raises(TypeError, match="PropertyGraphIndex"):
        PathRAGQueryEngine.from_index(reference_graph(), llm=llm)


async def test_tools_for_agents():
    index, llm = build_harbour_index()
    engine = PathRAGQueryEngine.from_index(index, llm=llm, num_seeds=3, top_k=5, context="paths")
    tool = QueryEngineTool.from_defaults(
        engine, name="harbour_graph", description="Answers questions about Saltmere's people, places and events."
    )
    output = await tool.acall(QUESTION)
    assert output.content == ANSWER and llm.prompts[-1].startswith(f"Question: {QUESTION}")
    paths = RetrieverTool.from_defaults(
        engine.retriever, name="harbour_paths", description="Relational paths about Saltmere."
    ).call(QUESTION)
    assert paths.content.startswith("GREAT SURGE (event)") and len(paths.raw_output) == 5

    agent_llm = ScriptedLlamaLLM(react_tool="harbour_graph")
    agent = ReActAgent(tools=[tool], llm=agent_llm, streaming=False)
    llm.prompts.clear()
    result = await agent.run(user_msg=QUESTION)
    assert str(result) == ANSWER  # the agent answered with what the PathRAG engine said
    assert [p.split("\n")[0] for p in llm.prompts] == [  # the engine's keyword call, then its answer call
        "Pick the search keywords for a question that will be answered from a knowledge graph.",
        f"Question: {QUESTION}",
    ]


@pytest.mark.parametrize("budget", [None, 120, 400])
async def test_engine_with_passages_sends_the_core_prompt(budget):
    """One context everywhere: with a passage retriever the engine's prompt is the core's, to the character."""
    index, llm = build_harbour_index()
    chunks = [node for node in index.docstore.docs.values() if node.get_content().strip()]
    passages = VectorStoreIndex(chunks, embed_model=HashingEmbedding(64)).as_retriever(similarity_top_k=6)
    params = {"num_seeds": 3, "top_k": 5, "passage_retriever": passages}
    engine = PathRAGQueryEngine.from_index(index, llm=llm, keyword_llm=False, max_tokens=budget, **params)
    engine.query(QUESTION)
    prompt = llm.prompts[-1]
    found = PathRAGRetriever(
        index.property_graph_store,
        vector_store=index.vector_store,
        embed_model=HashingEmbedding(64),
        max_tokens=budget,
        **params,
    ).retrieve(QUESTION)
    assert {n.node.metadata["kind"] for n in found} == {"path", "passage"} or budget == 120
    items = [item_from_node(n) for n in found]
    assert prompt == answer_prompt(items_context(QUESTION, items, max_tokens=budget))
    assert re.search(r"\nPath \d+:\n", prompt)  # the best path is always shown
    if budget != 120:
        assert "\nPassage 1:\n" in prompt and prompt.endswith(f"{EVIDENCE_INSTRUCTIONS} {CITATION_INSTRUCTIONS}")
    await engine.aquery(QUESTION)
    assert llm.prompts[-1] == prompt


async def test_engine_response_gives_the_cited_nodes_apart_from_the_nodes_sent():
    index, llm = build_harbour_index()
    chunks = [node for node in index.docstore.docs.values() if node.get_content().strip()]
    passages = VectorStoreIndex(chunks, embed_model=HashingEmbedding(64)).as_retriever(similarity_top_k=6)
    engine = PathRAGQueryEngine.from_index(
        index, llm=llm, keyword_llm=False, num_seeds=3, top_k=5, passage_retriever=passages
    )
    engine.query(QUESTION)
    numbers = re.findall(r"\n(Passage|Path) (\d+):\n", llm.prompts[-1])
    passage = next(int(n) for kind, n in numbers if kind == "Passage")
    path = next(int(n) for kind, n in numbers if kind == "Path")
    llm.answer = f"Mara sailed through the surge [{path}], as the log says [{passage}, 40]."
    for response in (engine.query(QUESTION), await engine.aquery(QUESTION)):
        cited = response.metadata[CITED_KEY]
        assert [n.node.metadata["kind"] for n in cited] == ["path", "passage"]
        assert [n.node.metadata["pathrag_number"] for n in cited] == [path, passage]
        sent = {n.node.node_id for n in response.source_nodes}  # what the prompt held, not what was used
        assert {n.node.node_id for n in cited} < sent
        assert [n.node.node_id for n in response.source_nodes] == [
            n.node.node_id for n in engine.retriever.retrieve(QUESTION)
        ]
