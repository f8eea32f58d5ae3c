"""A stand-in OpenAI-compatible chat endpoint on loopback: answers by a function of yours, records every call.

For tests and benchmarks that must run a real client (``ChatOpenAI``, the ``openai`` package, ``pathrag
index`` with ``OPENAI_BASE_URL``) with no network and no key: :class:`OpenAIStub` serves
``POST /v1/chat/completions``, answers each prompt with ``answer(prompt, max_tokens)``, reports usage the way
a server does (prompt and completion tokens, counted with ``token_counter``, by default
:func:`pathrag.llm.tokens.count_tokens`) and keeps
each call in :attr:`OpenAIStub.calls`. An answer may be a :class:`StubError` to refuse the call with an HTTP
status and message (a context-window overflow is HTTP 400 with a message about the context).

Under pytest-socket, allow sockets first (``pytest_socket.enable_socket()``: it listens on loopback only)::

    with OpenAIStub(lambda prompt, max_tokens: "<|COMPLETE|>") as stub:
        llm = ChatOpenAI(model="stub", base_url=stub.url, api_key="sk-test")
        ...
    print(len(stub.calls), stub.prompt_tokens, stub.completion_tokens)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from ..llm.tokens import TokenCounter, count_tokens

__all__ = ["OpenAIStub", "StubCall", "StubError"]


@dataclass(frozen=True)
class StubError:
    """An answer that refuses the call: HTTP ``status`` with ``message`` (as an OpenAI error body)."""

    status: int
    message: str
    code: str = "stub_error"


@dataclass(frozen=True)
class StubCall:
    """One call the stub answered: the prompt (the messages' text, joined), the output cap asked for, the
    status, and the tokens it reported."""

    prompt: str
    max_tokens: int | None
    status: int
    prompt_tokens: int
    completion_tokens: int


Answer = Callable[[str, "int | None"], "str | StubError"]


class OpenAIStub:
    """A threaded HTTP server answering OpenAI chat completions on ``127.0.0.1`` (see the module docstring).

    Use it as a context manager (started on entry, stopped on exit); :attr:`url` is the ``base_url``."""

    def __init__(self, answer: Answer, *, token_counter: TokenCounter | None = None) -> None:
        self.answer = answer
        self.token_counter = token_counter
        self.calls: list[StubCall] = []
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            # connections kept alive, as real servers keep them: a client's pool is then reused across calls
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                stub._answer(self, body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True  # a client's kept-alive connection must not hold up the stop
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The ``base_url`` of the endpoint (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        prompt = "\n".join(_text(m.get("content")) for m in messages if isinstance(m, dict))
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        answer = self.answer(prompt, cap if isinstance(cap, int) else None)
        prompt_tokens = count_tokens(prompt, self.token_counter)
        if isinstance(answer, StubError):
            status = answer.status
            reply: dict[str, Any] = {"error": {"message": answer.message, "type": answer.code, "code": answer.code}}
            completion_tokens = 0
        else:
            status, completion_tokens = 200, count_tokens(answer, self.token_counter)
            reply = {
                "id": "stub",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "stub"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        with self._lock:
            self.calls.append(StubCall(prompt, cap, status, prompt_tokens, completion_tokens))
        data = json.dumps(reply).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def __enter__(self) -> OpenAIStub:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens of the calls answered (not refused)."""
        return sum(c.prompt_tokens for c in self.calls if c.status == 200)

    @property
    def completion_tokens(self) -> int:
        """Completion tokens of the calls answered."""
        return sum(c.completion_tokens for c in self.calls if c.status == 200)


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content blocks."""
    if isinstance(content, list):
        return "".join(str(part.get("text") or "") for part in content if isinstance(part, dict))
    return str(content or "")
