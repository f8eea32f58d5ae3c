"""The store's file on disk: refused when it is not a regular file, made whole or not at all, described.

:func:`store_exists` and :func:`read_store_info` look at a store without opening it for writing; the rest
serves :class:`~pathrag.sqlite.SQLiteStore` (its creation, its read-only connections, the one-line error for
a damaged file).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import StoreDamaged, StoreError
from ..files import file_kind
from .lock import FOLD_LOCK_FILE, LOCK_FILE
from .schema import FORMAT, FORMAT_VERSION, SCHEMA, STORE_FILE
from .wal import check_wal

__all__ = [
    "can_write",
    "create_store_file",
    "damage_error",
    "new_empty_file",
    "read_only_uri",
    "read_store_info",
    "refuse_special_files",
    "store_exists",
]


def refuse_special_files(path: Path) -> None:
    """Refuse a FIFO, socket, device or folder in place of the store file, its WAL, its shared memory or
    the writer's lock file before SQLite (or the WAL check, or the lock) opens it: reading a FIFO blocks
    forever."""
    others = (path.with_name(path.name + s) for s in ("-wal", "-shm"))
    for name in (path, *others, path.with_name(LOCK_FILE), path.with_name(FOLD_LOCK_FILE)):
        kind = file_kind(name)
        if kind is not None:
            raise StoreError(
                f"{name} is not a regular file ({kind}): a store's files are regular files; move it aside, or "
                "restore the store from a backup"
            )


def damage_error(path: Path, exc: sqlite3.DatabaseError) -> StoreDamaged | None:
    """The one-line error for SQLite finding the file ``path`` damaged ("database disk image is malformed",
    "file is not a database": it names no file); ``None`` for any other database error."""
    name = getattr(exc, "sqlite_errorname", None)  # Python 3.11+
    text = str(exc)
    if name is not None:
        damaged = name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    else:
        damaged = "malformed" in text or "not a database" in text
    if not damaged:
        return None
    return StoreDamaged(path, [" ".join(text.split())], remedy=StoreDamaged.FILE_REMEDY)


def can_write(directory: Path, path: Path) -> bool:
    """Whether the store file and its directory can be written (not on a read-only mount, say)."""
    return os.access(directory, os.W_OK) and os.access(path, os.W_OK)


def read_only_uri(path: Path) -> str:
    """The URI of a connection to ``path`` that never writes (see :meth:`SQLiteStore._connect_read_only`)."""
    wal = path.with_name(path.name + "-wal")
    immutable = not wal.exists() and not os.access(path.parent, os.W_OK)
    return f"file:{urllib.parse.quote(str(path))}?mode=ro{'&immutable=1' if immutable else ''}"


def create_store_file(path: Path, meta: Mapping[str, Any]) -> None:
    """Make a new store file at once, with its tables and its ``meta`` rows (``meta`` and the format).

    It is written under a temporary name and linked in place when whole: a first write that fails (a full
    disk, a permission error) leaves no store behind, so the next attempt starts afresh, and a store never
    exists without the meta rows (the embeddings it uses) its creator gave it. Two processes creating one
    store: the first link wins, and the other opens that file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the store directory {path.parent}: {exc}") from exc
    _remove_stale_creations(path.parent)
    tmp = path.with_name(f"{_NEW_PREFIX}{os.getpid()}-{threading.get_ident()}")
    rows = [("format", FORMAT), ("format_version", str(FORMAT_VERSION)), *((k, str(v)) for k, v in meta.items())]
    try:
        new_empty_file(tmp)
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA page_size = 32768")  # see _connect
            conn.execute("PRAGMA recursive_triggers = ON")
            conn.executescript(SCHEMA)
            conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", rows)
            conn.execute("PRAGMA journal_mode = WAL")
        finally:
            conn.close()
        _link(tmp, path)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(
            f"cannot create the store {path}: {exc} (nothing was left behind: free some space or fix the "
            "directory's permissions, then try again)"
        ) from exc
    finally:
        for name in (tmp, *(tmp.with_name(tmp.name + s) for s in ("-journal", "-wal", "-shm"))):
            with contextlib.suppress(OSError):
                name.unlink(missing_ok=True)


def new_empty_file(path: Path) -> None:
    """Make ``path`` empty with the permissions the user's umask allows (SQLite would make it 0644 whatever
    the umask, and its ``-wal`` and ``-shm`` files take the store file's: a group could never share it)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666))


def _remove_stale_creations(directory: Path) -> None:
    """Remove the temporary files of store creations whose process died (killed while creating)."""
    try:
        names = [p for p in directory.iterdir() if p.name.startswith(_NEW_PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name.name[len(_NEW_PREFIX) :].split("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                name.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


_NEW_PREFIX = f".{STORE_FILE}.new-"
_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK}


def _link(tmp: Path, path: Path) -> None:
    """Put the whole new file ``tmp`` at ``path`` unless a store appeared there meanwhile (kept: it wins)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        return
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS or path.exists():
            raise
        os.replace(tmp, path)  # a file system without hard links
    with contextlib.suppress(OSError):  # the new name survives a power loss too
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def store_exists(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` holds a store file."""
    return (Path(directory) / STORE_FILE).exists()


def read_store_info(directory: str | os.PathLike[str]) -> dict[str, str] | None:
    """The ``meta`` table of the store in ``directory`` without opening it for writing (``None``: no store)."""
    path = Path(directory) / STORE_FILE
    if not path.exists():
        _remove_stale_creations(path.parent)  # a creation killed midway blocks nothing
        return None
    refuse_special_files(path)
    check_wal(path)  # a damaged WAL would read as an older (or empty) store
    try:
        conn = sqlite3.connect(read_only_uri(path), uri=True, timeout=30.0)
        try:
            return dict(conn.execute("SELECT key, value FROM meta").fetchall())
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        damaged = damage_error(path, exc)
        if damaged is not None:
            raise damaged from exc
        raise StoreError(
            f"cannot read {path}: {exc} (restore it from a backup, or rebuild the store in a new directory)"
        ) from exc
