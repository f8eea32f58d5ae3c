"""What the ``pathrag`` command prints: aligned reports, the demo's questions, and key paths as a table,
JSON, a Mermaid graph or a self-contained HTML page (inline SVG)."""

from __future__ import annotations

import html
import math
import statistics
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

import pathrag
from pathrag import PathRAGIndex, RetrievalResult
from pathrag.context import PathContext, render_entity
from pathrag.demo import QuestionRun
from pathrag.tokens import approximate_token_count, count_tokens, default_token_counter

__all__ = [
    "Subgraph",
    "approximate_tokens",
    "arrow",
    "as_json",
    "hop_summary",
    "out",
    "print_paths",
    "print_question",
    "report",
    "subgraph",
    "to_html",
    "to_mermaid",
    "token_note",
]

out = Console(soft_wrap=True, highlight=False)


def approximate_tokens() -> bool:
    """Whether token counts are approximate (tiktoken's encoding could not be loaded)."""
    return default_token_counter() is approximate_token_count


def token_note() -> str:
    """`` (approximate: ...)`` after a token count when counts are approximate, else nothing."""
    return " (approximate: tiktoken's encoding is not available offline)" if approximate_tokens() else ""


def report(title: str, rows: Sequence[tuple[str, Any]]) -> None:
    """A titled block of aligned ``key  value`` lines (plain text: safe to grep and to pipe)."""
    width = max(len(key) for key, _ in rows)
    typer.echo(title)
    for key, value in rows:
        typer.echo(f"  {key:<{width}}  {f'{value:,}' if isinstance(value, int) else value}")


def holdings(stats: Mapping[str, int]) -> tuple[str, str]:
    """The report row saying what a store holds after a write (``stats`` from ``PathRAGIndex.stats()``)."""
    return (
        "store now holds",
        f"{stats['documents']:,} documents, {stats['entities']:,} entities, {stats['relations']:,} relations",
    )


def arrow(nodes: Sequence[str]) -> str:
    """A path as ``A → B → C``."""
    return " → ".join(nodes)


def hop_summary(result: RetrievalResult) -> str:
    """How many key paths of each length, e.g. ``3 paths: 2 × 1 hop, 1 × 2 hops; mean 1.3 hops``."""
    hops = [item.hops for item in result.paths]
    if not hops:
        return "no paths"
    counts = ", ".join(f"{hops.count(h)} × {h} hop{'s' * (h != 1)}" for h in sorted(set(hops)))
    return f"{len(hops)} path{'s' * (len(hops) != 1)}: {counts}; mean {statistics.fmean(hops):.1f} hops"


def print_question(number: int, done: QuestionRun, show_prompt: bool) -> None:
    """One demo question: keywords, seeds, key paths, the reference path, the prompt and the answer."""
    result, question = done.result, done.question
    typer.echo(f"━━ Question {number}: {question.question}")
    typer.echo(f"Keywords: {', '.join(result.keywords.low_level or result.keywords.high_level) or question.question}")
    typer.echo(f"Seed entities: {', '.join(result.seeds) or '(none)'}")
    typer.echo("Key paths (best first):")
    for rank, item in enumerate(result.paths, 1):
        typer.echo(f"  {rank}. score {item.score:.4f}  {item.hops} hop{'s' * (item.hops != 1)}  {arrow(item.nodes)}")
    found = done.rank_of(question.expected_path)
    typer.echo(
        f"Reference path: {arrow(question.expected_path)} — "
        + (f"key path {found}" if found else "not among the key paths")
    )
    typer.echo(f"Hops: {hop_summary(result)}")
    typer.echo(
        f"Context: {done.context.tokens:,} tokens, {len(done.context.paths)} paths "
        "(least reliable first, most reliable last)"
    )
    if show_prompt:
        head = f"── exact prompt ({count_tokens(done.prompt):,} tokens) "
        typer.echo(head + "─" * max(0, 78 - len(head)))
        typer.echo(done.prompt)
        typer.echo("── end of prompt " + "─" * 61)
    if done.answer is not None:
        typer.echo(f"Answer: {done.answer.strip()}")
    typer.echo("")


# -- key paths as table, JSON, Mermaid and HTML ----------------------------------------------------------


def print_paths(result: RetrievalResult) -> None:
    """Keywords, seeds and the key paths as a table (``pathrag paths --format table``)."""
    out.print(Text(f"Keywords: {', '.join(result.keywords.low_level + result.keywords.high_level) or result.query}"))
    more = f", … ({len(result.seeds) - 10} more)" if len(result.seeds) > 10 else ""
    out.print(Text(f"Seeds ({len(result.seeds)}): {', '.join(result.seeds[:10]) or '(none)'}{more}"))
    if not result.items:
        out.print("No key paths: no entity of the store matches the question.")
        return
    table = Table("#", "score", "hops", "path", title=f"Key paths ({hop_summary(result)})")
    for rank, item in enumerate(result.items, 1):
        score = f"{item.score:.4f}" if item.kind == "path" else "seed"
        table.add_row(str(rank), score, str(item.hops), Text(arrow(item.nodes)))
    out.print(table)


def as_json(result: RetrievalResult) -> dict[str, Any]:
    """The retrieval result as JSON-ready data (``pathrag paths --format json``)."""
    return {
        "query": result.query,
        "keywords": {"high_level": list(result.keywords.high_level), "low_level": list(result.keywords.low_level)},
        "seeds": result.seeds,
        "items": [{"id": item.id, **item.metadata(), "text": item.text} for item in result.items],
    }


def sources(index: PathRAGIndex, context: PathContext) -> list[dict[str, Any]]:
    """What a context shows, best first, each with the documents its chunks belong to (``pathrag query``)."""
    chunks = index.chunks
    shown = []
    for item in context.ranked:
        documents = dict.fromkeys(
            doc for cid in item.source_ids if (c := chunks.get(cid)) is not None for doc in c.refs
        )
        shown.append({**item.metadata(), "documents": list(documents), "text": item.text})
    return shown


def print_sources(shown: Sequence[Mapping[str, Any]]) -> None:
    """The sources of an answer, one line each: the paths, then the passages with their documents."""
    typer.echo("\nSources:")
    for number, item in enumerate(shown, start=1):
        documents = ", ".join(item["documents"]) or "no document"
        if item["kind"] == "passage":
            first_line = " ".join(item["text"].split())[:100]
            typer.echo(f"  {number}. passage from {documents}: {first_line}")
        else:
            typer.echo(f"  {number}. {item['kind']} ({documents}): {item['text'].splitlines()[0]}")


Subgraph = tuple[dict[str, pathrag.Entity | None], dict[tuple[str, str], pathrag.Relation | None], list[str]]


def subgraph(index: PathRAGIndex, result: RetrievalResult) -> Subgraph:
    """The retrieved entities (first-seen order), the relations along the paths, and the seeds among them."""
    names = list(dict.fromkeys(n for item in result.items for n in item.nodes))
    pairs = list(dict.fromkeys((min(a, b), max(a, b)) for item in result.paths for a, b in pairwise(item.nodes)))
    entities, relations = index.graph.get_entities(names), index.graph.get_relations(pairs)
    return (
        {n: entities.get(n) for n in names},
        {p: relations.get(p) for p in pairs},
        [s for s in result.seeds if s in names],
    )


def _edge_ends(pair: tuple[str, str], relation: pathrag.Relation | None) -> tuple[str, str]:
    return (relation.source, relation.target) if relation is not None else pair


def _edge_label(relation: pathrag.Relation | None) -> str:
    return ", ".join(relation.keywords[:2]) if relation is not None and relation.keywords else "related"


def _mermaid_text(text: str) -> str:
    return " ".join(text.split()).replace("#", "#35;").replace('"', "#quot;")


def to_mermaid(entities: dict[str, Any], relations: dict[tuple[str, str], Any], seeds: Sequence[str]) -> str:
    """A Mermaid ``graph LR``: one ``nK["NAME"]`` line per entity, one ``a -- "keywords" --> b`` per relation.

    >>> print(to_mermaid({"A": None, "B \\"x\\"": None}, {("A", 'B "x"'): None}, ["A"]))
    graph LR
        n1["A"]
        n2["B #quot;x#quot;"]
        n1 -- "related" --> n2
        classDef seed stroke-width:3px
        class n1 seed
    """
    ids = {name: f"n{i}" for i, name in enumerate(entities, 1)}
    lines = ["graph LR"]
    lines += [f'    {ids[name]}["{_mermaid_text(name)}"]' for name in entities]
    for pair, relation in relations.items():
        a, b = _edge_ends(pair, relation)
        lines.append(f'    {ids[a]} -- "{_mermaid_text(_edge_label(relation))}" --> {ids[b]}')
    if seeds:
        lines += ["    classDef seed stroke-width:3px", f"    class {','.join(ids[s] for s in seeds)} seed"]
    return "\n".join(lines)


_CSS = """body{font-family:system-ui,sans-serif;margin:2rem;color:#1f2933}
svg{border:1px solid #d9e2ec;border-radius:8px;max-width:100%;height:auto;background:#fbfcfe}
.edge{stroke:#829ab1;stroke-width:1.5}.edge-label{font-size:11px;fill:#52606d;paint-order:stroke;stroke:#fbfcfe;stroke-width:4px}
.node circle{fill:#dceefb;stroke:#2680c2;stroke-width:1.5}.node.seed circle{fill:#ffe3a3;stroke:#cb6e17;stroke-width:3}
.node text{font-size:12px;font-weight:600}td,th{padding:.2rem .6rem;text-align:left}
.score{font-variant-numeric:tabular-nums}"""


def _layout(
    entities: dict[str, Any], relations: dict[tuple[str, str], Any]
) -> tuple[dict[str, tuple[float, float]], int, int]:
    """Deterministic positions: each connected part gets a spring layout stretched over its own band,
    the largest part on top; returns the positions and the picture's size."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(entities)
    graph.add_edges_from(relations)
    order = {name: i for i, name in enumerate(entities)}
    parts = sorted(nx.connected_components(graph), key=lambda p: (-len(p), min(order[n] for n in p)))
    width, pad_x, pad_y = 960, 150.0, 40.0  # room for the labels
    pos: dict[str, tuple[float, float]] = {}
    top = 0.0
    for part in parts:
        band = 140.0 if len(part) <= 2 else min(560.0, 120.0 + 50.0 * len(part))
        sub = graph.subgraph(sorted(part, key=order.__getitem__))
        raw = nx.spring_layout(sub, seed=7) if len(sub) > 1 else {n: (0.0, 0.0) for n in sub}
        xs, ys = [float(p[0]) for p in raw.values()], [float(p[1]) for p in raw.values()]

        def stretch(value: float, low: float, high: float, start: float, size: float, pad: float) -> float:
            return (
                start + size / 2 if high - low < 1e-9 else start + pad + (value - low) / (high - low) * (size - 2 * pad)
            )

        for name, (x, y) in raw.items():
            pos[name] = (
                stretch(float(x), min(xs), max(xs), 0.0, width, pad_x),
                stretch(float(y), min(ys), max(ys), top, band, pad_y),
            )
        top += band
    return pos, width, max(1, round(top))


def to_html(
    result: RetrievalResult, entities: dict[str, Any], relations: dict[tuple[str, str], Any], seeds: Sequence[str]
) -> str:
    """A self-contained HTML page (inline SVG, no scripts, no external links) of the retrieved subgraph."""
    radius = 16
    pos, width, height = _layout(entities, relations)
    esc = html.escape
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{esc(f"Retrieved subgraph: {len(entities)} entities, {len(relations)} relations")}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#829ab1"/></marker></defs>',
    ]
    labelled = len(relations) <= 12  # beyond that labels pile up; the tooltips still say it all
    for pair, relation in relations.items():
        a, b = _edge_ends(pair, relation)
        (x1, y1), (x2, y2) = pos[a], pos[b]
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        dx, dy = (x2 - x1) / length * radius, (y2 - y1) / length * radius  # stop at the circles' rims
        tip = f"{a} → {b}" + (f": {relation.description}" if relation is not None and relation.description else "")
        svg.append(
            f'<g class="relation"><title>{esc(tip)}</title>'
            f'<line class="edge" x1="{x1 + dx:.1f}" y1="{y1 + dy:.1f}" x2="{x2 - dx:.1f}" y2="{y2 - dy:.1f}" '
            f'marker-end="url(#arrow)"/>'
            + (
                f'<text class="edge-label" x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2 - 4:.1f}" '
                f'text-anchor="middle">{esc(_edge_label(relation))}</text>'
                if labelled
                else ""
            )
            + "</g>"
        )
    for name, entity in entities.items():
        x, y = pos[name]
        tip = render_entity(name, entity)
        svg.append(
            f'<g class="node{" seed" if name in seeds else ""}"><title>{esc(tip)}</title>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}"/>'
            f'<text x="{x:.1f}" y="{y + radius + 14:.1f}" text-anchor="middle">{esc(name)}</text></g>'
        )
    svg.append("</svg>")
    rows = "".join(
        f'<tr><td>{rank}</td><td class="score">{f"{item.score:.4f}" if item.kind == "path" else "seed"}</td>'
        f"<td>{item.hops}</td><td>{esc(arrow(item.nodes))}</td></tr>"
        for rank, item in enumerate(result.items, 1)
    )
    keywords = ", ".join(result.keywords.low_level + result.keywords.high_level) or result.query
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f"<title>pathrag: key paths for {esc(result.query)}</title>",
            f"<style>{_CSS}</style>",
            "</head>",
            "<body>",
            f"<h1>Key paths</h1><p><strong>Question:</strong> {esc(result.query)}</p>",
            f"<p><strong>Keywords:</strong> {esc(keywords)}<br><strong>Seeds</strong> (outlined in orange): "
            f"{esc(', '.join(result.seeds) or '(none)')}</p>",
            "".join(svg),
            f"<h2>Paths ({esc(hop_summary(result))})</h2>",
            f"<table><thead><tr><th>#</th><th>score</th><th>hops</th><th>path</th></tr></thead><tbody>{rows}</tbody></table>",
            "</body>",
            "</html>",
        ]
    )
