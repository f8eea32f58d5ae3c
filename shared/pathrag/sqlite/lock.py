"""The writer lock: one writer per store directory across processes (an advisory ``flock``).

:class:`WriterLock` holds ``pathrag.lock`` while a writer plans and applies a change, and a second
``flock`` on the directory for the whole write. Readers never take either, nor probe them: a probe is a
lock for an instant, and a writer that will not wait would be refused during it.

The lock file may sit in a directory other users can write (a store shared by a group): it is opened
without following a symbolic link (``O_NOFOLLOW``), only as a regular file with no other name (not a hard
link to someone's file), never truncated (the writer's pid is written over its first bytes), and created
with the permissions the user's umask allows, as every file of a store is.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from ..errors import StoreError, StoreLocked

__all__ = ["FOLD_LOCK_FILE", "LOCK_FILE", "WriterLock", "open_safely"]

LOCK_FILE = "pathrag.lock"
FOLD_LOCK_FILE = "pathrag.fold.lock"
"""Held (an exclusive ``flock``) by the one process folding changes into a store's saved search files."""

_PID_WIDTH = 20  # the pid is written padded to this width: it always covers the one before it

# Never through a symbolic link; never blocking on a FIFO someone put in its place (refused once open).
_SAFE = os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def open_safely(path: Path, flags: int, *, single: bool = False) -> int:
    """A descriptor of the regular file ``path`` (``flags`` as for :func:`os.open`, files created with
    the permissions of the user's umask), never through a symbolic link, never of a FIFO, device or
    folder; with ``single``, never of a file with another name (a hard link). Anything else is a
    :class:`StoreError` naming the file; a missing file is :class:`FileNotFoundError`."""
    try:
        fd = os.open(path, flags | _SAFE, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.EMLINK and path.is_symlink()):
            raise StoreError(
                f"{path} is a symbolic link: a store's files are never opened through one (it could make a "
                "writer overwrite the file it points to); remove the link"
            ) from exc
        if isinstance(exc, FileNotFoundError):
            raise
        raise StoreError(
            f"the store {path.parent} cannot be written ({exc.strerror}: {path}): fix its permissions or use "
            "another directory"
        ) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StoreError(
                f"{path} is not a regular file: a store's files are regular files; move it aside, or restore "
                "the store from a backup"
            )
        if single and info.st_nlink != 1:
            raise StoreError(
                f"{path} has {info.st_nlink} names (a hard link): a writer writes its pid into it, so it must be "
                "the store's own file; remove it (a writer makes a new one)"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


class WriterLock:
    """One writer per store directory across processes: an advisory ``flock`` on ``pathrag.lock``.

    The file holds the writer's pid, for the error message. The operating system drops the lock when its
    holder dies, even by ``kill -9``, so a crash never leaves a store locked (the stale pid in the file
    is just written over by the next writer). Readers take no lock. Where ``fcntl`` does not exist
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
        fd = open_safely(self.path, os.O_RDWR | os.O_CREAT, single=True)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False
        try:  # over the first bytes, never truncating: padded, it covers any pid written before
            os.pwrite(fd, f"{os.getpid():<{_PID_WIDTH}}\n".encode(), 0)
        except OSError as exc:
            os.close(fd)
            raise StoreError(
                f"cannot write {self.path} ({exc.strerror}): free some space or fix its permissions"
            ) from exc
        self._fd = fd
        return True

    def holder(self) -> str:
        """The pid written in the lock file (the last writer's), or ``"?"`` if it cannot be read."""
        try:
            fd = open_safely(self.path, os.O_RDONLY)
        except (OSError, StoreError):
            return "?"
        try:
            return os.read(fd, 64).decode(errors="replace").split("\n")[0].strip() or "?"
        except OSError:
            return "?"
        finally:
            os.close(fd)

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
