"""pathrag.eval and ``pathrag eval``, offline, with scripted models.

The scripted models answer each kind of prompt from a table and log every prompt, so the tests can count
calls exactly (resume must not repeat one) and put hand-picked verdicts in front of the tally.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from langchain_pathrag.cli import app
from pathrag.eval import (
    DIMENSIONS,
    Configuration,
    Evaluation,
    EvaluationError,
    Judgement,
    OfflineEvalModel,
    Pricing,
    Question,
    agenerate_questions,
    build_configurations,
    configuration_names,
    corpus_excerpts,
    parse_questions,
    parse_users,
    parse_verdict,
    path_configuration,
    read_questions,
    register_configuration,
    render_html,
    tally_pair,
    write_questions,
)
from pathrag.eval.prompts import RETRY_SUFFIX


def verdict(winners: dict[str, int] | int, reason: str = "because") -> str:
    """A judge's JSON answer; ``winners`` is one side for every dimension, or a side per dimension."""
    sides = winners if isinstance(winners, dict) else dict.fromkeys(DIMENSIONS, winners)
    return json.dumps({d: {"winner": sides[d], "reason": f"{reason} ({d})"} for d in DIMENSIONS})


class Scripted:
    """A LanguageModel: ``respond(prompt) -> str``, every prompt logged; optionally raises on call ``fail_at``."""

    def __init__(
        self, respond, name: str = "scripted", fail_at: int | None = None, error: BaseException | None = None
    ) -> None:
        self.respond, self.name, self.fail_at, self.error = respond, name, fail_at, error
        self.prompts: list[str] = []
        self.answered: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.fail_at is not None and len(self.prompts) >= self.fail_at:
            raise self.error or RuntimeError("boom")
        answer = self.respond(prompt)
        self.answered.append(prompt)
        return answer

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


def answerer(prompt: str) -> str:
    """Answers with the context's marker, so each configuration's answer is recognisable."""
    marker = re.search(r"CONTEXT-(\w+)", prompt)
    question = re.search(r"Q: (.*)", prompt)
    return f"answer {marker.group(1) if marker else '?'} to {question.group(1) if question else '?'}"


def fixed(name: str) -> Configuration:
    return Configuration(name, lambda query: f"Q: {query}\nCONTEXT-{name}")


QUESTIONS = [Question("How did the flood start?"), Question("Who paid for the barrier?")]


def run_eval(tmp_path: Path | None, judge, *, questions=QUESTIONS, configs=("A", "B"), **kwargs):
    evaluation = Evaluation(
        tmp_path,
        llm=Scripted(answerer, name="answers"),
        judge_llm=judge,
        configurations=[fixed(c) for c in configs],
        questions=questions,
        max_concurrency=1,
        retry_wait=0,
        **kwargs,
    )
    return evaluation.run()


def judge_by_table(table: dict[tuple[str, str], str | list[str]]):
    """A judge answering by (question text, configuration shown first); a list gives successive answers."""
    calls: Counter[tuple[str, str]] = Counter()

    def respond(prompt: str) -> str:
        question = prompt.split("Question:\n", 1)[1].split("\n", 1)[0]
        first = re.search(r"Answer 1:\nanswer (\w+)", prompt).group(1)
        answer = table[(question, first)]
        if isinstance(answer, list):
            answer = answer[min(calls[(question, first)], len(answer) - 1)]
        calls[(question, first)] += 1
        return answer

    return Scripted(respond, name="judge")


# -- parsing -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"questions": ["Why A?", "How B?"]}', ["Why A?", "How B?"]),
        ('Here you go:\n```json\n{"Questions": ["Why A?", "Why A?", " "]}\n```', ["Why A?"]),
        ('["Why A?", {"question": "How B?"}, 3]', ["Why A?", "How B?"]),
        ("1. Why A?\n2) How B?\n- What about C?\nNot a question.", ["Why A?", "How B?", "What about C?"]),
        ("I cannot help with that.", []),
        ('{"questions": "not a list"}', []),
    ],
)
def test_parse_questions(text, expected):
    assert parse_questions(text) == expected


def test_parse_users_keeps_users_with_tasks_only():
    text = (
        '```json\n{"users": [{"role": "A planner", "tasks": ["Plan", "Plan", ""]}, {"user": "No tasks"}, '
        '"junk", {"user": "An auditor", "tasks": ["Audit"]}]}\n```'
    )
    assert parse_users(text) == [("A planner", ["Plan"]), ("An auditor", ["Audit"])]
    assert parse_users("nothing here") == []
    assert parse_users('{"users": {"user": "x"}}') == []


def test_parse_verdict_accepts_the_usual_shapes():
    sides = {"comprehensiveness": 1, "diversity": 2, "logicality": 1, "relevance": 2, "coherence": 1, "overall": 2}
    parsed = parse_verdict("Verdict:\n```json\n" + verdict(sides) + "\n```")
    assert {d: side for d, (side, _) in parsed.items()} == sides
    assert parsed["overall"][1] == "because (overall)"
    wrapped = json.dumps({"verdict": {d.upper(): f"Answer {s}" for d, s in sides.items()}})
    assert {d: side for d, (side, _) in parse_verdict(wrapped).items()} == sides


@pytest.mark.parametrize(
    "text",
    [
        "Answer 1 is better on every count.",
        verdict(1).replace('"overall"', '"summary"'),  # a dimension missing
        verdict(1).replace(
            '"winner": 1, "reason": "because (diversity)"', '"winner": "tie", "reason": "same"'
        ),  # a tie is not a verdict
        verdict(1).replace(
            '"winner": 1, "reason": "because (coherence)"', '"winner": 3, "reason": "?"'
        ),  # no such answer
        '{"comprehensiveness": {"winner": 1}',  # cut off
        "[" * 5000,  # deeply nested junk
        "",
    ],
)
def test_parse_verdict_rejects_what_is_not_a_full_verdict(text):
    assert parse_verdict(text) is None


def test_corpus_excerpts_sample_every_part_within_the_budget():
    passages = [f"Document {i} " + "word " * 300 for i in range(40)]
    text = corpus_excerpts(passages, max_tokens=1000, token_counter=lambda s: len(s.split()))
    assert len(text.split()) <= 1000 + 2 * 40  # numbering and cut marks aside
    numbers = [int(n) for n in re.findall(r"Document (\d+)", text)]
    assert numbers[0] == 0 and numbers[-1] >= 30  # spread over the whole corpus, not its head


# -- question generation -----------------------------------------------------------------------------


def question_writer(bad_users_first: bool = False):
    state = {"users": 0}

    def respond(prompt: str) -> str:
        if prompt.startswith("EVALUATION SETUP: DESCRIBE"):
            return "A town and its flood."
        if prompt.startswith("EVALUATION SETUP: USERS"):
            state["users"] += 1
            if bad_users_first and state["users"] == 1:
                return "Here are some users: a mayor, a fisher."
            return json.dumps(
                {
                    "users": [
                        {"user": "A mayor", "tasks": ["Budget", "Blame"]},
                        {"user": "A fisher", "tasks": ["Catch", "Weather", "Extra"]},
                        {"user": "A third", "tasks": ["Ignored"]},
                    ]
                }
            )
        user = re.search(r"User: (.*)", prompt).group(1)
        task = re.search(r"Task: (.*)", prompt).group(1)
        count = int(re.search(r"Write (\d+) questions", prompt).group(1))
        return "\n".join(f"{i + 1}. What does {user} ask about {task}, number {i + 1}?" for i in range(count))

    return respond


async def test_question_generation_takes_users_tasks_round_robin(tmp_path):
    model = Scripted(question_writer())
    questions = await agenerate_questions(
        model, ["The flood of 1911 hit the town."], num_questions=5, users=2, tasks=2, journal=tmp_path / "calls.jsonl"
    )
    # 1 description + 1 users + 4 (user, task) calls, each asked for ceil(5 / 4) = 2 questions
    assert len(model.prompts) == 6
    assert all("Write 2 questions" in p for p in model.prompts[2:])
    assert [(q.user, q.task) for q in questions] == [
        ("A mayor", "Budget"),
        ("A mayor", "Blame"),
        ("A fisher", "Catch"),
        ("A fisher", "Weather"),
        ("A mayor", "Budget"),
    ]
    assert questions[0].text == "What does A mayor ask about Budget, number 1?"
    assert questions[4].text.endswith("number 2?")
    # journalled: the same generation again asks nothing
    again = Scripted(question_writer())
    assert (
        await agenerate_questions(
            again,
            ["The flood of 1911 hit the town."],
            num_questions=5,
            users=2,
            tasks=2,
            journal=tmp_path / "calls.jsonl",
        )
        == questions
    )
    assert again.prompts == []


async def test_unreadable_users_are_asked_for_once_more():
    model = Scripted(question_writer(bad_users_first=True))
    questions = await agenerate_questions(model, ["text"], num_questions=2, users=1, tasks=2)
    users_prompts = [p for p in model.prompts if p.startswith("EVALUATION SETUP: USERS")]
    assert len(users_prompts) == 2 and users_prompts[1].endswith(RETRY_SUFFIX)
    assert len(questions) == 2


async def test_no_usable_users_is_a_clear_error():
    model = Scripted(lambda prompt: "no idea")
    with pytest.raises(EvaluationError, match="no usable users"):
        await agenerate_questions(model, ["text"], num_questions=2)
    assert len(model.prompts) == 3  # description, users, users again


def test_a_failing_question_model_is_a_clear_error(tmp_path):
    model = Scripted(lambda prompt: "x", fail_at=1)
    evaluation = Evaluation(
        tmp_path, llm=model, configurations=[fixed("A"), fixed("B")], passages=["text"], max_attempts=2, retry_wait=0
    )
    with pytest.raises(EvaluationError, match="question model failed: RuntimeError: boom"):
        evaluation.run()
    assert len(model.prompts) == 2


def test_questions_round_trip_through_jsonl_and_plain_text(tmp_path):
    questions = [Question("Why?", "u", "t"), Question("How {so}?")]
    write_questions(tmp_path / "q.jsonl", questions)
    assert read_questions(tmp_path / "q.jsonl") == questions
    (tmp_path / "q.txt").write_text("Why?\n\n  How {so}?\nWhy?\n", encoding="utf-8")
    assert [q.text for q in read_questions(tmp_path / "q.txt")] == ["Why?", "How {so}?"]
    (tmp_path / "empty.txt").write_text("\n", encoding="utf-8")
    with pytest.raises(EvaluationError):
        read_questions(tmp_path / "empty.txt")


# -- judging and win rates ---------------------------------------------------------------------------


def test_both_orders_are_judged_and_counted_by_hand(tmp_path):
    q1, q2 = (q.text for q in QUESTIONS)
    second_overall = {**dict.fromkeys(DIMENSIONS, 1), "overall": 2}
    judge = judge_by_table(
        {
            (q1, "A"): verdict(1),  # A shown first: A wins everything
            (q1, "B"): verdict(1),  # B shown first: B wins everything -> the orders disagree everywhere
            (q2, "A"): verdict(second_overall),  # A wins the five dimensions, B wins overall
            (q2, "B"): verdict({**dict.fromkeys(DIMENSIONS, 2), "overall": 1}),  # the same verdict, mirrored
        }
    )
    report = run_eval(tmp_path, judge)
    assert len(judge.prompts) == 4  # 2 questions x 1 pair x 2 orders
    (pair,) = report.pairs
    assert (pair.a, pair.b, pair.judgements, pair.invalid) == ("A", "B", 4, 0)
    coherence, overall = pair.dimensions["coherence"], pair.dimensions["overall"]
    # coherence: q1 -> A, B; q2 -> A, A.  overall: q1 -> A, B; q2 -> B, B.
    assert (coherence.wins_a, coherence.wins_b, coherence.win_rate_a) == (3, 1, 0.75)
    assert (overall.wins_a, overall.wins_b, overall.win_rate_a) == (1, 3, 0.25)
    assert (coherence.both_orders, coherence.disagreements, coherence.disagreement_rate) == (2, 1, 0.5)
    assert overall.disagreement_rate == 0.5
    # the answers the judge saw, in both orders
    assert "Answer 1:\nanswer A to " + q1 in judge.prompts[0] and "Answer 2:\nanswer B to " + q1 in judge.prompts[0]
    assert "Answer 1:\nanswer B to " + q1 in judge.prompts[1]
    # q1 is A's worst question: it lost overall once and 6 of 12 verdicts; q2: overall twice
    assert [(w.question.text, w.overall_losses, w.losses, w.of) for w in report.worst] == [
        (q2, 2, 2, 12),
        (q1, 1, 6, 12),
    ]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["pairs"][0]["dimensions"]["overall"]["win_rate_a"] == 0.25


def test_tally_pair_ignores_other_pairs_and_counts_invalid():
    win = dict.fromkeys(DIMENSIONS, "A")
    lose = dict.fromkeys(DIMENSIONS, "B")
    judgements = [
        Judgement("q1", "A", "B", win),
        Judgement("q1", "B", "A", win),
        Judgement("q2", "A", "B", lose),
        Judgement("q2", "B", "A", None, error="unreadable verdict"),
        Judgement("q1", "A", "C", lose),
    ]
    pair = tally_pair("A", "B", judgements)
    tally = pair.dimensions["relevance"]
    assert (pair.judgements, pair.invalid) == (4, 1)
    assert (tally.wins_a, tally.wins_b, tally.both_orders, tally.disagreements) == (2, 1, 1, 0)
    assert tally.win_rate_a == pytest.approx(2 / 3)


def test_malformed_verdicts_are_retried_once_then_counted_invalid(tmp_path):
    q1, q2 = (q.text for q in QUESTIONS)
    judge = judge_by_table(
        {
            (q1, "A"): ["Answer 1, clearly.", "```json\n{broken"],  # unreadable twice -> invalid
            (q1, "B"): ["not json", verdict(2)],  # readable on the retry
            (q2, "A"): verdict(1),
            (q2, "B"): verdict(2),
        }
    )
    report = run_eval(tmp_path, judge)
    (pair,) = report.pairs
    assert (pair.judgements, pair.invalid) == (4, 1)
    assert len(judge.prompts) == 6 and sum(p.endswith(RETRY_SUFFIX) for p in judge.prompts) == 2
    attempts = {(j.question_id, j.first): (j.attempts, j.valid) for j in report.judgements}
    assert attempts[(QUESTIONS[0].id, "A")] == (2, False)
    assert attempts[(QUESTIONS[0].id, "B")] == (2, True)
    assert pair.dimensions["overall"].wins_a == 3  # q1 in one order, q2 in both
    assert pair.dimensions["overall"].both_orders == 1  # only q2 has two valid orders


def test_a_failing_judge_or_answer_model_never_stops_the_run(tmp_path):
    judge = Scripted(lambda prompt: verdict(1), fail_at=1)  # every call raises
    report = run_eval(tmp_path, judge, max_attempts=2)
    assert len(judge.prompts) == 8  # 4 judgements x 2 attempts
    assert report.pairs[0].invalid == 4
    assert all(j.error and "boom" in j.error for j in report.judgements)
    assert report.usage["judge"].failed == 4

    broken = Configuration("broken", lambda query: 1 / 0)
    evaluation = Evaluation(
        None,
        llm=Scripted(answerer),
        judge_llm=Scripted(lambda p: verdict(1)),
        configurations=[fixed("A"), broken],
        questions=QUESTIONS,
        retry_wait=0,
    )
    report = evaluation.run()
    assert report.configurations[1].failed == 2 and report.pairs[0].missing == 4 and report.pairs[0].judgements == 0


# -- resume ------------------------------------------------------------------------------------------


class Crash(BaseException):
    """Stands for the process dying (an exception no code path catches)."""


def test_resume_after_a_crash_repeats_no_call(tmp_path):
    questions = [Question(f"Question number {i}?") for i in range(3)]
    table = {(q.text, first): verdict(1) for q in questions for first in "ABC"}
    first_answers, first_judge = Scripted(answerer, name="answers"), judge_by_table(table)
    first_judge.fail_at, first_judge.error = 5, Crash()  # dies during the judging stage
    with pytest.raises(Crash):
        Evaluation(
            tmp_path,
            llm=first_answers,
            judge_llm=first_judge,
            questions=questions,
            max_concurrency=1,
            configurations=[fixed(c) for c in "ABC"],
        ).run()
    assert len(first_answers.answered) == 9 and len(first_judge.answered) == 4
    # a torn line, as a kill in the middle of a write leaves it
    with (tmp_path / "calls.jsonl").open("a", encoding="utf-8") as journal:
        journal.write('{"key": "half a rec')

    second_answers, second_judge = Scripted(answerer, name="answers"), judge_by_table(table)
    report = Evaluation(
        tmp_path,
        llm=second_answers,
        judge_llm=second_judge,
        questions=questions,
        max_concurrency=1,
        configurations=[fixed(c) for c in "ABC"],
    ).run()
    assert second_answers.prompts == []  # every answer came from the journal
    assert not set(second_judge.prompts) & set(first_judge.answered)  # no judgement asked twice
    assert len(second_judge.prompts) == 3 * 2 * 2 - 4  # 3 questions x 2 pairs x 2 orders, minus the 4 done
    assert report.usage["judge"].calls == 8 and report.usage["judge"].reused == 4
    assert report.pairs[0].dimensions["overall"].judged == 6

    third_answers, third_judge = Scripted(answerer, name="answers"), judge_by_table(table)
    Evaluation(
        tmp_path,
        llm=third_answers,
        judge_llm=third_judge,
        questions=questions,
        configurations=[fixed(c) for c in "ABC"],
    ).run()
    assert third_answers.prompts == [] and third_judge.prompts == []  # a finished run costs nothing


KILLED_RUN = """
import hashlib, json, os, signal, sys
from pathrag.eval import DIMENSIONS, Configuration, Evaluation, Question

calls = []

def answer(prompt):
    calls.append(prompt)
    if len(calls) == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no flush at exit: what a crash leaves
    if prompt.startswith("You are judging"):
        return json.dumps({d: {"winner": 1, "reason": "r"} for d in DIMENSIONS})
    return "answer " + hashlib.sha256(prompt.encode()).hexdigest()[:8]

questions = [Question(f"Question number {i}?") for i in range(3)]
configs = [Configuration(n, lambda q, n=n: f"Q: {q}\\nCONTEXT-{n}") for n in "AB"]
Evaluation(sys.argv[1], llm=answer, configurations=configs, questions=questions, max_concurrency=1).run()
"""


def test_resume_after_kill_9_pays_only_for_unjournalled_calls(tmp_path):
    import hashlib
    import subprocess
    import sys

    script = tmp_path / "killed_run.py"
    script.write_text(KILLED_RUN, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "run"), "9"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -9, done.stderr
    journalled = [json.loads(line) for line in (tmp_path / "run" / "calls.jsonl").read_text().splitlines()]
    assert len(journalled) == 8  # the 9th call was in flight when the process died

    def respond(prompt):
        if prompt.startswith("You are judging"):
            return verdict(1)
        return "answer " + hashlib.sha256(prompt.encode()).hexdigest()[:8]

    model = Scripted(respond)
    questions = [Question(f"Question number {i}?") for i in range(3)]
    configs = [Configuration(n, lambda q, n=n: f"Q: {q}\nCONTEXT-{n}") for n in "AB"]
    # the same model name as the killed run's callable wrapper, so its journal applies
    model.name = journalled[0]["model"]
    report = Evaluation(tmp_path / "run", llm=model, configurations=configs, questions=questions).run()
    assert len(model.prompts) == 6 + 6 - 8  # 6 answers and 6 verdicts in all, 8 of them journalled
    assert report.pairs[0].dimensions["overall"].judged == 6


def test_another_judge_model_is_not_served_from_the_journal(tmp_path):
    run_eval(tmp_path, Scripted(lambda p: verdict(1), name="judge-1"))
    other = Scripted(lambda p: verdict(2), name="judge-2")
    report = run_eval(tmp_path, other)
    assert len(other.prompts) == 4 and report.pairs[0].dimensions["overall"].wins_b == 2


# -- configurations ----------------------------------------------------------------------------------


def test_registry_builds_named_configurations_and_plugs_in_new_ones(tmp_path):
    from pathrag.demo import DEMO_PARAMS, open_demo_index
    from pathrag.eval import ConfigurationOptions

    assert {"default", "paths-only", "pathrag-lt"} <= set(configuration_names())
    register_configuration(
        "test-k1", lambda index, o: path_configuration(index, o, name="test-k1", top_k=1, more_paths=False)
    )
    with pytest.raises(ValueError, match="already registered"):
        register_configuration("TEST-K1", lambda index, o: None)
    index, _ = open_demo_index()
    try:
        options = ConfigurationOptions(params=DEMO_PARAMS)
        with pytest.raises(ValueError, match="unknown configuration"):
            build_configurations(index, ["default", "nope"], options)
        default, lite, one = build_configurations(index, ["default", "PathRAG-lt", "test-k1"], options)
        assert lite.name == "pathrag-lt" and "N = 20" in lite.description
        question = "How is Odric Pelham connected to the Lantern Night Flood?"
        import asyncio

        texts = [asyncio.run(c.context(question)).text for c in (default, lite, one)]
        assert all(text.startswith(f"Question: {question}") for text in texts)
        assert texts[1].count("\nPath ") == 5 and texts[2].count("\nPath ") == 1  # top_k = 5, top_k = 1
    finally:
        index.close()


# -- the HTML report ---------------------------------------------------------------------------------


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: Counter[str] = Counter()
        self.links: list[tuple[str, str]] = []
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] += 1
        self.links += [(name, value or "") for name, value in attrs if name in ("src", "href", "xlink:href")]
        self.links += [("style", value or "") for name, value in attrs if name == "style" and "url(" in (value or "")]

    def handle_data(self, data):
        self.text.append(data)


def test_html_report_is_a_standalone_page(tmp_path):
    hostile = Question('Is <script>alert("x")</script> & <img src="http://evil/x.png"> escaped?')
    judge = judge_by_table(
        {
            (hostile.text, "A"): verdict(2),
            (hostile.text, "B"): verdict(1),
            (QUESTIONS[0].text, "A"): verdict(1),
            (QUESTIONS[0].text, "B"): verdict(2),
        }
    )
    report = run_eval(tmp_path, judge, questions=[hostile, QUESTIONS[0]], prices={"answer": Pricing(1, 2)})
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page == render_html(report)
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert page.startswith("<!DOCTYPE html>") and parser.tags["html"] == parser.tags["body"] == 1
    assert parser.links == []  # no external (or any) src/href: it opens anywhere, offline
    assert parser.tags["script"] == 0 and parser.tags["link"] == 0 and parser.tags["img"] == 0
    assert parser.tags["svg"] == 1 and parser.tags["rect"] == 2 * len(DIMENSIONS)  # one chart, a bar per side
    assert "@import" not in page and "url(" not in page
    text = "".join(parser.text)
    assert hostile.text in text  # shown, escaped, as text
    # the worst-losing question with both answers side by side
    assert f"answer A to {hostile.text}" in text and f"answer B to {hostile.text}" in text
    assert page.count('<div class="pair">') == 1


# -- the command line --------------------------------------------------------------------------------


@pytest.fixture
def no_key(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATHRAG_MODEL", "PATHRAG_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)


def cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_eval_help_documents_every_option(no_key):
    import typer.main

    result = cli("eval", "--help")
    assert result.exit_code == 0
    command = typer.main.get_command(app).commands["eval"].load()  # type: ignore[attr-defined]  # a LazyCommand
    options = [p for p in command.params if p.param_type_name == "option"]
    assert len(options) >= 20
    for option in options:
        assert option.help, option.name
        assert max(option.opts, key=len) in result.output


@pytest.fixture
def demo_store(tmp_path, no_key) -> Path:
    store = tmp_path / "demo-store"
    assert cli("demo", "--store", store, "--no-prompts").exit_code == 0
    return store


def test_eval_on_the_demo_store_offline_then_resumed(demo_store, tmp_path):
    run_dir = tmp_path / "run"
    args = [
        "eval",
        "--store",
        demo_store,
        "--run-dir",
        run_dir,
        "--offline",
        "-n",
        "4",
        "--users",
        "2",
        "--tasks",
        "2",
        "--num-seeds",
        "2",
        "--theta",
        "0.001",
        "--price",
        "0.15,0.60",
    ]
    first = cli(*args)
    assert first.exit_code == 0, first.output
    assert "default vs paths-only" in first.output and "default vs pathrag-lt" in first.output
    results = json.loads((run_dir / "results.json").read_text())
    assert results["questions"] == 4 and [c["answered"] for c in results["configurations"]] == [4, 4, 4, 4]
    assert [p["b"] for p in results["pairs"]] == ["paths-only", "pathrag-lt", "dense"]
    assert results["pairs"][1]["judgements"] == 8
    assert len(read_questions(run_dir / "questions.jsonl")) == 4
    assert results["usage"]["judge"]["cost"] > 0

    again = cli(*args)
    assert again.exit_code == 0, again.output
    results = json.loads((run_dir / "results.json").read_text())
    assert sum(u["calls"] for u in results["usage"].values()) == 0  # everything from the journal
    assert "questions" not in results["usage"]  # questions.jsonl was reused as it is


def test_eval_with_a_questions_file_and_all_pairs(demo_store, tmp_path):
    questions = tmp_path / "questions.txt"
    questions.write_text(
        "How is Odric Pelham connected to the Lantern Night Flood?\nWho designed the Saltgate Barrier?\n",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    result = cli(
        "eval",
        "--store",
        demo_store,
        "--run-dir",
        run_dir,
        "--offline",
        "--questions-file",
        questions,
        "-c",
        "pathrag-lt",
        "-c",
        "default",
        "-c",
        "paths-only",
        "--all-pairs",
        "--worst",
        "0",
    )
    assert result.exit_code == 0, result.output
    results = json.loads((run_dir / "results.json").read_text())
    assert results["questions"] == 2 and "questions" not in results["usage"]
    assert [(p["a"], p["b"]) for p in results["pairs"]] == [
        ("pathrag-lt", "default"),
        ("pathrag-lt", "paths-only"),
        ("default", "paths-only"),
    ]
    assert all(p["judgements"] == 4 for p in results["pairs"]) and results["worst"] == []
    assert [q.text for q in read_questions(run_dir / "questions.jsonl")] == questions.read_text().splitlines()


def test_eval_uses_the_answer_and_judge_models_given(demo_store, tmp_path, monkeypatch):
    from langchain_pathrag.cli import eval as cli_module

    offline = OfflineEvalModel()
    models: dict[str, Scripted] = {}

    def language_model(chat):  # chat is what _chat_model returned: here, the model's name
        return models.setdefault(chat, Scripted(offline.complete, name=chat))

    monkeypatch.setattr(cli_module, "chat_model", lambda model: f"chat:{model}")
    monkeypatch.setattr(cli_module, "language_model", language_model)
    result = cli(
        "eval",
        "--store",
        demo_store,
        "--run-dir",
        tmp_path / "run",
        "-n",
        "2",
        "--users",
        "1",
        "--tasks",
        "2",
        "--model",
        "small",
        "--judge-model",
        "big",
        "-c",
        "default",
        "-c",
        "pathrag-lt",
    )
    assert result.exit_code == 0, result.output
    answers, judge = models["chat:small"], models["chat:big"]
    assert answers.prompts and all(not p.startswith(("You are judging", "EVALUATION SETUP")) for p in answers.prompts)
    assert judge.prompts and all(p.startswith(("You are judging", "EVALUATION SETUP")) for p in judge.prompts)
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["models"] == {"answer": "chat:small", "judge": "chat:big", "questions": "chat:big"}


def test_eval_command_errors_are_one_line(demo_store, tmp_path):
    result = cli("eval", "--store", demo_store, "--run-dir", tmp_path / "r")
    assert result.exit_code == 1 and "OPENAI_API_KEY" in result.stderr and "--offline" in result.stderr
    result = cli("eval", "--store", demo_store, "--run-dir", tmp_path / "r", "--offline", "-c", "default", "-c", "nope")
    assert result.exit_code == 2 and "unknown configuration 'nope'" in result.stderr
    result = cli("eval", "--store", demo_store, "--offline", "-c", "default")
    assert result.exit_code == 2 and "at least two" in result.stderr
    result = cli("eval", "--store", demo_store, "--offline", "--price", "cheap")
    assert result.exit_code == 2 and "PROMPT,ANSWER" in result.stderr
    assert "Traceback" not in result.output


def test_built_in_configurations_send_what_pathrag_query_sends(tmp_path):
    from pathrag.demo import DEMO_PARAMS, open_demo_index
    from pathrag.eval import ConfigurationOptions
    from pathrag.query.context import answer_prompt, result_context

    question = Question("How is the engineer Cassian Drove connected to the Lantern Guild losing its hall?")
    index, _ = open_demo_index()
    try:
        model = Scripted(lambda prompt: "an answer", name="answers")
        options = ConfigurationOptions(params=DEMO_PARAMS, max_tokens=800)
        configs = build_configurations(index, ["paths-only", "default"], options)
        Evaluation(
            None, llm=model, judge_llm=Scripted(lambda p: verdict(1)), configurations=configs, questions=[question]
        ).run()
        for overrides in ({"context": "paths"}, {}):  # paths-only, then the default
            result = index.retrieve(question.text, keyword_llm=False, params=DEMO_PARAMS, **overrides)
            # pathrag query's prompt, without its request to cite: answers are scored as plain text
            assert answer_prompt(result_context(result, max_tokens=800), cite=False) in model.prompts
    finally:
        index.close()


def test_dense_configuration_sends_passages_only_within_the_budget():
    import asyncio

    from pathrag.demo import DEMO_PARAMS, open_demo_index
    from pathrag.eval import ConfigurationOptions
    from pathrag.llm.prompts import PASSAGE_INSTRUCTIONS

    index, _ = open_demo_index()
    try:
        question = "Who designed the Saltgate Barrier?"
        counter = lambda text: len(text.split())  # noqa: E731
        (dense,) = build_configurations(
            index, ["dense"], ConfigurationOptions(params=DEMO_PARAMS, max_tokens=900, token_counter=counter)
        )
        context = asyncio.run(dense.context(question))
        assert context.text.startswith(f"Question: {question}") and "Passage 1:" in context.text
        assert "\nPath " not in context.text and counter(context.text) <= 900
        assert 1 <= len(context.items) < 6 and all(item.kind == "passage" for item in context.items)
        assert context.instructions == PASSAGE_INSTRUCTIONS  # no word of paths when none is shown
        scores = [item.score for item in context.items]
        assert scores == sorted(scores)  # least similar first, the nearest next to the instructions
    finally:
        index.close()


def test_passages_only_in_the_chunk_index_are_the_corpus_and_dense_finds_them():
    import asyncio

    from pathrag import HashingEmbedder, PathRAGIndex, VectorItem
    from pathrag.eval import ConfigurationOptions, index_passages

    index = PathRAGIndex(embedder=HashingEmbedder())  # as an import leaves it: passages, no documents
    index.chunk_index.upsert(
        [
            VectorItem("c1", "The Saltgate Barrier was designed by Cassian Drove.", {}),
            VectorItem("c2", "Herring spawn in the shallows of Brindle Sands.", {}),
        ]
    )
    assert sorted(index_passages(index)) == [
        "Herring spawn in the shallows of Brindle Sands.",
        "The Saltgate Barrier was designed by Cassian Drove.",
    ]
    (dense,) = build_configurations(index, ["dense"], ConfigurationOptions())
    context = asyncio.run(dense.context("Who designed the Saltgate Barrier?"))
    assert context.text.endswith(
        "Passage 1:\nHerring spawn in the shallows of Brindle Sands.\n\n"
        "Passage 2:\nThe Saltgate Barrier was designed by Cassian Drove."
    )


def test_offline_model_answers_every_prompt_kind():
    model = OfflineEvalModel()
    assert (
        parse_verdict(
            model.complete(
                "You are judging two answers ...\n"
                "\nAnswer 1:\nshort\n\nAnswer 2:\nmuch longer answer\n\nCompare the two answers"
            )
        )["comprehensiveness"][0]
        == 2
    )
