"""The demo corpus, its recorded answers, the replay model and the demo run (core only, no framework)."""

from __future__ import annotations

import asyncio
import re
import shutil
from itertools import pairwise
from pathlib import Path

import pytest

from pathrag import HashingEmbedder, PathRAGIndex, RetrievalParams, as_language_model
from pathrag.demo import (
    DEMO_PARAMS,
    ReplayLLM,
    ReplayMiss,
    demo_data,
    load_corpus,
    load_questions,
    open_demo_index,
    run_demo,
)
from pathrag.index.extraction import ExtractionConfig, build_extraction_prompt, build_gleaning_prompt, parse_answers
from pathrag.llm.prompts import (
    ANSWER_INSTRUCTIONS,
    CITATION_INSTRUCTIONS,
    EVIDENCE_INSTRUCTIONS,
    KEYWORDS_PROMPT,
    build_summary_prompt,
)
from pathrag.llm.tokens import count_tokens
from pathrag.query.context import DEFAULT_CONTEXT_TOKENS
from pathrag.query.retrieval import parse_keywords

DATA = Path(str(demo_data()))


@pytest.fixture(scope="module")
def replay() -> ReplayLLM:
    return ReplayLLM.from_directory()


@pytest.fixture(scope="module")
def demo_run():
    return run_demo()


# -- the shipped data ------------------------------------------------------------------------------


def test_corpus_is_six_documents_of_three_to_five_thousand_words() -> None:
    docs = load_corpus()
    assert [d.id for d in docs] == sorted(p.stem for p in (DATA / "corpus").glob("*.md"))
    assert len(docs) == 6
    assert 3000 <= sum(len(d.text.split()) for d in docs) <= 5000


def test_every_document_has_a_recorded_answer_that_parses_cleanly() -> None:
    for doc in load_corpus():
        answers = [(DATA / "extractions" / f"{doc.id}.txt").read_text(encoding="utf-8")]
        glean = DATA / "extractions" / f"{doc.id}.glean.txt"
        if glean.exists():
            answers.append(glean.read_text(encoding="utf-8"))
        result = parse_answers(answers)
        assert result.skipped == 0, doc.id
        assert result.entities and result.relations and result.content_keywords, doc.id
        # every relation joins entities that the same answers describe
        names = {e.name for e in result.entities}
        assert {n for r in result.relations for n in r.pair} <= names, doc.id


def test_recorded_entity_names_are_written_in_their_documents() -> None:
    for doc in load_corpus():
        text = " ".join(doc.text.split()).lower()
        recorded = (DATA / "extractions" / f"{doc.id}.txt").read_text(encoding="utf-8")
        missing = [e.name for e in parse_answers([recorded]).entities if e.name.lower() not in text]
        assert missing == [], doc.id


def test_questions_expected_paths_are_walks_of_the_recorded_graph() -> None:
    index, _ = open_demo_index()
    try:
        for q in load_questions():
            assert q.expected_path[0] in q.question.upper() and q.expected_path[-1] in q.question.upper()
            assert set(q.expected_path) <= set(q.key_entities)
            pairs = list(pairwise(q.expected_path))
            assert set(index.graph.get_relations(pairs)) == set(pairs), q.question
    finally:
        index.close()


# -- the replay model ------------------------------------------------------------------------------


def test_replay_answers_extraction_and_gleaning_from_the_recordings(replay: ReplayLLM) -> None:
    doc = next(d for d in load_corpus() if d.id == "04-lantern-night")
    first = (DATA / "extractions" / "04-lantern-night.txt").read_text(encoding="utf-8")
    glean = (DATA / "extractions" / "04-lantern-night.glean.txt").read_text(encoding="utf-8")
    config = ExtractionConfig()
    assert replay.complete(build_extraction_prompt(doc.text, config)) == first
    assert replay.complete(build_gleaning_prompt(doc.text, config, [first])) == glean
    # a splitter strips and re-wraps text: matching ignores whitespace
    assert replay.complete(build_extraction_prompt("\n".join(doc.text.split()), config)) == first


def test_replay_says_nothing_is_missing_without_a_gleaning_recording(replay: ReplayLLM) -> None:
    doc = next(d for d in load_corpus() if d.id == "02-greyfen-expansion-plan")
    prompt = build_gleaning_prompt(doc.text, ExtractionConfig(), ["..."])
    assert replay.complete(prompt) == "<|COMPLETE|>"


def test_replay_refuses_an_unknown_chunk(replay: ReplayLLM) -> None:
    with pytest.raises(ReplayMiss, match="no recorded extraction for the chunk starting 'Nobody wrote"):
        replay.complete(build_extraction_prompt("Nobody wrote this text down.", ExtractionConfig()))


def test_replay_refuses_answer_and_unknown_prompts(replay: ReplayLLM) -> None:
    with pytest.raises(ReplayMiss, match="answer prompt"):
        replay.complete(f"Question: who?\n\n{ANSWER_INSTRUCTIONS}")
    with pytest.raises(ReplayMiss, match="unrecognised prompt"):
        asyncio.run(replay.acomplete("Tell me a joke."))


def test_replay_keywords_are_the_known_names_in_the_question_longest_first(replay: ReplayLLM) -> None:
    answer = replay.complete(
        KEYWORDS_PROMPT.format(question="Did the lowmarrow fishing cooperative ever meet Piet Kalland in Lowmarrow?")
    )
    keywords = parse_keywords(answer)
    assert keywords is not None
    assert keywords.low_level == ("LOWMARROW FISHING COOPERATIVE", "PIET KALLAND", "LOWMARROW")


def test_replay_keywords_without_a_known_name_fall_back_to_the_question(replay: ReplayLLM) -> None:
    answer = replay.complete(KEYWORDS_PROMPT.format(question="What is the weather like on Mars?"))
    assert parse_keywords(answer) is None  # the core then searches with the question itself


def test_replay_summary_keeps_first_sentences_within_the_word_limit(replay: ReplayLLM) -> None:
    prompt = build_summary_prompt(
        "TOBIAS WREN",
        [
            "Tobias Wren is the harbourmaster. He keeps the tide tables.",
            "Tobias Wren rang the storm bell! Everyone heard it.",
            "Tobias Wren is the harbourmaster. He was praised.",
        ],
        max_words=10,
    )
    assert replay.complete(prompt) == "Tobias Wren is the harbourmaster. Tobias Wren rang the storm"


def test_replay_from_a_folder_of_recordings(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "extractions").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("Mara sails the Gull.", encoding="utf-8")
    (tmp_path / "extractions" / "a.txt").write_text(
        '("entity"<|>Mara<|>person<|>A sailor.)##("relationship"<|>Mara<|>Gull<|>She sails it.<|>crew<|>5)<|COMPLETE|>',
        encoding="utf-8",
    )
    llm = ReplayLLM.from_directory(tmp_path)
    assert llm.entity_names == {"MARA", "GULL"}
    index = PathRAGIndex(llm=llm, embedder=HashingEmbedder())
    summary = index.insert(["Mara sails the Gull."])
    assert (summary.entities, summary.relations, summary.failures) == (2, 1, [])


def test_replay_from_a_folder_without_recordings(tmp_path: Path) -> None:
    with pytest.raises(ReplayMiss, match="cannot read recorded answers"):
        ReplayLLM.from_directory(tmp_path)
    shutil.copytree(DATA / "corpus", tmp_path / "corpus")
    (tmp_path / "extractions").mkdir()
    with pytest.raises(ReplayMiss, match="no recorded extractions"):
        ReplayLLM.from_directory(tmp_path)


# -- the demo run ----------------------------------------------------------------------------------


def test_demo_indexes_every_chunk_through_the_real_pipeline(demo_run) -> None:
    summary = demo_run.insert
    assert (summary.documents, summary.chunks, summary.chunks_extracted, summary.failures) == (6, 6, 6, [])
    assert summary.llm_calls == 12  # one extraction and one gleaning round per chunk
    assert demo_run.stats == {"documents": 6, "chunks": 6, "imports": 0, "records": 0, "entities": 37, "relations": 104}


def test_demo_finds_each_questions_expected_path(demo_run) -> None:
    for run in demo_run.questions:
        q = run.question
        assert set(run.result.seeds) == {q.expected_path[0], q.expected_path[-1]}
        assert run.rank_of(q.expected_path) is not None, q.question
        assert run.rank_of(tuple(reversed(q.expected_path))) == run.rank_of(q.expected_path)
        assert len(run.result.key_paths) <= DEMO_PARAMS.top_k


def test_demo_prompt_is_the_context_then_the_instructions(demo_run) -> None:
    for run in demo_run.questions:
        assert run.prompt.startswith(f"Question: {run.question.question}\n")
        assert run.context.instructions == EVIDENCE_INSTRUCTIONS  # the demo store has passages
        assert run.prompt == f"{run.context.text}\n\n{EVIDENCE_INSTRUCTIONS} {CITATION_INSTRUCTIONS}"
        blocks = re.findall(r"^Path (\d+):$", run.prompt, re.M)
        shown = [item for item in run.context.items if item.kind == "path"]
        assert 1 <= len(blocks) == len(shown) <= len(run.result.paths)  # the best path at least, within budget
        assert [item.score for item in shown] == sorted(item.score for item in shown)  # most reliable last
        assert run.result.paths[0] in shown
        for item in shown:
            assert item.text in run.prompt
        assert run.context.tokens <= DEFAULT_CONTEXT_TOKENS  # the default budget, as everywhere
        assert run.answer is None


def test_demo_prompts_are_the_default_budget_and_the_instructions(demo_run) -> None:
    budget = RetrievalParams().max_tokens
    assert budget == DEMO_PARAMS.max_tokens == DEFAULT_CONTEXT_TOKENS == 4000  # the README's default budget
    for run in demo_run.questions:
        assert run.result.max_tokens == budget
        assert run.context.tokens == count_tokens(run.context.text) <= budget, run.question.question
        # the budget is the context's, as at every entry point: the prompt adds only the instructions
        instructions = count_tokens(f"{run.context.instructions} {CITATION_INSTRUCTIONS}")
        assert count_tokens(run.prompt) <= budget + instructions + 2, run.question.question


def test_demo_hop_counts_match_the_paths(demo_run) -> None:
    for run in demo_run.questions:
        assert sum(run.hop_counts.values()) == len(run.result.key_paths)
        assert all(run.hop_counts[item.hops] >= 1 for item in run.result.key_paths)


def test_demo_answers_with_the_given_model_and_sends_it_the_exact_prompt() -> None:
    seen: list[str] = []

    def model(prompt: str) -> str:
        seen.append(prompt)
        return f"answer {len(seen)}"

    run = run_demo(answer_llm=as_language_model(model, name="scripted"))
    assert seen == [q.prompt for q in run.questions]
    assert [q.answer for q in run.questions] == ["answer 1", "answer 2", "answer 3"]


def test_demo_in_a_directory_is_reused_without_llm_calls(tmp_path: Path) -> None:
    first = run_demo(directory=tmp_path)
    again = run_demo(directory=tmp_path)
    assert first.insert.llm_calls == 12
    assert (again.insert.documents, again.insert.unchanged, again.insert.llm_calls) == (0, 6, 0)
    assert [q.result.items for q in again.questions] == [q.result.items for q in first.questions]
