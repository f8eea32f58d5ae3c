"""A store file SQLite cannot read, and special files in place of the store's files, from the library (issue 24
rows 12 and 4): :class:`~pathrag.errors.StoreDamaged` naming the file and what to do, never SQLite's bare
"database disk image is malformed"; a FIFO is refused before anything opens it (opening one blocks forever)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from pathrag import Document, PathRAGIndex
from pathrag.errors import StoreDamaged, StoreError
from pathrag.sqlite import STORE_FILE, SQLiteStore, read_store_info

from .test_store import DOCS
from .test_store_damage_on_open import open_index

pytestmark = pytest.mark.reliability

PAGE = 32768  # the store's page size


@pytest.fixture(autouse=True)
def no_tokenizer_download(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATHRAG_TOKENIZER", "approximate")


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("healthy") / "kb"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATHRAG_TOKENIZER", "approximate")
        index = open_index(directory)
        index.insert(DOCS)
        index.close()
    return directory


def root_pages(directory: Path) -> dict[str, int]:
    """The first page of every table and index of the store file."""
    conn = sqlite3.connect(directory / STORE_FILE)
    try:
        return dict(conn.execute("SELECT name, rootpage FROM sqlite_schema WHERE rootpage > 0").fetchall())
    finally:
        conn.close()


def garbled_copy(healthy: Path, target: Path, page: int, at: int = 0) -> Path:
    """A copy of the store whose page ``page`` (1-based) has 64 garbled bytes from ``at`` on."""
    shutil.copytree(healthy, target)
    path = target / STORE_FILE
    data = bytearray(path.read_bytes())
    start = (page - 1) * PAGE + at
    data[start : start + 64] = b"\x07garbled" * 8
    path.write_bytes(data)
    return target


def assert_names_the_file(error: StoreDamaged, directory: Path) -> None:
    message = str(error)
    assert "\n" not in message and str(directory / STORE_FILE) in message, message
    assert "restore it from a backup, or rebuild the store in a new directory" in message, message
    assert error.path == directory / STORE_FILE and error.directory == directory
    assert isinstance(error, StoreError) and isinstance(error.__cause__, sqlite3.DatabaseError)
    assert str(pickle.loads(pickle.dumps(error))) == message


STEPS: dict[str, Callable[[PathRAGIndex], object]] = {
    "retrieve": lambda index: index.retrieve("Mara", keyword_llm=False),
    "stats": lambda index: index.stats(),
    "documents": lambda index: list(index.documents),
    "check": lambda index: index.check(),
    "insert": lambda index: index.insert([Document(id="z", chunks=("ENTITY Zed | person | New in town.",))]),
    "delete": lambda index: index.delete(["a"]),
}


def first_failure(directory: Path) -> tuple[str, StoreDamaged | None]:
    """The first step that fails on the store (opened without the check on open), and its error."""
    step = "open"
    index: PathRAGIndex | None = None
    try:
        index = open_index(directory, check_on_open=False)
        for name, run in STEPS.items():
            step = name
            run(index)
    except StoreDamaged as exc:
        return step, exc
    finally:
        if index is not None:
            index.close()
    return "none", None


@pytest.mark.parametrize(
    ("table", "step"),
    [
        ("meta", "open"),
        ("vectors", "retrieve"),
        ("entities", "retrieve"),
        # a retrieval reads the documents of its items (their metadata, issue 37): it finds these first
        ("sqlite_autoindex_documents_1", "retrieve"),
        ("documents", "retrieve"),
        ("llm_cache", "insert"),  # the store's fault, not the chunk's: the insert stops
    ],
)
def test_a_garbled_page_is_a_one_line_error_naming_the_file(
    healthy: Path, tmp_path: Path, table: str, step: str
) -> None:
    directory = garbled_copy(healthy, tmp_path / "kb", root_pages(healthy)[table])
    failed, error = first_failure(directory)
    assert (failed, error is not None) == (step, True)
    assert error is not None
    assert_names_the_file(error, directory)
    if step == "open":  # the usual open (the check on open) and the store's own info say the same
        with pytest.raises(StoreDamaged):
            open_index(directory)
        with pytest.raises(StoreDamaged):
            read_store_info(directory)


def test_every_table_and_index_garbled_is_found_by_a_step_never_a_bare_sqlite_error(
    healthy: Path, tmp_path: Path
) -> None:
    found = {}
    for table, page in root_pages(healthy).items():
        directory = garbled_copy(healthy, tmp_path / table, page)
        step, error = first_failure(directory)  # a raw sqlite3.DatabaseError fails the test here
        assert error is not None, f"{table}: every step passed on a garbled page"
        assert_names_the_file(error, directory)
        found[table] = step
    assert found["meta"] == "open" and found["vectors"] == "retrieve", found


def test_a_garbled_file_header_is_damage_too(healthy: Path, tmp_path: Path) -> None:
    directory = garbled_copy(healthy, tmp_path / "kb", 1)  # "file is not a database"
    for open_it in (open_index, PathRAGIndex, SQLiteStore, read_store_info):
        with pytest.raises(StoreDamaged) as raised:
            open_it(directory)
        assert_names_the_file(raised.value, directory)


def test_a_healthy_store_still_opens_and_answers(healthy: Path, tmp_path: Path) -> None:
    directory = shutil.copytree(healthy, tmp_path / "kb")
    assert first_failure(directory) == ("none", None)


def test_other_database_errors_are_not_called_damage(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "kb")
    try:
        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            store.read("SELECT * FROM no_such_table")
    finally:
        store.close()


# -- special files in place of the store's files --------------------------------------------------------

_OPEN_EACH_WAY = textwrap.dedent(
    """
    import json, sys
    from pathrag import HashingEmbedder, PathRAGIndex
    from pathrag.sqlite import SQLiteStore, read_store_info

    directory = sys.argv[1]
    found = {}
    for name, open_it in [
        ("PathRAGIndex", lambda: PathRAGIndex(directory, embedder=HashingEmbedder(256))),
        ("SQLiteStore", lambda: SQLiteStore(directory)),
        ("read_store_info", lambda: read_store_info(directory)),
    ]:
        try:
            open_it()
            found[name] = "opened"
        except Exception as exc:
            found[name] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(found))
    """
)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("name", [STORE_FILE, f"{STORE_FILE}-wal", f"{STORE_FILE}-shm", "pathrag.lock"])
def test_a_fifo_in_place_of_a_store_file_is_refused_by_the_library(healthy: Path, tmp_path: Path, name: str) -> None:
    directory = shutil.copytree(healthy, tmp_path / "kb")
    fifo = directory / name
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    # in a child process with a timeout: a regression blocks forever reading the FIFO, and fails here instead
    env = {**os.environ, "PATHRAG_TOKENIZER": "approximate"}
    done = subprocess.run(
        [sys.executable, "-c", _OPEN_EACH_WAY, str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    expected = (
        f"StoreError: {fifo} is not a regular file (a FIFO): a store's files are regular files; move it aside, or "
        "restore the store from a backup"
    )
    assert json.loads(done.stdout) == dict.fromkeys(["PathRAGIndex", "SQLiteStore", "read_store_info"], expected)
