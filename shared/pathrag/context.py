"""From retrieved evidence to text: how a path reads, and how evidence is laid out for the answering model.

A path is written as a walk: each entity (name, type, description), and between two entities the
relation joining them, always written in its recorded direction (``SOURCE -> TARGET``) even when the
walk goes against it. Every context puts the query first and the evidence in *ascending* order, so the
most reliable item sits last, next to where the model starts writing (PathRAG, Sec. 3.3).

:func:`result_context` is the one builder every entry point uses (CLI, LangChain chain, LlamaIndex
query engine). Two layouts:

* ``"paths"`` (the paper): the key paths only, least to most reliable (:func:`build_context`).
* ``"evidence"`` (the default): source passages, least to most relevant, then the paths and entity
  fill, least to most reliable. With no budget everything is shown. Within a budget, paths that bring
  a fact from a passage the context would not hold may take up to ``path_share`` of it (a path whose
  every source is among the passages only repeats them); the passages get the rest; paths and fill
  take what room is left. Without passages it is the paths layout.

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
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import cast

from .graph import GraphStore
from .models import Entity, Relation, RetrievalResult, RetrievedItem, ScoredPath
from .prompts import ANSWER_INSTRUCTIONS, CONTEXT_TEMPLATE, EVIDENCE_INSTRUCTIONS, EVIDENCE_TEMPLATE
from .tokens import TokenCounter, count_tokens

#: The share of a budget that paths may take ahead of passages. None by default: on real multi-hop
#: questions (benchmarks/multihop_qa.py) every token given to paths instead of the next passage lost
#: answers (answer in context at 600 / 1,200 / 2,400 tokens: share 0 → 62 / 78 / 86 %, 0.05 → 56 / 76 / 86 %,
#: 0.1 → 58 / 72 / 84 %), so under a budget paths fill the room the passages leave.
PATH_SHARE = 0.0

#: The context budget the entry points use unless told otherwise (``None`` means no limit): 4,000 tokens,
#: the chunk budget LightRAG and the PathRAG reference code default to, and a small part of any current
#: model's window. Without a limit, a retrieval's 100 passages could fill tens of thousands of tokens.
DEFAULT_CONTEXT_TOKENS = 4000

__all__ = [
    "DEFAULT_CONTEXT_TOKENS",
    "PATH_SHARE",
    "PathContext",
    "answer_prompt",
    "result_context",
    "abuild_path_texts",
    "build_context",
    "build_evidence_context",
    "context_blocks",
    "items_context",
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


def path_names(path: ScoredPath) -> tuple[str, ...]:
    """``path.nodes`` as entity names.

    A path found in a :class:`~pathrag.GraphStore` runs through entity names (only a networkx graph
    passed to ``find_key_paths`` directly can have other nodes), and only such paths are rendered or
    looked up: :func:`render_entity` writes the name as a string.
    """
    return cast("tuple[str, ...]", path.nodes)


def path_pairs(path: ScoredPath) -> list[tuple[str, str]]:
    """:attr:`ScoredPath.edges` as pairs of entity names (see :func:`path_names`)."""
    names = path_names(path)
    return list(zip(names, names[1:], strict=False))  # n nodes, n - 1 edges


def render_path(path: ScoredPath, entities: Mapping[str, Entity], relations: Mapping[tuple[str, str], Relation]) -> str:
    """Write ``path`` as text, one line per entity and per relation, in walking order.

    ``relations`` may be keyed either way round; a missing entity or relation is written bare.
    """
    names = path_names(path)
    lines = [render_entity(names[0], entities.get(names[0]))]
    for a, b in path_pairs(path):
        relation = relations.get((a, b)) or relations.get((b, a))
        lines.append(_relation_line(a, b, relation))
        lines.append(render_entity(b, entities.get(b)))
    return "\n".join(lines)


def path_lookups(
    paths: Sequence[ScoredPath], extra_names: Sequence[str] = ()
) -> tuple[list[str], list[tuple[str, str]]]:
    """The entity names and node pairs to fetch (once each) to render ``paths``, plus ``extra_names``."""
    names = list(dict.fromkeys([*(n for p in paths for n in path_names(p)), *extra_names]))
    pairs = list(dict.fromkeys(e for p in paths for e in path_pairs(p)))
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
    """The laid-out context: ``text``, the paths it holds (ascending), its token count, how many
    retrieved items did not fit, the items it holds in the order shown, and the answer instructions
    that go after it."""

    text: str
    paths: tuple[ScoredPath, ...]
    tokens: int
    dropped: int
    items: tuple[RetrievedItem, ...] = ()
    instructions: str = ANSWER_INSTRUCTIONS


def _block(number: int, path: ScoredPath, text: str) -> str:
    hops = "1 hop" if path.hops == 1 else f"{path.hops} hops"
    return f"Path {number} ({hops}, reliability {path.score:.3f}):\n{text}"


def format_path_blocks(paths: Sequence[ScoredPath], texts: Sequence[str]) -> str:
    """Numbered path blocks in the order given (callers pass them least reliable first)."""
    if not paths:
        return "(no paths found)"
    return "\n\n".join(_block(i, p, t) for i, (p, t) in enumerate(zip(paths, texts, strict=True), start=1))


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
    ranked = sorted(zip(paths, texts, strict=True), key=lambda item: (-item[0].score, item[0].hops, item[0].nodes))
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
        body = CONTEXT_TEMPLATE.format(
            question=query, paths=format_path_blocks([p for p, _ in kept], [t for _, t in kept])
        )
        tokens = count_tokens(body, token_counter)
        if not kept or max_tokens is None or tokens <= max_tokens:
            break
        kept.pop(0)
    return PathContext(text=body, paths=tuple(p for p, _ in kept), tokens=tokens, dropped=len(ranked) - len(kept))


def _graph_block(number: int, item: RetrievedItem) -> str:
    if item.path is not None:
        return _block(number, item.path, item.text)
    return f"Entity {number} (on no path):\n{item.text}"


def _passage_block(number: int, item: RetrievedItem) -> str:
    return f"Passage {number}:\n{item.text.strip()}"


def _evidence_text(query: str, passages: Sequence[RetrievedItem], graph: Sequence[RetrievedItem]) -> str:
    """The evidence layout of items already in display order (least relevant first)."""
    graph_text = "\n\n".join(_graph_block(i, item) for i, item in enumerate(graph, start=1))
    if not passages:
        return CONTEXT_TEMPLATE.format(question=query, paths=graph_text or "(no paths found)")
    passage_text = "\n\n".join(_passage_block(i, item) for i, item in enumerate(passages, start=1))
    if not graph:  # no path shown (none found, or none fitted): no paths section
        return _PASSAGES_ONLY_TEMPLATE.format(question=query, passages=passage_text)
    return EVIDENCE_TEMPLATE.format(question=query, passages=passage_text, paths=graph_text)


_PASSAGES_HEADER, _PATHS_HEADER = EVIDENCE_TEMPLATE.split("\n\n")[1], EVIDENCE_TEMPLATE.split("\n\n")[3]
_PASSAGES_ONLY_TEMPLATE = EVIDENCE_TEMPLATE[: EVIDENCE_TEMPLATE.index(f"\n\n{_PATHS_HEADER}")]


def context_blocks(context: PathContext) -> list[tuple[str, str]]:
    """The context's evidence as one block per item, in display order, for frameworks that keep one
    node per item: ``(head, body)`` with ``body`` the item's own text, and
    ``f"Question: {query}\\n\\n" + "\\n\\n".join(h + b for h, b in blocks) == context.text``.

    A section's header opens its first block's head. No items: ``[]``.
    """
    passages = [item for item in context.items if item.kind == "passage"]
    graph = [item for item in context.items if item.kind != "passage"]
    blocks = [(f"Passage {n}:\n", item.text.strip()) for n, item in enumerate(passages, start=1)]
    graph_blocks = [(_graph_block(n, item).removesuffix(item.text), item.text) for n, item in enumerate(graph, start=1)]
    for section, header in ((blocks, _PASSAGES_HEADER), (graph_blocks, _PATHS_HEADER)):
        if section:
            section[0] = (f"{header}\n\n{section[0][0]}", section[0][1])
    return blocks + graph_blocks


def build_evidence_context(
    query: str,
    items: Sequence[RetrievedItem],
    *,
    max_tokens: int | None = None,
    token_counter: TokenCounter | None = None,
    path_share: float = PATH_SHARE,
) -> PathContext:
    """Lay out the query, then passages (least to most relevant), then paths and fill (least to most
    reliable), within ``max_tokens``; see the module docstring for how the budget is shared.

    >>> from pathrag import RetrievedItem, ScoredPath
    >>> path = RetrievedItem("path", "p1", "A -> B", 1.2, ("A", "B"), ("c1", "c3"),
    ...                      ScoredPath(nodes=("A", "B"), score=1.2))
    >>> best = RetrievedItem("passage", "c2", "B was founded by C.", 0.9, (), ("c2",))
    >>> other = RetrievedItem("passage", "c1", "A met B.", 0.5, (), ("c1",))
    >>> ctx = build_evidence_context("Who founded B?", [path, best, other], token_counter=len)
    >>> [item.id for item in ctx.items]
    ['c1', 'c2', 'p1']
    """
    if max_tokens is not None and max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    if not 0 <= path_share <= 1:
        raise ValueError(f"path_share must be in [0, 1], got {path_share}")
    passages = sorted((i for i in items if i.kind == "passage"), key=lambda i: -i.score)
    graph = sorted((i for i in items if i.kind != "passage"), key=lambda i: (i.path is None, -i.score, i.hops, i.nodes))
    # the frame with both section headers: an upper bound of what surrounds the blocks
    header = count_tokens(
        _evidence_text(query, [], [])
        if not passages
        else EVIDENCE_TEMPLATE.format(question=query, passages="", paths=""),
        token_counter,
    )

    def cost(item: RetrievedItem) -> int:
        block = _passage_block(len(items), item) if item.kind == "passage" else _graph_block(len(items), item)
        return count_tokens("\n\n" + block, token_counter)

    def pack(
        candidates: Sequence[RetrievedItem], room: float, held: AbstractSet[str] = frozenset()
    ) -> tuple[list[RetrievedItem], int]:
        """Best first, what fits in ``room``; with ``held``, graph items whose every source it holds are
        skipped (they repeat what the passages already say)."""
        kept, spent = [], 0
        for item in candidates:
            if held and item.source_ids and set(item.source_ids) <= held:
                continue
            spend = cost(item)
            if spent + spend <= room:
                kept.append(item)
                spent += spend
        return kept, spent

    def sources(chosen: Sequence[RetrievedItem]) -> set[str]:
        return {cid for item in chosen for cid in item.source_ids}

    if max_tokens is None:
        chosen = [*passages, *graph]
    else:
        room = max_tokens - header
        # the paths that bring facts the passages filling the whole budget would not, within their share;
        # then the passages in what is left; then any graph item that still fits (room nothing else takes)
        paths, spent = pack(graph, max_tokens * path_share if passages else room, sources(pack(passages, room)[0]))
        kept, used = pack(passages, room - spent)
        taken = {item.id for item in paths}
        rest = [item for item in graph if item.id not in taken]
        chosen = [*kept, *paths, *pack(rest, room - spent - used)[0]]
    chosen_ids = {item.id for item in chosen}
    shown_passages = [i for i in reversed(passages) if i.id in chosen_ids]  # most relevant last, ties too
    shown_graph = [i for i in reversed(graph) if i.id in chosen_ids]
    while True:  # joining can tokenize differently from the parts: check the whole once more
        text = _evidence_text(query, shown_passages, shown_graph)
        tokens = count_tokens(text, token_counter)
        if max_tokens is None or tokens <= max_tokens or not (shown_passages or shown_graph):
            break
        (shown_passages if shown_passages else shown_graph).pop(0)
    shown = (*shown_passages, *shown_graph)
    return PathContext(
        text=text,
        paths=tuple(i.path for i in shown_graph if i.path is not None),
        tokens=tokens,
        dropped=len(items) - len(shown),
        items=shown,
        instructions=EVIDENCE_INSTRUCTIONS if shown_passages else ANSWER_INSTRUCTIONS,
    )


def items_context(
    query: str,
    items: Sequence[RetrievedItem],
    layout: str = "evidence",
    *,
    max_tokens: int | None = DEFAULT_CONTEXT_TOKENS,
    token_counter: TokenCounter | None = None,
    path_share: float = PATH_SHARE,
) -> PathContext:
    """Lay out retrieved ``items`` for ``query`` in ``layout`` (``"paths"``: the paper's, paths only,
    :func:`build_context`; ``"evidence"``: passages, then paths and entity fill,
    :func:`build_evidence_context`), within ``max_tokens``. The adapters call this with the items their
    documents or nodes carry, so every entry point shows the model the same text.
    """
    if layout == "paths":
        paths = [item for item in items if item.path is not None]
        built = build_context(
            query,
            [item.path for item in paths if item.path is not None],  # all of them
            [item.text for item in paths],
            max_tokens=max_tokens,
            token_counter=token_counter,
        )
        by_path = {item.path: item for item in paths}
        return PathContext(
            built.text,
            built.paths,
            built.tokens,
            built.dropped,
            tuple(by_path[p] for p in built.paths),
            ANSWER_INSTRUCTIONS,
        )
    if layout != "evidence":
        raise ValueError(f"layout must be 'evidence' or 'paths', got {layout!r}")
    return build_evidence_context(
        query, items, max_tokens=max_tokens, token_counter=token_counter, path_share=path_share
    )


def result_context(
    result: RetrievalResult,
    *,
    max_tokens: int | None = DEFAULT_CONTEXT_TOKENS,
    token_counter: TokenCounter | None = None,
    path_share: float = PATH_SHARE,
) -> PathContext:
    """The context of a retrieval, in the layout it was retrieved for (``result.context``), within
    ``max_tokens`` (default :data:`DEFAULT_CONTEXT_TOKENS`, ``None`` for no limit): the text the
    answering model sees between the question and the instructions.
    """
    return items_context(
        result.query,
        result.items,
        result.context,
        max_tokens=max_tokens,
        token_counter=token_counter,
        path_share=path_share,
    )


def answer_prompt(context: PathContext) -> str:
    """The exact prompt an answering model gets: the laid-out context, then the answer instructions."""
    return f"{context.text}\n\n{context.instructions}"
