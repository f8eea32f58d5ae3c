"""How records extracted from many chunks become one entity or one relation.

Merging is a pure function of the records, taken in chunk order, so rebuilding an entity from the
chunks that remain after a delete gives exactly what inserting those chunks alone would have given.

* Entity type: the most frequent non-empty type (ties: the first seen).
* Descriptions: stripped, de-duplicated, joined with a space in order of first appearance
  (summarised by the LLM above a token threshold, in :mod:`pathrag.index.rebuild`).
* Relation weight: the sum of the records' strengths; keywords and source chunk ids: the union.
* Relation identity: undirected by default, so A→B and B→A merge and keep the first-seen direction.
* An entity named only as a relation end still exists; the chunks naming it that way are among its sources.

:func:`merge_records` applies all of it to a set of records: the index's rebuild, the importers and the
LlamaIndex extractor all merge through it.

>>> from pathrag import Entity
>>> merge_entity("ALICE", [Entity(name="ALICE", type="person", description="A pilot.", source_ids=["c1"]),
...                        Entity(name="ALICE", type="person", description="A pilot.", source_ids=["c2"])])
Entity(name='ALICE', type='person', description='A pilot.', source_ids=('c1', 'c2'))
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ..ids import relation_key
from ..models import Entity, Relation

__all__ = ["join_descriptions", "merge_entity", "merge_records", "merge_relation", "relation_key"]


def join_descriptions(descriptions: Iterable[str]) -> str:
    """Distinct non-empty descriptions, in first-seen order, joined with a space."""
    return " ".join(dict.fromkeys(d.strip() for d in descriptions if d and d.strip()))


def _union(groups: Iterable[Iterable[str]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for group in groups for item in group))


def _merges_to_itself(record: Entity | Relation) -> bool:
    """Whether merging ``record`` alone gives it back: its strings are clean already (the models strip and
    de-duplicate ids and keywords; the description is stripped by the merge)."""
    return record.description == record.description.strip()


def merge_entity(name: str, records: Sequence[Entity], *, extra_source_ids: Iterable[str] = ()) -> Entity:
    """One entity from all its records (chunk order); ``records`` may be empty for a bare endpoint.

    ``extra_source_ids`` are chunks that mention the entity only as a relation endpoint.
    """
    extra_source_ids = tuple(extra_source_ids)
    if len(records) == 1 and not extra_source_ids and _merges_to_itself(records[0]) and records[0].name == name:
        return records[0]  # what the merge below would build again (a bulk import merges 10⁵ such records)
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
    if len(records) == 1 and _merges_to_itself(first) and first.weight != 0:  # a sum would turn -0.0 into 0.0
        return first
    return Relation(
        source=first.source,
        target=first.target,
        description=join_descriptions(r.description for r in records),
        keywords=_union(r.keywords for r in records),
        weight=sum(r.weight for r in records),
        source_ids=_union(r.source_ids for r in records),
    )


def merge_records(
    entities: Iterable[Entity],
    relations: Iterable[Relation],
    *,
    directed: bool = False,
    endpoint_sources: Mapping[str, Iterable[str]] | None = None,
) -> tuple[list[Entity], list[Relation]]:
    """Merged entities and relations from records in chunk order, each in order of first appearance.

    Entity records merge by name, relation records by :func:`relation_key`. Every relation end is an
    entity too, its sources including the source ids of the relation records naming it. A caller that
    knows more chunks naming an entity as a relation end than the ``relations`` it passes gives them
    as ``endpoint_sources`` (name -> chunk ids) instead: then the entities are exactly the names of the
    entity records and of ``endpoint_sources`` (an empty list there still makes the entity).

    >>> merge_records([Entity(name="A", type="person", source_ids=["c1"])],
    ...               [Relation(source="B", target="A", weight=2, source_ids=["c2"]),
    ...                Relation(source="A", target="B", weight=3, source_ids=["c3"])])[1]
    [Relation(source='B', target='A', description='', keywords=(), weight=5.0, source_ids=('c2', 'c3'))]
    """
    entity_records: dict[str, list[Entity]] = {}
    for entity in entities:
        entity_records.setdefault(entity.name, []).append(entity)
    relation_records: dict[tuple[str, str], list[Relation]] = {}
    derived: dict[str, list[str]] = {}
    for relation in relations:
        relation_records.setdefault(relation_key(relation.source, relation.target, directed=directed), []).append(
            relation
        )
        if endpoint_sources is None:
            for end in (relation.source, relation.target):
                derived.setdefault(end, []).extend(relation.source_ids)
    extra: Mapping[str, Iterable[str]] = derived if endpoint_sources is None else endpoint_sources
    merged_entities = [
        merge_entity(name, entity_records.get(name, []), extra_source_ids=extra.get(name, ()))
        for name in dict.fromkeys([*entity_records, *extra])
    ]
    return merged_entities, [merge_relation(records) for records in relation_records.values()]
