"""LlamaIndex's own document lifecycle on a PropertyGraphIndex built with PathRAGExtractor.

``index.delete_ref_doc(doc_id, delete_from_docstore=True)`` must leave exactly what an index that never saw
the document holds (entities with their types and descriptions, relations with direction, description,
keywords and weight, and the key paths retrieved), and re-inserting an edited document must replace its
old version. Checked on ``SimplePropertyGraphStore`` and on a real FalkorDB through LlamaIndex's
``FalkorDBPropertyGraphStore``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from llama_index.core import Document, PropertyGraphIndex
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import ChunkNode, EntityNode
from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter
from llama_index.core.vector_stores import SimpleVectorStore

from llama_index_pathrag import RELATION_LABEL, HashingEmbedding, PathRAGExtractor, PathRAGRetriever
from llama_index_pathrag.extractor import EXTRACTED_KEY, SOURCES_KEY
from llama_index_pathrag.graph import entity_from_node, relation_from_store
from pathrag.index.merging import relation_key

from ..llama_index_fakes import KEYWORDS_HEAD, ScriptedLlamaLLM

DOCS = {
    "A": (
        "ENTITY Mara | person | Harbour pilot.\nENTITY Saltmere | location | A fishing town.\n"
        "LINK Mara | Saltmere | Mara lives in Saltmere. | home | 6",
        "ENTITY Gull | object | A small boat.\nLINK Mara | Gull | Mara owns the Gull. | ownership | 5",
    ),
    "B": (
        "ENTITY Ida | person | Chief engineer.\nENTITY Sea Wall | object | Flood barrier.\n"
        "LINK Ida | Sea Wall | Ida designed the Sea Wall. | design | 7\n"
        "LINK Saltmere | Mara | Mara was born in Saltmere. | birthplace | 3",
        "ENTITY Mara | pilot | Sails at night.\n"
        "LINK Sea Wall | Saltmere | The Sea Wall protects Saltmere. | protection | 8",
    ),
    "C": (
        "ENTITY Tide Board | organization | Runs the port.\n"
        "LINK Tide Board | Mara | The Tide Board employs Mara. | employment | 8\n"
        "LINK Tide Board | Ida | The Tide Board hired Ida. | contract | 6",
    ),
    "D": (
        "ENTITY Saltmere | harbour | Flooded in spring.\nENTITY Lantern | object | A warning light.\n"
        "LINK Sea Wall | Lantern | The Lantern stands on the Sea Wall. | signal | 4\n"
        "LINK Ida | Tide Board | Ida reports to the Tide Board. | reporting | 2\n"
        "LATE Gull | vessel | Sank in the flood.",
        "ENTITY Mara | pilot | Lost her boat.\nLINK Gull | Lantern | The Gull hit the Lantern. | collision | 1",
    ),
}
EDITED_D = (
    "ENTITY Lantern | object | A green light.\nLINK Lantern | Saltmere | The Lantern lights Saltmere. | light | 3",
)
QUESTIONS = {
    "How is Mara connected to the Sea Wall?": ["Mara", "Sea Wall"],
    "What links the Gull to Ida?": ["Gull", "Ida"],
    "Who is the Tide Board?": ["Tide Board"],
}
KEYWORDS = {q: json.dumps({"high_level": ["connections"], "low_level": low}) for q, low in QUESTIONS.items()}


def markdown(doc_id: str, chunks: tuple[str, ...] | None = None) -> Document:
    """Document ``doc_id``, which MarkdownNodeParser splits into exactly its chunks (one per header)."""
    chunks = DOCS[doc_id] if chunks is None else chunks
    return Document(text="\n\n".join(f"# part {i}\n{chunk}" for i, chunk in enumerate(chunks)), doc_id=doc_id)


def build(
    store,
    llm,
    first: list[Document],
    *later: Document,
    vector_store=None,
    reembed: bool = False,
    extractor: str = "compact",
    **options,
) -> PropertyGraphIndex:
    """As the README builds it: the extractor gets the index's store. ``later`` documents are inserted one by one.
    ``reembed``: the extractor also gets the embed model."""
    embed_model = HashingEmbedding(64)
    index = PropertyGraphIndex.from_documents(
        first,
        property_graph_store=store,
        llm=llm,
        embed_model=embed_model,
        vector_store=vector_store,
        kg_extractors=[
            PathRAGExtractor(
                llm=llm,
                graph_store=store,
                vector_store=vector_store,
                embed_model=embed_model if reembed else None,
                extractor=extractor,
            )
        ],
        transformations=[MarkdownNodeParser()],
        **{"use_async": False, **options},
    )
    for doc in later:
        index.insert(doc)
    return index


def snapshot(store) -> dict:
    """What the store holds, read through the store's own API."""
    nodes = store.get()
    entities = {n.id: entity_from_node(n) for n in nodes if isinstance(n, EntityNode)}
    triplets = store.get_triplets(entity_names=sorted(entities)) if entities else []
    relations = {(s.id, r.label, t.id): relation_from_store(r) for s, r, t in triplets if r.label == RELATION_LABEL}
    return {
        "entities": {name: (e.type, e.description) for name, e in entities.items()},
        "relations": sorted(
            (relation_key(*r.pair), r.pair, r.description, r.keywords, r.weight) for r in relations.values()
        ),
    }


def chunk_documents(store) -> list[str]:
    """The ``ref_doc_id`` of every chunk node in the store, sorted."""
    return sorted(str(n.properties.get("ref_doc_id")) for n in store.get() if isinstance(n, ChunkNode))


def paths(index: PropertyGraphIndex, llm) -> list:
    retriever = PathRAGRetriever(
        index.property_graph_store,
        vector_store=index.vector_store,
        llm=llm,
        keyword_llm=True,  # the scripted keywords pick the seeds, as the paper's step does
        embed_model=HashingEmbedding(64),
        num_seeds=3,
        top_k=6,
    )
    return [
        [(tuple(n.node.metadata["nodes"]), round(n.score, 9), n.node.text) for n in retriever.retrieve(q)]
        for q in QUESTIONS
    ]


def extraction_calls(llm: ScriptedLlamaLLM) -> int:
    return sum(not p.startswith(KEYWORDS_HEAD) for p in llm.prompts)


# -- SimplePropertyGraphStore ----------------------------------------------------------------------------


@pytest.mark.parametrize("from_docstore", [True, False], ids=["delete_from_docstore", "graph_only"])
@pytest.mark.parametrize("deleted", list(DOCS))
def test_delete_ref_doc_equals_never_inserting_it(deleted, from_docstore):
    llm = ScriptedLlamaLLM(keywords=KEYWORDS)
    kept = [d for d in DOCS if d != deleted]
    vectors = SimpleVectorStore()
    full = build(SimplePropertyGraphStore(), llm, [markdown("A")], *(markdown(d) for d in "BCD"), vector_store=vectors)
    before = snapshot(full.property_graph_store)
    calls = extraction_calls(llm)
    full.delete_ref_doc(deleted, delete_from_docstore=from_docstore)
    assert extraction_calls(llm) == calls  # a delete never calls the model

    never_vectors = SimpleVectorStore()
    never = build(
        SimplePropertyGraphStore(),
        llm,
        [markdown(kept[0])],
        *(markdown(d) for d in kept[1:]),
        vector_store=never_vectors,
    )
    after = snapshot(full.property_graph_store)
    assert after == snapshot(never.property_graph_store) != before
    assert set(vectors.data.embedding_dict) == set(after["entities"])  # embeddings of deleted entities are gone
    # an entity keeps the embedding of its first record; where no first record was in the deleted document,
    # the embeddings, and so the retrieval, are those of never inserting it
    if vectors.data.embedding_dict == never_vectors.data.embedding_dict:
        assert paths(full, llm) == paths(never, llm)
    else:  # which documents hold first records depends on the LlamaIndex version's embedding text
        assert deleted in "ABC"
    assert deleted not in full.docstore.get_all_ref_doc_info() or not from_docstore
    left = [d for d in chunk_documents(full.property_graph_store) if d == deleted]
    if from_docstore:
        # LlamaIndex itself skips every other chunk of the document here (it removes from the list it walks)
        assert len(left) == len(DOCS[deleted]) // 2
    else:
        assert left == []
    assert [d for d in chunk_documents(full.property_graph_store) if d != deleted] == chunk_documents(
        never.property_graph_store
    )


@pytest.mark.parametrize("deleted", list(DOCS))
def test_with_the_embed_model_entity_embeddings_follow_their_descriptions(deleted):
    llm = ScriptedLlamaLLM(keywords=KEYWORDS)
    kept = [d for d in DOCS if d != deleted]
    vectors = SimpleVectorStore()
    # all four in one insert: shared entities are first embedded with D's parts in their descriptions
    full = build(SimplePropertyGraphStore(), llm, [markdown(d) for d in DOCS], vector_store=vectors, reembed=True)
    full.delete_ref_doc(deleted, delete_from_docstore=True)
    never = build(
        SimplePropertyGraphStore(),
        llm,
        [markdown(kept[0])],
        *(markdown(d) for d in kept[1:]),
        vector_store=SimpleVectorStore(),
        reembed=True,
    )
    assert snapshot(full.property_graph_store) == snapshot(never.property_graph_store)
    assert paths(full, llm) == paths(never, llm)
    embed = HashingEmbedding(64)
    for node in full.property_graph_store.get():
        if isinstance(node, EntityNode):
            text = f"{node.id}\n{node.properties['description']}" if node.properties.get("description") else node.id
            assert vectors.get(node.id) == embed.get_text_embedding(text)


def test_what_the_deleted_document_supported_is_gone_and_what_it_shared_is_rebuilt():
    llm = ScriptedLlamaLLM()
    index = build(SimplePropertyGraphStore(), llm, [markdown(d) for d in DOCS])  # one batch, as the README
    store = index.property_graph_store
    graph = snapshot(store)
    assert graph["entities"]["Saltmere".upper()][1] == "A fishing town. Flooded in spring."
    assert graph["entities"]["MARA"][0] == "pilot" and "LANTERN" in graph["entities"]
    index.delete_ref_doc("D", delete_from_docstore=True)
    graph = snapshot(store)
    assert graph["entities"]["SALTMERE"] == ("location", "A fishing town.")
    assert graph["entities"]["MARA"] == ("person", "Harbour pilot. Sails at night.")  # the type tie goes to A's
    assert graph["entities"]["GULL"] == ("object", "A small boat.")
    assert "LANTERN" not in graph["entities"]
    assert all("LANTERN" not in key for key, *_ in graph["relations"])
    tide_ida = [r for r in graph["relations"] if r[0] == ("IDA", "TIDE BOARD")]
    # weight 1: the compact prompt (the default) asks for no strength, each record counts one
    assert tide_ida == [(("IDA", "TIDE BOARD"), ("TIDE BOARD", "IDA"), "The Tide Board hired Ida.", ("contract",), 1.0)]
    assert chunk_documents(store) == ["A", "A", "B", "B", "C", "D"]  # LlamaIndex left D's second chunk
    # provenance: every entity lists the chunks it came from, none of them D's
    live = {n.id for n in store.get() if isinstance(n, ChunkNode)}
    for node in store.get():
        if isinstance(node, EntityNode):
            assert {row["chunk"] for row in json.loads(node.properties[SOURCES_KEY])} <= live
    assert all(EXTRACTED_KEY in n.properties for n in store.get() if isinstance(n, ChunkNode))


def test_the_readme_construction_with_async_insert_and_async_delete():
    llm = ScriptedLlamaLLM(keywords=KEYWORDS)
    store = SimplePropertyGraphStore()
    index = PropertyGraphIndex.from_documents(  # exactly as the README: default use_async=True
        [markdown(d) for d in "ABC"],
        property_graph_store=store,
        llm=llm,
        embed_model=HashingEmbedding(64),
        kg_extractors=[PathRAGExtractor(llm=llm, graph_store=store)],
        transformations=[MarkdownNodeParser()],
    )
    expected = snapshot(store)
    index.insert(markdown("D"))
    assert snapshot(store) != expected
    import asyncio

    asyncio.run(index.adelete_ref_doc("D", delete_from_docstore=True))
    assert snapshot(store) == expected


async def test_delete_inside_a_running_event_loop():
    llm = ScriptedLlamaLLM()
    index = build(SimplePropertyGraphStore(), llm, [markdown(d) for d in "ABC"])
    expected = snapshot(index.property_graph_store)
    index.insert(markdown("D"))
    await index.adelete_ref_doc("D", delete_from_docstore=True)
    assert snapshot(index.property_graph_store) == expected


@pytest.mark.parametrize("how", ["insert", "update_ref_doc", "refresh_ref_docs"])
def test_re_inserting_an_edited_document_replaces_its_old_version(how):
    llm = ScriptedLlamaLLM(keywords=KEYWORDS)
    index = build(SimplePropertyGraphStore(), llm, [markdown("A")], *(markdown(d) for d in "BCD"))
    edited = markdown("D", EDITED_D)
    if how == "insert":
        index.insert(edited)
    elif how == "update_ref_doc":
        index.update_ref_doc(edited)
    else:
        assert index.refresh_ref_docs([markdown(d) for d in "ABC"] + [edited]) == [False, False, False, True]
    fresh = build(SimplePropertyGraphStore(), llm, [markdown("A")], *(markdown(d) for d in "BC"), edited)
    got, want = snapshot(index.property_graph_store), snapshot(fresh.property_graph_store)
    assert got["entities"] == want["entities"] and got["relations"] == want["relations"]
    assert got["entities"]["LANTERN"] == ("object", "A green light.")
    if how != "insert":  # a plain insert leaves LlamaIndex's old chunk nodes; the knowledge is replaced anyway
        assert got == want
        assert paths(index, llm) == paths(fresh, llm)
    # re-inserting the same text again changes nothing
    index.insert(markdown("D", EDITED_D))
    assert snapshot(index.property_graph_store)["entities"] == want["entities"]
    assert snapshot(index.property_graph_store)["relations"] == want["relations"]


def test_a_reloaded_index_still_deletes(tmp_path):
    llm = ScriptedLlamaLLM()
    index = build(SimplePropertyGraphStore(), llm, [markdown(d) for d in "ABCD"])
    index.storage_context.persist(str(tmp_path))
    expected = snapshot(build(SimplePropertyGraphStore(), llm, [markdown(d) for d in "ABC"]).property_graph_store)

    from llama_index.core import StorageContext, load_index_from_storage

    context = StorageContext.from_defaults(persist_dir=str(tmp_path))
    store = context.property_graph_store
    reloaded = load_index_from_storage(
        context, llm=llm, embed_model=HashingEmbedding(64), kg_extractors=[PathRAGExtractor(llm=llm, graph_store=store)]
    )
    reloaded.delete_ref_doc("D", delete_from_docstore=True)
    assert snapshot(store) == expected


def test_explicit_delete_sources_and_other_deletes_pass_through():
    llm = ScriptedLlamaLLM()
    store = SimplePropertyGraphStore()
    extractor = PathRAGExtractor(llm=llm, graph_store=store)
    PropertyGraphIndex.from_documents(
        [markdown("C")],
        property_graph_store=store,
        llm=llm,
        use_async=False,
        embed_model=HashingEmbedding(64),
        kg_extractors=[extractor],
        transformations=[MarkdownNodeParser()],
    )
    assert PathRAGExtractor(llm=llm, graph_store=store)  # a second extractor on the same store: one hook
    assert store.delete.extractor is not extractor
    chunk = next(n.id for n in store.get() if isinstance(n, ChunkNode))
    extractor.delete_sources([chunk])  # the records go, the chunk stays (LlamaIndex owns it)
    assert snapshot(store) == {"entities": {}, "relations": []} and chunk_documents(store) == ["C"]
    store.delete(ids=["not-there"])  # unknown ids: nothing to do, no error
    with pytest.raises(ValueError, match="needs graph_store"):
        PathRAGExtractor(llm=llm).delete_sources(["x"])
    with pytest.raises(TypeError, match="PropertyGraphStore"):
        PathRAGExtractor(llm=llm, graph_store={"not": "a store"})


@pytest.fixture
def quickstart(monkeypatch):
    """examples/llama_index_quickstart.py as a module (its offline model replays the demo corpus)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = Path(__file__).parents[2] / "examples" / "llama_index_quickstart.py"
    spec = importlib.util.spec_from_file_location("llama_index_quickstart", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # pydantic resolves the model's annotations there
    spec.loader.exec_module(module)
    return module


def test_the_issue_reproduction_on_the_demo_corpus(quickstart):
    """Issue 16: on the example's index, delete_ref_doc left all 37 entities and 104 relations."""
    llm, embed_model = quickstart.models()
    documents = quickstart.load_documents()
    for deleted in documents:
        index = quickstart.build_index(llm, embed_model)  # exactly the example's construction
        store = index.property_graph_store
        assert [len(part) for part in snapshot(store).values()] == [37, 104]
        index.delete_ref_doc(deleted.doc_id, delete_from_docstore=True)
        PropertyGraphIndex.from_documents(  # the same store built without the deleted document
            [d for d in documents if d is not deleted],
            property_graph_store=(other := SimplePropertyGraphStore()),
            llm=llm,
            embed_model=embed_model,
            kg_extractors=[PathRAGExtractor(llm=llm, graph_store=other)],
            transformations=[SentenceSplitter(chunk_size=2048)],
            use_async=False,
        )
        assert snapshot(store) == snapshot(other), deleted.doc_id
        assert len(snapshot(store)["relations"]) < 104


def test_what_was_stored_without_provenance_stays(caplog):
    """Entities written before (or by other extractors) count as one record that no delete removes."""
    llm = ScriptedLlamaLLM()
    store = SimplePropertyGraphStore()
    store.upsert_nodes(
        [
            EntityNode(name="MARA", label="person", properties={"description": "Old text."}),
            EntityNode(name="GULL", label="object", properties={"description": "Kept.", SOURCES_KEY: "not json"}),
        ]
    )
    index = build(store, llm, [markdown("A")])
    graph = snapshot(store)["entities"]
    assert graph["MARA"] == ("person", "Old text. Harbour pilot.") and graph["GULL"] == (
        "object",
        "Kept. A small boat.",
    )
    assert "unreadable pathrag_sources" in caplog.text
    index.delete_ref_doc("A", delete_from_docstore=True)
    assert snapshot(store)["entities"] == {"MARA": ("person", "Old text."), "GULL": ("object", "Kept.")}


# -- a real FalkorDB through LlamaIndex's FalkorDBPropertyGraphStore ---------------------------------------


# FalkorDB's HNSW vector index is approximate, and after entities are rewritten in place (as every later
# insert that merges does) it was seen to return fewer nodes than asked for, even fewer than exist. Where the
# retrieved paths are compared, the stores run without indexes, so vector search is an exact scan.
EXACT = {"create_indexes": False}
