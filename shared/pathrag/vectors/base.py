"""The boundary between the core and embeddings / vector search: the :class:`Embedder` and
:class:`VectorIndex` protocols, the items they index and the hits they answer.

The adapters implement :class:`VectorIndex` with their framework's vector stores. The core ships
:class:`~pathrag.InMemoryVectorIndex` (:mod:`pathrag.vectors.memory`; an index directory keeps its vectors
in the SQLite store instead, see :class:`pathrag.sqlite.SQLiteVectorIndex`) and
:class:`~pathrag.HashingEmbedder` (:mod:`pathrag.vectors.hashing`).

>>> from pathrag import HashingEmbedder, InMemoryVectorIndex
>>> index = InMemoryVectorIndex(HashingEmbedder())
>>> index.upsert([VectorItem(id="e1", text="harbour pilot"), VectorItem(id="e2", text="sea wall")])
>>> index.query("the harbour pilot", k=1)[0].id
'e1'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "Embedder",
    "VectorHit",
    "VectorIndex",
    "VectorItem",
    "VectorUpserts",
    "check_finite",
    "checked_vectors",
    "vector_upserts",
]


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

    >>> from pathrag import HashingEmbedder
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


@runtime_checkable
class VectorUpserts(Protocol):
    """A vector index that can also store vectors as given (reused from elsewhere) instead of embedding
    their items: :class:`~pathrag.InMemoryVectorIndex` and the SQLite store's indexes are."""

    def upsert_vectors(self, items: Sequence[VectorItem], vectors: Sequence[Sequence[float]]) -> None:
        """Store ``items`` with ``vectors`` (one per item, in order), replacing any under the same ids."""
        ...


def vector_upserts(index: object, needed_by: str) -> VectorUpserts:
    """``index`` as a :class:`VectorUpserts`, checked once where reused vectors come in.

    >>> from pathrag import HashingEmbedder, InMemoryVectorIndex
    >>> index = InMemoryVectorIndex(HashingEmbedder(8))
    >>> vector_upserts(index, "reusing vectors") is index
    True

    Raises:
        TypeError: ``index`` has no ``upsert_vectors``; the message starts with ``needed_by``.
    """
    if not isinstance(index, VectorUpserts):
        raise TypeError(
            f"{needed_by} needs a vector index with upsert_vectors(items, vectors), not {type(index).__name__}"
        )
    return index
