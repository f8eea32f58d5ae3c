"""The compact extraction (issue 38): a short prompt, one record per line, one call per chunk, and its parser's
rules for sloppy answers; the same index, paths and store as the paper's prompt."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_socket

from pathrag import Document, HashingEmbedder, PathRAGIndex
from pathrag.index.compact import build_compact_prompt, parse_compact
from pathrag.index.extraction import DEFAULT_MAX_ANSWER_TOKENS, ExtractionConfig, build_extraction_prompt
from pathrag.llm.overflow import ContextOverflow
from pathrag.llm.tokens import count_tokens
from pathrag.testing.openai_stub import OpenAIStub

from .test_cli import no_key, run  # noqa: F401 (no_key: an autouse fixture)

CHUNK = "Mara Quill sails the Gull from Saltmere to Tarn Point."
ANSWER = """E|Mara Quill|person|A sailor who sails the Gull.
E|Gull|object|Mara Quill's boat.
E|Saltmere|location|Where Mara Quill sails from.
R|Mara Quill|Gull|sailing|Mara Quill sails the Gull.
R|Mara Quill|Saltmere|departure|Mara Quill sails from Saltmere.
END"""


def compact_index(answer, directory: Path | None = None) -> tuple[PathRAGIndex, list[str]]:
    prompts: list[str] = []

    async def llm(prompt: str) -> str:
        prompts.append(prompt)
        return answer(prompt) if callable(answer) else answer

    return PathRAGIndex(directory, llm=llm, embedder=HashingEmbedder(), extractor="compact"), prompts


def test_one_short_call_per_chunk_and_the_graph_answers() -> None:
    index, prompts = compact_index(ANSWER)
    summary = index.insert([CHUNK])
    assert (summary.entities, summary.relations, summary.llm_calls) == (3, 2, 1)
    assert prompts == [build_compact_prompt(CHUNK, ExtractionConfig())]
    paper = build_extraction_prompt(CHUNK, ExtractionConfig())
    assert count_tokens(prompts[0]) * 3 < count_tokens(paper)  # a third of the paper's prompt, or less
    result = index.retrieve("Where does Mara Quill sail from?", keyword_llm=False)
    assert any({"MARA QUILL", "SALTMERE"} <= set(path.nodes) for path in result.paths)


def test_sloppy_lines_are_read_and_bad_ones_counted() -> None:
    answer = """```
Here are the records:
- E | Mara Quill | Person | A sailor | who also mends nets.
1. r|Mara Quill|Saltmere|home port|Mara sails from Saltmere.
entity|Tarn Point|location|A headland.
E|Mara Quill
R|Mara Quill|Mara Quill|self|Not a relation.
E||person|No name.
END
E|After The End|person|Read too: a model echoing the prompt answers after the example's END.
```"""
    result = parse_compact(answer, chunk_id="c")
    assert [(e.name, e.type, e.description) for e in result.entities] == [
        ("MARA QUILL", "person", "A sailor|who also mends nets."),  # a "|" inside is kept
        ("TARN POINT", "location", "A headland."),
        ("AFTER THE END", "person", "Read too: a model echoing the prompt answers after the example's END."),
    ]
    assert [(r.pair, r.keywords, r.source_ids) for r in result.relations] == [
        (("MARA QUILL", "SALTMERE"), ("home port",), ("c",))
    ]
    assert result.skipped == 3
    assert parse_compact("", chunk_id="c") == parse_compact("I cannot help with that.")


def test_an_echoing_model_adds_nothing_and_records_for_another_text_go() -> None:
    index, _ = compact_index(lambda prompt: prompt)  # the prompt's own template lines, parroted
    summary = index.insert([CHUNK])
    assert (summary.entities, summary.relations) == (0, 0)
    echo_then_answer, _ = compact_index(lambda prompt: prompt + "\n" + ANSWER)  # the example's END, then its own
    summary = echo_then_answer.insert([CHUNK])
    assert summary.entities > 0 and summary.relations > 0  # the records after the echoed END are read
    other, _ = compact_index(ANSWER.replace("Saltmere", "Ossely"))
    summary = other.insert([CHUNK])
    assert (summary.records_ungrounded, summary.entities, summary.relations) == (2, 2, 1)


def test_the_record_cap_holds() -> None:
    flood = "\n".join(f"E|E{i}|person|Person {i}." for i in range(5_000))
    result = parse_compact(flood, max_records=200)
    assert (len(result.entities), result.dropped) == (200, 4_800)


def test_a_chunk_over_the_window_is_extracted_in_halves() -> None:
    chunk = "\n".join(f"Rower{i} Marr rows the ferry across the estuary." for i in range(30))
    window = len(build_compact_prompt("", ExtractionConfig())) + len(chunk) // 2 + 200

    def answer(prompt: str) -> str:
        if len(prompt) > window:
            raise ContextOverflow("the request exceeds the available context size")
        text = prompt.rsplit("Text:\n", 1)[1]
        return "\n".join(f"E|{n}|person|Rows." for n in re.findall(r"Rower\d+ Marr", text)) + "\nEND"

    index, prompts = compact_index(answer)
    summary = index.insert([Document(id="rowers", text=chunk)])
    assert (summary.entities, summary.failures, len(prompts)) == (30, [], 3)


def test_the_paper_prompt_and_the_compact_one_share_a_store(tmp_path: Path) -> None:
    paper = '("entity"<|>Mara Quill<|>person<|>A sailor.)<|COMPLETE|>'
    index = PathRAGIndex(tmp_path / "kb", llm=lambda prompt: paper, embedder=HashingEmbedder(), extractor="llm")
    index.insert([Document(id="mara", text=CHUNK)])
    index.close()
    # a store indexed by the paper's prompt (before the compact one was the default) is not paid for again
    index, prompts = compact_index(ANSWER, tmp_path / "kb")
    summary = index.insert([Document(id="mara", text=CHUNK)])
    assert (summary.unchanged, summary.llm_calls, prompts) == (1, 0, [])
    changed = index.insert([Document(id="mara", text=CHUNK + " She is back by noon.")])
    assert (changed.replaced, changed.entities, len(prompts)) == (["mara"], 3, 1)  # a changed one: compact
    assert index.check() == []
    index.close()
    lexical = PathRAGIndex(tmp_path / "kb", embedder=HashingEmbedder(), extractor="lexical")
    assert lexical.insert([Document(id="mara", text=CHUNK + " She is back by noon.")]).replaced == ["mara"]
    lexical.close()


@pytest.fixture
def socket_on() -> Iterator[None]:
    pytest_socket.enable_socket()  # the stand-in endpoint listens on loopback only
    yield
    pytest_socket.disable_socket(allow_unix_socket=True)


def test_pathrag_index_extractor_compact_through_an_openai_compatible_endpoint(
    socket_on: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "mara.md").write_text(CHUNK, encoding="utf-8")
    store = tmp_path / "kb"
    estimate = run("index", folder, "--store", store, "--estimate", "--extractor", "compact")
    assert estimate.exit_code == 0, estimate.output
    assert re.search(r"^  LLM calls +1$", estimate.stdout, re.M)
    with OpenAIStub(lambda prompt, max_tokens: ANSWER) as stub:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        result = run("index", folder, "--store", store, "--extractor", "compact", "--embedding-model", "hashing")
    assert result.exit_code == 0, result.output
    rows = dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", result.stdout, re.M))
    assert (rows["LLM calls"], rows["records not kept"]) == ("1", "0")
    assert [c.max_tokens for c in stub.calls] == [DEFAULT_MAX_ANSWER_TOKENS]


def test_a_relation_line_without_keywords_is_kept() -> None:
    result = parse_compact("R|Mara Quill|Saltmere|Mara sails from Saltmere.\nR|Mara Quill|Saltmere\nEND")
    assert [(r.pair, r.keywords, r.description) for r in result.relations] == [
        (("MARA QUILL", "SALTMERE"), (), "Mara sails from Saltmere.")
    ]
    assert result.skipped == 1
