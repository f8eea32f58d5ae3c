"""PathRAGExtractor inside PropertyGraphIndex: extraction, merging like the core, concurrency, bad input."""

from __future__ import annotations

import pytest
from llama_index.core import Document, PropertyGraphIndex
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode
from llama_index.core.graph_stores.types import Relation as StoreRelation
from llama_index.core.node_parser import MarkdownNodeParser
from llama_index.core.schema import TextNode

import pathrag
from llama_index_pathrag import RELATION_LABEL, HashingEmbedding, PathRAGExtractor
from llama_index_pathrag.graph import entity_from_node, relation_from_store
from pathrag.index.extraction import PACK_TOKENS, ExtractionConfig
from pathrag.index.merging import relation_key

from ..fakes import ScriptedLLM
from ..llama_index_fakes import ScriptedLlamaLLM

CHUNKS_A = (
    "ENTITY Mara | person | Harbour pilot.\nENTITY Saltmere | location | Fishing town.\n"
    "LINK Mara | Saltmere | Mara lives in Saltmere. | home | 6",
    "ENTITY Mara | person | Sails at night.\nENTITY Tide Board | organization | Runs the port.\n"
    "LINK Tide Board | Mara | The Tide Board employs Mara. | employment | 8\nLATE Lantern | object | Hung by Mara.",
)
CHUNKS_B = (
    "ENTITY Mara | pilot | Pilot of the Gull.\nENTITY Gull | object | A small boat.\n"
    "LINK Saltmere | Mara | Mara was born in Saltmere. | birthplace, home | 3\n"
    "LINK Mara | Gull | Mara owns the Gull. | ownership | 5",
)


def markdown(doc_id: str, chunks: tuple[str, ...]) -> Document:
    """One document that MarkdownNodeParser splits into exactly ``chunks`` (one per header)."""
    return Document(text="\n\n".join(f"# part {i}\n{chunk}" for i, chunk in enumerate(chunks)), doc_id=doc_id)


def build(llm, store, *docs, **extractor):
    extractor.setdefault("extractor", "llm")  # the paper's prompt: strengths and gleaning, as the core's tests
    return PropertyGraphIndex.from_documents(
        docs,
        property_graph_store=store,
        kg_extractors=[PathRAGExtractor(llm=llm, **extractor)],
        embed_model=HashingEmbedding(64),
        transformations=[MarkdownNodeParser()],
    )


def graph_of(store: SimplePropertyGraphStore) -> tuple[dict, dict]:
    """Entities (type, description) and relations (direction, description, keywords, weight, #sources)."""
    entities = {n.id: entity_from_node(n) for n in store.graph.nodes.values() if isinstance(n, EntityNode)}
    relations = [relation_from_store(r) for r in store.graph.relations.values() if r.label == RELATION_LABEL]
    return (
        {name: (e.type, e.description) for name, e in entities.items()},
        {relation_key(*r.pair): (r.pair, r.description, r.keywords, r.weight, len(r.source_ids)) for r in relations},
    )


def core_graph(*batches: tuple[str, ...]) -> tuple[dict, dict]:
    """The same records merged by the core's own pipeline, one insert per batch."""
    index = pathrag.PathRAGIndex(llm=ScriptedLLM(), embedder=pathrag.HashingEmbedder(64), extractor="llm")
    for i, chunks in enumerate(batches):
        index.insert([pathrag.Document(id=f"doc{i}", chunks=chunks)])
    return (
        {e.name: (e.type, e.description) for e in index.graph.iter_entities()},
        {
            relation_key(*r.pair): (r.pair, r.description, r.keywords, r.weight, len(r.source_ids))
            for r in index.graph.iter_relations()
        },
    )


def test_merges_across_chunks_like_the_core():
    store = SimplePropertyGraphStore()
    build(ScriptedLlamaLLM(), store, markdown("a", CHUNKS_A + CHUNKS_B), graph_store=store)
    entities, relations = graph_of(store)
    assert (entities, relations) == core_graph(CHUNKS_A + CHUNKS_B)
    assert entities["MARA"] == ("person", "Harbour pilot. Sails at night. Pilot of the Gull.")
    assert entities["LANTERN"] == ("object", "Hung by Mara.")  # from gleaning
    assert relations[("MARA", "SALTMERE")] == (
        ("MARA", "SALTMERE"),
        "Mara lives in Saltmere. Mara was born in Saltmere.",
        ("home", "birthplace"),
        9.0,
        2,
    )


def test_merges_with_what_an_earlier_insert_stored():
    store = SimplePropertyGraphStore()
    llm = ScriptedLlamaLLM()
    index = build(llm, store, markdown("a", CHUNKS_A), graph_store=store)
    index.insert(markdown("b", CHUNKS_B))
    assert graph_of(store) == core_graph(CHUNKS_A, CHUNKS_B)
    # the re-seen relation keeps its stored direction and carries the chunk ids of both inserts
    stored = [r for r in store.graph.relations.values() if {r.source_id, r.target_id} == {"MARA", "SALTMERE"}]
    assert [(r.source_id, len(r.properties["source_ids"])) for r in stored] == [("MARA", 2)]
    # a description already stored verbatim is not appended again
    index.insert(
        markdown("c", ("ENTITY Gull | object | A small boat.\nLINK Mara | Gull | Mara owns the Gull. | x | 1",))
    )
    entities, relations = graph_of(store)
    assert entities["GULL"] == ("object", "A small boat.")
    assert relations[("GULL", "MARA")][1:4] == ("Mara owns the Gull.", ("ownership", "x"), 6.0)


def test_without_the_store_llamaindex_keeps_the_first_write():
    store = SimplePropertyGraphStore()
    index = build(ScriptedLlamaLLM(), store, markdown("a", CHUNKS_A))
    index.insert(markdown("b", CHUNKS_B))
    assert graph_of(store)[0]["MARA"] == ("person", "Harbour pilot. Sails at night.")


async def test_one_batch_emits_each_item_once_and_appends_to_earlier_extractors():
    earlier = EntityNode(name="EARLIER")
    nodes = [
        TextNode(text=chunk, metadata={KG_NODES_KEY: [earlier]} if i == 0 else {})
        for i, chunk in enumerate(CHUNKS_A + CHUNKS_B)
    ]
    await PathRAGExtractor(llm=ScriptedLlamaLLM(), extractor="llm").acall(nodes)  # gleaning finds LANTERN
    emitted = [
        (
            [n.name for n in node.metadata[KG_NODES_KEY]],
            [(r.source_id, r.target_id) for r in node.metadata[KG_RELATIONS_KEY]],
        )
        for node in nodes
    ]
    assert emitted == [
        (["EARLIER", "MARA", "SALTMERE"], [("MARA", "SALTMERE")]),
        (["TIDE BOARD", "LANTERN"], [("TIDE BOARD", "MARA")]),
        (["GULL"], [("MARA", "GULL")]),
    ]
    relation = nodes[0].metadata[KG_RELATIONS_KEY][0]
    assert isinstance(relation, StoreRelation) and relation.label == RELATION_LABEL
    assert relation.properties["weight"] == 9.0 and relation.properties["keywords"] == ["home", "birthplace"]
    mara = nodes[0].metadata[KG_NODES_KEY][1]
    assert mara.label == "person" and str(mara) == "MARA\nHarbour pilot. Sails at night. Pilot of the Gull."


async def test_concurrency_is_bounded_and_progress_is_shown(capsys):
    llm = ScriptedLlamaLLM(delay=0.01)
    nodes = [TextNode(text=f"ENTITY E{i} | concept | Number {i}.") for i in range(6)]
    await PathRAGExtractor(llm=llm, num_workers=2, show_progress=True, extractor="llm").acall(nodes)
    assert llm.max_in_flight == 2
    assert len(llm.prompts) == 12  # one extraction and one gleaning prompt per chunk
    assert "PathRAG extraction" in capsys.readouterr().err


async def test_small_chunks_share_one_compact_call_and_keep_their_own_records():
    llm = ScriptedLlamaLLM()
    nodes = [TextNode(text=f"ENTITY E{i} | concept | Number {i}.") for i in range(6)]
    await PathRAGExtractor(llm=llm, config=ExtractionConfig(pack_tokens=PACK_TOKENS)).acall(nodes)
    assert len(llm.prompts) == 1 and "### Text 6" in llm.prompts[0]
    assert [[n.name for n in node.metadata[KG_NODES_KEY]] for node in nodes] == [[f"E{i}"] for i in range(6)]


async def test_untrusted_output_and_empty_chunks():
    llm = ScriptedLlamaLLM()
    nodes = [
        TextNode(text="ENTITY  | person | nameless\nLINK Solo | Solo | itself | x | 3\nENTITY Kept | thing | ok"),
        TextNode(text="   "),
        TextNode(text="Just prose, no facts."),
    ]
    await PathRAGExtractor(llm=llm).acall(nodes)
    assert [[n.name for n in node.metadata[KG_NODES_KEY]] for node in nodes] == [["KEPT"], [], []]
    assert all(node.metadata[KG_RELATIONS_KEY] == [] for node in nodes)
    assert len(llm.prompts) == 2  # one compact call per non-blank chunk; the blank one costs nothing


async def test_a_failing_model_fails_the_call_before_anything_is_written():
    store = SimplePropertyGraphStore()
    store.upsert_nodes([EntityNode(name="MARA", label="person", properties={"description": "Harbour pilot."})])
    nodes = [TextNode(text=CHUNKS_A[0]), TextNode(text="ENTITY Mara | person | Broken chunk.")]
    with pytest.raises(ConnectionError, match="Broken chunk"):
        await PathRAGExtractor(llm=ScriptedLlamaLLM(fail_on="Broken chunk"), graph_store=store).acall(nodes)
    assert [n.properties["description"] for n in store.get()] == ["Harbour pilot."]
    assert all(KG_NODES_KEY not in node.metadata for node in nodes)


async def test_sync_call_inside_a_running_loop():
    nodes = PathRAGExtractor(llm=ScriptedLlamaLLM())([TextNode(text=CHUNKS_B[0])])  # no asyncio.run error
    assert [n.name for n in nodes[0].metadata[KG_NODES_KEY]] == ["MARA", "GULL", "SALTMERE"]


def test_serialises_without_the_store():
    data = PathRAGExtractor(llm=ScriptedLlamaLLM(), graph_store=SimplePropertyGraphStore()).to_dict()
    assert data["class_name"] == "PathRAGExtractor" and "graph_store" not in data
