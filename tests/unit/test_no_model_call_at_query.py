"""No model call at query time by default (issue 37, item 5): a retriever made from an indexer that holds a
chat model asks it nothing in the default mode; the paper's mode (``context="paths"``) keeps its keyword
step, and ``keyword_llm=True`` opts in to it in any mode. Counted on a real ``BaseChatModel`` that records
every prompt."""

from __future__ import annotations

import pytest

from langchain_pathrag import PathRAGIndexer, create_pathrag_chain

from ..langchain_fakes import HARBOUR, KEYWORDS_HEAD, QUESTION, WALL, ScriptedChatModel, embeddings


@pytest.fixture
def indexed() -> tuple[PathRAGIndexer, ScriptedChatModel]:
    llm = ScriptedChatModel()
    indexer = PathRAGIndexer(llm, embeddings())
    indexer.add_documents([HARBOUR, WALL])
    llm.prompts.clear()
    return indexer, llm


def _keyword_prompts(llm: ScriptedChatModel) -> int:
    return sum(prompt.startswith(KEYWORDS_HEAD) for prompt in llm.prompts)


async def test_the_default_retriever_makes_no_model_call(indexed: tuple[PathRAGIndexer, ScriptedChatModel]) -> None:
    indexer, llm = indexed
    retriever = indexer.as_retriever()
    for _ in range(3):
        assert retriever.invoke(QUESTION)
    assert await retriever.ainvoke(QUESTION)
    assert retriever.batch([QUESTION, "Who is Ida?"])
    assert llm.prompts == []


@pytest.mark.parametrize(
    "settings", [{"context": "paths"}, {"keyword_llm": True}, {"search_kwargs": {"keyword_llm": True}}]
)
async def test_keywords_from_the_model_are_one_call_per_retrieval_when_asked(
    indexed: tuple[PathRAGIndexer, ScriptedChatModel], settings: dict
) -> None:
    indexer, llm = indexed
    retriever = indexer.as_retriever(**settings)
    assert retriever.invoke(QUESTION)
    assert await retriever.ainvoke(QUESTION)
    assert _keyword_prompts(llm) == 2 and len(llm.prompts) == 2


def test_keyword_llm_false_never_asks_even_in_the_papers_mode(
    indexed: tuple[PathRAGIndexer, ScriptedChatModel],
) -> None:
    indexer, llm = indexed
    assert indexer.as_retriever(context="paths", keyword_llm=False).invoke(QUESTION)
    assert llm.prompts == []


def test_a_chain_answer_is_the_one_model_call_of_a_question(indexed: tuple[PathRAGIndexer, ScriptedChatModel]) -> None:
    indexer, llm = indexed
    chain = create_pathrag_chain(indexer.as_retriever(), llm)
    assert chain.invoke(QUESTION) == "scripted answer"
    assert len(llm.prompts) == 1 and _keyword_prompts(llm) == 0
