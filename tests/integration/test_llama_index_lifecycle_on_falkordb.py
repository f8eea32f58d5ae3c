"""The server half of test_llama_index_lifecycle.py: what needs a running FalkorDB (or Neo4j) server."""

from __future__ import annotations

import uuid

import pytest
from llama_index.core.graph_stores import SimplePropertyGraphStore

from ..llama_index_fakes import ScriptedLlamaLLM
from ..unit.test_llama_index_lifecycle import (
    DOCS,
    EDITED_D,
    EXACT,
    KEYWORDS,
    build,
    chunk_documents,
    markdown,
    paths,
    snapshot,
)


@pytest.fixture
def falkordb_stores(falkordb_server):  # noqa: F811 - the fixture imported above
    """A factory of FalkorDBPropertyGraphStores, each on a fresh graph of the session server."""
    module = pytest.importorskip(
        "llama_index.graph_stores.falkordb", reason="llama-index-graph-stores-falkordb is not installed"
    )
    made = []

    def make(**options):
        name = f"test_{uuid.uuid4().hex}"
        store = module.FalkorDBPropertyGraphStore(url=f"unix://{falkordb_server.socket}", database=name, **options)
        made.append((store, name))
        return store

    try:
        yield make
    finally:
        for store, name in made:
            store.close()
            if name in falkordb_server.client.list_graphs():
                falkordb_server.client.select_graph(name).delete()


def entity_vectors(index) -> dict[str, list[float]]:
    rows = index.property_graph_store.structured_query("MATCH (e:__Entity__) RETURN e.id AS id, e.embedding AS v")
    return {row["id"]: list(row["v"] or []) for row in rows}


@pytest.mark.parametrize(("deleted", "from_docstore", "options"), [("D", True, EXACT), ("A", False, {})])
def test_delete_ref_doc_on_falkordb_equals_never_inserting_it(falkordb_stores, deleted, from_docstore, options):
    llm = ScriptedLlamaLLM(keywords=KEYWORDS)
    kept = [d for d in DOCS if d != deleted]
    full = build(falkordb_stores(**options), llm, [markdown("A")], *(markdown(d) for d in "BCD"))
    memory = build(SimplePropertyGraphStore(), llm, [markdown("A")], *(markdown(d) for d in "BCD"))
    assert snapshot(full.property_graph_store) == snapshot(memory.property_graph_store)
    full.delete_ref_doc(deleted, delete_from_docstore=from_docstore)
    never = build(falkordb_stores(**options), llm, [markdown(kept[0])], *(markdown(d) for d in kept[1:]))
    got = snapshot(full.property_graph_store)
    assert got == snapshot(never.property_graph_store)
    assert len(got["relations"]) == len({r[0] for r in got["relations"]})  # one relation per pair
    if deleted == "D":
        assert "LANTERN" not in got["entities"] and got["entities"]["MARA"][0] == "person"
        assert paths(full, llm) == paths(never, llm) and paths(full, llm)[0][0][1] > 0


@pytest.mark.parametrize("deleted", ["A", "C"])
def test_falkordb_with_the_embed_model_one_batch_then_delete(falkordb_stores, deleted):
    llm = ScriptedLlamaLLM(keywords=KEYWORDS)
    kept = [d for d in DOCS if d != deleted]
    full = build(falkordb_stores(**EXACT), llm, [markdown(d) for d in DOCS], reembed=True)
    full.delete_ref_doc(deleted, delete_from_docstore=True)
    never = build(falkordb_stores(**EXACT), llm, [markdown(d) for d in kept], reembed=True)
    assert snapshot(full.property_graph_store) == snapshot(never.property_graph_store)
    # the entities whose description the delete changed were embedded again (FalkorDB needs the old vector
    # cleared before it takes a new one), so the seeds and the paths are the never-inserted index's
    assert entity_vectors(full) == entity_vectors(never)
    assert paths(full, llm) == paths(never, llm)
    assert [d for d in chunk_documents(full.property_graph_store) if d != deleted] == sorted(
        d for d in kept for _ in DOCS[d]
    )
    # no chunk node was recreated (FalkorDB links an entity to its triplet_source_id chunk with MENTIONS)
    bare = full.property_graph_store.structured_query("MATCH (c:Chunk) WHERE c.text IS NULL RETURN count(c) AS n")
    assert bare[0]["n"] == 0
    labels = full.property_graph_store.structured_query("MATCH (e:__Entity__ {id: 'MARA'}) RETURN labels(e) AS labels")[
        0
    ]["labels"]
    assert sorted(labels) == sorted(["__Entity__", "person" if deleted == "D" else "pilot"])


def test_re_inserting_an_edited_document_on_falkordb(falkordb_stores):
    llm = ScriptedLlamaLLM(keywords=KEYWORDS)
    index = build(falkordb_stores(**EXACT), llm, [markdown("A")], *(markdown(d) for d in "BCD"))
    edited = markdown("D", EDITED_D)
    index.update_ref_doc(edited)
    fresh = build(falkordb_stores(**EXACT), llm, [markdown("A")], *(markdown(d) for d in "BC"), edited)
    assert snapshot(index.property_graph_store) == snapshot(fresh.property_graph_store)
    assert paths(index, llm) == paths(fresh, llm)
