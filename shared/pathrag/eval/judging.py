"""Pairwise judging: the judge's prompt and verdict, and the tally of verdicts into win rates.

For each pair of configurations and each question a judge model compares the two answers on
comprehensiveness, diversity, logicality, relevance and coherence, plus an overall verdict, **once in
each order**. Each order counts as one judgement; :func:`tally_pair` gives win rates and how often the
two orders disagree (the judge's position bias). A verdict that cannot be read is asked for once more,
then counted as invalid; it never stops the run.

>>> parse_verdict('{"comprehensiveness": {"winner": "Answer 2", "reason": "more detail"}, '
...               '"diversity": 2, "logicality": "1", "relevance": {"winner": 1}, '
...               '"coherence": {"winner": "answer 1"}, "overall": {"winner": 2, "reason": "fuller"}}')["overall"]
(2, 'fuller')
>>> parse_verdict("Answer 1 is better.") is None
True
>>> tally = DimensionTally(wins_a=3, wins_b=1, both_orders=2, disagreements=1)
>>> tally.win_rate_a, tally.disagreement_rate
(0.75, 0.5)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..llm.client import LanguageModel
from .answers import AnswerRecord
from .calls import CallFailed, ModelCalls
from .parsing import clean_text, json_value, loose_key
from .prompts import DIMENSION_DEFINITIONS, JUDGE_PROMPT
from .questions import Question

__all__ = [
    "DIMENSIONS",
    "DimensionTally",
    "Judgement",
    "PairResult",
    "judge",
    "judge_prompt",
    "parse_verdict",
    "tally_pair",
]

#: The judged dimensions, in report order; "overall" is the judge's verdict all things considered.
DIMENSIONS: tuple[str, ...] = tuple(DIMENSION_DEFINITIONS)


@dataclass(frozen=True)
class Judgement:
    """One verdict on one question, with ``first`` shown as Answer 1 and ``second`` as Answer 2.

    ``winners`` maps each dimension to the winning configuration's name; it is None for an invalid
    verdict (unreadable twice, or the call failed: then ``error`` says so).
    """

    question_id: str
    first: str
    second: str
    winners: dict[str, str] | None
    reasons: dict[str, str] = field(default_factory=dict)
    attempts: int = 1
    error: str | None = None

    @property
    def valid(self) -> bool:
        """Whether the verdict could be read (``winners`` is set)."""
        return self.winners is not None


def judge_prompt(question: str, answer_1: str, answer_2: str) -> str:
    """The judge's prompt for ``answer_1`` and ``answer_2`` to ``question``, in that order.

    >>> "Answer 2:\\nno" in judge_prompt("Why?", "yes", "no")
    True
    """
    dimensions = "\n".join(f"- {name}: {text}" for name, text in DIMENSION_DEFINITIONS.items())
    example = json.dumps({d: {"winner": 1, "reason": "one short sentence"} for d in DIMENSIONS})
    return JUDGE_PROMPT.format(
        question=question, answer_1=answer_1, answer_2=answer_2, dimensions=dimensions, example=example
    )


def _side(value: Any) -> int | None:
    """1 or 2 from a judge's winner field (``1``, ``"2"``, ``"Answer 1"``, ``"first"``...), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value in (1, 2):
        return int(value)
    if not isinstance(value, str):
        return None
    word = value.strip().lower().strip(".!\"'*")
    if word in ("first", "the first", "first answer"):
        return 1
    if word in ("second", "the second", "second answer"):
        return 2
    match = re.fullmatch(r"(?:answer|response|system)?\s*[#_-]?\s*([12])", word)
    return int(match.group(1)) if match else None


def parse_verdict(text: str) -> dict[str, tuple[int, str]] | None:
    """The judge's verdict: for every dimension of :data:`DIMENSIONS`, ``(winner, reason)`` with winner 1 or 2.

    Accepts ``{"dimension": {"winner": ..., "reason": ...}}`` or ``{"dimension": winner}``, keys in any
    case, fenced or inside prose, optionally wrapped in one outer object. Returns None when any dimension
    is missing or has no clear winner (a tie counts as unclear); never raises.
    """
    data = json_value(text)
    if not isinstance(data, dict):
        return None
    keyed = {loose_key(k): v for k, v in data.items()}
    if not any(d in keyed for d in DIMENSIONS) and len(data) == 1:
        inner = next(iter(data.values()))  # {"verdict": {...}}
        keyed = {loose_key(k): v for k, v in inner.items()} if isinstance(inner, dict) else {}
    verdict = {}
    for dimension in DIMENSIONS:
        value = keyed.get(dimension)
        reason: Any = ""
        if isinstance(value, dict):
            inner_keys = {loose_key(k): v for k, v in value.items()}
            reason = inner_keys.get("reason") or inner_keys.get("explanation") or ""
            value = next((inner_keys[k] for k in ("winner", "better", "choice", "answer") if k in inner_keys), None)
        side = _side(value)
        if side is None:
            return None
        verdict[dimension] = (side, clean_text(reason, 400))
    return verdict


async def judge(
    calls: ModelCalls, model: LanguageModel, question: Question, first: AnswerRecord, second: AnswerRecord
) -> Judgement:
    """``model``'s verdict on ``first`` (shown as Answer 1) against ``second``; invalid rather than raising."""
    names = {1: first.configuration, 2: second.configuration}
    prompt = judge_prompt(question.text, first.answer, second.answer)
    try:
        verdict, attempts = await calls.ask_parsed(model, prompt, "judge", parse_verdict)
    except CallFailed as exc:
        return Judgement(question.id, names[1], names[2], None, error=str(exc))
    if verdict is None:
        return Judgement(question.id, names[1], names[2], None, attempts=attempts, error="unreadable verdict")
    return Judgement(
        question.id,
        names[1],
        names[2],
        {d: names[side] for d, (side, _) in verdict.items()},
        {d: reason for d, (_, reason) in verdict.items()},
        attempts,
    )


@dataclass
class DimensionTally:
    """Wins of a pair ``a`` vs ``b`` on one dimension, over every valid judgement (each order counts once).

    ``both_orders``: questions judged validly in both orders; ``disagreements``: those where the two
    orders picked different configurations.
    """

    wins_a: int = 0
    wins_b: int = 0
    both_orders: int = 0
    disagreements: int = 0

    @property
    def judged(self) -> int:
        """Valid verdicts on this dimension: the wins of ``a`` and ``b`` together."""
        return self.wins_a + self.wins_b

    @property
    def win_rate_a(self) -> float | None:
        """The share of :attr:`judged` verdicts won by ``a`` (``None`` when nothing was judged)."""
        return self.wins_a / self.judged if self.judged else None

    @property
    def disagreement_rate(self) -> float | None:
        """The share of the ``both_orders`` questions whose two verdicts differ (``None``: no such question)."""
        return self.disagreements / self.both_orders if self.both_orders else None

    def to_json(self) -> dict[str, Any]:
        """The counts and rates as a JSON-ready dict."""
        return {
            "wins_a": self.wins_a,
            "wins_b": self.wins_b,
            "judged": self.judged,
            "win_rate_a": self.win_rate_a,
            "both_orders": self.both_orders,
            "disagreements": self.disagreements,
            "disagreement_rate": self.disagreement_rate,
        }


@dataclass
class PairResult:
    """Configuration ``a`` against ``b``: the tally per dimension; ``judgements`` counts verdicts asked
    for (two per question), ``invalid`` those that could not be read, ``missing`` those not asked because
    an answer was missing."""

    a: str
    b: str
    judgements: int = 0
    invalid: int = 0
    missing: int = 0
    dimensions: dict[str, DimensionTally] = field(default_factory=lambda: {d: DimensionTally() for d in DIMENSIONS})

    def to_json(self) -> dict[str, Any]:
        """The pair, its counts and each dimension's tally as a JSON-ready dict."""
        return {
            "a": self.a,
            "b": self.b,
            "judgements": self.judgements,
            "invalid": self.invalid,
            "missing": self.missing,
            "dimensions": {d: t.to_json() for d, t in self.dimensions.items()},
        }


def tally_pair(a: str, b: str, judgements: Iterable[Judgement], *, missing: int = 0) -> PairResult:
    """Count the judgements of ``a`` vs ``b`` (either order); others are ignored.

    Each valid judgement adds one win per dimension to the configuration it names. For questions judged
    validly in both orders, a dimension where the orders name different winners is a disagreement.

    >>> a_wins, b_wins = dict.fromkeys(DIMENSIONS, "a"), dict.fromkeys(DIMENSIONS, "b")
    >>> pair = tally_pair("a", "b", [Judgement("q1", "a", "b", a_wins), Judgement("q1", "b", "a", b_wins)])
    >>> overall = pair.dimensions["overall"]
    >>> overall.win_rate_a, overall.disagreement_rate
    (0.5, 1.0)
    """
    result = PairResult(a, b, missing=missing)
    by_question: dict[str, dict[str, Judgement]] = {}
    for j in judgements:
        if {j.first, j.second} != {a, b}:
            continue
        result.judgements += 1
        if not j.valid:
            result.invalid += 1
            continue
        by_question.setdefault(j.question_id, {})["ab" if j.first == a else "ba"] = j
        for dimension, tally in result.dimensions.items():
            if j.winners[dimension] == a:  # type: ignore[index]
                tally.wins_a += 1
            else:
                tally.wins_b += 1
    for orders in by_question.values():
        if len(orders) == 2:
            for dimension, tally in result.dimensions.items():
                tally.both_orders += 1
                ab, ba = orders["ab"].winners, orders["ba"].winners
                tally.disagreements += ab[dimension] != ba[dimension]  # type: ignore[index]
    return result
