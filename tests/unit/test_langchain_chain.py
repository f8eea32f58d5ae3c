"""PATHRAG_PROMPT, format_paths and the LCEL chain."""

from __future__ import annotations

import functools
import itertools
import re

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_pathrag import PATHRAG_PROMPT, PathRAGIndexer, create_pathrag_chain, format_paths
from pathrag.llm.prompts import ANSWER_INSTRUCTIONS, CITATION_INSTRUCTIONS, EVIDENCE_INSTRUCTIONS
from pathrag.query.context import answer_prompt, result_context

from ..langchain_fakes import HARBOUR, QUESTION, WALL, ScriptedChatModel, embeddings

ANSWER = "Mara works for the Tide Board, which hired Ida, who designed the Sea Wall."


@functools.cache
def indexer() -> PathRAGIndexer:
    built = PathRAGIndexer(ScriptedChatModel(), embeddings())
    built.add_documents([HARBOUR, WALL])
    return built


def streaming_model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=itertools.cycle([AIMessage(ANSWER)]))  # streams word by word


def test_final_prompt_has_the_question_first_and_paths_in_ascending_score_order():
    retriever = indexer().as_retriever(llm=None, k=6, context="paths")
    llm = ScriptedChatModel(answer=ANSWER)
    assert create_pathrag_chain(retriever, llm).invoke(QUESTION) == ANSWER
    [prompt] = llm.prompts
    docs = retriever.invoke(QUESTION)
    assert prompt.startswith(f"Question: {QUESTION}\n")
    positions = [prompt.index(f"reliability {d.metadata['raw_score']:.3f}):\n{d.page_content}") for d in docs]
    assert all(p > len(QUESTION) for p in positions)
    by_position = [d for _, d in sorted(zip(positions, docs, strict=True), key=lambda pair: pair[0])]
    assert [d.metadata["raw_score"] for d in by_position] == sorted(d.metadata["raw_score"] for d in docs)
    assert by_position[-1].metadata["raw_score"] == docs[0].metadata["raw_score"]  # the best path is last
    assert prompt.rstrip().endswith(f"{ANSWER_INSTRUCTIONS} {CITATION_INSTRUCTIONS}")


def test_format_paths_puts_entity_fills_first_and_numbers_the_paths():
    docs = [
        Document(page_content="B (concept)", metadata={"kind": "path", "score": 0.9, "nodes": ["A", "B"]}),
        Document(page_content="C (concept)", metadata={"kind": "path", "score": 0.4, "nodes": ["A", "X", "C"]}),
        Document(page_content="D alone", metadata={"kind": "entity", "score": 0.0, "nodes": ["D"]}),
        Document(page_content="E alone", metadata={"kind": "entity", "score": 0.0, "nodes": ["E"]}),
    ]
    assert format_paths(docs) == (
        "Entity 1 (on no path):\nE alone\n\nEntity 2 (on no path):\nD alone\n\n"
        "Path 1 (2 hops, reliability 0.400):\nC (concept)\n\nPath 2 (1 hop, reliability 0.900):\nB (concept)"
    )
    assert format_paths([]) == "(no paths found)"
    assert format_paths(docs[2:3]) == "Entity 1 (on no path):\nD alone"


def test_prompt_is_the_core_wording():
    value = PATHRAG_PROMPT.invoke(
        {"context": "Question: Who?\n\nPath 1 ... {braces} stay", "instructions": EVIDENCE_INSTRUCTIONS}
    )
    [message] = value.to_messages()
    assert message.type == "human"
    assert message.content.startswith("Question: Who?") and "{braces} stay" in message.content
    assert message.content.endswith(EVIDENCE_INSTRUCTIONS)


@pytest.mark.parametrize("budget", [None, 150, 400])
def test_chain_prompt_is_the_core_prompt_for_the_same_question(budget):
    """One context everywhere: the chain sends exactly answer_prompt(result_context(...)) of the core."""
    built = indexer()
    llm = ScriptedChatModel(answer=ANSWER)
    retriever = built.as_retriever(llm=None, k=50, max_tokens=budget)  # one budget for retriever and chain
    create_pathrag_chain(retriever, llm, max_tokens=budget).invoke(QUESTION)
    result = built.index.retrieve(QUESTION, keyword_llm=False, max_tokens=budget)
    core = answer_prompt(result_context(result, max_items=50))
    assert re.search(r"\nPath \d+:\n", core)  # the best path is always shown
    assert ("\nPassage 1:\n" in core) == (budget != 150)  # and passages wherever they fit
    assert llm.prompts == [core]


@pytest.mark.parametrize(("k", "budget"), [(4, None), (6, 150), (50, 400), (3, 4000)])
async def test_the_chain_prompt_is_the_retrievers_laid_out_context(k, budget):
    """One budget, one layout: the chain, given no budget of its own, sends the retriever's context."""
    llm = ScriptedChatModel(answer=ANSWER)
    retriever = indexer().as_retriever(k=k, max_tokens=budget)
    laid_out = retriever.invoke_laid_out(QUESTION)
    expected = answer_prompt(laid_out.context)
    assert laid_out.context.text in expected and len(laid_out.documents) == len(laid_out.context.items) <= k
    if budget is not None:
        assert laid_out.context.tokens <= budget
    create_pathrag_chain(retriever, llm).invoke(QUESTION)
    await create_pathrag_chain(retriever, llm).ainvoke(QUESTION)
    assert llm.prompts == [expected, expected]
    # a budget given to the chain is the retrieval's budget for its calls: still one layout
    llm.prompts.clear()
    create_pathrag_chain(retriever, llm, max_tokens=120).invoke(QUESTION)
    assert llm.prompts == [answer_prompt(retriever.invoke_laid_out(QUESTION, max_tokens=120).context)]


async def test_return_sources_gives_what_the_answer_cites_apart_from_what_was_sent():
    retriever = indexer().as_retriever(k=6)
    context = retriever.invoke_laid_out(QUESTION).context
    passages = [n for n, item in enumerate(context.items, start=1) if item.kind == "passage"]
    paths = [n for n, item in enumerate(context.items, start=1) if item.kind == "path"]
    assert passages and paths
    cites = f"Mara works for the Tide Board [{paths[-1]}], and Ida designed the wall [{passages[0]}][99]."
    chain = create_pathrag_chain(retriever, ScriptedChatModel(answer=cites), return_sources=True)
    for result in (chain.invoke(QUESTION), await chain.ainvoke({"question": QUESTION})):
        assert result["answer"] == cites
        assert [d.metadata["id"] for d in result["sources"]] == [
            context.items[paths[-1] - 1].id,
            context.items[passages[0] - 1].id,
        ]
        assert result["sent"] == retriever.invoke(QUESTION)  # everything the prompt held, best first
    uncited = create_pathrag_chain(retriever, ScriptedChatModel(answer="No marks."), return_sources=True)
    assert uncited.invoke(QUESTION)["sources"] == []
    with pytest.raises(ValueError, match="not both"):
        create_pathrag_chain(retriever, ScriptedChatModel(), return_sources=True, return_paths=True)


def test_documents_without_ids_from_another_retriever_are_cited_one_by_one():
    from langchain_core.runnables import RunnableLambda

    ana = Document(page_content="Ana lives in Oslo.", metadata={"kind": "passage", "score": 0.5})
    ben = Document(page_content="Ben lives in Rome.", metadata={"kind": "passage", "score": 0.9})
    retriever = RunnableLambda(lambda question: [ben, ana])  # not a PathRAGRetriever: laid out by the chain
    chain = create_pathrag_chain(retriever, ScriptedChatModel(answer="Ana: Oslo [1]."), return_sources=True)
    result = chain.invoke("Where does Ana live?")
    assert result["sources"] == [ana]  # passage 1, the less relevant one, is Ana's
    assert result["sent"] == [ben, ana]
    tight = create_pathrag_chain(retriever, ScriptedChatModel(answer="[1]"), return_sources=True, max_tokens=40)
    assert tight.invoke("Where does Ana live?")["sent"] == [ben]  # what the budget cut was not sent


async def test_invoke_ainvoke_batch_stream_astream_agree():
    chain = create_pathrag_chain(indexer().as_retriever(llm=None, k=3), streaming_model())
    assert chain.invoke(QUESTION) == ANSWER
    assert await chain.ainvoke({"question": QUESTION}) == ANSWER
    assert chain.batch([QUESTION, {"question": QUESTION}]) == [ANSWER, ANSWER]
    assert await chain.abatch([QUESTION]) == [ANSWER]
    chunks = list(chain.stream(QUESTION))
    assert len(chunks) > 5 and "".join(chunks) == ANSWER
    achunks = [c async for c in chain.astream(QUESTION)]
    assert len(achunks) > 5 and "".join(achunks) == ANSWER


async def test_return_paths_gives_the_answer_with_the_retrieved_documents():
    retriever = indexer().as_retriever(llm=None, k=4)
    chain = create_pathrag_chain(retriever, streaming_model(), return_paths=True)
    result = chain.invoke(QUESTION)
    assert result == {"question": QUESTION, "paths": retriever.invoke(QUESTION), "answer": ANSWER}
    assert await chain.ainvoke(QUESTION) == result
    merged: dict = {}
    async for chunk in chain.astream(QUESTION):
        for key, value in chunk.items():
            merged[key] = merged.get(key, "") + value if key == "answer" else value
    assert merged == result


async def test_empty_question_still_gets_an_answer_from_no_paths():
    llm = ScriptedChatModel(answer="The knowledge graph does not cover it.")
    assert create_pathrag_chain(indexer().as_retriever(llm=None), llm).invoke("") == llm.answer
    assert "(no paths found)" in llm.prompts[0]


@pytest.mark.parametrize("bad", [42, {"query": QUESTION}, {"question": 42}, None])
async def test_bad_chain_input_is_a_type_error(bad):
    chain = create_pathrag_chain(indexer().as_retriever(llm=None), streaming_model())
    with pytest.raises(TypeError, match="expected a question string"):
        chain.invoke(bad)
    with pytest.raises(TypeError, match="expected a question string"):
        await chain.ainvoke(bad)


def test_chain_prompt_is_the_core_prompt_in_the_paths_layout_too():
    built = indexer()
    llm = ScriptedChatModel(answer=ANSWER)
    create_pathrag_chain(built.as_retriever(llm=None, context="paths", top_k=20, k=20), llm).invoke(QUESTION)
    core = answer_prompt(result_context(built.index.retrieve(QUESTION, keyword_llm=False, context="paths", top_k=20)))
    assert llm.prompts == [core] and core.endswith(f"{ANSWER_INSTRUCTIONS} {CITATION_INSTRUCTIONS}")
