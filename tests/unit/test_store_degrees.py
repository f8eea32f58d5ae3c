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
