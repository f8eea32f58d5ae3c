"""PathRAGIndexer: documents in, ids, delete, persistence, stores, splitting; and the model adapters."""

from __future__ import annotations

import datetime
import json

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel, FakeListLLM, FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import CharacterTextSplitter

from langchain_pathrag import (
    LangChainEmbedder,
    LangChainLanguageModel,
    LangChainVectorIndex,
    PathRAGEmbeddings,
    PathRAGIndexer,
    document_id,
)
from langchain_pathrag.indexer import STORE_FILES
from pathrag import HashingEmbedder, IndexConfig, VectorItem
from pathrag.sqlite import read_store_info

from ..langchain_fakes import HARBOUR, QUESTION, WALL, ScriptedChatModel, embeddings


def make(**kwargs) -> PathRAGIndexer:
    return PathRAGIndexer(kwargs.pop("llm", None) or ScriptedChatModel(), embeddings(), **kwargs)


def rounded(docs: list[Document]) -> list[tuple]:
    """Documents with scores to 6 places: the store keeps vectors as float32, InMemoryVectorStore as float64."""
    return [
        (d.id, d.page_content, {**d.metadata, **{k: round(d.metadata[k], 6) for k in ("score", "raw_score")}})
        for d in docs
    ]


def nodes(docs: list[Document]) -> set[str]:
    return {n for d in docs for n in d.metadata["nodes"]}


async def test_add_documents_sync_and_async_build_the_same_index():
    sync, asy = make(), make()
    summary = sync.add_documents([HARBOUR, WALL])
    assert (summary.documents, summary.chunks, summary.entities, summary.relations) == (2, 2, 6, 8)
    await asy.aadd_documents([HARBOUR, WALL])
    assert sync.as_retriever().invoke(QUESTION) == asy.as_retriever().invoke(QUESTION)
    assert sorted(sync.index.documents) == ["harbour", "wall"]
    assert sync.index.documents["wall"].metadata == {"source": "wall.txt"}


def test_unchanged_documents_cost_nothing_and_ids_come_from_content_without_an_id():
    llm = ScriptedChatModel()
    indexer = make(llm=llm)
    anonymous = Document(page_content=WALL.page_content)
    indexer.add_documents([HARBOUR, anonymous])
    calls = len(llm.prompts)
    again = indexer.add_documents([HARBOUR, Document(page_content=WALL.page_content, metadata={"other": 1})])
    # the same texts cost no model call; the new metadata is kept (results carry it, filters read it)
    assert (again.unchanged, again.documents, again.llm_calls, len(llm.prompts)) == (1, 1, 0, calls)
    assert indexer.index.documents[document_id(anonymous)].metadata == {"other": 1}
    assert sorted(indexer.index.documents) == sorted(["harbour", document_id(anonymous)])
    assert document_id(anonymous).startswith("doc-") and document_id(anonymous) != document_id(HARBOUR)


async def test_delete_removes_the_paths_only_that_document_supported():
    for use_async in (False, True):
        indexer = make()
        indexer.add_documents([HARBOUR, WALL])
        retriever = indexer.as_retriever(llm=None)
        assert {"IDA", "SEA WALL"} <= nodes(retriever.invoke(QUESTION))
        summary = await indexer.adelete(["wall"]) if use_async else indexer.delete("wall")
        assert summary.documents == 1 and summary.entities_removed == 2
        after = retriever.invoke(QUESTION)
        assert after and nodes(after) == {"MARA", "SALTMERE", "TIDE BOARD", "GULL"}
        assert all(len(doc.metadata["source_ids"]) == 1 for doc in after)  # only the harbour chunk is left
        assert [
            d.metadata["name"]
            for d, _ in indexer.entity_store.similarity_search_with_score("Ida", k=10)
            if d.metadata["name"] in {"IDA", "SEA WALL"}
        ] == []


def test_saved_and_reloaded_indexer_returns_the_same_documents(tmp_path):
    indexer = make()
    indexer.add_documents([HARBOUR, WALL])
    expected = indexer.as_retriever().invoke(QUESTION)
    indexer.save(tmp_path / "index")
    # one store format: the in-memory vector stores' vectors are saved into the core's store
    assert "pathrag.sqlite" in {p.name for p in (tmp_path / "index").iterdir()}
    assert not any((tmp_path / "index" / name).exists() for name in STORE_FILES.values())
    llm = ScriptedChatModel()
    reloaded = PathRAGIndexer.load(tmp_path / "index", llm=llm, embeddings=embeddings())
    assert rounded(reloaded.as_retriever().invoke(QUESTION)) == rounded(expected)
    assert reloaded.add_documents([HARBOUR, WALL]).unchanged == 2
    assert llm.prompts == []  # no keyword call by default, and no extraction


def test_an_indexer_with_a_path_saves_every_change(tmp_path):
    indexer = make(path=tmp_path)
    indexer.add_documents([HARBOUR, WALL])
    indexer.delete(["wall"])
    expected = indexer.as_retriever(llm=None).invoke(QUESTION)
    indexer.close()  # no save() call: changes are already on disk
    reopened = PathRAGIndexer.load(tmp_path, embeddings=embeddings())
    assert reopened.as_retriever().invoke(QUESTION) == expected and "IDA" not in nodes(expected)
    # the default vector indexes are the store's own, and the store records the embeddings
    assert [len(i) for i in reopened.index.vector_indexes.values()] == [4, 5, 1]
    assert read_store_info(tmp_path)["embedder"] == "hashing-128"
    assert not any((tmp_path / name).exists() for name in STORE_FILES.values())
    other = tmp_path / "copy"
    reopened.save(other)
    assert PathRAGIndexer.load(other, embeddings=embeddings()).as_retriever().invoke(QUESTION) == expected


def test_loading_what_is_not_there_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no PathRAG index"):
        PathRAGIndexer.load(tmp_path / "missing", embeddings=embeddings())
    make(path=tmp_path).add_documents([HARBOUR])
    with pytest.raises(ValueError, match="built with the embeddings 'hashing-128', not 'hashing-64'"):
        PathRAGIndexer.load(tmp_path, embeddings=PathRAGEmbeddings(HashingEmbedder(64)))
    with pytest.raises(AttributeError, match="live in its store"):
        _ = PathRAGIndexer.load(tmp_path, embeddings=embeddings()).entity_store
    with pytest.raises(ValueError, match="has no path"):
        make().save()


def old_layout(directory) -> PathRAGIndexer:
    """A directory as earlier versions wrote it: the default vector stores in *.vectorstore.json files."""
    indexer = make()
    indexer.add_documents([HARBOUR, WALL])
    indexer.index.save(directory)
    for name, file in STORE_FILES.items():
        (directory / file).write_text(json.dumps(indexer.index.vector_indexes[name].store.store))
    return indexer


def test_a_directory_of_the_old_layout_is_migrated_into_the_store(tmp_path):
    before = old_layout(tmp_path)
    expected = before.as_retriever(llm=None).invoke(QUESTION)
    reopened = PathRAGIndexer.load(tmp_path, embeddings=embeddings())
    assert [doc.page_content for doc in reopened.as_retriever(llm=None).invoke(QUESTION)] == [
        doc.page_content for doc in expected
    ]
    assert [len(i) for i in reopened.index.vector_indexes.values()] == [6, 8, 2]
    assert sorted(p.name for p in (tmp_path / "vectorstore-backup").iterdir()) == sorted(STORE_FILES.values())
    assert reopened.index.check() == []


def test_any_vector_store_and_the_given_splitter_are_used():
    entity_store, relation_store, chunk_store = (InMemoryVectorStore(embeddings()) for _ in range(3))
    splitter = CharacterTextSplitter(separator="\n", chunk_size=150, chunk_overlap=0)
    indexer = PathRAGIndexer(
        ScriptedChatModel(),
        entity_store=entity_store,
        relation_store=relation_store,
        chunk_store=chunk_store,
        text_splitter=splitter,
    )
    summary = indexer.add_documents([HARBOUR])
    assert summary.chunks == len(splitter.split_text(HARBOUR.page_content)) > 1
    names = sorted(d["metadata"]["name"] for d in entity_store.store.values())
    assert names == ["GULL", "MARA", "SALTMERE", "TIDE BOARD"]
    assert len(relation_store.store) == 5 and len(chunk_store.store) == summary.chunks
    assert indexer.entity_store is entity_store
    assert "MARA" in nodes(indexer.as_retriever().invoke("Mara"))


def test_default_splitter_counts_tokens_with_the_core_counter():
    counted = []
    indexer = make(config=IndexConfig(token_counter=lambda text: counted.append(text) or len(text.split())))
    long = Document(page_content=" ".join(f"word{i}" for i in range(3000)), id="long")
    summary = indexer.add_documents([long])
    assert summary.chunks == 3 and counted  # 3000 words in chunks of at most 1200 "tokens"


def test_bad_input():
    indexer = make()
    with pytest.raises(TypeError, match="expected LangChain Documents, got str"):
        indexer.add_documents(["just text"])
    with pytest.raises(ValueError, match="pass embeddings"):
        PathRAGIndexer(ScriptedChatModel())
    assert indexer.add_documents([Document(page_content="   ")]).documents == 0
    # metadata that JSON cannot hold is kept as text
    dated = Document(page_content=HARBOUR.page_content, id="d", metadata={"at": datetime.date(2024, 5, 1)})
    indexer.add_documents([dated])
    assert indexer.index.documents["d"].metadata == {"at": "2024-05-01"}
    without_llm = PathRAGIndexer(embeddings=embeddings())
    with pytest.raises(ValueError, match="has no llm"):
        without_llm.add_documents([HARBOUR])


# -- the adapters of adapters.py ---------------------------------------------------------------------


async def test_language_model_adapter_normalises_messages_and_text():
    chat = LangChainLanguageModel(FakeListChatModel(responses=["chat answer"]))
    text = LangChainLanguageModel(FakeListLLM(responses=["text answer"]))
    assert chat.complete("q") == "chat answer" and await text.acomplete("q") == "text answer"
    blocks = LangChainLanguageModel(
        FakeMessagesListChatModel(
            responses=[
                AIMessage(
                    content=[
                        {"type": "text", "text": "from "},
                        {"type": "reasoning", "reasoning": "hidden"},
                        {"type": "text", "text": "blocks"},
                    ]
                )
            ]
        )
    )
    assert blocks.complete("q") == "from blocks"
    assert chat.name.startswith("fake-list-chat-model:") and text.name.startswith("fake-list:")
    assert LangChainLanguageModel(FakeListChatModel(responses=["other"])).name != chat.name  # different cache key
    with pytest.raises(TypeError, match="expected a LangChain chat model or LLM"):
        LangChainLanguageModel(lambda prompt: prompt)


async def test_embedder_adapter():
    embedder = LangChainEmbedder(embeddings())
    assert embedder.embed(["a b"]) == await embedder.aembed(["a b"]) == embeddings().embed_documents(["a b"])


class CountingStore(InMemoryVectorStore):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.added: list[str] = []
        self.deleted: list[list[str]] = []

    def add_documents(self, documents, ids=None, **kwargs):
        self.added += ids
        return super().add_documents(documents, ids=ids, **kwargs)

    def delete(self, ids=None, **kwargs):
        self.deleted.append(list(ids))
        return super().delete(ids, **kwargs)


def test_vector_index_adapter_skips_unchanged_items_and_replaces_changed_ones():
    store = CountingStore(embeddings())
    index = LangChainVectorIndex(store)
    index.upsert([VectorItem("a", "harbour pilot", {"name": "A"}), VectorItem("b", "sea wall", {"name": "B"})])
    index.upsert([VectorItem("a", "harbour pilot", {"name": "A"}), VectorItem("b", "flood wall", {"name": "B"})])
    assert store.added == ["a", "b", "b"] and store.deleted == [["b"]]
    assert [(h.id, h.metadata) for h in index.query("flood wall", 1)] == [("b", {"name": "B"})]
    assert index.query("flood wall", 0) == []
    index.delete([])
    assert store.deleted == [["b"]]  # an empty delete never reaches the store
    index.delete(["a"])
    assert [h.id for h in index.query("harbour pilot", 5)] == ["b"]


async def test_vector_index_adapter_async_twins():
    store = CountingStore(embeddings())
    index = LangChainVectorIndex(store)
    await index.aupsert([VectorItem("a", "harbour pilot", {"name": "A"})])
    await index.aupsert([VectorItem("a", "harbour pilot", {"name": "A"})])
    assert list(store.store) == ["a"]
    assert [h.id for h in await index.aquery("pilot", 3)] == ["a"]
    await index.adelete(["a"])
    assert await index.aquery("pilot", 3) == []


def test_chunk_vectors_carry_their_id_and_entities(tmp_path):
    make(path=tmp_path).add_documents([HARBOUR])
    chunks = PathRAGIndexer.load(tmp_path, embeddings=embeddings()).index.chunk_index
    [cid] = chunks.ids()
    metadata = chunks.get(cid).metadata
    assert metadata["chunk_id"] == cid and metadata["entities"] == sorted(metadata["entities"])
    assert set(metadata) == {"chunk_id", "entities"} and metadata["entities"]


def test_a_damaged_old_layout_file_is_named_in_the_error(tmp_path):
    old_layout(tmp_path)
    (tmp_path / STORE_FILES["relations"]).write_text('{"torn": ')
    with pytest.raises(ValueError, match="cannot read vector store .*relations.vectorstore.json"):
        PathRAGIndexer.load(tmp_path, embeddings=embeddings())
