"""A store made by ``pathrag index`` (or the core) opened from LlamaIndex: ``PathRAGIndexRetriever`` returns the
nodes of the core's budgeted context, and ``RetrieverQueryEngine.from_args`` answers from them."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode

from llama_index_pathrag import (
    PATHRAG_QA_TEMPLATE,
    HashingEmbedding,
    PathRAGContextPostprocessor,
    PathRAGIndexRetriever,
)
from pathrag import HashingEmbedder, PathRAGIndex
from pathrag.demo import load_questions, open_demo_index
from pathrag.index.front import MissingEmbedderError
from pathrag.query.context import answer_prompt, result_context

from ..fakes import EndpointNamed
from ..llama_index_fakes import ScriptedLlamaLLM

QUESTION = load_questions()[0].question


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("kb")
    index, _ = open_demo_index(directory)  # hashing-256: what `pathrag index` records without a key
    index.close()
    return directory


def core_context(store: Path, max_items: int | None = None, **params):
    index = PathRAGIndex(store, embedder=HashingEmbedder(256))
    try:
        return result_context(index.retrieve(QUESTION, keyword_llm=False, **params), max_items=max_items)
    finally:
        index.close()


def test_the_retriever_returns_the_core_context_as_nodes(store: Path) -> None:
    retriever = PathRAGIndexRetriever.from_store(store, max_tokens=600)
    found = retriever.retrieve(QUESTION)
    expected = core_context(store, max_tokens=600)
    assert [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in found] == [i.text for i in expected.ranked]
    assert [n.node.metadata["raw_score"] for n in found] == [i.score for i in expected.ranked]
    assert found[0].node.metadata["kind"] == "path" and {n.node.metadata["layout"] for n in found} == {"evidence"}
    top = PathRAGIndexRetriever(retriever.index, similarity_top_k=2, keyword_llm=False).retrieve(QUESTION)
    assert [n.node.node_id for n in top] == [i.id for i in core_context(store, max_items=2).ranked]
    assert [n.node.metadata["kind"] for n in top] == ["path", "passage"]  # the best path, then the best passage
    retriever.close()


async def test_the_query_engine_sends_the_core_prompt(store: Path) -> None:
    llm = ScriptedLlamaLLM()
    retriever = PathRAGIndexRetriever.from_store(store, max_tokens=800)  # no llm: the question is the keyword
    engine = RetrieverQueryEngine.from_args(
        retriever,
        llm=llm,
        text_qa_template=PATHRAG_QA_TEMPLATE,
        node_postprocessors=[PathRAGContextPostprocessor(max_tokens=800)],
    )
    assert str(engine.query(QUESTION)) == llm.answer
    assert llm.prompts == [answer_prompt(core_context(store, max_tokens=800))]  # one call: the core's prompt
    await engine.aquery(QUESTION)
    assert llm.prompts[-1] == llm.prompts[0]
    plain = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())  # LlamaIndex's own prompt and layout
    response = plain.query(QUESTION)
    assert response.source_nodes and str(response)
    retriever.close()


def test_keywords_come_from_the_llm_given_only_when_asked(store: Path) -> None:
    llm = ScriptedLlamaLLM(keywords={QUESTION: '{"high_level": ["flood"], "low_level": ["Odric Pelham"]}'})
    quiet = PathRAGIndexRetriever.from_store(store, llm=llm)
    assert quiet.retrieve(QUESTION) and llm.prompts == []  # the default mode makes no model call
    quiet.close()
    for asked in ({"keyword_llm": True}, {"context": "paths"}):
        llm.prompts.clear()
        retriever = PathRAGIndexRetriever.from_store(store, llm=llm, **asked)
        assert retriever.retrieve(QUESTION)
        assert [p.startswith("Pick the search keywords") for p in llm.prompts] == [True]
        retriever.close()


def test_an_endpoint_store_needs_its_embed_model(tmp_path: Path) -> None:
    index, _ = open_demo_index(tmp_path, embedder=EndpointNamed())
    index.close()
    retriever = PathRAGIndexRetriever.from_store(tmp_path)
    with pytest.raises(MissingEmbedderError, match="openai:text-embedding-3-small"):
        retriever.retrieve(QUESTION)
    retriever.close()
    # with the same model as a LlamaIndex embedding (here the offline one of the same vectors), it answers
    given = PathRAGIndexRetriever.from_store(tmp_path, embed_model=HashingEmbedding(256))
    assert given.retrieve(QUESTION)
    given.close()


def test_bad_input(tmp_path: Path, store: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no pathrag store"):
        PathRAGIndexRetriever.from_store(tmp_path / "missing")
    with pytest.raises(TypeError, match="pathrag.PathRAGIndex"):
        PathRAGIndexRetriever(object())  # type: ignore[arg-type]
    index = PathRAGIndex(store)
    with pytest.raises(ValueError, match="similarity_top_k"):
        PathRAGIndexRetriever(index, similarity_top_k=0)
    with pytest.raises(TypeError):
        PathRAGIndexRetriever(index, no_such_setting=1)
    index.close()
