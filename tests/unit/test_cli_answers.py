"""``pathrag query`` with a real ``ChatOpenAI`` against a stand-in endpoint: the sources the answer cites,
apart from the context it was sent (issue 37, item 3), and a refused connection that fails at once naming
the URL it tried (item 10)."""

from __future__ import annotations

import json
import logging
import re
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_socket
from typer.testing import CliRunner

from langchain_pathrag.cli import app
from pathrag.demo import demo_data
from pathrag.testing.openai_stub import OpenAIStub

DATA = Path(str(demo_data()))
QUESTION = "How is Odric Pelham connected to the Lantern Night Flood?"


@pytest.fixture
def sockets() -> Iterator[None]:
    pytest_socket.enable_socket()  # the suite blocks TCP; these tests talk to loopback only
    try:
        yield
    finally:
        pytest_socket.disable_socket(allow_unix_socket=True)


@pytest.fixture
def endpoint(sockets: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    """The stand-in model ``pathrag query`` reaches through ``OPENAI_BASE_URL``; set its ``answer`` per test."""
    with OpenAIStub(lambda prompt, max_tokens: "") as stub:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        yield stub


@pytest.fixture
def store(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("02-greyfen-expansion-plan.md", "06-morrow-inquiry-findings.md"):
        shutil.copy(DATA / "corpus" / name, docs / name)
    result = run("index", docs, "--store", tmp_path / "store", "--replay", DATA)
    assert result.exit_code == 0, result.output
    return tmp_path / "store"


def run(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def test_query_lists_the_sources_the_answer_cites_apart_from_what_it_sent(store: Path, endpoint: OpenAIStub) -> None:
    sent = json.loads(run("query", QUESTION, "--store", store, "--context-only", "--json").stdout)["sent"]
    assert len(sent) >= 3
    first, last = sent[0], sent[-1]
    answer = f"Pelham ordered the dredging [{first['number']}], which led to the flood [{last['number']}][999]."
    endpoint.answer = lambda prompt, max_tokens: answer
    result = run("query", QUESTION, "--store", store)
    assert result.exit_code == 0, result.output
    [prompt] = [call.prompt for call in endpoint.calls]
    assert "cite the numbered passages or paths" in prompt
    cited_lines = re.findall(r"^  \[(\d+)\] ", result.stdout, re.M)
    assert cited_lines == [str(first["number"]), str(last["number"])]  # cited only, in the order cited
    assert f"Context sent to the model: {len(sent)} items" in result.stdout and "sent is not used" in result.stdout

    answered = json.loads(run("query", QUESTION, "--store", store, "--json").stdout)
    assert [s["number"] for s in answered["sources"]] == [first["number"], last["number"]]
    assert [s["id"] for s in answered["sent"]] == [s["id"] for s in sent]
    assert all(0.0 <= s["score"] <= 1.0 for s in answered["sent"])  # one scale for every kind
    assert max(s["score"] for s in answered["sent"] if s["kind"] == "path") == 1.0

    endpoint.answer = lambda prompt, max_tokens: "The inquiry does not say."
    result = run("query", QUESTION, "--store", store)
    assert "The answer cites no numbered source." in result.stdout


def test_a_refused_connection_fails_at_once_naming_the_url(
    store: Path, sockets: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as probe:  # a loopback port where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    with caplog.at_level(logging.INFO, logger="openai"):
        result = run("query", QUESTION, "--store", store)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: ModelUnreachable: cannot reach the model at {url}/chat/completions: ")
    assert "connection refused" in result.stderr and "OPENAI_BASE_URL" in result.stderr
    assert not [r for r in caplog.records if "Retrying request" in r.getMessage()]  # the SDK did not retry
