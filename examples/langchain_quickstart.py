"""PathRAG in LangChain: load documents, build the index, retrieve the key paths, answer with LCEL.

Run offline (no key, no network; a stand-in chat model replays recorded extractions):

    python examples/langchain_quickstart.py

Run with OpenAI (gpt-4o-mini and text-embedding-3-small; set OPENAI_MODEL to change the model):

    OPENAI_API_KEY=sk-... python examples/langchain_quickstart.py ["your question"]
"""

from __future__ import annotations

import os
import sys
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langchain_pathrag import PathRAGEmbeddings, PathRAGIndexer, create_pathrag_chain
from pathrag import HashingEmbedder
from pathrag.demo import DEMO_PARAMS, ReplayLLM, ReplayMiss, load_corpus, load_questions


def load_documents() -> list[Document]:
    """The demo corpus: six short texts about a harbour town, its flood and the inquiry after it."""
    return [Document(page_content=d.text, id=d.id, metadata={"source": f"{d.id}.md"}) for d in load_corpus()]


class OfflineChatModel(BaseChatModel):
    """A stand-in chat model so that the example runs anywhere.

    Extraction and keyword prompts get the answers recorded with the demo corpus
    (:class:`pathrag.demo.ReplayLLM`); the answer prompt gets its most reliable path, quoted.
    """

    replay: Any  # a pathrag.demo.ReplayLLM

    @property
    def _llm_type(self) -> str:
        return "offline-demo"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = "\n".join(str(m.text) for m in messages)
        try:
            reply = self.replay.complete(prompt)
        except ReplayMiss:  # the answer prompt: its last path is the most reliable one
            last = prompt.rsplit("\nPath ", 1)[-1].split("\n\n", 1)[0]
            reply = f"(offline stand-in model) The most reliable path is Path {last}"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])


def models() -> tuple[BaseChatModel, Embeddings]:
    if os.environ.get("OPENAI_API_KEY"):
        from langchain_openai import ChatOpenAI, OpenAIEmbeddings

        return (
            ChatOpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), temperature=0),
            OpenAIEmbeddings(model="text-embedding-3-small"),
        )
    return OfflineChatModel(replay=ReplayLLM.from_directory()), PathRAGEmbeddings(HashingEmbedder())


def main(question: str | None = None) -> str:
    question = question or load_questions()[0].question
    llm, embeddings = models()
    print(f"model: {llm._llm_type}")

    # 1. Index: split, extract entities and relations, merge them into a graph, embed.
    indexer = PathRAGIndexer(llm, embeddings)
    summary = indexer.add_documents(load_documents())
    print(
        f"indexed {summary.documents} documents: {summary.entities} entities, {summary.relations} relations, "
        f"{summary.llm_calls} LLM calls"
    )

    # 2. Retrieve k documents, best first: the key relational paths and the passages behind them, within
    #    a token budget. The demo graph is tiny (37 entities), so it uses few seeds and a low pruning
    #    threshold (see pathrag.demo.DEMO_PARAMS), not the paper's defaults.
    retriever = indexer.as_retriever(params=DEMO_PARAMS.override(max_tokens=2000), k=6)
    print(f"\n{question}")
    for doc in retriever.invoke(question):
        if doc.metadata["kind"] == "passage":
            print(f"  passage  {doc.page_content.splitlines()[0]}")
        else:
            print(f"  {doc.metadata['kind']}  {doc.metadata['score']:.3f}  {' -> '.join(doc.metadata['nodes'])}")

    # 3. Answer with an LCEL chain (its prompt lists the paths least reliable first), streaming.
    chain = create_pathrag_chain(retriever, llm)
    print("\nAnswer: ", end="")
    answer = ""
    for chunk in chain.stream(question):
        print(chunk, end="", flush=True)
        answer += chunk
    print()
    return answer


if __name__ == "__main__":
    main(*sys.argv[1:2])
