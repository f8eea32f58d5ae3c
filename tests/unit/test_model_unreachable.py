"""A model that cannot be reached: the error names the URL, and a refused connection is not retried."""

from __future__ import annotations

import asyncio
import pickle

import httpx
import pytest

from langchain_pathrag.adapters import model_unreachable
from pathrag import as_language_model
from pathrag.errors import ModelUnreachable
from pathrag.llm.calls import LLMCaller, OperationCalls

URL = "http://127.0.0.1:9/v1/chat/completions"


def _ask(error: Exception) -> tuple[int, BaseException]:
    async def failing(prompt: str) -> str:
        raise error

    async def go() -> tuple[int, BaseException]:
        calls = OperationCalls(1)
        caller = LLMCaller(None, max_attempts=3, retry_initial_wait=0.0, retry_max_wait=0.0)
        with pytest.raises(type(error)) as raised:
            await caller.ask(as_language_model(failing, name="down"), "hi", calls)
        return calls.calls, raised.value

    return asyncio.run(go())


def test_a_refused_connection_is_asked_once_and_other_failures_are_retried() -> None:
    calls, error = _ask(ModelUnreachable(URL, "connection refused", refused=True))
    assert calls == 1 and URL in str(error)
    assert _ask(ModelUnreachable(URL, "timed out"))[0] == 3
    assert _ask(TimeoutError("slow"))[0] == 3


def test_connection_errors_are_named_by_their_url() -> None:
    request = httpx.Request("POST", URL)
    refused = model_unreachable(httpx.ConnectError("[Errno 111] Connection refused", request=request))
    assert refused is not None and refused.refused and refused.url == URL
    timeout = model_unreachable(httpx.ConnectTimeout("timed out", request=request))
    assert timeout is not None and not timeout.refused and "timed out" in str(timeout)
    try:  # wrapped as an SDK wraps it: the cause still names the request
        try:
            raise httpx.ConnectError("Name or service not known", request=request)
        except httpx.ConnectError as exc:
            raise RuntimeError("Connection error.") from exc
    except RuntimeError as wrapped:
        named = model_unreachable(wrapped)
    assert named is not None and named.url == URL and "Name or service not known" in str(named)
    assert model_unreachable(httpx.ConnectError("no request")) is None  # nothing to name
    assert model_unreachable(ValueError("the model said no")) is None
    again = pickle.loads(pickle.dumps(refused))
    assert str(again) == str(refused) and again.refused
