"""A deterministic, model-free LlamaIndex embedding over :class:`pathrag.HashingEmbedder` (demos and tests).

>>> embedding = HashingEmbedding(dimensions=64)
>>> len(embedding.get_text_embedding("harbour pilot"))
64
>>> embedding.get_query_embedding("pilot") == embedding.get_text_embedding("pilot")
True
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from typing_extensions import override

from pathrag import HashingEmbedder

__all__ = ["HashingEmbedding"]


class HashingEmbedding(BaseEmbedding):
    """Hashed words and character trigrams: texts sharing words land close. No network, no model."""

    dimensions: int = Field(default=256, ge=8, description="Vector size.")
    _embedder: HashingEmbedder = PrivateAttr()

    def __init__(self, dimensions: int = 256, **kwargs: Any) -> None:
        # pydantic's __init__ takes every field; mypy reads BaseEmbedding's own fields only
        super().__init__(dimensions=dimensions, model_name=f"pathrag-hashing-{dimensions}", **kwargs)  # type: ignore[call-arg]
        self._embedder = HashingEmbedder(dimensions)

    @classmethod
    @override
    def class_name(cls) -> str:
        return "PathRAGHashingEmbedding"

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._embedder.embed([query])[0]

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._embedder.embed([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._embedder.embed(texts)
