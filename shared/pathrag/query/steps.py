"""Reads written once, driven sync or async: a query-side computation is a generator of :class:`Step` objects.

Each retrieval step that reads a store (a vector search, a batch of entities, a hop of the graph) is
yielded as a :class:`Step` holding the sync call and its async twin; :func:`run` drives the generator with
the first, :func:`arun` awaits the second, and the generator receives each answer (or has the step's
exception raised where it asked). So :func:`pathrag.retrieve` and :func:`pathrag.aretrieve`, and every
stage they ``yield from`` (passage ranking, key paths), are one piece of code.

>>> def double(value):
...     answer = yield Step(lambda: value, None)
...     return 2 * answer
>>> run(double(21))
42
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from ..vectors.base import VectorIndex

__all__ = ["Step", "Steps", "arun", "query_step", "run"]

T = TypeVar("T")


@dataclass(frozen=True)
class Step:
    """One read, as a sync call and its async twin."""

    run: Callable[[], Any]
    arun: Callable[[], Awaitable[Any]] | None


Steps = Generator[Step, Any, T]
"""A computation that yields its reads and returns a ``T``."""


def run(steps: Steps[T]) -> T:
    """Drive ``steps`` with sync calls; a step's exception is raised inside ``steps``, where it was asked."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            result: T = done.value  # the generator's return value (StopIteration types it Any)
            return result
        try:
            value, error = step.run(), None
        except Exception as exc:
            value, error = None, exc


async def arun(steps: Steps[T]) -> T:
    """Async twin of :func:`run`: each step's async call is awaited (its sync one where it has none)."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            result: T = done.value  # the generator's return value (StopIteration types it Any)
            return result
        try:
            value, error = (await step.arun() if step.arun is not None else step.run()), None
        except Exception as exc:
            value, error = None, exc


def query_step(index: VectorIndex, text: str, k: int) -> Step:
    """The step searching ``index`` for the ``k`` items nearest ``text``."""
    return Step(lambda: index.query(text, k), lambda: index.aquery(text, k))
