"""The merge rules as pure functions."""

from __future__ import annotations

import pytest

from pathrag import Entity, Relation
from pathrag.index.merging import join_descriptions, merge_entity, merge_relation, relation_key


def test_entity_type_is_the_most_frequent_and_ties_go_to_the_first_seen():
    records = [Entity(name="X", type=t) for t in ["place", "person", "person", "place", ""]]
    assert merge_entity("X", records).type == "place"  # 2 vs 2: place was seen first
    assert merge_entity("X", records[1:]).type == "person"
    assert merge_entity("X", [Entity(name="X")]).type == ""


def test_descriptions_are_deduplicated_in_first_seen_order():
    assert join_descriptions([" a. ", "b.", "a.", "", "  "]) == "a. b."


def test_bare_endpoint_entity_takes_its_chunks_from_relations():
    merged = merge_entity("Y", [], extra_source_ids=["c2", "c1", "c2"])
    assert merged == Entity(name="Y", source_ids=("c2", "c1"))


def test_relation_merge_sums_weights_unions_keywords_and_keeps_first_direction():
    merged = merge_relation(
        [
            Relation(source="A", target="B", description="one", keywords=["x", "y"], weight=2, source_ids=["c1"]),
            Relation(source="B", target="A", description="two", keywords=["y", "z"], weight=3.5, source_ids=["c2"]),
        ]
    )
    assert merged.pair == ("A", "B") and merged.weight == 5.5
    assert merged.keywords == ("x", "y", "z") and merged.source_ids == ("c1", "c2")
    assert merged.description == "one two"
    with pytest.raises(ValueError):
        merge_relation([])


def test_relation_key_identity():
    assert relation_key("B", "A") == relation_key("A", "B") == ("A", "B")
    assert relation_key("B", "A", directed=True) == ("B", "A")
