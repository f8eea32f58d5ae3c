"""A deterministic embedder for tests and demos: hashed words and character trigrams, no model.

Texts sharing words land close together; use a real embedding model for real retrieval.

>>> a, b = HashingEmbedder(64).embed(["harbour pilot", "the harbour pilot"])
>>> round(sum(x * y for x, y in zip(a, b)), 2) > 0.5
True
"""

from __future__ import annotations

import re
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from contextlib import suppress

import numpy as np
from typing_extensions import override

from .base import Embedder

__all__ = ["HashingEmbedder"]

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
