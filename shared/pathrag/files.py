"""Input files: refuse what is not a regular file before reading it (reading a FIFO blocks forever, a
device never ends).

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
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["NotARegularFile", "check_regular_file", "file_kind"]


class NotARegularFile(ValueError):
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
