"""Importing other tools' graphs without an LLM: LightRAG/PathRAG directories, LangChain graph documents and
LlamaIndex property graph stores, from hand-written fixtures in their formats (tests/fixtures/)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document as LCDocument
from llama_index.core import Document as LlamaDocument
from llama_index.core import PropertyGraphIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode
from llama_index.core.graph_stores.types import Relation as LlamaRelation
from llama_index.core.indices.property_graph import ImplicitPathExtractor
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TransformComponent

import pathrag
from pathrag import (
    Document,
    Entity,
    HashingEmbedder,
    InMemoryVectorIndex,
    NetworkXGraphStore,
    PathRAGIndex,
    Relation,
    retrieve,
)
from pathrag.importers import ImportSummary, import_graph_documents, import_lightrag, import_property_graph
from pathrag.index.front import chunk_id, entity_vector_id

from ..fakes import ScriptedLLM

FIXTURES = Path(__file__).parents[1] / "fixtures"
LIGHTRAG = FIXTURES / "lightrag"


def contents(store) -> tuple[list[str], list[str]]:
    return (
        sorted(e.model_dump_json() for e in store.iter_entities()),
        sorted(r.model_dump_json() for r in store.iter_relations()),
    )


# -- LightRAG / PathRAG working directories -----------------------------------------------------


def test_lightrag_fields_map_onto_entities_relations_and_chunks():
    store = NetworkXGraphStore()
    chunks = InMemoryVectorIndex(HashingEmbedder(32))
    summary = import_lightrag(LIGHTRAG, store, chunk_index=chunks)
    # the name made only of quotes, and MARA -> Mara (one entity once normalised), are skipped
    assert summary == ImportSummary(
        entities=5, relations=4, chunks=2, documents=2, skipped=2, merged=1
    )  # "MARA" and Mara
    entities = store.get_entities(["MARA", "SALTMERE", "TIDE BOARD", "GULL", "IDA"])
    assert entities["MARA"] == Entity(  # '"MARA"' and 'Mara' merged; quotes, <SEP> and case handled
        name="MARA",
        type="person",
        description="Mara is a harbour pilot. Mara sails at night. Pilot of the Gull.",
        source_ids=["chunk-a", "chunk-b"],
    )
    assert entities["IDA"] == Entity(name="IDA", source_ids=["chunk-b"])  # UNKNOWN type -> none
    assert entities["GULL"].type == "category"
    home = store.get_relations([("SALTMERE", "MARA")])[("SALTMERE", "MARA")]
    assert home == Relation(  # both directions merged: weights summed, the first direction kept
        source="MARA",
        target="SALTMERE",
        description="Mara lives in Saltmere. Mara was born in Saltmere.",
        keywords=["home", "residence", "birthplace"],
        weight=8.0,
        source_ids=["chunk-a"],
    )
    owns = store.get_relations([("MARA", "GULL")])[("MARA", "GULL")]
    assert owns.keywords == ("ownership", "maintenance", "repair") and owns.weight == 5.0
    assert chunks.get("chunk-b").text.startswith("Mara sails at night")
    # the chunk lists the entities its records name: retrieval starts the flow from the best passage's
    assert chunks.get("chunk-b").metadata == {"chunk_id": "chunk-b", "entities": ["GULL", "IDA", "MARA"]}


def test_imported_lightrag_graph_answers_queries_with_resolvable_sources():
    store = NetworkXGraphStore()
    entities, chunks = InMemoryVectorIndex(HashingEmbedder(64)), InMemoryVectorIndex(HashingEmbedder(64))
    import_lightrag(LIGHTRAG, store, entity_index=entities, chunk_index=chunks)
    assert entities.get(entity_vector_id("TIDE BOARD")).text == "TIDE BOARD\nThe Tide Board runs the port."
    result = retrieve("How is Ida connected to the Tide Board?", graph=store, entity_index=entities, num_seeds=5)
    paths = [item.nodes for item in result.paths]
    assert ("IDA", "GULL", "MARA", "TIDE BOARD") in paths or ("TIDE BOARD", "MARA", "GULL", "IDA") in paths
    assert all(chunks.get(cid) is not None for item in result.items for cid in item.source_ids)


class AxisEmbedder:
    """Text "3" embeds to the unit vector on axis 3; any other text to a fixed mix. Records every text."""

    def __init__(self, dimensions: int = 8) -> None:
        self.dimensions, self.texts = dimensions, []

    def embed(self, texts):
        self.texts.extend(texts)
        out = []
        for text in texts:
            vector = np.full(self.dimensions, 0.1)
            if text.isdigit():
                vector = np.eye(self.dimensions)[int(text)]
            out.append(vector.tolist())
        return out

    async def aembed(self, texts):
        return self.embed(texts)


def test_lightrag_vectors_can_be_reused_instead_of_re_embedded():
    embedder = AxisEmbedder()
    indexes = {name: InMemoryVectorIndex(embedder) for name in ("entity_index", "relation_index", "chunk_index")}
    summary = import_lightrag(LIGHTRAG, NetworkXGraphStore(), reuse_vectors=True, **indexes)
    assert summary.vectors_reused == 4 + 2 + 2  # every row of the three vdb files found its item
    # the fixture put GULL on axis 0, the MARA-SALTMERE relation on axis 4, chunk-b on axis 7
    assert indexes["entity_index"].query("0", 1)[0].metadata == {"name": "GULL"}
    assert indexes["relation_index"].query("4", 1)[0].metadata == {"source": "MARA", "target": "SALTMERE"}
    assert indexes["chunk_index"].query("7", 1)[0].id == "chunk-b"
    embedded = set(embedder.texts)
    assert "IDA" in embedded  # no vdb row: embedded as usual
    assert not any(text.startswith("MARA\n") for text in embedded)  # reused, never sent to the model


def test_reusing_vectors_of_another_dimension_is_refused_before_anything_is_written():
    store = NetworkXGraphStore()
    with pytest.raises(ValueError, match="8-dimensional"):
        import_lightrag(LIGHTRAG, store, entity_index=InMemoryVectorIndex(AxisEmbedder(16)), reuse_vectors=True)
    assert len(store) == 0


class TextOnlyIndex:
    """A VectorIndex that can only embed texts itself."""

    def upsert(self, items): ...
    async def aupsert(self, items): ...
    def query(self, text, k):
        return []

    async def aquery(self, text, k):
        return []

    def delete(self, ids): ...
    async def adelete(self, ids): ...


def test_bad_lightrag_input_gets_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="not a LightRAG/PathRAG working directory"):
        import_lightrag(tmp_path, NetworkXGraphStore())
    with pytest.raises(TypeError, match="upsert_vectors"):
        import_lightrag(LIGHTRAG, NetworkXGraphStore(), entity_index=TextOnlyIndex(), reuse_vectors=True)
    with pytest.raises(TypeError, match="GraphStore"):
        import_lightrag(LIGHTRAG, {})
    broken = tmp_path / "broken"
    shutil.copytree(LIGHTRAG, broken)
    (broken / "kv_store_text_chunks.json").write_text("{not json")
    with pytest.raises(ValueError, match="kv_store_text_chunks.json"):
        import_lightrag(broken, NetworkXGraphStore())
    (broken / "kv_store_text_chunks.json").write_text("[]")
    with pytest.raises(ValueError, match="JSON object"):
        import_lightrag(broken, NetworkXGraphStore())
    (broken / "graph_chunk_entity_relation.graphml").write_text("<graphml><graph><node")
    with pytest.raises(ValueError, match="cannot read"):
        import_lightrag(broken, NetworkXGraphStore())


def test_importing_into_an_index_persists_with_it(tmp_path):
    index = PathRAGIndex(tmp_path, embedder=HashingEmbedder(32))
    import_lightrag(LIGHTRAG, index)
    index.save()
    reopened = PathRAGIndex(tmp_path, embedder=HashingEmbedder(32))
    assert contents(reopened.graph) == contents(index.graph) and len(reopened.graph) == 5
    assert entity_vector_id("GULL") in reopened.entity_index and "chunk-a" in reopened.chunk_index
    assert reopened.retrieve("Who built the Gull?", keyword_llm=False).items


# -- LangChain graph documents (duck typing: langchain-community is sunset, langchain-neo4j heavy) ----


@dataclass
class Node:  # the shape of langchain_neo4j.graphs.graph_document.Node
    id: str | int
    type: str = "Node"
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class Relationship:
    source: Node
    target: Node
    type: str
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class GraphDocument:
    nodes: list[Node]
    relationships: list[Relationship]
    source: LCDocument | None = None


TEXT_1 = "Marie Curie married Pierre Curie and worked at the Sorbonne."
TEXT_2 = "Marie Curie discovered radium with Pierre and won the Nobel Prize."


def curie_documents() -> list[GraphDocument]:
    marie, pierre = (
        Node("Marie Curie", "Person", {"description": "Physicist and chemist."}),
        Node("Pierre Curie", "Person"),
    )
    sorbonne, radium = Node("Sorbonne", "Organization"), Node("radium")
    return [
        GraphDocument(
            [marie, pierre, sorbonne],
            [
                Relationship(marie, pierre, "MARRIED_TO"),
                Relationship(marie, sorbonne, "WORKED_AT", {"description": "She taught there."}),
            ],
            LCDocument(page_content=TEXT_1, metadata={"source": "bio.txt"}),
        ),
        GraphDocument(
            [Node("marie curie", "Person"), radium, Node(42, "Number")],
            [
                Relationship(marie, radium, "DISCOVERED"),
                Relationship(pierre, marie, "MARRIED_TO", {"weight": 3}),
                Relationship(marie, Node("Nobel Prize", "Award"), "WON"),  # endpoint not listed among the nodes
            ],
            LCDocument(page_content=TEXT_2),
        ),
        GraphDocument([Node("  ", "Person")], [], None),  # a blank name, no source
    ]


def test_graph_documents_map_onto_entities_relations_and_chunks():
    store = NetworkXGraphStore()
    chunks = InMemoryVectorIndex(HashingEmbedder(32))
    summary = import_graph_documents(curie_documents(), store, chunk_index=chunks)
    assert summary == ImportSummary(
        entities=6, relations=4, chunks=2, documents=3, skipped=1, merged=1
    )  # "marie curie" and "Marie Curie"
    c1, c2 = chunk_id(TEXT_1), chunk_id(TEXT_2)
    entities = store.get_entities(["MARIE CURIE", "RADIUM", "NOBEL PRIZE", "42", "PIERRE CURIE", "SORBONNE"])
    assert entities["MARIE CURIE"] == Entity(
        name="MARIE CURIE", type="person", description="Physicist and chemist.", source_ids=[c1, c2]
    )
    assert entities["RADIUM"].type == "" and entities["NOBEL PRIZE"].type == "award" and entities["42"].type == "number"
    married = store.get_relations([("MARIE CURIE", "PIERRE CURIE")])[("MARIE CURIE", "PIERRE CURIE")]
    assert married == Relation(
        source="MARIE CURIE", target="PIERRE CURIE", keywords=["MARRIED_TO"], weight=4.0, source_ids=[c1, c2]
    )
    assert (
        store.get_relations([("MARIE CURIE", "SORBONNE")])[("MARIE CURIE", "SORBONNE")].description
        == "She taught there."
    )
    assert chunks.get(c2).text == TEXT_2


def test_graph_documents_must_look_like_graph_documents():
    with pytest.raises(TypeError, match=".nodes and .relationships"):
        import_graph_documents([LCDocument(page_content="text")], NetworkXGraphStore())


def test_imported_vectors_are_the_ones_the_index_itself_writes():
    """An index built by extraction, and one imported from its graph, hold identical vector items."""
    built = PathRAGIndex(llm=ScriptedLLM(), embedder=HashingEmbedder(32))
    built.insert(
        [
            Document(
                text="ENTITY Mara | person | Pilot.\nLINK Mara | Saltmere | Lives there. | home, port | 6\n"
                "LINK Gull | Mara | Her boat. | ownership | 2"
            )
        ]
    )
    nodes = {e.name: Node(e.name, e.type, {"description": e.description}) for e in built.graph.iter_entities()}
    relationships = [
        Relationship(
            nodes[r.source], nodes[r.target], ", ".join(r.keywords), {"description": r.description, "weight": r.weight}
        )
        for r in built.graph.iter_relations()
    ]
    imported = PathRAGIndex(embedder=HashingEmbedder(32))
    import_graph_documents([GraphDocument(list(nodes.values()), relationships)], imported)
    for name in ("entities", "relations"):
        ours, theirs = imported.vector_indexes[name], built.vector_indexes[name]
        assert sorted(ours._items.values(), key=str) == sorted(theirs._items.values(), key=str)


# -- LlamaIndex property graph stores ---------------------------------------------------------------


def test_property_graph_store_maps_onto_entities_relations_and_chunks():
    graph_store = SimplePropertyGraphStore.from_persist_path(
        str(FIXTURES / "llama_index" / "property_graph_store.json")
    )
    store = NetworkXGraphStore()
    chunks = InMemoryVectorIndex(HashingEmbedder(32))
    summary = import_property_graph(graph_store, store, chunk_index=chunks, batch_size=2)
    assert summary == ImportSummary(entities=5, relations=3, chunks=2)
    entities = store.get_entities(["MARA", "SALTMERE", "TIDE BOARD", "GULL", "LANTERN NIGHT", "DOC-2"])
    assert set(entities) == {"MARA", "SALTMERE", "TIDE BOARD", "GULL", "LANTERN NIGHT"}  # doc-2: structural only
    assert entities["MARA"] == Entity(
        name="MARA", type="person", description="A harbour pilot.", source_ids=["node-1", "node-2"]
    )  # file_name property not imported
    assert entities["SALTMERE"].description == "A fishing town." and entities["GULL"].type == ""
    assert entities["LANTERN NIGHT"].description == "A festival on the quay."  # no relation, still imported
    home = store.get_relations([("SALTMERE", "MARA")])[("SALTMERE", "MARA")]
    assert home == Relation(
        source="MARA",
        target="SALTMERE",
        keywords=["LIVES_IN", "BIRTHPLACE_OF"],
        weight=2.0,
        source_ids=["node-1", "node-2"],
    )
    employs = store.get_relations([("TIDE BOARD", "MARA")])[("TIDE BOARD", "MARA")]
    assert employs.description == "The Tide Board employs Mara."
    assert chunks.get("node-1").text.startswith("Mara is a harbour pilot")


class LinkExtractor(TransformComponent):
    """A model-free LlamaIndex kg extractor: ``LINK a | b | label`` lines become triplets."""

    def __call__(self, nodes, **kwargs):
        for node in nodes:
            entities, relations = node.metadata.pop(KG_NODES_KEY, []), node.metadata.pop(KG_RELATIONS_KEY, [])
            for line in node.get_content().splitlines():
                if line.startswith("LINK "):
                    a, b, label = (part.strip() for part in line[5:].split("|"))
                    entities += [EntityNode(name=a, label="THING"), EntityNode(name=b, label="THING")]
                    relations.append(LlamaRelation(label=label, source_id=a, target_id=b))
            node.metadata[KG_NODES_KEY], node.metadata[KG_RELATIONS_KEY] = entities, relations
        return nodes


def test_property_graph_built_by_a_llama_index_pipeline_imports():
    documents = [LlamaDocument(text="LINK Mara | Saltmere | lives in"), LlamaDocument(text="LINK Mara | Gull | owns")]
    index = PropertyGraphIndex.from_documents(
        documents,
        llm=MockLLM(),
        embed_model=MockEmbedding(embed_dim=8),
        embed_kg_nodes=False,
        use_async=False,
        kg_extractors=[LinkExtractor(), ImplicitPathExtractor()],
    )
    store = NetworkXGraphStore()
    chunks = InMemoryVectorIndex(HashingEmbedder(32))
    summary = import_property_graph(index.property_graph_store, store, chunk_index=chunks)
    assert (summary.entities, summary.relations, summary.chunks) == (3, 2, 2)
    owns = store.get_relations([("MARA", "GULL")])[("MARA", "GULL")]
    (source,) = owns.source_ids  # the LlamaIndex chunk the triplet came from, now a chunk item
    assert chunks.get(source).text == "LINK Mara | Gull | owns" and owns.keywords == ("owns",)
    assert store.get_entities(["MARA"])["MARA"].type == "thing"


def test_property_graph_store_must_look_like_one():
    with pytest.raises(TypeError, match="get_triplets"):
        import_property_graph(NetworkXGraphStore(), NetworkXGraphStore())


def test_imported_records_survive_later_inserts_and_go_with_their_document():
    from pathrag import HashingEmbedder, PathRAGIndex

    from ..fakes import ScriptedLLM

    index = PathRAGIndex(llm=ScriptedLLM(), embedder=HashingEmbedder(32))
    import_lightrag(FIXTURES / "lightrag", index, document_id="import:harbour")
    imported = index.graph.get_entities(["MARA"])["MARA"]
    index.insert([pathrag.Document(id="new", text="ENTITY Mara | person | New fact.")])
    mara = index.graph.get_entities(["MARA"])["MARA"]
    assert imported.description in mara.description and "New fact." in mara.description
    assert set(imported.source_ids) <= set(mara.source_ids)
    index.delete(["new"])
    assert index.graph.get_entities(["MARA"])["MARA"] == imported
    again = import_lightrag(FIXTURES / "lightrag", index, document_id="import:harbour")
    assert again.entities == 5 and index.graph.get_entities(["MARA"])["MARA"] == imported  # replaced, not doubled
    index.delete(["import:harbour"])
    assert index.graph.get_entities(["MARA"]) == {} and len(index.entity_index) == 0


class BreakingEmbedder(HashingEmbedder):
    """Embeds until it is told to break: a commit that fails half-way."""

    def __init__(self) -> None:
        super().__init__(64)
        self.broken = False

    def embed(self, texts):
        if self.broken and any(not t.startswith("Mara") for t in texts):  # the passages pass, the records fail
            raise RuntimeError("embedding service down")
        return super().embed(texts)


@pytest.mark.parametrize("where", ["directory", "memory"])
def test_an_import_into_an_index_is_one_commit_or_nothing(tmp_path: Path, where: str) -> None:
    embedder = BreakingEmbedder()
    index = PathRAGIndex(tmp_path / "kb" if where == "directory" else None, embedder=embedder)
    embedder.broken = True
    with pytest.raises(RuntimeError, match="embedding service down"):
        import_lightrag(LIGHTRAG, index, document_id="lr")
    # rolled back: no passage without its records, and no document that a retry would take as unchanged
    assert (len(index.chunk_index), len(index.entity_index), index.documents.get("lr"), len(index.graph)) == (
        0,
        0,
        None,
        0,
    )
    if where == "directory":
        assert index._store.commit_count() == 0
    embedder.broken = False
    summary = import_lightrag(LIGHTRAG, index, document_id="lr")
    assert summary.chunks == 2 and len(index.chunk_index) == 2 and len(index.entity_index) == 5
    if where == "directory":
        assert index._store.commit_count() == 1  # passages, records and vectors: one commit
    with pytest.raises(ValueError, match="its own vector indexes"):
        import_lightrag(LIGHTRAG, index, chunk_index=InMemoryVectorIndex(HashingEmbedder(64)))


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(8)
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts += list(texts)
        return super().embed(texts)


@pytest.mark.parametrize("where", ["directory", "memory"])
def test_reused_vectors_given_to_add_records_are_kept_not_re_embedded(tmp_path: Path, where: str) -> None:
    from pathrag import Entity
    from pathrag.ids import entity_vector_id
    from pathrag.vectors.items import entity_vector_item

    embedder = CountingEmbedder()
    index = PathRAGIndex(tmp_path / "kb" if where == "directory" else None, embedder=embedder)
    alice = Entity(name="ALICE", type="person", description="A pilot.")
    given = [1.0, 0, 0, 0, 0, 0, 0, 0]
    index.add_records(
        "a",
        [alice],
        [],
        vector_items={"entities": [entity_vector_item(alice)]},
        vectors={"entities": {entity_vector_id("ALICE"): given}},
    )
    assert embedder.texts == []  # the rebuild found the reused item unchanged
    assert index.entity_index.query("anything", 1)[0].id == entity_vector_id("ALICE")
    hit = index.entity_index.query("x", 1)[0]
    assert hit.score == pytest.approx(float(np.dot(embedder.embed(["x"])[0], given)))


def test_add_records_again_with_new_passages_is_a_change() -> None:
    from pathrag import Entity, VectorItem

    index = PathRAGIndex(embedder=HashingEmbedder(32))
    alice = Entity(name="ALICE", source_ids=("p1",))
    index.add_records("a", [alice], [], vector_items={"chunks": [VectorItem("p1", "old passage text")]})
    again = index.add_records("a", [alice], [], vector_items={"chunks": [VectorItem("p1", "new passage text")]})
    assert again.unchanged == 0 and index.chunk_index.get("p1").text == "new passage text"
    same = index.add_records("a", [alice], [], vector_items={"chunks": [VectorItem("p1", "new passage text")]})
    assert same.unchanged == 1
