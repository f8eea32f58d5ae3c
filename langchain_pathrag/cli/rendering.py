"""What the ``pathrag`` command prints: aligned reports, the demo's questions, and key paths as a table,
JSON or a Mermaid graph (the self-contained HTML page is :mod:`langchain_pathrag.cli.html_page`)."""

from __future__ import annotations

import statistics
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


def sources(context: PathContext) -> list[dict[str, Any]]:
    """What a context shows, best first, each with its ``number`` in the prompt (what an answer's ``[n]``
    cites) and the ids of the documents it comes from, as the retrieval read them (only the matching ones
    under a filter; none for an imported passage) (``pathrag query``)."""
    numbers = {item.id: n for n, item in enumerate(context.items, start=1)}
    relevance = relevance_scores(context.items)
    shown = []
    for item in context.ranked:
        shown.append(
            {
                "number": numbers.get(item.id),
                **item.metadata(),
                "score": relevance.get(item.id, 0.0),
                "raw_score": item.score,
                "documents": [doc.id for doc in item.documents],
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
