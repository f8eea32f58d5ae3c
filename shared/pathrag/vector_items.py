"""What the index embeds for each entity, relation and chunk, and under which vector id.

The index and the importers write the same items, so an imported graph is searched exactly as an
extracted one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .merging import relation_key
from .models import Entity, Relation
from .records import digest
from .vectors import VectorItem

__all__ = ["chunk_metadata", "entity_vector_id", "entity_vector_item", "relation_vector_id", "relation_vector_item"]


def entity_vector_id(name: str) -> str:
    """The vector id of the entity named ``name``."""
    return f"ent-{digest(name)}"


def relation_vector_id(key: tuple[str, str]) -> str:
    """The vector id of the relation whose :func:`~pathrag.merging.relation_key` is ``key``."""
    return f"rel-{digest(*key)}"


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
