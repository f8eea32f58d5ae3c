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
