"""LangChain habits on PathRAGIndexer: from_documents/add_texts, as_retriever(search_kwargs=...), and the
Indexing API (``langchain_core.indexing.index`` / ``aindex`` with a RecordManager) keeping it in sync."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.indexing import InMemoryRecordManager, aindex, index
from langchain_core.indexing.api import IndexingException

from langchain_pathrag import PathRAGIndexer
from langchain_pathrag.indexer import PathRAGDocumentIndex
from pathrag import IndexConfig

from ..langchain_fakes import HARBOUR, QUESTION, WALL, ScriptedChatModel, embeddings


def graph(indexer: PathRAGIndexer) -> tuple[dict, dict]:
    """Everything the graph holds: entities and relations with all their fields."""
    store = indexer.graph_store
    return (
        {e.name: e.model_dump() for e in store.iter_entities()},
        {tuple(sorted(r.pair)): r.model_dump() for r in store.iter_relations()},
    )


def entity_vectors(indexer: PathRAGIndexer) -> set[str]:
    return {doc["metadata"]["name"] for doc in indexer.entity_store.store.values()}


# -- from_documents, add_texts ----------------------------------------------------------------------


async def test_from_documents_and_from_texts_build_what_add_documents_builds():
    reference = PathRAGIndexer(ScriptedChatModel(), embeddings())
    reference.add_documents([HARBOUR, WALL])
    built = PathRAGIndexer.from_documents([HARBOUR, WALL], ScriptedChatModel(), embeddings())
    abuilt = await PathRAGIndexer.afrom_documents([HARBOUR, WALL], ScriptedChatModel(), embeddings())
    texts = PathRAGIndexer.from_texts(
        [HARBOUR.page_content, WALL.page_content],
        ScriptedChatModel(),
        embeddings(),
        metadatas=[HARBOUR.metadata, WALL.metadata],
        ids=["harbour", "wall"],
    )
    for other in (built, abuilt, texts):
        assert graph(other) == graph(reference)
        assert other.index.documents == reference.index.documents
    # constructor keyword arguments pass through
    configured = PathRAGIndexer.from_documents(
        [HARBOUR], ScriptedChatModel(), embeddings(), config=IndexConfig(max_concurrency=1), ids=["mine"]
    )
    assert configured.index.config.max_concurrency == 1 and list(configured.index.documents) == ["mine"]


async def test_add_texts_returns_ids_and_adding_the_same_text_again_costs_nothing():
    llm = ScriptedChatModel()
    indexer = PathRAGIndexer(llm, embeddings())
    ids = indexer.add_texts([HARBOUR.page_content, WALL.page_content], metadatas=[{"source": "h"}, {"source": "w"}])
    assert len(ids) == 2 and sorted(indexer.index.documents) == sorted(ids)
    assert [indexer.index.documents[i].metadata for i in ids] == [{"source": "h"}, {"source": "w"}]
    calls = len(llm.prompts)
    assert indexer.add_texts([WALL.page_content]) == ids[1:] and len(llm.prompts) == calls
    assert await indexer.aadd_texts(["ENTITY Ida | person | Diver."], ids=["ida"]) == ["ida"]
    assert indexer.graph_store.get_entities(["IDA"])["IDA"].description == "Chief engineer. Diver."
    # LangChain's delete-by-returned-id habit
    indexer.delete(ids[1])
    assert indexer.graph_store.get_entities(["IDA"])["IDA"].description == "Diver."
    assert [d.id for d in indexer.get_by_ids(["ida", "nope", ids[0]])] == ["ida", ids[0]]
    assert indexer.get_by_ids(["ida"])[0].page_content == "ENTITY Ida | person | Diver."


def test_add_texts_bad_input_is_a_clear_error():
    indexer = PathRAGIndexer(ScriptedChatModel(), embeddings())
    with pytest.raises(TypeError, match="not one string"):
        indexer.add_texts("ENTITY Ida | person | Diver.")
    with pytest.raises(TypeError, match="texts must be strings, got int"):
        indexer.add_texts(["a", 3])
    with pytest.raises(ValueError, match="got 1 metadatas for 2 texts"):
        indexer.add_texts(["a", "b"], metadatas=[{}])
    with pytest.raises(ValueError, match="got 3 ids for 2 documents"):
        indexer.add_texts(["a", "b"], ids=["1", "2", "3"])
    with pytest.raises(ValueError, match="non-empty strings"):
        indexer.add_texts(["a"], ids=[""])
    with pytest.raises(ValueError, match="got 1 ids for 2 documents"):
        indexer.add_documents([HARBOUR, WALL], ids=["x"])
    with pytest.raises(TypeError, match="expected LangChain Documents, got str"):
        indexer.add_documents(["text"], ids=["x"])
    assert indexer.index.documents == {}


# -- as_retriever(search_kwargs=...) ----------------------------------------------------------------


def test_search_kwargs_mean_the_retriever_fields():
    indexer = PathRAGIndexer.from_documents([HARBOUR, WALL], ScriptedChatModel(), embeddings())
    retriever = indexer.as_retriever(context="paths", search_kwargs={"k": 2, "num_seeds": 5, "max_hops": 2})
    assert (retriever.k, retriever.num_seeds, retriever.max_hops) == (2, 5, 2)
    docs = retriever.invoke(QUESTION)
    assert len(docs) == 2 and docs == indexer.as_retriever(context="paths", k=2, num_seeds=5, max_hops=2).invoke(
        QUESTION
    )
    assert indexer.as_retriever(context="paths", search_kwargs={"top_k": 1}, llm=None).invoke(QUESTION)[0] in docs
    assert indexer.as_retriever(context="paths", search_kwargs={"k": 3}, k=3).k == 3  # the same value twice is fine
    with pytest.raises(ValueError, match="conflicts with k=3"):
        indexer.as_retriever(context="paths", search_kwargs={"k": 3}, k=4)
    both = indexer.as_retriever(context="paths", search_kwargs={"k": 3}, top_k=4)  # k: documents; top_k: paths
    assert (both.k, both.top_k) == (3, 4) and len(both.invoke(QUESTION)) == 3
    with pytest.raises(ValueError, match="unknown retriever parameter 'fetch_k'.*num_seeds"):
        indexer.as_retriever(context="paths", search_kwargs={"fetch_k": 20})
    with pytest.raises(ValueError, match="no search_type"):
        indexer.as_retriever(context="paths", search_type="mmr")
    with pytest.raises(ValueError, match="unknown retriever parameter 'graph_store'"):
        indexer.as_retriever(context="paths", graph_store=indexer.graph_store)
    with pytest.raises(TypeError, match="search_kwargs must be a dict"):
        indexer.as_retriever(context="paths", search_kwargs=3)


# -- the Indexing API ---------------------------------------------------------------------------------

SOURCES = {
    "harbour.md": [
        "ENTITY Mara | person | Harbour pilot.\nENTITY Saltmere | location | A fishing town.\n"
        "LINK Mara | Saltmere | Mara lives in Saltmere. | home | 6",
        "ENTITY Gull | object | A small boat.\nLINK Mara | Gull | Mara owns the Gull. | ownership | 5",
    ],
    "wall.md": [
        "ENTITY Ida | person | Chief engineer.\nENTITY Sea Wall | object | Flood barrier.\n"
        "LINK Ida | Sea Wall | Ida designed the Sea Wall. | design | 7",
        "ENTITY Saltmere | location | Protected by the wall.\n"
        "LINK Sea Wall | Saltmere | The Sea Wall protects Saltmere. | protection | 8",
    ],
    "board.md": [
        "ENTITY Tide Board | organization | Runs the port.\n"
        "LINK Tide Board | Mara | The Tide Board employs Mara. | employment | 8\n"
        "LINK Tide Board | Ida | The Tide Board hired Ida. | contract | 6",
    ],
}
EDITED = (
    "ENTITY Saltmere | location | Flooded in spring.\nENTITY Lantern | object | A warning light.\n"
    "LINK Sea Wall | Lantern | The Lantern stands on the Sea Wall. | signal | 4"
)


def split_documents(sources: dict[str, list[str]]) -> list[Document]:
    """What a loader plus a text splitter hand to index(): one Document per chunk, ``source`` in metadata."""
    return [
        Document(page_content=chunk, metadata={"source": source, "part": i})
        for source, chunks in sources.items()
        for i, chunk in enumerate(chunks)
    ]


class Sync:
    """Runs the Indexing API, sync or async, with a fresh record manager per destination."""

    def __init__(self, use_async: bool) -> None:
        self.use_async = use_async

    async def __call__(self, docs, records, destination, **options):
        options = {"source_id_key": "source", "key_encoder": "sha256", **options}
        if self.use_async:
            return await aindex(docs, records, destination, **options)
        return index(docs, records, destination, **options)

    async def fresh(self, sources: dict[str, list[str]]) -> PathRAGIndexer:
        """An indexer that only ever saw ``sources``, through the same API (so the same document ids)."""
        indexer = PathRAGIndexer(ScriptedChatModel(), embeddings())
        records = InMemoryRecordManager("pathrag/fresh")
        records.create_schema()
        await self(
            split_documents(sources),
            records,
            indexer.as_document_index(
                context="paths",
            ),
            cleanup="incremental",
        )
        return indexer


@pytest.mark.parametrize("use_async", [False, True], ids=["index", "aindex"])
async def test_indexing_api_keeps_the_graph_in_sync_with_the_sources(use_async):
    run = Sync(use_async)
    llm = ScriptedChatModel()
    indexer = PathRAGIndexer(llm, embeddings())
    destination = indexer.as_document_index(
        context="paths",
    )
    records = InMemoryRecordManager("pathrag/test")
    await records.acreate_schema()
    sources = {name: list(chunks) for name, chunks in SOURCES.items()}
    n = sum(len(chunks) for chunks in sources.values())

    # 1. first run: every chunk document is added
    first = await run(split_documents(sources), records, destination, cleanup="incremental")
    assert first == {"num_added": n, "num_updated": 0, "num_skipped": 0, "num_deleted": 0}
    assert len(indexer.index.documents) == n
    assert graph(indexer) == graph(await run.fresh(sources))

    # 2. nothing changed: everything is skipped and the model is not called
    calls = len(llm.prompts)
    second = await run(split_documents(sources), records, destination, cleanup="incremental")
    assert second == {"num_added": 0, "num_updated": 0, "num_skipped": n, "num_deleted": 0}
    assert len(llm.prompts) == calls

    # 3. one chunk of one source edited: only it is extracted, and the old version leaves no trace
    assert "Protected by the wall." in graph(indexer)[0]["SALTMERE"]["description"]
    sources["wall.md"][1] = EDITED
    third = await run(split_documents(sources), records, destination, cleanup="incremental")
    assert third == {"num_added": 1, "num_updated": 0, "num_skipped": n - 1, "num_deleted": 1}
    new_prompts = llm.prompts[calls:]
    assert new_prompts and all("Flooded in spring." in p for p in new_prompts)
    entities, relations = graph(indexer)
    # merged in the order of the document ids (hashes here)
    assert entities["SALTMERE"]["description"] in (
        "A fishing town. Flooded in spring.",
        "Flooded in spring. A fishing town.",
    )
    assert ("SALTMERE", "SEA WALL") not in relations and ("LANTERN", "SEA WALL") in relations
    assert graph(indexer) == graph(await run.fresh(sources))
    assert len(indexer.index.documents) == n

    # 4. a source removed, cleanup="full": its documents and what only they supported are deleted
    del sources["board.md"]
    calls = len(llm.prompts)
    fourth = await run(split_documents(sources), records, destination, cleanup="full")
    assert fourth == {"num_added": 0, "num_updated": 0, "num_skipped": n - 1, "num_deleted": 1}
    assert len(llm.prompts) == calls
    assert "TIDE BOARD" not in graph(indexer)[0] and "TIDE BOARD" not in entity_vectors(indexer)
    assert graph(indexer) == graph(await run.fresh(sources))
    assert entity_vectors(indexer) == set(graph(indexer)[0])
    assert sorted(records.list_keys()) == sorted(indexer.index.documents)

    # the destination also retrieves key paths, as the indexer's retriever does
    question = "How is Ida connected to Mara?"
    assert destination.invoke(question) == indexer.as_retriever(
        context="paths",
    ).invoke(question)
    assert len(await destination.ainvoke(question, k=1)) == 1


async def test_indexing_whole_documents_re_extracts_only_the_changed_chunks():
    from langchain_text_splitters import CharacterTextSplitter

    llm = ScriptedChatModel()
    splitter = CharacterTextSplitter(separator="\n\n", chunk_size=1, chunk_overlap=0)  # one chunk per paragraph
    indexer = PathRAGIndexer(llm, embeddings(), text_splitter=splitter)
    records = InMemoryRecordManager("pathrag/whole")
    records.create_schema()
    whole = {name: "\n\n".join(chunks) for name, chunks in SOURCES.items()}

    def docs() -> list[Document]:
        return [Document(page_content=text, metadata={"source": name}) for name, text in whole.items()]

    options = {"cleanup": "incremental", "source_id_key": "source", "key_encoder": "sha256"}
    assert (
        index(
            docs(),
            records,
            indexer.as_document_index(
                context="paths",
            ),
            **options,
        )["num_added"]
        == 3
    )
    calls = len(llm.prompts)
    whole["wall.md"] = "\n\n".join([SOURCES["wall.md"][0], EDITED])
    result = index(
        docs(),
        records,
        indexer.as_document_index(
            context="paths",
        ),
        **options,
    )
    assert (result["num_added"], result["num_deleted"], result["num_skipped"]) == (1, 1, 2)
    new_prompts = llm.prompts[calls:]
    assert new_prompts and all("Flooded in spring." in p for p in new_prompts)  # the unchanged chunk is reused
    assert "Protected by the wall." not in graph(indexer)[0]["SALTMERE"]["description"]


# -- the DocumentIndex itself ---------------------------------------------------------------------------


async def test_document_index_contract_and_bad_input():
    indexer = PathRAGIndexer(ScriptedChatModel(), embeddings())
    destination = indexer.as_document_index(context="paths", search_kwargs={"k": 2})
    assert isinstance(destination, PathRAGDocumentIndex) and destination.retriever.k == 2
    assert destination.upsert([HARBOUR, WALL]) == {"succeeded": ["harbour", "wall"], "failed": []}
    assert [d.id for d in await destination.aget(["wall", "missing"])] == ["wall"]
    assert destination.get(["wall"])[0].metadata == {"source": "wall.txt"}
    assert len(destination.invoke(QUESTION)) == 2
    assert await destination.adelete(["wall", "missing"]) == {
        "num_deleted": 1,
        "succeeded": ["wall"],
        "failed": [],
        "num_failed": 0,
    }
    assert "IDA" not in graph(indexer)[0]
    assert (await destination.aupsert([WALL]))["succeeded"] == ["wall"] and "IDA" in graph(indexer)[0]
    assert destination.delete(["harbour"])["num_deleted"] == 1
    with pytest.raises(ValueError, match="needs the ids"):
        destination.delete()
    with pytest.raises(TypeError, match="takes no options, got vector_field"):
        destination.upsert([HARBOUR], vector_field="embedding")
    with pytest.raises(TypeError, match="expected LangChain Documents"):
        destination.upsert(["text"])


async def test_a_chunk_that_keeps_failing_is_not_recorded_as_indexed():
    class Flaky(ScriptedChatModel):
        down: bool = True

        def reply(self, prompt: str) -> str:
            if self.down and "Sea Wall" in prompt:
                raise ConnectionError("model is down")
            return super().reply(prompt)

    llm = Flaky()
    indexer = PathRAGIndexer(llm, embeddings(), config=IndexConfig(max_attempts=1))
    records = InMemoryRecordManager("pathrag/flaky")
    records.create_schema()
    docs = split_documents(SOURCES)
    options = {"cleanup": "incremental", "source_id_key": "source", "key_encoder": "sha256"}
    with pytest.raises(IndexingException, match="failed extraction.*run the indexing again"):
        index(
            docs,
            records,
            indexer.as_document_index(
                context="paths",
            ),
            **options,
        )
    assert records.list_keys() == []  # nothing marked done: the next run upserts the batch again
    assert "MARA" in graph(indexer)[0]  # what worked is saved
    llm.down = False
    calls = len(llm.prompts)
    assert index(
        docs,
        records,
        indexer.as_document_index(
            context="paths",
        ),
        **options,
    )["num_added"] == len(docs)
    retried = llm.prompts[calls:]
    assert retried and all("Sea Wall" in p for p in retried)  # only the failed chunks cost calls
    assert "SEA WALL" in graph(indexer)[0]
