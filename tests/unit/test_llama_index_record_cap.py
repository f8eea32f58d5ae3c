"""PathRAGExtractor under a flood of records (issue 24 row 6): the per-chunk cap holds, and the records it
dropped are logged and recorded in the chunk's metadata next to the malformed ones skipped."""

from __future__ import annotations

import json
import logging

import pytest
from llama_index.core.graph_stores.types import KG_NODES_KEY
from llama_index.core.schema import TextNode

from llama_index_pathrag import PathRAGExtractor
from llama_index_pathrag.extractor import EXTRACTED_KEY

from ..llama_index_fakes import ScriptedLlamaLLM

pytestmark = pytest.mark.reliability

VALID = [f'("entity"<|>E{i}<|>person<|>Person {i}.)' for i in range(250)]
MALFORMED = ['("entity"<|><|>person<|>No name.)', '("relationship"<|>E1)']
FLOOD = "##".join([*MALFORMED, *VALID]) + "<|COMPLETE|>"
TEXT = " ".join(f"E{i}" for i in range(250))  # 1,139 characters naming every record: the cap is the minimum, 200


async def test_records_over_the_cap_are_logged_and_counted_in_the_metadata(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def ask(self: PathRAGExtractor, prompt: str) -> str:
        return "<|COMPLETE|>" if "Missing records:" in prompt else FLOOD  # a gleaning adds nothing

    monkeypatch.setattr(PathRAGExtractor, "_ask", ask)
    node = TextNode(text=TEXT, id_="chunk-1")
    caplog.set_level(logging.INFO, logger="llama_index_pathrag.extractor")
    await PathRAGExtractor(llm=ScriptedLlamaLLM(), extractor="llm").acall([node])  # the paper's format

    assert len(node.metadata[KG_NODES_KEY]) == 200
    extracted = json.loads(node.metadata[EXTRACTED_KEY])
    assert (extracted["skipped"], extracted["dropped"], len(extracted["entities"])) == (2, 50, 200)
    lines = [r.getMessage() for r in caplog.records if r.name == "llama_index_pathrag.extractor"]
    expected = (
        "chunk chunk-1: 2 malformed records skipped, 0 naming what the chunk never spells and 50 over the cap of 200 "
        "per chunk dropped"
    )
    assert lines == [expected], lines


async def test_a_chunk_with_nothing_skipped_or_dropped_records_no_counts(caplog: pytest.LogCaptureFixture) -> None:
    node = TextNode(text="ENTITY Mara | person | Harbour pilot.", id_="chunk-2")
    caplog.set_level(logging.INFO, logger="llama_index_pathrag.extractor")
    await PathRAGExtractor(llm=ScriptedLlamaLLM()).acall([node])
    assert json.loads(node.metadata[EXTRACTED_KEY]) == {"entities": ["MARA"], "relations": []}
    assert not [r for r in caplog.records if "skipped" in r.getMessage()]
