"""PathRAGRetriever: results, k, sync/async parity, keywords, callbacks and bad input."""

from __future__ import annotations

import functools
from typing import Any
from uuid import UUID

import networkx as nx
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import FakeListChatModel
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import ValidationError

from langchain_pathrag import ENTITY_SEARCH_TAG, KEYWORDS_TAG, PathRAGIndexer, PathRAGRetriever
from pathrag import Entity, HashingEmbedder, InMemoryVectorIndex, NetworkXGraphStore, Relation, VectorItem
from pathrag.llm.tokens import approximate_token_count

from ..langchain_fakes import HARBOUR, QUESTION, WALL, ScriptedChatModel, embeddings


@functools.cache
def indexer() -> PathRAGIndexer:
    built = PathRAGIndexer(ScriptedChatModel(), embeddings())
    built.add_documents([HARBOUR, WALL])
    return built


def small_graph() -> tuple[NetworkXGraphStore, InMemoryVectorStore]:
    """MARA - SALTMERE - GULL, and IDA alone (on no path)."""
    graph = NetworkXGraphStore()
    graph.upsert_entities([Entity(name="IDA", type="person", description="An engineer.")])
    graph.upsert_relations(
        [
            Relation(source="MARA", target="SALTMERE", description="Mara lives in Saltmere."),
            Relation(source="SALTMERE", target="GULL", description="The Gull is moored there."),
        ]
    )
    store = InMemoryVectorStore(embeddings())
    names = ["MARA", "SALTMERE", "GULL", "IDA"]
    store.add_texts(names, metadatas=[{"name": n} for n in names])
    return graph, store


def test_documents_are_paths_best_first_with_metadata_and_stable_ids():
    docs = indexer().as_retriever(context="paths", k=15).invoke(QUESTION)
    assert len(docs) == 15  # top_k defaults to the paper's K, and k=15 asks for all of them
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    for doc in docs:
        assert doc.metadata["kind"] == "path"
        assert doc.metadata["hops"] == len(doc.metadata["nodes"]) - 1 >= 1
        assert doc.metadata["source_ids"] and all(s.startswith("chunk-") for s in doc.metadata["source_ids"])
        assert all(node in doc.page_content for node in doc.metadata["nodes"])
    assert len({d.id for d in docs}) == len(docs)
    assert [d.id for d in indexer().as_retriever(context="paths", k=15).invoke(QUESTION)] == [d.id for d in docs]


def test_k_is_the_number_of_documents_in_both_layouts():
    defaults = indexer().as_retriever()
    assert defaults.k == 4 and len(defaults.invoke(QUESTION)) == 4  # LangChain's usual small default
    kinds = [d.metadata["kind"] for d in defaults.invoke(QUESTION)]
    assert kinds[0] == "path" and "passage" in kinds  # the best path, then the passages
    for context in ("evidence", "paths"):
        retriever = indexer().as_retriever(context=context, k=3)
        assert retriever.k == 3 and len(retriever.invoke(QUESTION)) == 3
        assert len(retriever.invoke(QUESTION, k=1)) == 1
        assert [len(docs) for docs in retriever.batch([QUESTION, ""], k=2)] == [2, 0]
        assert [d.id for d in retriever.invoke(QUESTION, k=2)] == [d.id for d in retriever.invoke(QUESTION)[:2]]
        assert len(indexer().as_retriever(search_kwargs={"k": 2}, context=context).invoke(QUESTION)) == 2
        with pytest.raises(ValueError, match="k is the number of documents"):
            retriever.invoke(QUESTION, k=0)
    # top_k bounds the paths retrieved, k the documents returned
    assert len(indexer().as_retriever(context="paths", top_k=2, k=10).invoke(QUESTION)) == 2


def test_the_token_budget_bounds_what_the_documents_hold():
    from pathrag.query.context import DEFAULT_CONTEXT_TOKENS, result_context

    for budget in (150, 600, None):
        docs = indexer().as_retriever(k=100, max_tokens=budget).invoke(QUESTION)
        result = indexer().index.retrieve(QUESTION, keyword_llm=False, max_tokens=budget)
        assert [d.id for d in docs] == [i.id for i in result_context(result).ranked]
        if budget is not None:
            assert sum(approximate_token_count(d.page_content) for d in docs) <= budget
    # the default budget applies when none is given: everything retrieved would not fit
    everything = indexer().as_retriever(k=100, max_tokens=None).invoke(QUESTION)
    bounded = indexer().as_retriever(k=100).invoke(QUESTION)
    assert len(bounded) <= len(everything)
    assert sum(approximate_token_count(d.page_content) for d in bounded) <= DEFAULT_CONTEXT_TOKENS
    for bad in (0, -1, 10**12, "600"):
        with pytest.raises(ValidationError, match="max_tokens"):
            indexer().as_retriever(max_tokens=bad)


async def test_async_and_sync_give_the_same_documents():
    retriever = indexer().as_retriever(context="paths", k=6)
    assert await retriever.ainvoke(QUESTION) == retriever.invoke(QUESTION)
    assert await retriever.ainvoke(QUESTION, k=2) == retriever.invoke(QUESTION, k=2)


async def test_entity_fill_when_fewer_than_k_paths():
    graph, store = small_graph()
    retriever = PathRAGRetriever(graph_store=graph, entity_index=store, k=5)
    docs = retriever.invoke("Mara Gull Ida")
    assert [d.metadata["kind"] for d in docs] == ["path", "path", "path", "entity"]  # only 3 paths exist
    assert docs[-1].metadata == {
        "kind": "entity",
        "id": docs[-1].id,
        "score": 0.0,
        "raw_score": 0.0,
        "nodes": ["IDA"],
        "hops": 0,
        "source_ids": [],
        "layout": "evidence",
    }
    assert docs[-1].page_content == "IDA (person): An engineer."
    assert await retriever.ainvoke("Mara Gull Ida") == docs
    assert [d.metadata["kind"] for d in retriever.invoke("Mara Gull Ida", k=3)] == ["path"] * 3


def test_direct_construction_from_networkx_graph_and_core_vector_index():
    index = InMemoryVectorIndex(HashingEmbedder())
    index.upsert([VectorItem(n, n, {"name": n}) for n in ("A", "B", "C")])
    retriever = PathRAGRetriever(graph_store=nx.Graph([("A", "B"), ("B", "C")]), entity_index=index, num_seeds=3)
    assert [d.metadata["nodes"] for d in retriever.invoke("A C")] == [["A", "B"], ["C", "B"], ["A", "B", "C"]]


def test_keyword_model_is_asked_and_its_keywords_pick_the_seeds():
    llm = ScriptedChatModel()
    docs = indexer().as_retriever(context="paths", llm=llm, num_seeds=2, k=3).invoke(QUESTION)
    assert len(llm.prompts) == 1 and f"Question: {QUESTION}" in llm.prompts[0]
    # keywords "Mara" and "Sea Wall" make those two the only seeds: every path joins them
    assert docs and all({d.metadata["nodes"][0], d.metadata["nodes"][-1]} == {"MARA", "SEA WALL"} for d in docs)


def test_an_unusable_keyword_answer_falls_back_to_the_query():
    without = indexer().as_retriever(context="paths", llm=None, k=5).invoke(QUESTION)
    confused = indexer().as_retriever(context="paths", llm=ScriptedChatModel(keywords=False), k=5).invoke(QUESTION)
    assert confused == without and len(without) == 5


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.runs: dict[UUID, tuple[str, UUID | None, list[str]]] = {}

    def _record(self, kind: str, run_id: UUID, parent_run_id: UUID | None, tags: list[str] | None) -> None:
        self.runs[run_id] = (kind, parent_run_id, tags or [])

    def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, tags=None, **kwargs: Any):
        self._record("retriever", run_id, parent_run_id, tags)

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, tags=None, **kwargs: Any):
        self._record("chat_model", run_id, parent_run_id, tags)

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, tags=None, **kwargs: Any):
        self._record("chain", run_id, parent_run_id, tags)


@pytest.mark.parametrize("use_async", [False, True])
async def test_inner_calls_are_tagged_child_runs_of_the_retriever(use_async):
    recorder = Recorder()
    retriever = indexer().as_retriever(context="paths", llm=ScriptedChatModel(), k=2)
    config = {"callbacks": [recorder]}
    await retriever.ainvoke(QUESTION, config) if use_async else retriever.invoke(QUESTION, config)
    [root] = [run_id for run_id, (kind, parent, _) in recorder.runs.items() if kind == "retriever"]
    children = [(kind, tags) for kind, parent, tags in recorder.runs.values() if parent == root]
    assert ("chat_model", [KEYWORDS_TAG]) in children
    assert ("chain", [ENTITY_SEARCH_TAG]) in children  # one per keyword
    assert len(recorder.runs) == 1 + len(children)


async def test_inner_runs_can_be_filtered_from_astream_events():
    retriever = indexer().as_retriever(context="paths", llm=ScriptedChatModel(), k=2)
    events = [e async for e in retriever.astream_events(QUESTION, version="v2")]
    tagged = {e["name"] for e in events if KEYWORDS_TAG in e["tags"] or ENTITY_SEARCH_TAG in e["tags"]}
    assert tagged == {"pathrag_keywords", "pathrag_entity_search"}
    kept = [
        e
        async for e in retriever.astream_events(QUESTION, version="v2", exclude_tags=[KEYWORDS_TAG, ENTITY_SEARCH_TAG])
    ]
    assert {e["event"] for e in kept} == {"on_retriever_start", "on_retriever_end"}
    assert len(kept[-1]["data"]["output"]) == 2


async def test_empty_query_gives_no_documents():
    retriever = indexer().as_retriever(context="paths", llm=ScriptedChatModel())
    assert retriever.invoke("") == [] and retriever.invoke("   ") == []
    assert await retriever.ainvoke("") == []
    assert retriever.llm.prompts == []  # nothing to ask about


@pytest.mark.parametrize("query", [123, None, ["a question"]])
async def test_non_string_query_is_a_type_error(query):
    retriever = indexer().as_retriever(
        context="paths",
    )
    with pytest.raises(TypeError, match="query must be a str"):
        retriever.invoke(query)
    with pytest.raises(TypeError, match="query must be a str"):
        await retriever.ainvoke(query)


def test_unknown_or_bad_arguments_are_errors():
    graph, store = small_graph()
    with pytest.raises(ValidationError, match="kk"):
        PathRAGRetriever(graph_store=graph, entity_index=store, kk=3)
    with pytest.raises(ValidationError, match="k is the number of documents"):
        PathRAGRetriever(graph_store=graph, entity_index=store, k=-1)
    with pytest.raises(ValidationError, match="k is the number of documents"):
        PathRAGRetriever(graph_store=graph, entity_index=store, k=0)
    with pytest.raises(ValidationError, match="expected a LangChain VectorStore or a pathrag.VectorIndex"):
        PathRAGRetriever(graph_store=graph, entity_index={"MARA": [0.1]})
    with pytest.raises(ValidationError, match="expected a networkx graph or a pathrag.GraphStore"):
        PathRAGRetriever(graph_store="neo4j://localhost", entity_index=store)
    retriever = PathRAGRetriever(graph_store=graph, entity_index=store)
    with pytest.raises(TypeError, match="unknown retrieval parameter.*: kk"):
        retriever.invoke("Mara", kk=3)
    with pytest.raises(ValueError, match="k is the number of documents"):
        retriever.invoke("Mara", k="3")
    with pytest.raises(TypeError, match="query must be a str"):
        retriever.invoke(42)
    assert len(retriever.invoke("Mara Gull", num_seeds=1)) == 1  # other parameters per call: one seed, its fill


class FailingChatModel(ScriptedChatModel):
    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any):
        raise ConnectionError("model unreachable")


@pytest.mark.parametrize(
    "llm", [FailingChatModel(), FakeListChatModel(responses=['{"low_level": []}'])], ids=["raises", "empty-keywords"]
)
async def test_keyword_model_failure_is_not_a_dead_end(llm):
    expected = indexer().as_retriever(context="paths", llm=None, k=3).invoke(QUESTION)
    retriever = indexer().as_retriever(context="paths", llm=llm, k=3)
    assert retriever.invoke(QUESTION) == expected and len(expected) == 3
    assert await retriever.ainvoke(QUESTION) == expected


def test_params_as_a_dict_with_settings_by_name():
    graph, store = small_graph()
    retriever = PathRAGRetriever(graph_store=graph, entity_index=store, params={"top_k": 3}, num_seeds=2)
    assert (retriever.params.top_k, retriever.params.num_seeds) == (3, 2)
    with pytest.raises(ValidationError, match="top_k must be an int"):
        PathRAGRetriever(graph_store=graph, entity_index=store, params={"top_k": "3"}, num_seeds=2)
