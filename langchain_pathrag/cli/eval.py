"""``pathrag eval``: the papers' evaluation protocol on a store (see :mod:`pathrag.eval`).

Registered on the ``pathrag`` app by :mod:`langchain_pathrag.cli` with :func:`register`. The command uses
the same model, store and retrieval options as ``pathrag query``.

>>> from typer.testing import CliRunner
>>> from langchain_pathrag.cli import app
>>> "--judge-model" in CliRunner().invoke(app, ["eval", "--help"]).output
True
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from .errors import CliError, Command, LazyCommand
from .options import EMBEDDING_MODEL, MAX_HOPS, MODEL, NUM_SEEDS, PARAM, STORE, THETA, TOP_K, retrieval_params
from .providers import NO_KEY, chat_model, language_model
from .readers import regular_file
from .rendering import approximate_tokens

if TYPE_CHECKING:
    from pathrag.eval import EvalReport

__all__ = ["HELP", "command", "print_report", "register"]


HELP = """Compare retrieval configurations the papers' way: LLM-judged win rates on generated questions.

A model writes corpus-level questions, every configuration answers them, and a judge compares each
pair of answers in both orders on comprehensiveness, diversity, logicality, relevance, coherence and
overall. Prints win rates, tokens, latency and cost; writes a resumable run folder and an HTML report.
"""


def register(app: typer.Typer) -> None:
    """Add the ``eval`` command to ``app`` (the ``pathrag`` command line), made only when it runs: its
    options name the evaluation's configurations, and importing them takes the whole core."""

    @app.command("eval", cls=LazyCommand, help=HELP)
    def lazy_eval() -> Command:
        return command()


def command() -> Command:
    """The ``eval`` command itself."""
    from pathrag.eval import (
        DEFAULT_CONFIGURATIONS,
        DEFAULT_MAX_TOKENS,
        EvaluationError,
        OfflineEvalModel,
        Pricing,
        aevaluate,
        configuration_names,
        read_questions,
    )
    from pathrag.eval.run import check_run_dir
    from pathrag.index.front import run_sync

    from .store import opened

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)  # of this one command
    known = ", ".join(f"{name} ({text})" if text else name for name, text in configuration_names().items())

    @app.command("eval", help=HELP)
    def eval_command(
        store: Path = STORE,
        run_dir: Path = typer.Option(
            Path("pathrag-eval"),
            "--run-dir",
            "-o",
            help="Folder of the run: journal of every model answer, questions, answers, verdicts, results.json "
            "and report.html. Run the same command again to resume: only what is missing is paid for.",
        ),
        questions_file: Path | None = typer.Option(
            None,
            "--questions-file",
            "-q",
            exists=True,
            dir_okay=False,
            show_default=False,
            help="Use these questions instead of generating them: a questions.jsonl of an earlier run, or "
            "plain text with one question per line (a line that is neither is an error naming it).",
        ),
        num_questions: int = typer.Option(
            25,
            "--questions",
            "-n",
            min=1,
            help="How many questions to generate (ignored with --questions-file, "
            "or when the run folder already holds questions).",
        ),
        users: int = typer.Option(5, "--users", min=1, help="Imagined users the questions are written for."),
        tasks: int = typer.Option(5, "--tasks", min=1, help="Tasks per user; each (user, task) gets its share."),
        configs: list[str] | None = typer.Option(
            None,
            "--config",
            "-c",
            show_default=False,
            help=f"A configuration to compare; repeat the option for several (default: "
            f"{', '.join(DEFAULT_CONFIGURATIONS)}). The first is compared with each other one. Known: {known}.",
        ),
        all_pairs: bool = typer.Option(
            False, "--all-pairs", help="Compare every pair of configurations, not only the first with each other one."
        ),
        model: str = MODEL,
        judge_model: str | None = typer.Option(
            None,
            "--judge-model",
            "-j",
            envvar="PATHRAG_JUDGE_MODEL",
            show_default=False,
            help="Chat model that writes the questions and judges the answers (default: --model).",
        ),
        offline: bool = typer.Option(
            False,
            "--offline",
            help="Use a free, deterministic stand-in for every model "
            "(no key needed): checks the setup and measures prompt sizes; its questions, "
            "answers and verdicts mean nothing.",
        ),
        embedding_model: str | None = EMBEDDING_MODEL,
        max_tokens: int = typer.Option(
            DEFAULT_MAX_TOKENS,
            "--max-tokens",
            min=1,
            help="Token budget of every configuration's context: all are compared at "
            "the same size (query's --max-tokens).",
        ),
        top_k: int | None = TOP_K,
        num_seeds: int | None = NUM_SEEDS,
        max_hops: int | None = MAX_HOPS,
        theta: float | None = THETA,
        param: list[str] | None = PARAM,
        concurrency: int = typer.Option(4, "--concurrency", min=1, help="Model calls in flight at once."),
        price: str | None = typer.Option(
            None,
            "--price",
            show_default=False,
            metavar="PROMPT,ANSWER",
            help="Price of the answer model per million prompt and answer tokens, e.g. 0.15,0.60: "
            "adds costs to the progress bar and the results.",
        ),
        judge_price: str | None = typer.Option(
            None,
            "--judge-price",
            show_default=False,
            metavar="PROMPT,ANSWER",
            help="Price of the judge model per million tokens (default: --price when the judge is the same model).",
        ),
        worst: int = typer.Option(5, "--worst", min=0, help="Worst-losing questions per pair shown in the report."),
    ) -> None:
        started = time.perf_counter()
        params = retrieval_params(param, top_k=top_k, num_seeds=num_seeds, max_hops=max_hops, theta=theta)
        names = list(configs or DEFAULT_CONFIGURATIONS)
        if len(names) < 2:
            raise CliError("compare at least two configurations (repeat --config)", code=2)
        try:
            prices = _prices(Pricing, price, judge_price, same_judge=judge_model in (None, model))
        except ValueError as exc:
            raise CliError(str(exc), code=2) from exc
        answer_llm, judge_llm = _models(OfflineEvalModel, model, judge_model, offline=offline)
        try:
            check_run_dir(run_dir)  # before the store is opened: a run folder that is a file fails at once
        except EvaluationError as exc:
            raise CliError(f"--run-dir: {exc}", code=2) from exc
        questions = None
        if questions_file is not None:
            regular_file(questions_file)  # a FIFO would block the read forever
            try:
                questions = read_questions(questions_file)
            except (OSError, UnicodeDecodeError, EvaluationError) as exc:
                raise CliError(f"cannot read questions from {questions_file}: {exc}") from exc
        with opened(store, embedding_model=embedding_model) as idx:
            if idx.stats()["chunks"] == 0 and questions is None:
                raise CliError(f"the store {store} holds no documents to write questions about")
            try:
                report = run_sync(
                    aevaluate(
                        idx,
                        run_dir,
                        llm=answer_llm,
                        judge_llm=judge_llm,
                        configurations=names,
                        params=params,
                        max_tokens=max_tokens,
                        questions=questions,
                        num_questions=num_questions,
                        users=users,
                        tasks=tasks,
                        all_pairs=all_pairs,
                        max_concurrency=concurrency,
                        prices=prices,
                        show_progress=True,
                        worst=worst,
                    )
                )
            except KeyboardInterrupt:
                raise CliError(
                    f"interrupted: every model answer so far is journalled in {run_dir}; run the "
                    "same command again to resume",
                    code=130,
                ) from None
            except ValueError as exc:  # unknown configuration names, bad settings
                raise CliError(str(exc), code=2) from exc
            except EvaluationError as exc:
                raise CliError(str(exc)) from exc
        print_report(report, priced=bool(prices), approximate=approximate_tokens())
        _refuse_an_empty_run(report, run_dir)
        typer.echo(
            f"Done in {time.perf_counter() - started:.1f} s. Results: {run_dir / 'results.json'}; "
            f"report: {run_dir / 'report.html'}; questions: {run_dir / 'questions.jsonl'}."
        )
        if offline:
            typer.echo(
                "These were the offline stand-in model's answers and verdicts: they say nothing about "
                "quality. Drop --offline to evaluate with a real model."
            )

    return typer.main.get_command(app)


def _refuse_an_empty_run(report: EvalReport, run_dir: Path) -> None:
    """Fail (exit 1) when no verdict could be given: every question refused, or every answer failed (it exited 0,
    as if it had compared the configurations)."""
    if report.judgements or not report.questions:
        return
    failed = [a.error for a in report.answers if a.error]
    first = f" (the first: {failed[0][:200]})" if failed else ""
    raise CliError(
        f"nothing was compared: {len(failed)} of {len(report.answers)} answers failed{first}, so no pair of answers "
        f"could be judged; see {run_dir}"
    )


def _models(offline_model: Any, model: str, judge_model: str | None, *, offline: bool) -> tuple[Any, Any]:
    """The answer model and the judge: ``offline_model()`` for both when ``offline``, else the chat models named."""
    if offline:
        stand_in = offline_model()
        return stand_in, stand_in
    chat = chat_model(model)
    if chat is None:
        raise CliError(
            f"evaluating needs a language model: {NO_KEY}, or add --offline to try the run with a free stand-in model"
        )
    answer_llm = language_model(chat)
    judge_chat = chat_model(judge_model) if judge_model and judge_model != model else None
    return answer_llm, language_model(judge_chat) if judge_chat is not None else answer_llm


def _prices(pricing: Any, price: str | None, judge_price: str | None, *, same_judge: bool) -> dict[str, Any]:
    """Prices by model role; the answer model also writes the keywords, the judge also the questions."""
    prices: dict[str, Any] = {}
    if price is not None:
        prices["answer"] = prices["keywords"] = pricing.parse(price)
    judge = pricing.parse(judge_price) if judge_price is not None else (prices.get("answer") if same_judge else None)
    if judge is not None:
        prices["judge"] = prices["questions"] = judge
    return prices


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def print_report(
    report: EvalReport, *, priced: bool = False, approximate: bool = False, console: Console | None = None
) -> None:
    """The final tables: configurations (tokens, latency, cost), win rates per pair, model use."""
    from pathrag.eval import DIMENSIONS

    if console is None:  # piped output gets 80 columns by default: too narrow for these tables
        console = Console(highlight=False)
        console = Console(highlight=False, width=max(console.width, 120))
    note = " (approximate)" if approximate else ""
    table = Table(
        "configuration",
        "answered",
        "failed",
        "context tok",
        "prompt tok",
        "answer tok",
        "retrieval LLM tok",
        "latency s",
        *(["cost"] if priced else []),
        title=f"Configurations: means per question{note}",
    )
    for c in report.configurations:
        table.add_row(
            c.name,
            str(c.answered),
            str(c.failed),
            f"{c.mean_context_tokens:,.0f}",
            f"{c.mean_prompt_tokens:,.0f}",
            f"{c.mean_answer_tokens:,.0f}",
            f"{c.mean_retrieval_tokens:,.0f}",
            f"{c.mean_latency_s:.2f}",
            *([f"{c.cost:.4f}"] if priced else []),
        )
    console.print(table)
    for pair in report.pairs:
        table = Table(
            "dimension",
            f"{pair.a} wins",
            f"{pair.b} wins",
            f"{pair.a} win rate",
            "orders disagree",
            title=f"{pair.a} vs {pair.b}: {len(report.questions)} questions × 2 orders = "
            f"{pair.judgements} judgements, {pair.invalid} invalid, {pair.missing} not judged",
        )
        for dimension in DIMENSIONS:
            t = pair.dimensions[dimension]
            table.add_row(
                dimension,
                str(t.wins_a),
                str(t.wins_b),
                _rate(t.win_rate_a),
                f"{_rate(t.disagreement_rate)} of {t.both_orders}",
            )
        console.print(table)
    table = Table(
        "model use",
        "calls made",
        "reused",
        "failed",
        "prompt tok",
        "answer tok",
        *(["cost", "cost this run"] if priced else []),
        title=f"Model calls{note} (reused: from the run's journal, or the same prompt asked twice)",
    )
    for role, u in report.usage.items():
        table.add_row(
            role,
            str(u.calls),
            str(u.reused),
            str(u.failed),
            f"{u.prompt_tokens:,}",
            f"{u.answer_tokens:,}",
            *([f"{u.cost:.4f}", f"{u.new_cost:.4f}"] if priced else []),
        )
    console.print(table)
