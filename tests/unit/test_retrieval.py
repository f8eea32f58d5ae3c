"""Query time: keyword parsing, seed selection, paths with texts and sources, fill, bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pathrag import Document, HashingEmbedder, IndexConfig, Keywords, PathRAGIndex, RetrievalParams, VectorHit
from pathrag.llm.client import as_language_model
from pathrag.llm.prompts import KEYWORDS_PROMPT
from pathrag.query.retrieval import parse_keywords, pick_seeds

from ..fakes import ScriptedLLM

CORPUS = [
    Document(
        id="harbour",
        chunks=(
            "ENTITY Mara | person | Harbour pilot of Saltmere.\nENTITY Saltmere | location | A fishing town.\n"
            "LINK Mara | Saltmere | Mara pilots ships into Saltmere. | pilotage | 8",
            "ENTITY Tide Board | organization | Runs the port of Saltmere.\n"
            "LINK Tide Board | Saltmere | The Tide Board runs the port. | governance | 7\n"
            "LINK Tide Board | Sea Wall | The Tide Board paid for the sea wall. | funding | 9",
        ),
    ),
    Document(
        id="storm",
        text=(
            "ENTITY Great Surge | event | Storm surge of the winter.\nENTITY Sea Wall | object | Flood barrier.\n"
            "LINK Great Surge | Sea Wall | The Great Surge broke the sea wall. | breach | 10\n"
            "ENTITY Lone Buoy | object | A buoy nobody links to anything."
        ),
    ),
]


@pytest.fixture(scope="module")
def index() -> PathRAGIndex:
    idx = PathRAGIndex(llm=ScriptedLLM(), embedder=HashingEmbedder(), config=IndexConfig())
    idx.insert(CORPUS)
    return idx


@pytest.mark.parametrize(
    "answer, expected",
    [
        ('{"high_level": ["flood"], "low_level": ["Mara"]}', Keywords(("flood",), ("Mara",))),
        (
            'Sure! {"high_level_keywords": "flood, storm", "low_level_keywords": ["Mara", " ", "Mara"]} hope it helps',
            Keywords(("flood", "storm"), ("Mara",)),
        ),
        ('```json\n{"low_level": ["Sea Wall"]}\n```', Keywords((), ("Sea Wall",))),
        (
            "High-level keywords: flood, blame\nLow-level keywords: Tide Board, Sea Wall",
            Keywords(("flood", "blame"), ("Tide Board", "Sea Wall")),
        ),
        ('{"high_level": [], "low_level": []}', None),
        ('{"high_level": 3, "low_level": {"a": 1}}', None),
        ("{not json at all", None),
        ("", None),
        ("[" * 5000, None),
    ],
)
def test_parse_keywords_corpus(answer, expected):
    assert parse_keywords(answer) == expected


@given(st.text())
def test_parse_keywords_never_raises(text):
    result = parse_keywords(text)
    assert result is None or (result.high_level or result.low_level)


def test_pick_seeds_round_robin_and_dedup():
    hits = lambda *names: [VectorHit(n, 1.0, {"name": n}) for n in names]  # noqa: E731
    assert pick_seeds([hits("A", "B", "C"), hits("D"), hits("A", "E")], 4) == ["A", "D", "B", "E"]
    assert pick_seeds([hits("A", "B")], 10) == ["A", "B"]
    assert pick_seeds([[VectorHit("x", 1.0, {})], hits("B")], 5) == ["B"]  # a hit without a name is skipped
    assert pick_seeds([], 5) == []


def test_retrieve_without_llm_uses_the_query_text(index):
    result = index.retrieve(
        "How is Mara connected to the Great Surge?", keyword_llm=False, num_seeds=4, context="paths"
    )
    assert result.keywords == Keywords(low_level=("How is Mara connected to the Great Surge?",))
    paths = result.paths
    assert paths, "expected at least one path"
    assert [p.score for p in paths] == sorted((p.score for p in paths), reverse=True)
    best = paths[0]
    assert best.text.splitlines()[0].split(" (")[0] in best.nodes[0]
    assert best.id.startswith("path-") and best.metadata()["hops"] == best.hops


def test_path_sources_are_the_union_of_entity_and_relation_chunks(index):
    result = index.retrieve("Mara Saltmere", keyword_llm=False, num_seeds=2, top_k=1, context="paths")
    item = result.items[0]
    assert item.kind == "path" and set(item.nodes) == {"MARA", "SALTMERE"}
    expected = set(index.graph.get_entities(["MARA"])["MARA"].source_ids) | set(
        index.graph.get_entities(["SALTMERE"])["SALTMERE"].source_ids
    )
    assert set(item.source_ids) == expected


def test_fill_with_seed_entities_when_paths_are_few(index):
    result = index.retrieve("Lone Buoy", keyword_llm=False, num_seeds=1, top_k=3, context="paths")
    assert [(i.kind, i.nodes) for i in result.items] == [("entity", ("LONE BUOY",))]
    assert result.items[0].text == "LONE BUOY (object): A buoy nobody links to anything."


def test_keyword_llm_answer_drives_seeds_and_bad_answers_fall_back():
    calls = []

    def keyword_model(prompt: str) -> str:
        calls.append(prompt)
        return '{"high_level": ["storms"], "low_level": ["Great Surge", "Tide Board"]}'

    idx = PathRAGIndex(llm=ScriptedLLM(), embedder=HashingEmbedder())
    idx.insert(CORPUS)
    idx.llm = as_language_model(keyword_model, name="kw")
    assert (
        idx.retrieve("Who paid for what broke in the storms?", num_seeds=2) and calls == []
    )  # no model call by default
    assert (
        idx.retrieve("Who paid for what broke in the storms?", num_seeds=2, context="paths") and len(calls) == 1
    )  # the paper's
    calls.clear()
    result = idx.retrieve("Who paid for what broke in the storms?", keyword_llm=True, num_seeds=2)
    assert calls == [KEYWORDS_PROMPT.format(question="Who paid for what broke in the storms?")]
    assert result.keywords.low_level == ("Great Surge", "Tide Board")
    assert set(result.seeds) == {"GREAT SURGE", "TIDE BOARD"}
    assert result.items[0].nodes in {
        ("GREAT SURGE", "SEA WALL", "TIDE BOARD"),
        ("TIDE BOARD", "SEA WALL", "GREAT SURGE"),
    }

    def broken(prompt: str) -> str:
        raise TimeoutError("model down")

    idx.llm = as_language_model(broken, name="broken")
    fallback = idx.retrieve("Great Surge", keyword_llm=True, num_seeds=2)
    assert fallback.keywords == Keywords(low_level=("Great Surge",)) and fallback.items


async def test_async_and_sync_agree(index):
    sync = index.retrieve("Tide Board and the Great Surge", keyword_llm=False, num_seeds=5)
    asynchronous = await index.aretrieve("Tide Board and the Great Surge", keyword_llm=False, num_seeds=5)
    assert asynchronous == sync


def test_bad_input(index):
    assert index.retrieve("   ", keyword_llm=False).items == []
    assert index.retrieve("Mara", keyword_llm=False, top_k=0).items == []
    with pytest.raises(TypeError, match="query must be a str"):
        index.retrieve(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown retrieval parameter"):
        index.retrieve("Mara", keyword_llm=False, topk=3)
    with pytest.raises(ValueError, match="alpha"):
        RetrievalParams(alpha=1.5)
    with pytest.raises(ValueError, match="paths_per_pair"):
        RetrievalParams(paths_per_pair=0)
    with pytest.raises(ValueError, match="num_seeds"):
        index.retrieve("Mara", keyword_llm=False, num_seeds=-1)
