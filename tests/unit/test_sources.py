"""Sources end to end (issue 37, item 2): the metadata of each input document comes back on every result.

Kept per document in the store (JSON, at most MAX_METADATA_BYTES, deleted with the document), read in the
retrieval's own committed state, and shown the way each framework shows a source: LangChain
``metadata["source"]`` and the input's keys, LlamaIndex ``ref_doc_id`` (the SOURCE relationship) and the
input's metadata; ``get_by_ids`` takes every id a retrieval hands out; the CLI keeps the file path and its
front matter.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from langchain_core.documents import Document as LCDocument
from llama_index.core.schema import NodeRelationship

from langchain_pathrag import PathRAGEmbeddings, PathRAGIndexer
from langchain_pathrag.cli.readers import read_documents
from llama_index_pathrag import PathRAGIndexRetriever
from pathrag import Document, HashingEmbedder, PathRAGIndex, RetrievedItem
from pathrag.index.values import MAX_METADATA_BYTES

from ..fakes import ScriptedLLM
from ..langchain_fakes import ScriptedChatModel

HARBOUR = (
    "ENTITY MARA | person | Mara is the harbour pilot.\n"
    "LINK MARA | SALTMERE | Mara guides ships into Saltmere. | pilots | 6\n"
    "Mara guides every ship into Saltmere."
)
GULL = (
    "ENTITY GULL | ship | The Gull is a fishing boat.\n"
    "LINK SALTMERE | GULL | The Gull is moored in Saltmere. | moored in | 4\n"
    "The Gull is moored in Saltmere."
)
QUESTION = "How is Mara linked to the Gull?"
LEGACY = Path(__file__).parents[1] / "fixtures" / "legacy_json_store"


def documents() -> list[Document]:
    return [
        Document(id="harbour", text=HARBOUR, metadata={"source": "logs/harbour.md", "title": "Harbour", "page": 3}),
        Document(id="gull", text=GULL, metadata={"source": "logs/gull.md", "title": "The Gull", "page": 7}),
    ]


@pytest.mark.parametrize("stored", [False, True])
def test_every_item_carries_its_documents_and_their_metadata(tmp_path: Path, stored: bool) -> None:
    index = PathRAGIndex(tmp_path if stored else None, llm=ScriptedLLM(), embedder=HashingEmbedder(128))
    index.insert(documents())
    for context in ("evidence", "paths"):
        result = index.retrieve(QUESTION, keyword_llm=False, context=context)
        assert result.items and all(item.documents for item in result.items)
        for item in result.items:
            for doc in item.documents:
                assert doc.metadata == index.documents[doc.id].metadata
                assert set(index.documents[doc.id].chunks) & set(item.source_ids)  # a document of its chunks
        for passage in result.passages:
            (doc,) = passage.documents
            assert passage.id in index.documents[doc.id].chunks
            meta = passage.metadata()
            assert (meta["source"], meta["page"], meta["document_ids"]) == (
                doc.metadata["source"],
                doc.metadata["page"],
                [doc.id],
            )
        # a path through both documents' relations carries both
        long_path = next(p for p in result.paths if {"MARA", "GULL"} <= set(p.nodes))
        assert {d.id for d in long_path.documents} == {"harbour", "gull"}
        meta = long_path.metadata()
        assert "title" not in meta  # the documents disagree: their titles stay in meta["documents"]
        assert sorted(d["metadata"]["title"] for d in meta["documents"]) == ["Harbour", "The Gull"]
        # read back with its documents (a path's resources are not in the metadata)
        assert RetrievedItem.from_metadata(meta, long_path.text).documents == long_path.documents
    # deleted with the document
    index.delete(["gull"])
    after = index.retrieve(QUESTION, keyword_llm=False)
    assert "gull" not in {d.id for item in after.items for d in item.documents}
    assert "gull" not in index.documents
    if stored:
        with sqlite3.connect(tmp_path / "pathrag.sqlite") as db:
            assert db.execute("SELECT id FROM documents").fetchall() == [("harbour",)]
        index.close()


def test_metadata_is_bounded_and_json_safe() -> None:
    with pytest.raises(ValueError, match=f"at most {MAX_METADATA_BYTES:,}"):
        Document(text="x", metadata={"blob": "x" * MAX_METADATA_BYTES})
    with pytest.raises(ValueError, match="JSON-serialisable: key 'when' is a object"):
        Document(text="x", metadata={"when": object()})
    with pytest.raises(ValueError, match="JSON-serialisable"):
        Document(text="x", metadata={"score": float("nan")})
    kept = Document(text="x", metadata={"pages": (1, 2), 3: {"tags": {"b", "a"}}})
    assert kept.metadata == {"pages": [1, 2], "3": {"tags": ["a", "b"]}}
    just_fits = {"blob": "x" * (MAX_METADATA_BYTES - 20)}
    assert Document(text="x", metadata=just_fits).metadata == just_fits


def test_langchain_results_carry_the_source_and_get_by_ids_takes_the_ids_they_hand_out(tmp_path: Path) -> None:
    indexer = PathRAGIndexer(ScriptedChatModel(), PathRAGEmbeddings(HashingEmbedder(128)), path=tmp_path)
    indexer.add_documents([LCDocument(page_content=d.text, id=d.id, metadata=dict(d.metadata)) for d in documents()])
    found = indexer.as_retriever(llm=None, k=10).invoke(QUESTION)
    passages = [d for d in found if d.metadata["kind"] == "passage"]
    assert passages and all(d.metadata["source"].startswith("logs/") and "title" in d.metadata for d in passages)
    for doc in found:
        assert doc.metadata["document_ids"] and doc.metadata["source"]
        by_id = {d.id: d for d in indexer.get_by_ids([*doc.metadata["document_ids"], *doc.metadata["source_ids"]])}
        assert set(doc.metadata["document_ids"]) | set(doc.metadata["source_ids"]) == set(by_id)
        for cid in doc.metadata["source_ids"]:
            chunk = by_id[cid]
            assert chunk.metadata["chunk_id"] == cid and chunk.metadata["document_ids"]
            assert chunk.page_content in by_id[chunk.metadata["document_ids"][0]].page_content
            assert chunk.metadata["source"] == by_id[chunk.metadata["document_ids"][0]].metadata["source"]
    (passage,) = indexer.get_by_ids([passages[0].id])  # a passage's own id is its chunk id
    assert passage.page_content == passages[0].page_content
    assert indexer.get_by_ids(["no-such-id"]) == []
    indexer.index.close()


async def test_llama_index_nodes_have_a_ref_doc_id_and_the_input_metadata(tmp_path: Path) -> None:
    index = PathRAGIndex(tmp_path, llm=ScriptedLLM(), embedder=HashingEmbedder(128))
    index.insert(
        [
            Document(
                id="harbour", text=HARBOUR, metadata={"file_name": "harbour.txt", "file_path": "/logs/harbour.txt"}
            ),
            Document(id="gull", text=GULL, metadata={"file_name": "gull.txt", "file_path": "/logs/gull.txt"}),
        ]
    )
    index.close()
    retriever = PathRAGIndexRetriever.from_store(tmp_path, similarity_top_k=10)
    try:
        for nodes in (retriever.retrieve(QUESTION), await retriever.aretrieve(QUESTION)):
            assert nodes
            for found in nodes:
                node = found.node
                assert node.ref_doc_id in {"harbour", "gull"}
                assert node.relationships[NodeRelationship.SOURCE].metadata["file_name"] == f"{node.ref_doc_id}.txt"
                assert node.ref_doc_id in node.metadata["document_ids"]
                if node.metadata["kind"] == "passage":
                    assert node.metadata["file_name"] == f"{node.ref_doc_id}.txt"
                assert "file_name" not in node.get_content(metadata_mode="llm")  # the prompt holds the text only
    finally:
        retriever.close()


def test_an_older_store_without_metadata_still_opens_and_names_its_documents(tmp_path: Path) -> None:
    target = tmp_path / "old-store"
    shutil.copytree(LEGACY, target)
    index = PathRAGIndex(target, embedder=HashingEmbedder(256))
    try:
        result = index.retrieve("Who is Mara?", keyword_llm=False)
        docs = {d.id: d for item in result.items for d in item.documents}
        assert docs, "no item names a document"
        for doc_id, doc in docs.items():
            assert doc.metadata == index.documents[doc_id].metadata
            assert doc.source == doc.metadata.get("source", doc_id)  # no source kept: the id stands for it
    finally:
        index.close()


def test_the_cli_keeps_the_file_path_and_its_front_matter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "log.md").write_text(
        "---\ntitle: Harbour log\ndate: 2024-05-01\ntags: [sea, pilots]\n---\nMara guides ships.\n"
    )
    (notes / "plain.txt").write_text("The Gull is moored in Saltmere.\n")
    (notes / "broken.md").write_text("---\ntitle: [unclosed\n---\nText after a broken block.\n")
    (notes / "list.md").write_text("---\n- a\n- b\n---\nText after a list.\n")
    docs = {d.id: d for d in read_documents([(p.name, p) for p in sorted(notes.iterdir())])}
    assert docs["log.md"].metadata == {
        "title": "Harbour log",
        "date": "2024-05-01",
        "tags": ["sea", "pilots"],
        "source": str(notes / "log.md"),
    }
    assert "title: Harbour log" in docs["log.md"].chunk_texts()[0]  # the text is indexed as it is
    assert docs["plain.txt"].metadata == {"source": str(notes / "plain.txt")}
    assert docs["broken.md"].metadata == {"source": str(notes / "broken.md")}
    assert docs["list.md"].metadata == {"source": str(notes / "list.md")}
    err = capsys.readouterr().err
    assert "broken.md: its front matter is not kept: front matter is not YAML" in err
    assert "list.md: its front matter is not kept: front matter is a list" in err
    assert json.loads(json.dumps(docs["log.md"].metadata)) == docs["log.md"].metadata


def test_property_graph_passages_keep_their_chunks_source() -> None:
    from llama_index.core import VectorStoreIndex

    from llama_index_pathrag import HashingEmbedding
    from llama_index_pathrag import PathRAGRetriever as LlamaPathRAGRetriever

    from .test_llama_index_retrieval import QUESTION as HARBOUR_QUESTION
    from .test_llama_index_retrieval import build_harbour_index

    index, _ = build_harbour_index()
    chunks = {n.node_id: n for n in index.docstore.docs.values() if n.get_content().strip()}
    passages = VectorStoreIndex(list(chunks.values()), embed_model=HashingEmbedding(64)).as_retriever(
        similarity_top_k=6
    )
    retriever = LlamaPathRAGRetriever(
        index.property_graph_store,
        vector_store=index.vector_store,
        embed_model=HashingEmbedding(64),
        passage_retriever=passages,
        num_seeds=3,
        top_k=5,
    )
    found = [n.node for n in retriever.retrieve(HARBOUR_QUESTION) if n.node.metadata["kind"] == "passage"]
    assert found
    for node in found:
        assert node.ref_doc_id is not None and node.ref_doc_id == chunks[node.node_id].ref_doc_id
    with pytest.raises(ValueError, match="filter needs the documents' metadata"):
        LlamaPathRAGRetriever(index.property_graph_store, vector_store=index.vector_store, filter={"user": "ana"})
