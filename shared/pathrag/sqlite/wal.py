"""The WAL check: refuse to open a store whose ``-wal`` file SQLite would silently drop.

SQLite ignores a WAL file whose header is damaged, and every frame after a torn one, without a word: the
commits in it would vanish. :func:`check_wal` reads the header (magic, version, checksum, page size) before
a store is opened, unless a writer is active (see :func:`~pathrag.sqlite.lock.writer_active`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import StoreError
from .lock import writer_active

__all__ = ["check_wal"]

_WAL_MAGIC = (0x377F0682, 0x377F0683)  # little- or big-endian checksums (sqlite.org/fileformat.html#wal)


def _wal_checksum(data: bytes, big_endian: bool) -> tuple[int, int]:
    words = np.frombuffer(data, dtype=">u4" if big_endian else "<u4").tolist()
    s0 = s1 = 0
    for x0, x1 in zip(words[::2], words[1::2], strict=True):
        s0 = (s0 + x0 + s1) & 0xFFFFFFFF
        s1 = (s1 + x1 + s0) & 0xFFFFFFFF
    return s0, s1


def _wal_damage(wal: Path) -> str | None:
    """Why SQLite would ignore this WAL file, or part of it (``None``: it looks whole).

    SQLite drops a WAL whose header is bad, and every frame after a torn one, without a word: the
    commits in them would be lost silently. Checked: the header's magic, version and checksum. (A tail
    cut off cannot be told from a writer killed mid-transaction: SQLite keeps the commits before it.)"""
    try:
        with wal.open("rb") as handle:
            header = handle.read(32)
            size = os.fstat(handle.fileno()).st_size
    except OSError:
        return None
    if size == 0:
        return None
    if len(header) < 32:
        return f"{size} bytes, shorter than its header"
    magic, version, page_size = (
        int.from_bytes(header[:4], "big"),
        int.from_bytes(header[4:8], "big"),
        int.from_bytes(header[8:12], "big"),
    )
    if magic not in _WAL_MAGIC or version != 3007000:
        return "its header is not a WAL header"
    if _wal_checksum(header[:24], magic & 1 == 1) != (
        int.from_bytes(header[24:28], "big"),
        int.from_bytes(header[28:32], "big"),
    ):
        return "its header checksum is wrong"
    if page_size < 512 or page_size & (page_size - 1):
        return f"its header gives an impossible page size ({page_size})"
    return None


def check_wal(path: Path) -> None:
    """Refuse to open ``path`` when its ``-wal`` file is damaged, instead of letting SQLite drop the
    commits it holds. Skipped while a writer holds the lock."""
    wal = path.with_name(path.name + "-wal")
    if not path.exists() or not wal.exists() or writer_active(path.parent):
        return
    reason = _wal_damage(wal)
    if reason is not None:
        raise StoreError(
            f"{wal} is damaged ({reason}): SQLite would drop the commits it holds without a word; "
            f"restore the store directory from a backup, or move {wal.name} aside to open the store "
            "as of its last checkpoint (the commits in it are then lost)"
        )
