"""examples/llama_index_quickstart.py runs offline, and its LlamaIndex pipeline retrieves what the core does."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

from llama_index_pathrag import HashingEmbedding, PathRAGRetriever
from pathrag import retrieve
from pathrag.demo import DEMO_PARAMS, ReplayLLM, load_questions, open_demo_index
from pathrag.query.context import result_context

EXAMPLE = Path(__file__).parents[2] / "examples" / "llama_index_quickstart.py"


@pytest.fixture
def example(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = importlib.util.spec_from_file_location("llama_index_quickstart", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # pydantic resolves the model's annotations there
    spec.loader.exec_module(module)
    return module


def test_quickstart_runs_offline_and_finds_the_expected_path(example, capsys):
    answer = example.main()
    out = capsys.readouterr().out
    assert "model: offline-demo" in out and "indexed 6 documents: 37 entities, 104 relations" in out
    # the demo's reference path for this question (shared/pathrag/demo_data/questions.json)
    assert "ODRIC PELHAM -> NORTH CHANNEL DREDGING -> LANTERN NIGHT FLOOD" in out
    assert answer.startswith("(offline stand-in model) The most reliable path is ODRIC PELHAM -> ") and answer in out


def test_llama_index_pipeline_retrieves_exactly_what_the_core_pipeline_does(example):
    llm = example.OfflineLLM(replay=ReplayLLM.from_directory())
    index = example.build_index(llm, HashingEmbedding())
    retriever = PathRAGRetriever(
        index.property_graph_store,
        vector_store=index.vector_store,
        embed_model=HashingEmbedding(),
        llm=llm,
        **dataclasses.asdict(DEMO_PARAMS),
    )
    core, _ = open_demo_index()  # the core: PathRAGIndex over the same recorded extractions
    try:
        for question in load_questions():
            ours = [
                (
                    n.node.metadata["kind"],
                    tuple(n.node.metadata["nodes"]),
                    round(n.node.metadata["raw_score"], 9),
                    n.node.text,
                )
                for n in retriever.retrieve(question.question)
            ]
            # the property graph holds no passages and no relation vectors: the core without them
            result = retrieve(
                question.question, graph=core.graph, entity_index=core.entity_index, llm=core.llm, params=DEMO_PARAMS
            )
            assert ours == [(i.kind, i.nodes, round(i.score, 9), i.text) for i in result_context(result).ranked]
            wanted = {tuple(question.expected_path), tuple(reversed(question.expected_path))}
            assert any(nodes in wanted for _, nodes, _, _ in ours)
    finally:
        core.close()
