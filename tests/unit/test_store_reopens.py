"""A store records its embeddings and reopens with them (issue 23): ``PathRAGIndex(directory)``,
``PathRAGIndexer.load(directory)`` and the ``pathrag`` command open a store without being given its
embeddings. ``hashing-<dim>`` is made again; an endpoint's (``openai:text-embedding-3-small``) is made on
first use, so what embeds nothing needs no key and what must embed fails clearly, leaving the store as it was.

The endpoint stores here are built offline: hashing vectors recorded under the endpoint's name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
from pathrag.demo import load_questions, open_demo_index
from pathrag.index.front import LazyEmbedder, MissingEmbedder, MissingEmbedderError
from pathrag.sqlite import STORE_FILE, SQLiteVectorIndex, read_store_info

from ..fakes import EndpointNamed, ScriptedLLM

ENDPOINT = "openai:text-embedding-3-small"
QUESTION = load_questions()[0].question
DOCS = [
    Document(
        id="a",
        chunks=(
            "ENTITY Mara | person | Harbour pilot.\nENTITY Saltmere | location | Fishing town.\n"
            "LINK Mara | Saltmere | Mara lives in Saltmere. | home | 6",
        ),
    ),
    Document(
        id="b",
        chunks=(
            "ENTITY Mara | pilot | Pilot of the Gull.\nENTITY Gull | object | A small boat.\n"
            "LINK Mara | Gull | Mara owns the Gull. | ownership | 5",
        ),
    ),
    Document(id="c", text="ENTITY Ida | person | Builds sea walls.\nLINK Ida | Saltmere | Ida works there. | work | 4"),
]


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATHRAG_MODEL", "PATHRAG_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)


def build(directory: Path, embedder, docs=DOCS) -> Path:
    index = PathRAGIndex(
        directory, llm=ScriptedLLM(), embedder=embedder, config=IndexConfig(summary_threshold_tokens=5)
    )
    index.insert(docs)
    index.close()
    return directory


def contents(directory: Path) -> dict:
    """Everything a commit decides, read with the embedder the store was built with."""
    index = PathRAGIndex(directory, embedder=HashingEmbedder(256), embedder_name=read_store_info(directory)["embedder"])
    try:
        return {
            "stats": index.stats(),
            "documents": {doc_id: doc.row() for doc_id, doc in sorted(index.documents.items())},
            "entities": sorted(e.model_dump_json() for e in index.graph.iter_entities()),
            "relations": sorted(r.model_dump_json() for r in index.graph.iter_relations()),
            "vectors": {n: sorted((i, v.get(i).text) for i in v.ids()) for n, v in index.vector_indexes.items()},
        }
    finally:
        index.close()


def paths(index: PathRAGIndex, question: str = "Mara") -> list:
    return [(p.nodes, round(p.score, 9)) for p in index.retrieve(question, keyword_llm=False, context="paths").paths]


# -- the core ----------------------------------------------------------------------------------------------


def test_a_hashing_store_reopens_with_its_own_embedder(tmp_path: Path) -> None:
    build(tmp_path, HashingEmbedder(64))
    given = PathRAGIndex(tmp_path, embedder=HashingEmbedder(64))
    alone = PathRAGIndex(tmp_path)
    assert isinstance(alone.entity_index, SQLiteVectorIndex)
    assert isinstance(alone.entity_index.embedder, HashingEmbedder) and alone.entity_index.embedder.dimensions == 64
    assert paths(alone) == paths(given) and paths(alone)
    writer = PathRAGIndex(tmp_path, llm=ScriptedLLM())  # a write with the recorded embedder
    assert writer.insert([Document(id="d", text="ENTITY Tide Board | organization | Runs the port.")]).documents == 1
    assert read_store_info(tmp_path)["embedder"] == "hashing-64" and alone.check() == []
    assert paths(alone, "Tide Board") == paths(given, "Tide Board")
    for index in (given, alone, writer):
        index.close()


def test_an_endpoint_store_opens_for_what_embeds_nothing(tmp_path: Path) -> None:
    build(tmp_path, EndpointNamed())
    before = contents(tmp_path)
    llm = ScriptedLLM()
    index = PathRAGIndex(tmp_path, llm=llm)
    assert isinstance(index.entity_index.embedder, MissingEmbedder)
    assert index.stats() == before["stats"] and index.check() == [] and sorted(index.documents) == ["a", "b", "c"]
    message = f"built with the embeddings '{ENDPOINT}', which pathrag cannot make: .*open it with embedder="
    with pytest.raises(MissingEmbedderError, match=message):
        index.retrieve("Mara", keyword_llm=False)
    # a write that must embed fails before any LLM call, and changes nothing
    with pytest.raises(MissingEmbedderError, match=message):
        index.insert([Document(id="d", text="ENTITY Tide Board | organization | Runs the port.")])
    assert llm.calls == 0 and contents(tmp_path) == before
    # deleting b changes Mara's merged description: it must be re-embedded, so the delete is rolled back
    with pytest.raises(MissingEmbedderError):
        index.delete(["b"])
    assert contents(tmp_path) == before and index.stats() == before["stats"]
    # deleting c removes Ida and her relation and changes no description: nothing to embed, it is done
    summary = index.delete(["c"])
    assert (summary.documents, summary.entities_removed, summary.relations_removed) == (1, 1, 1)
    assert index.check() == [] and read_store_info(tmp_path)["embedder"] == ENDPOINT
    index.close()
    # with the embeddings it was built with, it answers as before
    again = PathRAGIndex(tmp_path, embedder=EndpointNamed())
    assert paths(again) and again.stats()["documents"] == 2
    again.close()


async def test_async_reads_name_the_missing_embedder_too(tmp_path: Path) -> None:
    build(tmp_path, EndpointNamed())
    index = PathRAGIndex(tmp_path)
    with pytest.raises(MissingEmbedderError, match=ENDPOINT):
        await index.aretrieve("Mara", keyword_llm=False)
    index.close()


def test_a_store_that_records_no_embedder_opens_and_says_so(tmp_path: Path) -> None:
    class Nameless(EndpointNamed):
        name = None

    build(tmp_path, Nameless())
    assert "embedder" not in read_store_info(tmp_path)
    index = PathRAGIndex(tmp_path)
    assert index.stats()["documents"] == 3
    with pytest.raises(MissingEmbedderError, match="does not record which embeddings built it"):
        index.retrieve("Mara", keyword_llm=False)
    index.close()


def test_without_a_store_an_embedder_is_still_needed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="pass an embedder"):
        PathRAGIndex(llm=ScriptedLLM())
    with pytest.raises(ValueError, match="no store in .* yet"):
        PathRAGIndex(tmp_path / "new")
    assert not (tmp_path / "new").exists()  # nothing is created by the refusal


def test_a_lazy_embedder_is_made_once_and_its_error_comes_before_a_write(tmp_path: Path) -> None:
    made = []
    lazy = LazyEmbedder(lambda: made.append(1) or HashingEmbedder(256), ENDPOINT)
    build(tmp_path, EndpointNamed())
    index = PathRAGIndex(tmp_path, embedder=lazy)
    assert made == [] and index.stats()["documents"] == 3  # opened: nothing made yet
    assert paths(index) == paths(index) and made == [1]

    def no_key() -> HashingEmbedder:
        raise RuntimeError("no key")

    before = contents(tmp_path)
    llm = ScriptedLLM()
    failing = PathRAGIndex(tmp_path, llm=llm, embedder=LazyEmbedder(no_key, ENDPOINT))
    with pytest.raises(RuntimeError, match="no key"):
        failing.insert([Document(id="d", text="ENTITY Tide Board | organization | Runs the port.")])
    assert llm.calls == 0 and contents(tmp_path) == before
    index.close()
    failing.close()


# -- LangChain --------------------------------------------------------------------------------------------


def test_the_langchain_indexer_loads_a_store_without_embeddings(tmp_path: Path) -> None:
    from langchain_pathrag import PathRAGEmbeddings, PathRAGIndexer

    index, _ = open_demo_index(tmp_path / "kb")  # hashing-256, as `pathrag index` records it without a key
    index.close()
    loaded = PathRAGIndexer.load(tmp_path / "kb")
    given = PathRAGIndexer.load(tmp_path / "kb", embeddings=PathRAGEmbeddings(HashingEmbedder(256)))
    found = loaded.as_retriever(llm=None).invoke(QUESTION)
    assert found and [d.page_content for d in found] == [
        d.page_content for d in given.as_retriever(llm=None).invoke(QUESTION)
    ]
    loaded.close()
    given.close()
    with pytest.raises(FileNotFoundError, match="no PathRAG index"):
        PathRAGIndexer.load(tmp_path / "missing")


def test_the_langchain_indexer_makes_an_endpoints_embeddings_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_core.documents import Document as LCDocument
    from langchain_openai import OpenAIEmbeddings

    from langchain_pathrag import PathRAGIndexer
    from langchain_pathrag.adapters import LangChainEmbedder

    from ..langchain_fakes import ScriptedChatModel

    build(tmp_path, EndpointNamed())
    before = contents(tmp_path)
    llm = ScriptedChatModel()
    indexer = PathRAGIndexer.load(tmp_path, llm=llm)  # no key: it opens
    assert indexer.index.stats() == before["stats"] and [d.id for d in indexer.get_by_ids(["a", "c"])] == ["a", "c"]
    with pytest.raises(MissingEmbedderError, match=f"'{ENDPOINT}', which cannot be made here .*OPENAI_API_KEY"):
        indexer.as_retriever(llm=None).invoke("Mara")
    with pytest.raises(MissingEmbedderError, match="pass embeddings="):
        indexer.add_documents([LCDocument(page_content="ENTITY Tide Board | organization | Runs the port.")])
    assert llm.prompts == [] and contents(tmp_path) == before  # no extraction paid, nothing written
    indexer.close()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # with a key, LangChain's own embeddings of that model
    made = PathRAGIndexer.load(tmp_path).index.entity_index.embedder.ready()
    assert isinstance(made, LangChainEmbedder) and isinstance(made.embeddings, OpenAIEmbeddings)
    assert made.embeddings.model == "text-embedding-3-small"


# -- the command line -------------------------------------------------------------------------------------


def run(*args):
    from langchain_pathrag.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


def assert_one_line_error(result, *fragments: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_the_command_line_reads_an_endpoint_store_without_a_key(tmp_path: Path) -> None:
    store = tmp_path / "kb"
    index, _ = open_demo_index(store, embedder=EndpointNamed())
    index.close()
    assert read_store_info(store)["embedder"] == ENDPOINT
    before = contents(store)
    result = run("stats", "--store", store)
    assert result.exit_code == 0, result.output
    assert "text-embedding-3-small (OpenAI-compatible endpoint)" in result.stdout
    assert run("stats", "--check", "--store", store).exit_code == 0
    # a query must embed the question: one line naming the key, and the store is as it was
    assert_one_line_error(run("query", QUESTION, "--context-only", "--store", store), "OPENAI_API_KEY")
    assert_one_line_error(run("paths", QUESTION, "--store", store), "OPENAI_API_KEY")
    assert contents(store) == before and (store / STORE_FILE).exists()


def test_the_command_line_deletes_without_a_key_when_nothing_is_re_embedded(tmp_path: Path) -> None:
    store = build(tmp_path / "kb", EndpointNamed())
    before = contents(store)
    assert_one_line_error(run("delete", "b", "--store", store), "OPENAI_API_KEY")  # Mara must be re-embedded
    assert contents(store) == before
    result = run("delete", "c", "--store", store)
    assert result.exit_code == 0, result.output
    assert contents(store)["stats"]["documents"] == 2


def test_the_command_line_reads_a_store_that_records_no_embeddings(tmp_path: Path) -> None:
    class Nameless(EndpointNamed):
        name = None

    store = build(tmp_path / "kb", Nameless())
    assert run("stats", "--store", store).exit_code == 0
    assert_one_line_error(run("paths", "Mara", "--store", store), "does not say which embeddings it uses")
