"""The vectors on the store: :class:`SQLiteVectorIndex`, cosine search over one space of the ``vectors``
table (entities, relations or chunks), through a search index kept in step with it (:mod:`.ann`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from typing_extensions import override

from ..errors import StoreError
from ..vectors.base import Embedder, VectorHit, VectorIndex, VectorItem, check_finite, checked_vectors
from .ann import SpaceIndex, check_saved, saved_indexes, trim_key
from .codec import IN_JSON, dumps
from .schema import READ_TEXT, VECTOR_COLUMNS, WRITE_VECTORS, WRITE_VECTORS_V1
from .store import SQLiteStore

__all__ = ["SQLiteVectorIndex"]


def _units(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """``vectors`` (of one length) as rows of unit length (a zero vector stays zero), float32."""
    matrix = np.asarray(vectors, dtype="<f4")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    units: np.ndarray = matrix / np.where(norms > 0, norms, np.float32(1))
    return units


_LOG_KEEP = 10_000  # vector-log entries kept for processes whose index is behind, when none is saved


class SQLiteVectorIndex(VectorIndex):
    """Cosine search over one space of the ``vectors`` table (float32 BLOBs, unit length).

    A space of fewer than ``exact_limit`` float32 numbers (:data:`~pathrag.sqlite.ann.EXACT_LIMIT`, 64 MB,
    by default) is searched exactly from
    one in-memory matrix; a bigger one through an HNSW index saved beside the store (see
    :mod:`pathrag.sqlite.ann`). Either is brought up to date from the vector log, so a read after a
    write costs about what any read costs. Hits are scored exactly, with ties broken by id.
    """

    def __init__(self, store: SQLiteStore, space: str, embedder: Embedder, *, exact_limit: int | None = None) -> None:
        self.store = store
        self.space = space
        self.embedder = embedder
        self._index = SpaceIndex(store, space, exact_limit=exact_limit)

    def __len__(self) -> int:
        return int(self.store.read("SELECT COUNT(*) FROM vectors WHERE space = ?", (self.space,))[0][0])

    def __contains__(self, item_id: object) -> bool:
        return bool(self.store.read("SELECT 1 FROM vectors WHERE space = ? AND id = ?", (self.space, item_id)))

    def ids(self) -> list[str]:
        """Every item id of the space, sorted."""
        return [row[0] for row in self.store.read("SELECT id FROM vectors WHERE space = ? ORDER BY id", (self.space,))]

    def get(self, item_id: str) -> VectorItem | None:
        """The item stored under ``item_id`` in this space, or ``None``."""
        return self.get_many([item_id]).get(item_id)

    def rows(self) -> list[tuple[str, str, dict[str, Any], bytes]]:
        """``(id, text, metadata, float32 vector bytes)`` of every item, as
        :meth:`pathrag.InMemoryVectorIndex.rows` gives them."""
        return [
            (i, text, json.loads(metadata), blob)
            for i, text, metadata, blob in self.store.read(
                f"SELECT v.id, {READ_TEXT}, v.metadata, v.vector FROM vectors v WHERE v.space = ? ORDER BY v.rowid",
                (self.space,),
            )
        ]

    def get_many(self, ids: Iterable[str]) -> dict[str, VectorItem]:
        """The items stored under ``ids`` in this space (those it holds), in one read."""
        rows = self.store.read(
            f"SELECT v.id, {READ_TEXT}, v.metadata FROM vectors v WHERE v.space = ? AND v.id IN {IN_JSON}",
            (self.space, dumps(list(ids))),
        )
        return {i: VectorItem(i, text, json.loads(metadata)) for i, text, metadata in rows}

    def changed(self, items: Sequence[VectorItem]) -> list[VectorItem]:
        """Items whose text or metadata is new or different: the only ones worth paying to embed."""
        fresh = {item.id: item for item in items}  # the last of duplicate ids wins
        if not fresh:
            return []
        rows = self.store.wread(
            f"SELECT v.id, {READ_TEXT}, v.metadata FROM vectors v WHERE v.space = ? AND v.id IN {IN_JSON}",
            (self.space, dumps(list(fresh))),
        )
        same = {
            i for i, text, metadata in rows if fresh[i].text == text and dict(fresh[i].metadata) == json.loads(metadata)
        }
        return [item for i, item in fresh.items() if i not in same]

    def _store(self, items: Sequence[VectorItem], vectors: Sequence[Sequence[float]]) -> None:
        vectors = checked_vectors(self.embedder, vectors, len(items))
        if not items:
            return
        found = {len(v) for v in vectors}
        units = None
        if len(found) == 1:  # normalised 4,096 rows at a time into one matrix (no second copy of them all)
            units = np.empty((len(vectors), len(vectors[0])), dtype="<f4")
            for at in range(0, len(vectors), 4096):
                units[at : at + 4096] = _units(vectors[at : at + 4096])
        with self.store.transaction():
            self.store.check_dimension(len(vectors[0]), found)  # refuses several dimensions
            assert units is not None
            check_finite(items, units)
            handing = self._index.written is not None  # see keep_written
            before = self.store.wread("SELECT COALESCE(MAX(seq), 0) FROM vector_log")[0][0] if handing else 0
            self.store.insert_rows(
                WRITE_VECTORS if self.store.format_version >= 2 else WRITE_VECTORS_V1,
                VECTOR_COLUMNS,
                (  # made as they are written: the bytes of a bulk write's rows are never all held
                    (self.space, item.id, item.text, dumps(dict(item.metadata)), row.tobytes())
                    for item, row in zip(items, units, strict=True)
                ),
            )
            if handing:
                self._hand_over(before, units)
            self._trim_log()

    def _hand_over(self, before: int, units: np.ndarray) -> None:
        """Inside the write of ``units``: once it commits, give them to this process's search index by the
        log entries that added them (one per row, in order: the log's insert trigger), which it then need
        not read back."""
        ((added,),) = self.store.wread(
            "SELECT json_group_array(seq) FROM vector_log WHERE space = ? AND seq > ? AND added = 1",
            (self.space, before),
        )
        seqs = np.sort(np.array(json.loads(added), dtype=np.int64))
        if len(seqs) == len(units):
            self.store.after_commit(lambda: self._index.take_written(seqs, units))

    @override
    def upsert(self, items: Sequence[VectorItem]) -> None:
        changed = self.changed(items)
        if changed:
            self._store(changed, self.embedder.embed([item.text for item in changed]))

    @override
    async def aupsert(self, items: Sequence[VectorItem]) -> None:
        changed = self.changed(items)
        if changed:
            self._store(changed, await self.embedder.aembed([item.text for item in changed]))

    def upsert_vectors(self, items: Sequence[VectorItem], vectors: Sequence[Sequence[float]]) -> None:
        """Store items with vectors computed elsewhere (e.g. reused from an imported index)."""
        self._store(items, vectors)

    @override
    def delete(self, ids: Iterable[str]) -> None:
        ids = dumps(list(ids))
        if ids != "[]":
            with self.store.transaction():
                self.store.execute(f"DELETE FROM vectors WHERE space = ? AND id IN {IN_JSON}", (self.space, ids))
                self._trim_log()

    @override
    async def adelete(self, ids: Iterable[str]) -> None:
        self.delete(ids)

    def _trim_log(self) -> None:
        """Inside a write: drop the log entries no process needs any more. With a saved index, those it
        already holds; without one, all but the last few thousand (a process further behind reloads);
        never those after this process's own index, which goes on from there, nor any while that index is
        yet to load and keeps this process's writes (it then replays the whole log, see
        :meth:`~pathrag.sqlite.ann.SpaceIndex.keep_written`)."""
        ((low, high),) = self.store.wread("SELECT MIN(seq), MAX(seq) FROM vector_log WHERE space = ?", (self.space,))
        if low is None or high - low < 2 * _LOG_KEEP:
            return
        saved = saved_indexes(self.store.directory, self.space)
        bound = saved[0][0] if saved else high - _LOG_KEEP
        if self._index.seq >= 0:  # this process's own index goes on from there (its fold may be running)
            bound = min(bound, self._index.seq)
        elif self._index.written is not None:  # it loads after this commit, from the whole log and memory
            return
        if bound >= low:
            self.store.execute("DELETE FROM vector_log WHERE space = ? AND seq <= ?", (self.space, bound))
            self.store.set_meta({trim_key(self.space): bound})

    def _dimension(self) -> int | None:
        rows = self.store.read("SELECT value FROM meta WHERE key = 'dimension'")
        return int(rows[0][0]) if rows else None

    def keep_written(self) -> None:
        """Hand the vectors this process writes to its search index at each commit, instead of it reading
        them back at the next :meth:`catch_up` or query; for a writer that catches up after every commit
        (they are held until then).

        >>> import tempfile
        >>> from pathrag import HashingEmbedder
        >>> from pathrag.vectors.base import VectorItem
        >>> index = SQLiteVectorIndex(SQLiteStore(tempfile.mkdtemp()), "entities", HashingEmbedder(8))
        >>> index.keep_written()
        >>> index.upsert([VectorItem("a", "harbour pilot", {})]); index.catch_up()
        >>> [hit.id for hit in index.query("pilot", 1)]
        ['a']
        """
        self._index.keep_written()

    def catch_up(self) -> None:
        """Bring this process's search index up to the last commit now, instead of at the next query, and
        fold the changes into the saved files when they are worth it (outside any read transaction: a fold
        can take a while, and writes go on).

        A writing store calls it after each commit, in a thread of its own, so that its next read, and a bulk
        import's first query elsewhere, find the index (and, for a big space, its saved files) ready.

        >>> import tempfile
        >>> from pathrag import HashingEmbedder
        >>> from pathrag.vectors.base import VectorItem
        >>> index = SQLiteVectorIndex(SQLiteStore(tempfile.mkdtemp()), "entities", HashingEmbedder(8))
        >>> index.upsert([VectorItem("a", "harbour pilot", {})]); index.catch_up()
        >>> [hit.id for hit in index.query("pilot", 1)]
        ['a']
        """
        with self.store.snapshot():
            dimension = self._dimension()
            if dimension is None:
                return
            self._index.catch_up(dimension)
        self._index.wait_folded()  # one a search started: then what it left
        self._index.fold()

    def check_files(self) -> list[str]:
        """What is wrong with this space's saved search files (every byte of them is read): one line per
        damaged manifest, with what happens to it (see :func:`~pathrag.sqlite.ann.check_saved`)."""
        dimension = self._dimension()
        return [] if dimension is None else check_saved(self.store.directory, self.space, dimension)

    def stop_folding(self) -> None:
        """Stop a fold a search started in the background, and wait for it (see
        :meth:`~pathrag.sqlite.ann.SpaceIndex.stop_folding`); :meth:`catch_up` folds to the end instead."""
        self._index.stop_folding()

    def _search(self, vector: Sequence[float], k: int) -> list[VectorHit]:
        query = _units([vector])[0]
        with self.store.snapshot():  # the candidates and the hits' rows from one committed state
            if k <= 0:
                return []
            dimension = self._dimension()
            if dimension is None:
                return []
            if dimension != query.shape[0]:
                raise StoreError(
                    f"the embedder gives {query.shape[0]}-dimensional vectors but {self.store.path} "
                    f"holds {dimension}-dimensional ones: open the store with the embedder it was built with"
                )
            keys = self._index.candidates(query, k)
            rows = self.store.read(
                f"SELECT v.id, v.metadata, {READ_TEXT}, v.vector FROM vectors v "
                f"WHERE +v.space = ? AND v.rowid IN {IN_JSON}",
                (self.space, dumps(keys)),
            )
        scored = [(float(np.frombuffer(blob, dtype="<f4") @ query), i, md, text) for i, md, text, blob in rows]
        scored.sort(key=lambda hit: (-hit[0], hit[1]))
        return [VectorHit(item_id, score, json.loads(metadata), text) for score, item_id, metadata, text in scored[:k]]

    @override
    def query(self, text: str, k: int) -> list[VectorHit]:
        return self._search(checked_vectors(self.embedder, self.embedder.embed([text]), 1)[0], k)

    @override
    async def aquery(self, text: str, k: int) -> list[VectorHit]:
        return self._search(checked_vectors(self.embedder, await self.embedder.aembed([text]), 1)[0], k)

    def __repr__(self) -> str:
        return f"SQLiteVectorIndex({self.store.path}, {self.space!r})"
