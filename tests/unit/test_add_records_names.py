"""PathRAGIndex.add_records refuses, up front, a name no store can hold (issue 16): nothing is written, on
the embedded store and in memory alike; normalised names go in as they are."""

from __future__ import annotations

import pytest

from pathrag import Entity, HashingEmbedder, PathRAGIndex, Relation
from pathrag.names import EntityNameError, normalize_name

CJK = "港口管理局" * 280  # 4,200 bytes


@pytest.mark.parametrize("on_disk", [True, False], ids=["sqlite", "in-memory"])
def test_add_records_refuses_up_front_and_writes_nothing(tmp_path, on_disk):
    index = PathRAGIndex(tmp_path / "kb" if on_disk else None, llm=None, embedder=HashingEmbedder(32))
    with pytest.raises(EntityNameError, match="4,200 bytes"):
        index.add_records("imported", [Entity(name="OK"), Entity(name=CJK)], [])
    with pytest.raises(EntityNameError, match="starts or ends"):
        index.add_records("imported", [], [Relation(source="OK", target="FINE "), Relation(source="A", target="B")])
    assert len(index.graph) == 0 and index.documents == {} and index.stats()["documents"] == 0
    summary = index.add_records(
        "imported", [Entity(name=normalize_name(CJK))], [Relation(source="HEDDA VOSS", target=normalize_name(CJK))]
    )
    assert summary.entities == 2
    assert {e.name for e in index.graph.iter_entities()} == {normalize_name(CJK), "HEDDA VOSS"}
