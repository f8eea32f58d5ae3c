"""Small chunks packed into one compact call (issue 38): each record still traced to its own chunk, the cache
still per chunk, and one chunk's bad answer never costing another its records."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
from pathrag.index.compact import build_compact_prompt
from pathrag.index.extraction import PACK_TOKENS, ExtractionConfig
from pathrag.index.packing import build_packed_prompt, extract_pack, packs, split_sections
from pathrag.llm.overflow import ContextOverflow
from pathrag.llm.tokens import count_tokens

from .test_cli import no_key, run  # noqa: F401 (no_key: an autouse fixture)

TEXTS = {
    "a": "Ida Marr rows with Tom Vell on the Tarn.",
    "b": "Oska Lind sails with Pia Holm to Saltmere.",
    "c": "Bern Ault builds boats for Ida Marr.",
}
NAME = re.compile(r"[A-Z][a-z]+ [A-Z][a-z]+|Tarn|Saltmere")
SECTION = re.compile(r"^### Text (\d+)\n(.*?)(?=\n\n### Text |\n$)", re.S | re.M)


def records_of(text: str) -> list[str]:
    """What a faithful model writes for ``text``: its names, and a relation between the first two."""
    names = NAME.findall(text)
    lines = [f"E|{name}|person|Named in: {text}" for name in names]
    return [*lines, f"R|{names[0]}|{names[1]}|together|{text}"]


def texts_of(prompt: str) -> list[str]:
    """The texts of a packed prompt, or the one text of a single-chunk prompt."""
    if "\nTexts:\n" in prompt:
        return [m.group(2) for m in SECTION.finditer(prompt.rsplit("\nTexts:\n", 1)[1])]
    return [prompt.rsplit("Text:\n", 1)[1].rstrip("\n")]


def faithful(prompt: str) -> str:
    texts = texts_of(prompt)
    if "\nTexts:\n" not in prompt:
        return "\n".join(records_of(texts[0])) + "\nEND"
    return "\n".join(f"### Text {n}\n" + "\n".join(records_of(t)) for n, t in enumerate(texts, 1)) + "\nEND"


def index_with(
    answer: Callable[[str], str], directory: Path | None = None, attempts: int = 4, **extraction: int
) -> tuple[PathRAGIndex, list[str]]:
    prompts: list[str] = []

    async def llm(prompt: str) -> str:
        prompts.append(prompt)
        return answer(prompt)

    extraction.setdefault("pack_tokens", PACK_TOKENS)
    config = IndexConfig(extraction=ExtractionConfig(**extraction), max_concurrency=1, max_attempts=attempts)
    return PathRAGIndex(directory, llm=llm, embedder=HashingEmbedder(), extractor="compact", config=config), prompts


def docs(*ids: str) -> list[Document]:
    return [Document(id=i, text=TEXTS[i]) for i in ids]


def chunk_records(index: PathRAGIndex, doc_id: str) -> tuple[set[str], set[tuple[str, str]]]:
    chunk = index.chunks[index.documents[doc_id].chunks[0]]
    return {e["name"] for e in chunk.entities}, {(r["source"], r["target"]) for r in chunk.relations}


def test_small_chunks_share_one_call_and_keep_their_own_records() -> None:
    index, prompts = index_with(faithful)
    summary = index.insert(docs("a", "b", "c"))
    assert (summary.llm_calls, summary.chunks_extracted, summary.failures) == (1, 3, [])
    assert prompts == [build_packed_prompt(list(TEXTS.values()), ExtractionConfig(pack_tokens=PACK_TOKENS))]
    assert chunk_records(index, "a") == ({"IDA MARR", "TOM VELL", "TARN"}, {("IDA MARR", "TOM VELL")})
    assert chunk_records(index, "b") == ({"OSKA LIND", "PIA HOLM", "SALTMERE"}, {("OSKA LIND", "PIA HOLM")})
    ida = index.graph.get_entities(["IDA MARR"])["IDA MARR"]  # named in a and c: both chunks are its sources
    assert set(ida.source_ids) == {index.documents["a"].chunks[0], index.documents["c"].chunks[0]}


def test_packs_stop_at_the_budget_and_a_long_chunk_goes_alone() -> None:
    chunks = [("a", "word " * 40), ("b", "word " * 40), ("c", "word " * 40), ("d", "word " * 500)]
    assert [[cid for cid, _ in p] for p in packs(chunks, budget=100)] == [["a", "b"], ["c"], ["d"]]
    assert [len(p) for p in packs(chunks, budget=0)] == [1, 1, 1, 1]  # pack_tokens=0 (the default): every chunk alone
    index, prompts = index_with(faithful, pack_tokens=0)
    assert index.insert(docs("a", "b")).llm_calls == 2
    assert prompts == [build_compact_prompt(TEXTS[i], ExtractionConfig()) for i in "ab"]


def test_records_for_another_text_are_dropped_there_and_counted() -> None:
    def swapped(prompt: str) -> str:  # text 2's section holds text 1's records too
        texts = texts_of(prompt)
        return (
            f"### Text 1\n{chr(10).join(records_of(texts[0]))}\n### Text 2\n{chr(10).join(records_of(texts[0]))}\nEND"
        )

    index, _ = index_with(swapped)
    summary = index.insert(docs("a", "b"))
    assert summary.records_ungrounded == 4  # three entities and a relation, none of them named in b
    assert chunk_records(index, "a")[0] == {"IDA MARR", "TOM VELL", "TARN"}
    assert chunk_records(index, "b") == (set(), set())


def test_a_text_the_answer_leaves_out_is_asked_again_alone() -> None:
    def cut_short(prompt: str) -> str:  # as an answer stopped by the output cap: the last text never comes
        if "\nTexts:\n" not in prompt:
            return faithful(prompt)
        return "### Text 1\n" + "\n".join(records_of(texts_of(prompt)[0])) + "\n### Text 2\nE|Oska Li"

    index, prompts = index_with(cut_short)
    summary = index.insert(docs("a", "b", "c"))
    assert (summary.llm_calls, summary.failures) == (2, [])
    assert prompts[1] == build_compact_prompt(TEXTS["c"], ExtractionConfig())
    assert chunk_records(index, "c")[0] == {"BERN AULT", "IDA MARR"}
    assert chunk_records(index, "b")[0] == {"OSKA LI"} - {"OSKA LI"}  # a half name is no name in b


def test_a_model_that_ignores_the_headers_has_each_text_asked_alone() -> None:
    def headerless(prompt: str) -> str:
        return "\n".join(line for t in texts_of(prompt) for line in records_of(t)) + "\nEND"

    index, prompts = index_with(headerless)
    summary = index.insert(docs("a", "b"))
    assert summary.llm_calls == 3  # the pack, then each text alone
    assert summary.records_skipped == 8  # the pack's records under no header: no text's, counted once
    assert chunk_records(index, "a")[0] == {"IDA MARR", "TOM VELL", "TARN"}
    assert chunk_records(index, "b")[0] == {"OSKA LIND", "PIA HOLM", "SALTMERE"}


def test_an_overflowing_pack_is_split_down_to_single_chunks() -> None:
    window = len(build_packed_prompt(list(TEXTS.values())[:2], ExtractionConfig()))

    def small_window(prompt: str) -> str:
        if len(prompt) > window:
            raise ContextOverflow("the request exceeds the available context size")
        return faithful(prompt)

    index, prompts = index_with(small_window)
    summary = index.insert(docs("a", "b", "c"))
    assert (summary.chunks_extracted, summary.failures) == (3, [])
    assert len(prompts) == 3  # the pack of three (refused), a alone, a pack of b and c
    assert chunk_records(index, "c")[0] == {"BERN AULT", "IDA MARR"}


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "I cannot help with that.",
        "x" * 1_000_000,
        "### Text 1\n" + "\n".join(f"E|Name {i}|person|Invented." for i in range(5_000)) + "\n### Text 2\nEND",
    ],
    ids=["empty", "refusal", "1 MB", "flood"],
)
def test_a_bad_packed_answer_never_crashes_nor_loses_the_other_chunks(answer: str) -> None:
    def bad_pack(prompt: str) -> str:
        return answer if "\nTexts:\n" in prompt else faithful(prompt)

    index, _ = index_with(bad_pack)
    summary = index.insert(docs("a", "b"))
    assert summary.failures == []
    assert chunk_records(index, "b")[0] == (set() if "### Text 2" in answer else {"OSKA LIND", "PIA HOLM", "SALTMERE"})
    if answer.startswith("### Text 1"):  # the flood is capped and ungrounded in a; b had its (empty) section
        assert summary.records_dropped + summary.records_ungrounded >= 5_000
    else:  # no section for either text: both asked alone, both extracted
        assert chunk_records(index, "a")[0] == {"IDA MARR", "TOM VELL", "TARN"}


def test_a_failed_pack_fails_its_chunks_only() -> None:
    def down_for_b(prompt: str) -> str:
        if "Oska Lind" in prompt:
            raise ConnectionError("the model went away")
        return faithful(prompt)

    budget = count_tokens(TEXTS["a"]) + count_tokens(TEXTS["b"])  # a and b fill one pack, c another
    index, _ = index_with(down_for_b, attempts=1, pack_tokens=budget)
    summary = index.insert(docs("a", "b", "c"))
    assert sorted(f.document_ids for f in summary.failures) == [("a",), ("b",)]
    assert chunk_records(index, "c")[0] == {"BERN AULT", "IDA MARR"}


def test_each_chunk_s_share_is_cached_by_its_own_prompt(tmp_path: Path) -> None:
    index, prompts = index_with(faithful, tmp_path / "kb")
    index.insert(docs("a", "b"))
    index.delete(["a", "b"])
    index.close()
    index, prompts = index_with(faithful, tmp_path / "kb")
    summary = index.insert(docs("a", "c"))  # a met again with another neighbour: its share comes from the cache
    assert (summary.llm_calls, summary.cache_hits) == (1, 1)
    assert prompts == [build_compact_prompt(TEXTS["c"], ExtractionConfig())]
    assert chunk_records(index, "a")[0] == {"IDA MARR", "TOM VELL", "TARN"}
    index.close()


def test_the_estimate_counts_one_call_per_pack() -> None:
    index, prompts = index_with(faithful)
    estimate = index.estimate(docs("a", "b", "c"))
    assert (estimate.chunks_to_extract, estimate.calls, estimate.max_calls) == (3, 1, 1)
    assert prompts == []
    alone, _ = index_with(faithful, pack_tokens=0)
    assert alone.estimate(docs("a", "b", "c")).calls == 3
    assert alone.estimate(docs("a", "b", "c")).prompt_tokens > 2 * estimate.prompt_tokens


def test_sections_are_read_leniently() -> None:
    answer = "Sure!\n**Text 1:**\nE|a|x|y\n[Text 2]\nE|b|x|y\n## text 1\nE|c|x|y\nText 7\nE|d|x|y"
    sections, loose = split_sections(answer, 2)
    assert sections == {1: "E|a|x|y\nE|c|x|y", 2: "E|b|x|y"}
    assert loose == "Sure!\nE|d|x|y"


def test_extract_pack_works_with_a_plain_function() -> None:
    async def ask(prompt: str) -> str:
        return faithful(prompt)

    done = asyncio.run(extract_pack([("a", TEXTS["a"]), ("b", TEXTS["b"])], ask, ExtractionConfig()))
    assert [sorted(e.name for e in d.result.entities) for d in done if not isinstance(d, Exception)] == [
        ["IDA MARR", "TARN", "TOM VELL"],
        ["OSKA LIND", "PIA HOLM", "SALTMERE"],
    ]


def test_pathrag_index_packs_with_pack_and_refuses_a_negative_one(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in TEXTS.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")

    def calls(*options: str) -> str:
        result = run("index", folder, "--store", tmp_path / "kb", "--estimate", *options)
        assert result.exit_code == 0, result.output
        return dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", result.stdout, re.M))["LLM calls"]

    assert (calls(), calls("--pack", "1200"), calls("--pack", "1200", "--extractor", "llm")) == ("3", "1", "3 to 6")
    said = run("index", folder, "--store", tmp_path / "kb", "--estimate").stdout
    assert "not counted: answers cached" in said and "gleaning" not in said  # the compact prompt gleans nothing
    refused = run("index", folder, "--store", tmp_path / "kb", "--pack", "-1", "--extractor", "lexical")
    assert refused.exit_code == 2 and "--pack must be 0" in refused.output


def test_a_model_echoing_the_packed_prompt_adds_nothing_and_says_so() -> None:
    index, _ = index_with(lambda prompt: prompt if "\nTexts:\n" in prompt else faithful(prompt))
    summary = index.insert([*docs("b"), Document(id="h", text="Hal Brenn farms with Una Kell near Kelso.")])
    # the example's records come back under its own "### Text 1/2" headers: named in neither text, all dropped
    assert (summary.failures, summary.entities, summary.relations) == ([], 0, 0)
    assert summary.records_ungrounded > 0 and summary.records_skipped > 0  # the template lines, under no text
