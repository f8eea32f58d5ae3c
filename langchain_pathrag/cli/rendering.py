"""What the ``pathrag`` command prints: aligned reports, the demo's questions, and key paths as a table,
JSON, a Mermaid graph or a self-contained HTML page (inline SVG)."""

from __future__ import annotations

import html
import math
import re
import statistics
import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any, TypeAlias

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pathrag.llm.tokens import approximate_token_count, count_tokens, default_token_counter
from pathrag.query.citations import cited_numbers, relevance_scores

if TYPE_CHECKING:  # the core is imported when a command runs, not for ``pathrag --help``
    import pathrag
    from pathrag import PathRAGIndex, RetrievalResult
    from pathrag.demo import QuestionRun
    from pathrag.query.context import PathContext

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
    hops = [item.hops for item in result.key_paths]
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
    for rank, item in enumerate(result.key_paths, 1):
        typer.echo(f"  {rank}. score {item.score:.4f}  {item.hops} hop{'s' * (item.hops != 1)}  {arrow(item.nodes)}")
    found = done.rank_of(question.expected_path)
    typer.echo(
        f"Reference path: {arrow(question.expected_path)} — "
        + (f"key path {found}" if found else "not among the key paths")
    )
    typer.echo(f"Hops: {hop_summary(result)}")
    budget = result.max_tokens
    fits = (
        "no token budget"
        if budget is None
        else f"{'within' if done.context.tokens <= budget else 'over'} the {budget:,}-token budget"
    )
    typer.echo(
        f"Context: {done.context.tokens:,} tokens, {len(done.context.paths)} paths "
        f"(least reliable first, most reliable last), {fits}"
    )
    if show_prompt:  # the budget is the context's, as everywhere; the answer instructions come on top
        head = f"── exact prompt: the context, then the instructions ({count_tokens(done.prompt):,} tokens) "
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
    """What a context shows, best first, each with its ``number`` in the prompt (what an answer's ``[n]``
    cites) and the documents its chunks belong to (``pathrag query``)."""
    chunks = index.chunks
    numbers = {item.id: n for n, item in enumerate(context.items, start=1)}
    relevance = relevance_scores(context.items)
    shown = []
    for item in context.ranked:
        documents = dict.fromkeys(
            doc for cid in item.source_ids if (c := chunks.get(cid)) is not None for doc in c.refs
        )
        shown.append(
            {
                "number": numbers.get(item.id),
                **item.metadata(),
                "score": relevance.get(item.id, 0.0),
                "raw_score": item.score,
                "documents": list(documents),
                "text": item.text,
            }
        )
    return shown


def cited_sources(answer: str, shown: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The entries of :func:`sources` that ``answer`` cites by number, in the order it first cites them."""
    by_number = {item["number"]: item for item in shown}
    return [by_number[n] for n in cited_numbers(answer, len(shown)) if n in by_number]


def _source_line(item: Mapping[str, Any]) -> str:
    documents = ", ".join(item["documents"]) or "no document"
    if item["kind"] == "passage":
        first_line = " ".join(item["text"].split())[:100]
        return f"  [{item['number']}] passage from {documents}: {first_line}"
    return f"  [{item['number']}] {item['kind']} ({documents}): {item['text'].splitlines()[0]}"


def print_sources(cited: Sequence[Mapping[str, Any]], sent: Sequence[Mapping[str, Any]]) -> None:
    """The sources the answer cites, one line each, then one line on the whole context it was sent."""
    kinds = Counter(str(item["kind"]) for item in sent)
    counted = ", ".join(f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in sorted(kinds.items()))
    if cited:
        typer.echo("\nSources the answer cites:")
        for item in cited:
            typer.echo(_source_line(item))
    else:
        typer.echo("\nThe answer cites no numbered source.")
    typer.echo(
        f"Context sent to the model: {len(sent)} items ({counted or 'none'}), numbered [1] to [{len(sent)}] in "
        "the prompt; sent is not used (--json lists them all)."
    )


Subgraph: TypeAlias = (
    "tuple[dict[str, pathrag.Entity | None], dict[tuple[str, str], pathrag.Relation | None], list[str]]"
)


def subgraph(index: PathRAGIndex, result: RetrievalResult) -> Subgraph:
    """The retrieved entities (first-seen order), the relations along the paths, and the seeds among them."""
    shown = [*result.key_paths, *(item for item in result.items if item.kind == "entity")]
    names = list(dict.fromkeys(n for item in shown for n in item.nodes))
    pairs = list(dict.fromkeys((min(a, b), max(a, b)) for item in result.key_paths for a, b in pairwise(item.nodes)))
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


_MERMAID_PLAIN = frozenset(" -_.,/()'!?+@")
"""Characters a quoted Mermaid label shows as they are (with letters and digits); every other one is written
as an entity code."""


def _mermaid_char(ch: str) -> str:
    if ch.isalnum() or ch in _MERMAID_PLAIN:
        return ch
    return "#quot;" if ch == '"' else f"#{ord(ch)};"


def _mermaid_text(text: str) -> str:
    """``text`` on one line for a quoted Mermaid label, every character Mermaid or the HTML it makes could
    interpret written as a Mermaid entity code (``#quot;``, ``#NN;``): ``#``, the ``%`` of directives
    (``%%{init: ...}%%``) and comments, the ``<``, ``>`` and ``&`` of markup, braces, brackets, ``:``, ``;``,
    ``|``, backticks, ``$``, ``\\``. Letters, digits, spaces and ``-_.,/()'!?+@`` stay as they are.

    >>> _mermaid_text('%%{init: {"theme": "dark"}}%% <img src=x>')
    '#37;#37;#123;init#58; #123;#quot;theme#quot;#58; #quot;dark#quot;#125;#125;#37;#37; #60;img src#61;x#62;'
    """
    return "".join(map(_mermaid_char, " ".join(text.split())))


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


# -- the HTML page: a best-path box, then the subgraph as an inline SVG, then the table -----------------

_BEST = "#0b7a75"  # the best path's colour, in the box, the picture and the table
_CSS = f"""body{{font-family:system-ui,sans-serif;margin:1.2rem 2rem;color:#1f2933;max-width:1240px}}
h1{{font-size:1.5rem;margin:0 0 .3rem}}h2{{font-size:1.1rem;margin:1.2rem 0 .4rem}}p{{margin:.3rem 0}}
.best-path{{border:2px solid {_BEST};border-radius:8px;background:#effcf6;padding:.5rem 1rem;margin:.7rem 0}}
.best-path h2{{margin:0 0 .2rem;color:{_BEST}}}.meta{{font-weight:400;color:#52606d;font-size:.9rem}}
.chain{{font-size:1.1rem;font-weight:600}}.hops{{margin:.2rem 0 0;padding-left:1.4rem;color:#323f4b}}
.rel{{color:{_BEST};font-weight:600}}.legend{{color:#52606d;font-size:.9rem}}
.swatch{{display:inline-block;width:1.8em;height:4px;vertical-align:middle;background:{_BEST};margin:0 .3em 0 .9em}}
.swatch.seed{{width:.8em;height:.8em;border-radius:50%;background:#ffe3a3;border:2px solid #cb6e17}}
svg{{display:block;margin:.5rem 0;border:1px solid #d9e2ec;border-radius:8px;max-width:100%;height:auto;
background:#fbfcfe}}
.edge{{stroke:#9aa5b1;stroke-width:1.5}}.edge.best{{stroke:{_BEST};stroke-width:4}}
.caption rect{{fill:#fbfcfe;fill-opacity:.92;stroke:#d9e2ec}}.caption text{{font-size:11px;fill:#52606d}}
.caption.best rect{{fill:#fff;stroke:{_BEST};stroke-width:1.5}}
.caption.best text{{font-size:12px;font-weight:700;fill:{_BEST}}}
.node circle{{fill:#dceefb;stroke:#2680c2;stroke-width:1.5}}
.node.seed circle{{fill:#ffe3a3;stroke:#cb6e17;stroke-width:3}}
.node.best circle{{stroke:{_BEST};stroke-width:4}}.node.best text{{fill:{_BEST}}}
.node text{{font-size:12px;font-weight:600;paint-order:stroke;stroke:#fbfcfe;stroke-width:4px;stroke-linejoin:round}}
table{{border-collapse:collapse}}td,th{{padding:.2rem .6rem;text-align:left;vertical-align:top}}
tr.best td{{background:#effcf6;color:{_BEST};font-weight:600}}.score{{font-variant-numeric:tabular-nums}}"""

_RADIUS = 16
_NAME_SIZE, _NAME_LEADING = 12, 14  # px, as in _CSS
_LABEL_SIZE = 12  # px, a best-path edge's caption (the others are 1 px smaller), as in _CSS
_NAME_WRAP, _NAME_LINES = 16, 3  # a node's name: characters per line, and lines before it is cut short
_CAPTION_CHARS = 24  # an edge caption longer than this is cut short (its tooltip lists every keyword)
_MARGIN = 14.0  # around everything drawn, labels included
_OFF_PATH = 0.3  # how far other nodes keep from the best path's line, in layout units (the path spans 2)

_Box = tuple[float, float, float, float]  # left, top, right, bottom


def _text_width(text: str, size: float) -> float:
    """About how wide ``text`` renders at ``size`` px in a bold sans-serif (no font metrics offline: an upper
    bound that keeps names inside the picture rather than an exact width)."""
    narrow, wide = " .,:;'!|()[]fijlrtI", "mwMW@%&"
    return size * sum(0.4 if ch in narrow else 0.9 if ch in wide else 0.74 if ch.isupper() else 0.64 for ch in text)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _first_sentence(text: str, limit: int = 160) -> str:
    """A description's first sentence, cut short: the box at the top stays a few lines long."""
    return _shorten(re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0], limit)


def _name_lines(name: str) -> list[str]:
    """A node's name on up to three lines, broken at spaces; a longer one is cut short with ``…`` (the node's
    tooltip and the path table keep it whole)."""
    lines = textwrap.wrap(name, _NAME_WRAP) or [name]
    if len(lines) > _NAME_LINES:
        lines = [*lines[: _NAME_LINES - 1], _shorten(lines[_NAME_LINES - 1] + " …", _NAME_WRAP)]
    return lines


def _edge_caption(relation: pathrag.Relation | None) -> str:
    """An edge's short caption in the picture: its first keyword or two, cut short to stay readable."""
    if relation is None or not relation.keywords:
        return "related"
    two = ", ".join(relation.keywords[:2])
    return two if len(two) <= _CAPTION_CHARS else _shorten(relation.keywords[0], _CAPTION_CHARS)


def _overlaps(box: _Box, others: Sequence[_Box]) -> bool:
    return any(box[0] < o[2] and o[0] < box[2] and box[1] < o[3] and o[1] < box[3] for o in others)


def _layout(
    entities: dict[str, Any], relations: dict[tuple[str, str], Any], best: Sequence[str]
) -> dict[str, tuple[float, float]]:
    """Deterministic positions in px. The best path runs straight across its part, left to right, and the
    other entities settle around it (a spring layout with the path pinned); every other connected part gets
    a band of its own below, the largest first. The caller fits the picture around the labels."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(entities)
    graph.add_edges_from(relations)
    order = {name: i for i, name in enumerate(entities)}
    on_best = set(best)
    parts = sorted(nx.connected_components(graph), key=lambda p: (not p & on_best, -len(p), min(order[n] for n in p)))
    width = 960.0 if len(entities) <= 12 else 1280.0  # wider for many entities: names are up to ~140 px wide
    pos: dict[str, tuple[float, float]] = {}
    top = 0.0
    for part in parts:
        sub = graph.subgraph(sorted(part, key=order.__getitem__))
        pinned = [n for n in best if n in part]
        if len(sub) == 1:
            raw = {n: (0.0, 0.0) for n in sub}
        elif pinned:
            step = 2.0 / (len(pinned) - 1)
            start = {n: (-1.0 + i * step, 0.0) for i, n in enumerate(pinned)}
            # networkx's own edge length (1/sqrt(n)) keeps the others about as wide as the pinned path
            raw = nx.spring_layout(sub, pos=start, fixed=pinned, seed=7)
            # a node pulled onto the pinned line would sit on the best path's edges: move it above or below
            for name, (x, y) in list(raw.items()):
                if name not in on_best and -1.0 < x < 1.0 and abs(y) < _OFF_PATH:
                    raw[name] = (float(x), _OFF_PATH if y >= 0 else -_OFF_PATH)
        else:
            raw = nx.spring_layout(sub, seed=7)
        band = 90.0 if len(part) <= 2 else min(620.0, 60.0 + 45.0 * len(part))
        xs, ys = [float(p[0]) for p in raw.values()], [float(p[1]) for p in raw.values()]

        def stretch(value: float, low: float, high: float, start: float, size: float) -> float:
            return start + size / 2 if high - low < 1e-9 else start + (value - low) / (high - low) * size

        for name, (x, y) in raw.items():
            pos[name] = (
                stretch(float(x), min(xs), max(xs), 0.0, width),
                stretch(float(y), min(ys), max(ys), top, band),
            )
        top += band + 90.0  # room for the names under the band's lowest nodes
    return pos


def _untangle(
    pos: dict[str, tuple[float, float]], halves: dict[str, float], names: dict[str, list[str]], fixed: set[str]
) -> dict[str, tuple[float, float]]:
    """Push apart nodes whose circle-and-name boxes overlap, along the axis where they overlap least; the best
    path's nodes stay where they are. A few rounds of small moves: enough for the pictures a question gives."""
    pos = dict(pos)
    order = list(pos)

    def box(name: str) -> _Box:
        x, y = pos[name]
        depth = _RADIUS + 8 + _NAME_LEADING * len(names[name])
        return x - halves[name] - 4, y - _RADIUS - 4, x + halves[name] + 4, y + depth

    for _ in range(40):
        moved = False
        for i, a in enumerate(order):
            for b in order[i + 1 :]:
                if a in fixed and b in fixed:
                    continue
                (a0, a1, a2, a3), (b0, b1, b2, b3) = box(a), box(b)
                wide, tall = min(a2, b2) - max(a0, b0), min(a3, b3) - max(a1, b1)
                if wide <= 0 or tall <= 0:
                    continue
                (ax, ay), (bx, by) = pos[a], pos[b]
                if wide < tall:  # shift sideways
                    step, dx, dy = wide, 1.0 if bx >= ax else -1.0, 0.0
                else:
                    step, dx, dy = tall, 0.0, 1.0 if by >= ay else -1.0
                share = 1.0 if a in fixed or b in fixed else 0.5  # a free node takes the whole move alone
                if a not in fixed:
                    pos[a] = (ax - dx * step * share, ay - dy * step * share)
                if b not in fixed:
                    pos[b] = (bx + dx * step * share, by + dy * step * share)
                moved = True
        if not moved:
            break
    return pos


def _relation_between(relations: dict[tuple[str, str], Any], a: str, b: str) -> pathrag.Relation | None:
    found: pathrag.Relation | None = relations.get((a, b), relations.get((b, a)))
    return found


def _best_box(result: RetrievalResult, relations: dict[tuple[str, str], Any]) -> str:
    """The best path as text, hop by hop with its relations: what a reader looks at first."""
    esc = html.escape
    if not result.key_paths:
        why = (
            "No path joins the seed entities; the picture shows the seeds alone."
            if result.items
            else "No entity of the store matches the question."
        )
        return f'<section class="best-path" aria-label="Best path"><h2>No key path</h2><p>{why}</p></section>'
    best = result.key_paths[0]
    hops = []
    for a, b in pairwise(best.nodes):
        relation = _relation_between(relations, a, b)
        keywords = ", ".join(relation.keywords[:4]) if relation is not None and relation.keywords else "related"
        said = (
            f": {esc(_first_sentence(relation.description))}" if relation is not None and relation.description else ""
        )
        hops.append(f'<li><b>{esc(a)}</b> — <span class="rel">{esc(keywords)}</span> — <b>{esc(b)}</b>{said}</li>')
    count = len(result.key_paths)
    meta = (
        f"score {best.score:.4f} · {best.hops} hop{'s' * (best.hops != 1)} · "
        f"the most reliable of {count} key path{'s' * (count != 1)}"
    )
    return (
        f'<section class="best-path" aria-label="Best path"><h2>Best path <span class="meta">{meta}</span></h2>'
        f'<p class="chain">{esc(arrow(best.nodes))}</p><ol class="hops">{"".join(hops)}</ol></section>'
    )


def to_html(
    result: RetrievalResult, entities: dict[str, Any], relations: dict[tuple[str, str], Any], seeds: Sequence[str]
) -> str:
    """A self-contained HTML page (inline SVG, no scripts, no external links) of the retrieved subgraph: the
    best path first as text and highlighted in the picture, every edge with a short relation caption where
    it fits (every relation in its tooltip), whole names (wrapped, or in the tooltip), then all key paths."""
    from pathrag.query.context import render_entity

    esc = html.escape
    best = [str(n) for n in result.key_paths[0].nodes] if result.key_paths else []
    best_pairs = {frozenset(p) for p in pairwise(best)}
    names = {name: _name_lines(name) for name in entities}
    halves = {name: max(_RADIUS + 2, max(_text_width(line, _NAME_SIZE) for line in names[name]) / 2) for name in names}
    pos = _untangle(_layout(entities, relations, best), halves, names, set(best))

    # what the nodes take up: circles, and the names under them
    taken: list[_Box] = []
    for name, (x, y) in pos.items():
        half = halves[name]
        taken.append((x - _RADIUS - 2, y - _RADIUS - 2, x + _RADIUS + 2, y + _RADIUS + 2))
        taken.append((x - half, y + _RADIUS + 2, x + half, y + _RADIUS + 6 + _NAME_LEADING * len(names[name])))

    # edge captions: the best path's first (always shown), then the others where they overlap nothing
    captions: dict[tuple[str, str], tuple[_Box, str]] = {}
    placed: list[_Box] = []
    for pair in sorted(relations, key=lambda p: frozenset(p) not in best_pairs):
        relation = relations[pair]
        a, b = _edge_ends(pair, relation)
        (x1, y1), (x2, y2), caption = pos[a], pos[b], _edge_caption(relation)
        on_best = frozenset(pair) in best_pairs
        half = _text_width(caption, _LABEL_SIZE if on_best else _LABEL_SIZE - 1) / 2 + (5 if on_best else 3)
        spots = [(x1 + (x2 - x1) * t, y1 + (y2 - y1) * t) for t in (0.5, 0.4, 0.6, 0.3, 0.7, 0.25, 0.75)]
        boxes = [(x - half, y - _LABEL_SIZE * 0.7, x + half, y + _LABEL_SIZE * 0.7) for x, y in spots]
        free = [i for i, box in enumerate(boxes) if not _overlaps(box, taken + placed)]
        if free or on_best:
            spot = free[0] if free else 0
            captions[pair] = (boxes[spot], caption)
            placed.append(boxes[spot])

    # fit the picture around everything drawn, so no name or caption is clipped
    everything = taken + placed or [(0.0, 0.0, 320.0, 40.0)]  # nothing retrieved: a small empty picture
    left, top = min(b[0] for b in everything) - _MARGIN, min(b[1] for b in everything) - _MARGIN
    width = math.ceil(max(b[2] for b in everything) + _MARGIN - left)
    height = math.ceil(max(b[3] for b in everything) + _MARGIN - top)

    def at(x: float, y: float) -> tuple[float, float]:
        return x - left, y - top

    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" role="img" '
        f'aria-label="{esc(f"Retrieved subgraph: {len(entities)} entities, {len(relations)} relations")}">',
        "<defs>"
        + "".join(
            f'<marker id="{key}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="{size}" markerHeight="{size}" '
            f'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/>'
            "</marker>"
            for key, size, colour in (("arrow", 9, "#9aa5b1"), ("arrow-best", 13, _BEST))
        )
        + "</defs>",
    ]
    tips: dict[tuple[str, str], str] = {}
    for pair, relation in relations.items():
        a, b = _edge_ends(pair, relation)
        keywords, said = (relation.keywords, relation.description) if relation is not None else ((), "")
        tips[pair] = f"{a} → {b}" + (f" [{', '.join(keywords)}]" if keywords else "") + (f": {said}" if said else "")
        (x1, y1), (x2, y2) = at(*pos[a]), at(*pos[b])
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        rim = _RADIUS + 2  # stop at the circles' rims, outside their stroke
        dx, dy = (x2 - x1) / length * rim, (y2 - y1) / length * rim
        on_best = frozenset(pair) in best_pairs
        svg.append(
            f'<g class="relation"><title>{esc(tips[pair])}</title>'
            f'<line class="edge{" best" * on_best}" x1="{x1 + dx:.1f}" y1="{y1 + dy:.1f}" x2="{x2 - dx:.1f}" '
            f'y2="{y2 - dy:.1f}" marker-end="url(#{"arrow-best" if on_best else "arrow"})"/></g>'
        )
    # captions over every line (their background masks lines crossing them), nodes over everything
    for pair, ((x0, y0, x1, y1), caption) in captions.items():
        (x0, y0), (x1, y1) = at(x0, y0), at(x1, y1)
        svg.append(
            f'<g class="caption{" best" * (frozenset(pair) in best_pairs)}"><title>{esc(tips[pair])}</title>'
            f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" rx="4"/>'
            f'<text x="{(x0 + x1) / 2:.1f}" y="{(y0 + y1) / 2 + _LABEL_SIZE * 0.35:.1f}" text-anchor="middle">'
            f"{esc(caption)}</text></g>"
        )
    for name, entity in entities.items():
        x, y = at(*pos[name])
        kind = "node" + " seed" * (name in seeds) + " best" * (name in best)
        lines = "".join(
            f'<tspan x="{x:.1f}" dy="{0 if i == 0 else _NAME_LEADING}">{esc(line)}</tspan>'
            for i, line in enumerate(names[name])
        )
        svg.append(
            f'<g class="{kind}"><title>{esc(render_entity(name, entity))}</title>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{_RADIUS}"/>'
            f'<text x="{x:.1f}" y="{y + _RADIUS + _NAME_SIZE + 2:.1f}" text-anchor="middle">{lines}</text></g>'
        )
    svg.append("</svg>")
    best_row = ' class="best"'
    rows = "".join(
        f"<tr{best_row * (rank == 1 and item.kind == 'path')}><td>{rank}</td>"
        f'<td class="score">{f"{item.score:.4f}" if item.kind == "path" else "seed"}</td>'
        f"<td>{item.hops}</td><td>{esc(arrow(item.nodes))}</td></tr>"
        for rank, item in enumerate(result.items, 1)
    )
    keywords = ", ".join(result.keywords.low_level + result.keywords.high_level) or result.query
    legend = (
        '<span class="legend"><span class="swatch"></span>best path<span class="swatch seed"></span>seed entity'
        " · hover a name or an edge for its description</span>"
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>pathrag: key paths for {esc(result.query)}</title>",
            f"<style>{_CSS}</style>",
            "</head>",
            "<body>",
            f"<h1>Key paths</h1><p><strong>Question:</strong> {esc(result.query)}</p>",
            _best_box(result, relations),
            f"<p><strong>Keywords:</strong> {esc(keywords)}<br><strong>Seeds:</strong> "
            f"{esc(', '.join(result.seeds) or '(none)')}<br>{legend}</p>",
            "".join(svg),
            f"<h2>All key paths ({esc(hop_summary(result))})</h2>",
            f"<table><thead><tr><th>#</th><th>score</th><th>hops</th><th>path</th></tr></thead><tbody>{rows}</tbody></table>",
            "</body>",
            "</html>",
        ]
    )
