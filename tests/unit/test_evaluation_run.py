"""The evaluation run's settings, its model passing and its files (pathrag.eval.run and pathrag.eval.calls).

test_evaluation.py covers the protocol; these cover what the split into pathrag.eval made explicit: one
EvalConfig, a configuration's own model journalled with the run (no model patched in afterwards), and
result files written with the core's atomic write (fsynced, readable by others).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from pathrag.eval import (
    DIMENSIONS,
    Configuration,
    EvalConfig,
    EvalReport,
    Evaluation,
    OfflineEvalModel,
    Question,
    evaluate,
)
from pathrag.eval.calls import ModelCalls

QUESTIONS = [Question("How did the flood start?"), Question("Who paid for the barrier?")]


def judge(prompt: str) -> str:
    """Answer 1 wins everything."""
    return json.dumps({d: {"winner": 1, "reason": "first"} for d in DIMENSIONS})


def fixed(name: str) -> Configuration:
    return Configuration(name, lambda query: f"Q: {query}\nCONTEXT-{name}")


def test_settings_are_one_eval_config_and_keywords_apply_on_top(tmp_path: Path) -> None:
    config = EvalConfig(max_attempts=2, worst=1)
    evaluation = Evaluation(
        None, llm=judge, configurations=[fixed("A"), fixed("B")], config=config, retry_wait=0, all_pairs=True
    )
    assert evaluation.config == EvalConfig(max_attempts=2, worst=1, retry_wait=0, all_pairs=True)
    assert config.retry_wait == 1.0  # frozen: the keywords made a new one
    with pytest.raises(TypeError, match="unknown evaluation settings: num_question"):
        Evaluation(None, llm=judge, configurations=[fixed("A"), fixed("B")], num_question=3)
    with pytest.raises(ValueError, match="max_concurrency"):
        EvalConfig(max_concurrency=0)
    assert EvalConfig().pairs_of(["a", "b", "c"]) == [("a", "b"), ("a", "c")]
    with pytest.raises(ValueError, match="two different configurations"):
        EvalConfig(pairs=[("a", "a")]).pairs_of(["a", "b"])


def test_a_sync_configurations_own_model_is_journalled_with_the_run(tmp_path: Path) -> None:
    asked: list[str] = []

    def keywords(prompt: str) -> str:
        asked.append(prompt)
        return "flood, barrier"

    def run() -> EvalReport:
        config = EvalConfig(max_concurrency=1)
        calls = config.model_calls(tmp_path)
        recorded = calls.model(_Named(keywords, "keyword-model"), "keywords")

        def context(query: str) -> str:  # sync: runs in a worker thread, asks through the run's loop
            return f"Q: {query}\nCONTEXT-kw {recorded.complete('keywords of ' + query)}"

        return Evaluation(
            tmp_path,
            llm=OfflineEvalModel("answers"),
            judge_llm=judge,
            configurations=[Configuration("kw", context), fixed("plain")],
            questions=QUESTIONS,
            config=config,
            calls=calls,
        ).run()

    first = run()
    assert len(asked) == 2 and first.usage["keywords"].calls == 2
    retrieval = {(a.configuration, a.retrieval_calls) for a in first.answers}
    assert retrieval == {("kw", 1), ("plain", 0)}  # counted as the kw configuration's retrieval cost
    again = run()
    assert len(asked) == 2  # from the journal
    assert (again.usage["keywords"].calls, again.usage["keywords"].reused) == (0, 2)


class _Named:
    """A sync model with a name."""

    def __init__(self, respond: Callable[[str], str], name: str) -> None:
        self.respond, self.name = respond, name

    def complete(self, prompt: str) -> str:
        return self.respond(prompt)

    async def acomplete(self, prompt: str) -> str:
        return self.respond(prompt)


def test_the_keyword_model_of_evaluate_is_journalled_and_resumed(tmp_path: Path) -> None:
    from pathrag.demo import DEMO_PARAMS, open_demo_index

    index, _ = open_demo_index()
    try:
        question = [Question("How is Odric Pelham connected to the Lantern Night Flood?")]
        options = {"configurations": ["default", "dense"], "params": DEMO_PARAMS, "questions": question}
        first = evaluate(index, tmp_path, llm=OfflineEvalModel(), **options)
        assert (first.usage["keywords"].calls, first.usage["keywords"].reused) == (1, 0)
        assert {(a.configuration, a.retrieval_calls) for a in first.answers} == {("default", 1), ("dense", 0)}
        again = evaluate(index, tmp_path, llm=OfflineEvalModel(), **options)
        assert (again.usage["keywords"].calls, again.usage["keywords"].reused) == (0, 1)
        assert sum(u.calls for u in again.usage.values()) == 0
    finally:
        index.close()


def test_the_run_files_are_fsynced_and_readable_by_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    old_umask = os.umask(0o022)
    try:
        Evaluation(tmp_path, llm=judge, configurations=[fixed("A"), fixed("B")], questions=QUESTIONS).run()
    finally:
        os.umask(old_umask)
    files = ["questions.jsonl", "answers.jsonl", "judgements.jsonl", "results.json", "report.html"]
    assert {name: stat.S_IMODE((tmp_path / name).stat().st_mode) for name in files} == dict.fromkeys(files, 0o644)
    assert synced.count("file") == len(files) and synced.count("dir") == len(files)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_model_calls_outside_a_session_are_a_clear_error() -> None:
    import asyncio

    calls = ModelCalls()
    with pytest.raises(RuntimeError, match="session"):
        asyncio.run(calls.ask(OfflineEvalModel(), "a prompt", "answer"))
