"""The WAL check: refuse to open a store whose ``-wal`` file SQLite would silently drop, in whole or in part.

SQLite ignores a WAL file whose header is damaged, and every frame from the first one whose checksum is wrong
on, without a word: the commits in them would vanish. :func:`check_wal` reads the header (magic, version,
checksum, page size) and then every frame's checksum chain before a store is opened. A frame that fails its
checksum is damage, and not the torn end of a killed writer's last transaction, when a committed transaction
follows it, or when the store's ``-shm`` file (SQLite's index of the WAL, valid and of the same WAL) counts
more committed frames than the chain holds (a WAL cut short, or its last commit damaged).

A writer may commit while the check reads, and its half-read frames or a ``-shm`` count read after the
chain then look like damage. So damage is reported only when the files did not change during the check
(every commit grows the WAL or rewrites its header, and moves the ``-shm`` count): a store being written
is never called damaged, and the check takes no lock, so it never holds up a writer either. A process
checks again only the frames after the last commit it found whole (the frames up to a commit never change
until the WAL starts over, with new salts), and not at all a WAL unchanged since it found it whole.

The checksum (sqlite.org/fileformat.html#wal_file_format) runs over pairs of 32-bit words, each pair
``s0 += x0 + s1; s1 += x1 + s0``: a linear map of ``(s0, s1)``, so a frame's run is computed at once with
numpy (the powers of the map times the frame's words, modulo 2**32), and only the frames are chained in
Python.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import StoreError

__all__ = ["check_wal"]

_WAL_MAGIC = (0x377F0682, 0x377F0683)  # little- or big-endian checksums (sqlite.org/fileformat.html#wal)
_MASK = 0xFFFFFFFF
_BATCH = 64  # frames checksummed per numpy step (bounds the memory used: 64 pages of words as uint64)


def _wal_checksum(data: bytes, big_endian: bool) -> tuple[int, int]:
    words = np.frombuffer(data, dtype=">u4" if big_endian else "<u4").tolist()
    s0 = s1 = 0
    for x0, x1 in zip(words[::2], words[1::2], strict=True):
        s0 = (s0 + x0 + s1) & _MASK
        s1 = (s1 + x1 + s0) & _MASK
    return s0, s1


@functools.lru_cache(maxsize=4)
def _powers(n: int) -> tuple[np.ndarray, ...]:
    """The entries ``a, b, c, d`` of ``M**j`` for j = n-1 … 0 (reversed), M = [[1, 1], [1, 2]], mod 2**32."""
    a, b, c, d = np.empty(n, np.uint64), np.empty(n, np.uint64), np.empty(n, np.uint64), np.empty(n, np.uint64)
    m = (1, 0, 0, 1)
    for j in range(n):
        a[j], b[j], c[j], d[j] = m
        m = ((m[0] + m[1]) & _MASK, (m[0] + 2 * m[1]) & _MASK, (m[2] + m[3]) & _MASK, (m[2] + 2 * m[3]) & _MASK)
    return a[::-1].copy(), b[::-1].copy(), c[::-1].copy(), d[::-1].copy(), np.array(m, np.uint64)


def _frame_sums(words: np.ndarray) -> list[tuple[int, int]]:
    """For each row of pairs ``x0, x1`` (frames × 2n words), the run's own part of the checksum: the
    checksum after the frame is ``M**n @ s + own`` for the checksum ``s`` before it."""
    a, b, c, d, _ = _powers(words.shape[1] // 2)
    x0 = words[:, 0::2].astype(np.uint64)
    x01 = x0 + words[:, 1::2].astype(np.uint64)  # one step adds (x0, x0 + x1) to M @ (s0, s1)
    own0 = (x0 * a + x01 * b).sum(axis=1) & _MASK  # uint64 wraps modulo 2**64, a multiple of 2**32
    own1 = (x0 * c + x01 * d).sum(axis=1) & _MASK
    return list(zip(own0.tolist(), own1.tolist(), strict=True))


def _is_commit(frame: bytes, header: bytes) -> bool:
    """Whether a frame header is a commit frame of this WAL (its salts, a database size after commit)."""
    return frame[8:16] == header[16:24] and frame[4:8] != b"\0\0\0\0"


Verified = tuple[int, tuple[int, int]]
"""A prefix of a WAL checked whole: its frames up to a commit, and the checksum after the last of them."""


def _chain(
    handle: BinaryIO, count: int, page_size: int, header: bytes, start: Verified | None = None
) -> tuple[int, int, Verified]:
    """How many frames SQLite keeps (the checksum chain and salts hold), the commits among the frames
    after the first bad one (only frames of this WAL: with its salts), and the prefix up to the last commit
    of the frames kept. Reads ``_BATCH`` frames at a time, from the end of ``start`` (checked before)."""
    big = int.from_bytes(header[:4], "big") & 1 == 1
    size = 24 + page_size
    m = [int(v) for v in _powers((8 + page_size) // 8)[4]]
    kept: Verified = start or (0, (int.from_bytes(header[24:28], "big"), int.from_bytes(header[28:32], "big")))
    s = kept[1]
    handle.seek(32 + kept[0] * size)
    for first in range(kept[0], count, _BATCH):
        rows = min(_BATCH, count - first)
        block = np.frombuffer(handle.read(rows * size), np.uint8).reshape(rows, size)
        words = np.concatenate([block[:, :8], block[:, 24:]], axis=1).view(">u4" if big else "<u4")
        for i, (own0, own1) in enumerate(_frame_sums(words)):
            s = ((m[0] * s[0] + m[1] * s[1] + own0) & _MASK, (m[2] * s[0] + m[3] * s[1] + own1) & _MASK)
            frame = block[i, :24].tobytes()
            stored = (int.from_bytes(frame[16:20], "big"), int.from_bytes(frame[20:24], "big"))
            if frame[8:16] != header[16:24] or frame[:4] == b"\0\0\0\0" or s != stored:
                return first + i, _commits_after(handle, block, i, first, count, size, header), kept
            if frame[4:8] != b"\0\0\0\0":  # a commit: the frames up to here never change in this WAL
                kept = (first + i + 1, s)
    return count, 0, kept


def _commits_after(
    handle: BinaryIO, block: np.ndarray, i: int, first: int, count: int, size: int, header: bytes
) -> int:
    """The commit frames of this WAL after frame ``first + i`` (the rest of ``block``, then the file)."""
    later = sum(_is_commit(block[k, :24].tobytes(), header) for k in range(i + 1, len(block)))
    for k in range(first + len(block), count):
        handle.seek(32 + k * size)
        later += _is_commit(handle.read(24), header)
    return later


def _shm_frames(shm: Path, header: bytes) -> int | None:
    """The committed frames the ``-shm`` file counts for this WAL (``None``: no valid index of it)."""
    try:
        with shm.open("rb") as handle:
            data = handle.read(96)
    except OSError:
        return None
    if len(data) < 96 or data[:48] != data[48:96] or data[12] != 1:
        return None
    order = sys.byteorder
    if int.from_bytes(data[:4], order) != 3007000 or data[32:40] != header[16:24]:
        return None
    words = np.frombuffer(data[:40], "<u4" if order == "little" else ">u4").tolist()
    s0 = s1 = 0
    for x0, x1 in zip(words[::2], words[1::2], strict=True):
        s0 = (s0 + x0 + s1) & _MASK
        s1 = (s1 + x1 + s0) & _MASK
    if (s0, s1) != (int.from_bytes(data[40:44], order), int.from_bytes(data[44:48], order)):
        return None
    return int.from_bytes(data[16:20], order)


_WHOLE: dict[Path, tuple[object, ...]] = {}  # the state each WAL was last found whole in, in this process
_PREFIXES: dict[Path, tuple[tuple[int, bytes], Verified]] = {}  # per WAL (inode, header): its prefix checked
_WHOLE_LOCK = threading.Lock()


def _header_damage(header: bytes, size: int) -> str | None:
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
    if page_size < 512 or page_size & (page_size - 1) or page_size > 65536:
        return f"its header gives an impossible page size ({page_size})"
    return None


def _wal_damage(wal: Path) -> str | None:
    """Why SQLite would ignore this WAL file, or committed frames of it (``None``: it looks whole).

    Checked: the header's magic, version and checksum; then every frame's salts and checksum chain. A bad
    frame followed by a commit of this WAL, or fewer good frames than the ``-shm`` file counts as
    committed, is damage; a bad tail with neither is a killed writer's unfinished last transaction, which
    SQLite rightly drops."""
    try:
        with wal.open("rb") as handle:
            header = handle.read(32)
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                return None
            reason = _header_damage(header, size)
            if reason is not None:
                return reason
            page_size = int.from_bytes(header[8:12], "big")
            count = (size - 32) // (24 + page_size)
            identity = (os.fstat(handle.fileno()).st_ino, header)
            with _WHOLE_LOCK:
                known = _PREFIXES.get(wal)
            start = known[1] if known is not None and known[0] == identity and known[1][0] <= count else None
            good, later, prefix = _chain(handle, count, page_size, header, start)
            with _WHOLE_LOCK:
                _PREFIXES[wal] = (identity, prefix)
    except OSError:
        return None
    if later:
        return (
            f"frame {good + 1} of {count} fails its checksum: the {later} committed "
            f"transaction{'s' if later > 1 else ''} after it would be dropped"
        )
    counted = _shm_frames(wal.with_name(wal.name[: -len("-wal")] + "-shm"), header)
    if counted is not None and counted > good:
        return (
            f"it holds {good} whole frames but the store's -shm file counts {counted} committed ones: "
            f"the commits in frames {good + 1}-{counted} would be dropped"
        )
    return None


_TRIES = 3  # checks of a WAL that changed under them before it is left to SQLite (writers are at work)


def _state(wal: Path) -> tuple[object, ...] | None:
    """What any commit or checkpoint changes: the WAL's identity, size, time and header, and the ``-shm``
    file's header (its count of committed frames, its change counter). ``None``: no WAL."""
    shm = wal.with_name(wal.name[: -len("-wal")] + "-shm")
    try:
        info = os.stat(wal)
        with wal.open("rb") as handle:
            header = handle.read(32)
    except OSError:
        return None
    try:
        with shm.open("rb") as handle:
            index = handle.read(136)
    except OSError:
        index = b""
    return info.st_ino, info.st_size, info.st_mtime_ns, header, index


def check_wal(path: Path) -> None:
    """Refuse to open ``path`` when its ``-wal`` file is damaged, instead of letting SQLite drop the
    commits it holds: only when the damage is seen on files no commit changed during the check (a store
    being written is read as its writers leave it, by SQLite)."""
    wal = path.with_name(path.name + "-wal")
    if not path.exists():
        return
    for _ in range(_TRIES):
        before = _state(wal)
        if before is None:
            return
        with _WHOLE_LOCK:
            if _WHOLE.get(wal) == before:  # checked whole as it is now (a command opens a store twice)
                return
        reason = _wal_damage(wal)
        if reason is None:
            if _state(wal) == before:
                with _WHOLE_LOCK:
                    _WHOLE[wal] = before
            return
        if _state(wal) == before:
            raise StoreError(
                f"{wal} is damaged ({reason}): SQLite would drop the commits it holds without a word; "
                f"restore the store directory from a backup, or move {wal.name} aside to open the store "
                "as of its last checkpoint (the commits in it are then lost)"
            )
