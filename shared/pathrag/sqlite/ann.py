"""What a process keeps to search one vector space of the store, kept in step through the vector log.

SQLite holds the truth; everything here is derived from it and checked against it, never trusted blindly.
A small space is searched exactly, from one in-memory matrix (:class:`~pathrag.sqlite.keyed.KeyedMatrix`). A
big one is searched through HNSW graphs (usearch, int8 components) saved beside the store in segments of at
most :data:`SEGMENT_LIMIT` vectors, listed by a checksummed manifest (their format and checks:
:mod:`pathrag.sqlite.segments`). They are memory-mapped, so a query touches only the pages it needs. The rows
changed since (from the ``vector_log`` table) are held apart: the added ones in a ``KeyedMatrix``, searched
exactly, the removed ones as keys the segments' hits are filtered by. Once those changes reach
:data:`FOLD_LIMIT`, a process that may write the directory folds them in (:mod:`pathrag.sqlite.fold`). Saved
files that are missing, damaged, of an earlier version (no checksums), of a scale other than the store's
rule, listing a segment out of place, older than the log reaches back, newer than the store, or disagreeing
with it (row count, sampled vectors) are rebuilt from the rows (:func:`check_saved` reports them for
``stats --check``).

A process brings its index up to date by reading the log entries after its position (as one row: see
:meth:`SpaceIndex._log`) and the rows they name; a writer that takes in each of its own commits right after it
is handed the vectors it wrote instead, by the log positions that added them (:meth:`SpaceIndex.keep_written`).

Keys are the ``vectors`` table's rowids. Every search re-scores its candidates exactly from the rows of the
caller's snapshot, so its scores and ties match exact search, and a reader on an older snapshot than this
process's index sees exactly its own state (the keys changed since are looked up in its snapshot).

The limits below are read at each use: set them on this module. What they were chosen by (recall and speed
measured by ``benchmarks/hnsw_segments.py`` and ``benchmarks/vector_scale.py``) is in ``benchmarks/README.md``.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from .codec import IN_JSON, dumps
from .fold import Folding, FoldSettings
from .keyed import INT8_STEPS, KeyedMatrix, int8_copies, int8_scale
from .segments import (
    MANIFEST_BYTES,
    MANIFEST_FORMAT,
    Segment,
    check_saved,
    read_manifest,
    saved_cosines,
    saved_indexes,
)
from .segments import usearch_module as _usearch
from .store import SQLiteStore

__all__ = [
    "BUILD",
    "EXACT_LIMIT",
    "FOLD_LIMIT",
    "INT8_STEPS",
    "MANIFEST_BYTES",
    "MANIFEST_FORMAT",
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
"""Search a space exactly while it holds fewer float32 numbers than this (64 MB: the most one exact search
reads); above it, through a saved HNSW index."""

FOLD_LIMIT = 1 << 21
"""Fold the changes held beside a saved index into a new one once they hold this many float32 numbers
(8 MB searched exactly beside the saved graphs at most)."""

SEGMENT_LIMIT = 1 << 17
"""Vectors in one saved HNSW graph; a bigger space is saved as several. Adding to a graph costs more the
bigger it is, and a fold rewrites the segments it touches, not the whole space, so a writer holds one segment
in memory, not every vector. A search walks every segment, on every core (:func:`_searchers`), and a small
graph is walked more accurately than a big one."""

BUILD = {"connectivity": 16, "expansion_add": 64}
"""How the HNSW graphs are built: each added vector links to up to 16 neighbours, found by a search 64 wide
(usearch's defaults: 16 and 128). An add costs about as much as that search, and adding is most of the CPU of
a big import (the writer's fold thread builds one batch's graphs while the writer writes the next), so the
build is as narrow as recall allows; the searches' re-scoring of their candidates from the rows keeps
recall@10 above 0.98."""

METRIC = "l2sq"
"""How a new space's graphs compare vectors: by the squared distance between their int8 copies. On the unit
vectors the store keeps it ranks as cosine does, in one pass over the components, where the angular kernel
also computes both norms; and the int8 rounding of a vector's length moves it little among its near
neighbours (by about (1 - cos) of the rounding), where an inner product moves it by all of it. The segments of
a space share one metric (their int8 distances are compared across segments): a space saved with another one
keeps it."""

BRUTE_FORCE = False
"""Search saved indexes by comparing every vector instead of walking their graph: the answers then do not
depend on how the graph was built (tests of the bookkeeping around it set it)."""

_HISTORY = 1 << 16  # the keys changed most recently, for readers on a snapshot older than the index
_SAMPLE = 8  # vectors of a saved index compared with the store when it is opened
_REREAD = 4096  # a reader whose snapshot misses more changes than this is searched from its rows


@functools.cache
def _searchers() -> ThreadPoolExecutor:
    """This process's threads that walk a space's segments side by side (see :func:`_walk_all`): usearch
    lets go of the GIL while it walks, so one search gets every core."""
    return ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="pathrag-search")


os.register_at_fork(after_in_child=_searchers.cache_clear)  # a forked child has none of its parent's threads


class SpaceIndex(Folding):
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
        self.segments: list[Segment] = []  # the saved HNSW graphs (none: every row is in ``added``)
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
            entries, scale = read_manifest(manifest, self.space, seq, ndim)
            segments = [Segment.mapped(self.directory / name, size, crc) for name, size, crc in entries]
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

    def _sample_agrees(self, segment: Segment) -> bool:
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
        own = saved_cosines(index, found, vectors)
        nearest = saved_cosines(index, [int(k) for k in best], vectors)
        return bool(np.all(own >= nearest - 1e-3))

    def catch_up(self, ndim: int) -> None:
        """Bring this index up to the caller's snapshot now (call :meth:`fold` after the snapshot)."""
        with self.lock:
            self.sync(ndim)

    def _settings(self) -> FoldSettings:
        # read at each use: users and tests set them on this module
        return FoldSettings(EXACT_LIMIT, FOLD_LIMIT, SEGMENT_LIMIT, METRIC, BUILD, _usearch())

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
    segments: Sequence[Segment], query: np.ndarray, k: int, margin: int, skip: set[int]
) -> list[tuple[float, int]]:
    """:func:`_walk` over every segment, in as many groups as there are cores: this thread walks the first,
    :func:`_searchers` the others (one hand-over per core, not per segment)."""

    def walk(group: Sequence[Segment]) -> list[tuple[float, int]]:
        return [hit for segment in group for hit in _walk(segment.index, query, k, margin, skip)]

    cores = min(len(segments), os.cpu_count() or 1)
    others = [_searchers().submit(walk, segments[n::cores]) for n in range(1, cores)]
    return walk(segments[::cores]) + [hit for future in others for hit in future.result()]


def _walk(index: Any, query: np.ndarray, k: int, margin: int, skip: set[int]) -> list[tuple[float, int]]:
    """Up to ``k + margin`` ``(distance, key)`` of one HNSW graph's nearest vectors other than ``skip``, as its
    search finds them, asking for more while skipped keys leave fewer than ``k``.

    The walk is ``margin`` wider than the hits it asks for: the margin that the candidates get for the int8
    rounding, the walk gets again for its own misses: nearly the recall of a walk twice as wide, for less
    (``benchmarks/README.md`` has the figures).
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
