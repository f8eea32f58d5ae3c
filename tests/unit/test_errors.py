"""The core's typed errors (``pathrag.errors``) carry their facts as fields, keep their messages, survive
pickling, and the command line words them from the fields."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path

import pytest

from langchain_pathrag.cli.store import check_embeddings, locked_error
from pathrag import HashingEmbedder, PathRAGIndex
from pathrag.errors import EmbedderMismatch, MissingEmbedderError, StoreError, StoreFormatError, StoreLocked
from pathrag.index.front import MissingEmbedder
from pathrag.sqlite import FORMAT_VERSION, SQLiteStore, WriterLock, write_store_info


def test_a_held_lock_is_store_locked_with_the_directory_holder_and_wait(tmp_path: Path) -> None:
    holder, other = WriterLock(tmp_path), WriterLock(tmp_path)
    holder.acquire()
    try:
        with pytest.raises(StoreLocked) as refused:
            other.acquire(timeout=0.1)
    finally:
        holder.release()
    error = refused.value
    assert (error.directory, error.holder, error.waited) == (tmp_path, holder.holder(), 0.1)
    assert str(error) == (
        f"the store {tmp_path} is being written by process {error.holder} (waited 0.1 s): wait for it to finish, "
        "or let writes wait with IndexConfig(lock_timeout=SECONDS)"
    )
    assert str(locked_error(error)) == (
        f"the store {tmp_path} is being written by process {error.holder} (waited 0.1 s): wait for it to finish, "
        "or add --wait SECONDS"
    )


def test_other_embeddings_are_embedder_mismatch_with_both_names(tmp_path: Path) -> None:
    PathRAGIndex(tmp_path / "kb", embedder=HashingEmbedder(64)).close()
    with pytest.raises(EmbedderMismatch) as refused:
        PathRAGIndex(tmp_path / "kb", embedder=HashingEmbedder(32))
    error = refused.value
    assert isinstance(error, StoreError)  # callers catching the store's errors still catch it
    assert (error.directory, error.recorded, error.given) == (tmp_path / "kb", "hashing-64", "hashing-32")
    assert "was built with the embeddings 'hashing-64', not 'hashing-32'" in str(error)


def test_a_newer_store_is_store_format_error(tmp_path: Path) -> None:
    write_store_info(tmp_path, format_version=FORMAT_VERSION + 1)
    with pytest.raises(StoreFormatError) as refused:
        SQLiteStore(tmp_path)
    error = refused.value
    assert error.found[1] == str(FORMAT_VERSION + 1) and error.supported == FORMAT_VERSION
    assert str(error).endswith(": upgrade pathrag")


def test_missing_embedder_error_names_the_store_and_its_embeddings(tmp_path: Path) -> None:
    with pytest.raises(MissingEmbedderError) as refused:
        MissingEmbedder("openai:text-embedding-3-small", tmp_path).embed(["x"])
    assert (refused.value.directory, refused.value.recorded) == (tmp_path, "openai:text-embedding-3-small")


@pytest.mark.parametrize(
    "error",
    [
        StoreLocked("kb", "42", 1.5, remedy="add --wait SECONDS"),
        EmbedderMismatch("kb", "hashing-64", "hashing-32"),
        StoreFormatError("kb/pathrag.sqlite", ("pathrag", "9"), 2),
        MissingEmbedderError("cannot embed", directory="kb", recorded="openai:x"),
    ],
)
def test_errors_pickle_with_their_fields(error: Exception) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error) and vars(copy) == vars(error)


def test_the_command_line_words_other_embeddings_from_the_fields(tmp_path: Path) -> None:
    from langchain_pathrag.cli import CliError

    check_embeddings(tmp_path, {"embeddings": "hashing-256"}, None)  # none asked for: the store's
    check_embeddings(tmp_path, {"embeddings": "hashing-256"}, "hashing-256")
    with pytest.raises(CliError, match=r"built with the embeddings hashing \(pathrag.HashingEmbedder") as refused:
        check_embeddings(tmp_path, {"embeddings": "hashing-256"}, "openai:text-embedding-3-small")
    assert "not text-embedding-3-small (OpenAI-compatible endpoint); use another --store" in str(refused.value)
    assert isinstance(refused.value.__cause__, EmbedderMismatch)


# -- one-line errors for damaged or wrong input (issue 24 row 12) -----------------------------------------


def cli(*args: object) -> tuple[int, str]:
    from typer.testing import CliRunner

    from langchain_pathrag.cli import app

    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stderr


def one_error_line(code: int, stderr: str) -> str:
    assert code != 0
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


@pytest.mark.reliability
def test_a_format_version_that_is_not_a_number_is_named(tmp_path: Path) -> None:
    write_store_info(tmp_path / "kb", embedder="hashing-256", format_version="two")
    expected = (
        f"{tmp_path / 'kb' / 'pathrag.sqlite'} records format_version 'two', not a number: its meta table is "
        "damaged (restore it from a backup, or rebuild the store in a new directory)"
    )
    with pytest.raises(StoreError) as refused:
        SQLiteStore(tmp_path / "kb")
    assert str(refused.value) == expected
    assert one_error_line(*cli("stats", "--store", tmp_path / "kb")).endswith(expected)


class _NoVectors:
    """An embedder that answers with no vector at all."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return []

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return []


class _Unnamed:
    """Hashing embeddings under no name: the store records none, so another embedder may open it."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return HashingEmbedder(32).embed(texts)

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


@pytest.mark.reliability
def test_an_embedder_returning_no_vectors_is_a_value_error_naming_it(tmp_path: Path) -> None:
    from pathrag import InMemoryVectorIndex, VectorItem
    from pathrag.sqlite import SQLiteVectorIndex

    for index in (
        InMemoryVectorIndex(_NoVectors()),
        SQLiteVectorIndex(SQLiteStore(tmp_path / "kb"), "entities", _NoVectors()),
    ):
        with pytest.raises(
            ValueError, match=r"^the embedder _NoVectors returned 0 vectors for 1 text: an embedder returns one vector"
        ):
            index.query("harbour", k=3)
        with pytest.raises(ValueError, match=r"returned 0 vectors for 2 texts"):
            index.upsert([VectorItem("a", "harbour"), VectorItem("b", "wall")])


@pytest.mark.reliability
def test_an_embedder_returning_no_vectors_fails_retrieval_in_one_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATHRAG_TOKENIZER", "approximate")  # no tokenizer download
    from pathrag import Entity

    index = PathRAGIndex(tmp_path / "kb", embedder=_Unnamed())  # no embeddings recorded: any embedder opens it
    index.add_records("d", [Entity(name="HARBOUR", type="place", description="A harbour.", source_ids=("c",))], [])
    index.close()
    index = PathRAGIndex(tmp_path / "kb", embedder=_NoVectors())
    try:
        with pytest.raises(ValueError, match="^the embedder _NoVectors returned 0 vectors for 1 text"):
            index.retrieve("harbour", keyword_llm=False)
    finally:
        index.close()


@pytest.mark.reliability
def test_a_garbled_store_file_is_named_with_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATHRAG_TOKENIZER", "approximate")  # no tokenizer download
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATHRAG_MODEL", "PATHRAG_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)
    fixture = Path(__file__).parents[1] / "fixtures" / "musique_small" / "openie_sample.json"
    assert cli("import", "openie", fixture, "--store", tmp_path / "kb")[0] == 0
    path = tmp_path / "kb" / "pathrag.sqlite"
    data = bytearray(path.read_bytes())
    page = 32768  # the store's page size: the schema and meta pages stay, every later page is garbage
    data[2 * page :] = bytes((i * 37 + 11) % 256 for i in range(len(data) - 2 * page))
    path.write_bytes(data)
    for command in (["stats"], ["paths", "Who founded the company?"]):
        line = one_error_line(*cli(*command, "--store", tmp_path / "kb"))
        assert str(path) in line and "restore it from a backup, or rebuild" in line, line


@pytest.mark.reliability
def test_a_run_dir_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("not a folder", encoding="utf-8")
    line = one_error_line(*cli("eval", "--store", tmp_path / "kb", "--run-dir", tmp_path / "run", "--offline"))
    assert line == (
        f"error: --run-dir: the run folder {tmp_path / 'run'} is not a folder: give a new folder, or an earlier "
        "run's to resume it"
    )
    line = one_error_line(*cli("eval", "--store", tmp_path / "kb", "--run-dir", tmp_path / "run" / "a", "--offline"))
    assert f"the run folder {tmp_path / 'run' / 'a'} is not a folder ({tmp_path / 'run'} is not a folder)" in line


@pytest.mark.reliability
def test_a_run_dir_that_is_a_file_is_refused_by_the_library(tmp_path: Path) -> None:
    from pathrag.eval import Evaluation, EvaluationError, OfflineEvalModel

    (tmp_path / "run").write_text("not a folder", encoding="utf-8")
    with pytest.raises(EvaluationError, match="is not a folder: give a new folder"):
        Evaluation(tmp_path / "run", llm=OfflineEvalModel(), configurations=[], passages=["text"])


@pytest.mark.reliability
@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ('{"question": "Why?"}\nHow so?\n', 2, "is not a JSON object of a question: expected one JSON object per line"),
        ('{"question": "Why?"}\n{"question": "How\n', 2, "is not a JSON object of a question"),
        ("Why?\n\n{not json}\n", 3, "is not a JSON object of a question: expected one question per line"),
        ('{"question": "Why?"}\n{"user": "u"}\n', 2, 'has no "question" text'),
    ],
)
def test_a_questions_file_line_that_is_not_a_question_is_named(
    tmp_path: Path, text: str, line: int, expected: str
) -> None:
    from pathrag.eval import EvaluationError, read_questions

    questions = tmp_path / "questions.jsonl"
    questions.write_text(text, encoding="utf-8")
    with pytest.raises(EvaluationError) as refused:
        read_questions(questions)
    assert str(refused.value).startswith(f"{questions} line {line} {expected}"), str(refused.value)
    args = ("eval", "--store", tmp_path / "kb", "--run-dir", tmp_path / "run", "--offline", "-q", questions)
    assert f"{questions} line {line} {expected}" in one_error_line(*cli(*args))
