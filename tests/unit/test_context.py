"""Path text and context layout."""

from __future__ import annotations

import networkx as nx
import pytest

from pathrag import Entity, NetworkXGraphStore, Relation, RetrievedItem, ScoredPath, find_key_paths
from pathrag.query.context import abuild_path_texts, build_context, build_path_texts, render_path


@pytest.fixture
def store() -> NetworkXGraphStore:
    s = NetworkXGraphStore()
    s.upsert_entities(
        [
            Entity(name="MARA", type="person", description="Harbour pilot."),
            Entity(name="SALTMERE", type="location", description="A fishing town."),
            Entity(name="TIDE CO", type="organization"),
        ]
    )
    s.upsert_relations(
        [
            Relation(source="MARA", target="SALTMERE", description="Mara lives in Saltmere.", keywords=["home"]),
            Relation(
                source="TIDE CO",
                target="SALTMERE",
                description="Tide Co built the sea wall of Saltmere.",
                keywords=["construction", "sea wall"],
            ),
        ]
    )
    return s


def test_render_walks_in_order_and_keeps_relation_direction(store):
    path = ScoredPath(nodes=("MARA", "SALTMERE", "TIDE CO"), score=1.0)
    text = build_path_texts(store, [path])[0]
    assert text.splitlines() == [
        "MARA (person): Harbour pilot.",
        "  relation MARA -> SALTMERE [home]: Mara lives in Saltmere.",
        "SALTMERE (location): A fishing town.",
        "  relation TIDE CO -> SALTMERE [construction, sea wall]: Tide Co built the sea wall of Saltmere.",
        "TIDE CO (organization)",
    ]


def test_render_without_any_descriptions_is_still_readable():
    text = render_path(ScoredPath(nodes=("a", "b"), score=1.0), {}, {})
    assert text == "a\n  relation a -- b\nb"


async def test_async_texts_match(store):
    paths = find_key_paths(store, ["MARA", "TIDE CO"])
    assert await abuild_path_texts(store, paths) == build_path_texts(store, paths)


def paths_and_texts():
    paths = [ScoredPath(nodes=("A", f"N{i}"), score=s) for i, s in enumerate([0.5, 0.9, 0.1, 0.7])]
    return paths, [f"text of N{i} " + "word " * 20 for i in range(4)]


def test_context_puts_query_first_and_paths_ascending():
    paths, texts = paths_and_texts()
    ctx = build_context("Why did the wall fail?", paths, texts)
    assert ctx.text.startswith("Question: Why did the wall fail?")
    positions = [ctx.text.index(f"text of N{i}") for i in (2, 0, 3, 1)]  # scores 0.1, 0.5, 0.7, 0.9
    assert positions == sorted(positions)
    assert [p.score for p in ctx.paths] == [0.1, 0.5, 0.7, 0.9]
    assert ctx.text.index("Question:") < positions[0] and ctx.dropped == 0


def test_context_budget_drops_least_reliable_first():
    paths, texts = paths_and_texts()
    full = build_context("q", paths, texts, token_counter=len)
    budget = full.tokens - len(texts[0]) - 5  # not enough room for all four
    ctx = build_context("q", paths, texts, max_tokens=budget, token_counter=len)
    assert ctx.tokens <= budget
    assert [p.score for p in ctx.paths] == [0.5, 0.7, 0.9] and ctx.dropped == 1
    tiny = build_context("q", paths, texts, max_tokens=1, token_counter=len)
    assert tiny.paths == () and tiny.text.startswith("Question: q") and tiny.dropped == 4


def test_context_rejects_mismatched_inputs():
    paths, texts = paths_and_texts()
    with pytest.raises(ValueError, match="4 paths but 3 texts"):
        build_context("q", paths, texts[:3])
    with pytest.raises(ValueError, match="max_tokens"):
        build_context("q", paths, texts, max_tokens=-1)


def test_empty_context_says_so():
    ctx = build_context("q", [], [])
    assert ctx.paths == () and ctx.text.endswith("(no paths found)")


def test_worked_example_context_end_to_end():
    g = nx.Graph([("s", "a"), ("s", "b"), ("a", "t"), ("b", "c"), ("b", "d"), ("c", "t")])
    store = NetworkXGraphStore(g)
    paths = find_key_paths(store, ["s", "t"])
    ctx = build_context("How are s and t linked?", paths, build_path_texts(store, paths))
    assert ctx.text.index("Path 1 (3 hops, reliability 0.573)") < ctx.text.index("Path 2 (2 hops, reliability 0.780)")


# -- the evidence layout -------------------------------------------------------------------------------


def _evidence_items():
    passages = [
        RetrievedItem("passage", f"c{i}", f"passage {i} " + "word " * 20, 1.0 - i / 10, (), (f"c{i}",))
        for i in range(5)
    ]
    new_fact = RetrievedItem(
        "path", "p-new", "A -> Z", 1.5, ("A", "Z"), ("c9",), ScoredPath(nodes=("A", "Z"), score=1.5)
    )
    repeat = RetrievedItem("path", "p-old", "A -> B", 1.2, ("A", "B"), ("c0",), ScoredPath(nodes=("A", "B"), score=1.2))
    return passages, new_fact, repeat


def test_evidence_layout_is_query_passages_ascending_then_paths_most_reliable_last():
    from pathrag.llm.prompts import ANSWER_INSTRUCTIONS, EVIDENCE_INSTRUCTIONS, PASSAGE_INSTRUCTIONS
    from pathrag.query.context import build_evidence_context, context_blocks

    passages, new_fact, repeat = _evidence_items()
    ctx = build_evidence_context("Q?", [new_fact, *passages, repeat], token_counter=len)
    assert [i.id for i in ctx.items] == ["c4", "c3", "c2", "c1", "c0", "p-old", "p-new"]
    text = ctx.text
    assert text.startswith("Question: Q?\n\nPassages, least to most relevant:\n\nPassage 1:\npassage 4")
    assert text.index("Passage 5:\npassage 0") < text.index("Path 6:\nA -> B") < text.index("Path 7:\nA -> Z")
    assert "Question: Q?\n\n" + "\n\n".join(h + b for h, b in context_blocks(ctx)) == text
    assert ctx.instructions == EVIDENCE_INSTRUCTIONS
    passages_only = build_evidence_context("Q?", passages, token_counter=len)
    assert "Relational paths" not in passages_only.text  # no path shown: no paths section
    assert passages_only.instructions == PASSAGE_INSTRUCTIONS  # and no word of paths in the instructions
    assert "Question: Q?\n\n" + "\n\n".join(h + b for h, b in context_blocks(passages_only)) == passages_only.text
    paths_only = build_evidence_context("Q?", [new_fact, repeat], token_counter=len)
    assert paths_only.instructions == ANSWER_INSTRUCTIONS and "Passages" not in paths_only.text


def test_evidence_budget_alternates_key_paths_and_passages_and_a_repeating_path_waits():
    from pathrag.query.context import build_evidence_context

    passages, new_fact, repeat = _evidence_items()
    mid = RetrievedItem("path", "p-mid", "A -> X", 1.3, ("A", "X"), ("c7",), ScoredPath(nodes=("A", "X"), score=1.3))
    more = RetrievedItem("path", "p-more", "A -> Y", 0.5, ("A", "Y"), ("c8",), ScoredPath(nodes=("A", "Y"), score=0.5))
    items = [repeat, *passages, new_fact, more, mid]
    whole = build_evidence_context("Q?", items, token_counter=len, key_paths=3)
    # p-old only repeats c0, taken just before its turn: it waits until the passages are taken
    assert [i.id for i in whole.ranked] == ["p-new", "c0", "p-mid", "c1", "c2", "c3", "c4", "p-old", "p-more"]
    assert [i.id for i in whole.items] == ["c4", "c3", "c2", "c1", "c0", "p-more", "p-old", "p-mid", "p-new"]
    for budget in range(120, whole.tokens + 1, 7):
        ctx = build_evidence_context("Q?", items, max_tokens=budget, token_counter=len, key_paths=3)
        assert ctx.tokens <= budget
        taken = [i.id for i in ctx.ranked]
        # what fits is a prefix of the order, skipping an item that does not fit for one that does
        order = [i.id for i in whole.ranked]
        assert taken == [i for i in order if i in taken]
        if ctx.tokens + len("\n\nPath 9:\nA -> Z") <= budget:
            assert "p-new" in taken  # the best path is shown whenever it fits
    # with one key path, the other paths wait for every passage
    one = build_evidence_context("Q?", items, token_counter=len, key_paths=1)
    assert [i.id for i in one.ranked] == ["p-new", "c0", "c1", "c2", "c3", "c4", "p-mid", "p-old", "p-more"]


def test_evidence_max_items_keeps_the_first_items_of_the_order():
    from pathrag.query.context import build_evidence_context

    passages, new_fact, repeat = _evidence_items()
    items = [repeat, *passages, new_fact]
    assert [i.id for i in build_evidence_context("Q?", items, max_items=1).items] == ["p-new"]
    assert [i.id for i in build_evidence_context("Q?", items, max_items=3).items] == ["c1", "c0", "p-new"]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_items"):
            build_evidence_context("Q?", items, max_items=bad)
    for bad in (0, -5, 10**9, 2.5):
        with pytest.raises(ValueError, match="max_tokens"):
            build_evidence_context("Q?", items, max_tokens=bad)
