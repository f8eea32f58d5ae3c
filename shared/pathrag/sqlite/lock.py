"""The writer lock: one writer per store directory across processes (an advisory ``flock``).

:class:`WriterLock` holds ``pathrag.lock`` while a writer plans and applies a change, and a second
``flock`` on the directory for the whole write; :func:`writer_active` tells, without taking either, whether
some process is writing (the WAL check skips a file a live writer may be appending to).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from ..errors import StoreError, StoreLocked

__all__ = ["LOCK_FILE", "WriterLock", "writer_active"]

LOCK_FILE = "pathrag.lock"


def writer_active(directory: Path) -> bool:
    """Whether a process holds the writer lock or is in a write (a live writer may be appending to the WAL
    right now: extractions are saved outside the writer lock, see :meth:`WriterLock.abegin`)."""
    if fcntl is None:
        return True
    for path, probe in ((directory / LOCK_FILE, fcntl.LOCK_SH), (directory, fcntl.LOCK_EX)):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, probe | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)  # a flock: closing never touches SQLite's own (POSIX) locks on other files
    return False


class WriterLock:
    """One writer per store directory across processes: an advisory ``flock`` on ``pathrag.lock``.

    The file holds the writer's pid, for the error message. The operating system drops the lock when its
    holder dies, even by ``kill -9``, so a crash never leaves a store locked (the stale pid in the file
    is just overwritten by the next writer). Readers take no lock. Where ``fcntl`` does not exist
    (Windows), there is no cross-process lock: SQLite still serialises the commits themselves.

    An index holds the lock only to plan and apply a change; the whole write, extraction included, is
    spanned by :meth:`abegin` and :meth:`end` (a second ``flock``, on the directory), so that a writer
    that will not wait is still refused while another one extracts.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / LOCK_FILE
        self._fd: int | None = None
        self._active: int | None = None  # the directory, flocked from abegin() to end()
        self._threads = threading.Lock()  # flock is per open file: threads of one process queue here

    def _try(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(
                f"the store {self.path.parent} cannot be written ({exc.strerror}: {self.path}): "
                "fix its permissions or use another directory"
            ) from exc
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def holder(self) -> str:
        """The pid written in the lock file (the last writer's), or ``"?"`` if it cannot be read."""
        try:
            return self.path.read_text().strip() or "?"
        except OSError:
            return "?"

    def _locked_error(self, timeout: float) -> StoreLocked:
        return StoreLocked(self.path.parent, self.holder(), max(timeout, 0.0))

    def acquire(self, timeout: float = 0.0) -> None:
        """Take the lock, polling up to ``timeout`` seconds; :class:`StoreLocked` names the holder's pid."""
        deadline = time.monotonic() + timeout
        if not self._threads.acquire(timeout=max(timeout, 0.0) if timeout > 0 else -1):
            raise self._locked_error(timeout)
        try:
            while not self._try():
                if time.monotonic() >= deadline:
                    raise self._locked_error(timeout)
                time.sleep(0.05)
        except BaseException:
            self._threads.release()
            raise

    async def aacquire(self, timeout: float = 0.0) -> None:
        """:meth:`acquire` without blocking the event loop while it waits."""
        import asyncio

        deadline = time.monotonic() + timeout
        while not self._threads.acquire(blocking=False):
            if time.monotonic() >= deadline and timeout > 0:
                raise self._locked_error(timeout)
            await asyncio.sleep(0.01)
        try:
            while not self._try():
                if time.monotonic() >= deadline:
                    raise self._locked_error(timeout)
                await asyncio.sleep(0.05)
        except BaseException:
            self._threads.release()
            raise

    def release(self) -> None:
        """Drop the lock if this object holds it (otherwise do nothing)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing drops the flock; the pid stays in the file, harmlessly
            self._threads.release()

    async def abegin(self, timeout: float = 0.0) -> None:
        """Start a write, before its extraction: the lock itself is taken later, for plan-and-apply only.

        Every write holds a ``flock`` on the store directory from here to :meth:`end`. With ``timeout`` 0
        (do not wait for other writers) it is exclusive, and the write is refused at once, naming the pid,
        when another one is under way, extracting or applying, as when it held the lock throughout. With a
        ``timeout``, writes share it: they extract side by side and take turns only for the lock, and one
        waits here (up to ``timeout``) only for an exclusive write to end."""
        import asyncio

        if fcntl is None:
            return
        try:
            fd = os.open(self.path.parent, os.O_RDONLY)
        except OSError as exc:
            raise StoreError(f"the store {self.path.parent} cannot be opened ({exc.strerror})") from exc
        exclusive, deadline = timeout <= 0, time.monotonic() + timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() >= deadline:
                        raise self._locked_error(timeout) from None
                    await asyncio.sleep(0.05)
            # Taken and dropped at once: names this process in the lock file as the latest writer, and
            # refuses (when not waiting) a writer that holds the lock without this protocol.
            if self._threads.acquire(blocking=False):
                try:
                    if self._try():
                        os.close(self._fd)  # type: ignore[arg-type]
                        self._fd = None
                    elif exclusive:
                        raise self._locked_error(timeout)
                finally:
                    self._threads.release()
        except BaseException:
            os.close(fd)
            raise
        self._active = fd

    def end(self) -> None:
        """End the write :meth:`abegin` started (releasing the lock too, if still held)."""
        self.release()
        fd, self._active = self._active, None
        if fd is not None:
            os.close(fd)
