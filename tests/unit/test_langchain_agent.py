"""The agent recipe: the retriever as a tool (create_retriever_tool), driven by langchain's create_agent."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import create_retriever_tool

from langchain_pathrag import PathRAGIndexer

from ..langchain_fakes import HARBOUR, QUESTION, WALL, ScriptedChatModel, embeddings


class ToolCallingFake(BaseChatModel):
    """Calls the tool with the user's question, then answers with the first line of what it returned."""

    @property
    def _llm_type(self) -> str:
        return "tool-calling-fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"According to the graph: {last.text.splitlines()[0]}")
        else:
            reply = AIMessage("", tool_calls=[{"name": "pathrag_search", "args": {"query": last.text}, "id": "call-1"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


async def test_agent_calls_the_retriever_tool_and_answers_from_its_output():
    indexer = PathRAGIndexer(ScriptedChatModel(), embeddings())
    indexer.add_documents([HARBOUR, WALL])
    retriever = indexer.as_retriever(llm=None, k=3)
    tool = create_retriever_tool(
        retriever,
        "pathrag_search",
        "Find how entities in the knowledge base are connected (key relational paths).",
        response_format="content_and_artifact",
    )
    agent = create_agent(ToolCallingFake(), tools=[tool])
    for result in (
        agent.invoke({"messages": [{"role": "user", "content": QUESTION}]}),
        await agent.ainvoke({"messages": [{"role": "user", "content": QUESTION}]}),
    ):
        human, call, tool_message, answer = result["messages"]
        assert isinstance(human, HumanMessage) and call.tool_calls[0]["args"] == {"query": QUESTION}
        expected = retriever.invoke(QUESTION)
        assert isinstance(tool_message, ToolMessage) and tool_message.artifact == expected
        assert all(isinstance(doc, Document) for doc in tool_message.artifact)
        assert tool_message.content == "\n\n".join(doc.page_content for doc in expected)
        assert answer.content == f"According to the graph: {expected[0].page_content.splitlines()[0]}"


def test_the_tool_of_the_default_retriever_returns_at_most_k_documents_within_the_budget():
    from pathrag.llm.tokens import approximate_token_count

    indexer = PathRAGIndexer(ScriptedChatModel(), embeddings())
    indexer.add_documents([HARBOUR, WALL])
    for k, budget in ((4, None), (50, 120), (50, 400)):
        options = {"k": k} if budget is None else {"k": k, "max_tokens": budget}
        retriever = indexer.as_retriever(llm=None, **options)
        output = create_retriever_tool(retriever, "pathrag_search", "Key paths.").invoke({"query": QUESTION})
        docs = retriever.invoke(QUESTION)
        assert 1 <= len(docs) <= k and output == "\n\n".join(doc.page_content for doc in docs)
        if budget is not None:
            assert approximate_token_count(output) <= budget
    default_output = create_retriever_tool(indexer.as_retriever(llm=None), "s", "d").invoke({"query": QUESTION})
    assert "—" in default_output.split("\n\n")[0]  # the best path leads, as one line of relation statements
