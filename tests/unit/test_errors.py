"""The core's typed errors (``pathrag.errors``) carry their facts as fields, keep their messages, survive
pickling, and the command line words them from the fields."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from langchain_pathrag.cli.store import check_embeddings, locked_error
from pathrag import HashingEmbedder, PathRAGIndex
from pathrag.errors import EmbedderMismatch, MissingEmbedderError, StoreError, StoreFormatError, StoreLocked
from pathrag.indexing import MissingEmbedder
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
