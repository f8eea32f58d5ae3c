"""Hashes and ids, in one place: the content hash, chunk ids, the record-chunk convention, a relation's
identity, vector ids and the ids of retrieved items.

Every id the index writes is derived from content, so the same text, name or relation always gets the same
id, whichever process or run wrote it. An import's (or ``add_records``') records are kept in a chunk
without text whose id is ``records-`` and a hash of the content: :func:`record_chunk_id` makes one,
:func:`is_record_chunk` and :data:`RECORD_CHUNK_LIKE` (for SQL) recognise them.

>>> chunk_id("Mara lives in Saltmere.")[:6], record_chunk_id("abc"), is_record_chunk(record_chunk_id("abc"))
('chunk-', 'records-abc', True)
>>> entity_vector_id("MARA") == entity_vector_id("MARA") != relation_vector_id(("MARA", "SALTMERE"))
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

__all__ = [
    "RECORD_CHUNK_LIKE",
    "chunk_id",
    "digest",
    "entity_vector_id",
    "is_record_chunk",
    "record_chunk_id",
    "relation_key",
    "relation_vector_id",
    "retrieved_item_id",
]

_RECORD_CHUNK_PREFIX = "records-"
RECORD_CHUNK_LIKE = f"{_RECORD_CHUNK_PREFIX}%"
"""The SQL ``LIKE`` pattern of record-chunk ids."""


def digest(*parts: str) -> str:
    """A short content hash of ``parts`` (the ids of chunks, documents, cache entries and vectors).

    Text is hashed as UTF-8; a lone surrogate (which UTF-8 cannot encode) is hashed as its UTF-8-style bytes
    (``surrogatepass``) instead of raising, so every string has an id and other text keeps the ids it had.

    >>> digest("Saltmere"), digest("Salt\\udc80mere") != digest("Salt\\ufffdmere")
    ('8a0b3f3bb2c90aedb21928648269390a', True)
    """
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def chunk_id(text: str) -> str:
    """Content id of a chunk: the same text always gets the same id."""
    return f"chunk-{digest(text)}"


def record_chunk_id(content: str) -> str:
    """The id of the chunk that holds the records of content hash ``content`` (it has no text)."""
    return f"{_RECORD_CHUNK_PREFIX}{content}"


def is_record_chunk(cid: str) -> bool:
    """Whether ``cid`` is a record chunk's id (see :func:`record_chunk_id`)."""
    return cid.startswith(_RECORD_CHUNK_PREFIX)


def entity_vector_id(name: str) -> str:
    """The vector id of the entity named ``name``."""
    return f"ent-{digest(name)}"


def relation_key(source: str, target: str, *, directed: bool = False) -> tuple[str, str]:
    """The identity of a relation: the pair itself if directed, else the sorted pair.

    >>> relation_key("B", "A"), relation_key("B", "A", directed=True)
    (('A', 'B'), ('B', 'A'))
    """
    return (source, target) if directed or source <= target else (target, source)


def relation_vector_id(key: tuple[str, str]) -> str:
    """The vector id of the relation whose :func:`relation_key` is ``key``."""
    return f"rel-{digest(*key)}"


def retrieved_item_id(kind: str, parts: Iterable[str]) -> str:
    """The id of a retrieved item of ``kind`` (a path, a relation...) made of ``parts``."""
    return f"{kind}-{digest(*parts)[:24]}"
