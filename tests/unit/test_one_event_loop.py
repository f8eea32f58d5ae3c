"""Repeated sync calls with a real async HTTP client (issue 37, item 1).

A real ``ChatOpenAI`` (and a LlamaIndex LLM over ``openai.AsyncOpenAI``) talks to a stand-in
OpenAI-compatible endpoint on loopback that answers extraction prompts from the chunk's ``ENTITY`` /
``LINK`` lines. The endpoint keeps connections alive, as real servers do, so the client's connection pool
is reused from one call to the next: a sync API that ran each call in a loop of its own and closed it
broke the second call with ``RuntimeError('Event loop is closed')``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_socket
from langchain_core.documents import Document
from langchain_core.indexing import InMemoryRecordManager, index

from langchain_pathrag import PathRAGIndexer
from pathrag import IndexConfig
from pathrag._sync import run_sync, shared_loop
from pathrag.testing.facts import fact_answer
from pathrag.testing.openai_stub import OpenAIStub

from ..langchain_fakes import embeddings


def _answer(prompt: str, max_tokens: int | None) -> str:
    """Extraction prompts answered from the chunk's facts (the last text block of the prompt)."""
    extracted = fact_answer(prompt)
    return "ok" if extracted is None else extracted


@pytest.fixture
def endpoint() -> Iterator[OpenAIStub]:
    pytest_socket.enable_socket()  # the suite blocks TCP; this stand-in endpoint listens on loopback
    try:
        with OpenAIStub(_answer) as stub:  # keep-alive HTTP/1.1, as real servers
            yield stub
    finally:
        pytest_socket.disable_socket(allow_unix_socket=True)


#: One attempt per model call: a call broken by a closed loop shows as a chunk failure instead of a retry.
ONE_ATTEMPT = IndexConfig(max_attempts=1)


def _chat_openai(url: str) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="stub-model", base_url=url, api_key="sk-test", max_retries=0, temperature=0)


def _doc(i: int) -> Document:
    return Document(
        id=f"doc-{i}",
        page_content=f"ENTITY Keeper {i} | person | Keeps light {i}.\n"
        f"ENTITY Light {i} | object | Lighthouse number {i}.\n"
        f"LINK Keeper {i} | Light {i} | Keeper {i} tends Light {i}. | care | 5",
        metadata={"source": f"doc-{i}.txt"},
    )


def _entities(indexer: PathRAGIndexer) -> set[str]:
    return {e.name for e in indexer.graph_store.iter_entities()}


@pytest.mark.parametrize("store", ["memory", "directory"])
def test_three_sync_add_documents_with_chat_openai_fail_no_chunk(
    endpoint: OpenAIStub, tmp_path: Any, store: str
) -> None:
    path = tmp_path / "store" if store == "directory" else None
    indexer = PathRAGIndexer(_chat_openai(endpoint.url), embeddings(), path=path, config=ONE_ATTEMPT)
    asked = []
    for i in range(3):
        summary = indexer.add_documents([_doc(10 * i + j) for j in range(8)])  # 8 calls in flight: 8 connections
        assert summary.failures == [], summary.failures
        assert summary.chunks_extracted == 8
        asked.append(len(endpoint.calls))
    assert _entities(indexer) >= {f"KEEPER {10 * i + j}" for i in range(3) for j in range(8)}
    # the model was really asked over HTTP, and each run asked as much as the first (no call repeated)
    assert asked[0] >= 8 and asked == [asked[0], 2 * asked[0], 3 * asked[0]]
    indexer.close()


@pytest.mark.parametrize("store", ["memory", "directory"])
def test_three_runs_of_the_indexing_api_with_chat_openai(endpoint: OpenAIStub, tmp_path: Any, store: str) -> None:
    path = tmp_path / "store" if store == "directory" else None
    indexer = PathRAGIndexer(_chat_openai(endpoint.url), embeddings(), path=path, config=ONE_ATTEMPT)
    manager = InMemoryRecordManager("pathrag-test")
    manager.create_schema()
    docs: list[Document] = []
    for i in range(3):
        docs.extend(_doc(10 * i + j) for j in range(4))
        result = index(docs, manager, indexer.as_document_index(), cleanup="full")
        assert result["num_added"] == 4 and result["num_skipped"] == 4 * i
    assert _entities(indexer) >= {f"KEEPER {10 * i + j}" for i in range(3) for j in range(4)}
    indexer.close()


def test_sync_calls_share_one_open_loop_and_keep_the_callers_context() -> None:
    import contextvars

    seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="none")

    async def where() -> tuple[asyncio.AbstractEventLoop, str]:
        return asyncio.get_running_loop(), seen.get()

    seen.set("caller")
    first, value = run_sync(where())
    second, _ = run_sync(where())
    assert first is second is shared_loop() and not first.is_closed()
    assert value == "caller"

    async def inside_a_running_loop() -> asyncio.AbstractEventLoop:
        return run_sync(where())[0]  # a notebook's case: sync API called with a loop running

    assert asyncio.run(inside_a_running_loop()) is first


def test_errors_and_nested_calls_from_the_shared_loop() -> None:
    async def boom() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        run_sync(boom())

    async def nested() -> int:
        async def one() -> int:
            return 1

        return run_sync(one())  # sync code called from a coroutine of ours: must not wait on its own loop

    assert run_sync(nested()) == 1

    async def twice_nested() -> int:  # sync over async inside sync over async: the shared loop waits twice
        return run_sync(nested()) + 1

    assert run_sync(twice_nested()) == 2


def test_three_sync_llama_index_extractor_runs_with_a_real_async_openai_client(endpoint: OpenAIStub) -> None:
    import openai
    from llama_index.core.graph_stores import SimplePropertyGraphStore
    from llama_index.core.graph_stores.types import KG_NODES_KEY
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.schema import TextNode

    from llama_index_pathrag import PathRAGExtractor

    class AsyncOpenAILLM(CustomLLM):
        """A LlamaIndex LLM over the ``openai`` SDK's async client (pooled connections bound to a loop)."""

        url: str

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="stub-model")

        def _client(self) -> openai.AsyncOpenAI:
            client = self.__dict__.get("_async")
            if client is None:
                client = openai.AsyncOpenAI(base_url=self.url, api_key="sk-test", max_retries=0)
                self.__dict__["_async"] = client
            return client

        async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            answer = await self._client().chat.completions.create(
                model="stub-model", messages=[{"role": "user", "content": prompt}]
            )
            return CompletionResponse(text=answer.choices[0].message.content or "")

        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            raise AssertionError("the extractor uses acomplete")

        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise NotImplementedError

    llm = AsyncOpenAILLM(url=endpoint.url)
    extractor = PathRAGExtractor(llm=llm, graph_store=SimplePropertyGraphStore())
    for i in range(3):
        nodes = extractor([TextNode(id_=f"n{i}", text=_doc(i).page_content)])
        names = {entity.name for entity in nodes[0].metadata.get(KG_NODES_KEY, [])}
        assert f"KEEPER {i}" in names, nodes[0].metadata
    assert len(endpoint.calls) >= 3


def test_an_interrupt_raised_in_a_task_reaches_the_caller_and_the_loop_goes_on() -> None:
    async def interrupted() -> None:
        async def child() -> None:
            raise KeyboardInterrupt  # what a Ctrl+C inside the loop looks like to the tasks

        await asyncio.gather(asyncio.ensure_future(child()))

    with pytest.raises(KeyboardInterrupt):
        run_sync(interrupted())

    async def fine() -> str:
        return "still running"

    assert run_sync(fine()) == "still running" and not shared_loop().is_closed()
