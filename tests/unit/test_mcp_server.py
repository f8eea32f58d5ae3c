"""`pathrag mcp --store DIR` as an MCP client meets it: spawned as a subprocess and spoken to over stdio by the
official SDK's own client, tools listed and each one called; a bad store or argument is the call's error and
the server keeps answering; `query` is there only with a model (here a stand-in OpenAI-compatible endpoint on
loopback)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_socket

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402 - after the skip
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from pathrag.demo import load_questions  # noqa: E402
from pathrag.testing.openai_stub import OpenAIStub  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
QUESTION = load_questions()[0].question  # a demo question whose answer crosses documents


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's store (six documents, hashing embeddings), made by the command line as a user would."""
    store = tmp_path_factory.mktemp("mcp") / "demo-store"
    done = subprocess.run(
        [sys.executable, "-m", "langchain_pathrag.cli", "demo", "--store", str(store), "--no-prompts"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return store


def _env(**extra: str) -> dict[str, str]:
    """The server's environment: no key of the tester's (so no model unless a test gives one), offline tokens."""
    import os

    keep = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "PATHRAG_"))}
    return keep | {"PATHRAG_TOKENIZER": "approximate"} | extra


def _server(store: Path, *args: str, **env: str) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "langchain_pathrag.cli", "mcp", "--store", str(store), *args],
        env=_env(**env),
        cwd=str(REPO),
    )
    return Client(params, read_timeout_seconds=120)


def _data(result: Any) -> dict[str, Any]:
    """A tool's answer: its structured content, which its text content repeats as JSON."""
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return dict(result.structured_content)


def _error(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


async def test_the_sdk_client_lists_the_tools_and_calls_each_over_stdio(demo_store: Path) -> None:
    async with _server(demo_store) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"retrieve", "paths", "stats"}  # no key: no model, no `query`
        assert "top_k" in tools["retrieve"].input_schema["properties"]
        assert tools["stats"].annotations is not None and tools["stats"].annotations.read_only_hint

        stats = _data(await client.call_tool("stats", {}))
        assert (stats["documents"], stats["documents_listed"]) == (6, 6)
        assert stats["entities"] > 0 and stats["relations"] > 0
        assert stats["embeddings"].startswith("hashing")
        assert all(chunks >= 1 for chunks in stats["document_chunks"].values())

        retrieved = _data(await client.call_tool("retrieve", {"question": QUESTION}))
        assert retrieved["context"].startswith(f"Question: {QUESTION}\n")
        assert retrieved["sources"], "a demo question finds evidence"
        kinds = {item["kind"] for item in retrieved["sources"]}
        assert "passage" in kinds and kinds & {"path", "entity"}
        documents = {doc for item in retrieved["sources"] for doc in item["documents"]}
        assert documents and documents <= set(stats["document_chunks"])
        assert all(item["text"] in retrieved["context"] or item["kind"] != "passage" for item in retrieved["sources"])

        found = _data(await client.call_tool("paths", {"question": QUESTION, "top_k": 3, "num_seeds": 3}))
        assert found["query"] == QUESTION and found["seeds"]
        key_paths = [item for item in found["items"] if item["kind"] == "path"]
        assert 1 <= len(key_paths) <= 3
        assert all(item["hops"] == len(item["nodes"]) - 1 for item in key_paths)

        smaller = _data(await client.call_tool("retrieve", {"question": QUESTION, "max_tokens": 300}))
        assert smaller["tokens"] <= 300 < retrieved["tokens"]

        # calls in flight together (the SDK runs each in a worker thread, each opens the store): the same answers
        together = await asyncio.gather(*(client.call_tool("retrieve", {"question": QUESTION}) for _ in range(4)))
        assert [_data(result) for result in together] == [retrieved] * 4


async def test_bad_arguments_are_tool_errors_and_the_server_keeps_answering(demo_store: Path) -> None:
    async with _server(demo_store) as client:
        assert "top_k" in _error(await client.call_tool("retrieve", {"question": QUESTION, "top_k": 0}))
        assert "question" in _error(await client.call_tool("paths", {}))
        assert "question" in _error(await client.call_tool("retrieve", {"question": ""}))
        assert "context" in _error(await client.call_tool("retrieve", {"question": QUESTION, "context": "all"}))
        unknown = _error(await client.call_tool("retrieve", {"question": QUESTION, "settings": {"thetta": 0.1}}))
        assert "thetta" in unknown
        bad = _error(await client.call_tool("paths", {"question": QUESTION, "settings": {"theta": -1}}))
        assert "theta" in bad
        assert _error(await client.call_tool("query", {"question": QUESTION})) == "Unknown tool: query"
        assert _data(await client.call_tool("stats", {}))["documents"] == 6  # still serving


async def test_a_missing_store_is_each_calls_error_not_a_dead_server(tmp_path: Path) -> None:
    store = tmp_path / "not-built-yet"
    async with _server(store) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == {"retrieve", "paths", "stats"}
        for name, arguments in (("stats", {}), ("retrieve", {"question": QUESTION}), ("paths", {"question": "x"})):
            message = _error(await client.call_tool(name, arguments))
            assert message.endswith(f"no pathrag store at {store} (build one with: pathrag index PATH --store {store})")
        assert not store.exists()  # a read never creates a store
        (tmp_path / "a-file").write_text("not a store", encoding="utf-8")
    async with _server(tmp_path / "a-file") as client:
        assert "is a file, not a pathrag store directory" in _error(await client.call_tool("stats", {}))


ANSWER = "Odric Pelham is linked to the flood through the harbour works [2][99]."


@pytest.fixture
def endpoint() -> Iterator[OpenAIStub]:
    pytest_socket.enable_socket()  # the suite blocks TCP; this stand-in endpoint listens on loopback only
    try:
        with OpenAIStub(lambda prompt, max_tokens: ANSWER) as stub:
            yield stub
    finally:
        pytest_socket.disable_socket(allow_unix_socket=True)


async def test_with_a_model_query_answers_from_the_context_retrieve_gives(
    demo_store: Path, endpoint: OpenAIStub
) -> None:
    async with _server(
        demo_store, "--model", "stub-model", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=endpoint.url
    ) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == {"retrieve", "paths", "stats", "query"}
        retrieved = _data(await client.call_tool("retrieve", {"question": QUESTION}))
        assert endpoint.calls == []  # retrieval calls no model, with one configured too
        answered = _data(await client.call_tool("query", {"question": QUESTION}))
        assert answered["answer"] == ANSWER
        assert answered["sent"] == retrieved["sources"]
        # the answer cites [2] and [99]: one source, the sent item numbered 2 (99 names nothing sent)
        assert answered["sources"] == [item for item in answered["sent"] if item["number"] == 2]
        assert "stub-model" in answered["model"]
        assert len(endpoint.calls) == 1  # one model call: the answer
        assert endpoint.calls[0].prompt.startswith(retrieved["context"] + "\n\n")
        assert "top_k" in _error(await client.call_tool("query", {"question": QUESTION, "top_k": -2}))
        assert len(endpoint.calls) == 1  # a refused call asks the model nothing
        again = _data(await client.call_tool("query", {"question": QUESTION, "max_tokens": 300}))
        assert again["answer"] == ANSWER and len(endpoint.calls) == 2  # a second call works too
        assert len(endpoint.calls[1].prompt) < len(endpoint.calls[0].prompt)  # within the smaller budget


def test_pathrag_mcp_help_names_the_tools() -> None:
    from typer.testing import CliRunner

    from langchain_pathrag.cli import app

    result = CliRunner().invoke(app, ["mcp", "--help"])
    assert result.exit_code == 0
    assert "retrieve" in result.output and "stdio" in result.output
