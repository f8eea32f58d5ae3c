"""From scored paths to text: how a path reads, and how paths are laid out for the answering model.

A path is written as a walk: each entity (name, type, description), and between two entities the
relation joining them, always written in its recorded direction (``SOURCE -> TARGET``) even when the
walk goes against it. The context puts the query first and then the paths in *ascending* reliability,
so the most reliable path sits last, next to where the model starts writing (PathRAG, Sec. 3.3).

>>> from pathrag import Entity, Relation, ScoredPath
>>> path = ScoredPath(nodes=("ALICE", "BOB"), score=0.9)
>>> print(render_path(path, {"ALICE": Entity(name="ALICE", type="person")},
...                   {("ALICE", "BOB"): Relation(source="BOB", target="ALICE", description="Bob hired Alice.")}))
ALICE (person)
  relation BOB -> ALICE: Bob hired Alice.
BOB
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .graph import GraphStore
from .models import Entity, Relation, ScoredPath
from .prompts import ANSWER_INSTRUCTIONS, CONTEXT_TEMPLATE
from .tokens import TokenCounter, count_tokens

if TYPE_CHECKING:  # retrieval imports this module
    from .retrieval import RetrievalResult

__all__ = [
    "PathContext",
    "answer_prompt",
    "result_context",
    "abuild_path_texts",
    "build_context",
    "build_path_texts",
    "format_path_blocks",
    "render_entity",
    "render_path",
]


def render_entity(name: str, entity: Entity | None) -> str:
    """``NAME (type): description``, leaving out what is unknown."""
    line = name
    if entity is not None and entity.type:
        line += f" ({entity.type})"
    if entity is not None and entity.description:
        line += f": {entity.description}"
    return line


def _relation_line(a: str, b: str, relation: Relation | None) -> str:
    if relation is None:
        return f"  relation {a} -- {b}"
    line = f"  relation {relation.source} -> {relation.target}"
    if relation.keywords:
        line += f" [{', '.join(relation.keywords)}]"
    if relation.description:
        line += f": {relation.description}"
    return line


def render_path(
    path: ScoredPath, entities: Mapping[str, Entity], relations: Mapping[tuple[str, str], Relation]
) -> str:
    """Write ``path`` as text, one line per entity and per relation, in walking order.

    ``relations`` may be keyed either way round; a missing entity or relation is written bare.
    """
    lines = [render_entity(path.nodes[0], entities.get(path.nodes[0]))]
    for a, b in path.edges:
        relation = relations.get((a, b)) or relations.get((b, a))
        lines.append(_relation_line(a, b, relation))
        lines.append(render_entity(b, entities.get(b)))
    return "\n".join(lines)


def path_lookups(
    paths: Sequence[ScoredPath], extra_names: Sequence[str] = ()
) -> tuple[list[str], list[tuple[str, str]]]:
    """The entity names and node pairs to fetch (once each) to render ``paths``, plus ``extra_names``."""
    names = list(dict.fromkeys([*(n for p in paths for n in p.nodes), *extra_names]))
    pairs = list(dict.fromkeys(e for p in paths for e in p.edges))
    return names, pairs


def build_path_texts(store: GraphStore, paths: Sequence[ScoredPath]) -> list[str]:
    """Render every path, fetching its entities and relations in two batched reads."""
    names, pairs = path_lookups(paths)
    entities, relations = store.get_entities(names), store.get_relations(pairs)
    return [render_path(p, entities, relations) for p in paths]


async def abuild_path_texts(store: GraphStore, paths: Sequence[ScoredPath]) -> list[str]:
    """Async twin of :func:`build_path_texts`."""
    names, pairs = path_lookups(paths)
    entities = await store.aget_entities(names)
    relations = await store.aget_relations(pairs)
    return [render_path(p, entities, relations) for p in paths]


@dataclass(frozen=True)
class PathContext:
    """The laid-out context: ``text``, the paths it holds (ascending), and its token count."""

    text: str
    paths: tuple[ScoredPath, ...]
    tokens: int
    dropped: int


def _block(number: int, path: ScoredPath, text: str) -> str:
    hops = "1 hop" if path.hops == 1 else f"{path.hops} hops"
    return f"Path {number} ({hops}, reliability {path.score:.3f}):\n{text}"


def format_path_blocks(paths: Sequence[ScoredPath], texts: Sequence[str]) -> str:
    """Numbered path blocks in the order given (callers pass them least reliable first)."""
    if not paths:
        return "(no paths found)"
    return "\n\n".join(_block(i, p, t) for i, (p, t) in enumerate(zip(paths, texts), start=1))


def build_context(
    query: str,
    paths: Sequence[ScoredPath],
    texts: Sequence[str],
    *,
    max_tokens: int | None = None,
    token_counter: TokenCounter | None = None,
) -> PathContext:
    """Lay out the query, then the paths from least to most reliable, within ``max_tokens``.

    Over budget, the least reliable paths are dropped first; the query is always kept.

    >>> from pathrag import ScoredPath
    >>> weak, strong = ScoredPath(nodes=("A", "B"), score=0.2), ScoredPath(nodes=("A", "C"), score=0.9)
    >>> ctx = build_context("Who?", [strong, weak], ["A to C", "A to B"], token_counter=len)
    >>> [p.score for p in ctx.paths]
    [0.2, 0.9]
    """
    if len(paths) != len(texts):
        raise ValueError(f"got {len(paths)} paths but {len(texts)} texts")
    if max_tokens is not None and max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    header = CONTEXT_TEMPLATE.format(question=query, paths="").rstrip()
    ranked = sorted(zip(paths, texts), key=lambda item: (-item[0].score, item[0].hops, item[0].nodes))
    used = count_tokens(header, token_counter)
    kept: list[tuple[ScoredPath, str]] = []
    for path, text in ranked:  # best first, so what does not fit is the least reliable
        # numbering changes once the kept paths are reversed; a placeholder of the same width costs the same
        cost = count_tokens("\n\n" + _block(len(ranked), path, text), token_counter)
        if max_tokens is not None and used + cost > max_tokens:
            break
        kept.append((path, text))
        used += cost
    kept.reverse()
    while True:  # joining can tokenize differently from the parts: check the whole once more
        body = CONTEXT_TEMPLATE.format(question=query, paths=format_path_blocks(
            [p for p, _ in kept], [t for _, t in kept]))
        tokens = count_tokens(body, token_counter)
        if not kept or max_tokens is None or tokens <= max_tokens:
            break
        kept.pop(0)
    return PathContext(text=body, paths=tuple(p for p, _ in kept), tokens=tokens, dropped=len(ranked) - len(kept))


def result_context(result: RetrievalResult, *, max_tokens: int | None = None,
                   token_counter: TokenCounter | None = None) -> PathContext:
    """The context of a retrieval's paths (query first, most reliable path last), within ``max_tokens``."""
    items = [item for item in result.items if item.path is not None]
    return build_context(result.query, [item.path for item in items], [item.text for item in items],  # type: ignore[misc]
                         max_tokens=max_tokens, token_counter=token_counter)


def answer_prompt(context: PathContext) -> str:
    """The exact prompt an answering model gets: the laid-out context, then the answer instructions."""
    return f"{context.text}\n\n{ANSWER_INSTRUCTIONS}"
