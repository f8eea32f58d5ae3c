"""Which stored document a ``pathrag delete`` argument means.

A document's id is its path as indexed (``docs/x.txt`` for ``pathrag index docs``), not the path a user
types from another folder (``../docs/x.txt``, ``./docs/x.txt``, an absolute path). An argument that is no
id is read as a path: the id whose path it ends with, when exactly one does, is the document it means;
otherwise the error lists the ids that end with the same file name.

>>> resolve_document_ids(["../docs/x.txt"], ["docs/x.txt", "docs/y.txt"], cwd="/home/me/app")
(['docs/x.txt'], ["'../docs/x.txt' is the document docs/x.txt"])
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Collection, Sequence

from .errors import CliError

__all__ = ["resolve_document_ids"]

_LISTED = 5  # ids listed at most in an error


def _as_path(text: str, cwd: str) -> str:
    """``text`` as an absolute POSIX path, resolved against ``cwd`` (``..`` and ``.`` folded)."""
    path = text.replace(os.sep, "/")
    return posixpath.normpath(path if posixpath.isabs(path) else posixpath.join(cwd.replace(os.sep, "/"), path))


def _meant(text: str, known: Collection[str], cwd: str) -> list[str]:
    """The ids whose indexed path ``text``, read as a path, ends with."""
    full = _as_path(text, cwd)
    return sorted(doc_id for doc_id in known if full == doc_id or full.endswith("/" + doc_id.lstrip("/")))


def resolve_document_ids(
    given: Sequence[str], known: Collection[str], *, cwd: str | None = None
) -> tuple[list[str], list[str]]:
    """The stored ids ``given`` means, in order and once each, and one note per argument read as a path.

    Raises:
        CliError: an argument that is no id and, read as a path, means no document or several; the message
            names the ids that end with its file name.
    """
    here = cwd if cwd is not None else os.getcwd()
    ids: dict[str, None] = {}
    notes: list[str] = []
    problems: list[str] = []
    for text in dict.fromkeys(given):
        if text in known:
            ids.setdefault(text)
            continue
        meant = _meant(text, known, here)
        if len(meant) == 1:
            ids.setdefault(meant[0])
            notes.append(f"{text!r} is the document {meant[0]}")
            continue
        if meant:
            problems.append(f"{text!r} could be any of {', '.join(meant[:_LISTED])}: give the id")
            continue
        name = posixpath.basename(text.replace(os.sep, "/").rstrip("/"))
        alike = sorted(doc_id for doc_id in known if posixpath.basename(doc_id) == name)
        hint = f" (ids with that file name: {', '.join(alike[:_LISTED])})" if alike else ""
        problems.append(f"no document {text!r}{hint}")
    if problems:
        listed = ", ".join(sorted(known)[:_LISTED]) or "none"
        more = ", …" if len(known) > _LISTED else ""
        raise CliError(f"{'; '.join(problems)} (documents are named by their path as indexed: {listed}{more})")
    return list(ids), notes
