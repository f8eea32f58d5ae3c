"""The package's root error, :class:`PathRAGError`, and the core's errors about stores and embedders: each
carries what went wrong as fields, so that a caller (the command line, say) can say it its own way, and a
message that names the store and what to do.

Every error class of ``pathrag``, ``langchain_pathrag`` and ``llama_index_pathrag`` derives from
:class:`PathRAGError`, and keeps the standard base a caller may already catch (``ValueError`` for a store
or a name it cannot take, ``RuntimeError`` for an evaluation that cannot go on, ``LookupError`` for a
replayed answer that is missing): ``except PathRAGError`` catches what this package raises on purpose, and
nothing else.

Only the standard library is imported here: catching these errors costs no heavy import.

>>> error = StoreLocked("kb", holder="4242", waited=2.0)
>>> error.directory.name, error.holder, error.waited
('kb', '4242', 2.0)
>>> print(error)
the store kb is being written by process 4242 (waited 2 s): wait for it to finish, or let writes wait with \
IndexConfig(lock_timeout=SECONDS)
>>> print(StoreLocked(error.directory, error.holder, error.waited, remedy="add --wait SECONDS"))
the store kb is being written by process 4242 (waited 2 s): wait for it to finish, or add --wait SECONDS
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = [
    "EmbedderMismatch",
    "PathRAGError",
    "MissingEmbedderError",
    "ModelUnreachable",
    "StoreDamaged",
    "StoreError",
    "StoreFormatError",
    "StoreLocked",
]


class PathRAGError(Exception):
    """The root of every error this package raises on purpose.

    >>> from pathrag.names import EntityNameError
    >>> issubclass(StoreError, PathRAGError) and issubclass(EntityNameError, (PathRAGError, ValueError))
    True
    """


class StoreError(PathRAGError, ValueError):
    """A store that cannot be opened or written: the message names the file and what to do."""


class StoreLocked(StoreError):
    """Another process is writing to the same store directory.

    Attributes:
        directory: the store directory.
        holder: the pid written in the store's lock file (the writer's), ``"?"`` when it cannot be read.
        waited: the seconds waited for the lock before giving up (0: no wait).
    """

    #: What the message suggests by default: the library's way to wait.
    REMEDY = "let writes wait with IndexConfig(lock_timeout=SECONDS)"

    def __init__(
        self, directory: str | os.PathLike[str], holder: str = "?", waited: float = 0.0, *, remedy: str = REMEDY
    ) -> None:
        self.directory = Path(directory)
        self.holder = holder
        self.waited = waited
        self.remedy = remedy
        waiting = f" (waited {waited:g} s)" if waited > 0 else ""
        super().__init__(
            f"the store {self.directory} is being written by process {holder}{waiting}: "
            f"wait for it to finish, or {remedy}"
        )

    def __reduce__(self) -> tuple[Any, ...]:  # pickled with its fields (a process pool's worker, say)
        return (_rebuild, (type(self), (self.directory, self.holder, self.waited), {"remedy": self.remedy}))


class EmbedderMismatch(StoreError):
    """A store opened with embeddings other than the ones it records.

    Attributes:
        directory: the store directory.
        recorded: the name of the embeddings the store was built with.
        given: the name of the embeddings it was opened with.
    """

    def __init__(self, directory: str | os.PathLike[str], recorded: str, given: str) -> None:
        self.directory = Path(directory)
        self.recorded = recorded
        self.given = given
        super().__init__(
            f"the store {self.directory} was built with the embeddings {recorded!r}, not {given!r}: "
            "open it with the same embeddings, or use another directory"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), (self.directory, self.recorded, self.given), {}))


class StoreFormatError(StoreError):
    """A store written in a newer or another format than this pathrag reads.

    Attributes:
        path: the store's database file.
        found: the format and version the store records, e.g. ``("pathrag", "3")`` (``None``: not recorded).
        supported: the newest format version this pathrag reads.
    """

    def __init__(self, path: str | os.PathLike[str], found: tuple[str | None, str | None], supported: int) -> None:
        self.path = Path(path)
        self.found = found
        self.supported = supported
        super().__init__(f"{self.path} is a store of a newer or other format ({found[0]} v{found[1]}): upgrade pathrag")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), (self.path, self.found, self.supported), {}))


class StoreDamaged(StoreError):
    """A store whose parts disagree (found when it is opened): its file was damaged or edited by hand.

    Attributes:
        path: the store's database file.
        directory: the store directory (the file's).
        problems: what disagrees, one short phrase each (e.g. ``"37 entities without a vector"``), or what
            SQLite said of a file it cannot read (``"database disk image is malformed"``).
        remedy: what the message says to do (:attr:`REMEDY`, or :attr:`FILE_REMEDY` for an unreadable file).
    """

    #: How to repair it: commits are atomic, so only a rebuild restores what was lost.
    REMEDY = (
        "rebuild it: index the documents into a new store (pathrag index PATH --store NEW_DIR); "
        "PathRAGIndex(..., check_on_open=False).check() opens it as it is and lists every problem"
    )
    #: How to repair a file SQLite itself cannot read ("database disk image is malformed"): nothing opens it.
    FILE_REMEDY = (
        "restore it from a backup, or rebuild the store in a new directory (pathrag index PATH --store NEW_DIR)"
    )

    def __init__(self, path: str | os.PathLike[str], problems: list[str], *, remedy: str = REMEDY) -> None:
        self.path = Path(path)
        self.directory = self.path.parent
        self.problems = list(problems)
        self.remedy = remedy
        super().__init__(f"the store {self.path} is damaged: {'; '.join(self.problems)}: {remedy}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), (self.path, self.problems), {"remedy": self.remedy}))


class MissingEmbedderError(PathRAGError, ValueError):
    """An index opened without an embedder was asked to embed (a query, or a write of new vectors).

    Attributes:
        directory: the store directory (``None``: not known where it was raised).
        recorded: the name of the embeddings the store records (``None``: it records none).
    """

    def __init__(
        self, message: str, *, directory: str | os.PathLike[str] | None = None, recorded: str | None = None
    ) -> None:
        super().__init__(message)
        self.directory = Path(directory) if directory is not None else None
        self.recorded = recorded

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), (str(self),), {"directory": self.directory, "recorded": self.recorded}))


def _rebuild(cls: type[Exception], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Exception:
    """An error made again from its fields (what :func:`pickle` calls for the classes above)."""
    return cls(*args, **kwargs)


class ModelUnreachable(PathRAGError, ConnectionError):
    """A language model's endpoint could not be reached: it names the URL that was tried.

    ``refused``: the connection was refused (nothing listens there: a wrong URL or a stopped server), which
    no retry mends, so the index does not retry it; a timeout or another network failure may pass and is
    retried as before.

    >>> print(ModelUnreachable("http://127.0.0.1:9/v1/chat/completions", "connection refused", refused=True))
    cannot reach the model at http://127.0.0.1:9/v1/chat/completions: connection refused
    """

    def __init__(self, url: str, reason: str, *, refused: bool = False, hint: str = "") -> None:
        self.url = url
        self.reason = reason
        self.refused = refused
        self.hint = hint
        super().__init__(f"cannot reach the model at {url}: {reason}" + (f" ({hint})" if hint else ""))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), (self.url, self.reason), {"refused": self.refused, "hint": self.hint}))
