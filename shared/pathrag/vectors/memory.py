"""The embedded vector index: exact cosine search with numpy, in memory, saved as one JSON file.

>>> from pathrag import HashingEmbedder
>>> index = InMemoryVectorIndex(HashingEmbedder())
>>> index.upsert([VectorItem(id="e1", text="harbour pilot"), VectorItem(id="e2", text="sea wall")])
>>> index.query("the harbour pilot", k=1)[0].id
'e1'
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from typing_extensions import override

from ..files import atomic_write_text
from .base import Embedder, VectorHit, VectorIndex, VectorItem, check_finite, checked_vectors

__all__ = ["InMemoryVectorIndex"]


class InMemoryVectorIndex(VectorIndex):
    """Exact cosine search over embedded texts, persisted to one JSON file (vectors base64 float32)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._items: dict[str, VectorItem] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._matrix: tuple[list[str], np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items

    def _store(self, items: Sequence[VectorItem], vectors: Sequence[Sequence[float]]) -> None:
        vectors = checked_vectors(self.embedder, vectors, len(items))
        arrays = [_unit(np.asarray(vector, dtype=np.float32)) for vector in vectors]
        held = next(iter(self._vectors.values()), None)
        sizes = {len(a) for a in arrays} | ({len(held)} if held is not None else set())
        if len(sizes) > 1:  # refused before any write: one bad batch would break every later query
            raise ValueError(
                f"vectors of different dimensions {sorted(sizes)}: use the embedder the index was built with"
            )
        if arrays:
            check_finite(items, np.stack(arrays))
        for item, array in zip(items, arrays, strict=True):
            self._items[item.id] = item
            self._vectors[item.id] = array
        self._matrix = None

    def changed(self, items: Sequence[VectorItem]) -> list[VectorItem]:
        """Items whose text is new or different: the only ones worth paying to embed."""
        fresh = {item.id: item for item in items}  # the last of duplicate ids wins
        return [item for item in fresh.values() if self._items.get(item.id) != item]

    @override
    def upsert(self, items: Sequence[VectorItem]) -> None:
        changed = self.changed(items)
        if changed:
            self._store(changed, self.embedder.embed([item.text for item in changed]))

    def upsert_vectors(self, items: Sequence[VectorItem], vectors: Sequence[Sequence[float]]) -> None:
        """Store items with vectors computed elsewhere (e.g. reused from an imported index)."""
        self._store(items, vectors)

    @override
    async def aupsert(self, items: Sequence[VectorItem]) -> None:
        changed = self.changed(items)
        if changed:
            self._store(changed, await self.embedder.aembed([item.text for item in changed]))

    def _search(self, vector: Sequence[float], k: int) -> list[VectorHit]:
        if k <= 0 or not self._items:
            return []
        if self._matrix is None:
            ids = list(self._vectors)
            self._matrix = (ids, np.stack([self._vectors[i] for i in ids]))
        ids, matrix = self._matrix
        scores = matrix @ _unit(np.asarray(vector, dtype=np.float32))
        k = min(k, len(ids))
        top = np.argpartition(-scores, k - 1)[:k]
        # ties broken by id so results never depend on insertion order
        ranked = sorted(top.tolist(), key=lambda i: (-float(scores[i]), ids[i]))
        return [
            VectorHit(ids[i], float(scores[i]), self._items[ids[i]].metadata, self._items[ids[i]].text) for i in ranked
        ]

    @override
    def query(self, text: str, k: int) -> list[VectorHit]:
        return self._search(checked_vectors(self.embedder, self.embedder.embed([text]), 1)[0], k)

    @override
    async def aquery(self, text: str, k: int) -> list[VectorHit]:
        return self._search(checked_vectors(self.embedder, await self.embedder.aembed([text]), 1)[0], k)

    @override
    def delete(self, ids: Iterable[str]) -> None:
        for item_id in ids:
            if self._items.pop(item_id, None) is not None:
                del self._vectors[item_id]
                self._matrix = None

    @override
    async def adelete(self, ids: Iterable[str]) -> None:
        self.delete(ids)

    def get(self, item_id: str) -> VectorItem | None:
        """The item stored under ``item_id``, or ``None``."""
        return self._items.get(item_id)

    def ids(self) -> list[str]:
        """Every item id, sorted."""
        return sorted(self._items)

    def entries(self, ids: Iterable[str]) -> dict[str, tuple[VectorItem, np.ndarray] | None]:
        """What is stored under each of ``ids`` (``None``: nothing), for :meth:`restore` to put back."""
        return {i: (item, self._vectors[i]) if (item := self._items.get(i)) is not None else None for i in ids}

    def restore(self, entries: Mapping[str, tuple[VectorItem, np.ndarray] | None]) -> None:
        """Put back, exactly, what :meth:`entries` noted (an undo: other ids are left alone)."""
        for i, entry in entries.items():
            if entry is None:
                self._items.pop(i, None)
                self._vectors.pop(i, None)
            else:
                self._items[i], self._vectors[i] = entry
        self._matrix = None

    def rows(self) -> list[tuple[str, str, Mapping[str, Any], bytes]]:
        """``(id, text, metadata, float32 vector bytes)`` of every item: what a store keeps."""
        return [
            (i, item.text, dict(item.metadata), self._vectors[i].astype("<f4").tobytes())
            for i, item in self._items.items()
        ]

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index (texts, metadata and vectors) to ``path`` atomically."""
        rows = [
            {
                "id": i,
                "text": item.text,
                "metadata": dict(item.metadata),
                "vector": base64.b64encode(self._vectors[i].astype("<f4").tobytes()).decode("ascii"),
            }
            for i, item in self._items.items()
        ]
        atomic_write_text(path, json.dumps({"format": "pathrag-vectors", "version": 1, "items": rows}))

    def load(self, path: str | os.PathLike[str]) -> InMemoryVectorIndex:
        """Replace the contents with those saved at ``path`` (a missing file leaves the index empty)."""
        self._items.clear()
        self._vectors.clear()
        self._matrix = None
        path = Path(path)
        if not path.exists():
            return self
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            for row in data["items"]:
                self._items[row["id"]] = VectorItem(id=row["id"], text=row["text"], metadata=row["metadata"])
                self._vectors[row["id"]] = np.frombuffer(base64.b64decode(row["vector"]), dtype="<f4").copy()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"cannot read vector index {path}: {exc}") from exc
        return self


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector
