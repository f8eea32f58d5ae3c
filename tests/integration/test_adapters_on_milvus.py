"""The LangChain adapter on a real vector database (issue #25): Milvus for the entity, relation and chunk
vectors, FalkorDB for the graph, end to end.

* ``LangChainVectorIndex`` over ``langchain_milvus.Milvus``: upsert, query (ids, scores), replace, delete.
* ``PathRAGIndexer`` with the three Milvus collections and ``CypherGraphStore.from_falkordb``, through the
  sync API (each call in a new event loop) and the async one: indexing, retrieval (exactly the documents of
  in-memory stores scoring on Milvus's scale), an update and a delete of a document (the vectors of what
  disappeared are gone from Milvus itself), and a reopen with new objects over the same collections, graph
  and index directory.

Milvus is the session server of ``tests/integration/milvus_server.py`` (milvus-lite, a child process),
FalkorDB that of ``tests/integration/falkordb_server.py``. Embeddings are the hashing embedder and the chat
model is scripted: everything is offline and deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_pathrag import LangChainVectorIndex, PathRAGIndexer
from langchain_pathrag.adapters import ID_KEY
from pathrag import VectorItem
from pathrag.graphs.cypher import CypherGraphStore
from pathrag.ids import entity_vector_id, relation_vector_id

from ..langchain_fakes import HARBOUR, QUESTION, WALL, ScriptedChatModel, embeddings

# WALL rewritten: Bram, not Ida, designed the Sea Wall and was hired by the Tide Board
NEW_WALL = Document(
    id="wall",
    metadata={"source": "wall.txt"},
    page_content=WALL.page_content.replace("Ida", "Bram"),
)


def rows(store: Any) -> dict[str, dict[str, Any]]:
    """Everything a ``Milvus`` collection holds, read from the server: ``{primary key: metadata and text}``."""
    found = store.client.query(store.collection_name, filter='pk != ""', output_fields=["*"], limit=1000)
    return {row["pk"]: {k: v for k, v in row.items() if k not in ("pk", "vector")} for row in found}


def entity_names(stores: dict[str, Any]) -> set[str]:
    return {row["name"] for row in rows(stores["entities"]).values()}


def answer(docs: list[Document]) -> list[tuple]:
    """A retrieval's documents; scores to 4 places (Milvus keeps float32 vectors, the reference float64)."""
    return [
        (d.id, d.page_content, {**d.metadata, **{k: round(d.metadata[k], 4) for k in ("score", "raw_score")}})
        for d in docs
    ]


class MilvusScaleStore(InMemoryVectorStore):
    """An in-memory store scoring as Milvus does: its relevance score for a cosine index is
    ``(1 + cosine) / 2`` (the in-memory store gives the cosine itself), and the core's path and passage
    weights are not invariant under that change of scale."""

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return lambda cosine: (1 + cosine) / 2


def reference_indexer() -> PathRAGIndexer:
    """The same index on in-memory stores with Milvus's score scale: the answers to match exactly."""
    stores = {f"{name}_store": MilvusScaleStore(embeddings()) for name in ("entity", "relation", "chunk")}
    return PathRAGIndexer(ScriptedChatModel(), embeddings(), **stores)


def nodes_of(docs: list[Document]) -> set[str]:
    return {n for d in docs for n in d.metadata["nodes"]}


# -- the vector index alone ------------------------------------------------------------------------


def test_vector_index_on_milvus_keeps_ids_scores_and_replacements(milvus_stores):
    store = milvus_stores(embeddings())["chunks"]
    index = LangChainVectorIndex(store)
    assert index.query("harbour pilot", k=2) == []  # no collection yet: Milvus cannot score, finds nothing
    index.upsert(
        [
            VectorItem("c1", "Mara is the harbour pilot of Saltmere.", {"chunk_id": "c1", "entities": ["MARA"]}),
            VectorItem("c2", "The Sea Wall protects Saltmere.", {"chunk_id": "c2", "entities": []}),
        ]
    )
    hits = index.query("harbour pilot Mara", k=2)
    assert [hit.id for hit in hits] == ["c1", "c2"]  # the item ids, not the empty Document.id Milvus returns
    # lists survive; the adapter's id key is not shown (Milvus adds its primary key, "pk")
    assert hits[0].metadata.items() >= {"chunk_id": "c1", "entities": ["MARA"]}.items()
    assert ID_KEY not in hits[0].metadata and rows(store)["c1"][ID_KEY] == "c1"
    assert hits[0].text == "Mara is the harbour pilot of Saltmere."
    assert 1 >= hits[0].score > hits[1].score >= 0  # relevance: higher is closer, on [0, 1]

    # a changed item replaces the stored one (Milvus cannot look ids up: delete, then add), never duplicates
    index.upsert([VectorItem("c2", "Ida designed the Sea Wall.", {"chunk_id": "c2", "entities": ["IDA"]})])
    assert sorted(rows(store)) == ["c1", "c2"]
    assert index.query("Ida designed", k=1)[0].metadata["entities"] == ["IDA"]
    assert index.get("c1") is None  # langchain-milvus has no get_by_ids

    index.delete(["c1"])
    index.delete([])  # no call at all (some stores delete everything when given no ids)
    assert sorted(rows(store)) == ["c2"]
    assert [hit.id for hit in index.query("?", k=2)] in ([], ["c2"])  # a query without words: no error


async def test_async_vector_index_on_milvus(milvus_stores):
    index = LangChainVectorIndex(milvus_stores(embeddings())["entities"])
    assert await index.aquery("Mara", k=1) == []
    await index.aupsert([VectorItem("e1", "MARA\nHarbour pilot.", {"name": "MARA"}), VectorItem("e2", "GULL")])
    hits = await index.aquery("Mara the harbour pilot", k=1)
    assert [(hit.id, hit.metadata["name"]) for hit in hits] == [("e1", "MARA")]
    await index.adelete(["e1"])
    assert [hit.id for hit in await index.aquery("Mara the harbour pilot", k=2)] == ["e2"]


# -- the indexer and retriever: Milvus vectors, FalkorDB graph ------------------------------------------


@pytest.mark.parametrize("use_async", [False, True])
async def test_indexer_and_retriever_on_milvus_and_falkordb(falkordb_graph, milvus_stores, tmp_path, use_async):
    def open_indexer(llm: ScriptedChatModel) -> tuple[PathRAGIndexer, dict[str, Any]]:
        """New objects each time: the Milvus collections, FalkorDB graph and index directory are the same."""
        stores = milvus_stores(embeddings())
        indexer = PathRAGIndexer(
            llm,
            embeddings(),
            path=tmp_path / "kb",
            graph_store=CypherGraphStore.from_falkordb(falkordb_graph),
            entity_store=stores["entities"],
            relation_store=stores["relations"],
            chunk_store=stores["chunks"],
        )
        return indexer, stores

    async def add(indexer: PathRAGIndexer, docs: list[Document]) -> Any:
        return await indexer.aadd_documents(docs) if use_async else indexer.add_documents(docs)

    async def ask(indexer: PathRAGIndexer, k: int = 4) -> list[Document]:
        retriever = indexer.as_retriever(k=k)
        return await retriever.ainvoke(QUESTION) if use_async else retriever.invoke(QUESTION)

    indexer, stores = open_indexer(ScriptedChatModel())
    embedded = reference_indexer()
    for each in (indexer, embedded):
        summary = await add(each, [HARBOUR, WALL])
        assert (summary.documents, summary.entities, summary.relations, summary.failures) == (2, 6, 8, [])

    # the vectors are in Milvus: one per entity, relation and chunk, under the index's own ids
    assert entity_names(stores) == {"MARA", "SALTMERE", "TIDE BOARD", "GULL", "IDA", "SEA WALL"}
    assert set(rows(stores["entities"])) == {entity_vector_id(n) for n in entity_names(stores)}
    assert len(rows(stores["relations"])) == 8
    assert relation_vector_id(("IDA", "SEA WALL")) in rows(stores["relations"])
    chunks = rows(stores["chunks"])
    assert len(chunks) == 2 and {row["chunk_id"] for row in chunks.values()} == set(chunks)

    got = await ask(indexer, k=8)
    assert 6 <= len(got) <= 8 and answer(got) == answer(await ask(embedded, k=8))  # all the tiny store holds
    best = got[0].metadata
    assert best["kind"] == "path" and {best["nodes"][0], best["nodes"][-1]} == {"MARA", "SEA WALL"}
    assert ["SEA WALL", "IDA", "TIDE BOARD", "MARA"] in [d.metadata["nodes"] for d in got]  # Ida designed it
    passages = [d for d in got if d.metadata["kind"] == "passage"]
    assert {p.page_content for p in passages} == {HARBOUR.page_content, WALL.page_content}  # both, as embedded
    assert {cid for d in passages for cid in d.metadata["source_ids"]} == set(chunks)  # Milvus's own ids
    assert answer(await ask(indexer, k=2)) == answer(got)[:2]

    # an update: Ida is gone, Bram is new; Milvus holds exactly the new entities and relations
    for each in (indexer, embedded):
        await add(each, [NEW_WALL])
    assert entity_names(stores) == {"MARA", "SALTMERE", "TIDE BOARD", "GULL", "BRAM", "SEA WALL"}
    relations = rows(stores["relations"])
    assert relation_vector_id(("BRAM", "SEA WALL")) in relations
    assert relation_vector_id(("IDA", "SEA WALL")) not in relations and len(relations) == 8
    assert len(set(rows(stores["chunks"])) - set(chunks)) == 1  # the wall's old chunk replaced, the harbour's kept
    assert len(rows(stores["chunks"])) == 2
    updated = await ask(indexer, k=8)
    assert "BRAM" in nodes_of(updated) and "IDA" not in nodes_of(updated)
    assert answer(updated) == answer(await ask(embedded, k=8))

    # a delete: what only the wall document supported leaves Milvus too
    for each in (indexer, embedded):
        summary = await each.adelete(["wall"]) if use_async else each.delete("wall")
        assert (summary.documents, summary.entities_removed) == (1, 2)
    assert entity_names(stores) == {"MARA", "SALTMERE", "TIDE BOARD", "GULL"}
    assert not {relation_vector_id(("BRAM", "SEA WALL")), relation_vector_id(("SEA WALL", "SALTMERE"))} & set(
        rows(stores["relations"])
    )
    assert len(rows(stores["relations"])) == 5 and len(rows(stores["chunks"])) == 1
    after = await ask(indexer)
    assert nodes_of(after) == {"MARA", "SALTMERE", "TIDE BOARD", "GULL"}
    assert answer(after) == answer(await ask(embedded))
    indexer.close()

    # a reopen: new indexer, retriever, Milvus and FalkorDB objects answer the same
    llm = ScriptedChatModel()
    reopened, _ = open_indexer(llm)
    assert answer(await ask(reopened)) == answer(after)
    again = await add(reopened, [HARBOUR])
    assert (again.unchanged, again.llm_calls) == (1, 0)  # nothing extracted again
    reopened.close()
