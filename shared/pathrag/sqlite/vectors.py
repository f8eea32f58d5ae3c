"""The vectors on the store: :class:`SQLiteVectorIndex`, exact cosine search over one space of the
``vectors`` table (entities, relations or chunks), a numpy matrix per space reloaded after a change."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import numpy as np
from typing_extensions import override

from ..errors import StoreError
from ..vectors import Embedder, VectorHit, VectorIndex, VectorItem, checked_vectors
from .codec import IN_JSON, dumps
from .schema import READ_TEXT, WRITE_VECTOR, WRITE_VECTOR_V1
from .store import SQLiteStore

__all__ = ["SQLiteVectorIndex"]


_HIT_TEXT = "text" in getattr(VectorHit, "__dataclass_fields__", {})  # hits carry their item's text


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


class SQLiteVectorIndex(VectorIndex):
    """Exact cosine search over one space of the ``vectors`` table (float32 BLOBs, unit length).

    The first query loads the space's vectors into one numpy matrix (reloaded only after a commit);
    search is a matrix-vector product, exact, with ties broken by id.
    """

    def __init__(self, store: SQLiteStore, space: str, embedder: Embedder) -> None:
        self.store = store
        self.space = space
        self.embedder = embedder
        self._cache: tuple[int, list[str], np.ndarray] | None = None
        self._counter = f"vector_writes:{space}"

    def __len__(self) -> int:
        return int(self.store.read("SELECT COUNT(*) FROM vectors WHERE space = ?", (self.space,))[0][0])

    def __contains__(self, item_id: object) -> bool:
        return bool(self.store.read("SELECT 1 FROM vectors WHERE space = ? AND id = ?", (self.space, item_id)))

    def ids(self) -> list[str]:
        """Every item id of the space, sorted."""
        return [row[0] for row in self.store.read("SELECT id FROM vectors WHERE space = ? ORDER BY id", (self.space,))]

    def get(self, item_id: str) -> VectorItem | None:
        """The item stored under ``item_id`` in this space, or ``None``."""
        rows = self.store.read(
            f"SELECT {READ_TEXT}, v.metadata FROM vectors v WHERE v.space = ? AND v.id = ?", (self.space, item_id)
        )
        return VectorItem(item_id, rows[0][0], json.loads(rows[0][1])) if rows else None

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
        blobs = [_unit(np.asarray(v, dtype="<f4")).astype("<f4").tobytes() for v in vectors]
        with self.store.transaction():
            self.store.check_dimension(len(vectors[0]), {len(b) // 4 for b in blobs})
            self.store.executemany(
                WRITE_VECTOR if self.store.format_version >= 2 else WRITE_VECTOR_V1,
                [
                    (self.space, item.id, item.text, dumps(dict(item.metadata)), blob)
                    for item, blob in zip(items, blobs, strict=True)
                ],
            )
            self.store.bump(self._counter)  # readers' cached matrices are now stale

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
                self.store.bump(self._counter)

    @override
    async def adelete(self, ids: Iterable[str]) -> None:
        self.delete(ids)

    def _matrix(self) -> tuple[list[str], np.ndarray]:
        """The space's ids and unit vectors as one float32 matrix, reloaded only after a change.

        Call inside :meth:`SQLiteStore.snapshot`: the change counter and the rows are then one state."""
        version = self.store.counter(self._counter)
        if self._cache is None or self._cache[0] != version:
            self._cache = None  # let the old matrix go before the new one is built
            ((count,),) = self.store.read("SELECT COUNT(*) FROM vectors WHERE space = ?", (self.space,))
            first = self.store.read("SELECT length(vector) FROM vectors WHERE space = ? LIMIT 1", (self.space,))
            size = first[0][0] if first else 0
            # filled row by row from a cursor: no list of every blob, no second copy of the matrix
            matrix = np.empty((count, size // 4), dtype="<f4")
            ids: list[str] = []
            for row, (item_id, blob) in enumerate(
                self.store.stream("SELECT id, vector FROM vectors WHERE space = ?", (self.space,))
            ):
                if row == count:  # cannot happen inside a snapshot; guards a misuse outside one
                    break
                if len(blob) != size:
                    raise StoreError(
                        f"{self.store.path}: the {self.space} vectors have different dimensions "
                        f"({size // 4} and {len(blob) // 4}); rebuild the store"
                    )
                ids.append(item_id)
                matrix[row] = np.frombuffer(blob, dtype="<f4")
            self._cache = (version, ids, matrix[: len(ids)])
        return self._cache[1], self._cache[2]

    def _search(self, vector: Sequence[float], k: int) -> list[VectorHit]:
        with self.store.snapshot():  # the matrix and the hits' metadata from one committed state
            ids, matrix = self._matrix()
            if k <= 0 or not ids:
                return []
            query = _unit(np.asarray(vector, dtype=np.float32))
            if query.shape[0] != matrix.shape[1]:
                raise StoreError(
                    f"the embedder gives {query.shape[0]}-dimensional vectors but {self.store.path} "
                    f"holds {matrix.shape[1]}-dimensional ones: open the store with the embedder it "
                    "was built with"
                )
            scores = matrix @ query
            k = min(k, len(ids))
            top = np.argpartition(-scores, k - 1)[:k]
            ranked = sorted(top.tolist(), key=lambda i: (-float(scores[i]), ids[i]))
            found = {
                i: (md, text)
                for i, md, text in self.store.read(
                    f"SELECT v.id, v.metadata, {READ_TEXT} FROM vectors v WHERE v.space = ? AND v.id IN {IN_JSON}",
                    (self.space, dumps([ids[i] for i in ranked])),
                )
            }
        hits = []
        for i in ranked:
            metadata, text = found[ids[i]]
            extra = {"text": text} if _HIT_TEXT else {}
            hits.append(VectorHit(ids[i], float(scores[i]), json.loads(metadata), **extra))
        return hits

    @override
    def query(self, text: str, k: int) -> list[VectorHit]:
        return self._search(checked_vectors(self.embedder, self.embedder.embed([text]), 1)[0], k)

    @override
    async def aquery(self, text: str, k: int) -> list[VectorHit]:
        return self._search(checked_vectors(self.embedder, await self.embedder.aembed([text]), 1)[0], k)

    def __repr__(self) -> str:
        return f"SQLiteVectorIndex({self.store.path}, {self.space!r})"
