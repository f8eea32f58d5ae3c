"""Errors that name the API's own parameters (issue 37, item 10): a store opened without its embeddings asks
for them by the name the opening API takes, and ``pathrag delete`` accepts a document's path as typed from
another folder, or says which ids come close."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from langchain_pathrag import PathRAGIndexer
from langchain_pathrag.cli import app
from llama_index_pathrag import PathRAGIndexRetriever
from pathrag import Document, HashingEmbedder, PathRAGIndex
from pathrag.demo import demo_data
from pathrag.errors import MissingEmbedderError

from ..fakes import EndpointNamed, ScriptedLLM

DATA = Path(str(demo_data()))


class Nameless(EndpointNamed):
    """Vectors a store cannot name: reopened without them, it cannot embed."""

    name = None  # type: ignore[assignment]


@pytest.fixture
def nameless_store(tmp_path: Path) -> Path:
    index = PathRAGIndex(tmp_path / "store", llm=ScriptedLLM(), embedder=Nameless())
    index.insert(
        [Document(id="a", text="ENTITY Mara | person | Harbour pilot.\nLINK Mara | Gull | Owns it. | own | 5")]
    )
    index.close()
    return tmp_path / "store"


def test_each_api_asks_for_the_embeddings_by_its_own_parameter(nameless_store: Path) -> None:
    core = PathRAGIndex(nameless_store)
    with pytest.raises(MissingEmbedderError, match="open it with embedder= the same embeddings"):
        core.retrieve("Mara")
    core.close()
    indexer = PathRAGIndexer.load(nameless_store)
    with pytest.raises(MissingEmbedderError, match="open it with embeddings= the same embeddings"):
        indexer.as_retriever().invoke("Mara")
    indexer.close()
    retriever = PathRAGIndexRetriever.from_store(nameless_store)
    with pytest.raises(MissingEmbedderError, match="open it with embed_model= the same embeddings"):
        retriever.retrieve("Mara")
    retriever.close()


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def store(tmp_path: Path) -> Path:
    docs = tmp_path / "project" / "docs"
    (docs / "a").mkdir(parents=True)
    (docs / "b").mkdir()
    for folder, name in (("a", "02-greyfen-expansion-plan.md"), ("b", "02-greyfen-expansion-plan.md")):
        (docs / folder / "plan.md").write_text((DATA / "corpus" / name).read_text(encoding="utf-8"), encoding="utf-8")
    (docs / "notes.md").write_text(
        (DATA / "corpus" / "03-tarn-point-field-notes.md").read_text(encoding="utf-8"), encoding="utf-8"
    )
    result = run("index", docs, "--store", tmp_path / "store", "--replay", DATA)
    assert result.exit_code == 0, result.output
    return tmp_path / "store"


def _documents(store: Path) -> list[str]:
    index = PathRAGIndex(store, embedder=HashingEmbedder(256))
    try:
        return sorted(index.documents)
    finally:
        index.close()


def test_delete_takes_a_documents_path_as_typed_from_another_folder(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _documents(store) == ["docs/a/plan.md", "docs/b/plan.md", "docs/notes.md"]
    elsewhere = tmp_path / "project" / "scripts"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = run("delete", "../docs/notes.md", "--store", store)
    assert result.exit_code == 0, result.output
    assert "'../docs/notes.md' is the document docs/notes.md" in result.stderr
    assert _documents(store) == ["docs/a/plan.md", "docs/b/plan.md"]
    absolute = run("delete", tmp_path / "project" / "docs" / "a" / "plan.md", "--store", store)
    assert absolute.exit_code == 0, absolute.output
    assert _documents(store) == ["docs/b/plan.md"]


def test_delete_names_the_ids_an_unknown_argument_comes_close_to(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("delete", "elsewhere/plan.md", "--store", store)
    assert result.exit_code == 1
    assert "no document 'elsewhere/plan.md' (ids with that file name: docs/a/plan.md, docs/b/plan.md)" in result.stderr
    assert "documents are named by their path as indexed" in result.stderr and "Traceback" not in result.output
    assert _documents(store) == ["docs/a/plan.md", "docs/b/plan.md", "docs/notes.md"]  # nothing deleted
