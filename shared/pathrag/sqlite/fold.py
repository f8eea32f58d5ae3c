"""Folding the changes held apart from a space's saved graphs into new saved files.

A process brings its :class:`~pathrag.sqlite.ann.SpaceIndex` up to date by holding the rows changed since
the saved graphs apart (searched exactly). Once those changes are worth it, a process that may write the
directory folds them in: it rewrites only the segments they touch (the last one takes the additions until it
is full), each written aside and renamed, then the manifest (see :mod:`pathrag.sqlite.segments`). One
process folds at a time (an ``flock`` on ``pathrag.fold.lock``); it then removes the older files no manifest
left lists. :class:`Folding` is the part of :class:`~pathrag.sqlite.ann.SpaceIndex` that does it; the limits
it folds by are read from :mod:`pathrag.sqlite.ann` at each fold (:class:`FoldSettings`).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import logging
import os
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PathRAGError, StoreError
from .keyed import KeyedMatrix, int8_copies, int8_scale
from .lock import FOLD_LOCK_FILE, open_safely
from .segments import (
    Segment,
    file_crc,
    manifest_bytes,
    manifest_path,
    read_manifest,
    saved_files,
    saved_indexes,
    write_aside,
)
from .store import SQLiteStore

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: folds are not kept apart across processes
    fcntl = None  # type: ignore[assignment]

__all__ = ["FoldSettings", "Folding"]

logger = logging.getLogger(__name__)

_ADD_BATCH = 1 << 13  # vectors added to a graph at a time: a fold stops between two batches
_STOPPING = threading.Event()  # set when the process ends (see _stop_folds)
_BACKGROUND: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # the folds searches started


class _Stopped(PathRAGError):
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
    segments: list[Segment]
    removed: set[int]
    rows: KeyedMatrix
    scale: float


@dataclasses.dataclass(frozen=True)
class FoldSettings:
    """What a fold goes by, read where users set it (:mod:`pathrag.sqlite.ann`) when it is needed."""

    exact_limit: int
    """Fold a space with no saved graph once its rows hold this many float32 numbers."""
    fold_limit: int
    """Fold the changes held beside saved graphs once they hold this many float32 numbers."""
    segment_limit: int
    """Vectors in one saved graph."""
    metric: str
    """How a new space's graphs compare vectors."""
    build: dict[str, int]
    """How the graphs are built (usearch's ``connectivity`` and ``expansion_add``)."""
    usearch: Any | None
    """The usearch index module (``None``: it cannot load, nothing is folded)."""


class Folding:
    """The folds of one :class:`~pathrag.sqlite.ann.SpaceIndex` (its state is declared here, set there)."""

    store: SQLiteStore
    directory: Path
    space: str
    seq: int
    segments: list[Segment]
    scale: float | None
    base_seq: int
    added: KeyedMatrix | None
    removed: set[int]
    pending: KeyedMatrix | None
    stale: set[int]
    lock: threading.Lock
    _exact_limit: int | None
    _generation: int
    _background: threading.Thread | None
    _stop: threading.Event
    _starting: threading.Lock

    def _settings(self) -> FoldSettings:
        """The limits and library a fold goes by, as they are now."""
        raise NotImplementedError

    def _worth_folding(self) -> bool:
        if self.added is None or self.pending is not None:  # nothing loaded, or a fold under way
            return False
        changed = len(self.added) + len(self.removed)
        settings = self._settings()
        limit = settings.exact_limit if self._exact_limit is None else self._exact_limit
        if self.segments:
            limit = min(limit, settings.fold_limit)
        return changed * self.added.ndim >= limit and settings.usearch is not None

    def fold(self) -> None:
        """Fold the changes held apart into saved files, if they are worth it and this process may write.

        The graphs are built without holding :attr:`lock`: searches go on meanwhile, the rows being folded
        searched exactly (``pending``, but for the keys changed since, ``stale``). One process folds a store
        at a time (:func:`_folding`): while another one does, this one leaves it to it and takes its files
        once a snapshot reaches them."""
        if self.store.read_only or self._settings().usearch is None:
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

    def _settle(self, plan: _Fold, built: list[Segment] | None) -> None:
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

    def _build(self, plan: _Fold) -> list[Segment]:
        """The segments of ``plan``: removals taken out where they are, additions put into the last one until
        it is full, then into new ones; each touched one a copy (searches go on in the ones they replace)."""
        settings = self._settings()
        usearch = settings.usearch
        assert usearch is not None
        segments, ndim = list(plan.segments), plan.rows.ndim
        touched = {n for n, segment in enumerate(segments) if segment.path is None}  # not saved yet
        mine: set[int] = set()  # the segments this fold made (the others are searched meanwhile)
        if plan.removed:
            mine |= _take_out(segments, plan.removed, settings.build["expansion_add"])
            touched |= mine
        keys, vectors = plan.rows.items()
        metric = segments[0].index.metric if segments else settings.metric  # one metric per space: distances compare
        start = 0
        while start < len(keys):
            if not segments or len(segments[-1].index) >= settings.segment_limit:
                # int8 components: a quarter of the memory and 2.4x faster to build than float32, at the
                # same recall once the candidates are re-scored from the rows (measured on MiniLM vectors)
                fresh = usearch.Index(ndim=ndim, metric=metric, dtype="i8", **settings.build)
                segments.append(Segment(fresh, None, held=True))
                mine.add(len(segments) - 1)
            if len(segments) - 1 not in mine:
                segments[-1] = segments[-1].copied(settings.build["expansion_add"])
                mine.add(len(segments) - 1)
            last = segments[-1]
            stop = min(start + settings.segment_limit - len(last.index), start + _ADD_BATCH)
            if _STOPPING.is_set() or self._stop.is_set():
                raise _Stopped("the process or the store is closing")
            copies = int8_copies(vectors[start:stop], plan.scale)
            last.index.add(keys[start:stop].astype(np.uint64), copies, threads=os.cpu_count() or 1)
            touched.add(len(segments) - 1)
            start = stop
        if self._save(segments, touched, plan):
            _map_saved(segments)
        return segments

    def _save(self, segments: list[Segment], touched: set[int], plan: _Fold) -> bool:
        """Write the ``touched`` segments, then the manifest of all, with their sizes and checksums and
        their int8 scale (each aside, then renamed into place), and remove older files; ``False`` if they
        could not be written (searched from memory meanwhile)."""
        manifest, scale = manifest_path(self.directory, self.space, plan.seq), plan.scale
        try:
            for n in sorted(touched):
                segments[n].path = None
                path = self.directory / f"pathrag-{self.space}.{plan.seq}.{n}.usearch"
                write_aside(path, segments[n].index.save)
                segments[n].size, segments[n].crc = file_crc(path)
                segments[n].path = path
            entries = [[s.path.name, s.size, s.crc] for s in segments if s.path is not None]
            if len(entries) != len(segments) or scale is None:
                raise OSError("a segment was never saved")
            write_aside(manifest, lambda tmp: tmp.write_bytes(manifest_bytes(scale, entries)))
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
                    kept.update(name for name, _, _ in read_manifest(path, self.space, seq, plan.rows.ndim)[0])
                except Exception:
                    unknown = True
        for seq, path in saved_files(self.directory, self.space):
            if seq < plan.seq and path.name not in kept and not (unknown and ".usearch.json" not in path.name):
                with contextlib.suppress(OSError):
                    path.unlink()

    def fold_soon(self) -> None:
        """:meth:`fold` in a thread of its own, unless one is under way: what a search does when the changes
        are worth folding, so that no search waits for a fold. A daemon thread: a process that ends stops it
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


def _take_out(segments: list[Segment], removed: set[int], expansion_add: int) -> set[int]:
    """Remove the keys ``removed`` from the segments holding them, each replaced by a changed copy (searches
    may be walking the original); the places of the segments changed."""
    gone = np.fromiter(removed, dtype=np.uint64, count=len(removed))
    changed = set()
    for n, segment in enumerate(segments):
        held = segment.holding(gone)
        if len(held):
            segments[n] = segment.copied(expansion_add)
            segments[n].index.remove(held)
            changed.add(n)
    return changed


def _map_saved(segments: list[Segment]) -> None:
    """Once saved, read the segments from their files (memory-mapped) instead of holding them in memory, all
    but the last one, which takes the next additions."""
    for n, segment in enumerate(segments[:-1]):
        if segment.held and segment.path is not None:
            try:
                segments[n] = Segment.mapped(segment.path, segment.size, segment.crc)
            except Exception as exc:  # gone or changed meanwhile: the copy in memory stays in use
                logger.info("%s stays in memory (%s)", segment.path.name, exc)


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
