"""Entity names through LlamaIndex (issue 16): PathRAGExtractor inside PropertyGraphIndex stores the core's
normalised names, and the PropertyGraphStore adapter refuses, before writing, a name no store can hold."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, PropertyGraphIndex  # noqa: E402
from llama_index.core.graph_stores import SimplePropertyGraphStore  # noqa: E402
from llama_index.core.graph_stores.types import EntityNode  # noqa: E402
from llama_index.core.node_parser import MarkdownNodeParser  # noqa: E402

from llama_index_pathrag import HashingEmbedding, PathRAGExtractor  # noqa: E402
from llama_index_pathrag.graph import PropertyGraphStoreAdapter  # noqa: E402
from pathrag import Entity, Relation  # noqa: E402
from pathrag.names import MAX_NAME_BYTES, EntityNameError, normalize_name  # noqa: E402

from ..llama_index_fakes import ScriptedLlamaLLM  # noqa: E402

LONG = "Harbour Authority " + "A" * 4079  # 4,097 bytes
CJK = "港口管理局" * 280  # 1,400 characters, 4,200 bytes
CONTROL = "Tide\x01Board"
TEXT = (
    f"# odd names\nENTITY {LONG} | organization | Long.\nENTITY {CJK} | organization | Wide.\n"
    f"ENTITY {CONTROL} | organization | Hidden byte.\nLINK {LONG} | {CJK} | Partners. | partners | 4\n"
    f"LINK {CJK} | {CONTROL} | Rivals. | rivalry | 2"
)


def test_the_extractor_stores_normalised_names():
    store = SimplePropertyGraphStore()
    PropertyGraphIndex.from_documents(
        [Document(text=TEXT, doc_id="odd")],
        property_graph_store=store,
        embed_model=HashingEmbedding(64),
        kg_extractors=[PathRAGExtractor(llm=ScriptedLlamaLLM(), graph_store=store)],
        transformations=[MarkdownNodeParser()],
    )
    names = {n.id for n in store.graph.nodes.values() if isinstance(n, EntityNode)}
    assert names == {normalize_name(LONG), normalize_name(CJK), "TIDEBOARD"}
    assert all(len(n.encode("utf-8")) <= MAX_NAME_BYTES for n in names)


@pytest.mark.parametrize("bad", [LONG, CJK, " ALICE", CONTROL])
async def test_the_adapter_refuses_and_writes_nothing(bad):
    store = SimplePropertyGraphStore()
    adapter = PropertyGraphStoreAdapter(store)
    with pytest.raises(EntityNameError):
        adapter.upsert_entities([Entity(name="OK"), Entity(name=bad)])
    with pytest.raises(EntityNameError):
        await adapter.aupsert_entities([Entity(name=bad)])
    with pytest.raises(EntityNameError):
        adapter.upsert_relations([Relation(source="OK", target=bad)])
    with pytest.raises(EntityNameError):
        await adapter.aupsert_relations([Relation(source=bad, target="OK")])
    assert store.graph.nodes == {} and store.graph.relations == {}
