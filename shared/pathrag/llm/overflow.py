"""A prompt longer than the model's context window: how it is recognised, and the error that says so.

An OpenAI-compatible server refuses such a prompt with HTTP 400 and a message about the context
(OpenAI: "maximum context length", code ``context_length_exceeded``; llama.cpp: "the request exceeds
the available context size", type ``exceed_context_size_error``; vLLM: "... is longer than the maximum
model length"). Asking again cannot help, so :class:`~pathrag.llm.calls.LLMCaller` does not retry it, and
the extraction asks again with less text instead (see :func:`pathrag.index.extraction.extract_records`).
A model of your own can raise :class:`ContextOverflow` to say the same.

>>> class BadRequest(Exception):
...     status_code = 400
>>> is_context_overflow(BadRequest("the request exceeds the available context size")), is_context_overflow(
...     BadRequest("invalid model name"))
(True, False)
"""

from __future__ import annotations

import re

from ..errors import PathRAGError

__all__ = ["ContextOverflow", "is_context_overflow"]

_OVERFLOW_WORDS = re.compile(  # the prompt's length against the window, not any "exceeds" (a max_tokens too big)
    r"context (?:length|size|window)|maximum context|context_length|exceed_context|too long|too many tokens"
    r"|maximum (?:model |input )?length|longer than",
    re.IGNORECASE,
)


class ContextOverflow(PathRAGError, ValueError):
    """The prompt does not fit the model's context window (raise it from a model of your own to say so)."""


def _status(exc: BaseException) -> object:
    for holder in (exc, getattr(exc, "response", None)):
        for attribute in ("status_code", "status"):
            value = getattr(holder, attribute, None)
            if isinstance(value, int):
                return value
    return None


def is_context_overflow(exc: BaseException) -> bool:
    """Whether ``exc`` says the prompt was longer than the model's context window: a :class:`ContextOverflow`,
    or an HTTP 400 or 413 error whose message speaks of the context or the length."""
    if isinstance(exc, ContextOverflow):
        return True
    return _status(exc) in (400, 413) and bool(_OVERFLOW_WORDS.search(str(exc)))
