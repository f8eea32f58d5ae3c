"""The store's tables: the file name, the format version, the schema, and the SQL of a vector row.

The schema is created (``IF NOT EXISTS``) on every writer connection; :data:`FORMAT_VERSION` says what a
store written by this code holds, and :class:`~pathrag.sqlite.store.SQLiteStore` upgrades an older one.
The vector-row statements are shared by the store's upgrade, the vector index and whole-index copies.
"""

from __future__ import annotations

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "READ_TEXT",
    "SCHEMA",
    "SCHEMA_VECTORS",
    "STORED_TEXT",
    "STORE_FILE",
    "WRITE_VECTOR",
    "WRITE_VECTOR_V1",
]

STORE_FILE = "pathrag.sqlite"
FORMAT = "pathrag-store"
FORMAT_VERSION = 2  # 2: a chunk's vector keeps no copy of the chunk's text

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, hash TEXT NOT NULL, metadata TEXT NOT NULL, failed TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS doc_chunks (
    doc_id TEXT NOT NULL, position INTEGER NOT NULL, chunk_id TEXT NOT NULL, PRIMARY KEY (doc_id, position));
CREATE INDEX IF NOT EXISTS doc_chunks_by_chunk ON doc_chunks (chunk_id);
CREATE TABLE IF NOT EXISTS chunks (id TEXT PRIMARY KEY, text TEXT NOT NULL, records BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS entities (
    name TEXT PRIMARY KEY, type TEXT NOT NULL, description TEXT NOT NULL, source_ids TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS relations (
    source TEXT NOT NULL, target TEXT NOT NULL, description TEXT NOT NULL, keywords TEXT NOT NULL,
    weight REAL NOT NULL, source_ids TEXT NOT NULL, PRIMARY KEY (source, target));
CREATE INDEX IF NOT EXISTS relations_by_target ON relations (target, source);
CREATE TABLE IF NOT EXISTS vectors (
    space TEXT NOT NULL, id TEXT NOT NULL, text TEXT, metadata TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (space, id));
CREATE TABLE IF NOT EXISTS mentions (
    name TEXT NOT NULL, chunk_id TEXT NOT NULL, PRIMARY KEY (name, chunk_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_by_chunk ON mentions (chunk_id);
CREATE TABLE IF NOT EXISTS llm_cache (key TEXT PRIMARY KEY, answer TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS summaries (key TEXT PRIMARY KEY, text TEXT NOT NULL);
"""

SCHEMA_VECTORS = next(part.strip() + ";" for part in SCHEMA.split(";") if "TABLE IF NOT EXISTS vectors" in part)
# The text a vector row keeps: none when a chunk with the same id holds it (chunk ids hash their text),
# and, reading, the row's own text or else that chunk's. Both expect the vector row as ``v``.
STORED_TEXT = "CASE WHEN v.text = (SELECT c.text FROM chunks c WHERE c.id = v.id) THEN NULL ELSE v.text END"
WRITE_VECTOR = (
    f"INSERT OR REPLACE INTO vectors SELECT v.space, v.id, {STORED_TEXT}, v.metadata, v.vector "
    "FROM (SELECT ? AS space, ? AS id, ? AS text, ? AS metadata, ? AS vector) v"
)
WRITE_VECTOR_V1 = "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)"  # format 1: text NOT NULL
READ_TEXT = "COALESCE(v.text, (SELECT c.text FROM chunks c WHERE c.id = v.id), '')"
