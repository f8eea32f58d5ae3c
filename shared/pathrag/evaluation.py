"""The papers' evaluation on your own index: generated questions, pairwise LLM-judge win rates, token cost.

This module is the public API; the work is done in the modules of :mod:`pathrag.eval`, one per step of
the protocol of the PathRAG and LightRAG papers:

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

>>> from pathrag.evaluation import OfflineEvalModel, Question
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

from .eval.answers import AnswerRecord
from .eval.calls import Pricing, Usage
from .eval.configurations import (
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
from .eval.judging import DIMENSIONS, DimensionTally, Judgement, PairResult, parse_verdict, tally_pair
from .eval.offline import OfflineEvalModel
from .eval.questions import (
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
from .eval.report import ConfigurationSummary, EvalReport, LosingQuestion, render_html
from .eval.run import EvalConfig, Evaluation, aevaluate, evaluate

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
