"""Every model call of an evaluation: journalled, reused, limited, retried, counted and priced.

:class:`ModelCalls` asks through the core's :class:`~pathrag.llm.calls.LLMCaller` (concurrency limit,
retries with back-off) and journals each answer in a :class:`~pathrag.files.Journal` the moment it
arrives, with its token counts and latency. An answer already in the journal, or being asked for by
another task, is reused: an interrupted run pays again only for the calls that were in flight.

>>> Pricing.parse("0.15,0.60").cost(1_000_000, 500_000)
0.45
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..errors import PathRAGError
from ..files import Journal
from ..llm.calls import LLMCaller, OperationCalls, cache_key
from ..llm.client import LanguageModel
from ..llm.tokens import TokenCounter, count_tokens
from .prompts import RETRY_SUFFIX

__all__ = ["CallFailed", "CallRecord", "ModelCalls", "Pricing", "RecordedModel", "Usage", "collect_calls"]


@dataclass(frozen=True)
class Pricing:
    """Prices in currency units per million tokens (prompt, answer)."""

    prompt_per_million: float = 0.0
    answer_per_million: float = 0.0

    def cost(self, prompt_tokens: int, answer_tokens: int) -> float:
        """The price of ``prompt_tokens`` prompt and ``answer_tokens`` answer tokens."""
        return (prompt_tokens * self.prompt_per_million + answer_tokens * self.answer_per_million) / 1e6

    @classmethod
    def parse(cls, text: str) -> Pricing:
        """``"0.15,0.60"`` (prompt, answer per million tokens).

        Raises:
            ValueError: not two non-negative numbers.
        """
        parts = [p.strip() for p in str(text).split(",")]
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 2 or any(not math.isfinite(v) or v < 0 for v in values):
            raise ValueError(f"a price is two non-negative numbers 'PROMPT,ANSWER' per million tokens, got {text!r}")
        return cls(values[0], values[1])


@dataclass(frozen=True)
class CallRecord:
    """One model call as journalled: who answered what, its size and how long it took."""

    key: str
    model: str
    role: str
    answer: str
    prompt_tokens: int
    answer_tokens: int
    latency_s: float


@dataclass
class Usage:
    """Calls and tokens of one role. ``calls`` were made by this run; ``reused`` came from the journal
    (or a duplicate in flight). Token totals cover both: they are what the evaluation costs in full."""

    calls: int = 0
    reused: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    answer_tokens: int = 0
    new_prompt_tokens: int = 0
    new_answer_tokens: int = 0
    cost: float = 0.0
    new_cost: float = 0.0


class CallFailed(PathRAGError):
    """A model call failed after every attempt (nothing is journalled, so a re-run asks again)."""


#: The model calls made while computing one context (keywords), collected per answer task.
_SPENT: contextvars.ContextVar[list[CallRecord] | None] = contextvars.ContextVar("pathrag_eval_spent", default=None)


@contextlib.contextmanager
def collect_calls() -> Iterator[list[CallRecord]]:
    """The calls made or reused inside this block, by this task and the tasks and threads it starts.

    >>> with collect_calls() as spent:
    ...     pass
    >>> spent
    []
    """
    spent: list[CallRecord] = []
    token = _SPENT.set(spent)
    try:
        yield spent
    finally:
        _SPENT.reset(token)


class _Timed:
    """``model``, timing each answer and refusing one that is not text (so that it is retried)."""

    def __init__(self, model: LanguageModel) -> None:
        self._model = model
        self.name = model.name
        self.latency_s = 0.0

    def complete(self, prompt: str) -> str:
        raise NotImplementedError("ModelCalls asks asynchronously")

    async def acomplete(self, prompt: str) -> str:
        started = time.perf_counter()
        answer = await self._model.acomplete(prompt)
        latency = time.perf_counter() - started
        if not isinstance(answer, str):
            raise TypeError(f"the model returned {type(answer).__name__}, not text")
        self.latency_s = latency  # the attempt that answered: back-off sleeps and failed attempts excluded
        return answer


class ModelCalls:
    """The model calls of an evaluation, journalled in ``journal`` (None: kept in memory only).

    ``max_concurrency`` calls are in flight at once (all roles together); each is tried ``max_attempts``
    times with random exponential back-off from ``retry_wait`` seconds. Tokens are counted with
    ``token_counter`` and priced with ``prices`` per role (``"answer"``, ``"keywords"``, ``"judge"``,
    ``"questions"``). Calls are made inside :meth:`session`, in the event loop of the run.

    >>> import asyncio
    >>> from pathrag.llm.client import as_language_model
    >>> shout = as_language_model(lambda prompt: prompt.upper(), name="shout")
    >>> calls = ModelCalls()
    >>> async def twice():
    ...     with calls.session():
    ...         first = await calls.ask(shout, "hi", "answer")
    ...         again = await calls.ask(shout, "hi", "answer")  # reused, not asked again
    ...     return again.answer, calls.usage["answer"].calls, calls.usage["answer"].reused
    >>> asyncio.run(twice())
    ('HI', 1, 1)
    """

    def __init__(
        self,
        journal: str | Path | None = None,
        *,
        max_concurrency: int = 4,
        max_attempts: int = 3,
        retry_wait: float = 1.0,
        token_counter: TokenCounter | None = None,
        prices: Mapping[str, Pricing] | None = None,
    ) -> None:
        self._journal = Journal(journal) if journal is not None else None
        self._caller = LLMCaller(
            None,  # the journal below is the cache: it keeps tokens and latency with each answer
            max_attempts=max_attempts,
            retry_initial_wait=retry_wait,
            retry_max_wait=max(retry_wait, 30.0),
            token_counter=token_counter,
        )
        self._max_concurrency = max_concurrency
        self._counter = token_counter
        self._prices = dict(prices or {})
        self._done: dict[str, CallRecord] = {}
        self._pending: dict[str, asyncio.Future[CallRecord]] = {}
        self._limit: OperationCalls | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_change: Callable[[], None] = lambda: None
        self.usage: dict[str, Usage] = {}

    @contextlib.contextmanager
    def session(self, on_change: Callable[[], None] | None = None) -> Iterator[ModelCalls]:
        """One run, in the running event loop: the journal read afresh, usage from zero, one limit for all
        calls; ``on_change`` is called whenever the usage changes. The journal is closed at the end."""
        self._loop = asyncio.get_running_loop()
        self._limit = OperationCalls(self._max_concurrency)  # inside the run's loop, which its semaphore needs
        self._done = {record.key: record for record in self._journaled()}
        self._pending = {}
        self.usage = {}
        self._on_change = on_change or (lambda: None)
        try:
            yield self
        finally:
            if self._journal is not None:
                self._journal.close()
            self._limit = None

    def _journaled(self) -> Iterator[CallRecord]:
        names = [f.name for f in fields(CallRecord)]
        for row in self._journal.read() if self._journal is not None else ():
            try:
                yield CallRecord(**{name: row[name] for name in names})
            except (KeyError, TypeError):  # a line of some other format
                continue

    def totals(self) -> Usage:
        """The usage of every role added up."""
        total = Usage()
        for usage in self.usage.values():
            for name in (f.name for f in fields(Usage)):
                setattr(total, name, getattr(total, name) + getattr(usage, name))
        return total

    def model(self, model: LanguageModel, role: str) -> RecordedModel:
        """``model`` with its calls made through here under ``role`` (e.g. a configuration's keyword model)."""
        return RecordedModel(self, model, role)

    async def ask(self, model: LanguageModel, prompt: str, role: str) -> CallRecord:
        """The model's answer to ``prompt``: from the journal if it is there, else asked (and journalled).

        Raises:
            CallFailed: every attempt failed.
            RuntimeError: called outside a :meth:`session`.
        """
        key = cache_key(model.name, prompt)
        if key in self._done:
            self._account(self._done[key], role, new=False)
            return self._done[key]
        if key in self._pending:  # the same prompt asked twice at once (shared keywords): one call
            record = await asyncio.shield(self._pending[key])
            self._account(record, role, new=False)
            return record
        future: asyncio.Future[CallRecord] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            record = await self._call(model, prompt, role, key)
        except BaseException as exc:
            future.set_exception(exc if isinstance(exc, Exception) else CallFailed("interrupted"))
            future.exception()  # mark retrieved: waiters get it, nobody else needs to
            raise
        finally:
            self._pending.pop(key, None)
        future.set_result(record)
        self._done[key] = record
        if self._journal is not None:  # at once: a crash after this line loses nothing
            self._journal.append(asdict(record))
        self._account(record, role, new=True)
        return record

    async def ask_parsed(
        self, model: LanguageModel, prompt: str, role: str, parse: Callable[[str], Any]
    ) -> tuple[Any, int]:
        """Ask and parse; if nothing usable comes back, ask once more with a reminder of the format.

        Returns the parsed value (falsy if both answers were unusable) and the number of attempts.
        """
        value = parse((await self.ask(model, prompt, role)).answer)
        if value:
            return value, 1
        return parse((await self.ask(model, prompt + RETRY_SUFFIX, role)).answer), 2

    async def _call(self, model: LanguageModel, prompt: str, role: str, key: str) -> CallRecord:
        if self._limit is None:
            raise RuntimeError("ModelCalls.ask needs an open session()")
        timed = _Timed(model)
        try:
            answer = await self._caller.ask(timed, prompt, self._limit)
        except Exception as exc:
            self.usage.setdefault(role, Usage()).failed += 1
            self._on_change()
            raise CallFailed(f"{type(exc).__name__}: {exc}") from exc
        return CallRecord(
            key=key,
            model=model.name,
            role=role,
            answer=answer,
            prompt_tokens=count_tokens(prompt, self._counter),
            answer_tokens=count_tokens(answer, self._counter),
            latency_s=round(timed.latency_s, 4),
        )

    def _account(self, record: CallRecord, role: str, new: bool) -> None:
        usage = self.usage.setdefault(role, Usage())
        cost = self._prices.get(role, Pricing()).cost(record.prompt_tokens, record.answer_tokens)
        usage.prompt_tokens += record.prompt_tokens
        usage.answer_tokens += record.answer_tokens
        usage.cost += cost
        if new:
            usage.calls += 1
            usage.new_prompt_tokens += record.prompt_tokens
            usage.new_answer_tokens += record.answer_tokens
            usage.new_cost += cost
        else:
            usage.reused += 1
        spent = _SPENT.get()
        if spent is not None:
            spent.append(record)
        self._on_change()

    def ask_from_thread(self, model: LanguageModel, prompt: str, role: str) -> CallRecord:
        """:meth:`ask` from a worker thread (a sync context function runs in one): the call is made in the
        session's event loop, and this thread waits for it."""
        if self._loop is None:
            raise RuntimeError("ModelCalls.ask_from_thread needs an open session()")
        spent = _SPENT.get()  # this thread's copy of the answer task's context

        async def ask() -> CallRecord:
            _SPENT.set(spent)  # so that the answer task still counts this call as its retrieval's
            return await self.ask(model, prompt, role)

        return asyncio.run_coroutine_threadsafe(ask(), self._loop).result()


class RecordedModel:
    """A :class:`~pathrag.LanguageModel` whose calls go through :class:`ModelCalls` (journalled, limited,
    counted) under one role.

    ``complete`` is for sync context functions, which run in worker threads: it hands the call to the
    evaluation's event loop and waits.
    """

    def __init__(self, calls: ModelCalls, model: LanguageModel, role: str) -> None:
        self._calls, self._model, self._role = calls, model, role
        self.name = model.name

    async def acomplete(self, prompt: str) -> str:
        """The recorded answer to ``prompt``."""
        return (await self._calls.ask(self._model, prompt, self._role)).answer

    def complete(self, prompt: str) -> str:
        """The recorded answer, from a worker thread (inside the event loop, use :meth:`acomplete`)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._calls.ask_from_thread(self._model, prompt, self._role).answer
        raise RuntimeError("call `await acomplete(...)` inside the event loop (complete() would block it)")
