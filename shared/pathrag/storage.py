"""Crash-safe files: whole-file snapshots and append-only journals.

An index directory no longer uses them (see :mod:`pathrag.store`); they read the older JSON format when
:func:`pathrag.store.migrate_json_store` migrates it, and remain for anyone writing such files.

A snapshot is replaced atomically (see :func:`pathrag.graph.atomic_write_text`). A journal gets one
JSON line per record, flushed as soon as it is written, so a process killed at any moment loses at
most the line it was writing; :meth:`Journal.read` skips such a torn line.

>>> import tempfile, pathlib
>>> journal = Journal(pathlib.Path(tempfile.mkdtemp()) / "log.jsonl")
>>> journal.append({"k": 1}); journal.append({"k": 2}); journal.close()
>>> [r["k"] for r in journal.read()]
[1, 2]
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from .graph import atomic_write_text

__all__ = ["Journal", "read_json", "write_json"]

logger = logging.getLogger(__name__)


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


def read_json(path: str | os.PathLike[str], default: Any) -> Any:
    """Load a JSON snapshot, or ``default`` when there is none; a damaged file is a clear error."""
    path = Path(path)
    if not path.exists():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Write a JSON snapshot atomically."""
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, sort_keys=True))
