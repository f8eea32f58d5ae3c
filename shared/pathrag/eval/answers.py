"""One configuration answering one question: its retrieval, the answer prompt, the answer, and their cost.

The configuration's context function retrieves (its keyword calls are collected, see
:func:`~pathrag.eval.calls.collect_calls`); a :class:`~pathrag.query.context.PathContext` is answered with its
own instructions, exactly as ``pathrag query`` sends it, plain text with the configuration's prompt. A
failure costs that answer, never the run: the :class:`AnswerRecord` says what went wrong.

>>> AnswerRecord("q1", "default", "an answer", retrieval_s=0.25, answer_s=1.0).latency_s
1.25
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from dataclasses import dataclass, replace
from typing import Any

from ..llm.client import LanguageModel
from ..llm.tokens import TokenCounter, count_tokens
from ..query.context import PathContext, answer_prompt
from .calls import CallFailed, ModelCalls, collect_calls
from .configurations import Configuration
from .questions import Question, brief

__all__ = ["AnswerRecord", "answer"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AnswerRecord:
    """One configuration's answer to one question. ``error`` is set (and ``answer`` empty) when it failed."""

    question_id: str
    configuration: str
    answer: str
    context_tokens: int = 0
    prompt_tokens: int = 0
    answer_tokens: int = 0
    retrieval_calls: int = 0
    retrieval_tokens: int = 0
    retrieval_s: float = 0.0
    answer_s: float = 0.0
    error: str | None = None

    @property
    def latency_s(self) -> float:
        """Seconds from question to answer: retrieval and answer together."""
        return self.retrieval_s + self.answer_s


async def _context(config: Configuration, query: str) -> Any:
    """What ``config``'s context function returns for ``query``; a sync one runs in a worker thread."""
    function: Any = config.context  # sync or async: which one is known only here
    if inspect.iscoroutinefunction(function):
        value = function(query)
    else:
        value = await asyncio.to_thread(function, query)  # sync retrieval may block
    if inspect.isawaitable(value):
        value = await value
    return value


async def answer(
    calls: ModelCalls,
    model: LanguageModel,
    question: Question,
    config: Configuration,
    token_counter: TokenCounter | None = None,
) -> AnswerRecord:
    """``config``'s answer to ``question`` by ``model``, with its tokens and latency; failures recorded."""
    started = time.perf_counter()
    with collect_calls() as spent:
        try:
            value = await _context(config, question.text)
        except Exception as exc:  # a broken configuration costs its answers, not the run
            logger.warning("%s: retrieval failed for %r: %r", config.name, brief(question.text), exc)
            return AnswerRecord(question.id, config.name, "", error=f"retrieval: {type(exc).__name__}: {exc}")
    retrieval_s = time.perf_counter() - started
    if isinstance(value, PathContext):  # the index's own layout: its own instructions, as in pathrag query
        # without the request to cite: a judged answer is compared with the others' uncited ones
        context, prompt = value.text, answer_prompt(value, cite=False)
    else:
        context = str(value)
        prompt = config.prompt(context)
    base = AnswerRecord(
        question.id,
        config.name,
        "",
        context_tokens=count_tokens(context, token_counter),
        retrieval_calls=len(spent),
        retrieval_tokens=sum(r.prompt_tokens + r.answer_tokens for r in spent),
        retrieval_s=round(retrieval_s, 4),
    )
    try:
        record = await calls.ask(model, prompt, "answer")
    except CallFailed as exc:
        return replace(base, prompt_tokens=count_tokens(prompt, token_counter), error=str(exc))
    return replace(
        base,
        answer=record.answer,
        prompt_tokens=record.prompt_tokens,
        answer_tokens=record.answer_tokens,
        answer_s=record.latency_s,
    )
