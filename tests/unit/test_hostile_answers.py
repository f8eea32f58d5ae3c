"""Hostile extraction answers and text stay bounded and storable: a 1 MB description, 100,000 records for one
chunk, lone surrogates (README, reliability table)."""

from __future__ import annotations

import pytest

from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
from pathrag.index.rebuild import UNSUMMARISED_MAX_CHARS
from pathrag.llm.prompts import SUMMARY_INPUT_MAX_CHARS, build_summary_prompt

pytestmark = pytest.mark.reliability

HUGE = "Mara keeps the harbour light burning. " * 26_000  # about 1 MB


class HostileLLM:
    """Answers the first chunk normally, the second with a 1 MB description of the same entity; summary
    calls fail (``fail_summaries``) or answer with a short text."""

    def __init__(self, *, fail_summaries: bool) -> None:
        self.fail_summaries = fail_summaries
        self.summary_prompts: list[str] = []

    async def acomplete(self, prompt: str) -> str:
        if prompt.rstrip().endswith("Merged description:"):
            self.summary_prompts.append(prompt)
            if self.fail_summaries:
                raise ConnectionError("summary endpoint down")
            return "Mara is a harbour pilot."
        if "Missing records:" in prompt:
            return "<|COMPLETE|>"
        description = HUGE if "second" in prompt.rsplit("Text:", 1)[-1] else "A harbour pilot."
        return (
            f'("entity"<|>Mara<|>person<|>{description})##\n'
            '("entity"<|>Saltmere<|>location<|>A fishing town.)##\n'
            '("relationship"<|>Mara<|>Saltmere<|>Mara lives in Saltmere.<|>home<|>6)<|COMPLETE|>'
        )


def make(llm: HostileLLM) -> PathRAGIndex:
    config = IndexConfig(retry_initial_wait=0.001, retry_max_wait=0.002, max_attempts=1)
    return PathRAGIndex(llm=llm.acomplete, embedder=HashingEmbedder(64), config=config, extractor="llm")


async def test_a_1mb_description_gets_a_bounded_prompt_and_a_bounded_description_when_the_summary_fails():
    llm = HostileLLM(fail_summaries=True)
    index = make(llm)
    await index.ainsert([Document(id="a", text="first: Mara lives in Saltmere.")])
    await index.ainsert([Document(id="b", text="second: Mara again.")])
    assert llm.summary_prompts, "the long description asks for a summary"
    assert all(len(p) < SUMMARY_INPUT_MAX_CHARS + 2_000 for p in llm.summary_prompts)
    described = index.graph.get_entities(["MARA"])["MARA"].description
    assert len(described) <= UNSUMMARISED_MAX_CHARS and described.endswith(" …")
    assert described.startswith("A harbour pilot. Mara keeps the harbour light burning.")


async def test_a_1mb_description_is_summarised_from_a_bounded_prompt():
    llm = HostileLLM(fail_summaries=False)
    index = make(llm)
    await index.ainsert([Document(id="a", text="first: Mara lives in Saltmere.")])
    await index.ainsert([Document(id="b", text="second: Mara again.")])
    assert [len(p) < 10_000 for p in llm.summary_prompts] == [True]  # one 4,000-character description cap
    assert index.graph.get_entities(["MARA"])["MARA"].description == "Mara is a harbour pilot."


def test_summary_prompt_caps_each_description_and_the_list():
    normal = ["A navigator.", "Sails the {Meridian}."]
    assert build_summary_prompt("ALICE", normal) == build_summary_prompt("ALICE", list(normal))
    assert "- A navigator.\n- Sails the {Meridian}.\n" in build_summary_prompt("ALICE", normal)
    prompt = build_summary_prompt("ALICE", [f"Fact {i}: " + "x" * 5_000 for i in range(1_000)])
    assert len(prompt) < SUMMARY_INPUT_MAX_CHARS + 2_000
    assert "more descriptions left out" in prompt and "Fact 0: xxx" in prompt


async def test_100000_records_for_a_40_character_chunk_keep_the_cap_and_count_the_rest(tmp_path):
    import time

    records = [f'("entity"<|>E{i}<|>person<|>Person {i}.)' for i in range(50_000)]
    records += [f'("relationship"<|>E{i}<|>E{i + 1}<|>Knows.<|>knows<|>5)' for i in range(50_000)]
    flood = "##\n".join(records) + "<|COMPLETE|>"

    async def llm(prompt: str) -> str:
        return "<|COMPLETE|>" if "Missing records:" in prompt else flood

    index = PathRAGIndex(tmp_path, llm=llm, embedder=HashingEmbedder(64), extractor="llm")  # paper-format answers
    started = time.perf_counter()
    chunk = " ".join(f"E{i}" for i in range(200))  # 889 characters naming the first 200: the cap is the floor, 200
    summary = await index.ainsert([Document(id="d", text=chunk)])
    assert time.perf_counter() - started < 20  # about 2 s here; 53 s before the cap
    assert summary.entities == 200 and summary.relations == 0 and summary.records_dropped == 99_800


async def test_lone_surrogates_in_answers_and_documents_are_replaced_not_fatal(tmp_path):
    calls: list[str] = []

    async def llm(prompt: str) -> str:
        calls.append(prompt)
        if "Missing records:" in prompt:
            return "<|COMPLETE|>"
        return '("entity"<|>Alice<|>person<|>A navi\udcc3gator.)##("entity"<|>Bob<|>person<|>A cook.)<|COMPLETE|>'

    index = PathRAGIndex(tmp_path, llm=llm, embedder=HashingEmbedder(64), extractor="llm")  # paper-format answers
    first = await index.ainsert([Document(id="d", text="Alice and \ud800Bob.")])
    assert first.failures == [] and first.entities == 2 and len(calls) == 2
    assert index.graph.get_entities(["ALICE"])["ALICE"].description == "A navi\ufffdgator."
    again = await index.ainsert([Document(id="d", text="Alice and \ud800Bob.")])
    assert again.unchanged == 1 and len(calls) == 2  # saved, not paid again
    assert Document(text="a\udc80b").text == "a\ufffdb" and Document(chunks=("\ud800",)).chunks == ("\ufffd",)
    assert Document(text="plain").content_hash() == Document(text="plain").content_hash()
    with pytest.raises(ValueError, match="lone surrogate"):
        Document(id="doc-\udc80", text="x")


def _reference_vector(text: str, dimensions: int) -> list[float]:
    """HashingEmbedder's vectors as they were before the memo and word caps (every word hashed in full)."""
    import re
    import zlib

    import numpy as np

    vector = np.zeros(dimensions)
    for word in re.findall(r"\w+", text.lower()):
        padded = f"#{word}#"
        features = [word, *(padded[i : i + 3] for i in range(len(padded) - 2))]
        codes = np.array([zlib.crc32(f.encode("utf-8")) for f in features], dtype=np.uint64)
        np.add.at(vector, codes % dimensions, np.where(codes >> 31, 1.0, -1.0))
    norm = np.linalg.norm(vector)
    return (vector / norm if norm else vector).tolist()


def test_hashing_embedder_vectors_of_normal_text_are_unchanged():
    texts = ["The harbour pilot Mara lives in Saltmere.", "中文 ünïcode 🚢 tide-board", "x" * 256, ""]
    for dimensions in (64, 256):
        assert HashingEmbedder(dimensions).embed(texts) == [_reference_vector(t, dimensions) for t in texts]


def test_hashing_embedder_memo_and_long_words_are_bounded():
    import random
    import string
    import time
    import tracemalloc

    embedder = HashingEmbedder(256)
    started = time.perf_counter()
    long = embedder.embed(["x" * 10_000_000])[0]  # +1.2 GB and seconds before the cap
    assert time.perf_counter() - started < 2 and long == embedder.embed(["x" * 256])[0]
    assert len(embedder._words) == 0  # long words are not memoised
    rng = random.Random(0)
    tracemalloc.start()
    try:  # 40,000 distinct new words, more than the memo holds (1,000,000 were +611 MB before the bound)
        embedder.embed([" ".join("".join(rng.choices(string.ascii_lowercase, k=8)) for _ in range(40_000))])
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(embedder._words) == HashingEmbedder.MEMO_WORDS and held < 40_000_000
    assert embedder.embed(["\ud800 pilot"])[0]  # a lone surrogate in a query is hashed, not an error
