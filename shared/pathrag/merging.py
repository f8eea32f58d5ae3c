"""How records extracted from many chunks become one entity or one relation.

Merging is a pure function of the records, taken in chunk order, so rebuilding an entity from the
chunks that remain after a delete gives exactly what inserting those chunks alone would have given.

* Entity type: the most frequent non-empty type (ties: the first seen).
* Descriptions: stripped, de-duplicated, joined with a space in order of first appearance
  (summarised by the LLM above a token threshold, in :mod:`pathrag.indexing`).
* Relation weight: the sum of the records' strengths; keywords and source chunk ids: the union.
* Relation identity: undirected by default, so A→B and B→A merge and keep the first-seen direction.

>>> from pathrag import Entity
>>> merge_entity("ALICE", [Entity(name="ALICE", type="person", description="A pilot.", source_ids=["c1"]),
...                        Entity(name="ALICE", type="person", description="A pilot.", source_ids=["c2"])])
Entity(name='ALICE', type='person', description='A pilot.', source_ids=('c1', 'c2'))
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from .models import Entity, Relation

__all__ = ["join_descriptions", "merge_entity", "merge_relation", "relation_key"]


def relation_key(source: str, target: str, *, directed: bool = False) -> tuple[str, str]:
    """The identity of a relation: the pair itself if directed, else the sorted pair."""
    return (source, target) if directed or source <= target else (target, source)


def join_descriptions(descriptions: Iterable[str]) -> str:
    """Distinct non-empty descriptions, in first-seen order, joined with a space."""
    return " ".join(dict.fromkeys(d.strip() for d in descriptions if d and d.strip()))


def _union(groups: Iterable[Iterable[str]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for group in groups for item in group))


def merge_entity(name: str, records: Sequence[Entity], *, extra_source_ids: Iterable[str] = ()) -> Entity:
    """One entity from all its records (chunk order); ``records`` may be empty for a bare endpoint.

    ``extra_source_ids`` are chunks that mention the entity only as a relation endpoint.
    """
    types = Counter(r.type for r in records if r.type)
    first_seen = {t: i for i, t in reversed(list(enumerate(r.type for r in records)))}
    entity_type = min(types, key=lambda t: (-types[t], first_seen[t])) if types else ""
    return Entity(
        name=name,
        type=entity_type,
        description=join_descriptions(r.description for r in records),
        source_ids=_union([*(r.source_ids for r in records), extra_source_ids]),
    )


def merge_relation(records: Sequence[Relation]) -> Relation:
    """One relation from its records (chunk order); the first record's direction is kept."""
    if not records:
        raise ValueError("merge_relation needs at least one record")
    first = records[0]
    return Relation(
        source=first.source,
        target=first.target,
        description=join_descriptions(r.description for r in records),
        keywords=_union(r.keywords for r in records),
        weight=sum(r.weight for r in records),
        source_ids=_union(r.source_ids for r in records),
    )
