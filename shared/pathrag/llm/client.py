"""The boundary between the core and a language model.

The core never imports an LLM client. It talks to anything with ``acomplete(prompt) -> str``
(and, for sync callers, ``complete``); ``name`` identifies the model in cache keys.
The LangChain and LlamaIndex adapters implement this with their own models.

A sync caller given an async-only model still runs it: a wrapped ``async def`` answers ``complete``
by running the coroutine (on a private thread when an event loop is already running), and
:func:`complete_sync` does the same for a model whose ``complete`` raises ``NotImplementedError``.

>>> import asyncio
>>> from pathrag.llm.client import as_language_model
>>> llm = as_language_model(lambda prompt: prompt.upper(), name="shout")
>>> asyncio.run(llm.acomplete("hi"))
'HI'
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar, runtime_checkable

from typing_extensions import override

from .._sync import run_sync

__all__ = ["LanguageModel", "CallableLanguageModel", "as_language_model", "complete_sync"]

T = TypeVar("T")


@runtime_checkable
class LanguageModel(Protocol):
    """A text-in, text-out language model."""

    name: str

    def complete(self, prompt: str) -> str:
        """The model's answer to ``prompt``."""
        ...

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete`."""
        ...


class CallableLanguageModel(LanguageModel):
    """Wrap a plain ``prompt -> str`` function (sync or async) as a :class:`LanguageModel`."""

    def __init__(self, func: Callable[[str], str] | Callable[[str], Awaitable[str]], *, name: str) -> None:
        self._func = func
        self._is_async = inspect.iscoroutinefunction(func)
        self.name = name

    @override
    def complete(self, prompt: str) -> str:
        """Call the function; an async one is run to completion (sync callers get its answer)."""
        if self._is_async:
            return str(run_sync(self._func(prompt)))  # type: ignore[arg-type]
        return str(self._func(prompt))

    @override
    async def acomplete(self, prompt: str) -> str:
        if self._is_async:
            return str(await self._func(prompt))  # type: ignore[misc]
        # A sync function may block (network, subprocess): keep the event loop free.
        return str(await asyncio.to_thread(self._func, prompt))

    def __repr__(self) -> str:
        return f"CallableLanguageModel(name={self.name!r})"


class RememberingLanguageModel(LanguageModel):
    """``model``, asked each prompt once: a repeated prompt gets the first answer again.

    A retrieval that is run again (see :meth:`pathrag.PathRAGIndex.aread_committed`) asks the same
    keyword question; this keeps it from paying the model twice.

    >>> model = RememberingLanguageModel(as_language_model(lambda prompt: prompt.upper()))
    >>> model.complete("a"), model.complete("a")
    ('A', 'A')
    """

    def __init__(self, model: LanguageModel) -> None:
        self._model = model
        self._answers: dict[str, str] = {}
        self.name = model.name

    @override
    def complete(self, prompt: str) -> str:
        if prompt not in self._answers:
            self._answers[prompt] = complete_sync(self._model, prompt)
        return self._answers[prompt]

    @override
    async def acomplete(self, prompt: str) -> str:
        if prompt not in self._answers:
            self._answers[prompt] = await self._model.acomplete(prompt)
        return self._answers[prompt]


def as_language_model(
    model: LanguageModel | Callable[[str], str] | Callable[[str], Awaitable[str]], *, name: str | None = None
) -> LanguageModel:
    """Return ``model`` itself if it is a :class:`LanguageModel`, else wrap the callable."""
    if isinstance(model, LanguageModel):
        return model
    if not callable(model):
        raise TypeError(f"expected a LanguageModel or a prompt -> str callable, got {type(model).__name__}")
    return CallableLanguageModel(model, name=name or str(getattr(model, "__name__", "llm")))


def complete_sync(model: LanguageModel | Callable[[str], str] | Callable[[str], Awaitable[str]], prompt: str) -> str:
    """Ask ``model`` from sync code, whatever it implements.

    ``model.complete`` is used when it works; a model that only implements ``acomplete`` (its
    ``complete`` raises ``NotImplementedError``) is run through ``acomplete`` instead, so a sync caller
    never has to fall back on something else.

    Raises:
        TypeError: ``model`` is neither a :class:`LanguageModel` nor a callable.
    """
    llm = as_language_model(model)
    try:
        return llm.complete(prompt)
    except NotImplementedError:
        return str(run_sync(llm.acomplete(prompt)))
