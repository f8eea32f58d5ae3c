"""The index's LLM calls: an answer cache, retries with back-off, a concurrency limit and usage counts.

Every extraction and summary prompt of :class:`~pathrag.PathRAGIndex` goes through
:meth:`LLMCaller.ask`. An answer is cached under :func:`cache_key` (the model's name and the prompt)
the moment it arrives, so a re-run after a crash never pays for it again. The calls of one insert or
delete share an :class:`OperationCalls`: the concurrency limit and the counters its summary reports.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Protocol

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from ..errors import ModelUnreachable
from ..ids import digest
from ..names import replace_surrogates
from .client import LanguageModel
from .overflow import is_context_overflow
from .tokens import TokenCounter, count_tokens

__all__ = ["AnswerCache", "BoundAsk", "LLMCaller", "OperationCalls", "cache_key"]


class AnswerCache(Protocol):
    """Where answers are kept by :func:`cache_key` (an index's LLM cache table)."""

    def __contains__(self, key: object) -> bool: ...

    def __getitem__(self, key: str) -> str: ...

    def __setitem__(self, key: str, value: str) -> None: ...


def cache_key(model_name: str, prompt: str) -> str:
    """The key of a model's answer to ``prompt`` in the LLM cache."""
    return digest(model_name, prompt)


class OperationCalls:
    """What the concurrent LLM calls of one insert or delete share: the limit and the counters."""

    def __init__(self, max_concurrency: int) -> None:
        self.semaphore = asyncio.Semaphore(max_concurrency)  # created inside the operation's own loop
        self.calls = self.hits = self.prompt_tokens = self.completion_tokens = 0


class LLMCaller:
    """Asks a model, behind ``cache`` (when ``use_cache``), the operation's concurrency limit, and up to
    ``max_attempts`` attempts with random exponential back-off.

    ``cache=None`` leaves caching to the caller (the evaluation journals each call with its tokens and
    latency, see :class:`pathrag.eval.calls.ModelCalls`).
    """

    def __init__(
        self,
        cache: AnswerCache | None,
        *,
        use_cache: bool = True,
        max_attempts: int = 4,
        retry_initial_wait: float = 1.0,
        retry_max_wait: float = 30.0,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.cache = cache
        self.use_cache = use_cache
        self.max_attempts = max_attempts
        self.retry_initial_wait = retry_initial_wait
        self.retry_max_wait = retry_max_wait
        self._line_tokens = functools.lru_cache(maxsize=8192)(lambda line: count_tokens(line, token_counter))

    def usage_tokens(self, text: str) -> int:
        """Token count for the usage report, line by line with a memo: prompts share most lines."""
        return sum(self._line_tokens(line) for line in text.split("\n")) + text.count("\n")

    async def ask(self, llm: LanguageModel, prompt: str, calls: OperationCalls) -> str:
        """``llm``'s answer to ``prompt``: from the cache, else asked (with retries) and cached.

        Counts the call, cache hit and tokens in ``calls``. Raises the last error once every attempt
        has failed.
        """
        cached = self.recall(llm, prompt, calls)
        if cached is not None:
            return cached
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=wait_random_exponential(multiplier=self.retry_initial_wait, max=self.retry_max_wait),
            retry=retry_if_exception(_worth_retrying),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                async with calls.semaphore:  # the limit covers calls, not back-off sleeps
                    calls.calls += 1
                    answer = await llm.acomplete(prompt)
        answer = replace_surrogates(answer)  # a lone surrogate could not be cached, stored or sent on
        calls.prompt_tokens += self.usage_tokens(prompt)
        calls.completion_tokens += self.usage_tokens(answer)
        self.remember(llm, prompt, answer)  # written at once: a crash does not make us pay for it again
        return answer

    def recall(self, llm: LanguageModel, prompt: str, calls: OperationCalls) -> str | None:
        """``llm``'s cached answer to ``prompt`` (counted as a hit in ``calls``), or ``None``."""
        key = cache_key(llm.name, prompt)
        if self.use_cache and self.cache is not None and key in self.cache:
            calls.hits += 1
            return self.cache[key]
        return None

    def remember(self, llm: LanguageModel, prompt: str, answer: str) -> None:
        """Cache ``answer`` as ``llm``'s to ``prompt`` (when caching is on)."""
        if self.use_cache and self.cache is not None:
            self.cache[cache_key(llm.name, prompt)] = answer

    def bound(self, llm: LanguageModel, calls: OperationCalls) -> BoundAsk:
        """``llm`` asked through this caller for one operation (see :class:`BoundAsk`)."""
        return BoundAsk(self, llm, calls)


class BoundAsk:
    """A model as one operation asks it: ``await ask(prompt)`` goes through the caller's cache, limit and
    retries; :meth:`recall` and :meth:`remember` read and write the cache for answers got another way (a
    chunk's share of a packed answer, see :mod:`pathrag.index.packing`)."""

    def __init__(self, caller: LLMCaller, llm: LanguageModel, calls: OperationCalls) -> None:
        self._caller, self._llm, self._calls = caller, llm, calls

    async def __call__(self, prompt: str) -> str:
        """The model's answer to ``prompt`` (see :meth:`LLMCaller.ask`)."""
        return await self._caller.ask(self._llm, prompt, self._calls)

    def recall(self, prompt: str) -> str | None:
        """The cached answer to ``prompt``, or ``None``."""
        return self._caller.recall(self._llm, prompt, self._calls)

    def remember(self, prompt: str, answer: str) -> None:
        """Cache ``answer`` for ``prompt``."""
        self._caller.remember(self._llm, prompt, answer)


def _worth_retrying(error: BaseException) -> bool:
    """Any failure of a call is tried again, but a refused connection (nothing listens at that address) and a
    prompt longer than the model's context window."""
    if not isinstance(error, Exception) or is_context_overflow(error):
        return False  # a prompt too long for the model's window gets the same answer every time
    return not (isinstance(error, ModelUnreachable) and error.refused)
