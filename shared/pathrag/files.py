"""Files outside the store: refuse what is not a regular file before reading it, write whole files so
that a crash leaves the old or the new one, keep append-only journals.

An index directory keeps its state in SQLite (see :mod:`pathrag.sqlite`); these are for the other files:
the inputs the command line reads (reading a FIFO blocks forever, a device never ends), the evaluation's
journals and reports, a saved :class:`~pathrag.NetworkXGraphStore` or in-memory vector index, and the older
JSON format (see :mod:`pathrag.sqlite.legacy`).

:func:`atomic_write_text` replaces a file so that a crash leaves the old or the new one, never half. A
journal gets one JSON line per record, flushed as soon as it is written, so a process killed at any moment
loses at most the line it was writing; :meth:`Journal.read` skips such a torn line.

>>> import os, tempfile
>>> fifo = os.path.join(tempfile.mkdtemp(), "questions.txt")
>>> os.mkfifo(fifo)
>>> file_kind(fifo)
'a FIFO'
>>> try:
...     check_regular_file(fifo)
... except ValueError as exc:
...     str(exc) == f"{fifo} is not a regular file (a FIFO): give a file"
True
>>> import pathlib
>>> journal = Journal(pathlib.Path(tempfile.mkdtemp()) / "log.jsonl")
>>> journal.append({"k": 1}); journal.append({"k": 2}); journal.close()
>>> [r["k"] for r in journal.read()]
[1, 2]
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from .errors import PathRAGError

__all__ = ["Journal", "NotARegularFile", "atomic_write_text", "check_regular_file", "file_kind"]

logger = logging.getLogger(__name__)


class NotARegularFile(PathRAGError, ValueError):
    """``PATH is not a regular file (a KIND): give a file``."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(f"{os.fspath(path)} is not a regular file ({kind}): give a file")
        self.path = Path(path)
        self.kind = kind


def file_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists but is not a regular file (``"a FIFO"``, ``"a socket"``, ``"a
    device"``, ``"a folder"``); ``None`` for a regular file or a missing path. Symbolic links are followed."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a special file"


def check_regular_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`~pathlib.Path`, after refusing a FIFO, socket, device or folder with
    :class:`NotARegularFile` (a :class:`ValueError`). A missing path passes: opening it names the problem."""
    kind = file_kind(path)
    if kind is not None:
        raise NotARegularFile(path, kind)
    return Path(path)


class Journal:
    """An append-only JSON-lines file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._handle: IO[str] | None = None

    def read(self) -> Iterator[dict[str, Any]]:
        """Every intact record, in order; torn or foreign lines are skipped with a log message."""
        if not self.path.exists():
            return
        with self.path.open("r", encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    logger.warning("%s: skipping unreadable line %d (interrupted write?)", self.path, number)
                    continue
                if isinstance(record, dict):
                    yield record

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record and hand it to the OS at once (it survives the process being killed)."""
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = self.path.open("a", encoding="utf-8")
            if self._handle.tell() > 0:
                self._handle.write("\n")  # never glue a record onto a torn last line
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()

    def rewrite(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Replace the whole journal with ``records`` atomically (compaction)."""
        self.close()
        atomic_write_text(self.path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))

    def close(self) -> None:
        """Close the file if it is open (the next append opens it again)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` so that a crash leaves either the old or the new file, never half.

    The new file is on disk before it takes the old one's name, and the rename is on disk before this
    returns (the file and its directory are fsynced). It gets the mode a new file gets (0644 under the usual
    umask 022), not a temporary file's 0600: results written here are for other users to read too.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "notes.txt"
    >>> atomic_write_text(target, "new"); target.read_text()
    'new'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _new_temporary(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _new_temporary(path: Path) -> tuple[int, str]:
    """A new, empty file beside ``path``, opened for writing: ``(descriptor, name)``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        name = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            # mode 0666 lets the umask decide, as for any new file (mkstemp would force 0600)
            return os.open(name, flags, 0o666), name
        except FileExistsError:  # another writer's temporary: draw another name
            continue


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable; a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a directory: the rename itself is done
        pass
    finally:
        os.close(fd)
