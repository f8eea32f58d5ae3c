"""The one way the core runs a coroutine from sync code (``index.insert``, ``complete`` of an async-only
model, the evaluation's ``run``, the adapters' sync methods).

>>> async def answer() -> int:
...     return 42
>>> run_sync(answer())
42
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from sync code: directly when no loop is running, else on a private thread.

    Library code must never call ``asyncio.run`` inside a caller's running loop (it raises), and
    blocking that loop would deadlock on work scheduled in it.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    values: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            values.append(asyncio.run(coro))
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    worker = threading.Thread(target=target, name="pathrag-sync")
    worker.start()
    worker.join()
    if errors:
        raise errors[0]
    return values[0]
