"""Whole-index copies: :func:`write_snapshot` writes a complete index (an in-memory one being saved, or
the old JSON format being migrated) into an empty store in one transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..models import Entity, Relation
from .codec import REL_COLUMNS, REL_FIELDS, dumps, entity_row, mention_rows, pack_records, pack_text, relation_row
from .schema import VECTOR_COLUMNS, WRITE_VECTORS, WRITE_VECTORS_V1
from .store import SQLiteStore

__all__ = ["write_snapshot"]


def write_snapshot(
    store: SQLiteStore,
    *,
    documents: Mapping[str, Mapping[str, Any]],
    chunks: Iterable[Mapping[str, Any]],
    summaries: Mapping[str, str],
    cache: Mapping[str, str],
    entities: Iterable[Entity] = (),
    relations: Iterable[Relation] = (),
    vectors: Mapping[str, Iterable[tuple[str, str, Mapping[str, Any], bytes]]] = {},
    meta: Mapping[str, Any] = {},
) -> None:
    """Write a whole index into ``store`` in one transaction (its tables are expected to be empty)."""
    with store.transaction():
        store.set_meta(meta)
        store.executemany(
            "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?)",
            [
                (doc_id, doc["hash"], dumps(doc.get("metadata", {})), dumps(doc.get("failed", [])))
                for doc_id, doc in documents.items()
            ],
        )
        store.executemany(
            "INSERT OR REPLACE INTO doc_chunks VALUES (?, ?, ?)",
            [
                (doc_id, position, cid)
                for doc_id, doc in documents.items()
                for position, cid in enumerate(doc["chunks"])
            ],
        )
        chunks = list(chunks)
        store.executemany(
            "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?)",
            [(c["id"], c.get("text", ""), pack_records(c.get("entities", []), c.get("relations", []))) for c in chunks],
        )
        store.executemany(
            "INSERT OR IGNORE INTO mentions VALUES (?, ?, ?)",
            [
                (name, c["id"], describes)
                for c in chunks
                for name, describes in mention_rows(c.get("text", ""), c.get("entities", []), c.get("relations", []))
            ],
        )
        store.executemany("INSERT OR REPLACE INTO summaries VALUES (?, ?)", list(summaries.items()))
        store.executemany(
            "INSERT OR REPLACE INTO llm_cache VALUES (?, ?)",
            [(key, pack_text(answer)) for key, answer in cache.items()],
        )
        store.executemany("INSERT OR IGNORE INTO entities VALUES (?, ?, ?, ?)", [entity_row(e) for e in entities])
        relations = list(relations)
        store.executemany(
            "INSERT OR IGNORE INTO entities VALUES (?, '', '', '[]')", [(n,) for r in relations for n in r.pair]
        )
        store.insert_rows(
            f"INSERT OR REPLACE INTO relations ({REL_COLUMNS}) SELECT {REL_COLUMNS} FROM {{rows}} ORDER BY rowid",
            REL_FIELDS,
            [relation_row(r) for r in relations],
        )
        dimension = None
        for space, rows in vectors.items():
            rows = list(rows)
            if rows:
                dimension = len(rows[0][3]) // 4
            write = WRITE_VECTORS if store.format_version >= 2 else WRITE_VECTORS_V1
            vector_rows = [(space, i, text, dumps(dict(md)), blob) for i, text, md, blob in rows]
            store.insert_rows(write, VECTOR_COLUMNS, vector_rows)
        if dimension is not None and "dimension" not in meta:
            store.set_meta({"dimension": dimension})
