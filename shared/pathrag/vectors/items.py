"""What the index embeds for each entity, relation and chunk, under which vector id (made by
:mod:`pathrag.ids`), and how items are put into a vector index (:func:`aput_vectors`, reusing given vectors).

The index and the importers write the same items, so an imported graph is searched exactly as an
extracted one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..ids import entity_vector_id, relation_key, relation_vector_id
from ..models import Entity, Relation
from .base import VectorIndex, VectorItem, vector_upserts

__all__ = ["VECTOR_BATCH", "aput_vectors", "chunk_metadata", "entity_vector_item", "relation_vector_item"]


def chunk_metadata(cid: str, entities: Iterable[str]) -> dict[str, Any]:
    """A chunk vector's metadata: its id and the entities extracted from it (retrieval starts the flow
    from the best passage's entities)."""
    return {"chunk_id": cid, "entities": sorted(set(entities))}


def entity_vector_item(entity: Entity) -> VectorItem:
    """How an entity is embedded: its name and description."""
    return VectorItem(
        entity_vector_id(entity.name), f"{entity.name}\n{entity.description}".strip(), {"name": entity.name}
    )


def relation_vector_item(relation: Relation, *, directed: bool = False) -> VectorItem:
    """How a relation is embedded: keywords, endpoints and description."""
    text = f"{', '.join(relation.keywords)}\n{relation.source}\n{relation.target}\n{relation.description}"
    return VectorItem(
        relation_vector_id(relation_key(relation.source, relation.target, directed=directed)),
        text.strip(),
        {"source": relation.source, "target": relation.target},
    )


VECTOR_BATCH = 256
"""Items per vector upsert: keeps each embedding request a sensible size."""


async def aput_vectors(
    index: VectorIndex,
    items: Sequence[VectorItem],
    vectors: Mapping[str, Sequence[float] | np.ndarray] | None = None,
) -> int:
    """Upsert ``items``: those with a vector in ``vectors`` stored as given (no embedding), the rest
    embedded, :data:`VECTOR_BATCH` at a time. Returns how many reused a vector.

    >>> import asyncio
    >>> from pathrag import HashingEmbedder, InMemoryVectorIndex
    >>> index = InMemoryVectorIndex(HashingEmbedder(8))
    >>> asyncio.run(aput_vectors(index, [VectorItem("a", "x"), VectorItem("b", "y")], {"a": [1.0] * 8}))
    1

    Raises:
        TypeError: ``vectors`` for an index without ``upsert_vectors``.
    """
    vectors = vectors or {}
    known = [item for item in items if item.id in vectors]
    fresh = [item for item in items if item.id not in vectors]
    upserts = vector_upserts(index, "reusing vectors") if known else None
    for start in range(0, len(known), VECTOR_BATCH):
        batch = known[start : start + VECTOR_BATCH]
        assert upserts is not None  # checked above: there are vectors to reuse
        upserts.upsert_vectors(batch, [list(map(float, vectors[item.id])) for item in batch])
    for start in range(0, len(fresh), VECTOR_BATCH):
        await index.aupsert(fresh[start : start + VECTOR_BATCH])
    return len(known)
