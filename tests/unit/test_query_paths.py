"""Query-aware key paths: linking the question's names, weighing and chaining relations, the default
context showing them, and bad queries."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pathrag import (
    Entity,
    HashingEmbedder,
    InMemoryVectorIndex,
    NetworkXGraphStore,
    Relation,
    VectorItem,
    aretrieve,
    find_key_paths,
    retrieve,
)
from pathrag.query.context import result_context
from pathrag.query.linking import linked_names, name_spans
from pathrag.query.query_paths import Chain, WeightedRelation, chain_relations, merge_chains, weigh_relations
from pathrag.vectors.items import chunk_metadata, entity_vector_item, relation_vector_item

# -- linking -------------------------------------------------------------------------------------------


def keys(question: str) -> set[str]:
    return {span.key for span in name_spans(question)}


def test_a_question_names_what_it_spells_and_common_nouns_do_not_count():
    found = keys("Which county borders the county of Johnnycake, West Virginia?")
    assert {"JOHNNYCAKE", "WEST VIRGINIA", "JOHNNYCAKE, WEST VIRGINIA"} <= found
    assert "COUNTY" not in found and "WHICH" not in found  # no capital (the opening "Which" is a question word)
    assert "IRON MAIDEN" in keys("Where did Iron Maiden's singer grow up?")  # possessive dropped
    assert "1995" in keys("What happened in 1995 there?")  # numbers count as names
    assert keys("who founded kessel works?") >= {"KESSEL WORKS", "KESSEL", "WORKS"}  # all lower case: any span
    assert not any(k.startswith(("THE ", "OF ")) or k.endswith(" THE") for k in keys("the Orla bridge of the town"))


def test_the_longest_known_name_wins_and_names_never_overlap():
    spans = name_spans("Is Johnnycake in West Virginia or in Virginia Beach?")
    known = {"WEST VIRGINIA", "VIRGINIA", "VIRGINIA BEACH", "JOHNNYCAKE"}
    assert linked_names(spans, known) == ["WEST VIRGINIA", "VIRGINIA BEACH", "JOHNNYCAKE"]
    assert linked_names(spans, set()) == []


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_bounded_normalised_spans(text):
    spans = name_spans(text)
    assert len(spans) <= 8 * max(len(text.split()), 1)
    assert all(span.key and span.key == span.key.upper().strip() for span in spans)
    assert all(0 <= s.start < s.end <= s.start + 8 for s in spans)


# -- weights and chains --------------------------------------------------------------------------------


def rel(a: str, b: str, *chunks: str) -> Relation:
    return Relation(source=a, target=b, keywords=[f"{a.lower()}-{b.lower()}"], source_ids=list(chunks))


def test_a_weight_is_similarity_discounted_by_the_rank_of_its_best_passage():
    ranks = {"c0": 0, "c1": 1, "c2": 2}
    weighted = weigh_relations(
        [
            (rel("A", "B", "c2"), 0.9),
            (rel("B", "C", "c0", "c2"), 0.5),
            (rel("C", "D", "x"), 0.8),
            (rel("D", "E"), -0.2),
        ],
        ranks,
        alpha=0.5,
    )
    assert [(w.relation.pair, w.weight) for w in weighted] == [
        (("B", "C"), 0.5),  # its best passage ranks first
        (("A", "B"), 0.9 * 0.25),  # two steps down the ranking
        (("C", "D"), 0.8 * 0.125),  # stated in no candidate passage: as if right after the last one
    ]  # a relation less similar than orthogonal weighs nothing and is left out
    alone = weigh_relations([(rel("A", "B", "c2"), 0.9), (rel("B", "C"), 0.5)], None, alpha=0.5)
    assert [w.weight for w in alone] == [0.9, 0.5]  # no passages: the similarity alone


def weighted(*pairs: tuple[str, str, float]) -> list[WeightedRelation]:
    return [WeightedRelation(rel(a, b), w) for a, b, w in pairs]


def test_relations_chain_from_the_named_entity_and_extend_at_the_ends():
    chains = chain_relations(
        weighted(("X", "B", 0.9), ("B", "ANSWER", 0.5), ("Q", "X", 0.4), ("ANSWER", "Z", 0.3), ("B", "C", 0.2)),
        origins={"X"},
        max_paths=3,
        max_hops=3,
    )
    # X -> B -> ANSWER -> Z: B-C touches no end; Q-X may not be put before X, the named start: a path of its own
    assert [c.nodes for c in chains] == [["X", "B", "ANSWER", "Z"], ["X", "Q"], ["B", "C"]]
    assert chains[0].score == pytest.approx(0.9 + 0.5 + 0.3)
    assert chains[0].source_ids == ()
    short = chain_relations(weighted(("X", "B", 0.9), ("B", "C", 0.5), ("C", "D", 0.4)), max_paths=1, max_hops=2)
    assert [c.nodes for c in short] == [["X", "B", "C"]]  # max_hops caps a path, max_paths the number of paths
    both = chain_relations(weighted(("X", "B", 0.3), ("B", "Y", 0.3), ("P", "Q", 0.5)), origins={"X", "Y"})
    assert [c.nodes for c in both] == [["X", "B", "Y"], ["P", "Q"]]  # joining two named entities counts twice
    assert both[0].score == pytest.approx(2 * 0.6)


def _chains_by_trying_every_path(weighted, origins, max_paths, max_hops):
    """The chaining rule written plainly: each relation offered to every path in opening order."""
    from pathrag.query.query_paths import _extend, _other

    chains = []
    for item in weighted:
        if any(_extend(chain, item, origins, max_hops) for chain in chains) or len(chains) >= max_paths:
            continue
        relation = item.relation
        start = relation.target if relation.target in origins and relation.source not in origins else relation.source
        chains.append(Chain([start, _other(relation, start)], [relation], [item.weight]))
    return chains


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.floats(0.01, 1)), max_size=40),
    st.sets(st.integers(0, 9), max_size=3),
    st.integers(1, 8),
    st.sampled_from([1, 2, 3, None]),
)
def test_chaining_through_the_index_of_path_ends_equals_offering_each_relation_to_every_path(
    rows, named, max_paths, max_hops
):
    seen, weighted = set(), []
    for a, b, weight in rows:
        if a != b and frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            weighted.append(WeightedRelation(Relation(source=f"N{a}", target=f"N{b}"), weight))
    weighted.sort(key=lambda w: -w.weight)
    origins = {f"N{n}" for n in named}
    fast = chain_relations(weighted, origins=origins, max_paths=max_paths, max_hops=max_hops)
    plain = _chains_by_trying_every_path(weighted, origins, max_paths, max_hops)
    for chain in plain:  # the same finishing steps chain_relations applies
        chain.named = sum(node in origins for node in chain.nodes)
        if chain.nodes[-1] in origins and chain.nodes[0] not in origins:
            chain.nodes.reverse(), chain.relations.reverse(), chain.weights.reverse()
    plain.sort(key=lambda c: -c.score)
    assert [(c.nodes, c.weights) for c in fast] == [(c.nodes, c.weights) for c in plain]


def test_the_papers_paths_between_named_entities_join_the_chains():
    from pathrag import ScoredPath

    chains = [Chain(["X", "Q"], [rel("X", "Q")], [0.5], named=1)]
    joining = [ScoredPath(nodes=("X", "B", "Y"), score=1.0), ScoredPath(nodes=("X", "C", "Y"), score=0.9)]
    relations = {
        ("X", "B"): rel("X", "B"),
        ("B", "Y"): rel("B", "Y"),
        ("X", "C"): rel("X", "C"),
        ("C", "Y"): rel("C", "Y"),
    }
    merged = merge_chains(chains, joining, relations, weighted(("X", "B", 0.2), ("B", "Y", 0.1)), 5, {"X", "Y"})
    assert [c.nodes for c in merged] == [["X", "B", "Y"], ["X", "Q"]]  # X-C-Y has no candidate relation: left out
    assert merged[0].score == pytest.approx(2 * 0.3)


# -- retrieval end to end: a bridge question -------------------------------------------------------------

# "Who was the first president of the association that published the Journal of Tide Studies?"
# The question names the journal; the answer (Ada Finch) is an entity it does not name.
PASSAGES = {
    "p1": "The Journal of Tide Studies is published by the Harbour Science Association since 1921.",
    "p2": "Ada Finch was the first president of the Harbour Science Association, founded in 1890.",
    "p3": "The Journal of Tide Studies covers currents and estuaries.",
    "p4": "The Sea Guild elected its first president, Tom Pike, in 1902.",
}
RELATIONS = [
    Relation(
        source="JOURNAL OF TIDE STUDIES",
        target="HARBOUR SCIENCE ASSOCIATION",
        keywords=["published by"],
        source_ids=["p1"],
    ),
    Relation(
        source="ADA FINCH", target="HARBOUR SCIENCE ASSOCIATION", keywords=["first president of"], source_ids=["p2"]
    ),
    Relation(source="JOURNAL OF TIDE STUDIES", target="CURRENTS", keywords=["covers"], source_ids=["p3"]),
    Relation(source="TOM PIKE", target="SEA GUILD", keywords=["first president of"], source_ids=["p4"]),
]
QUESTION = "Who was the first president of the association that published the Journal of Tide Studies?"


def bridge_stores():
    graph = NetworkXGraphStore()
    names = sorted({n for r in RELATIONS for n in r.pair})
    graph.upsert_entities(
        [Entity(name=n, source_ids=[r.source_ids[0] for r in RELATIONS if n in r.pair]) for n in names]
    )
    graph.upsert_relations(RELATIONS)
    embedder = HashingEmbedder()
    entities, relations, passages = (InMemoryVectorIndex(embedder) for _ in range(3))
    entities.upsert([entity_vector_item(Entity(name=n)) for n in names])
    relations.upsert([relation_vector_item(r) for r in RELATIONS])
    mentions = {cid: [n for r in RELATIONS if cid in r.source_ids for n in r.pair] for cid in PASSAGES}
    passages.upsert([VectorItem(cid, text, chunk_metadata(cid, mentions[cid])) for cid, text in PASSAGES.items()])
    return {"graph": graph, "entity_index": entities, "relation_index": relations, "passage_index": passages}


def test_the_default_paths_reach_the_answer_the_question_does_not_name():
    stores = bridge_stores()
    result = retrieve(QUESTION, **stores)
    assert result.seeds[0] == "JOURNAL OF TIDE STUDIES"  # the name the question spells comes first
    best = result.paths[0]
    assert best.nodes == ("JOURNAL OF TIDE STUDIES", "HARBOUR SCIENCE ASSOCIATION", "ADA FINCH")
    assert best.text == (
        "JOURNAL OF TIDE STUDIES —published by→ HARBOUR SCIENCE ASSOCIATION ←first president of— ADA FINCH"
    )
    assert set(best.source_ids) == {"p1", "p2"}  # the passages that back it
    # a tight budget: the best path still reaches the model, with the answer in it
    small = result_context(result, max_tokens=80)
    assert [i.kind for i in small.items] == ["path"] and "ADA FINCH" in small.text
    ample = result_context(result)
    assert "ADA FINCH" in ample.text and {"p1", "p2"} <= {i.id for i in ample.items}
    assert asyncio.run(aretrieve(QUESTION, **stores)).items == result.items


def test_the_papers_mode_is_unchanged():
    stores = bridge_stores()
    paper = retrieve(QUESTION, **stores, context="paths")
    assert paper.passages == [] and "JOURNAL OF TIDE STUDIES" not in paper.seeds[:0]
    assert [i.path for i in paper.paths] == find_key_paths(stores["graph"], paper.seeds)
    assert all("\n  relation " in i.text for i in paper.paths)  # written as the paper's walks


def test_a_question_naming_nothing_known_still_finds_what_the_graph_knows():
    stores = bridge_stores()
    result = retrieve("who presided over the harbour science group first?", **stores)
    assert result.paths and any("ADA FINCH" in p.nodes for p in result.paths)
    assert result.passages
    bare = {k: v for k, v in stores.items() if k != "relation_index"}  # no relation vectors: the paper's paths
    fallback = retrieve(QUESTION, **bare)
    assert fallback.paths or [i for i in fallback.items if i.kind == "entity"]


# -- bad queries and settings -----------------------------------------------------------------------------


def test_bad_queries_are_clear_errors_or_documented_results():
    stores = bridge_stores()
    with pytest.raises(TypeError, match="query must be a str"):
        retrieve(b"Journal of Tide Studies", **stores)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at most 10,000 are accepted"):
        retrieve("word " * 2_000_000, **stores)  # 10 MB: refused before any work, so never a hang
    with_nul = retrieve("Journal\x00 of Tide Studies\x00first president?", **stores)
    assert with_nul.query == "Journal  of Tide Studies first president?" and with_nul.paths  # NUL counts as a space
    assert retrieve("\x00\x00  ", **stores).items == []  # nothing but control characters: empty
    for bad in (0, -1, 10**8, 1.5):
        with pytest.raises(ValueError, match="max_tokens"):
            retrieve(QUESTION, **stores, max_tokens=bad)
    with pytest.raises(ValueError, match="num_relations"):
        retrieve(QUESTION, **stores, num_relations=-1)
    assert retrieve(QUESTION, **stores, max_tokens=None).max_tokens is None
