"""The store's tables: the file name, the format version, the schema, and the SQL of a vector row.

The schema is created (``IF NOT EXISTS``) on every writer connection; :data:`FORMAT_VERSION` says what a
store written by this code holds, and :mod:`~pathrag.sqlite.migrations` upgrades an older one.

Two things are kept by triggers, so that every statement that writes the tables keeps them true (the
writer connections turn on ``recursive_triggers``, so that an ``INSERT OR REPLACE`` counts its delete):

* ``degrees``: each entity's number of distinct neighbours (``degree``, self-loops aside) and of outgoing
  relations (``out_degree``), read by the path search instead of being recounted on every hop;
* ``vector_log``: one row per vector row added or removed, in commit order, from which a process brings its
  in-memory search index up to date without reloading a space (see :mod:`~pathrag.sqlite.ann`).
The vector-row statements are shared by the store's upgrade, the vector index and whole-index copies.
"""

from __future__ import annotations

__all__ = [
    "COUNT_DEGREES",
    "DEGREES_COUNTED",
    "FORMAT",
    "FORMAT_VERSION",
    "READ_TEXT",
    "SCHEMA",
    "SCHEMA_VECTORS",
    "STORED_TEXT",
    "VECTOR_TRIGGERS",
    "STORE_FILE",
    "VECTOR_COLUMNS",
    "WRITE_VECTORS",
    "WRITE_VECTORS_V1",
]

STORE_FILE = "pathrag.sqlite"
FORMAT = "pathrag-store"
FORMAT_VERSION = 4  # 2: a chunk's vector keeps no copy of the chunk's text; 3: degrees and vector_log;
# 4: mentions.describes

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
    name TEXT NOT NULL, chunk_id TEXT NOT NULL, describes INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (name, chunk_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_by_chunk ON mentions (chunk_id);
CREATE TABLE IF NOT EXISTS llm_cache (key TEXT PRIMARY KEY, answer TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS summaries (key TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS degrees (
    name TEXT PRIMARY KEY, degree INTEGER NOT NULL, out_degree INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS relation_added AFTER INSERT ON relations WHEN new.source != new.target BEGIN
    INSERT INTO degrees VALUES (new.source, 0, 1) ON CONFLICT (name) DO UPDATE SET out_degree = out_degree + 1;
    INSERT INTO degrees SELECT n, 1, 0 FROM (SELECT new.source AS n UNION ALL SELECT new.target)
        WHERE NOT EXISTS (SELECT 1 FROM relations WHERE source = new.target AND target = new.source)
        ON CONFLICT (name) DO UPDATE SET degree = degree + 1;
END;
CREATE TRIGGER IF NOT EXISTS relation_removed AFTER DELETE ON relations WHEN old.source != old.target BEGIN
    UPDATE degrees SET out_degree = out_degree - 1 WHERE name = old.source;
    UPDATE degrees SET degree = degree - 1 WHERE name IN (old.source, old.target)
        AND NOT EXISTS (SELECT 1 FROM relations WHERE source = old.target AND target = old.source);
    DELETE FROM degrees WHERE name IN (old.source, old.target) AND degree = 0 AND out_degree = 0;
END;
CREATE TABLE IF NOT EXISTS vector_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, space TEXT NOT NULL, key INTEGER NOT NULL, added INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS vector_log_by_space ON vector_log (space, seq);
"""
# The vector log's triggers, apart: a step that replaces the vectors table makes them again.
VECTOR_TRIGGERS = (
    """
CREATE TRIGGER IF NOT EXISTS vector_added AFTER INSERT ON vectors BEGIN
    INSERT INTO vector_log (space, key, added) VALUES (new.space, new.rowid, 1);
END""",
    """
CREATE TRIGGER IF NOT EXISTS vector_removed AFTER DELETE ON vectors BEGIN
    INSERT INTO vector_log (space, key, added) VALUES (old.space, old.rowid, 0);
END""",
    """
CREATE TRIGGER IF NOT EXISTS vector_changed AFTER UPDATE ON vectors BEGIN
    INSERT INTO vector_log (space, key, added) VALUES (old.space, old.rowid, 0), (new.space, new.rowid, 1);
END""",
)
SCHEMA += "".join(f"{trigger};\n" for trigger in VECTOR_TRIGGERS)
# Every entity's degrees counted from the relations, as the degrees table keeps them: (name, degree, out_degree).
DEGREES_COUNTED = """
SELECT name, COUNT(DISTINCT other), SUM(outgoing) FROM (
    SELECT source AS name, target AS other, 1 AS outgoing FROM relations WHERE source != target
    UNION ALL SELECT target, source, 0 FROM relations WHERE source != target)
GROUP BY name
"""
# The degrees of a store that had none (format 2).
COUNT_DEGREES = f"INSERT INTO degrees {DEGREES_COUNTED}"

SCHEMA_VECTORS = next(part.strip() + ";" for part in SCHEMA.split(";") if "TABLE IF NOT EXISTS vectors" in part)
# The text a vector row keeps: none when a chunk with the same id holds it (chunk ids hash their text),
# and, reading, the row's own text or else that chunk's. Both expect the vector row as ``v``.
STORED_TEXT = "CASE WHEN v.text = (SELECT c.text FROM chunks c WHERE c.id = v.id) THEN NULL ELSE v.text END"
# A vector write (see SQLiteStore.insert_rows): its rows as VECTOR_COLUMNS, in order.
VECTOR_COLUMNS = ("space", "id", "text", "metadata", "vector")
WRITE_VECTORS = (
    f"INSERT OR REPLACE INTO vectors SELECT v.space, v.id, {STORED_TEXT}, v.metadata, v.vector "
    "FROM {rows} v ORDER BY v.rowid"
)
WRITE_VECTORS_V1 = (  # format 1: text NOT NULL
    "INSERT OR REPLACE INTO vectors SELECT space, id, text, metadata, vector FROM {rows} ORDER BY rowid"
)
READ_TEXT = "COALESCE(v.text, (SELECT c.text FROM chunks c WHERE c.id = v.id), '')"
