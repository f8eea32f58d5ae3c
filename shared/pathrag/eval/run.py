"""The evaluation run: questions, then every configuration's answers, then pairwise verdicts, then the files.

:class:`EvalConfig` holds how a run goes (how many questions, which pairs, call limits, prices);
:class:`Evaluation` runs configurations with models on questions; :func:`aevaluate` does it for an
index's registered configurations. Every model answer is journalled in ``<run_dir>/calls.jsonl`` as it
arrives (see :mod:`pathrag.eval.calls`), so running a run directory again pays only for what is missing.
The run writes ``questions.jsonl``, ``answers.jsonl``, ``judgements.jsonl``, ``results.json`` and a
standalone ``report.html``.

>>> EvalConfig(num_questions=10, all_pairs=True).pairs_of(["a", "b", "c"])
[('a', 'b'), ('a', 'c'), ('b', 'c')]
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from .._sync import run_sync
from ..files import Journal, atomic_write_text
from ..llm.client import LanguageModel, as_language_model
from ..llm.tokens import TokenCounter
from ..query.retrieval import RetrievalParams
from .answers import AnswerRecord, answer
from .calls import ModelCalls, Pricing
from .configurations import (
    DEFAULT_CONFIGURATIONS,
    DEFAULT_MAX_TOKENS,
    Configuration,
    ConfigurationOptions,
    build_configurations,
)
from .judging import Judgement, judge, tally_pair
from .questions import EvaluationError, Question, generate_questions, index_passages, read_questions, write_questions
from .report import EvalReport, render_html, summarise_configurations, worst_questions

if TYPE_CHECKING:
    from ..index.front import PathRAGIndex

__all__ = [
    "ANSWERS_FILE",
    "CALLS_FILE",
    "JUDGEMENTS_FILE",
    "QUESTIONS_FILE",
    "REPORT_FILE",
    "RESULTS_FILE",
    "EvalConfig",
    "Evaluation",
    "aevaluate",
    "evaluate",
]

CALLS_FILE = "calls.jsonl"
QUESTIONS_FILE = "questions.jsonl"
ANSWERS_FILE = "answers.jsonl"
JUDGEMENTS_FILE = "judgements.jsonl"
RESULTS_FILE = "results.json"
REPORT_FILE = "report.html"

Model = LanguageModel | Callable[[str], Any]


@dataclass(frozen=True)
class EvalConfig:
    """How an evaluation runs; every field has the default ``pathrag eval`` uses.

    Args:
        num_questions, users, tasks: how many questions to generate, for how many users with how many tasks.
        excerpt_tokens: the corpus excerpts the question model reads to describe the corpus (tokens).
        pairs: which configurations to compare (names); default: the first against each other one, or
            with ``all_pairs`` every pair.
        max_concurrency: model calls in flight at once (all roles together).
        max_attempts, retry_wait: attempts per call on errors, and the back-off base in seconds.
        token_counter: counts the tokens reported (default: pathrag's tokenizer).
        prices: :class:`~pathrag.eval.calls.Pricing` per model role (``"answer"``, ``"keywords"``,
            ``"judge"``, ``"questions"``).
        show_progress: tqdm bars with calls, tokens and cost.
        worst: how many worst-losing questions per pair the report shows.

    Raises:
        ValueError: ``max_concurrency`` or ``max_attempts`` below 1.
    """

    num_questions: int = 25
    users: int = 5
    tasks: int = 5
    excerpt_tokens: int = 6000
    pairs: Sequence[tuple[str, str]] | None = None
    all_pairs: bool = False
    max_concurrency: int = 4
    max_attempts: int = 3
    retry_wait: float = 1.0
    token_counter: TokenCounter | None = None
    prices: Mapping[str, Pricing] = field(default_factory=dict)
    show_progress: bool = False
    worst: int = 5

    def __post_init__(self) -> None:
        if self.max_concurrency < 1 or self.max_attempts < 1:
            raise ValueError("max_concurrency and max_attempts must be >= 1")

    def pairs_of(self, names: Sequence[str]) -> list[tuple[str, str]]:
        """The pairs compared among configurations ``names`` (the first is the reference).

        Raises:
            ValueError: a pair names an unknown configuration or one twice, or there is no pair.
        """
        if self.pairs is not None:
            pairs = list(self.pairs)
        elif self.all_pairs:
            pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        else:
            pairs = [(names[0], other) for other in names[1:]]
        for a, b in pairs:
            if a not in names or b not in names or a == b:
                raise ValueError(f"a pair names two different configurations of {names}, got ({a!r}, {b!r})")
        if not pairs:
            raise ValueError("give at least two configurations to compare")
        return pairs

    def model_calls(self, run_dir: Path | None) -> ModelCalls:
        """The model calls of a run in ``run_dir``, journalled in its ``calls.jsonl`` (None: in memory)."""
        return ModelCalls(
            run_dir / CALLS_FILE if run_dir is not None else None,
            max_concurrency=self.max_concurrency,
            max_attempts=self.max_attempts,
            retry_wait=self.retry_wait,
            token_counter=self.token_counter,
            prices=self.prices,
        )


def _settings(config: EvalConfig | None, settings: Mapping[str, Any]) -> EvalConfig:
    """``config`` with ``settings`` (field names of :class:`EvalConfig`) applied: the keyword shorthand."""
    unknown = set(settings) - {f.name for f in fields(EvalConfig)}
    if unknown:
        raise TypeError(f"unknown evaluation settings: {', '.join(sorted(unknown))} (see EvalConfig)")
    return replace(config or EvalConfig(), **settings)


def check_run_dir(run_dir: str | Path) -> Path:
    """``run_dir`` as a :class:`~pathlib.Path`, after refusing one that is (or lies under) a file with an
    :class:`EvaluationError` saying so; a folder that does not exist yet is made by the run."""
    path = Path(run_dir)
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        where = "" if existing == path else f" ({existing} is not a folder)"
        raise EvaluationError(
            f"the run folder {path} is not a folder{where}: give a new folder, or an earlier run's to resume it"
        )
    return path


class Evaluation:
    """One evaluation run in ``run_dir`` (None: nothing is written, nothing can be resumed).

    Args:
        run_dir: where the journal, questions, answers, judgements, results and report go. Running again
            with the same directory reuses every journalled model answer.
        llm: the answering model.
        configurations: the systems compared; the first is the reference (see :attr:`EvalConfig.pairs`).
        judge_llm: the judging model (default: ``llm``).
        question_llm: the model that writes questions (default: the judge).
        questions: the questions to use; else ``<run_dir>/questions.jsonl`` if present; else generated
            from ``passages``.
        passages: the corpus, for question generation.
        config: how the run goes (:class:`EvalConfig`); ``settings``, its field names as keywords
            (``num_questions=10``...), are applied on top.
        calls: the run's model calls, when a configuration's own model must go through them too (as the
            keyword model of :func:`aevaluate`'s configurations, made with :meth:`ModelCalls.model`);
            default: ``config.model_calls(run_dir)``.
    """

    def __init__(
        self,
        run_dir: str | Path | None,
        *,
        llm: Model,
        configurations: Sequence[Configuration],
        judge_llm: Model | None = None,
        question_llm: Model | None = None,
        questions: Sequence[Question] | None = None,
        passages: Sequence[str] | None = None,
        config: EvalConfig | None = None,
        calls: ModelCalls | None = None,
        **settings: Any,
    ) -> None:
        self.run_dir = check_run_dir(run_dir) if run_dir is not None else None
        self.llm = as_language_model(llm, name="answer-model")
        self.judge_llm = as_language_model(judge_llm, name="judge-model") if judge_llm is not None else self.llm
        self.question_llm = (
            as_language_model(question_llm, name="question-model") if question_llm is not None else self.judge_llm
        )
        self.config = _settings(config, settings)
        if not configurations:
            raise ValueError("give at least two configurations to compare")
        names = [c.name for c in configurations]
        if len(set(names)) != len(names):
            raise ValueError(f"configuration names must differ: {names}")
        self.configurations = list(configurations)
        self.pairs = self.config.pairs_of(names)
        self.questions = list(questions) if questions is not None else None
        self.passages = passages
        self.calls = calls if calls is not None else self.config.model_calls(self.run_dir)

    def run(self) -> EvalReport:
        """Sync twin of :meth:`arun` (safe inside a running event loop)."""
        return run_sync(self.arun())

    async def arun(self) -> EvalReport:
        """Generate (or load) questions, answer them with every configuration, judge, and write the results."""
        started = time.perf_counter()
        if self.run_dir is not None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        progress = _Progress(self.config.show_progress, priced=bool(self.config.prices))
        with self.calls.session(on_change=lambda: progress.show(self.calls)):
            questions = await self._questions(progress)
            answers = await self._answers(questions, progress)
            judgements, missing = await self._judgements(questions, answers, progress)
        report = self._report(questions, answers, judgements, missing, time.perf_counter() - started)
        if self.run_dir is not None:
            Journal(self.run_dir / ANSWERS_FILE).rewrite(asdict(a) for a in answers.values())
            Journal(self.run_dir / JUDGEMENTS_FILE).rewrite(asdict(j) for j in judgements)
            atomic_write_text(self.run_dir / RESULTS_FILE, json.dumps(report.to_json(), indent=1, ensure_ascii=False))
            atomic_write_text(self.run_dir / REPORT_FILE, render_html(report))
        return report

    # -- stages --------------------------------------------------------------------------------------

    async def _questions(self, progress: _Progress) -> list[Question]:
        saved = self.run_dir / QUESTIONS_FILE if self.run_dir else None
        if self.questions is not None:
            questions = self.questions
        elif saved is not None and saved.exists():
            return read_questions(saved)
        else:
            questions = await self._generate(progress)
        if not questions:
            raise EvaluationError("no questions to evaluate")
        if saved is not None:
            write_questions(saved, questions)
        return list(questions)

    async def _generate(self, progress: _Progress) -> list[Question]:
        if not self.passages:
            raise EvaluationError("no questions given and no corpus passages to write them from")
        config = self.config
        with progress.stage(2 + config.users * config.tasks, "questions") as step:
            return await generate_questions(
                self.calls,
                self.question_llm,
                self.passages,
                num_questions=config.num_questions,
                users=config.users,
                tasks=config.tasks,
                excerpt_tokens=config.excerpt_tokens,
                token_counter=config.token_counter,
                progress=step,
            )

    async def _answers(self, questions: Sequence[Question], progress: _Progress) -> dict[tuple[str, str], AnswerRecord]:
        # retrieval is not limited by the calls' limit: without a bound, hundreds would start at once
        retrieval_slots = asyncio.Semaphore(self.config.max_concurrency * 2)

        async def one(question: Question, config: Configuration, step: Callable[[], None]) -> AnswerRecord:
            async with retrieval_slots:
                record = await answer(self.calls, self.llm, question, config, self.config.token_counter)
            step()
            return record

        with progress.stage(len(questions) * len(self.configurations), "answers") as step:
            done = await asyncio.gather(*(one(q, c, step) for q in questions for c in self.configurations))
        return {(a.question_id, a.configuration): a for a in done}

    async def _judgements(
        self, questions: Sequence[Question], answers: Mapping[tuple[str, str], AnswerRecord], progress: _Progress
    ) -> tuple[list[Judgement], dict[tuple[str, str], int]]:
        """Every verdict, and per pair the verdicts not asked for because an answer is missing."""
        jobs = []
        missing: dict[tuple[str, str], int] = {}
        for a, b in self.pairs:
            for question in questions:
                one, other = answers[(question.id, a)], answers[(question.id, b)]
                if one.error or other.error:
                    missing[(a, b)] = missing.get((a, b), 0) + 2
                    continue
                jobs += [(question, one, other), (question, other, one)]  # both orders, each counted once

        async def verdict(job: tuple[Question, AnswerRecord, AnswerRecord], step: Callable[[], None]) -> Judgement:
            judgement = await judge(self.calls, self.judge_llm, *job)
            step()
            return judgement

        with progress.stage(len(jobs), "judging") as step:
            return list(await asyncio.gather(*(verdict(job, step) for job in jobs))), missing

    def _report(
        self,
        questions: list[Question],
        answers: Mapping[tuple[str, str], AnswerRecord],
        judgements: list[Judgement],
        missing: Mapping[tuple[str, str], int],
        seconds: float,
    ) -> EvalReport:
        price = self.config.prices.get("answer", Pricing())
        summaries = summarise_configurations(self.configurations, questions, answers, price)
        pairs = [tally_pair(a, b, judgements, missing=missing.get((a, b), 0)) for a, b in self.pairs]
        worst = [w for p in pairs for w in worst_questions(p, questions, answers, judgements, self.config.worst)]
        models = {"answer": self.llm.name, "judge": self.judge_llm.name, "questions": self.question_llm.name}
        return EvalReport(
            str(self.run_dir) if self.run_dir else None,
            questions,
            summaries,
            pairs,
            worst,
            dict(self.calls.usage),
            list(answers.values()),
            judgements,
            models,
            seconds,
        )


class _Progress:
    """One tqdm bar per stage, its postfix the calls, tokens and (with prices) cost so far."""

    def __init__(self, show: bool, *, priced: bool) -> None:
        self._show, self._priced = show, priced
        self._bar: Any = None

    def stage(self, total: int, label: str) -> _Stage:
        """A bar of ``total`` steps named ``label``, for a ``with`` block: it gives the step function."""
        self._bar = tqdm(total=total, desc=label, unit="step", disable=not self._show, dynamic_ncols=True)
        return _Stage(self._bar)

    def show(self, calls: ModelCalls) -> None:
        """Put ``calls``' totals on the current bar."""
        if self._bar is None or self._bar.disable:
            return
        total = calls.totals()
        cost = f" · cost {total.cost:.4f}" if self._priced else ""
        self._bar.set_postfix_str(
            f"calls {total.calls} new + {total.reused} reused · "
            f"{total.prompt_tokens + total.answer_tokens:,} tokens{cost}",
            refresh=False,
        )


class _Stage:
    """A stage's bar as a context manager: ``with progress.stage(n, label) as step: ... step() ...``."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar

    def __enter__(self) -> Callable[[], None]:
        return lambda: self._bar.update()

    def __exit__(self, *exc: object) -> None:
        self._bar.close()


async def aevaluate(
    index: PathRAGIndex,
    run_dir: str | Path | None,
    *,
    llm: Model,
    judge_llm: Model | None = None,
    configurations: Sequence[str | Configuration] = DEFAULT_CONFIGURATIONS,
    params: RetrievalParams | None = None,
    max_tokens: int | None = DEFAULT_MAX_TOKENS,
    keywords: bool = True,
    question_llm: Model | None = None,
    questions: Sequence[Question] | None = None,
    passages: Sequence[str] | None = None,
    config: EvalConfig | None = None,
    **settings: Any,
) -> EvalReport:
    """Evaluate configurations of ``index`` (registered names or :class:`Configuration` objects).

    ``params`` and ``max_tokens`` set the base retrieval and the context budget of the built-in
    configurations (the same budget for all: a comparison at equal cost; None: no budget); with
    ``keywords`` the answer model extracts query keywords (journalled like every other call). ``config``
    and ``settings`` (:class:`EvalConfig` fields as keywords: ``num_questions=``, ``pairs=``,
    ``max_concurrency=``, ``prices=``, ``show_progress=``...) say how the run goes; the other arguments are
    :class:`Evaluation`'s. The corpus for question generation is the index's chunks.
    """
    answer_model = as_language_model(llm, name="answer-model")
    config = _settings(config, settings)
    folder = Path(run_dir) if run_dir is not None else None
    calls = config.model_calls(folder)
    built_options = ConfigurationOptions(
        params=params or RetrievalParams(),
        max_tokens=max_tokens,
        keyword_llm=calls.model(answer_model, "keywords") if keywords else None,  # journalled with the run
        token_counter=config.token_counter,
    )
    built = iter(build_configurations(index, [c for c in configurations if isinstance(c, str)], built_options))
    chosen = [next(built) if isinstance(c, str) else c for c in configurations]
    if passages is None and questions is None:
        passages = index_passages(index)
    evaluation = Evaluation(
        folder,
        llm=answer_model,
        judge_llm=judge_llm,
        question_llm=question_llm,
        configurations=chosen,
        questions=questions,
        passages=passages,
        config=config,
        calls=calls,
    )
    return await evaluation.arun()


def evaluate(index: PathRAGIndex, run_dir: str | Path | None, **kwargs: Any) -> EvalReport:
    """Sync twin of :func:`aevaluate` (safe inside a running event loop)."""
    return run_sync(aevaluate(index, run_dir, **kwargs))
