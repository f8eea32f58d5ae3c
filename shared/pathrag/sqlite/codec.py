"""How values are written in the store's rows: compact JSON, zlib-packed records and answers, entity and
relation rows, and a JSON array as an SQL set.

>>> unpack_records(pack_records([{"name": "A"}], []))
{'entities': [{'name': 'A'}], 'relations': []}
>>> mention_rows("", [{"name": "B"}], [{"source": "A", "target": "B"}])
[('A', 0), ('B', 1)]
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..models import Entity, Relation

__all__ = [
    "IN_JSON",
    "REL_COLUMNS",
    "REL_FIELDS",
    "dumps",
    "entity_of",
    "entity_row",
    "mention_rows",
    "pack_records",
    "pack_text",
    "relation_of",
    "relation_row",
    "unpack_records",
    "unpack_text",
]


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # made once: a bulk write encodes ~10^6 values


def dumps(value: Any) -> str:
    """``value`` as compact JSON text (non-ASCII kept as it is): how lists and dicts sit in a column."""
    return _COMPACT.encode(value)


def pack_records(entities: list[dict[str, Any]], relations: list[dict[str, Any]]) -> bytes:
    """A chunk's extraction records as stored: zlib-compressed JSON (their field names repeat a lot)."""
    return zlib.compress(dumps({"entities": entities, "relations": relations}).encode("utf-8"), 6)


def mention_rows(
    text: str, entities: Iterable[Mapping[str, Any]], relations: Iterable[Mapping[str, Any]]
) -> list[tuple[str, int]]:
    """The ``mentions`` rows of a chunk, ``(name, describes)`` by name: ``describes`` is 0 where a chunk
    without text (an import's records) names the entity only as a relation end, which gives the entity
    its existence and nothing else (no description, no text to cite as its source); 1 otherwise."""
    described = {e["name"] for e in entities}
    ends = {n for r in relations for n in (r["source"], r["target"])}
    return [(name, int(bool(text) or name in described)) for name in sorted(described | ends)]


def pack_text(text: str) -> bytes:
    """A long text as stored where it is rarely read (LLM answers): zlib-compressed UTF-8."""
    return zlib.compress(text.encode("utf-8"), 6)


def unpack_text(value: bytes | str) -> str:
    """The text :func:`pack_text` stored (stores of format 1 hold plain text: returned as it is)."""
    return zlib.decompress(value).decode("utf-8") if isinstance(value, bytes) else value


def unpack_records(blob: bytes | str) -> dict[str, Any]:
    """``{"entities": [...], "relations": [...]}`` from :func:`pack_records`."""
    records: dict[str, Any] = json.loads(zlib.decompress(blob) if isinstance(blob, bytes) else blob)
    return records


IN_JSON = "(SELECT value FROM json_each(?))"  # a JSON array as an SQL set: no limit on the number of names


def entity_row(entity: Entity) -> tuple[str, str, str, str]:
    """The ``entities`` row of ``entity``."""
    return (entity.name, entity.type, entity.description, dumps(list(entity.source_ids)))


def entity_of(row: Sequence[Any]) -> Entity:
    """The entity an ``entities`` row holds."""
    return Entity(name=row[0], type=row[1], description=row[2], source_ids=json.loads(row[3]))


def relation_row(r: Relation) -> tuple[Any, ...]:
    """The ``relations`` row of ``r``, in the order of :data:`REL_COLUMNS`."""
    return (r.source, r.target, r.description, dumps(list(r.keywords)), r.weight, dumps(list(r.source_ids)))


def relation_of(row: Sequence[Any]) -> Relation:
    """The relation a ``relations`` row (:data:`REL_COLUMNS`) holds."""
    return Relation(
        source=row[0],
        target=row[1],
        description=row[2],
        keywords=json.loads(row[3]),
        weight=row[4],
        source_ids=json.loads(row[5]),
    )


REL_FIELDS = ("source", "target", "description", "keywords", "weight", "source_ids")
REL_COLUMNS = ", ".join(REL_FIELDS)
