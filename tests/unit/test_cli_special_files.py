"""``pathrag index`` skips what is not a regular file (issue 16): a FIFO named ``*.md`` would block the read
forever. Run as a real process, so that a hang is killed by the guard timeout instead of stopping the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pathrag.demo import demo_data

DATA = Path(str(demo_data()))

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform"),
]


def pathrag(*args: object) -> subprocess.CompletedProcess[str]:
    found = shutil.which("pathrag", path=os.path.dirname(sys.executable))
    command = [found] if found else [sys.executable, "-m", "langchain_pathrag.cli"]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PATHRAG_TOKENIZER"] = "approximate"
    # the timeout only guards against the hang this test is about: a run that blocks fails instead of stalling
    return subprocess.run(
        [*command, *map(str, args)], capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    shutil.copy(DATA / "corpus" / "02-greyfen-expansion-plan.md", docs / "plan.md")
    os.mkfifo(docs / "pipe.md")
    os.mkfifo(docs / "sub" / "notes.txt")
    return docs


def test_index_skips_fifos_in_a_folder_with_a_warning(tmp_path: Path, folder: Path) -> None:
    done = pathrag("index", folder, "--store", tmp_path / "kb", "--replay", DATA)
    assert done.returncode == 0, done.stderr
    assert f"skipped {folder / 'pipe.md'}: not a regular file" in done.stderr
    assert f"skipped {folder / 'sub' / 'notes.txt'}: not a regular file" in done.stderr
    stats = pathrag("stats", "--store", tmp_path / "kb")
    assert stats.returncode == 0, stats.stderr
    assert any(line.split()[:2] == ["documents", "1"] for line in stats.stdout.splitlines()), stats.stdout


def test_a_fifo_given_by_name_is_skipped_too(tmp_path: Path, folder: Path) -> None:
    done = pathrag("index", folder / "plan.md", folder / "pipe.md", "--store", tmp_path / "kb", "--replay", DATA)
    assert done.returncode == 0, done.stderr
    assert f"skipped {folder / 'pipe.md'}: not a regular file" in done.stderr
    alone = pathrag("index", folder / "pipe.md", "--store", tmp_path / "kb2", "--replay", DATA)
    assert alone.returncode != 0 and "nothing to index" in alone.stderr and "not a regular file" in alone.stderr
    assert "Traceback" not in alone.stderr


# -- every other file input refuses a FIFO in one line (issue 24 row 4) --------------------------------
# Run in a thread with a join timeout: a command that blocks on the FIFO fails the test instead of stalling the
# suite (the FIFO is then opened for writing and closed, so the blocked reader sees its end and the thread ends).

FIXTURES = Path(__file__).parents[1] / "fixtures"


def run_bounded(fifo: Path, *args: object, timeout: float = 60.0) -> tuple[int, str]:
    """``pathrag ARGS`` in-process, bounded in time: (exit code, stderr)."""
    import threading

    from typer.testing import CliRunner

    from langchain_pathrag.cli import app

    found: list[tuple[int, str]] = []

    def invoke() -> None:
        result = CliRunner().invoke(app, [str(a) for a in args])
        found.append((result.exit_code, result.stderr))

    thread = threading.Thread(target=invoke, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # unblock the reader (ENXIO if none: also fine)
        thread.join(10)
        pytest.fail(f"pathrag {' '.join(map(str, args))} blocked on the FIFO {fifo}")
    return found[0]


def refused_in_one_line(code: int, stderr: str, fifo: Path) -> None:
    assert code != 0
    assert stderr.strip().splitlines() == [f"error: {fifo} is not a regular file (a FIFO): give a file"], stderr


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATHRAG_MODEL", "PATHRAG_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATHRAG_TOKENIZER", "approximate")  # no tokenizer download


@pytest.mark.parametrize("kind", ["openie", "graph-documents"])
def test_import_refuses_a_fifo(tmp_path: Path, kind: str, no_key: None) -> None:
    fifo = tmp_path / "input.json"
    os.mkfifo(fifo)
    refused_in_one_line(*run_bounded(fifo, "import", kind, fifo, "--store", tmp_path / "kb"), fifo)
    assert not (tmp_path / "kb").exists()  # refused before the store is touched


@pytest.mark.parametrize("name", ["graph_chunk_entity_relation.graphml", "kv_store_text_chunks.json"])
def test_import_lightrag_refuses_a_fifo_in_the_directory(tmp_path: Path, name: str, no_key: None) -> None:
    directory = tmp_path / "lightrag"
    shutil.copytree(FIXTURES / "lightrag", directory)
    (directory / name).unlink()
    os.mkfifo(directory / name)
    code, stderr = run_bounded(directory / name, "import", "lightrag", directory, "--store", tmp_path / "kb")
    refused_in_one_line(code, stderr, directory / name)
    reused = run_bounded(
        directory / name, "import", "lightrag", directory, "--store", tmp_path / "kb2", "--reuse-vectors"
    )
    refused_in_one_line(*reused, directory / name)


def test_import_lightrag_refuses_a_fifo_vector_file_with_reuse(tmp_path: Path, no_key: None) -> None:
    directory = tmp_path / "lightrag"
    shutil.copytree(FIXTURES / "lightrag", directory)
    (directory / "vdb_entities.json").unlink()
    os.mkfifo(directory / "vdb_entities.json")
    code, stderr = run_bounded(
        directory / "vdb_entities.json", "import", "lightrag", directory, "--store", tmp_path / "kb", "--reuse-vectors"
    )
    refused_in_one_line(code, stderr, directory / "vdb_entities.json")


def test_eval_refuses_a_fifo_questions_file(tmp_path: Path, no_key: None) -> None:
    fifo = tmp_path / "questions.txt"
    os.mkfifo(fifo)
    args = ("eval", "--store", tmp_path / "kb", "--run-dir", tmp_path / "run", "--offline", "--questions-file", fifo)
    refused_in_one_line(*run_bounded(fifo, *args), fifo)


def test_the_library_readers_refuse_a_fifo(tmp_path: Path) -> None:
    from pathrag import NetworkXGraphStore
    from pathrag.eval import EvaluationError, read_questions
    from pathrag.importers import import_openie

    fifo = tmp_path / "input.json"
    os.mkfifo(fifo)
    message = f"{fifo} is not a regular file (a FIFO): give a file"
    with pytest.raises(EvaluationError) as refused:
        read_questions(fifo)
    assert str(refused.value) == message
    with pytest.raises(ValueError) as refused_import:
        import_openie(fifo, NetworkXGraphStore())
    assert str(refused_import.value) == message


def test_import_lightrag_refuses_a_fifo_for_its_folder(tmp_path: Path, no_key: None) -> None:
    fifo = tmp_path / "lightrag"
    os.mkfifo(fifo)
    code, stderr = run_bounded(fifo, "import", "lightrag", fifo, "--store", tmp_path / "kb")
    assert code != 0 and stderr.strip().splitlines() == [f"error: {fifo} is a FIFO, not a folder"], stderr


@pytest.mark.parametrize("name", ["pathrag.sqlite", "pathrag.sqlite-wal"])
def test_a_fifo_in_place_of_a_store_file_is_refused(tmp_path: Path, name: str, no_key: None) -> None:
    fixture = FIXTURES / "musique_small" / "openie_sample.json"
    assert run_bounded(fixture, "import", "openie", fixture, "--store", tmp_path / "kb")[0] == 0
    fifo = tmp_path / "kb" / name
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    for command in (["stats"], ["paths", "Who?"], ["import", "openie", fixture]):
        code, stderr = run_bounded(fifo, *command, "--store", tmp_path / "kb")
        assert code != 0 and stderr.strip().splitlines() == [
            f"error: {fifo} is not a regular file (a FIFO): a store's files are regular files; move it aside, or "
            "restore the store from a backup"
        ], stderr
