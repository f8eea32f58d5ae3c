"""LangChainVectorIndex: reading items back and the scores passages are ranked with."""

from __future__ import annotations


def test_vector_index_get_reads_an_item_back_by_id():
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_pathrag import LangChainVectorIndex, PathRAGEmbeddings
    from pathrag import HashingEmbedder, VectorItem

    index = LangChainVectorIndex(InMemoryVectorStore(PathRAGEmbeddings(HashingEmbedder())))
    index.upsert([VectorItem("c1", "Mara pilots ships.", {"entities": ["MARA"]})])
    assert index.get("c1") == VectorItem("c1", "Mara pilots ships.", {"entities": ["MARA"]})
    assert index.get("missing") is None
    [hit] = index.query("who pilots ships", 1)
    assert hit.text == "Mara pilots ships." and 0 < hit.score <= 1  # InMemoryVectorStore: cosine similarity
