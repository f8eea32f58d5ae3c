"""Every retrieval setting reaches the core, from every entry point (issue 11).

``CHANGED`` gives each field of :class:`pathrag.RetrievalParams` a value other than its default; a test
fails until a new field is added there, and then proves that the LangChain retriever (constructor and
per call), the LlamaIndex retriever and the command line (``--param``) all hand it to the core. What
reaches the core is the settings the retrieval itself (``pathrag.query.retrieval._retrieval``, what
:func:`~pathrag.query.retrieval.retrieve` and :func:`~pathrag.query.retrieval.aretrieve` run) is given.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.vectorstores import InMemoryVectorStore
from typer.testing import CliRunner

import pathrag.query.retrieval
from langchain_pathrag import PathRAGEmbeddings, PathRAGIndexer, PathRAGRetriever
from langchain_pathrag.cli import app
from llama_index_pathrag import HashingEmbedding
from llama_index_pathrag import PathRAGRetriever as LlamaPathRAGRetriever
from pathrag import Entity, HashingEmbedder, NetworkXGraphStore, PathParams, PathRAGIndex, Relation, RetrievalParams

from .test_llama_index_retrieval import hand_built

CHANGED = {
    "alpha": 0.7,
    "theta": 0.02,
    "max_hops": 2,
    "top_k": 4,
    "paths_per_pair": 3,
    "directed": True,
    "num_seeds": 7,
    "context": "paths",
    "num_passages": 9,
    "num_relations": 50,
    "max_tokens": 900,
    "more_paths": False,
}
#: Applied by the index around the core's retrieval, never by the core (pathrag.index.sources): its entry
#: points are tested in test_filters.py.
AROUND_THE_CORE = {"filter"}


def test_every_setting_has_a_changed_value_and_one_place_holds_the_defaults() -> None:
    assert set(CHANGED) | AROUND_THE_CORE == set(RetrievalParams.names())  # a new field: give it a value here
    defaults = RetrievalParams()
    assert all(CHANGED[name] != getattr(defaults, name) for name in CHANGED)
    assert set(PathParams.names()) < set(RetrievalParams.names())  # the path search's settings, extended
    with pytest.raises(ValueError, match="theta"):
        RetrievalParams(theta=-1)
    with pytest.raises(ValueError, match="directed must be True or False"):
        RetrievalParams(directed="false")


@pytest.fixture
def reached(monkeypatch: pytest.MonkeyPatch) -> list[RetrievalParams]:
    """The settings each retrieval is run with, in order."""
    seen: list[RetrievalParams] = []
    retrieval = pathrag.query.retrieval._retrieval

    def recording(*arguments):  # the settings are its last argument
        seen.append(arguments[-1])
        return retrieval(*arguments)

    monkeypatch.setattr(pathrag.query.retrieval, "_retrieval", recording)
    return seen


def langchain_sources() -> dict:
    graph = NetworkXGraphStore()
    graph.upsert_relations([Relation(source="MARA", target="GULL", description="Mara owns the Gull.")])
    store = InMemoryVectorStore(PathRAGEmbeddings(HashingEmbedder(64)))
    store.add_texts(["MARA", "GULL"], metadatas=[{"name": "MARA"}, {"name": "GULL"}])
    return {"graph_store": graph, "entity_index": store}


async def test_the_langchain_retriever_passes_every_setting(reached: list[RetrievalParams]) -> None:
    retriever = PathRAGRetriever(**langchain_sources(), **CHANGED)
    assert retriever.params == RetrievalParams(**CHANGED)
    retriever.invoke("Mara")
    await retriever.ainvoke("Mara")
    per_call = PathRAGRetriever(**langchain_sources())
    per_call.invoke("Mara", **CHANGED)
    await per_call.ainvoke("Mara", **CHANGED)
    assert reached == [RetrievalParams(**CHANGED)] * 4
    reached.clear()
    for name, value in CHANGED.items():  # one at a time, by keyword and through search_kwargs
        PathRAGRetriever(**langchain_sources(), **{name: value}).invoke("Mara")
        PathRAGIndexer(embeddings=PathRAGEmbeddings(HashingEmbedder(64))).as_retriever(
            search_kwargs={name: value}
        ).invoke("Mara")
    assert reached == [RetrievalParams(**{name: value}) for name, value in CHANGED.items() for _ in range(2)]


async def test_the_llama_index_retriever_passes_every_setting(reached: list[RetrievalParams]) -> None:
    store, vectors = hand_built()
    retriever = LlamaPathRAGRetriever(store, vector_store=vectors, embed_model=HashingEmbedding(64), **CHANGED)
    retriever.retrieve("How is Mara Vello connected to the Great Surge?")
    await retriever.aretrieve("How is Mara Vello connected to the Great Surge?")
    given = LlamaPathRAGRetriever(
        store, vector_store=vectors, embed_model=HashingEmbedding(64), params=RetrievalParams(**CHANGED)
    )
    given.retrieve("How is Mara Vello connected to the Great Surge?")
    assert reached == [RetrievalParams(**CHANGED)] * 3


def test_the_command_line_passes_every_setting(
    tmp_path: Path, reached: list[RetrievalParams], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    index = PathRAGIndex(tmp_path / "kb", embedder=HashingEmbedder(256))
    index.add_records(
        "facts",
        [Entity(name="MARA", description="A pilot.")],
        [Relation(source="MARA", target="GULL", description="Mara owns the Gull.")],
    )
    index.close()
    settings = [
        arg
        for name, value in CHANGED.items()
        for arg in ("--param", f"{name}={value if isinstance(value, str) else json.dumps(value)}")
    ]
    result = CliRunner().invoke(app, ["query", "Mara?", "--store", str(tmp_path / "kb"), "--context-only", *settings])
    assert result.exit_code == 0, result.output
    assert reached == [RetrievalParams(**CHANGED)]
    # the named options are the same settings; --param wins over them
    reached.clear()
    result = CliRunner().invoke(
        app,
        [
            "query",
            "Mara?",
            "--store",
            str(tmp_path / "kb"),
            "--context-only",
            "--top-k",
            "2",
            "--theta",
            "0.1",
            "--param",
            "theta=0.2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert reached == [RetrievalParams(top_k=2, theta=0.2)]
    for bad, message in (
        ("thета=1", "unknown retrieval parameter"),
        ("theta", "NAME=VALUE"),
        ("max_hops=0", "max_hops must be an int from 1 to 32 or None"),
    ):
        result = CliRunner().invoke(app, ["paths", "Mara?", "--store", str(tmp_path / "kb"), "--param", bad])
        assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output, result.output
