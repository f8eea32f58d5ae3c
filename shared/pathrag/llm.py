"""The boundary between the core and a language model.

The core never imports an LLM client. It talks to anything with ``acomplete(prompt) -> str``
(and, for sync callers, ``complete``); ``name`` identifies the model in cache keys.
The LangChain and LlamaIndex adapters implement this with their own models.

>>> import asyncio
>>> from pathrag.llm import as_language_model
>>> llm = as_language_model(lambda prompt: prompt.upper(), name="shout")
>>> asyncio.run(llm.acomplete("hi"))
'HI'
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

__all__ = ["LanguageModel", "CallableLanguageModel", "as_language_model"]


@runtime_checkable
class LanguageModel(Protocol):
    """A text-in, text-out language model."""

    name: str

    def complete(self, prompt: str) -> str: ...

    async def acomplete(self, prompt: str) -> str: ...


class CallableLanguageModel:
    """Wrap a plain ``prompt -> str`` function (sync or async) as a :class:`LanguageModel`."""

    def __init__(self, func: Callable[[str], str] | Callable[[str], Awaitable[str]], *, name: str) -> None:
        self._func = func
        self._is_async = inspect.iscoroutinefunction(func)
        self.name = name

    def complete(self, prompt: str) -> str:
        if self._is_async:
            raise TypeError(f"{self.name!r} wraps an async function; call `await acomplete(...)` instead")
        return str(self._func(prompt))

    async def acomplete(self, prompt: str) -> str:
        if self._is_async:
            return str(await self._func(prompt))  # type: ignore[misc]
        # A sync function may block (network, subprocess): keep the event loop free.
        return str(await asyncio.to_thread(self._func, prompt))

    def __repr__(self) -> str:
        return f"CallableLanguageModel(name={self.name!r})"


def as_language_model(
    model: LanguageModel | Callable[[str], str] | Callable[[str], Awaitable[str]], *, name: str | None = None
) -> LanguageModel:
    """Return ``model`` itself if it is a :class:`LanguageModel`, else wrap the callable."""
    if isinstance(model, LanguageModel):
        return model
    if not callable(model):
        raise TypeError(f"expected a LanguageModel or a prompt -> str callable, got {type(model).__name__}")
    return CallableLanguageModel(model, name=name or getattr(model, "__name__", "llm"))
