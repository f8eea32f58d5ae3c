"""The HTML page of ``pathrag paths --format html``: the best path as text, the retrieved subgraph as an
inline SVG, then every key path in a table. Self-contained: no script, no external link.

The picture is made in steps, each a function below: positions (:func:`_layout`, the best path pinned
straight across; :func:`_untangle`, names pushed apart), what the nodes take up (:func:`_node_boxes`), where
the edge captions fit (:func:`_place_captions`), the frame around everything (:func:`_frame`), then the SVG
itself: edges, captions over them, nodes over everything (:func:`_svg`).
"""

from __future__ import annotations

import html
import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from .rendering import _edge_ends, arrow, hop_summary

if TYPE_CHECKING:  # the core is imported when a command runs, not for ``pathrag --help``
    import pathrag
    from pathrag import RetrievalResult

__all__ = ["to_html"]

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
        raw = _part_layout(sub, [n for n in best if n in part], on_best)
        band = 90.0 if len(part) <= 2 else min(620.0, 60.0 + 45.0 * len(part))
        xs, ys = [float(p[0]) for p in raw.values()], [float(p[1]) for p in raw.values()]
        for name, (x, y) in raw.items():
            pos[name] = (
                _stretch(float(x), min(xs), max(xs), 0.0, width),
                _stretch(float(y), min(ys), max(ys), top, band),
            )
        top += band + 90.0  # room for the names under the band's lowest nodes
    return pos


def _part_layout(sub: Any, pinned: list[str], on_best: set[str]) -> dict[str, Any]:
    """Raw positions of one connected part (networkx's spring layout): the best path's nodes ``pinned`` in a
    straight line from -1 to 1, the others kept off that line."""
    import networkx as nx

    if len(sub) == 1:
        return {n: (0.0, 0.0) for n in sub}
    if not pinned:
        return dict(nx.spring_layout(sub, seed=7))
    step = 2.0 / (len(pinned) - 1)
    start = {n: (-1.0 + i * step, 0.0) for i, n in enumerate(pinned)}
    # networkx's own edge length (1/sqrt(n)) keeps the others about as wide as the pinned path
    raw = dict(nx.spring_layout(sub, pos=start, fixed=pinned, seed=7))
    # a node pulled onto the pinned line would sit on the best path's edges: move it above or below
    for name, (x, y) in list(raw.items()):
        if name not in on_best and -1.0 < x < 1.0 and abs(y) < _OFF_PATH:
            raw[name] = (float(x), _OFF_PATH if y >= 0 else -_OFF_PATH)
    return raw


def _stretch(value: float, low: float, high: float, start: float, size: float) -> float:
    """``value`` of ``low`` .. ``high`` mapped onto ``start`` .. ``start + size`` (the middle when they are equal)."""
    return start + size / 2 if high - low < 1e-9 else start + (value - low) / (high - low) * size


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
                if not (a in fixed and b in fixed):
                    moved |= _push_apart(pos, a, b, box(a), box(b), fixed)
        if not moved:
            break
    return pos


def _push_apart(pos: dict[str, tuple[float, float]], a: str, b: str, box_a: _Box, box_b: _Box, fixed: set[str]) -> bool:
    """Move ``a`` and ``b`` (those not ``fixed``) apart until their boxes no longer overlap, along the axis
    where they overlap least; whether they did overlap."""
    (a0, a1, a2, a3), (b0, b1, b2, b3) = box_a, box_b
    wide, tall = min(a2, b2) - max(a0, b0), min(a3, b3) - max(a1, b1)
    if wide <= 0 or tall <= 0:
        return False
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
    return True


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


@dataclass(frozen=True)
class _Picture:
    """Where everything of the picture goes, in layout px (before the frame shifts it)."""

    pos: dict[str, tuple[float, float]]
    names: dict[str, list[str]]
    """Each node's name, as the lines it is drawn on."""
    best: list[str]
    best_pairs: set[frozenset[str]]
    captions: dict[tuple[str, str], tuple[_Box, str]]
    """The edges whose caption fits (the best path's always do): its box and text."""
    frame: tuple[float, float, int, int]
    """Left, top, width and height of the picture."""

    def at(self, x: float, y: float) -> tuple[float, float]:
        """A layout position in the picture's own coordinates."""
        return x - self.frame[0], y - self.frame[1]


def _picture(result: RetrievalResult, entities: dict[str, Any], relations: dict[tuple[str, str], Any]) -> _Picture:
    """Lay the subgraph out: the best path pinned straight across, names pushed apart, captions where they fit."""
    best = [str(n) for n in result.key_paths[0].nodes] if result.key_paths else []
    best_pairs = {frozenset(p) for p in pairwise(best)}
    names = {name: _name_lines(name) for name in entities}
    halves = {name: max(_RADIUS + 2, max(_text_width(line, _NAME_SIZE) for line in names[name]) / 2) for name in names}
    pos = _untangle(_layout(entities, relations, best), halves, names, set(best))
    taken = _node_boxes(pos, halves, names)
    captions = _place_captions(relations, pos, best_pairs, taken)
    frame = _frame(taken + [box for box, _ in captions.values()])
    return _Picture(pos, names, best, best_pairs, captions, frame)


def _node_boxes(
    pos: dict[str, tuple[float, float]], halves: dict[str, float], names: dict[str, list[str]]
) -> list[_Box]:
    """What the nodes take up: their circles, and their names under them."""
    taken: list[_Box] = []
    for name, (x, y) in pos.items():
        half = halves[name]
        taken.append((x - _RADIUS - 2, y - _RADIUS - 2, x + _RADIUS + 2, y + _RADIUS + 2))
        taken.append((x - half, y + _RADIUS + 2, x + half, y + _RADIUS + 6 + _NAME_LEADING * len(names[name])))
    return taken


def _place_captions(
    relations: dict[tuple[str, str], Any],
    pos: dict[str, tuple[float, float]],
    best_pairs: set[frozenset[str]],
    taken: list[_Box],
) -> dict[tuple[str, str], tuple[_Box, str]]:
    """Edge captions: the best path's first (always shown), then the others where they overlap nothing, each
    at the first of a few spots along its edge that is free."""
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
    return captions


def _frame(drawn: list[_Box]) -> tuple[float, float, int, int]:
    """Left, top, width and height of a picture fitted around everything ``drawn``, so that no name or caption
    is clipped (nothing drawn: a small empty picture)."""
    everything = drawn or [(0.0, 0.0, 320.0, 40.0)]
    left, top = min(b[0] for b in everything) - _MARGIN, min(b[1] for b in everything) - _MARGIN
    width = math.ceil(max(b[2] for b in everything) + _MARGIN - left)
    height = math.ceil(max(b[3] for b in everything) + _MARGIN - top)
    return left, top, width, height


def _tip(pair: tuple[str, str], relation: pathrag.Relation | None) -> str:
    """An edge's tooltip: its direction, every keyword and its description."""
    a, b = _edge_ends(pair, relation)
    keywords, said = (relation.keywords, relation.description) if relation is not None else ((), "")
    return f"{a} → {b}" + (f" [{', '.join(keywords)}]" if keywords else "") + (f": {said}" if said else "")


def _svg(
    picture: _Picture, entities: dict[str, Any], relations: dict[tuple[str, str], Any], seeds: Sequence[str]
) -> str:
    """The picture as an inline SVG: the edges, their captions over every line (their background masks lines
    crossing them), the nodes over everything."""
    _, _, width, height = picture.frame
    label = f"Retrieved subgraph: {len(entities)} entities, {len(relations)} relations"
    tips = {pair: _tip(pair, relation) for pair, relation in relations.items()}
    return "".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" role="img" '
            f'aria-label="{html.escape(label)}">',
            _svg_defs(),
            *(_svg_edge(picture, pair, relation, tips[pair]) for pair, relation in relations.items()),
            *(
                _svg_caption(picture, pair, box, caption, tips[pair])
                for pair, (box, caption) in picture.captions.items()
            ),
            *(_svg_node(picture, name, entity, seeds) for name, entity in entities.items()),
            "</svg>",
        ]
    )


def _svg_defs() -> str:
    """The arrow heads: a grey one, and a bigger one in the best path's colour."""
    return (
        "<defs>"
        + "".join(
            f'<marker id="{key}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="{size}" markerHeight="{size}" '
            f'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/>'
            "</marker>"
            for key, size, colour in (("arrow", 9, "#9aa5b1"), ("arrow-best", 13, _BEST))
        )
        + "</defs>"
    )


def _svg_edge(picture: _Picture, pair: tuple[str, str], relation: pathrag.Relation | None, tip: str) -> str:
    """One relation's line, from rim to rim of its ends' circles, with its arrow head."""
    a, b = _edge_ends(pair, relation)
    (x1, y1), (x2, y2) = picture.at(*picture.pos[a]), picture.at(*picture.pos[b])
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    rim = _RADIUS + 2  # stop at the circles' rims, outside their stroke
    dx, dy = (x2 - x1) / length * rim, (y2 - y1) / length * rim
    on_best = frozenset(pair) in picture.best_pairs
    return (
        f'<g class="relation"><title>{html.escape(tip)}</title>'
        f'<line class="edge{" best" * on_best}" x1="{x1 + dx:.1f}" y1="{y1 + dy:.1f}" x2="{x2 - dx:.1f}" '
        f'y2="{y2 - dy:.1f}" marker-end="url(#{"arrow-best" if on_best else "arrow"})"/></g>'
    )


def _svg_caption(picture: _Picture, pair: tuple[str, str], box: _Box, caption: str, tip: str) -> str:
    """One edge's caption: its text on a rounded box."""
    (x0, y0), (x1, y1) = picture.at(box[0], box[1]), picture.at(box[2], box[3])
    return (
        f'<g class="caption{" best" * (frozenset(pair) in picture.best_pairs)}"><title>{html.escape(tip)}</title>'
        f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" rx="4"/>'
        f'<text x="{(x0 + x1) / 2:.1f}" y="{(y0 + y1) / 2 + _LABEL_SIZE * 0.35:.1f}" text-anchor="middle">'
        f"{html.escape(caption)}</text></g>"
    )


def _svg_node(picture: _Picture, name: str, entity: Any, seeds: Sequence[str]) -> str:
    """One entity: its circle (marked as a seed and on the best path) and its name under it, with its
    description in the tooltip."""
    from pathrag.query.context import render_entity

    x, y = picture.at(*picture.pos[name])
    kind = "node" + " seed" * (name in seeds) + " best" * (name in picture.best)
    lines = "".join(
        f'<tspan x="{x:.1f}" dy="{0 if i == 0 else _NAME_LEADING}">{html.escape(line)}</tspan>'
        for i, line in enumerate(picture.names[name])
    )
    return (
        f'<g class="{kind}"><title>{html.escape(render_entity(name, entity))}</title>'
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{_RADIUS}"/>'
        f'<text x="{x:.1f}" y="{y + _RADIUS + _NAME_SIZE + 2:.1f}" text-anchor="middle">{lines}</text></g>'
    )


def _paths_table(result: RetrievalResult) -> str:
    """Every retrieved item as a table row: rank, score (``seed`` for an entity), hops and the path."""
    best_row = ' class="best"'
    rows = "".join(
        f"<tr{best_row * (rank == 1 and item.kind == 'path')}><td>{rank}</td>"
        f'<td class="score">{f"{item.score:.4f}" if item.kind == "path" else "seed"}</td>'
        f"<td>{item.hops}</td><td>{html.escape(arrow(item.nodes))}</td></tr>"
        for rank, item in enumerate(result.items, 1)
    )
    head = "<thead><tr><th>#</th><th>score</th><th>hops</th><th>path</th></tr></thead>"
    return f"<table>{head}<tbody>{rows}</tbody></table>"


def to_html(
    result: RetrievalResult, entities: dict[str, Any], relations: dict[tuple[str, str], Any], seeds: Sequence[str]
) -> str:
    """A self-contained HTML page (inline SVG, no scripts, no external links) of the retrieved subgraph: the
    best path first as text and highlighted in the picture, every edge with a short relation caption where
    it fits (every relation in its tooltip), whole names (wrapped, or in the tooltip), then all key paths.

    >>> from pathrag import Entity, RetrievalResult
    >>> from pathrag.models import Keywords
    >>> empty = RetrievalResult(query="who?", keywords=Keywords(), seeds=[])
    >>> page = to_html(empty, {"Mara": Entity(name="Mara")}, {}, [])
    >>> page.startswith("<!DOCTYPE html>") and "Mara" in page and "<script" not in page
    True
    """
    esc = html.escape
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
            _svg(_picture(result, entities, relations), entities, relations, seeds),
            f"<h2>All key paths ({esc(hop_summary(result))})</h2>",
            _paths_table(result),
            "</body>",
            "</html>",
        ]
    )
