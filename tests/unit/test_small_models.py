"""Small local models that work (issue 38): what a weak model does wrong is dropped, counted, and seen.

Scripted models play the failures met with real small models: parroting the prompt (the few-shot examples'
entities, the format's literal ``SOURCE``/``TARGET``; LlamaIndex's ``MockLLM`` answers with the prompt itself),
records with missing fields, records for another text, a runaway answer, and a prompt the model's window
cannot hold (HTTP 400 from an OpenAI-compatible server, here a real ``ChatOpenAI`` against a stand-in endpoint
on loopback).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_socket
from langchain_openai import ChatOpenAI
from llama_index.core.graph_stores.types import KG_NODES_KEY
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode

from langchain_pathrag import PathRAGEmbeddings, PathRAGIndexer
from llama_index_pathrag import PathRAGExtractor
from llama_index_pathrag.extractor import EXTRACTED_KEY
from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
from pathrag.index.extraction import DEFAULT_MAX_ANSWER_TOKENS, ExtractionConfig, build_extraction_prompt
from pathrag.llm.overflow import ContextOverflow
from pathrag.llm.prompts import EXTRACTION_EXAMPLES
from pathrag.models import Keywords
from pathrag.query.retrieval import retrieve
from pathrag.testing.openai_stub import OpenAIStub, StubError

from .test_cli import no_key, run  # noqa: F401 (no_key: an autouse fixture)

CHUNK = "Mara Quill sails the Gull from Saltmere to Tarn Point."
REAL = (
    '("entity"<|>Mara Quill<|>person<|>A sailor.)##("entity"<|>Saltmere<|>location<|>A harbour.)##'
    '("relationship"<|>Mara Quill<|>Saltmere<|>Mara sails from Saltmere.<|>sailing<|>7)'
)
PARROTED = EXTRACTION_EXAMPLES[0].output.format(
    tuple_delimiter="<|>", record_delimiter="##", completion_delimiter="<|COMPLETE|>"
)
PLACEHOLDERS = '("relationship"<|>SOURCE<|>TARGET<|>DESCRIPTION<|>KEYWORDS<|>STRENGTH)'
NO_GLEANING = IndexConfig(extraction=ExtractionConfig(max_gleaning=0))


def index_with(answer, config: IndexConfig = NO_GLEANING) -> PathRAGIndex:
    async def llm(prompt: str) -> str:
        return answer(prompt) if callable(answer) else answer

    return PathRAGIndex(llm=llm, embedder=HashingEmbedder(), config=config, extractor="llm")  # the paper's prompt


def names(index: PathRAGIndex) -> set[str]:
    return {e.name for e in index.graph.iter_entities()}  # type: ignore[attr-defined]


def test_a_model_answering_with_the_prompt_itself_adds_nothing() -> None:
    index = index_with(lambda prompt: prompt)  # every record of the prompt: examples and format lines
    summary = index.insert([CHUNK])
    assert (summary.entities, summary.relations, summary.failures) == (0, 0, [])
    # the format's two lines and the first example's 11 records (the answer ends at that example's end marker)
    assert summary.records_ungrounded == 13
    assert names(index) == set()


def test_parroted_and_placeholder_records_go_and_the_real_ones_stay() -> None:
    index = index_with(f"{REAL}##{PLACEHOLDERS}##{PARROTED}")  # the example ends with the end marker
    summary = index.insert([CHUNK])
    assert names(index) == {"MARA QUILL", "SALTMERE"}
    assert (summary.entities, summary.relations) == (2, 1)
    assert summary.records_ungrounded == 6 + 5 + 1  # the first example's entities and relations, SOURCE→TARGET


def test_valid_records_for_another_text_are_dropped_per_chunk() -> None:
    other = "Hedda Voss shows tide reckoning at Ossely."

    def answer(prompt: str) -> str:  # answers every chunk with the first example's records
        return PARROTED

    index = index_with(answer)
    summary = index.insert([Document(id="mara", text=CHUNK), Document(id="hedda", text=other)])
    assert {"HEDDA VOSS", "OSSELY", "TIDE RECKONING"} <= names(index)  # kept for the text that spells them
    assert not {"TOBIAH CRANE", "OSSELY FERRYMEN'S GUILD"} & names(index)  # that text does not name them
    assert summary.records_ungrounded > 11


def test_records_with_missing_fields_are_counted() -> None:
    answer = f'{REAL}##("entity"<|>Tarn Point)##("relationship"<|>Mara Quill<|>Tarn Point)<|COMPLETE|>'
    summary = index_with(answer).insert([CHUNK])
    assert (summary.records_skipped, summary.records_ungrounded, summary.entities) == (2, 0, 2)


def test_a_keyword_answer_copying_the_prompt_falls_back_to_the_question() -> None:
    index = index_with(REAL)
    index.insert([CHUNK])
    question = "Where does Mara Quill sail from?"
    for answer in (lambda prompt: prompt, lambda prompt: '{"high_level": ["x"], "low_level": ["Hedda Voss"]}'):
        index.llm = index_with(answer).llm
        assert index.retrieve(question, keyword_llm=True).keywords == Keywords(low_level=(question,))
    index.llm = index_with('{"high_level": ["sailing"], "low_level": ["Mara Quill"]}').llm
    assert index.retrieve(question, keyword_llm=True).keywords == Keywords(("sailing",), ("Mara Quill",))


def test_mock_llm_parroting_adds_nothing_and_says_so_in_the_chunk_metadata() -> None:
    node = TextNode(text=CHUNK, id_="chunk-1")
    PathRAGExtractor(llm=MockLLM())([node])  # MockLLM answers each prompt with the prompt itself
    assert node.metadata[KG_NODES_KEY] == []
    extracted = json.loads(node.metadata[EXTRACTED_KEY])
    # the compact prompt echoed: its example's five records and its two template lines, none named in the chunk
    assert extracted["entities"] == [] and extracted["ungrounded"] == 7


def test_mock_llm_keywords_fall_back_to_the_question() -> None:
    index = index_with(REAL)
    index.insert([CHUNK])
    from llama_index_pathrag.retriever import _LlamaLanguageModel  # the retriever's keyword model

    result = index.read_committed(
        lambda graph, indexes: retrieve(
            "Who sails from Saltmere?",
            graph=graph,
            entity_index=indexes["entities"],
            passage_index=indexes["chunks"],
            relation_index=indexes["relations"],
            llm=_LlamaLanguageModel(MockLLM()),
        )
    )
    assert result.keywords == Keywords(low_level=("Who sails from Saltmere?",))


# -- runaway answers and a window too small ------------------------------------------------------------


def test_a_runaway_answer_keeps_its_records_and_is_not_quoted_back() -> None:
    prompts: list[str] = []
    runaway = REAL + "##" + "la " * 500_000 + "<|COMPLETE|>"  # 1.5 MB: the 0.5B model's kind of answer

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return runaway

    summary = index_with(answer, IndexConfig()).insert([CHUNK])  # gleaning on: it would quote 1.5 MB back
    assert (summary.entities, summary.relations, summary.failures) == (2, 1, [])
    assert len(prompts) == 1  # no gleaning prompt built from it


def windowed(window: int, prompts: list[str]):
    """A model with a context window of ``window`` characters: a longer prompt is refused as such."""

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        if len(prompt) > window:
            raise ContextOverflow(f"the request exceeds the available context size ({len(prompt)} > {window})")
        text = prompt.rsplit("Text:\n", 1)[1]
        found = re.findall(r"\b[A-Z][a-z0-9]+ [A-Z][a-z]+\b", text)
        return "##".join(f'("entity"<|>{n}<|>person<|>Named in the text.)' for n in found) + "<|COMPLETE|>"

    return answer


def test_a_chunk_over_the_window_is_extracted_in_halves_and_keeps_every_record() -> None:
    people = [f"Sailor{i} Quill" for i in range(40)]
    chunk = "\n".join(f"{name} sails from Saltmere to Tarn Point every spring." for name in people)
    base = len(build_extraction_prompt("", ExtractionConfig()))
    prompts: list[str] = []
    index = index_with(windowed(base + len(chunk) // 2 + 200, prompts))
    summary = index.insert([Document(id="long", text=chunk), Document(id="short", text=CHUNK)])
    assert summary.failures == []
    assert {n.upper() for n in people} | {"MARA QUILL", "TARN POINT"} <= names(index)
    (long_chunk,) = [c for c, record in index.chunks.items() if record.text == chunk]
    cited = {s for e in index.graph.iter_entities() if e.name.startswith("SAILOR") for s in e.source_ids}
    assert cited == {long_chunk}  # the halves' records cite the chunk they come from
    assert len(prompts) == 1 + 2 + 1  # the whole (refused), its two halves, and the short chunk


def test_a_chunk_no_piece_of_which_fits_fails_alone_with_a_clear_error() -> None:
    prompts: list[str] = []
    index = index_with(windowed(len(build_extraction_prompt(CHUNK, ExtractionConfig())) + 10, prompts))
    long = " ".join(["Ida Marr rows the ferry across the estuary at night."] * 40)
    summary = index.insert([Document(id="long", text=long), Document(id="short", text=CHUNK)])
    (failure,) = summary.failures
    assert failure.document_ids == ("long",)
    assert "ContextOverflow" in failure.error and "larger window" in failure.error
    assert "MARA QUILL" in names(index)  # the other chunk of the same insert is kept


@pytest.fixture
def socket_on() -> Iterator[None]:
    pytest_socket.enable_socket()  # the suite blocks TCP; the stand-in endpoint listens on loopback only
    yield
    pytest_socket.disable_socket(allow_unix_socket=True)


def test_a_real_chat_openai_over_its_window_gets_http_400_and_the_chunk_is_halved(socket_on: None) -> None:
    people = [f"Rower{i} Marr" for i in range(30)]
    chunk = "\n".join(f"{name} rows the ferry across the estuary." for name in people)
    base = len(build_extraction_prompt("", ExtractionConfig()))
    refuse = windowed(base + len(chunk) // 2 + 300, [])

    def answer(prompt: str, max_tokens: int | None) -> str | StubError:
        try:
            return refuse(prompt)
        except ContextOverflow as exc:  # what llama.cpp's server answers
            return StubError(400, str(exc), "exceed_context_size_error")

    with OpenAIStub(answer) as stub:
        chat = ChatOpenAI(model="stub", base_url=stub.url, api_key="sk-test", max_retries=0)  # type: ignore[arg-type]
        indexer = PathRAGIndexer(chat, PathRAGEmbeddings(HashingEmbedder()), config=NO_GLEANING, extractor="llm")
        summary = indexer.index.insert([Document(id="rowers", text=chunk)])
    assert summary.failures == [] and summary.entities == 30
    assert [c.status for c in stub.calls] == [400, 200, 200]  # refused once, not retried as is
    assert {c.max_tokens for c in stub.calls} == {DEFAULT_MAX_ANSWER_TOKENS}  # every call has the output cap


def test_pathrag_index_reports_the_records_it_did_not_keep(
    socket_on: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "mara.md").write_text(CHUNK, encoding="utf-8")
    answer = f'{REAL}##{PLACEHOLDERS}##("entity"<|>Tarn Point)<|COMPLETE|>'
    with OpenAIStub(lambda prompt, max_tokens: answer if "Missing records" not in prompt else "<|COMPLETE|>") as stub:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        result = run("index", folder, "--store", tmp_path / "kb", "--embedding-model", "hashing", "--extractor", "llm")
    assert result.exit_code == 0, result.output
    rows = dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", result.stdout, re.M))
    assert rows["records not kept"] == "2 (1 malformed, 1 naming what their chunk never spells)"
    assert stub.calls and all(c.max_tokens == DEFAULT_MAX_ANSWER_TOKENS for c in stub.calls)
