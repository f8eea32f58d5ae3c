"""What a run produced, summed up: per-configuration costs, pair results, worst-losing questions, HTML page.

:class:`EvalReport` is the run's result (``results.json`` is its :meth:`~EvalReport.to_json`);
:func:`render_html` makes the standalone ``report.html``: no scripts, no external links, a win-rate
chart per pair as inline SVG, and the questions each configuration lost worst with both answers.

>>> ConfigurationSummary("dense", "", 2, 0, 900.0, 1000.0, 80.0, 0.0, 1.5, 2160, 0.0).answered
2
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .answers import AnswerRecord
from .calls import Pricing, Usage
from .configurations import Configuration
from .judging import DIMENSIONS, Judgement, PairResult
from .questions import Question

__all__ = [
    "ConfigurationSummary",
    "EvalReport",
    "LosingQuestion",
    "render_html",
    "summarise_configurations",
    "worst_questions",
]


@dataclass(frozen=True)
class ConfigurationSummary:
    """Per configuration: answers, failures, mean tokens (context, prompt, answer, retrieval LLM) and
    latency, and the cost of its answers (prompt + answer + retrieval tokens) at the answer model's price."""

    name: str
    description: str
    answered: int
    failed: int
    mean_context_tokens: float
    mean_prompt_tokens: float
    mean_answer_tokens: float
    mean_retrieval_tokens: float
    mean_latency_s: float
    total_tokens: int
    cost: float


@dataclass(frozen=True)
class LosingQuestion:
    """A question where ``a`` lost the most judgements to ``b`` (``losses`` of ``of`` dimension-orders)."""

    a: str
    b: str
    question: Question
    overall_losses: int
    losses: int
    of: int
    answer_a: str
    answer_b: str
    reasons: tuple[str, ...]


@dataclass
class EvalReport:
    """Everything a run produced. ``pairs[i].dimensions[d].win_rate_a`` is the headline number."""

    run_dir: str | None
    questions: list[Question]
    configurations: list[ConfigurationSummary]
    pairs: list[PairResult]
    worst: list[LosingQuestion]
    usage: dict[str, Usage]
    answers: list[AnswerRecord]
    judgements: list[Judgement]
    models: dict[str, str]
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "run_dir": self.run_dir,
            "models": self.models,
            "questions": len(self.questions),
            "dimensions": list(DIMENSIONS),
            "configurations": [asdict(c) for c in self.configurations],
            "pairs": [p.to_json() for p in self.pairs],
            "usage": {role: asdict(u) for role, u in self.usage.items()},
            "worst": [
                {
                    "a": w.a,
                    "b": w.b,
                    "question": w.question.to_json(),
                    "overall_losses": w.overall_losses,
                    "losses": w.losses,
                    "of": w.of,
                }
                for w in self.worst
            ],
            "seconds": round(self.seconds, 3),
        }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def summarise_configurations(
    configurations: Sequence[Configuration],
    questions: Sequence[Question],
    answers: Mapping[tuple[str, str], AnswerRecord],
    price: Pricing,
) -> list[ConfigurationSummary]:
    """One :class:`ConfigurationSummary` per configuration over its answers (by ``(question id, name)``)."""
    summaries = []
    for config in configurations:
        mine = [answers[(q.id, config.name)] for q in questions]
        ok = [a for a in mine if not a.error]
        summaries.append(
            ConfigurationSummary(
                name=config.name,
                description=config.description,
                answered=len(ok),
                failed=len(mine) - len(ok),
                mean_context_tokens=_mean([a.context_tokens for a in ok]),
                mean_prompt_tokens=_mean([a.prompt_tokens for a in ok]),
                mean_answer_tokens=_mean([a.answer_tokens for a in ok]),
                mean_retrieval_tokens=_mean([a.retrieval_tokens for a in ok]),
                mean_latency_s=_mean([a.latency_s for a in ok]),
                total_tokens=sum(a.prompt_tokens + a.answer_tokens + a.retrieval_tokens for a in ok),
                cost=price.cost(
                    sum(a.prompt_tokens + a.retrieval_tokens for a in ok), sum(a.answer_tokens for a in ok)
                ),
            )
        )
    return summaries


def worst_questions(
    pair: PairResult,
    questions: Sequence[Question],
    answers: Mapping[tuple[str, str], AnswerRecord],
    judgements: Sequence[Judgement],
    limit: int,
) -> list[LosingQuestion]:
    """The ``limit`` questions ``pair.a`` lost worst to ``pair.b``: most overall losses, then most losses."""
    found = []
    for question in questions:
        mine = [
            j
            for j in judgements
            if j.valid and j.question_id == question.id and {j.first, j.second} == {pair.a, pair.b}
        ]
        if not mine:
            continue
        losses = sum(w == pair.b for j in mine for w in j.winners.values())  # type: ignore[union-attr]
        overall = sum(j.winners["overall"] == pair.b for j in mine)  # type: ignore[index]
        if not losses:
            continue
        reasons = tuple(j.reasons.get("overall", "") for j in mine if j.reasons.get("overall"))
        found.append(
            LosingQuestion(
                pair.a,
                pair.b,
                question,
                overall,
                losses,
                len(mine) * len(DIMENSIONS),
                answers[(question.id, pair.a)].answer,
                answers[(question.id, pair.b)].answer,
                reasons,
            )
        )
    found.sort(key=lambda w: (-w.overall_losses, -w.losses, w.question.text))
    return found[:limit]


# -- the HTML page -----------------------------------------------------------------------------------

_REPORT_CSS = """body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1f2933;line-height:1.45}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}
td,th{padding:.25rem .7rem;border-bottom:1px solid #e4e7eb;text-align:right}
td:first-child,th:first-child{text-align:left}.num{font-variant-numeric:tabular-nums}
svg{max-width:100%;height:auto}.a{fill:#2680c2}.b{fill:#f0b429}.axis{stroke:#9aa5b1;stroke-dasharray:3 3}
.label{font-size:13px;fill:#1f2933}.pct{font-size:12px;fill:#fff;font-weight:600}
.pct-b{font-size:12px;fill:#1f2933;font-weight:600}.note{font-size:12px;fill:#52606d}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
.pair div{background:#f5f7fa;border-radius:6px;padding:.6rem .8rem;white-space:pre-wrap;font-size:14px}
.muted{color:#52606d;font-size:14px}h3{margin-bottom:.2rem}
.key-a{color:#2680c2;font-weight:700}.key-b{color:#b7791f;font-weight:700}"""


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _chart(pair: PairResult) -> str:
    """Inline SVG: one bar per dimension split into a's share (left) and b's share (right) of the wins."""
    esc = html.escape
    label_w, bar_w, row_h, top = 150, 560, 30, 10
    height = top + row_h * len(DIMENSIONS) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {label_w + bar_w + 170} {height}" role="img" '
        f'aria-label="{esc(f"Win rate of {pair.a} against {pair.b} per dimension")}">'
    ]
    for row, dimension in enumerate(DIMENSIONS):
        tally = pair.dimensions[dimension]
        y = top + row * row_h
        parts.append(f'<text class="label" x="0" y="{y + 18}">{esc(dimension)}</text>')
        rate = tally.win_rate_a
        if rate is None:
            parts.append(f'<text class="note" x="{label_w}" y="{y + 18}">no valid judgements</text>')
            continue
        split = bar_w * rate
        parts.append(
            f'<rect class="a" x="{label_w}" y="{y + 4}" width="{split:.1f}" height="20"><title>'
            f"{esc(pair.a)}: {tally.wins_a} of {tally.judged}</title></rect>"
        )
        parts.append(
            f'<rect class="b" x="{label_w + split:.1f}" y="{y + 4}" width="{bar_w - split:.1f}" height="20">'
            f"<title>{esc(pair.b)}: {tally.wins_b} of {tally.judged}</title></rect>"
        )
        if rate >= 0.12:
            parts.append(f'<text class="pct" x="{label_w + 6}" y="{y + 19}">{_pct(rate)}</text>')
        if rate <= 0.88:
            parts.append(
                f'<text class="pct-b" x="{label_w + bar_w - 6}" y="{y + 19}" text-anchor="end">{_pct(1 - rate)}</text>'
            )
        parts.append(
            f'<text class="note" x="{label_w + bar_w + 10}" y="{y + 18}">orders disagree '
            f"{_pct(tally.disagreement_rate)}</text>"
        )
    parts.append(
        f'<line class="axis" x1="{label_w + bar_w / 2}" y1="{top}" x2="{label_w + bar_w / 2}" '
        f'y2="{height - 10}"/></svg>'
    )
    return "".join(parts)


def render_html(report: EvalReport) -> str:
    """A standalone HTML page of ``report``: no scripts, no external links, charts as inline SVG."""
    esc = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        "<title>pathrag evaluation</title>",
        f"<style>{_REPORT_CSS}</style>",
        "</head>",
        "<body>",
        "<h1>PathRAG evaluation</h1>",
        f'<p class="muted">{len(report.questions)} questions · answers by {esc(report.models.get("answer", "?"))}'
        f" · judged by {esc(report.models.get('judge', '?'))} · each pair judged in both orders"
        f" · {report.seconds:.1f} s</p>",
        "<h2>Configurations</h2>",
        "<table><thead><tr><th>configuration</th><th>answered</th><th>failed</th><th>context tokens</th>"
        "<th>prompt tokens</th><th>answer tokens</th><th>retrieval LLM tokens</th><th>latency s</th>"
        "<th>cost</th></tr></thead><tbody>",
    ]
    for c in report.configurations:
        out.append(
            f'<tr><td>{esc(c.name)}<br><span class="muted">{esc(c.description)}</span></td>'
            f'<td class="num">{c.answered}</td><td class="num">{c.failed}</td>'
            f'<td class="num">{c.mean_context_tokens:,.0f}</td><td class="num">{c.mean_prompt_tokens:,.0f}</td>'
            f'<td class="num">{c.mean_answer_tokens:,.0f}</td>'
            f'<td class="num">{c.mean_retrieval_tokens:,.0f}</td>'
            f'<td class="num">{c.mean_latency_s:.2f}</td><td class="num">{c.cost:.4f}</td></tr>'
        )
    out.append('</tbody></table><p class="muted">Token columns are means per question.</p>')
    for pair in report.pairs:
        out.append(f'<h2><span class="key-a">{esc(pair.a)}</span> vs <span class="key-b">{esc(pair.b)}</span></h2>')
        out.append(
            f'<p class="muted">Share of wins per dimension over {pair.judgements} judgements '
            f"({pair.invalid} invalid, {pair.missing} not judged for want of an answer). "
            '"Orders disagree": questions where swapping the answers changed the winner.</p>'
        )
        out.append(_chart(pair))
    losing = report.worst
    if losing:
        out.append("<h2>Worst-losing questions</h2>")
    for w in losing:
        out.append(
            f"<h3>{esc(w.question.text)}</h3>"
            f'<p class="muted"><span class="key-a">{esc(w.a)}</span> lost {w.losses} of {w.of} '
            f'dimension verdicts (overall: {w.overall_losses} of 2) to <span class="key-b">{esc(w.b)}</span>'
            + (f" · user: {esc(w.question.user)} · task: {esc(w.question.task)}" if w.question.user else "")
            + "</p>"
        )
        out.append(
            f'<div class="pair"><div><strong>{esc(w.a)}</strong>\n{esc(w.answer_a)}</div>'
            f"<div><strong>{esc(w.b)}</strong>\n{esc(w.answer_b)}</div></div>"
        )
        if w.reasons:
            out.append('<p class="muted">Judge (overall): ' + esc(" / ".join(w.reasons)) + "</p>")
    usage = ", ".join(
        f"{role}: {u.calls} calls made + {u.reused} reused, {u.prompt_tokens + u.answer_tokens:,} tokens"
        for role, u in report.usage.items()
    )
    out += [f'<p class="muted">Model use: {esc(usage) or "none"}.</p>', "</body>", "</html>"]
    return "\n".join(out)
