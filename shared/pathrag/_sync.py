"""The one way the core runs a coroutine from sync code (``index.insert``, ``complete`` of an async-only
model, the evaluation's ``run``, the adapters' sync methods).

Every sync call runs its coroutine in **one event loop**, the same for the whole process, kept open in a
daemon thread (``pathrag-loop``). A fresh ``asyncio.run`` per call would close its loop when the call
returns, and a framework model's async HTTP client (``ChatOpenAI``'s, a LlamaIndex ``OpenAI``'s) keeps its
pooled connections bound to the loop that opened them: the next sync call would then fail with
``RuntimeError('Event loop is closed')``. A loop that never closes leaves those clients usable by the
next call.

>>> async def answer() -> int:
...     return 42
>>> run_sync(answer()), run_sync(answer())
(42, 42)
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar, cast

__all__ = ["run_sync", "shared_loop"]

T = TypeVar("T")

_LOCK = threading.Lock()
_LOOP: asyncio.AbstractEventLoop | None = None
_THREAD: threading.Thread | None = None
_PID: int | None = None  # a forked child has the parent's loop object but not its thread: make a new one


def shared_loop() -> asyncio.AbstractEventLoop:
    """The process's event loop for sync calls, started on first use in a daemon thread.

    >>> shared_loop() is shared_loop()
    True
    """
    global _LOOP, _THREAD, _PID
    with _LOCK:
        if _LOOP is None or _PID != os.getpid() or _THREAD is None or not _THREAD.is_alive():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            thread = threading.Thread(target=serve, name="pathrag-loop", daemon=True)
            thread.start()
            ready.wait()
            _LOOP, _THREAD, _PID = loop, thread, os.getpid()
        return _LOOP


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from sync code in the process's shared event loop and wait for its result.

    This works whether or not the caller's thread has a running loop (a notebook's): the coroutine never
    runs in the caller's loop, which is blocked while it waits (work scheduled there would deadlock), and
    the caller's context variables (LangChain's parent run, for one) travel with it. Only a call made from
    inside the shared loop itself (sync code that a coroutine of ours calls) runs in a private loop on a
    worker thread, since waiting there for the shared loop would wait forever.
    """
    loop = shared_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        return _run_in_private_loop(coro)
    # run_coroutine_threadsafe copies this thread's context into the task it creates
    future = asyncio.run_coroutine_threadsafe(_outcome(coro), loop)
    try:
        done, value = future.result()
    except BaseException:
        # KeyboardInterrupt while waiting: do not leave the work running behind the caller
        future.cancel()
        raise
    if not done:
        raise value
    return cast(T, value)


async def _outcome(coro: Coroutine[Any, Any, T]) -> tuple[bool, Any]:
    """``(True, result)`` or ``(False, exception)``: a ``KeyboardInterrupt`` or ``SystemExit`` raised inside
    the coroutine would otherwise stop the shared loop itself and leave the caller waiting forever."""
    try:
        return True, await coro
    except BaseException as exc:
        return False, exc


def _run_in_private_loop(coro: Coroutine[Any, Any, T]) -> T:
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
