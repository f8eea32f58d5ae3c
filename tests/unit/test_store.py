"""The embedded SQLite store: migration of the JSON format, its record of the embedder, atomic commits,
readers during a write, and the CLI opening any store."""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pathrag.sqlite.store
from pathrag import Document, Entity, HashingEmbedder, IndexConfig, PathRAGIndex, Relation
from pathrag.errors import StoreDamaged
from pathrag.sqlite import FORMAT_VERSION, STORE_FILE, SQLiteGraphStore, SQLiteStore, SQLiteVectorIndex, read_store_info
from pathrag.vectors.base import VectorItem

from ..fakes import ScriptedLLM

FIXTURE = Path(__file__).parents[1] / "fixtures" / "legacy_json_store"
EXPECTED = json.loads((Path(__file__).parents[1] / "fixtures" / "legacy_json_store.expected.json").read_text())
# The documents the fixture was built from (see tests/fixtures/README.md), to check that nothing is re-paid.
DOCS = [
    Document(
        id="a",
        chunks=(
            "ENTITY Mara | person | Harbour pilot.\nENTITY Saltmere | location | Fishing town.\n"
            "LINK Mara | Saltmere | Mara lives in Saltmere. | home | 6",
            "ENTITY Mara | person | Sails at night.\nENTITY Tide Board | organization | Runs the port.\n"
            "LINK Tide Board | Mara | The Tide Board employs Mara. | employment | 8",
        ),
    ),
    Document(
        id="b",
        metadata={"source": "b.md"},
        chunks=(
            "ENTITY Mara | pilot | Pilot of the Gull.\nENTITY Gull | object | A small boat.\n"
            "LINK Saltmere | Mara | Mara was born in Saltmere. | birthplace, home | 3\n"
            "LINK Mara | Gull | Mara owns the Gull. | ownership | 5",
        ),
    ),
    Document(
        id="c", text="ENTITY Ida | person | Builds sea walls.\nLINK Ida | Saltmere | Ida works in Saltmere. | work | 4"
    ),
]


def open_index(directory: Path, llm=None, dims: int = 256, **kwargs) -> PathRAGIndex:
    return PathRAGIndex(
        directory, llm=llm, embedder=HashingEmbedder(dims), config=IndexConfig(summary_threshold_tokens=5), **kwargs
    )


def contents(index: PathRAGIndex) -> dict:
    return {
        "stats": index.stats(),
        "documents": {doc_id: doc.row() for doc_id, doc in sorted(index.documents.items())},
        "entities": sorted(e.model_dump_json() for e in index.graph.iter_entities()),
        "relations": sorted(r.model_dump_json() for r in index.graph.iter_relations()),
        "vectors": {n: sorted(i.ids()) for n, i in index.vector_indexes.items()},
    }


def paths(index: PathRAGIndex) -> dict:
    return {
        q: [[list(p.nodes), round(p.score, 9)] for p in index.retrieve(q, keyword_llm=False, context="paths").paths]
        for q in EXPECTED["paths"]
    }


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    target = tmp_path / "old-store"
    shutil.copytree(FIXTURE, target)
    return target


def test_a_json_store_is_migrated_once_and_loses_nothing(legacy: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pathrag.sqlite.legacy"):
        index = open_index(legacy)
    messages = [r.getMessage() for r in caplog.records if "migrated" in r.getMessage()]
    assert len(messages) == 1 and "\n" not in messages[0] and str(legacy) in messages[0]
    assert isinstance(index.graph, SQLiteGraphStore) and isinstance(index.entity_index, SQLiteVectorIndex)
    assert contents(index) == {k: v for k, v in EXPECTED.items() if k != "paths"}
    assert paths(index) == EXPECTED["paths"]
    assert sorted(p.name for p in legacy.iterdir() if not p.name.startswith("pathrag.")) == ["json-store-backup"]
    assert (legacy / "json-store-backup" / "graph.json").exists()  # kept, not deleted
    assert read_store_info(legacy)["embedder"] == "hashing-256"  # carried over from cli.json
    index.close()

    caplog.clear()
    llm = ScriptedLLM()
    again = open_index(legacy, llm, extractor="llm")  # its cache holds the paper prompt's answers
    assert not [r for r in caplog.records if "migrated" in r.getMessage()]
    assert contents(again) == {k: v for k, v in EXPECTED.items() if k != "paths"}
    # chunk records, cache and summaries came along: re-inserting the same documents costs nothing
    assert (again.insert(DOCS).unchanged, llm.calls) == (3, 0)
    again.delete(["c"])
    again.insert(DOCS)
    assert llm.calls == 0 and contents(again)["stats"] == EXPECTED["stats"]


def test_the_store_records_its_embedder_and_refuses_another(tmp_path: Path) -> None:
    index = open_index(tmp_path, ScriptedLLM())
    index.insert(DOCS[:1])
    index.close()
    info = read_store_info(tmp_path)
    assert (info["embedder"], info["dimension"], info["vector_index"]) == ("hashing-256", "256", "sqlite-exact")
    assert info["pathrag_version"]
    with pytest.raises(ValueError, match="built with the embeddings 'hashing-256', not 'hashing-64'"):
        open_index(tmp_path, dims=64)
    with pytest.raises(ValueError, match="256-dimensional"):  # a name that says nothing is caught by the dimension
        PathRAGIndex(tmp_path, embedder=HashingEmbedder(64), embedder_name="hashing-256").retrieve(
            "Mara", keyword_llm=False
        )


def test_a_store_made_by_the_library_opens_in_the_command_line(tmp_path: Path, monkeypatch) -> None:
    from langchain_pathrag.cli import app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    index = open_index(tmp_path / "kb", ScriptedLLM())
    index.insert(DOCS)
    index.add_records(
        "imported",
        [Entity(name="LIGHTHOUSE", type="place", description="Guides boats.")],
        [Relation(source="LIGHTHOUSE", target="GULL", description="Guides the Gull.")],
    )
    index.close()
    result = CliRunner().invoke(app, ["stats", "--store", str(tmp_path / "kb")])
    assert result.exit_code == 0, result.output
    stats = {line.split()[0]: line.split()[-1] for line in result.stdout.splitlines() if line.strip()}
    # the import is a document whose records are not a chunk of text
    assert (stats["documents"], stats["chunks"], stats["entities"], stats["relations"]) == ("4", "4", "6", "5")
    result = CliRunner().invoke(
        app, ["paths", "How is Ida connected to the Gull?", "--store", str(tmp_path / "kb"), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["items"]


def test_the_command_line_opens_and_migrates_a_json_store(legacy: Path, monkeypatch) -> None:
    from langchain_pathrag.cli import app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(app, ["stats", "--store", str(legacy)])
    assert result.exit_code == 0, result.output
    assert (legacy / STORE_FILE).exists() and not (legacy / "cli.json").exists()
    assert [line for line in result.stderr.splitlines() if "migrated" in line] == [
        f"pathrag: migrated the JSON store {legacy} to pathrag.sqlite (4 documents); the old files are kept in "
        f"{legacy / 'json-store-backup'}"
    ]
    stats = {line.split()[0]: line.split()[-1] for line in result.stdout.splitlines() if line.strip()}
    # the import is a document whose records are not a chunk of text
    assert (stats["documents"], stats["chunks"], stats["entities"], stats["relations"]) == ("4", "4", "6", "5")


class FailingEmbedder(HashingEmbedder):
    """Fails on the n-th call: a commit that breaks half-way."""

    def __init__(self, fail_on: int) -> None:
        super().__init__(256)
        self.calls, self.fail_on = 0, fail_on

    def embed(self, texts):
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("embedding service down")
        return super().embed(texts)


@pytest.mark.parametrize("fail_on", [2, 3])  # after the entities' vectors, after the relations'
def test_a_commit_that_fails_half_way_leaves_the_store_as_before(tmp_path: Path, fail_on: int) -> None:
    llm = ScriptedLLM()
    index = open_index(tmp_path / "s", llm)
    index.insert(DOCS[:2])
    before = contents(index)
    broken = PathRAGIndex(
        tmp_path / "s", llm=llm, embedder=FailingEmbedder(fail_on), config=IndexConfig(summary_threshold_tokens=5)
    )
    with pytest.raises(RuntimeError, match="embedding service down"):
        broken.insert(DOCS[2:])
    assert contents(broken) == before  # its own view was rolled back too
    assert contents(open_index(tmp_path / "s")) == before
    calls = llm.calls
    broken.insert(DOCS[2:])  # the retry pays no LLM call: the extraction was saved before the commit
    assert llm.calls == calls
    clean = open_index(tmp_path / "clean", ScriptedLLM())
    clean.insert(DOCS)
    assert contents(broken) == contents(clean)


def test_readers_see_the_last_commit_while_a_write_is_open(tmp_path: Path) -> None:
    writer = open_index(tmp_path, ScriptedLLM())
    writer.insert(DOCS[:1])
    reader = open_index(tmp_path)
    before = paths(reader)
    store = writer._store
    assert store is not None
    with store.transaction():  # a commit in progress: half of a delete written
        writer.graph.delete_entities(["MARA"])
        assert paths(reader) == before  # another connection still sees the committed graph
        assert writer.graph.get_entities(["MARA"])  # reads are of committed state, even in the writer
        assert sqlite3.connect(tmp_path / STORE_FILE).execute(
            "SELECT COUNT(*) FROM entities WHERE name = 'MARA'"
        ).fetchone() == (1,)
    assert paths(reader) != before and not reader.graph.get_entities(["MARA"])


def test_after_commit_runs_once_the_outer_transaction_commits_and_never_after_a_rollback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(tmp_path)
    ran: list[str] = []
    with pytest.raises(ZeroDivisionError), store.transaction():
        store.after_commit(lambda: ran.append("lost"))
        store.set_meta({"k": 1})
        _ = 1 / 0
    with store.transaction():
        with store.transaction():  # a nested one joins the outer one
            store.after_commit(lambda: ran.append("kept"))
            store.set_meta({"k": 2})
        assert ran == []  # not yet: the outer transaction has not committed
    assert ran == ["kept"] and store.meta()["k"] == "2"
    with store.transaction():
        store.after_commit(lambda: 1 / 0)  # logged: the commit stands
        store.after_commit(lambda: ran.append("after a failed one"))
        store.set_meta({"k": 3})
    assert ran == ["kept", "after a failed one"] and store.meta()["k"] == "3"  # each action runs once
    assert "ZeroDivisionError" in caplog.text
    with pytest.raises(RuntimeError, match="inside a transaction"):
        store.after_commit(lambda: None)


def _into(sql: str) -> str:
    words = sql.split()
    return " ".join(words[: words.index("INTO") + 2]) if "INTO" in words else " ".join(words[:2])


class _Recording:
    """A connection that notes the statements run through it: (how, the statement's words up to the table
    it inserts into, how many rows)."""

    def __init__(self, conn: sqlite3.Connection, ran: list[tuple[str, str, int]]) -> None:
        self._conn, self._ran = conn, ran

    def execute(self, sql: str, params=()):  # type: ignore[no-untyped-def]
        self._ran.append(("execute", _into(sql), 1))
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows):  # type: ignore[no-untyped-def]
        rows = list(rows)
        self._ran.append(("executemany", _into(sql), len(rows)))
        return self._conn.executemany(sql, rows)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._conn, name)


def test_a_bulk_write_runs_one_statement_per_staged_batch_of_rows_in_their_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Run once per row, a statement that fires triggers made SQLite copy the pages it changes for each row
    # (see SQLiteStore.insert_rows): the bulk writes of vectors and relations must run once per batch.
    monkeypatch.setattr(pathrag.sqlite.store, "STAGED_ROWS", 4)
    store = SQLiteStore(tmp_path)
    ran: list[tuple[str, str, int]] = []
    store._writer = _Recording(store._w(), ran)  # type: ignore[assignment]
    vectors = SQLiteVectorIndex(store, "entities", HashingEmbedder(8))
    vectors.upsert([VectorItem(f"v{i}", f"text {i}") for i in range(10)])
    graph = SQLiteGraphStore(store)
    graph.upsert_relations([Relation(source=f"A{i}", target=f"B{i}") for i in range(9)])
    into = {(how, words) for how, words, _ in ran if words.endswith((" vectors", " relations"))}
    assert into == {("execute", "INSERT OR REPLACE INTO vectors"), ("execute", "INSERT INTO relations")}
    assert [words for _, words, _ in ran].count("INSERT OR REPLACE INTO vectors") == 3  # 10 rows, 4 at a time
    assert [words for _, words, _ in ran].count("INSERT INTO relations") == 3
    logged = store.read("SELECT v.id FROM vector_log l JOIN vectors v ON v.rowid = l.key ORDER BY l.seq")
    assert [row[0] for row in logged] == [f"v{i}" for i in range(10)]  # written in the order given
    assert [(r.source, r.target) for r in graph.iter_relations()] == [(f"A{i}", f"B{i}") for i in range(9)]
    store.close()


def test_a_bulk_write_whose_rows_fail_half_way_writes_none_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pathrag.sqlite.store, "STAGED_ROWS", 2)
    store = SQLiteStore(tmp_path)

    def rows():  # type: ignore[no-untyped-def]
        yield from [("a", "1"), ("b", "2"), ("c", "3")]  # two batches run before the third fails
        raise ValueError("a row that cannot be made")

    with pytest.raises(ValueError, match="cannot be made"):
        store.insert_rows("INSERT INTO meta SELECT k, v FROM {rows} ORDER BY rowid", ("k", "v"), rows())
    assert not {"a", "b", "c"} & set(store.meta())  # outside a transaction it makes one of its own
    store.insert_rows("INSERT INTO meta SELECT k, v FROM {rows} ORDER BY rowid", ("k", "v"), [("d", "4")])
    assert store.meta()["d"] == "4"
    store.close()


def test_check_finds_nothing_on_a_healthy_store_and_names_what_a_damaged_one_lacks(tmp_path: Path) -> None:
    index = open_index(tmp_path, ScriptedLLM())
    index.insert(DOCS)
    index.add_records(
        "imported",
        [Entity(name="LIGHTHOUSE", type="place", description="Guides boats.")],
        [Relation(source="LIGHTHOUSE", target="GULL", description="Guides the Gull.")],
    )
    index.delete(["c"])
    assert index.check() == []
    index.close()
    conn = sqlite3.connect(tmp_path / STORE_FILE)  # damage it behind the store's back
    with conn:
        conn.execute("DELETE FROM entities WHERE name = 'GULL'")
        conn.execute("INSERT INTO entities VALUES ('GHOST', '', '', '[]')")
        conn.execute("DELETE FROM vectors WHERE space = 'chunks'")
    conn.close()
    with pytest.raises(StoreDamaged, match="3 chunks without a vector"):  # the counts see it on open
        open_index(tmp_path)
    problems = open_index(tmp_path, check_on_open=False).check()
    assert any("no live document mentions, e.g. GHOST" in p for p in problems)
    assert any("missing from the graph, e.g. GULL" in p for p in problems)
    assert any(p.startswith("chunks vectors: 3 missing") for p in problems)


@pytest.mark.parametrize("damage", ["garbled", "truncated"])
def test_a_damaged_store_file_is_a_one_line_error_naming_it(tmp_path: Path, damage: str, monkeypatch) -> None:
    from langchain_pathrag.cli import app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    index = open_index(tmp_path / "kb", ScriptedLLM())
    index.insert(DOCS)
    index.close()
    path = tmp_path / "kb" / STORE_FILE
    data = path.read_bytes()
    path.write_bytes(b"\x00garbage" * 64 + data[512:] if damage == "garbled" else data[: len(data) // 3])
    result = CliRunner().invoke(app, ["stats", "--store", str(tmp_path / "kb")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.count("\n") == 1 and str(path) in result.stderr, result.stderr


def test_stats_check_in_the_command_line(tmp_path: Path, monkeypatch) -> None:
    from langchain_pathrag.cli import app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    index = open_index(tmp_path / "kb", ScriptedLLM())
    index.insert(DOCS)
    index.close()
    result = CliRunner().invoke(app, ["stats", "--check", "--store", str(tmp_path / "kb")])
    assert result.exit_code == 0 and "agree" in result.stdout, result.output
    conn = sqlite3.connect(tmp_path / "kb" / STORE_FILE)
    with conn:
        conn.execute("INSERT INTO entities VALUES ('GHOST', '', '', '[]')")
    conn.close()
    result = CliRunner().invoke(app, ["stats", "--check", "--store", str(tmp_path / "kb")])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "GHOST" in result.stderr


V1_VECTORS = (
    "CREATE TABLE vectors_v1 (space TEXT NOT NULL, id TEXT NOT NULL, text TEXT NOT NULL, "
    "metadata TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (space, id))"
)


def to_format_1(path: Path) -> sqlite3.Connection:
    """Turn the store at ``path`` into format 1: vectors holding every text (NOT NULL), LLM answers in
    plain text. Returns an open connection to it."""
    db = sqlite3.connect(path / STORE_FILE, isolation_level=None)
    db.execute("BEGIN")
    db.execute(V1_VECTORS)
    db.execute(
        "INSERT INTO vectors_v1 SELECT v.space, v.id, COALESCE(v.text, c.text), v.metadata, v.vector "
        "FROM vectors v LEFT JOIN chunks c ON c.id = v.id"
    )
    db.execute("DROP TABLE vectors")
    db.execute("ALTER TABLE vectors_v1 RENAME TO vectors")
    db.create_function("unzip", 1, lambda b: zlib.decompress(b).decode())
    db.execute("UPDATE llm_cache SET answer = unzip(answer)")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'format_version'")
    db.execute("COMMIT")
    return db


def vector_texts(index: PathRAGIndex) -> dict:
    return {
        name: {i: vector_index.get(i).text for i in vector_index.ids()}
        for name, vector_index in index.vector_indexes.items()
    }


def test_chunk_vectors_keep_no_copy_of_their_text_and_llm_answers_are_compressed(tmp_path: Path) -> None:
    index = open_index(tmp_path, ScriptedLLM())
    index.insert(DOCS)
    db = sqlite3.connect(tmp_path / STORE_FILE)
    assert db.execute("SELECT COUNT(*), COUNT(text) FROM vectors WHERE space = 'chunks'").fetchone() == (4, 0)
    assert db.execute("SELECT COUNT(*) FROM vectors WHERE space != 'chunks' AND text IS NULL").fetchone() == (0,)
    chunk_text = dict(db.execute("SELECT id, text FROM chunks"))
    # the text still reads back, by id and with every hit
    assert {i: index.chunk_index.get(i).text for i in index.chunk_index.ids()} == chunk_text
    assert {h.id: h.text for h in index.chunk_index.query("Mara", 10)} == chunk_text
    assert {type(answer) for (answer,) in db.execute("SELECT answer FROM llm_cache")} == {bytes}
    calls = index.llm.calls
    index.delete(["c"])
    index.insert(DOCS[2:])  # the compressed answers are read back: no call paid again
    assert index.llm.calls == calls


def test_a_format_1_store_is_upgraded_once_and_answers_the_same(tmp_path: Path, caplog) -> None:
    llm = ScriptedLLM()
    index = open_index(tmp_path, llm)
    index.insert(DOCS)
    before, before_paths, before_texts = contents(index), paths(index), vector_texts(index)
    index.close()
    db = to_format_1(tmp_path)
    assert db.execute("SELECT COUNT(text) FROM vectors WHERE space = 'chunks'").fetchone() == (4,)

    with caplog.at_level(logging.INFO, logger="pathrag.sqlite.migrations"):
        upgraded = open_index(tmp_path, llm)
    assert [r.message for r in caplog.records if f"format 1 to {FORMAT_VERSION}" in r.message]
    assert db.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone() == (str(FORMAT_VERSION),)
    assert db.execute("SELECT COUNT(text) FROM vectors WHERE space = 'chunks'").fetchone() == (0,)
    assert "text TEXT," in db.execute("SELECT sql FROM sqlite_schema WHERE name = 'vectors'").fetchone()[0]
    assert (contents(upgraded), paths(upgraded), vector_texts(upgraded)) == (before, before_paths, before_texts)
    calls = llm.calls
    upgraded.delete(["c"])
    upgraded.insert(DOCS[2:])  # the plain-text answers of format 1 are still read
    assert llm.calls == calls
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="pathrag.sqlite.migrations"):
        open_index(tmp_path)
    assert not [r for r in caplog.records if "upgraded" in r.message]  # once


def test_a_format_1_store_that_cannot_be_upgraded_still_answers(tmp_path: Path, monkeypatch) -> None:
    index = open_index(tmp_path, ScriptedLLM())
    index.insert(DOCS)
    before, before_texts = paths(index), vector_texts(index)
    index.close()
    db = to_format_1(tmp_path)
    # as on a read-only file: the upgrade's transaction fails, and the store stays in format 1
    monkeypatch.setattr(
        SQLiteStore,
        "transaction",
        lambda self: (_ for _ in ()).throw(sqlite3.OperationalError("attempt to write a readonly database")),
    )
    reader = open_index(tmp_path)
    assert db.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone() == ("1",)
    assert (paths(reader), vector_texts(reader)) == (before, before_texts)


@pytest.mark.parametrize("fail_on", [2, 3])
def test_an_in_memory_commit_that_fails_half_way_leaves_the_index_as_before(fail_on: int) -> None:
    llm, embedder = ScriptedLLM(), FailingEmbedder(10**9)
    index = PathRAGIndex(llm=llm, embedder=embedder, config=IndexConfig(summary_threshold_tokens=5))
    index.insert(DOCS[:2])
    before = contents(index)
    graph = index.graph
    embedder.calls, embedder.fail_on = 0, fail_on
    with pytest.raises(RuntimeError, match="embedding service down"):
        index.insert(DOCS[2:])
    assert contents(index) == before and index.graph is graph  # rolled back in place
    calls = llm.calls
    index.insert(DOCS[2:])  # not mistaken for unchanged, and the extraction is not paid again
    assert llm.calls == calls
    clean = PathRAGIndex(
        llm=ScriptedLLM(), embedder=HashingEmbedder(256), config=IndexConfig(summary_threshold_tokens=5)
    )
    clean.insert(DOCS)
    assert contents(index) == contents(clean)


def test_a_format_1_store_left_unupgraded_is_still_written_in_format_1(tmp_path: Path, monkeypatch) -> None:
    index = open_index(tmp_path, ScriptedLLM())
    index.insert(DOCS)
    index.close()
    db = to_format_1(tmp_path)
    monkeypatch.setattr(pathrag.sqlite.store, "upgrade", lambda store: None)  # as when another writer holds it
    again = open_index(tmp_path, ScriptedLLM())
    again.delete(["c"])
    again.insert(DOCS[2:])  # chunk vectors written again: with their text, as format 1 requires
    assert db.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone() == ("1",)
    assert db.execute("SELECT COUNT(*) FROM vectors WHERE text IS NULL").fetchone() == (0,)
    assert {i: again.chunk_index.get(i).text for i in again.chunk_index.ids()} == dict(
        db.execute("SELECT id, text FROM chunks")
    )
