"""A damaged store is found when it is opened (issue 24 row 10): a few counts over the store's indexes
(graph rows and their vectors, the documents' chunks and theirs) make :class:`pathrag.PathRAGIndex` raise a
one-line :class:`~pathrag.errors.StoreDamaged`, and ``pathrag stats`` and ``pathrag paths`` exit 1 with one
error line, instead of answering from a store that only ``stats --check`` said was inconsistent."""

from __future__ import annotations

import pickle
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathrag import Entity, HashingEmbedder, IndexConfig, PathRAGIndex, Relation
from pathrag.errors import StoreDamaged, StoreError
from pathrag.sqlite import STORE_FILE

from ..fakes import ScriptedLLM
from .test_store import DOCS

pytestmark = pytest.mark.reliability


def open_index(directory: Path, **kwargs) -> PathRAGIndex:
    return PathRAGIndex(
        directory,
        llm=ScriptedLLM(),
        embedder=HashingEmbedder(256),
        config=IndexConfig(summary_threshold_tokens=5),
        **kwargs,
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    directory = tmp_path / "kb"
    index = open_index(directory)
    index.insert(DOCS)
    index.add_records(  # an import: a record chunk without text, and a passage of its own
        "imported",
        [Entity(name="LIGHTHOUSE", type="place", description="Guides boats.")],
        [Relation(source="LIGHTHOUSE", target="GULL", description="Guides the Gull.")],
    )
    index.delete(["c"])  # released chunks keep their rows, not their vectors
    assert index.check() == []
    index.close()
    return directory


def damage(directory: Path, *statements: str) -> None:
    conn = sqlite3.connect(directory / STORE_FILE)
    with conn:
        for sql in statements:
            conn.execute(sql)
    conn.close()


def test_a_healthy_store_opens_as_before(store: Path) -> None:
    index = open_index(store)
    assert index.check() == [] and index.stats()["documents"] == 3
    index.close()
    PathRAGIndex(store).close()  # without an embedder: the one it records


DAMAGES = {
    "entity vectors": (
        "DELETE FROM vectors WHERE space = 'entities' AND rowid IN "
        "(SELECT rowid FROM vectors WHERE space = 'entities' LIMIT 2)",
        "2 entities without a vector",
    ),
    "relation vectors": (
        "DELETE FROM vectors WHERE space = 'relations' AND rowid IN "
        "(SELECT rowid FROM vectors WHERE space = 'relations' LIMIT 1)",
        "1 relations without a vector",
    ),
    "chunk vectors": ("DELETE FROM vectors WHERE space = 'chunks'", "3 chunks without a vector"),
    "entity rows": ("DELETE FROM entities WHERE name = 'GULL'", "1 entity vectors without an owner"),
    "an entity row added": ("INSERT INTO entities VALUES ('GHOST', '', '', '[]')", "1 entities without a vector"),
    "chunk rows": ("DELETE FROM chunks WHERE text != ''", "chunks of documents missing"),
}


@pytest.mark.parametrize("kind", list(DAMAGES))
def test_a_damaged_store_is_a_one_line_error_on_open(store: Path, kind: str) -> None:
    sql, what = DAMAGES[kind]
    damage(store, sql)
    with pytest.raises(StoreDamaged) as raised:
        open_index(store)
    message = str(raised.value)
    assert "\n" not in message and str(store) in message and what in message, message
    assert "index the documents into a new store" in message  # the repair
    assert isinstance(raised.value, StoreError) and raised.value.directory == store
    assert str(pickle.loads(pickle.dumps(raised.value))) == message
    with pytest.raises(StoreDamaged):
        PathRAGIndex(store)  # opened with the embedder it records: the same
    index = open_index(store, check_on_open=False)  # opened as it is: check() lists the problems
    assert index.check() != []
    index.close()


def test_the_issue_case_37_entity_vectors_missing(tmp_path: Path) -> None:
    directory = tmp_path / "kb"
    index = open_index(directory)
    index.add_records("names", [Entity(name=f"PLACE {i}", type="place", description="A place.") for i in range(60)], [])
    index.close()
    damage(
        directory,
        "DELETE FROM vectors WHERE space = 'entities' AND rowid IN "
        "(SELECT rowid FROM vectors WHERE space = 'entities' LIMIT 37)",
    )
    with pytest.raises(StoreDamaged, match=r"37 entities without a vector \(60 entities, 23 entity vectors\)"):
        open_index(directory)


@pytest.mark.parametrize("command", [["stats"], ["paths", "Who lives in Saltmere?"]])
def test_the_command_line_on_a_damaged_store_prints_one_error_line(
    store: Path, command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_pathrag.cli import app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert CliRunner().invoke(app, [*command, "--store", str(store)]).exit_code == 0
    damage(store, DAMAGES["entity vectors"][0])
    result = CliRunner().invoke(app, [*command, "--store", str(store)])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    assert str(store) in result.stderr and "2 entities without a vector" in result.stderr
    assert "pathrag index PATH --store NEW_DIR" in result.stderr


def test_stats_check_still_lists_every_problem(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_pathrag.cli import app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    damage(store, DAMAGES["an entity row added"][0])
    result = CliRunner().invoke(app, ["stats", "--check", "--store", str(store)])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "GHOST" in result.stderr, result.output
