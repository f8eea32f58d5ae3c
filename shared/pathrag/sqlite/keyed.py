"""Vectors under integer keys searched exactly, and the int8 copies the saved HNSW graphs hold of them.

:class:`KeyedMatrix` is what :mod:`pathrag.sqlite.ann` searches a small space with, and the rows held apart
from a big space's saved graphs; :func:`int8_copies` rounds unit vectors the way those graphs store them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["INT8_STEPS", "KeyedMatrix", "int8_copies", "int8_scale"]

INT8_STEPS = 8
"""How finely a new space's graphs hold their int8 copies: a component of a unit vector's typical size,
1/sqrt(d), becomes 8 steps, so that one 16 times as big still fits in +-127 (see :func:`int8_copies`).
usearch's own cast multiplies by 127 and truncates: 1/sqrt(d) became 6 steps at 384 dimensions and 3 at
1,536, too coarse to rank near-tied neighbours (benchmarks/README.md has the recall measured either way)."""


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
        copies of growing step by step."""
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
