"""LangChain's standard retriever tests, offline, on a small indexed corpus."""

from __future__ import annotations

import functools
from typing import Any

from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_pathrag import PathRAGIndexer, PathRAGRetriever

from ..langchain_fakes import HARBOUR, QUESTION, WALL, ScriptedChatModel, embeddings


@functools.cache
def _indexer() -> PathRAGIndexer:
    indexer = PathRAGIndexer(ScriptedChatModel(), embeddings())
    indexer.add_documents([HARBOUR, WALL])
    return indexer


class TestPathRAGRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[PathRAGRetriever]:
        return PathRAGRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        indexer = _indexer()
        # the keyword model is shared by the retrievers of a test and called on every invoke
        return {"graph_store": indexer.graph_store, "entity_index": indexer.entity_store, "llm": indexer.llm}

    @property
    def retriever_query_example(self) -> str:
        return QUESTION


class TestIndexerAsRetrieverStandard(RetrieversIntegrationTests):
    """The retriever users build: ``PathRAGIndexer.as_retriever()`` with its defaults, passages included."""

    @property
    def retriever_constructor(self) -> type[PathRAGRetriever]:
        return PathRAGRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        # exactly what as_retriever() builds (checked below)
        return {"index": _indexer().index, "llm": _indexer().llm}

    @property
    def retriever_query_example(self) -> str:
        return QUESTION


def test_as_retriever_builds_what_the_standard_suite_checks() -> None:
    built = _indexer().as_retriever()
    params = TestIndexerAsRetrieverStandard().retriever_constructor_params
    assert built.index is params["index"] and built.llm is params["llm"]
    assert built.k == 4 and built.params == PathRAGRetriever(**params).params
    docs = built.invoke(QUESTION)
    assert [d.metadata["kind"] for d in docs].count("passage") >= 1  # the suite ran with passages
    assert docs[0].metadata["kind"] == "path"
