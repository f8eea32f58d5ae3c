"""PathRAG in LlamaIndex: build a PropertyGraphIndex with PathRAGExtractor, retrieve key paths, answer.

Run offline (no key, no network; a stand-in LLM replays recorded extractions):

    python examples/llama_index_quickstart.py

Run with OpenAI (gpt-4o-mini and text-embedding-3-small; needs llama-index-llms-openai and
llama-index-embeddings-openai; set OPENAI_MODEL to change the model):

    OPENAI_API_KEY=sk-... python examples/llama_index_quickstart.py ["your question"]
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from typing import Any

from llama_index.core import Document, PropertyGraphIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import EntityNode
from llama_index.core.llms import LLM, CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.tools import QueryEngineTool

from llama_index_pathrag import HashingEmbedding, PathRAGExtractor, PathRAGQueryEngine
from pathrag.demo import DEMO_PARAMS, ReplayLLM, ReplayMiss, load_corpus, load_questions


def load_documents() -> list[Document]:
    """The demo corpus: six short texts about a harbour town, its flood and the inquiry after it."""
    return [
        Document(text=d.text, doc_id=d.id, metadata={"source": f"{d.id}.md"}, excluded_llm_metadata_keys=["source"])
        for d in load_corpus()
    ]


class OfflineLLM(CustomLLM):
    """A stand-in LLM so that the example runs anywhere.

    Extraction and keyword prompts get the answers recorded with the demo corpus
    (:class:`pathrag.demo.ReplayLLM`); the answer prompt gets its last, most reliable path, quoted.
    """

    replay: Any  # a pathrag.demo.ReplayLLM

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="offline-demo")

    def _reply(self, prompt: str) -> str:
        try:
            return self.replay.complete(prompt)
        except ReplayMiss:  # the answer prompt: the path right before the instructions is the most reliable
            last = prompt.rsplit("\n\nAnswer the question above", 1)[0].rsplit("\n\n", 1)[-1]
            chain = last.splitlines()[1]  # after the block's "Path N:" line: A —relation→ B ←relation— C
            names = re.split(r" (?:—[^→]*→|←[^—]*—) ", chain)
            return f"(offline stand-in model) The most reliable path is {' -> '.join(names)}."

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._reply(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self._reply(prompt)

        def one_chunk() -> CompletionResponseGen:
            yield CompletionResponse(text=text, delta=text)

        return one_chunk()


def models() -> tuple[LLM, BaseEmbedding]:
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from llama_index.embeddings.openai import OpenAIEmbedding
            from llama_index.llms.openai import OpenAI
        except ImportError as exc:
            raise SystemExit(
                "OPENAI_API_KEY is set but the OpenAI integrations are missing: "
                "pip install llama-index-llms-openai llama-index-embeddings-openai "
                "(or unset the key to run offline)"
            ) from exc

        return (
            OpenAI(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), temperature=0),
            OpenAIEmbedding(model="text-embedding-3-small"),
        )
    return OfflineLLM(replay=ReplayLLM.from_directory()), HashingEmbedding()


def build_index(llm: LLM, embed_model: BaseEmbedding) -> PropertyGraphIndex:
    """Extract entities and relations with pathrag's prompt, merged into the graph store.

    Passing the store to the extractor lets later inserts merge into what is stored.
    """
    store = SimplePropertyGraphStore()
    return PropertyGraphIndex.from_documents(
        load_documents(),
        property_graph_store=store,
        llm=llm,
        embed_model=embed_model,
        kg_extractors=[PathRAGExtractor(llm=llm, graph_store=store)],
        transformations=[SentenceSplitter(chunk_size=2048)],  # the demo texts were recorded one chunk each
        use_async=False,
    )  # LlamaIndex's async insert cannot run inside an event loop (Jupyter)


def main(question: str | None = None) -> str:
    question = question or load_questions()[0].question
    llm, embed_model = models()
    print(f"model: {llm.metadata.model_name}")

    # 1. Index.
    index = build_index(llm, embed_model)
    graph = index.property_graph_store.graph
    entities = [n for n in graph.nodes.values() if isinstance(n, EntityNode)]
    print(f"indexed {len(load_corpus())} documents: {len(entities)} entities, {len(graph.triplets)} relations")

    # 2. A query engine: key paths between the question's entities, laid out least reliable first (a
    #    property graph keeps no relation vectors, so these are the paper's key paths between the seeds).
    #    The demo graph is tiny, so it uses the demo's retrieval settings (pathrag.demo.DEMO_PARAMS).
    engine = PathRAGQueryEngine.from_index(index, llm=llm, streaming=True, **dataclasses.asdict(DEMO_PARAMS))
    print(f"\n{question}")
    for node in engine.retriever.retrieve(question):  # best first
        print(f"  {node.score:.3f}  {' -> '.join(node.metadata['nodes'])}")

    # 3. Answer, streaming. The prompt holds the question, then the paths least reliable first.
    print("\nAnswer: ", end="")
    answer = ""
    for token in engine.query(question).response_gen:
        print(token, end="", flush=True)
        answer += token
    print()

    # 4. For agents: the engine as a tool (an agent's LLM calls it with a question).
    tool = QueryEngineTool.from_defaults(
        engine, name="lowmarrow_graph", description="Answers questions about Lowmarrow, its flood and the inquiry."
    )
    print(f"\ntool {tool.metadata.name!r} is ready for FunctionAgent / ReActAgent(tools=[tool], llm=...)")
    return answer


if __name__ == "__main__":
    main(*sys.argv[1:2])
