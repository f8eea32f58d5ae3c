"""What a process keeps to search one vector space of the store, kept in step through the vector log.

SQLite holds the truth; everything here is derived from it and checked against it, never trusted blindly.
A small space is searched exactly, from one in-memory matrix (:class:`KeyedMatrix`). A big one is searched
through HNSW graphs (usearch, int8 components) saved beside the store in segments of at most
:data:`SEGMENT_LIMIT` vectors, ``pathrag-<space>.<seq>.<n>.usearch``, listed by a manifest
``pathrag-<space>.<seq>.usearch.json``, where ``seq`` is the last vector-log entry they reflect. They are
memory-mapped, so a query touches only the pages it needs. The rows changed since (from the ``vector_log``
table) are held apart: the added ones in a :class:`KeyedMatrix`, searched exactly, the removed ones as keys
the segments' hits are filtered by. Once those changes reach :data:`FOLD_LIMIT`, a process that may write
the directory folds them in: it rewrites only the segments they touch (the last one takes the additions
until it is full), each written aside and renamed, then the manifest. One process folds at a time (an
``flock`` on ``pathrag.fold.lock``); it then removes the older files no manifest left lists.

usearch trusts what it maps (8 garbled bytes in a graph's links crash the process), so nothing is mapped
unchecked: a manifest lists every segment with its size and CRC-32 and carries a CRC-32 of its own; a
segment is read through once (a few tens of milliseconds for 2^17 vectors once cached) and the very bytes
checked are mapped; only regular files, never through a link, of the sizes listed (a manifest of at most
:data:`MANIFEST_BYTES`) are read. Saved files that are missing, damaged, of an earlier version (no
checksums), of a scale other than the store's rule, listing a segment out of place, older than the log
reaches back, newer than the store, or disagreeing with it (row count, sampled vectors) are rebuilt from the
rows (:func:`check_saved` reports them for ``stats --check``).

A process brings its index up to date by reading the log entries after its position (as one row: see
:meth:`SpaceIndex._log`) and the rows they name; a writer that takes in each of its own commits right after it
is handed the vectors it wrote instead, by the log positions that added them (:meth:`SpaceIndex.keep_written`).

Keys are the ``vectors`` table's rowids. Every search re-scores its candidates exactly from the rows of the
caller's snapshot, so its scores and ties match exact search, and a reader on an older snapshot than this
process's index sees exactly its own state (the keys changed since are looked up in its snapshot).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import json
import logging
import math
import mmap
import os
import re
import threading
import weakref
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StoreError
from .codec import IN_JSON, dumps
from .lock import FOLD_LOCK_FILE, open_safely
from .store import SQLiteStore

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: folds are not kept apart across processes
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "BUILD",
    "EXACT_LIMIT",
    "FOLD_LIMIT",
    "INT8_STEPS",
    "METRIC",
    "SEGMENT_LIMIT",
    "KeyedMatrix",
    "SpaceIndex",
    "check_saved",
    "int8_copies",
    "int8_scale",
    "saved_indexes",
    "trim_key",
]

logger = logging.getLogger(__name__)

EXACT_LIMIT = 1 << 24
"""Search a space exactly while it holds fewer float32 numbers than this (64 MB: one exact search then
reads at most 64 MB, about 10 ms on one core); above it, through a saved HNSW index."""

FOLD_LIMIT = 1 << 21
"""Fold the changes held beside a saved index into a new one once they hold this many float32 numbers
(8 MB: searching them exactly then adds about a millisecond to a search)."""

SEGMENT_LIMIT = 1 << 17
"""Vectors in one saved HNSW graph; a bigger space is saved as several. Adding to a graph costs more the
bigger it is (384-d int8 on 2 cores: 12,000 vectors a second into the first 200,000, 4,900 a second at
800,000), and a fold rewrites the segments it touches, not the whole space, so a writer holds one segment in
memory, not every vector. A search walks every segment, on every core (:func:`_searchers`), and a small
graph is walked more accurately than a big one. Measured by ``benchmarks/hnsw_segments.py`` (2^19 clustered
vectors, 384-d, 2 cores): split into segments of 2^17 rather than 2^18, they were added 1.26x as fast
(15,500 a second against 12,300), and walked as :func:`_walk` does, recall@10 rose from 0.88 to 0.97 while a
search for 500 hits took 6.9 ms instead of 4.8 (one segment after the other). At 10^6 entities
(vector_scale.py) the import took 558 and 592 s instead of 599-620, and a retrieval 64-70 ms (68-69).
"""

BUILD = {"connectivity": 16, "expansion_add": 64}
"""How the HNSW graphs are built: each added vector links to up to 16 neighbours, found by a search 64 wide
(usearch's defaults: 16 and 128). An add costs about as much as that search, and adding is most of the CPU of
a big import (the writer's fold thread builds one batch's graphs while the writer writes the next), so the
build is as narrow as recall allows; the searches' re-scoring of their candidates from the rows keeps
recall@10 above 0.98. Through the store at 10^6 entities (vector_scale.py, segments of 2^17, :data:`METRIC`),
16 / 64 against 16 / 96: import 457.5 against 569.1 s (the same day), recall@10 0.995 / 0.9935 / 0.993 against
0.999 / 0.9985 / 0.999 (entities / relations / passages), both with usearch's int8 cast (with the store's
own, :data:`INT8_STEPS`, the import took 538.9 s another day). With cosine graphs and segments of 2^18 narrow builds
had lost too much (24 / 64: 0.9795 on the entities even walked four times the hits; 16 / 96: 0.9905)."""

METRIC = "l2sq"
"""How a new space's graphs compare vectors: by the squared distance between their int8 copies. On the unit
vectors the store keeps it ranks as cosine does, in one pass over the components, where the angular kernel
also computes both norms; and the int8 rounding of a vector's length moves it little among its near
neighbours (by about (1 - cos) of the rounding), where an inner product moves it by all of it. Measured by
``benchmarks/hnsw_segments.py --metrics cos,ip,l2sq`` (2^19 clustered vectors in segments of 2^17, the
store benchmark's questions, 384-d, 2 cores): recall@10 after re-scoring 0.999 for cos and l2sq, 0.985 for
ip; adds 1.15-1.5x as fast as cos (ip: 1.3x), searches about as fast. At 10^6 entities (vector_scale.py) ip
made an import 1.15x faster but recall@10 0.97. The segments of a space share one metric (their int8
distances are compared across segments): a space saved with another one keeps it."""

INT8_STEPS = 8
"""How finely a new space's graphs hold their int8 copies: a component of a unit vector's typical size,
1/sqrt(d), becomes 8 steps, so that one 16 times as big still fits in +-127 (see :func:`int8_copies`).
usearch's own cast multiplies by 127 and truncates: 1/sqrt(d) became 6 steps at 384 dimensions and 3 at
1,536, too coarse to rank near-tied neighbours. Measured by ``benchmarks/hnsw_segments.py --casts
steps,usearch`` (2^18 clustered vectors in segments of 2^17, the store benchmark's questions, :data:`BUILD`,
:data:`METRIC`, walked as :func:`_walk` does), recall@10 after re-scoring: 0.988-0.994 against 0.973-0.974
at 1,536 dimensions (every int8 copy compared instead of the graph walked: 1.0 against 0.981), 0.998 against
0.985-0.995 at 384; for 500 hits about the same either way. Adds are slower: 0.73x as fast at 1,536
dimensions, 0.83-0.87x at 384 (distances that tell more neighbours apart make each add's search go
further). Through the store (vector_scale.py) at 10^5 entities of 1,536 dimensions, recall@10 0.991 /
0.9945 / 0.9995 against 0.9885 / 0.978 / 1.0 (entities / relations / passages, the same day)."""

BRUTE_FORCE = False
"""Search saved indexes by comparing every vector instead of walking their graph: the answers then do not
depend on how the graph was built (tests of the bookkeeping around it set it)."""

_HISTORY = 1 << 16  # the keys changed most recently, for readers on a snapshot older than the index
_SAMPLE = 8  # vectors of a saved index compared with the store when it is opened
_REREAD = 4096  # a reader whose snapshot misses more changes than this is searched from its rows
_CHUNK = 1 << 20  # bytes read at a time to check a saved file
MANIFEST_BYTES = 1 << 22
"""The largest manifest read (4 MiB): one lists a segment in under 100 bytes, and a space of 10^9 vectors has
7,630 of them; anything bigger (a device, a runaway file) is not a manifest."""
MANIFEST_FORMAT = 2
"""The manifests this version writes and reads: every segment with its size and CRC-32, and a CRC-32 of the
manifest itself. Those of earlier versions (no checksums) are rebuilt from the rows once."""


class KeyedMatrix:
    """Unit float32 vectors under integer keys in one growable matrix: exact search, cheap add and remove.

    >>> m = KeyedMatrix(2)
    >>> m.add([7, 9], np.array([[1, 0], [0, 1]], dtype="<f4"))
    >>> m.remove([9]); len(m), m.search(np.array([1, 0], dtype="<f4"), 5)
    (1, [7])
    """

    def __init__(self, ndim: int) -> None:
        self.ndim = ndim
        self._matrix = np.empty((0, ndim), dtype="<f4")
        self._keys = np.empty(0, dtype=np.int64)
        self._row: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, key: object) -> bool:
        return key in self._row

    def add(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        """Add (or replace) the vectors under ``keys``."""
        fresh = [i for i, key in enumerate(keys) if key not in self._row]
        for i, key in enumerate(keys):
            if key in self._row:
                self._matrix[self._row[key]] = vectors[i]
        size = len(self._row)
        if size + len(fresh) > len(self._matrix):  # grow by half, as a list does, not once per add
            self.reserve(max(len(fresh), len(self._matrix) * 3 // 2 - size, 64 - size))
        for offset, i in enumerate(fresh):
            self._row[int(keys[i])] = size + offset
        self._matrix[size : size + len(fresh)] = vectors if len(fresh) == len(keys) else vectors[fresh]  # no copy
        self._keys[size : size + len(fresh)] = [keys[i] for i in fresh]

    def reserve(self, extra: int) -> None:
        """Make room for ``extra`` more vectors at once: a caller that knows how many will come saves the
        copies of growing step by step (a replay of 400,000 vectors of 384 dimensions took 3.6 s instead of
        4.9; most of what is left is the fresh memory's first touch and reading the rows)."""
        size = len(self._row)
        if size + extra <= len(self._matrix):
            return
        grown = np.empty((size + extra, self.ndim), dtype="<f4")
        grown[:size] = self._matrix[:size]
        keys_grown = np.empty(len(grown), dtype=np.int64)
        keys_grown[:size] = self._keys[:size]
        self._matrix, self._keys = grown, keys_grown

    def remove(self, keys: Iterable[int]) -> None:
        """Remove the vectors under ``keys`` (absent keys are ignored); the last row fills each hole."""
        for key in keys:
            row = self._row.pop(key, None)
            if row is None:
                continue
            last = len(self._row)
            if row != last:
                moved = int(self._keys[last])
                self._matrix[row], self._keys[row] = self._matrix[last], moved
                self._row[moved] = row

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """The keys and the matrix of their vectors (views, valid until the next change)."""
        size = len(self._row)
        return self._keys[:size], self._matrix[:size]

    def search(self, query: np.ndarray, k: int, skip: set[int] | None = None) -> list[int]:
        """The keys of the ``k`` best vectors by dot product with ``query``, and of any tied with the
        ``k``-th (unordered); none of ``skip``."""
        keys, matrix = self.items()
        if k <= 0 or not len(keys):
            return []
        scores = matrix @ query
        if skip:
            out = np.isin(keys, np.fromiter(skip, dtype=np.int64, count=len(skip)))
            keys, scores = keys[~out], scores[~out]
            if not len(keys):
                return []
        k = min(k, len(keys))
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        # every key tied with the k-th best too: the caller breaks ties by id, not by matrix position
        best: list[int] = keys[scores >= kth - 1e-6].tolist()
        return best


@functools.cache
def _searchers() -> ThreadPoolExecutor:
    """This process's threads that walk a space's segments side by side (see :func:`_walk_all`): usearch
    lets go of the GIL while it walks, so one search gets every core."""
    return ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="pathrag-search")


os.register_at_fork(after_in_child=_searchers.cache_clear)  # a forked child has none of its parent's threads


@functools.cache  # asked on every search of a big space: tried, and logged, once per process
def _usearch() -> Any | None:
    """The usearch index module, or ``None`` where it cannot load (every space is then searched exactly)."""
    try:
        from usearch import index
    except ImportError as exc:  # a platform without its wheel, say
        logger.info("usearch cannot be imported (%s): every vector space is searched exactly", exc)
        return None
    return index


def int8_copies(vectors: np.ndarray, scale: float | None) -> np.ndarray:
    """What a space's graphs hold of ``vectors`` (unit float32): each component times ``scale``, rounded and
    kept within +-127; with ``scale`` ``None`` (graphs saved by earlier versions) the float32 vectors, which
    usearch casts itself.

    >>> int8_copies(np.array([0.6, -0.8, 0.0], dtype="<f4"), 200.0).tolist()
    [120, -127, 0]
    """
    if scale is None:
        return vectors
    copies: np.ndarray = np.clip(np.rint(vectors * scale), -127, 127).astype(np.int8)
    return copies


def int8_scale(ndim: int) -> float:
    """The scale a new space's int8 copies of ``ndim``-dimensional vectors get (:data:`INT8_STEPS`).

    >>> int8_scale(64)
    64.0
    """
    return INT8_STEPS * math.sqrt(ndim)


class _Segment:
    """One saved HNSW graph: memory-mapped from ``path`` (of ``size`` bytes and CRC-32 ``crc``, as its
    manifest lists it), or ``held`` in memory (written by this process and not yet saved, or taking the
    next additions)."""

    __slots__ = ("crc", "held", "index", "path", "size")

    def __init__(self, index: Any, path: Path | None, *, held: bool, size: int = 0, crc: int = 0) -> None:
        self.index, self.path, self.held, self.size, self.crc = index, path, held, size, crc

    @classmethod
    def mapped(cls, path: Path, size: int, crc: int) -> _Segment:
        """The segment saved at ``path``, memory-mapped once its bytes are checked (usearch must be
        importable): a regular file, not a link, of ``size`` bytes whose CRC-32 is ``crc``. usearch trusts
        the graph it maps (8 bytes garbled in its links crash the process), so nothing unchecked is mapped;
        the bytes checked are those mapped (one descriptor: a file renamed over it meanwhile changes
        nothing). Raises ``ValueError`` (or ``OSError``) for anything else."""
        usearch = _usearch()
        assert usearch is not None
        fd = open_safely(path, os.O_RDONLY)
        try:
            found = os.fstat(fd).st_size
            if found != size:
                raise ValueError(f"{path.name} holds {found:,} bytes where its manifest says {size:,}")
            if _crc(fd, size) != crc:
                raise ValueError(f"{path.name} fails its checksum")
            mapping = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        index = usearch.Index.restore(mapping, view=True)
        if index is None:
            raise ValueError(f"{path.name} is not a usearch index")
        # usearch reads the mapping without holding it: it must live exactly as long as the index
        index._pathrag_mapping = mapping
        return cls(index, path, held=False, size=size, crc=crc)

    def copied(self) -> _Segment:
        """An in-memory copy of this segment to change: searches may be walking this one meanwhile."""
        copy = self.index.copy()
        copy.expansion_add = BUILD["expansion_add"]  # a build setting, not saved in the file
        return _Segment(copy, self.path, held=True, size=self.size, crc=self.crc)

    def holding(self, keys: np.ndarray) -> np.ndarray:
        """Those of ``keys`` (uint64) this segment holds."""
        found: np.ndarray = keys[np.asarray(self.index.contains(keys), dtype=bool)]
        return found


def _crc(fd: int, size: int) -> int:
    """The CRC-32 of the first ``size`` bytes of the open file ``fd`` (read a mebibyte at a time: zlib's
    CRC runs at several GB/s, so a 70 MB segment of 2^17 vectors is checked in about 20 ms once cached)."""
    crc, done, view = 0, 0, memoryview(bytearray(_CHUNK))
    with open(fd, "rb", buffering=0, closefd=False) as handle:  # the caller's descriptor, from the start
        handle.seek(0)
        while done < size:
            got = handle.readinto(view[: min(_CHUNK, size - done)])
            if not got:
                raise ValueError("the file is shorter than it says")
            crc = zlib.crc32(view[:got], crc)
            done += got
    return crc


_ADD_BATCH = 1 << 13  # vectors added to a graph at a time: a fold stops between two batches
_STOPPING = threading.Event()  # set when the process ends (see _stop_folds)
_BACKGROUND: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # the folds searches started


class _Stopped(Exception):
    """A fold given up because the process is ending."""


@atexit.register
def _stop_folds() -> None:
    """At exit, stop the folds searches started (daemon threads) before the interpreter goes: usearch's
    own threads, ended under it, abort the process ("terminate called without an active exception")."""
    _STOPPING.set()
    for thread in list(_BACKGROUND):
        thread.join(timeout=60)


@dataclasses.dataclass(frozen=True)
class _Fold:
    """What a fold takes in: the state at log position ``seq`` (``generation``: of which load)."""

    generation: int
    seq: int
    segments: list[_Segment]
    removed: set[int]
    rows: KeyedMatrix
    scale: float


class SpaceIndex:
    """One process's search structure for one space of a store, at one position of its vector log.

    :meth:`candidates` brings it up to the caller's snapshot first (call it inside
    :meth:`SQLiteStore.snapshot`), so a read right after a write replays a few log entries instead of
    reloading the space."""

    def __init__(self, store: SQLiteStore, space: str, *, exact_limit: int | None = None) -> None:
        self.store = store
        self.directory = store.directory
        self.space = space
        self._exact_limit = exact_limit
        self.seq = -1  # the log position reflected; -1: nothing loaded yet
        self.segments: list[_Segment] = []  # the saved HNSW graphs (none: every row is in ``added``)
        self.scale: float | None = None  # how the segments' int8 copies are made (see int8_copies)
        self.base_seq = -1  # the log position the segments reflect
        self.refused = -1  # the newest saved index found not to match the store (not opened again)
        self.added: KeyedMatrix | None = None  # rows added since the segments (every row when there are none)
        self.removed: set[int] = set()  # keys of the segments removed since
        self.history: deque[tuple[int, int]] = deque(maxlen=_HISTORY)  # (seq, key) of recent changes
        self.history_from = -1  # history is complete for every change after this seq
        self.pending: KeyedMatrix | None = None  # the rows a fold under way takes in (see fold)
        self.stale: set[int] = set()  # keys changed since that fold began: not searched in ``pending``
        self.lock = threading.Lock()
        self.written: list[tuple[np.ndarray, np.ndarray]] | None = None  # see keep_written
        self._written_lock = threading.Lock()  # not self.lock: a commit must not wait for a fold
        self._generation = 0  # counts reloads: a fold begun before one is not taken in
        self._background: threading.Thread | None = None  # a fold a search started (see candidates)
        self._stop = threading.Event()  # set while stop_folding() stops it
        self._starting = threading.Lock()  # one fold_soon() at a time starts a thread

    # -- keeping in step --------------------------------------------------------------------------

    def _head(self) -> tuple[int, int]:
        """The snapshot's last log entry of this space, and the position the log was trimmed to."""
        ((head,),) = self.store.read("SELECT MAX(seq) FROM vector_log WHERE space = ?", (self.space,))
        trimmed = self.store.read("SELECT value FROM meta WHERE key = ?", (trim_key(self.space),))
        floor = int(trimmed[0][0]) if trimmed else 0
        return max(head or 0, floor), floor

    def sync(self, ndim: int) -> int:
        """Bring this index up to the caller's snapshot (or leave it ahead); return the snapshot's position.
        Changes worth folding are taken from another process's newer saved files, if there are some (see
        :meth:`fold` for folding them here)."""
        head, floor = self._head()
        if self.seq < 0 or self.seq < floor or self.added is None or self.added.ndim != ndim:
            self._load(head, floor, ndim)
        elif head > self.seq:
            self._replay(self.seq, head)
        if self._worth_folding():
            newest = saved_indexes(self.directory, self.space)
            if newest and max(self.base_seq, self.refused) < newest[0][0] <= head:  # another process folded
                self._load(head, floor, ndim)
        return head

    def _vectors(self, keys: Sequence[int]) -> tuple[list[int], np.ndarray]:
        """The snapshot's vectors under ``keys`` (those it holds), in one read (by rowid: the unary ``+``
        keeps SQLite from scanning the whole space through the ``(space, id)`` index instead)."""
        rows = self.store.read(
            f"SELECT rowid, vector FROM vectors WHERE +space = ? AND rowid IN {IN_JSON}",
            (self.space, dumps(list(keys))),
        )
        return [r[0] for r in rows], _blobs([r[1] for r in rows])

    def keep_written(self) -> None:
        """Keep the vectors this process commits (:meth:`take_written`) until the next replay, which then
        takes them from memory instead of reading them back. For a writer whose every commit is followed by
        a catch-up (:class:`~pathrag.index.backend.SQLiteBackend`), so that they are never kept for long."""
        with self._written_lock:
            self.written = []

    def take_written(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        """After a commit of this process: the unit ``vectors`` it wrote, by the log entries (``seqs``,
        ascending) that added them. Kept only when asked to (:meth:`keep_written`)."""
        with self._written_lock:
            if self.written is not None:
                self.written.append((seqs, vectors))

    def _given(self, keys: np.ndarray, seqs: np.ndarray) -> np.ndarray:
        """Add the rows of ``keys`` whose last change (at ``seqs``) this process wrote and kept; return
        which were not (a log position names one write for good, whichever process reads it)."""
        assert self.added is not None
        missing = np.ones(len(keys), dtype=bool)
        with self._written_lock:
            blocks = list(self.written or ())
        for kept, vectors in blocks:
            at = np.minimum(np.searchsorted(kept, seqs), len(kept) - 1)
            hit = missing & (kept[at] == seqs)
            if hit.any():
                rows = at[hit]  # ascending: a slice (no copy) when they follow each other, as a bulk write's do
                whole = rows[-1] - rows[0] + 1 == len(rows)
                self.added.add(keys[hit].tolist(), vectors[rows[0] : rows[-1] + 1] if whole else vectors[rows])
                missing &= ~hit
        return missing

    def _forget_written(self, head: int) -> None:
        """Drop the kept vectors of commits up to ``head``: taken in now, or replaced since."""
        with self._written_lock:
            if self.written:
                self.written = [(seqs, vectors) for seqs, vectors in self.written if seqs[-1] > head]

    def _replay(self, after: int, head: int) -> None:
        seqs, keys, added = self._log(after, head)
        self.history.extend(zip(seqs[-_HISTORY:].tolist(), keys[-_HISTORY:].tolist(), strict=True))
        changed, first = np.unique(keys[::-1], return_index=True)
        last = len(keys) - 1 - first  # where each changed key's last change is
        assert self.added is not None
        self.added.remove(changed.tolist())
        if self.pending is not None:  # a fold is taking in the rows as they were: these are searched anew
            self.stale.update(changed.tolist())
        if self.segments and len(changed):
            for segment in self.segments:
                self.removed.update(segment.holding(changed.astype(np.uint64)).tolist())
        wanted = added[last] == 1
        present = changed[wanted]  # the keys whose last change added a row
        self.added.reserve(len(present))  # a bulk commit's rows: room for all at once
        unread = present[self._given(present, seqs[last[wanted]])].tolist()
        for start in range(0, len(unread), 4096):  # a bulk commit's vectors a batch at a time
            found, vectors = self._vectors(unread[start : start + 4096])
            if found:
                self.added.add(found, vectors)
        self.seq = head
        self._forget_written(head)

    def _log(self, after: int, head: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The log entries of this space after ``after`` up to ``head``: ``seq``, ``key``, ``added``, by ``seq``.

        Read as one row of JSON arrays, not a row per entry: the reader lets go of Python's lock for each row
        it steps to, and a thread beside a busy writer then waits to get it back each time (a bulk commit's
        log is 10^5-10^6 entries)."""
        ((seqs, keys, added),) = self.store.read(
            "SELECT json_group_array(seq), json_group_array(key), json_group_array(added) FROM vector_log "
            "WHERE space = ? AND seq > ? AND seq <= ?",
            (self.space, after, head),
        )
        columns = [np.array(json.loads(column), dtype=np.int64) for column in (seqs, keys, added)]
        order = np.argsort(columns[0], kind="stable")  # an aggregate's order is not promised
        return columns[0][order], columns[1][order], columns[2][order]

    def _load(self, head: int, floor: int, ndim: int) -> None:
        """Start afresh at ``head``: from the newest saved index the log reaches back to, else from SQLite."""
        self.history, self.history_from = deque(maxlen=_HISTORY), head
        self.pending, self.stale, self._generation = None, set(), self._generation + 1  # a fold under way is dropped
        for _ in range(2):  # once more if a fold replaced the files while they were being opened
            vanished = False
            for seq, path in saved_indexes(self.directory, self.space):
                if floor <= seq <= head:
                    opened = self._open_saved(path, seq, head, ndim)
                    if opened:
                        return
                    vanished |= opened is None
                    if opened is not None:
                        self.refused = max(self.refused, seq)
            if not vanished:
                break
        self.segments, self.base_seq, self.removed, self.added = [], -1, set(), KeyedMatrix(ndim)
        with self._written_lock:
            kept = bool(self.written)
        if floor == 0 and kept and self._replayed_whole(head):
            return
        for keys, vectors in _batches(self.store.stream(_ROWS, (self.space,))):
            self.added.add(keys, vectors)
        self.seq = head
        self._forget_written(head)

    def _replayed_whole(self, head: int) -> bool:
        """Replay a log never trimmed from its start (this process's own writes then come from memory, not
        read back); whether that gave every row: a store upgraded to a vector log holds rows from before it."""
        assert self.added is not None
        self.seq = 0
        self._replay(0, head)
        ((count,),) = self.store.read("SELECT COUNT(*) FROM vectors WHERE space = ?", (self.space,))
        if len(self.added) == count:
            return True
        self.added = KeyedMatrix(self.added.ndim)
        return False

    def _open_saved(self, manifest: Path, seq: int, head: int, ndim: int) -> bool | None:
        """Use the segments ``manifest`` lists plus the log after them, if every file passes its checks and
        they agree with the store; ``None``: a file went meanwhile (a fold replaced them: look again)."""
        usearch = _usearch()
        if usearch is None:
            return False
        try:
            entries, scale = _read_manifest(manifest, self.space, seq, ndim)
            segments = [_Segment.mapped(self.directory / name, size, crc) for name, size, crc in entries]
        except FileNotFoundError:
            return None
        except Exception as exc:  # damaged, foreign or special files: rebuilt from the store
            logger.warning("%s cannot be used (%s): rebuilding it from the store", manifest, exc)
            return False
        if any(s.index.ndim != ndim for s in segments):
            return False
        if len({s.index.metric for s in segments}) != 1:  # their distances would not compare
            logger.warning("%s lists segments of several metrics: rebuilding it from the store", manifest)
            return False
        self.segments, self.base_seq, self.seq, self.removed = segments, seq, seq, set()
        self.added, self.history_from, self.scale = KeyedMatrix(ndim), seq, scale
        self._replay(seq, head)
        ((count,),) = self.store.read("SELECT COUNT(*) FROM vectors WHERE space = ?", (self.space,))
        saved = sum(len(s.index) for s in segments)
        if saved - len(self.removed) + len(self.added) == count and all(map(self._sample_agrees, segments)):
            return True
        logger.warning("%s does not match the store: rebuilding it", manifest)
        self.segments = []
        return False

    def _sample_agrees(self, segment: _Segment) -> bool:
        index = segment.index
        per = max(1, _SAMPLE // len(self.segments))
        keys = np.asarray(index.keys)[:: max(1, len(index) // per)][:per]
        wanted = [int(k) for k in keys if int(k) not in self.removed]
        found, vectors = self._vectors(wanted)
        if len(found) != len(wanted):
            return False
        if not found:
            return True
        # The file's copy of each sampled row is as near to the row as anything the file finds for it:
        # true of the file written from these rows whatever its rounding (int8 moves a 1,536-dimensional
        # vector by a cosine of about 0.99) and whatever ties it holds, false of a file whose keys name
        # other vectors.
        index.expansion_search = 512
        best = np.atleast_2d(index.search(int8_copies(vectors, self.scale), 1).keys)[:, 0]
        own = _saved_cosines(index, found, vectors)
        nearest = _saved_cosines(index, [int(k) for k in best], vectors)
        return bool(np.all(own >= nearest - 1e-3))

    # -- folding changes into a saved index -------------------------------------------------------

    def _worth_folding(self) -> bool:
        if self.added is None or self.pending is not None:  # nothing loaded, or a fold under way
            return False
        changed = len(self.added) + len(self.removed)
        limit = EXACT_LIMIT if self._exact_limit is None else self._exact_limit
        if self.segments:
            limit = min(limit, FOLD_LIMIT)
        return changed * self.added.ndim >= limit and _usearch() is not None

    def fold(self) -> None:
        """Fold the changes held apart into saved files, if they are worth it and this process may write.

        The graphs are built without holding :attr:`lock`: searches go on meanwhile, the rows being folded
        searched exactly (``pending``, but for the keys changed since, ``stale``). One process folds a store
        at a time (:func:`_folding`): while another one does, this one leaves it to it and takes its files
        once a snapshot reaches them."""
        if self.store.read_only or _usearch() is None:
            return
        with self.lock:
            if not self._worth_folding():  # most commits: no lock file to take
                return
        with _folding(self.directory, self.space) as alone:
            if not alone:
                return
            with self.lock:
                if not self._worth_folding():
                    return
                plan = self._freeze()
            built = None
            try:
                built = self._build(plan)
            finally:
                with self.lock:
                    self._settle(plan, built)

    def _freeze(self) -> _Fold:
        """Hand the rows held apart to a fold: searched as ``pending`` until it ends, changes going on apart."""
        assert self.added is not None
        ndim = self.added.ndim
        scale = self.scale if self.segments and self.scale is not None else int8_scale(ndim)
        plan = _Fold(self._generation, self.seq, list(self.segments), set(self.removed), self.added, scale)
        self.pending, self.stale, self.added = self.added, set(), KeyedMatrix(ndim)
        return plan

    def _settle(self, plan: _Fold, built: list[_Segment] | None) -> None:
        """Search through the segments a fold ``built`` (``None``: it failed, the rows are held apart again)."""
        if plan.generation != self._generation:  # reloaded meanwhile: the fold is not this state's
            return
        assert self.pending is not None and self.added is not None
        if built is None:
            keys, vectors = self.pending.items()
            kept = ~np.isin(keys, np.fromiter(self.stale, dtype=np.int64, count=len(self.stale)))
            self.added.add(keys[kept].tolist(), vectors[kept])
        else:
            stale = np.fromiter(self.stale, dtype=np.uint64, count=len(self.stale))
            self.segments, self.base_seq, self.scale = built, plan.seq, plan.scale
            self.removed = {int(k) for segment in built for k in segment.holding(stale)} if len(stale) else set()
        self.pending, self.stale = None, set()

    def _build(self, plan: _Fold) -> list[_Segment]:
        """The segments of ``plan``: removals taken out where they are, additions put into the last one until
        it is full, then into new ones; each touched one a copy (searches go on in the ones they replace)."""
        usearch = _usearch()
        assert usearch is not None
        segments, ndim = list(plan.segments), plan.rows.ndim
        touched = {n for n, segment in enumerate(segments) if segment.path is None}  # not saved yet
        mine: set[int] = set()  # the segments this fold made (the others are searched meanwhile)
        if plan.removed:
            gone = np.fromiter(plan.removed, dtype=np.uint64, count=len(plan.removed))
            for n, segment in enumerate(segments):
                held = segment.holding(gone)
                if len(held):
                    segments[n] = segment.copied()
                    segments[n].index.remove(held)
                    touched.add(n)
                    mine.add(n)
        keys, vectors = plan.rows.items()
        metric = segments[0].index.metric if segments else METRIC  # one metric per space: distances compare
        start = 0
        while start < len(keys):
            if not segments or len(segments[-1].index) >= SEGMENT_LIMIT:
                # int8 components: a quarter of the memory and 2.4x faster to build than float32, at the
                # same recall once the candidates are re-scored from the rows (measured on MiniLM vectors)
                fresh = usearch.Index(ndim=ndim, metric=metric, dtype="i8", **BUILD)
                segments.append(_Segment(fresh, None, held=True))
                mine.add(len(segments) - 1)
            if len(segments) - 1 not in mine:
                segments[-1] = segments[-1].copied()
                mine.add(len(segments) - 1)
            last = segments[-1]
            stop = min(start + SEGMENT_LIMIT - len(last.index), start + _ADD_BATCH)
            if _STOPPING.is_set() or self._stop.is_set():
                raise _Stopped("the process or the store is closing")
            copies = int8_copies(vectors[start:stop], plan.scale)
            last.index.add(keys[start:stop].astype(np.uint64), copies, threads=os.cpu_count() or 1)
            touched.add(len(segments) - 1)
            start = stop
        if self._save(segments, touched, plan):
            for n, segment in enumerate(segments[:-1]):  # the writer holds only the one taking additions
                if segment.held and segment.path is not None:
                    try:
                        segments[n] = _Segment.mapped(segment.path, segment.size, segment.crc)
                    except Exception as exc:  # gone or changed meanwhile: the copy in memory stays in use
                        logger.info("%s stays in memory (%s)", segment.path.name, exc)
        return segments

    def _save(self, segments: list[_Segment], touched: set[int], plan: _Fold) -> bool:
        """Write the ``touched`` segments, then the manifest of all, with their sizes and checksums and
        their int8 scale (each aside, then renamed into place), and remove older files; ``False`` if they
        could not be written (searched from memory meanwhile)."""
        manifest, scale = _path(self.directory, self.space, plan.seq), plan.scale
        try:
            for n in sorted(touched):
                segments[n].path = None
                path = self.directory / f"pathrag-{self.space}.{plan.seq}.{n}.usearch"
                _write_aside(path, segments[n].index.save)
                segments[n].size, segments[n].crc = _file_crc(path)
                segments[n].path = path
            entries = [[s.path.name, s.size, s.crc] for s in segments if s.path is not None]
            if len(entries) != len(segments) or scale is None:
                raise OSError("a segment was never saved")
            _write_aside(manifest, lambda tmp: tmp.write_bytes(_manifest_bytes(scale, entries)))
        except (OSError, RuntimeError, ValueError) as exc:  # a full disk, say
            logger.warning("cannot save the %s index (%s): it stays in this process's memory", self.space, exc)
            return False
        self._remove_older(manifest, [s.path.name for s in segments if s.path is not None], plan)
        return True

    def _remove_older(self, manifest: Path, listed: list[str], plan: _Fold) -> None:
        """Remove the files older than ``manifest`` that no manifest left lists. Under the fold lock no other
        process writes this space's files; a process that has them open keeps them, and one about to open
        an older manifest looks again. A manifest newer than this one (another process ahead of this one,
        or files restored beside an older store) keeps what it lists, and all, if it cannot be read."""
        kept, unknown = {manifest.name, *listed}, False
        for seq, path in saved_indexes(self.directory, self.space):
            if seq > plan.seq:
                try:
                    kept.update(name for name, _, _ in _read_manifest(path, self.space, seq, plan.rows.ndim)[0])
                except Exception:
                    unknown = True
        for seq, path in _saved_files(self.directory, self.space):
            if seq < plan.seq and path.name not in kept and not (unknown and ".usearch.json" not in path.name):
                with contextlib.suppress(OSError):
                    path.unlink()

    def catch_up(self, ndim: int) -> None:
        """Bring this index up to the caller's snapshot now (call :meth:`fold` after the snapshot)."""
        with self.lock:
            self.sync(ndim)

    def fold_soon(self) -> None:
        """:meth:`fold` in a thread of its own, unless one is under way: what a search does when the changes
        are worth folding, so that no search waits for a fold (a reader's first query after a commit of
        10^5 vectors took 16-18 s: it folded them itself). A daemon thread: a process that ends stops it
        between two batches of additions (:func:`_stop_folds`), and the next fold removes its files."""
        with self._starting:
            if self._background is not None and self._background.is_alive():
                return
            self._background = threading.Thread(target=self._fold_quietly, name="pathrag-fold", daemon=True)
            self._background.start()
            _BACKGROUND.add(self._background)

    def _fold_quietly(self) -> None:
        try:
            self.fold()
        except _Stopped:
            pass
        except Exception as exc:  # the changes stay held apart, searched exactly
            logger.warning("cannot fold the %s index (%s): it stays in this process's memory", self.space, exc)

    def wait_folded(self) -> None:
        """Return once a fold :meth:`fold_soon` started has ended."""
        background = self._background
        if background is not None:
            background.join()

    def stop_folding(self) -> None:
        """Stop a fold :meth:`fold_soon` started (between two batches of additions) and wait for it: what
        closing a store does, so that no file is written in its directory after (the next process to fold
        removes the stopped fold's files)."""
        self._stop.set()
        try:
            self.wait_folded()
        finally:
            self._stop.clear()

    # -- searching --------------------------------------------------------------------------------

    def _top(self, query: np.ndarray, k: int, skip: set[int]) -> set[int]:
        """Keys of the ``k`` best vectors of this index's state other than ``skip``: the exact ones of the
        rows held apart, and each segment's as its HNSW search finds them."""
        assert self.added is not None
        found = set(self.added.search(query, k + len(skip))) - skip
        if self.pending is not None:
            found.update(self.pending.search(query, k, skip | self.stale))
        if not self.segments:
            return found
        skip = skip | self.removed
        # Candidates beyond k, re-scored from the rows, make up for the int8 copy's rounding and the graph
        # walk's misses, both among near-ties around the k-th. Measured in dense clusters
        # (vector_scale.py): in one graph of 10^6 entities, k + 30 + k/4 held 98.3 % of the exact top 10
        # (relations, 2x10^6: 94 %), k + 70 + k/4 with a walk at least 512 wide 99.5 % and 98 %; in segments
        # of 2^18, k + 70 + k/4 with a walk twice as wide holds 99.6-99.95 %, at a third of the time (graphs
        # built as BUILD says: 99.05-99.85 %; in segments of 2^17, walked as _walk does, 99.65-99.9 %).
        # Taken from all segments together by their int8 distance (comparable across segments), so that
        # a space in several segments costs no more rows to re-score than one in a single graph.
        margin = 70 + k // 4
        hits = sorted(_walk_all(self.segments, int8_copies(query, self.scale), k, margin, skip))
        return found | {key for _, key in hits[: k + margin]}

    def candidates(self, query: np.ndarray, k: int) -> list[int]:
        """Keys worth scoring exactly for the ``k`` best hits of the caller's snapshot (a superset of
        them, up to the HNSW search's recall; call inside :meth:`SQLiteStore.snapshot`)."""
        with self.lock:
            snapshot = self.sync(len(query))
            if self._worth_folding() and not self.store.read_only and _usearch() is not None:
                self.fold_soon()  # never in this search: it answers from the rows held apart meanwhile
            if snapshot >= self.seq:
                return list(self._top(query, k, set()))
            changed = {key for seq, key in self.history if seq > snapshot}
            if snapshot >= self.history_from and len(changed) <= _REREAD:
                # keys changed after the caller's snapshot are scored as that snapshot has them
                return list(self._top(query, k, changed) | changed)
        return [key for key, _ in self.store.stream("SELECT rowid, 0 FROM vectors WHERE space = ?", (self.space,))]


def _walk_all(
    segments: Sequence[_Segment], query: np.ndarray, k: int, margin: int, skip: set[int]
) -> list[tuple[float, int]]:
    """:func:`_walk` over every segment, in as many groups as there are cores: this thread walks the first,
    :func:`_searchers` the others. At 10^6 entities on 2 cores, the 500 best of 16 relation segments took
    18-19 ms instead of 36 on one core, the 10 best of 8 entity segments 2.3-2.5 ms instead of 4.1 (2.7
    with a hand-over per segment rather than per core)."""

    def walk(group: Sequence[_Segment]) -> list[tuple[float, int]]:
        return [hit for segment in group for hit in _walk(segment.index, query, k, margin, skip)]

    cores = min(len(segments), os.cpu_count() or 1)
    others = [_searchers().submit(walk, segments[n::cores]) for n in range(1, cores)]
    return walk(segments[::cores]) + [hit for future in others for hit in future.result()]


def _walk(index: Any, query: np.ndarray, k: int, margin: int, skip: set[int]) -> list[tuple[float, int]]:
    """Up to ``k + margin`` ``(distance, key)`` of one HNSW graph's nearest vectors other than ``skip``, as its
    search finds them, asking for more while skipped keys leave fewer than ``k``.

    The walk is ``margin`` wider than the hits it asks for: the margin that the candidates get for the int8
    rounding, the walk gets again for its own misses. Measured by ``benchmarks/hnsw_segments.py`` in segments
    of 2^17: for 10 hits, recall@10 0.92 walked as wide as the candidates, 0.97 with the margin again, 0.98
    twice as wide; for 500, 0.998 each, but twice as wide took 1.5x as long as the margin again (the 500
    relations that a retrieval's key paths start from are its biggest search).
    """
    wanted = count = k + margin
    while True:
        index.expansion_search = count + margin
        found = index.search(query, count, exact=BRUTE_FORCE)
        hits = [(float(d), int(key)) for d, key in zip(found.distances, found.keys, strict=True)]
        kept = [hit for hit in hits if hit[1] not in skip]
        if len(kept) >= k or len(hits) < count:
            return kept[:wanted]
        count *= 4


def _saved_cosines(index: Any, keys: Sequence[int], vectors: np.ndarray) -> np.ndarray:
    """The cosine of each of ``vectors`` with the saved graph's copy of the vector under the same-place key."""
    saved = np.asarray(index.get(np.asarray(keys, dtype=np.uint64), dtype="f32"), dtype="<f4")
    saved = saved.reshape(len(keys), -1)
    norms = np.linalg.norm(saved, axis=1) * np.linalg.norm(vectors, axis=1)
    cosines: np.ndarray = np.einsum("ij,ij->i", saved, vectors) / np.maximum(norms, 1e-12)
    return cosines


def _write_aside(path: Path, write: Callable[[Path], object]) -> None:
    """``write(tmp)`` to a temporary file beside ``path``, then rename it into place (never a half file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def trim_key(space: str) -> str:
    """The ``meta`` key of the position up to which the vector log of ``space`` was trimmed."""
    return f"vector_log_trimmed:{space}"


_ROWS = "SELECT rowid, vector FROM vectors WHERE space = ? ORDER BY rowid"


def _blobs(blobs: Sequence[bytes]) -> np.ndarray:
    if not blobs:
        return np.empty((0, 0), dtype="<f4")
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)


def _batches(rows: Iterator[tuple[Any, ...]], size: int = 4096) -> Iterator[tuple[list[int], np.ndarray]]:
    batch: list[tuple[Any, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield [r[0] for r in batch], _blobs([r[1] for r in batch])
            batch = []
    if batch:
        yield [r[0] for r in batch], _blobs([r[1] for r in batch])


def _path(directory: Path, space: str, seq: int) -> Path:
    return directory / f"pathrag-{space}.{seq}.usearch.json"


def _manifest_bytes(scale: float, entries: list[list[Any]]) -> bytes:
    """A manifest: the segments' ``[name, size, crc]``, the int8 scale, and a CRC-32 of those."""
    body = {"format": MANIFEST_FORMAT, "scale": scale, "segments": entries}
    return json.dumps({**body, "crc32": zlib.crc32(_canonical(body))}).encode()


def _canonical(body: Any) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (not a link, not a FIFO or device), refused beyond ``limit``."""
    fd = open_safely(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise ValueError(f"{size:,} bytes, more than a manifest ever holds")
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError("more bytes than a manifest ever holds")
    return data


def _read_manifest(manifest: Path, space: str, seq: int, ndim: int) -> tuple[list[tuple[str, int, int]], float]:
    """The segment files a manifest (written at log position ``seq``) lists, each with its size and CRC-32,
    and the scale of their int8 copies. It is read, not trusted: a regular file of sane size, its own
    checksum right, the scale the store's rule gives ``ndim`` (:func:`int8_scale`), and the segments this
    space's files named in order (the n-th named ``.n.``, none written after the manifest): a name twice or
    a name of another space's is refused. ``ValueError`` (or ``OSError``) for anything else."""
    content: Any = json.loads(_read_bounded(manifest, MANIFEST_BYTES))
    if not isinstance(content, dict) or "crc32" not in content:
        raise ValueError("written by an earlier version, without checksums")
    body = {key: value for key, value in content.items() if key != "crc32"}
    if set(body) != {"format", "scale", "segments"} or body["format"] != MANIFEST_FORMAT:
        raise ValueError(f"not a manifest of format {MANIFEST_FORMAT}")
    if content["crc32"] != zlib.crc32(_canonical(body)):
        raise ValueError("the manifest fails its checksum")
    if body["scale"] != int8_scale(ndim):
        raise ValueError(f"an int8 scale of {body['scale']!r} where the store's rule gives {int8_scale(ndim)!r}")
    segments = body["segments"]
    name = re.compile(rf"pathrag-{re.escape(space)}\.(\d+)\.(\d+)\.usearch")
    entries: list[tuple[str, int, int]] = []
    for n, entry in enumerate(segments if isinstance(segments, list) else [None]):
        found = name.fullmatch(entry[0]) if _is_entry(entry) else None
        if found is None or int(found.group(1)) > seq or int(found.group(2)) != n:
            raise ValueError(f"segment {n} is not this space's segment {n}: {entry!r}")
        entries.append((entry[0], entry[1], entry[2]))
    if not entries:
        raise ValueError("no segment listed")
    return entries, body["scale"]


def _is_entry(entry: Any) -> bool:
    """Whether a manifest's ``entry`` is ``[name, size, crc]`` with a positive size and a 32-bit crc."""
    if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
        return False
    size, crc = entry[1], entry[2]
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (size, crc))
    return ints and size > 0 and 0 <= crc < 1 << 32


def _file_crc(path: Path) -> tuple[int, int]:
    """The size and CRC-32 of the regular file ``path``."""
    fd = open_safely(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        return size, _crc(fd, size)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _folding(directory: Path, space: str) -> Iterator[bool]:
    """Whether this process may fold ``space`` now: an exclusive ``flock`` on ``pathrag.fold.lock`` for the
    fold, taken without waiting (``False``: another fold is under way). So one process at a time writes and
    removes a store's search files, and none removes a file another's manifest still lists."""
    if fcntl is None:
        yield True
        return
    try:
        fd = open_safely(directory / FOLD_LOCK_FILE, os.O_RDWR | os.O_CREAT)
    except (OSError, StoreError) as exc:
        logger.warning("cannot fold the %s index (%s): it stays in this process's memory", space, exc)
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # drops the flock


def _saved_files(directory: Path, space: str) -> list[tuple[int, Path]]:
    """Every saved file of ``space`` (manifests, segments, the single files of earlier versions, and the
    temporary files of writes that never finished), with the log position each was written at."""
    pattern = re.compile(rf"\.?pathrag-{re.escape(space)}\.(\d+)(?:\.\d+)?\.usearch(?:\.json)?(?:\.[\w-]+\.tmp)?")
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [(int(m.group(1)), directory / name) for name in names if (m := pattern.fullmatch(name))]


def saved_indexes(directory: Path, space: str) -> list[tuple[int, Path]]:
    """The saved indexes (manifests) of ``space`` in ``directory``, newest first, with the log position of
    each."""
    found = [(seq, path) for seq, path in _saved_files(directory, space) if path.name.endswith(".json")]
    return sorted(found, reverse=True)


def check_saved(directory: Path, space: str, ndim: int) -> list[str]:
    """What is wrong with the saved files of ``space`` in ``directory``: every manifest and every segment
    it lists, read in full (their checksums, sizes and kinds), one line per manifest that fails. A search
    never uses such files: it rebuilds them from the rows."""
    problems = []
    for seq, manifest in saved_indexes(directory, space):
        try:
            entries, _ = _read_manifest(manifest, space, seq, ndim)
            for name, size, crc in entries:
                if _usearch() is not None:
                    _Segment.mapped(directory / name, size, crc)
                elif _file_crc(directory / name) != (size, crc):
                    raise ValueError(f"{name} fails its checksum")
        except Exception as exc:
            problems.append(
                f"{manifest.name}: {exc} (the {space} search index is rebuilt from the rows at its next use)"
            )
    return problems
