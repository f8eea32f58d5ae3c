"""The papers' evaluation on your own index: generated questions, pairwise LLM-judge win rates, token cost.

This package's names are its public API (imported on first use: ``import pathrag.eval.prompts`` costs
only that module); the work is done in its modules, one per step of the protocol of the PathRAG and
LightRAG papers:

1. **Questions** (:mod:`pathrag.eval.questions`). A model describes the corpus from excerpts spread over
   it, imagines users and their tasks, then writes questions per (user, task) that need the corpus as a
   whole (:func:`agenerate_questions`). They are saved as ``questions.jsonl`` and can be reused.
2. **Answers** (:mod:`pathrag.eval.answers`). Every question is answered once per :class:`Configuration`
   (:mod:`pathrag.eval.configurations`: a name and a function ``query -> context``, registered by name).
   Prompt tokens, answer tokens, the tokens of LLM calls made while retrieving and latency are recorded.
3. **Judging** (:mod:`pathrag.eval.judging`). For each pair of configurations and each question a judge
   model compares the two answers on five dimensions plus an overall verdict, once in each order.

:class:`Evaluation` runs the steps (:mod:`pathrag.eval.run`, settings in an :class:`EvalConfig`), every
model call journalled so that an interrupted run resumes where it stopped (:mod:`pathrag.eval.calls`);
:func:`evaluate` does it on an index. :func:`render_html` writes the report (:mod:`pathrag.eval.report`),
:class:`OfflineEvalModel` stands in for every model (:mod:`pathrag.eval.offline`).

The modules, in the order a run uses them: :mod:`~pathrag.eval.prompts` (every prompt's wording),
:mod:`~pathrag.eval.parsing` (JSON out of a model's free-form answer), :mod:`~pathrag.eval.calls` (every
model call journalled, reused, limited, retried and counted), :mod:`~pathrag.eval.questions`,
:mod:`~pathrag.eval.configurations`, :mod:`~pathrag.eval.answers`, :mod:`~pathrag.eval.judging`,
:mod:`~pathrag.eval.report`, :mod:`~pathrag.eval.run` and :mod:`~pathrag.eval.offline`.

What it may import: every other package of the core (it evaluates an index); none imports it.

>>> from pathrag.eval import Configuration, Evaluation, OfflineEvalModel, Question
>>> report = Evaluation(
...     None,
...     llm=OfflineEvalModel(),
...     configurations=[Configuration("one", lambda q: f"Question: {q}\\nA short context."),
...                     Configuration("two", lambda q: f"Question: {q}\\nA longer context. It says more.")],
...     questions=[Question("How did the flood start?")],
... ).run()
>>> report.pairs[0].judgements, report.pairs[0].dimensions["overall"].judged
(2, 2)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Names are imported on first use (PEP 562), as in ``pathrag``: the command line's ``eval --help`` and a
# module of the package imported alone cost only what they need.
_EXPORTS = {
    "AnswerRecord": "answers",
    "Configuration": "configurations",
    "ConfigurationOptions": "configurations",
    "ConfigurationSummary": "report",
    "DEFAULT_CONFIGURATIONS": "configurations",
    "DEFAULT_MAX_TOKENS": "configurations",
    "DIMENSIONS": "judging",
    "DimensionTally": "judging",
    "EvalConfig": "run",
    "EvalReport": "report",
    "Evaluation": "run",
    "EvaluationError": "questions",
    "Judgement": "judging",
    "LosingQuestion": "report",
    "OfflineEvalModel": "offline",
    "PairResult": "judging",
    "Pricing": "calls",
    "Question": "questions",
    "Usage": "calls",
    "aevaluate": "run",
    "agenerate_questions": "questions",
    "build_configurations": "configurations",
    "configuration_names": "configurations",
    "corpus_excerpts": "questions",
    "evaluate": "run",
    "index_passages": "questions",
    "parse_questions": "questions",
    "parse_users": "questions",
    "parse_verdict": "judging",
    "passage_configuration": "configurations",
    "path_configuration": "configurations",
    "read_questions": "questions",
    "register_configuration": "configurations",
    "render_html": "report",
    "shared_answer_prompt": "configurations",
    "tally_pair": "judging",
    "write_questions": "questions",
}

if TYPE_CHECKING:  # pragma: no cover
    from .answers import AnswerRecord
    from .calls import Pricing, Usage
    from .configurations import (
        DEFAULT_CONFIGURATIONS,
        DEFAULT_MAX_TOKENS,
        Configuration,
        ConfigurationOptions,
        build_configurations,
        configuration_names,
        passage_configuration,
        path_configuration,
        register_configuration,
        shared_answer_prompt,
    )
    from .judging import DIMENSIONS, DimensionTally, Judgement, PairResult, parse_verdict, tally_pair
    from .offline import OfflineEvalModel
    from .questions import (
        EvaluationError,
        Question,
        agenerate_questions,
        corpus_excerpts,
        index_passages,
        parse_questions,
        parse_users,
        read_questions,
        write_questions,
    )
    from .report import ConfigurationSummary, EvalReport, LosingQuestion, render_html
    from .run import EvalConfig, Evaluation, aevaluate, evaluate

__all__ = [
    "DEFAULT_CONFIGURATIONS",
    "DEFAULT_MAX_TOKENS",
    "DIMENSIONS",
    "AnswerRecord",
    "Configuration",
    "ConfigurationOptions",
    "ConfigurationSummary",
    "DimensionTally",
    "EvalConfig",
    "EvalReport",
    "Evaluation",
    "EvaluationError",
    "Judgement",
    "LosingQuestion",
    "OfflineEvalModel",
    "PairResult",
    "Pricing",
    "Question",
    "Usage",
    "aevaluate",
    "agenerate_questions",
    "build_configurations",
    "configuration_names",
    "corpus_excerpts",
    "evaluate",
    "index_passages",
    "parse_questions",
    "parse_users",
    "parse_verdict",
    "passage_configuration",
    "path_configuration",
    "read_questions",
    "register_configuration",
    "render_html",
    "shared_answer_prompt",
    "tally_pair",
    "write_questions",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pathrag.eval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return list(__all__)
