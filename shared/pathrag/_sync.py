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
import concurrent.futures
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
_PRIVATE = threading.local()  # set in a worker thread running its own loop (see _run_in_private_loop)


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
                while True:
                    try:
                        loop.run_forever()
                        return
                    except BaseException:  # noqa: S112 - see below
                        # A task that raises KeyboardInterrupt or SystemExit records it as its result, then
                        # re-raises it through the loop: the loop goes on, so that what awaits the task
                        # receives it (and so does the waiting caller, see run_sync) instead of hanging.
                        continue

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
    worker thread, since waiting there for the shared loop would wait forever; so does a call from such a
    worker (the shared loop is still blocked, waiting for it).
    """
    loop = shared_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop or getattr(_PRIVATE, "active", False):
        return _run_in_private_loop(coro)
    job = _Job(coro)
    loop.call_soon_threadsafe(job.start)  # the callback, and so the task it makes, runs in this thread's context
    try:
        done, value = job.result.result()
    except BaseException:
        # Ctrl+C while waiting: cancel the work and wait for it to wind down (its own cleanup, a rollback),
        # so that the caller reports on a settled state; a second Ctrl+C stops waiting
        loop.call_soon_threadsafe(job.cancel)
        job.finished.wait()
        raise
    if not done:
        raise value
    return cast(T, value)


class _Job:
    """One coroutine run in the shared loop for a waiting thread: its outcome, and when it has ended."""

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.result: concurrent.futures.Future[tuple[bool, Any]] = concurrent.futures.Future()
        self.finished = threading.Event()
        self.task: asyncio.Task[tuple[bool, Any]] | None = None
        self.cancelled = False

    def start(self) -> None:
        if self.cancelled:  # cancelled before it started: it never runs
            self.coro.close()
            self.finished.set()
            return
        self.task = asyncio.get_running_loop().create_task(_outcome(self.coro))
        self.task.add_done_callback(self._done)

    def cancel(self) -> None:
        self.cancelled = True
        if self.task is not None:
            self.task.cancel()

    def _done(self, task: asyncio.Task[tuple[bool, Any]]) -> None:
        self.finished.set()
        if task.cancelled():
            self.result.cancel()
        else:
            self.result.set_result(task.result())  # _outcome returns every exception as a value


async def _outcome(coro: Coroutine[Any, Any, T]) -> tuple[bool, Any]:
    """``(True, result)`` or ``(False, exception)``: a ``KeyboardInterrupt`` or ``SystemExit`` is passed
    back to the caller as a value, not raised through the shared loop."""
    try:
        return True, await coro
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        return False, exc


def _run_in_private_loop(coro: Coroutine[Any, Any, T]) -> T:
    values: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        _PRIVATE.active = True
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
