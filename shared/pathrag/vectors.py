"""The boundary between the core and embeddings / vector search, plus an embedded vector index.

The adapters implement :class:`VectorIndex` with their framework's vector stores. The core ships
:class:`InMemoryVectorIndex` (exact cosine search with numpy; an index directory keeps its vectors in
the SQLite store instead, see :class:`pathrag.sqlite.SQLiteVectorIndex`) and
:class:`HashingEmbedder`, a deterministic bag-of-words embedder that needs no model (good for tests
and demos; use a real embedding model for real retrieval).

>>> index = InMemoryVectorIndex(HashingEmbedder())
>>> index.upsert([VectorItem(id="e1", text="harbour pilot"), VectorItem(id="e2", text="sea wall")])
>>> index.query("the harbour pilot", k=1)[0].id
'e1'
"""

from __future__ import annotations

import base64
import json
import os
import re
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from typing_extensions import override

from .files import atomic_write_text

__all__ = ["Embedder", "HashingEmbedder", "InMemoryVectorIndex", "VectorHit", "VectorIndex", "VectorItem"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors (one list of floats per text)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in the order of ``texts``."""
        ...

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed`."""
        ...


def checked_vectors(embedder: Any, vectors: Any, count: int) -> Sequence[Sequence[float]]:
    """``vectors``, after checking that ``embedder`` returned one per text (``count`` texts): else a
    :class:`ValueError` naming the embedder and both counts, never an ``IndexError`` further on.

    >>> checked_vectors(HashingEmbedder(), [], 1)
    Traceback (most recent call last):
    ...
    ValueError: the embedder HashingEmbedder returned 0 vectors for 1 text: an embedder returns one vector per text
    """
    found = len(vectors) if hasattr(vectors, "__len__") and not isinstance(vectors, (str, bytes, Mapping)) else None
    if found == count:
        return vectors  # type: ignore[no-any-return]
    name = getattr(embedder, "name", None)
    what = type(embedder).__name__ + (f" ({name})" if isinstance(name, str) and name else "")
    got = f"{found} vectors" if found is not None else f"a {type(vectors).__name__}"
    raise ValueError(
        f"the embedder {what} returned {got} for {count} text{'s' * (count != 1)}: an embedder returns one "
        "vector per text"
    )


def check_finite(items: Sequence[Any], matrix: np.ndarray) -> None:
    """Refuse vectors holding NaN or an infinity (a row per item, in ``matrix``): stored, they score NaN
    against every question and their items are never found, while the store looks whole."""
    bad = ~np.isfinite(matrix).all(axis=1) if matrix.size else np.zeros(0, dtype=bool)
    if bad.any():
        first = items[int(np.argmax(bad))]
        raise ValueError(
            f"{int(bad.sum())} of {len(items)} vectors hold NaN or infinite numbers (the first for "
            f"{getattr(first, 'id', first)!r}): nothing was stored; check the embedder or the vectors given"
        )


@dataclass(frozen=True)
class VectorItem:
    """One text to index, under a stable id, with metadata that search hits carry back."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorHit:
    """A search result: the item's id, its similarity to the query (higher is closer), metadata, and
    the item's text when the index keeps it (``""`` otherwise)."""

    id: str
    score: float
    metadata: Mapping[str, Any] = field(default_factory=dict)
    text: str = ""


@runtime_checkable
class VectorIndex(Protocol):
    """Upsert texts by id, find the ids nearest a query text (best first, with a similarity), delete."""

    def upsert(self, items: Sequence[VectorItem]) -> None:
        """Embed and store items, replacing any stored under the same id."""
        ...

    async def aupsert(self, items: Sequence[VectorItem]) -> None:
        """Async twin of :meth:`upsert`."""
        ...

    def query(self, text: str, k: int) -> list[VectorHit]:
        """The (at most) ``k`` items nearest ``text``, best first."""
        ...

    async def aquery(self, text: str, k: int) -> list[VectorHit]:
        """Async twin of :meth:`query`."""
        ...

    def delete(self, ids: Iterable[str]) -> None:
        """Delete items by id; unknown ids are ignored."""
        ...

    async def adelete(self, ids: Iterable[str]) -> None:
        """Async twin of :meth:`delete`."""
        ...


_WORD = re.compile(r"\w+")


class HashingEmbedder(Embedder):
    """Deterministic embeddings from hashed words and character trigrams; no model, no network.

    Texts sharing words land close together, which is enough for tests and the offline demo.

    Bounded on any input: a word (``\\w+``) longer than :attr:`MAX_WORD_CHARS` (256) characters is hashed by
    its first 256 (other words hash as they always did, so stored vectors stay valid), and the memo of hashed
    words keeps the :attr:`MEMO_WORDS` (32,768) most recently hashed words of at most :attr:`MEMO_MAX_WORD_CHARS`
    (32) characters (about 30 MB at most; longer words are hashed again each time).
    """

    MAX_WORD_CHARS = 256
    MEMO_WORDS = 32_768
    MEMO_MAX_WORD_CHARS = 32

    def __init__(self, dimensions: int = 256) -> None:
        if dimensions < 8:
            raise ValueError("dimensions must be at least 8")
        self.dimensions = dimensions
        self._words: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def _word(self, word: str) -> tuple[np.ndarray, np.ndarray]:
        """Slots and signs of a word and its character trigrams (memoised, oldest out first)."""
        found = self._words.get(word)
        if found is not None:
            return found  # first in, first out: a frequent word evicted is soon hashed and memoised again
        word = word[: self.MAX_WORD_CHARS]
        padded = f"#{word}#"
        features = [word, *(padded[i : i + 3] for i in range(len(padded) - 2))]
        codes = np.array([zlib.crc32(f.encode("utf-8", "surrogatepass")) for f in features], dtype=np.uint64)
        found = (codes % self.dimensions, np.where(codes >> 31, 1.0, -1.0))
        if len(word) <= self.MEMO_MAX_WORD_CHARS:
            self._words[word] = found
            while len(self._words) > self.MEMO_WORDS:
                with suppress(KeyError):  # emptied by another thread meanwhile
                    self._words.popitem(last=False)
        return found

    @override
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vector = np.zeros(self.dimensions)
            for word in _WORD.findall(text.lower()):
                slots, signs = self._word(word)
                np.add.at(vector, slots, signs)
            norm = np.linalg.norm(vector)
            out.append((vector / norm if norm else vector).tolist())
        return out

    @override
    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


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
