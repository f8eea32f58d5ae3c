"""From retrieved evidence to text: how a path reads, and how evidence is laid out for the answering model.

Two ways to write a path:

* :func:`render_path` (the paper's layout, ``context="paths"``): a walk, each entity with its type and
  description, and between two entities the relation joining them in its recorded direction
  (``SOURCE -> TARGET``) even when the walk goes against it.
* :func:`render_chain` (the evidence context): one line of relation statements, hop by hop
  (``A —keywords→ B ←keywords— C``, each arrow in its relation's recorded direction, at most three
  keywords), then the first sentence of each relation description that adds a word the line lacks. An
  OpenIE triple or a keyword label says it all, so a 2-hop path costs tens of tokens; entity
  descriptions and the rest of merged descriptions are left to the passages.

Every context puts the query first and the evidence in *ascending* order, so the most reliable item sits
last, next to where the model starts writing (PathRAG, Sec. 3.3).

:func:`result_context` is the one builder every entry point uses (CLI, LangChain, LlamaIndex). Two layouts:

* ``"paths"`` (the paper): the key paths only, least to most reliable (:func:`build_context`).
* ``"evidence"`` (the default): source passages, least to most relevant, then the paths and entity
  fill, least to most reliable (:func:`build_evidence_context`). Within a budget, items are taken while
  they fit: the key paths and the passages alternating by rank (the best path, the best passage, the
  second path, the second passage...), a path whose passages are all taken already waiting (it would
  repeat them); then the waiting paths, the further paths and the entity fill. A path is a few dozen
  tokens and a passage a hundred or more, so a small budget holds mostly paths, which carry the most
  answers per token, and a large one mostly passages, which carry the most in all
  (``benchmarks/multihop_qa.py``). The best path is shown whenever it fits.

>>> from pathrag import Entity, Relation, ScoredPath
>>> path = ScoredPath(nodes=("ALICE", "BOB"), score=0.9)
>>> print(render_path(path, {"ALICE": Entity(name="ALICE", type="person")},
...                   {("ALICE", "BOB"): Relation(source="BOB", target="ALICE", description="Bob hired Alice.")}))
ALICE (person)
  relation BOB -> ALICE: Bob hired Alice.
BOB
>>> print(render_chain(["ALICE", "BOB"], [Relation(source="BOB", target="ALICE", keywords=["hired"])]))
ALICE ←hired— BOB
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from ..graphs.base import GraphStore
from ..llm.prompts import (
    ANSWER_INSTRUCTIONS,
    CITATION_INSTRUCTIONS,
    CONTEXT_TEMPLATE,
    EVIDENCE_INSTRUCTIONS,
    EVIDENCE_TEMPLATE,
    PASSAGE_INSTRUCTIONS,
)
from ..llm.tokens import TokenCounter, count_tokens
from ..models import Entity, Relation, RetrievalResult, RetrievedItem, ScoredPath
from ..params import DEFAULT_CONTEXT_TOKENS, DEFAULT_KEY_PATHS, check_max_tokens

__all__ = [
    "DEFAULT_CONTEXT_TOKENS",
    "PathContext",
    "answer_prompt",
    "full_instructions",
    "result_context",
    "abuild_path_texts",
    "build_context",
    "build_evidence_context",
    "context_blocks",
    "items_context",
    "build_path_texts",
    "format_path_blocks",
    "instructions_for",
    "path_relations",
    "render_chain",
    "render_entity",
    "render_path",
]


class _Unset(enum.Enum):
    """``result_context``'s "no budget given": the retrieval's own budget applies."""

    BUDGET = 0


_RETRIEVAL_BUDGET = _Unset.BUDGET


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


def path_relations(names: Sequence[str], relations: Mapping[tuple[str, str], Relation]) -> list[Relation | None]:
    """The relation of each hop of the path through ``names``, from ``relations`` keyed either way round
    (``None`` for a hop it lacks).

    >>> path_relations(["A", "B", "C"], {("B", "A"): Relation(source="B", target="A")})
    [Relation(source='B', target='A', description='', keywords=(), weight=1.0, source_ids=()), None]
    """
    return [relations.get((a, b)) or relations.get((b, a)) for a, b in zip(names, names[1:], strict=False)]


def render_path(path: ScoredPath, entities: Mapping[str, Entity], relations: Mapping[tuple[str, str], Relation]) -> str:
    """Write ``path`` as text, one line per entity and per relation, in walking order.

    ``relations`` may be keyed either way round; a missing entity or relation is written bare.
    """
    names = path_names(path)
    lines = [render_entity(names[0], entities.get(names[0]))]
    for (a, b), relation in zip(path_pairs(path), path_relations(names, relations), strict=True):
        lines.append(_relation_line(a, b, relation))
        lines.append(render_entity(b, entities.get(b)))
    return "\n".join(lines)


_WORD = re.compile(r"\w+")


#: At most this many of a relation's keywords label its arrow: merged relations collect many.
MAX_LABEL_KEYWORDS = 3
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _hop(walked_from: str, relation: Relation | None) -> str:
    """The arrow of one hop, labelled with the relation's keywords, pointing as the relation was recorded."""
    if relation is None:
        return " — "
    label = ", ".join(relation.keywords[:MAX_LABEL_KEYWORDS]) or "related to"
    return f" —{label}→ " if relation.source == walked_from else f" ←{label}— "


def _note(relation: Relation) -> str | None:
    """The description's first sentence, when it holds a word that neither end's name nor the label holds
    (a merged description's first sentence states the relation; the passages hold the rest)."""
    first = _SENTENCE_END.split(" ".join(relation.description.split()), maxsplit=1)[0]
    label = " ".join(relation.keywords[:MAX_LABEL_KEYWORDS])
    said = set(_WORD.findall(f"{relation.source} {relation.target} {label}".lower()))
    return first if set(_WORD.findall(first.lower())) - said else None


def render_chain(nodes: Sequence[str], relations: Sequence[Relation | None]) -> str:
    """A path as one line of relation statements, then what the descriptions add (one line each).

    ``relations[i]`` joins ``nodes[i]`` and ``nodes[i + 1]`` (``None``: unknown, written as a bare dash).

    >>> r1 = Relation(source="MAIDEN JAPAN", target="IRON MAIDEN", keywords=["live album by"])
    >>> r2 = Relation(source="IRON MAIDEN", target="LEYTON", keywords=["formed in"],
    ...               description="Iron Maiden formed in Leyton in 1975.")
    >>> print(render_chain(["MAIDEN JAPAN", "IRON MAIDEN", "LEYTON"], [r1, r2]))
    MAIDEN JAPAN —live album by→ IRON MAIDEN —formed in→ LEYTON
      Iron Maiden formed in Leyton in 1975.
    """
    if len(relations) != len(nodes) - 1:
        raise ValueError(f"a path of {len(nodes)} nodes has {len(nodes) - 1} relations, got {len(relations)}")
    line = str(nodes[0])
    notes = []
    for walked_from, relation, reached in zip(nodes, relations, nodes[1:], strict=False):
        line += _hop(walked_from, relation) + str(reached)
        if relation is not None and (note := _note(relation)):
            notes.append(f"  {note}")
    return "\n".join([line, *notes])


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
    retrieved items did not fit, the items it holds in the order shown, the answer instructions that go
    after it, and the items again in the order the layout took them (``ranked``: the most important
    first, what an adapter returns as its top ``k``)."""

    text: str
    paths: tuple[ScoredPath, ...]
    tokens: int
    dropped: int
    items: tuple[RetrievedItem, ...] = ()
    instructions: str = ANSWER_INSTRUCTIONS
    ranked: tuple[RetrievedItem, ...] = ()


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
        return f"Path {number}:\n{item.text}"
    return f"Entity {number} (on no path):\n{item.text}"


def _passage_block(number: int, item: RetrievedItem) -> str:
    return f"Passage {number}:\n{item.text.strip()}"


def _evidence_text(query: str, passages: Sequence[RetrievedItem], graph: Sequence[RetrievedItem]) -> str:
    """The evidence layout of items already in display order (least relevant first).

    One numbering runs through the whole context (the paths go on from the last passage's number), so
    that an answer's ``[n]`` names one item (see :mod:`pathrag.query.citations`).
    """
    first = len(passages) + 1
    graph_text = "\n\n".join(_graph_block(i, item) for i, item in enumerate(graph, start=first))
    if not passages:
        return CONTEXT_TEMPLATE.format(question=query, paths=graph_text or "(no paths found)")
    passage_text = "\n\n".join(_passage_block(i, item) for i, item in enumerate(passages, start=1))
    if not graph:  # no path shown (none found, or none fitted): no paths section
        return _PASSAGES_ONLY_TEMPLATE.format(question=query, passages=passage_text)
    return EVIDENCE_TEMPLATE.format(question=query, passages=passage_text, paths=graph_text)


_PASSAGES_HEADER, _PATHS_HEADER = EVIDENCE_TEMPLATE.split("\n\n")[1], EVIDENCE_TEMPLATE.split("\n\n")[3]
_PASSAGES_ONLY_TEMPLATE = EVIDENCE_TEMPLATE[: EVIDENCE_TEMPLATE.index(f"\n\n{_PATHS_HEADER}")]
_PATHS_ONLY_HEADER = CONTEXT_TEMPLATE.split("\n\n")[1]  # the paths layout's header, when no passage is shown


def instructions_for(*, passages: bool, paths: bool) -> str:
    """The answer instructions for a context showing passages, paths, or both (paths only when neither).

    >>> instructions_for(passages=True, paths=False).startswith("Answer the question above using only the passages.")
    True
    """
    if passages:
        return EVIDENCE_INSTRUCTIONS if paths else PASSAGE_INSTRUCTIONS
    return ANSWER_INSTRUCTIONS


def context_blocks(context: PathContext) -> list[tuple[str, str]]:
    """The context's evidence as one block per item, in display order, for frameworks that keep one
    node per item: ``(head, body)`` with ``body`` the item's own text, and
    ``f"Question: {query}\\n\\n" + "\\n\\n".join(h + b for h, b in blocks) == context.text``.

    A section's header opens its first block's head. No items: ``[]``.
    """
    passages = [item for item in context.items if item.kind == "passage"]
    graph = [item for item in context.items if item.kind != "passage"]
    blocks = [(f"Passage {n}:\n", item.text.strip()) for n, item in enumerate(passages, start=1)]
    first = len(passages) + 1  # one numbering through the context, as in _evidence_text
    graph_blocks = [
        (_graph_block(n, item).removesuffix(item.text), item.text) for n, item in enumerate(graph, start=first)
    ]
    paths_header = _PATHS_HEADER if blocks else _PATHS_ONLY_HEADER
    for section, header in ((blocks, _PASSAGES_HEADER), (graph_blocks, paths_header)):
        if section:
            section[0] = (f"{header}\n\n{section[0][0]}", section[0][1])
    return blocks + graph_blocks


def _evidence_order(
    passages: Sequence[RetrievedItem],
    graph: Sequence[RetrievedItem],
    take: Callable[[RetrievedItem], bool],
    key_paths: int,
) -> list[RetrievedItem]:
    """The items ``take`` accepts, offered in the evidence layout's order (see the module docstring): the
    ``key_paths`` best paths and the passages alternating by rank (the best path, the best passage, the
    second path...), a path whose passages are all taken already waiting until after them; then the
    waiting paths, the other paths and the entity fill. Everything is best first; ``take`` says whether
    an item fits and keeps it."""
    paths = [item for item in graph if item.path is not None]
    fill = [item for item in graph if item.path is None]
    key, more = paths[:key_paths], paths[key_paths:]
    chosen: list[RetrievedItem] = []
    shown: set[str] = set()  # the passages taken so far
    waiting: list[RetrievedItem] = []  # key paths that would only repeat them
    for rank in range(max(len(key), len(passages))):
        for path in key[rank : rank + 1]:
            if path.source_ids and set(path.source_ids) <= shown:
                waiting.append(path)
            elif take(path):
                chosen.append(path)
        for passage in passages[rank : rank + 1]:
            if take(passage):
                chosen.append(passage)
                shown.add(passage.id)
    return chosen + [item for item in (*waiting, *more, *fill) if take(item)]


def build_evidence_context(
    query: str,
    items: Sequence[RetrievedItem],
    *,
    max_tokens: int | None = None,
    token_counter: TokenCounter | None = None,
    max_items: int | None = None,
    key_paths: int = DEFAULT_KEY_PATHS,
) -> PathContext:
    """Lay out the query, then passages (least to most relevant), then paths and fill (least to most
    reliable), within ``max_tokens`` and at most ``max_items`` items; see the module docstring for the
    order in which items are taken (the ``key_paths`` best paths alternate with the passages).

    >>> from pathrag import RetrievedItem, ScoredPath
    >>> path = RetrievedItem("path", "p1", "A —owns→ B", 1.2, ("A", "B"), ("c1", "c3"),
    ...                      ScoredPath(nodes=("A", "B"), score=1.2))
    >>> best = RetrievedItem("passage", "c2", "B was founded by C.", 0.9, (), ("c2",))
    >>> other = RetrievedItem("passage", "c1", "A met B.", 0.5, (), ("c1",))
    >>> ctx = build_evidence_context("Who founded B?", [path, best, other], token_counter=len)
    >>> [item.id for item in ctx.items]
    ['c1', 'c2', 'p1']
    >>> [item.id for item in build_evidence_context("Who founded B?", [path, best, other], max_items=2).items]
    ['c2', 'p1']
    """
    max_tokens = check_max_tokens(max_tokens)
    _check_max_items(max_items)
    passages = sorted((i for i in items if i.kind == "passage"), key=lambda i: -i.score)
    graph = sorted((i for i in items if i.kind != "passage"), key=lambda i: (i.path is None, -i.score, i.hops, i.nodes))
    # the frame with both section headers: an upper bound of what surrounds the blocks
    header = count_tokens(
        _evidence_text(query, [], [])
        if not passages
        else EVIDENCE_TEMPLATE.format(question=query, passages="", paths=""),
        token_counter,
    )
    budget = _Budget(None if max_tokens is None else max_tokens - header, max_items, len(items), token_counter)
    chosen = _evidence_order(passages, graph, budget.take, key_paths)
    shown_passages, shown_graph, text, tokens = _fit_whole(query, passages, graph, chosen, max_tokens, token_counter)
    shown = (*shown_passages, *shown_graph)
    return PathContext(
        text=text,
        paths=tuple(i.path for i in shown_graph if i.path is not None),
        tokens=tokens,
        dropped=len(items) - len(shown),
        items=shown,
        instructions=instructions_for(passages=bool(shown_passages), paths=bool(shown_graph)),
        ranked=tuple(chosen),
    )


def _fit_whole(
    query: str,
    passages: list[RetrievedItem],
    graph: list[RetrievedItem],
    chosen: list[RetrievedItem],
    max_tokens: int | None,
    token_counter: TokenCounter | None,
) -> tuple[list[RetrievedItem], list[RetrievedItem], str, int]:
    """The ``chosen`` passages and graph items as laid out, the text and its tokens: joining can tokenize
    differently from the parts, so the whole is checked once more, and the item taken last (it matters least)
    dropped from ``chosen`` while it is over ``max_tokens``."""
    while True:
        chosen_ids = {item.id for item in chosen}
        shown_passages = [i for i in reversed(passages) if i.id in chosen_ids]  # most relevant last, ties too
        shown_graph = [i for i in reversed(graph) if i.id in chosen_ids]
        text = _evidence_text(query, shown_passages, shown_graph)
        tokens = count_tokens(text, token_counter)
        if max_tokens is None or tokens <= max_tokens or not chosen:
            return shown_passages, shown_graph, text, tokens
        chosen.pop()


def _check_max_items(max_items: int | None) -> None:
    if max_items is not None and not (
        isinstance(max_items, int) and not isinstance(max_items, bool) and max_items >= 1
    ):
        raise ValueError(f"max_items must be None or an int >= 1, got {max_items!r}")


class _Budget:
    """What is left of a layout's ``room`` (tokens, ``None``: no limit) and ``slots`` (items, ``None``: no
    limit) as items are taken; each block is counted as numbered the last of ``count`` (the widest number)."""

    def __init__(self, room: int | None, slots: int | None, count: int, token_counter: TokenCounter | None) -> None:
        self.room, self.slots, self.count, self.token_counter = room, slots, count, token_counter

    def take(self, item: RetrievedItem) -> bool:
        """Take ``item`` if it fits what is left; whether it did."""
        if self.slots is not None and self.slots <= 0:
            return False
        if self.room is not None:
            block = _passage_block(self.count, item) if item.kind == "passage" else _graph_block(self.count, item)
            cost = count_tokens("\n\n" + block, self.token_counter)
            if cost > self.room:
                return False
            self.room -= cost
        if self.slots is not None:
            self.slots -= 1
        return True


def items_context(
    query: str,
    items: Sequence[RetrievedItem],
    layout: str = "evidence",
    *,
    max_tokens: int | None = DEFAULT_CONTEXT_TOKENS,
    token_counter: TokenCounter | None = None,
    max_items: int | None = None,
    key_paths: int = DEFAULT_KEY_PATHS,
) -> PathContext:
    """Lay out retrieved ``items`` for ``query`` in ``layout`` (``"paths"``: the paper's, paths only,
    :func:`build_context`; ``"evidence"``: passages, then paths and entity fill,
    :func:`build_evidence_context`), within ``max_tokens`` and ``max_items``. The adapters call this with
    the items their documents or nodes carry, so every entry point shows the model the same text.
    """
    if layout == "paths":
        paths = [item for item in items if item.path is not None]
        paths.sort(key=lambda item: -item.score)
        if max_items is not None:
            paths = paths[:max_items]
        built = build_context(
            query,
            [item.path for item in paths if item.path is not None],  # all of them
            [item.text for item in paths],
            max_tokens=max_tokens,
            token_counter=token_counter,
        )
        by_path = {item.path: item for item in paths}
        shown = tuple(by_path[p] for p in built.paths)
        return PathContext(
            built.text,
            built.paths,
            built.tokens,
            len(items) - len(built.paths),
            shown,
            ANSWER_INSTRUCTIONS,
            shown[::-1],
        )
    if layout != "evidence":
        raise ValueError(f"layout must be 'evidence' or 'paths', got {layout!r}")
    return build_evidence_context(
        query, items, max_tokens=max_tokens, token_counter=token_counter, max_items=max_items, key_paths=key_paths
    )


def result_context(
    result: RetrievalResult,
    *,
    max_tokens: int | None | _Unset = _RETRIEVAL_BUDGET,
    token_counter: TokenCounter | None = None,
    max_items: int | None = None,
) -> PathContext:
    """The context of a retrieval, in the layout it was retrieved for (``result.context``), within
    ``max_tokens`` (default: the retrieval's own budget, ``result.max_tokens``, itself
    :data:`DEFAULT_CONTEXT_TOKENS` unless the retrieval was told otherwise; ``None`` for no limit) and at
    most ``max_items`` items: the text the answering model sees between the question and the instructions.
    """
    return items_context(
        result.query,
        result.items,
        result.context,
        max_tokens=result.max_tokens if isinstance(max_tokens, _Unset) else max_tokens,
        token_counter=token_counter,
        max_items=max_items,
        key_paths=result.top_k,
    )


def answer_prompt(context: PathContext, *, cite: bool = True) -> str:
    """The exact prompt an answering model gets: the laid-out context, then the answer instructions, then
    (``cite``) the request to cite the numbered items (:data:`~pathrag.llm.prompts.CITATION_INSTRUCTIONS`)."""
    return f"{context.text}\n\n{full_instructions(context, cite=cite)}"


def full_instructions(context: PathContext, *, cite: bool = True) -> str:
    """The context's answer instructions, with the request to cite unless ``cite=False``.

    >>> context = items_context("Who?", [])
    >>> full_instructions(context).endswith("e.g. [2] or [1][3].")
    True
    """
    return f"{context.instructions} {CITATION_INSTRUCTIONS}" if cite else context.instructions
