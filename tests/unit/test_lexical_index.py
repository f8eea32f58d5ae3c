"""The model-free index (issue 38): ``extractor="lexical"`` builds the graph with no model and no network, the
same store answers with paths and passages, and the LLM extraction can replace it later over the same store.

Every test here runs without any model: none is given, so a call to one could not even be made.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.documents import Document as LCDocument

from langchain_pathrag import PathRAGEmbeddings, PathRAGIndexer
from pathrag import Document, HashingEmbedder, PathRAGIndex
from pathrag.demo import demo_data
from pathrag.index.extractors import LexicalExtractor, as_extractor
from pathrag.index.lexical import MAX_DESCRIPTION_CHARS, lexical_records

from .test_cli import no_key, run  # noqa: F401 (no_key: an autouse fixture)

DATA = Path(str(demo_data()))
CORPUS = DATA / "corpus"


def demo_documents() -> list[Document]:
    return [Document(id=p.name, text=p.read_text(encoding="utf-8")) for p in sorted(CORPUS.glob("*.md"))]


def lexical_index(directory: Path | None = None) -> PathRAGIndex:
    return PathRAGIndex(directory, embedder=HashingEmbedder(), extractor="lexical")


def test_a_folder_indexed_lexically_answers_with_paths_and_passages() -> None:
    index = lexical_index()
    summary = index.insert(demo_documents())
    assert (summary.documents, summary.llm_calls, summary.failures) == (6, 0, [])
    assert summary.entities > 50 and summary.relations > 50
    result = index.retrieve("How is Odric Pelham connected to the Lantern Night Flood?")
    nodes = {name for path in result.paths for name in path.nodes}
    assert {"ODRIC PELHAM", "LANTERN NIGHT FLOOD"} <= nodes
    assert any("Pelham" in item.text for item in result.passages)
    assert index.check() == []


def test_the_lexical_store_reopens_and_takes_the_llm_extraction_later(tmp_path: Path) -> None:
    from pathrag.demo import ReplayLLM

    index = lexical_index(tmp_path / "kb")
    index.insert(demo_documents())
    lexical_chunks = set(index.chunks)
    index.close()
    # the same store, now with a model: every document is extracted again by it, replacing the lexical records
    index = PathRAGIndex(tmp_path / "kb", llm=ReplayLLM.from_directory(DATA))
    try:
        summary = index.insert(demo_documents())
        assert (summary.documents, summary.unchanged, len(summary.replaced)) == (6, 0, 6)
        assert summary.llm_calls > 0
        assert not set(index.chunks) & lexical_chunks  # the lexical records went with the documents' old version
        assert index.check() == []
        again = index.insert(demo_documents())
        assert (again.unchanged, again.llm_calls) == (6, 0)
    finally:
        index.close()


def test_an_index_with_neither_model_nor_lexical_extractor_says_what_to_pass() -> None:
    index = PathRAGIndex(embedder=HashingEmbedder())
    with pytest.raises(ValueError, match="extractor='lexical'"):
        index.insert(["Mara Quill sails to Saltmere."])
    with pytest.raises(ValueError, match="extractor must be one of 'llm', 'compact', 'lexical'"):
        PathRAGIndex(embedder=HashingEmbedder(), extractor="spacy")
    assert isinstance(as_extractor(LexicalExtractor()), LexicalExtractor)


def test_a_chunk_with_no_names_is_indexed_as_a_passage() -> None:
    index = lexical_index()
    text = "the tide came in slowly over the flats, and nobody said a word about it."
    summary = index.insert([Document(id="plain", text=text)])
    assert (summary.documents, summary.entities, summary.relations, summary.failures) == (1, 0, 0, [])
    assert index.stats()["chunks"] == 1
    passages = index.retrieve("what did the tide do over the flats?").passages
    assert [p.text for p in passages] == [text]


HOSTILE = [
    # one line of 200,000 characters with no sentence punctuation, a capitalised word every few words
    " ".join(f"Harbour{i} walked with the pilot" for i in range(6_000)),
    # no sentences at all: a table flattened to commas
    ", ".join(f"Row {i}" for i in range(3_000)),
    # scripts without capitals, mixed scripts, combining marks, emoji, right-to-left text, a lone surrogate
    "東京は日本の首都です。大阪も大きい。\nΗ Αθήνα είναι η πρωτεύουσα της Ελλάδας.\n"
    "Zoë Ångström met Émile in Málaga 🌊. مرحبا بالعالم. Cafe\u0301 Noir \ud800 opened.",
    "\n\n\n   \t\n",
    "...!!!???;;;",
]


@pytest.mark.parametrize("text", HOSTILE, ids=["huge-line", "no-sentences", "unicode", "blank", "punctuation"])
def test_hostile_text_gives_bounded_records_and_a_valid_store(text: str, tmp_path: Path) -> None:
    records = lexical_records(text, "c")
    for record in [*records.entities, *records.relations]:
        assert len(record.description) <= MAX_DESCRIPTION_CHARS + 4  # the "… " marks at the cut ends
    index = lexical_index(tmp_path / "kb")
    try:
        summary = index.insert([Document(id="hostile", text=text)])
        assert summary.failures == []
        assert summary.entities <= max(200, len(text) // 10)  # the per-chunk record cap
        assert index.check() == []
    finally:
        index.close()


def test_long_sentences_keep_the_words_around_their_names() -> None:
    text = " ".join(["and then the tide rose"] * 100) + " until Mara Quill met Ida Marr " + "at dusk " * 100
    (record,) = lexical_records(text, "c").relations
    assert (record.source, record.target) == ("MARA QUILL", "IDA MARR")
    assert "Mara Quill met Ida Marr" in record.description and len(record.description) <= MAX_DESCRIPTION_CHARS + 4


def test_the_langchain_indexer_indexes_lexically_without_a_model() -> None:
    indexer = PathRAGIndexer(None, PathRAGEmbeddings(HashingEmbedder()), extractor="lexical")
    indexer.add_documents([LCDocument(page_content="Mara Quill sails the Gull to Saltmere.")])
    docs = indexer.as_retriever(llm=None).invoke("Who sails to Saltmere?")
    assert any("MARA QUILL" in doc.page_content or "Mara Quill" in doc.page_content for doc in docs)


def test_pathrag_index_extractor_lexical_needs_no_key(tmp_path: Path) -> None:
    store = tmp_path / "kb"
    result = run("index", CORPUS, "--store", store, "--extractor", "lexical")
    assert result.exit_code == 0, result.output
    rows = dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", result.stdout, re.M))
    assert (rows["documents indexed"], rows["LLM calls"]) == ("6", "0")
    paths = run("paths", "How is Odric Pelham connected to the Lantern Night Flood?", "--store", store)
    assert paths.exit_code == 0, paths.output
    assert "ODRIC PELHAM" in paths.stdout
    # the recorded model (the demo's answers) extracts the same folder again over the same store
    again = run("index", CORPUS, "--store", store, "--replay", DATA)
    assert again.exit_code == 0, again.output
    rows = dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", again.stdout, re.M))
    assert rows["documents replaced"].startswith("6 ")
    without = run("index", CORPUS, "--store", tmp_path / "other")
    assert without.exit_code == 1 and "--extractor lexical" in without.stderr


def test_the_llama_index_extractor_works_lexically_without_any_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    from llama_index.core import Settings
    from llama_index.core.graph_stores.types import KG_NODES_KEY
    from llama_index.core.schema import TextNode

    from llama_index_pathrag import PathRAGExtractor

    def no_default(*args: object) -> None:
        raise AssertionError("the lexical extractor resolved Settings.llm")

    monkeypatch.setattr(type(Settings), "llm", property(no_default))
    node = TextNode(text="Mara Quill sails the Gull from Saltmere.", id_="chunk-1")
    PathRAGExtractor(extractor="lexical")([node])
    assert {n.name for n in node.metadata[KG_NODES_KEY]} == {"MARA QUILL", "GULL", "SALTMERE"}
    with pytest.raises(ValueError, match="extractor must be one of"):
        PathRAGExtractor(extractor="spacy")
