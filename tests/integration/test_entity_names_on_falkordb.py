"""The server half of test_entity_names.py: what needs a running FalkorDB (or Neo4j) server."""

from __future__ import annotations

import pytest

from pathrag import Document, Entity, HashingEmbedder, PathRAGIndex, Relation
from pathrag.names import MAX_NAME_BYTES, EntityNameError, normalize_name

from ..unit.test_entity_names import ODD, SERVER_KILLERS, RawRecordsLLM, assert_alive, operational, utf8


async def test_the_pipeline_stores_normalised_names_on_falkordb(falkordb_server, falkordb_graph):
    store = operational(falkordb_graph)
    expected = {normalize_name(n) for n in ODD}
    assert len(expected) == len(ODD)  # the two 4 kB names sharing their beginning stay two entities
    # the chunk spells the names its records give (records naming what it never spells are dropped)
    docs = [Document(id="odd", text="A chunk about oddly named organisations: " + "; ".join(ODD))]
    on_falkordb = PathRAGIndex(llm=RawRecordsLLM(ODD), embedder=HashingEmbedder(32), graph=store, extractor="llm")
    embedded = PathRAGIndex(llm=RawRecordsLLM(ODD), embedder=HashingEmbedder(32), extractor="llm")
    for index in (on_falkordb, embedded):
        summary = await index.ainsert(docs)
        assert summary.entities == len(ODD) and not summary.failures
    assert_alive(falkordb_server)
    stored = {e.name for e in store.iter_entities()}
    assert stored == expected == {e.name for e in embedded.graph.iter_entities()}
    assert all(utf8(name) <= MAX_NAME_BYTES for name in stored)
    assert "HEDDA VOSS" in stored and "TIDEBOARD" in stored
    assert len(list(store.iter_relations())) == len(ODD) - 1
    paths = on_falkordb.retrieve("Hedda Voss and the harbour authority", keyword_llm=False, context="paths")
    assert paths.seeds and all(s in stored for s in paths.seeds)
    await on_falkordb.adelete(["odd"])
    assert list(store.iter_entities()) == []
    assert_alive(falkordb_server)


def test_direct_writes_are_refused_before_anything_reaches_the_server(falkordb_server, falkordb_graph):
    store = operational(falkordb_graph)
    store.upsert_entities([Entity(name="ANCHOR")])
    for bad in SERVER_KILLERS:
        sent = store.round_trips
        with pytest.raises(EntityNameError, match="CypherGraphStore: nothing written"):
            store.upsert_entities([Entity(name="FINE"), Entity(name=bad)])
        with pytest.raises(EntityNameError):
            store.upsert_relations([Relation(source="ANCHOR", target=bad)])
        with pytest.raises(EntityNameError):  # a merge hook cannot smuggle one in either
            store.upsert_entities([Entity(name="ANCHOR")], merge=lambda old, new, bad=bad: Entity(name=bad))
        assert store.round_trips - sent == 1  # only the merge hook's read of ANCHOR was sent
        assert_alive(falkordb_server)
    assert {e.name for e in store.iter_entities()} == {"ANCHOR"}
    # normalised, the same names are stored and found as they are
    keys = [normalize_name(n) for n in SERVER_KILLERS]
    store.upsert_relations([Relation(source="ANCHOR", target=k) for k in dict.fromkeys(keys)])
    assert set(store.get_entities(keys)) == set(keys)
    assert_alive(falkordb_server)


def test_reads_of_names_no_store_holds_find_nothing_and_harm_nothing(falkordb_server, falkordb_graph):
    store = operational(falkordb_graph)
    store.upsert_relations([Relation(source="ALICE", target="BOB")])
    assert store.get_entities(SERVER_KILLERS) == {}
    assert store.neighborhoods({n: None for n in SERVER_KILLERS}) == {}
    store.delete_entities(SERVER_KILLERS)
    assert set(store.get_entities(["ALICE", "BOB"])) == {"ALICE", "BOB"}
    assert_alive(falkordb_server)
