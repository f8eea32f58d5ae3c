"""Cost visible before and after (issue 38): ``PathRAGIndex.estimate`` and ``pathrag index --estimate`` say what an
insert would spend with no model call and no write, and the summary of an insert says what it spent per document."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
from pathrag.demo import ReplayLLM, demo_data
from pathrag.index.estimate import chunk_cost
from pathrag.index.extraction import ExtractionConfig, build_extraction_prompt
from pathrag.llm.tokens import count_tokens

from .test_cli import assert_error, no_key, run  # noqa: F401 (no_key: an autouse fixture)

DATA = Path(str(demo_data()))
CORPUS = DATA / "corpus"


def demo_documents() -> list[Document]:
    return [Document(id=p.name, text=p.read_text(encoding="utf-8")) for p in sorted(CORPUS.glob("*.md"))]


def refusing_llm(prompt: str) -> str:
    raise AssertionError("an estimate called the model")


@pytest.mark.parametrize(("extractor", "max_calls"), [("compact", 6), ("llm", 12)])
def test_an_estimate_calls_no_model_and_comes_near_what_the_insert_spends(
    tmp_path: Path, extractor: str, max_calls: int
) -> None:
    index = PathRAGIndex(tmp_path / "kb", llm=refusing_llm, embedder=HashingEmbedder(), extractor=extractor)
    estimate = index.estimate(demo_documents())  # the demo's documents are too long to pack: one call each
    assert (estimate.documents, estimate.chunks_to_extract, estimate.calls, estimate.max_calls) == (6, 6, 6, max_calls)
    assert index.stats()["documents"] == 0  # nothing written
    index.llm = ReplayLLM.from_directory(DATA)
    summary = index.insert(demo_documents())
    assert summary.llm_calls <= estimate.max_calls
    assert 0.7 * summary.tokens <= estimate.tokens <= 1.3 * summary.tokens  # the answers are the estimated part
    again = index.estimate(demo_documents())  # what the store holds costs nothing
    assert (again.documents, again.unchanged, again.chunks_to_extract, again.calls, again.tokens) == (0, 6, 0, 0, 0)
    index.close()


def test_the_prompt_is_counted_exactly_and_gleaning_rounds_add_up() -> None:
    text = "Mara Quill sails the Gull from Saltmere to Tarn Point."
    one = chunk_cost(text, ExtractionConfig(max_gleaning=0))
    assert (one.calls, one.max_calls) == (1, 1)
    assert one.prompt_tokens == count_tokens(build_extraction_prompt(text, ExtractionConfig()))
    two = chunk_cost(text, ExtractionConfig(max_gleaning=2))
    assert two.max_calls == 3 and two.prompt_tokens > 3 * one.prompt_tokens
    capped = chunk_cost("word " * 5_000, ExtractionConfig(max_gleaning=0, max_answer_tokens=100))
    assert capped.completion_tokens == 100  # never more than the output cap


def test_the_lexical_extractor_costs_nothing() -> None:
    index = PathRAGIndex(embedder=HashingEmbedder(), extractor="lexical")
    estimate = index.estimate(demo_documents())
    assert (estimate.chunks_to_extract, estimate.calls, estimate.max_calls, estimate.tokens) == (6, 0, 0, 0)


def test_the_summary_reports_tokens_per_document(tmp_path: Path) -> None:
    result = run("index", CORPUS, "--store", tmp_path / "kb", "--replay", DATA)
    assert result.exit_code == 0, result.output
    rows = dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", result.stdout, re.M))
    total = int(rows["tokens (prompt + completion)"].split()[0].replace(",", ""))
    assert rows["tokens per document"] == f"{total / 6:,.0f}"


def test_pathrag_index_estimate_needs_no_key_and_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "kb"
    result = run("index", CORPUS, "--store", store, "--estimate")
    assert result.exit_code == 0, result.output
    assert not store.exists()
    rows = dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", result.stdout, re.M))
    assert (rows["documents to index"], rows["chunks to extract"], rows["LLM calls"]) == ("6", "6", "6")
    assert rows["prompt tokens"].startswith("about ")
    paper = run("index", CORPUS, "--store", store, "--estimate", "--extractor", "llm")
    assert dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", paper.stdout, re.M))["LLM calls"] == "6 to 12"  # gleaning
    # after a lexical index, the LLM would extract every document again; the lexical one nothing
    assert run("index", CORPUS, "--store", store, "--extractor", "lexical").exit_code == 0
    again = dict(
        re.findall(r"^  (\S.*?\S)  +(\S.*)$", run("index", CORPUS, "--store", store, "--estimate").stdout, re.M)
    )
    assert again["documents to index"] == "6"
    lexical = run("index", CORPUS, "--store", store, "--estimate", "--extractor", "lexical")
    rows = dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", lexical.stdout, re.M))
    assert (rows["documents to index"], rows["documents unchanged"], rows["chunks to extract"]) == ("0", "6", "0")


@pytest.mark.parametrize("case", ["empty folder", "unreadable file"])
def test_pathrag_index_estimate_on_nothing_readable_is_one_line(tmp_path: Path, case: str) -> None:
    target = tmp_path / "docs"
    target.mkdir()
    if case == "unreadable file":
        target = target / "latin1.txt"
        target.write_bytes("caf\xe9 au lait".encode("latin-1"))
    result = run("index", target, "--store", tmp_path / "kb", "--estimate")
    assert_error(result, 1, "no text" if case == "empty folder" else "cannot read")
    assert not (tmp_path / "kb").exists()


def test_the_estimate_reads_the_same_config_as_the_insert() -> None:
    config = IndexConfig(extraction=ExtractionConfig(max_gleaning=0))
    estimate = PathRAGIndex(embedder=HashingEmbedder(), config=config).estimate(["Mara Quill sails."])
    assert (estimate.calls, estimate.max_calls) == (1, 1)
