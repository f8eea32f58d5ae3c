"""The degrees a store keeps (format 3): always equal to a recount from the relations, through every kind
of write, and counted once when an older store is upgraded."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pathrag import Relation
from pathrag.sqlite import FORMAT_VERSION, STORE_FILE, SQLiteGraphStore, SQLiteStore
from pathrag.sqlite.schema import DEGREES_COUNTED


def recount(db: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    db.execute("CREATE TEMP TABLE IF NOT EXISTS recount (name TEXT PRIMARY KEY, degree INT, out_degree INT)")
    db.execute("DELETE FROM temp.recount")
    db.execute(f"INSERT INTO temp.recount {DEGREES_COUNTED}")
    return {n: (d, o) for n, d, o in db.execute("SELECT * FROM temp.recount")}


def kept(db: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    return {n: (d, o) for n, d, o in db.execute("SELECT * FROM degrees")}


def rel(source: str, target: str) -> Relation:
    return Relation(source=source, target=target, description=f"{source} and {target}", keywords="k")


def test_kept_degrees_equal_a_recount_through_every_write(tmp_path: Path) -> None:
    for directed in (False, True):
        store = SQLiteStore(tmp_path / str(directed))
        graph = SQLiteGraphStore(store, directed_relations=directed)
        db = sqlite3.connect(store.path, isolation_level=None)
        graph.upsert_relations([rel("a", "b"), rel("b", "c"), rel("a", "a"), rel("c", "a")])
        assert kept(db) == recount(db) and kept(db)["a"][0] == 2
        graph.upsert_relations([rel("b", "a"), rel("d", "b")])  # undirected: merges into (a, b)
        assert kept(db) == recount(db)
        graph.delete_relations([("a", "b")])
        assert kept(db) == recount(db)
        with store.transaction():  # an INSERT OR REPLACE counts its delete (recursive triggers)
            store.execute("INSERT OR REPLACE INTO relations VALUES ('b', 'c', 'again', 'k', 2.0, '[]')")
        assert kept(db) == recount(db)
        graph.delete_entities(["c"])
        assert kept(db) == recount(db)
        graph.delete_entities(["a", "b", "d"])
        assert kept(db) == {} == recount(db)
        store.close()


def test_a_format_2_store_gets_its_degrees_counted_once(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path)
    SQLiteGraphStore(store).upsert_relations([rel("a", "b"), rel("b", "c"), rel("c", "a"), rel("a", "d")])
    store.close()
    db = sqlite3.connect(tmp_path / STORE_FILE, isolation_level=None)
    expected = kept(db)
    # as a format 2 store: no kept degrees, no log
    for name in ("relation_added", "relation_removed", "vector_added", "vector_removed", "vector_changed"):
        db.execute(f"DROP TRIGGER {name}")
    db.execute("DROP TABLE degrees")
    db.execute("DROP TABLE vector_log")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'format_version'")
    reopened = SQLiteStore(tmp_path)
    assert reopened.format_version == FORMAT_VERSION
    assert kept(db) == expected == recount(db)
    SQLiteGraphStore(reopened).delete_relations([("c", "a")])
    assert kept(db) == recount(db)
    assert {r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type = 'trigger'")} >= {"vector_added"}


def _as_format_3(path: Path) -> None:
    """Make the store in ``path`` look as format 3 wrote it: mentions without ``describes``."""
    db = sqlite3.connect(path / STORE_FILE, isolation_level=None)
    db.execute("ALTER TABLE mentions DROP COLUMN describes")
    db.execute("UPDATE meta SET value = '3' WHERE key = 'format_version'")
    db.close()


def test_a_format_3_store_gets_mentions_that_say_whether_they_describe(tmp_path: Path) -> None:
    from pathrag import Entity, HashingEmbedder, PathRAGIndex

    index = PathRAGIndex(tmp_path, embedder=HashingEmbedder(16))
    index.add_records("bulk:0", [Entity(name="A", type="t", description="A first.")], [rel("A", "B")])
    index.close()
    _as_format_3(tmp_path)
    index = PathRAGIndex(tmp_path, embedder=HashingEmbedder(16))
    index.add_records("bulk:1", [Entity(name="C", type="t", description="C later.")], [rel("C", "A")])
    assert index._backend.store.format_version == FORMAT_VERSION  # type: ignore[attr-defined]
    first, second = index.documents["bulk:0"].chunks[0], index.documents["bulk:1"].chunks[0]
    rows = index._backend.store.read("SELECT chunk_id, name, describes FROM mentions")  # type: ignore[attr-defined]
    # the rows kept from format 3 may describe (safe: they are read as before); new ones say which do
    assert sorted(rows) == sorted([(first, "A", 1), (first, "B", 1), (second, "A", 0), (second, "C", 1)])
    assert index.graph.get_entities(["A"])["A"].description == "A first."
    assert index.check() == []
    index.close()


def test_a_store_left_in_format_3_is_written_in_format_3(tmp_path: Path) -> None:
    from pathrag import Entity, HashingEmbedder, PathRAGIndex

    index = PathRAGIndex(tmp_path, embedder=HashingEmbedder(16))
    store = index._backend.store  # type: ignore[attr-defined]
    index.add_records("bulk:0", [Entity(name="A", type="t", description="A first.")], [rel("A", "B")])
    _as_format_3(tmp_path)
    store.format_version = 3  # as a store that could not be upgraded (another writer held it too long)
    index.add_records("bulk:1", [Entity(name="C", type="t", description="C later.")], [rel("C", "A")])
    index.delete(["bulk:0"])
    assert {e.name: e.description for e in index.graph.iter_entities()} == {"A": "", "C": "C later."}
    assert index.check() == []
    index.close()
