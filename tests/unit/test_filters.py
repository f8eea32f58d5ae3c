"""Filters on document metadata (issue 37, item 6): one store serves several users, and none sees another's text.

Every piece of text a retrieval can return is checked: passages, paths (their relation labels and
descriptions, their entities' types and descriptions in the paths layout), entity fill, seeds, and the
documents an item names. Each user's facts carry that user's own marker in every field the extraction keeps,
so a marker of another user anywhere in a filtered result is a leak.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document as LCDocument
from llama_index.core.vector_stores.types import FilterCondition, MetadataFilter, MetadataFilters
from typer.testing import CliRunner

from langchain_pathrag import PathRAGEmbeddings, PathRAGIndexer, PathRAGRetriever
from langchain_pathrag.cli import app
from llama_index_pathrag import PathRAGIndexRetriever
from llama_index_pathrag.filters import to_pathrag_filter
from pathrag import Document, HashingEmbedder, NetworkXGraphStore, PathRAGIndex, Relation, RetrievalParams, retrieve
from pathrag.filters import check_filter, matches
from pathrag.vectors.memory import InMemoryVectorIndex

from ..fakes import ScriptedLLM
from ..langchain_fakes import ScriptedChatModel

USERS = ("ana", "ben", "cy")
NAMES = ("MARA", "SALTMERE", "GULL", "ODRIC", "HARBOUR", "LIGHTHOUSE")
QUESTIONS = ("How is Mara linked to the Gull?", "What happened in Saltmere harbour?", "Who is Odric?")


def marker(user: str) -> str:
    return f"{user}secret"


def facts(user: str, seed: int, n: int) -> str:
    """A document of ``user``: entities and links over the shared names, every field marked as the user's."""
    rng = random.Random(seed)
    mark = marker(user)
    lines = []
    for _ in range(n):
        a, b = rng.sample(NAMES, 2)
        lines.append(f"ENTITY {a} | {mark}kind | {a.title()} is known to {mark}.")
        lines.append(
            f"LINK {a} | {b} | {a.title()} and {b.title()} meet, says {mark}. | {mark}link | {rng.randint(1, 9)}"
        )
    lines.append(f"{mark} wrote this about {' and '.join(n.title() for n in rng.sample(NAMES, 3))}.")
    return "\n".join(lines)


def corpus(plan: list[tuple[str, int, int]]) -> list[Document]:
    return [
        Document(id=f"{user}-{i}", text=facts(user, seed, n), metadata={"user": user, "source": f"{user}/{i}.md"})
        for i, (user, seed, n) in enumerate(plan)
    ]


def leaks(result, allowed: set[str]) -> list[str]:
    """Every trace of a user outside ``allowed`` in ``result``: markers in any text, foreign documents."""
    found = []
    others = [marker(u) for u in USERS if u not in allowed]
    for item in result.items:
        found += [f"{item.kind} {item.id}: {m}" for m in others if m in item.text]
        found += [
            f"{item.kind} {item.id}: document {d.id}" for d in item.documents if d.metadata["user"] not in allowed
        ]
        found += [f"{item.kind} {item.id}: metadata {m}" for m in others if m in repr(item.metadata())]
    return found


def check_isolation(index: PathRAGIndex, docs: list[Document]) -> None:
    users_with_text = {d.metadata["user"] for d in docs}
    for question in QUESTIONS:
        for context in ("evidence", "paths"):
            unfiltered = index.retrieve(question, keyword_llm=False, context=context)
            for user in USERS:
                for spelt in ({"user": user}, {"user": {"$eq": user}}, {"user": {"$in": [user]}}):
                    result = index.retrieve(question, keyword_llm=False, context=context, filter=spelt)
                    assert leaks(result, {user}) == [], (question, context, spelt)
                    if user not in users_with_text:
                        assert result.items == [] and result.seeds == []
                    # every name shown is one the user's own documents name
                    own = "\n".join(d.text for d in docs if d.metadata["user"] == user)
                    assert all(name.title() in own or name in own for name in result.seeds)
                    for item in result.items:
                        assert all(n.title() in own or n in own for n in item.nodes)
                pair = [USERS[0], USERS[1]]
                both = index.retrieve(question, keyword_llm=False, context=context, filter={"user": {"$in": pair}})
                assert leaks(both, set(pair)) == []
            # the filter is not a no-op: unfiltered, several users' text shows when several have documents
            if len(users_with_text) > 1 and unfiltered.items:
                shown = {u for u in USERS for item in unfiltered.items if marker(u) in item.text}
                assert shown, "the unfiltered result shows no user's text: the test would prove nothing"


PLANS = st.lists(st.tuples(st.sampled_from(USERS), st.integers(0, 10_000), st.integers(1, 4)), min_size=1, max_size=6)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=PLANS)
def test_no_user_sees_another_users_text_in_memory(plan: list[tuple[str, int, int]]) -> None:
    docs = corpus(plan)
    index = PathRAGIndex(llm=ScriptedLLM(), embedder=HashingEmbedder(128))
    index.insert(docs)
    check_isolation(index, docs)


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(plan=PLANS)
def test_no_user_sees_another_users_text_in_a_store(plan: list[tuple[str, int, int]], tmp_path_factory) -> None:
    docs = corpus(plan)
    directory = tmp_path_factory.mktemp("store")
    index = PathRAGIndex(directory, llm=ScriptedLLM(), embedder=HashingEmbedder(128))
    try:
        index.insert(docs)
    finally:
        index.close()
    reopened = PathRAGIndex(directory, embedder=HashingEmbedder(128))  # what another process reads
    try:
        check_isolation(reopened, docs)
    finally:
        reopened.close()


def shared_store(directory: Path | None = None) -> tuple[PathRAGIndex, list[Document]]:
    docs = corpus([("ana", 1, 4), ("ben", 2, 4), ("cy", 3, 3), ("ana", 4, 2)])
    index = PathRAGIndex(directory, llm=ScriptedLLM(), embedder=HashingEmbedder(128))
    index.insert(docs)
    return index, docs


@pytest.mark.parametrize("stored", [False, True])
def test_every_kind_of_item_is_isolated(tmp_path: Path, stored: bool) -> None:
    index, docs = shared_store(tmp_path if stored else None)
    check_isolation(index, docs)
    kinds = {
        item.kind
        for question in QUESTIONS
        for context in ("evidence", "paths")
        for item in index.retrieve(question, keyword_llm=False, context=context, filter={"user": "ana"}).items
    }
    assert kinds == {"path", "passage", "entity"}  # what check_isolation went through, filtered
    if stored:
        index.close()


@pytest.mark.parametrize("stored", [False, True])
def test_a_merged_description_shows_only_the_matching_documents_part(tmp_path: Path, stored: bool) -> None:
    ana = Document(
        id="a",
        text="ENTITY MARA | pilot | Mara flies, anasecret.\n"
        "LINK MARA | GULL | Mara owns the Gull, anasecret. | owns | 2",
        metadata={"user": "ana"},
    )
    ben = Document(
        id="b",
        text="ENTITY MARA | smuggler | Mara smuggles, bensecret.\n"
        "LINK MARA | GULL | Mara stole the Gull, bensecret. | stole | 2",
        metadata={"user": "ben"},
    )
    index = PathRAGIndex(tmp_path if stored else None, llm=ScriptedLLM(), embedder=HashingEmbedder(128))
    index.insert([ana, ben])
    question = "How is Mara linked to the Gull?"
    for context in ("evidence", "paths"):
        whole = index.retrieve(question, keyword_llm=False, context=context).paths[0]
        assert "owns" in whole.text and "stole" in whole.text  # merged from both documents' records
        if context == "paths":  # (the evidence layout shows a description's first sentence only)
            assert "anasecret" in whole.text and "bensecret" in whole.text
        assert {d.id for d in whole.documents} == {"a", "b"}
        mine = index.retrieve(question, keyword_llm=False, context=context, filter={"user": "ana"}).paths[0]
        assert "anasecret" in mine.text and "bensecret" not in mine.text and "stole" not in mine.text
        assert [d.id for d in mine.documents] == ["a"]
    if stored:
        index.close()


def test_a_document_changing_hands_is_filtered_by_its_new_metadata() -> None:
    index, _ = shared_store()
    question = "How is Mara linked to the Gull?"
    before = index.retrieve(question, keyword_llm=False, filter={"user": "cy"})
    moved = Document(id="ben-1", text=facts("ben", 2, 4), metadata={"user": "cy", "source": "ben/1.md"})
    summary = index.insert([moved])
    assert (summary.documents, summary.llm_calls) == (1, 0)  # metadata alone: no model call
    after = index.retrieve(question, keyword_llm=False, filter={"user": "cy"})
    assert not any("bensecret" in item.text for item in before.items)
    assert any("bensecret" in item.text for item in after.items)
    assert index.documents["ben-1"].metadata["user"] == "cy"


def test_filters_are_checked_and_unknown_operators_refused() -> None:
    assert check_filter({"user": "ana"}) == {"user": {"$eq": "ana"}}
    assert check_filter({"tag": {"$in": ("a", "b")}}) == {"tag": {"$in": ["a", "b"]}}
    assert matches({"n": 1.0}, {"n": 1}) and not matches({"n": True}, {"n": 1}) and not matches({"n": "1"}, {"n": 1})
    assert matches({"tags": ["a"]}, {"tags": ["a"]}) and not matches({"tags": ["a"]}, {"tags": "a"})
    assert not matches({}, {"user": None}) and matches({"user": None}, {"user": None})
    for bad, words in [
        ({"year": {"$gt": 2020}}, "unknown operator '\\$gt' for key 'year'"),
        ({"$or": [{"a": 1}]}, "unknown operator '\\$or' at the top level"),
        ({"user": {"$in": "ana"}}, "'\\$in' for key 'user' takes a list"),
        ({"user": {"$eq": "a", "$in": ["b"]}}, "2 operators"),
        ({"user": float("nan")}, "no document's metadata can hold"),
        ({"user": object()}, "compare with JSON values"),
        (["user"], "filter must be a dict"),
    ]:
        with pytest.raises(ValueError, match=words):
            RetrievalParams(filter=bad)
    with pytest.raises(ValueError, match="unknown operator"):
        RetrievalParams().override(filter={"user": {"$ne": "ana"}})


def test_a_filter_without_an_index_is_refused_not_ignored() -> None:
    graph = NetworkXGraphStore()
    graph.upsert_relations([Relation(source="MARA", target="GULL", description="Mara owns the Gull.")])
    entities = InMemoryVectorIndex(HashingEmbedder(64))
    with pytest.raises(ValueError, match="filter needs the documents' metadata"):
        retrieve("Mara?", graph=graph, entity_index=entities, filter={"user": "ana"})
    retriever = PathRAGRetriever(graph_store=graph, entity_index=entities)
    with pytest.raises(ValueError, match="filter needs the documents' metadata"):
        retriever.invoke("Mara?", filter={"user": "ana"})


def test_langchain_search_kwargs_filter_isolates_users() -> None:
    indexer = PathRAGIndexer(ScriptedChatModel(), PathRAGEmbeddings(HashingEmbedder(128)))
    docs = corpus([("ana", 1, 4), ("ben", 2, 4)])
    indexer.add_documents([LCDocument(page_content=d.text, id=d.id, metadata=d.metadata) for d in docs])
    question = "How is Mara linked to the Gull?"
    everyone = indexer.as_retriever(llm=None, k=20).invoke(question)
    assert {d["metadata"]["user"] for doc in everyone for d in doc.metadata["documents"]} == {"ana", "ben"}
    retriever = indexer.as_retriever(llm=None, k=20, search_kwargs={"filter": {"user": "ana"}})
    found = retriever.invoke(question)
    assert found and all("bensecret" not in d.page_content for d in found)
    assert {d.metadata["user"] for d in found} == {"ana"} and all(
        d.metadata["source"].startswith("ana/") for d in found
    )
    per_call = indexer.as_retriever(llm=None, k=20).invoke(question, filter={"user": {"$in": ["ben"]}})
    assert per_call and all("anasecret" not in d.page_content for d in per_call)
    with pytest.raises(ValueError, match="unknown operator"):
        indexer.as_retriever(search_kwargs={"filter": {"user": {"$nin": ["ana"]}}})


async def test_llama_index_metadata_filters_isolate_users(tmp_path: Path) -> None:
    index, _ = shared_store(tmp_path)
    try:
        question = "How is Mara linked to the Gull?"
        filters = MetadataFilters(filters=[MetadataFilter(key="user", value=["ben", "cy"], operator="in")])
        retriever = PathRAGIndexRetriever(index, keyword_llm=False, filters=filters)
        for nodes in (retriever.retrieve(question), await retriever.aretrieve(question)):
            assert nodes and all("anasecret" not in n.node.get_content() for n in nodes)
            assert {n.node.metadata["user"] for n in nodes if "user" in n.node.metadata} <= {"ben", "cy"}
    finally:
        index.close()
    assert to_pathrag_filter(MetadataFilters(filters=[MetadataFilter(key="user", value="ana")])) == {"user": "ana"}
    for bad, words in [
        (MetadataFilters(filters=[MetadataFilter(key="n", value=1, operator=">")]), "operator GT"),
        (
            MetadataFilters(
                filters=[MetadataFilter(key="a", value=1), MetadataFilter(key="b", value=2)],
                condition=FilterCondition.OR,
            ),
            "only condition=AND",
        ),
        (MetadataFilters(filters=[MetadataFilter(key="a", value=1), MetadataFilter(key="a", value=2)]), "twice"),
    ]:
        with pytest.raises(ValueError, match=words):
            to_pathrag_filter(bad)


def test_the_command_line_takes_a_filter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    index, _ = shared_store(tmp_path)
    index.close()
    query = ["query", "How is Mara linked to the Gull?", "--store", str(tmp_path), "--context-only", "--json"]
    everyone = CliRunner().invoke(app, query)
    assert everyone.exit_code == 0 and "bensecret" in everyone.stdout, everyone.output
    result = CliRunner().invoke(app, [*query, "--param", 'filter={"user": "ana"}'])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert "anasecret" in result.stdout and "bensecret" not in result.stdout and "cysecret" not in result.stdout
    assert {doc for item in shown["sent"] for doc in item["documents"]} <= {"ana-0", "ana-3"}
    refused = CliRunner().invoke(app, [*query, "--param", 'filter={"user": {"$gt": "a"}}'])
    assert refused.exit_code == 2 and "unknown operator '$gt' for key 'user'" in refused.stderr
    assert "Traceback" not in refused.output


JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-3, 3, allow_nan=False).map(lambda f: round(f, 1)),
    st.sampled_from(["ana", "ben", "1", "", "Ana"]),
    st.lists(st.sampled_from(["a", "b"]), max_size=2),
)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.dictionaries(st.sampled_from(["user", "n", "odd key"]), JSON_VALUES, max_size=3), max_size=8),
    wanted=st.dictionaries(
        st.sampled_from(["user", "n", "odd key"]),
        st.one_of(JSON_VALUES, st.lists(JSON_VALUES, max_size=3).map(lambda vs: {"$in": vs})),
        min_size=1,
        max_size=2,
    ),
)
def test_the_stores_prefilter_never_drops_a_matching_document(rows: list[dict], wanted: dict) -> None:
    """The SQL a store narrows its documents with keeps every document the exact test accepts."""
    import sqlite3

    from pathrag.index.sources import _prefilter

    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE documents (id TEXT, metadata TEXT)")
    db.executemany("INSERT INTO documents VALUES (?, ?)", [(str(n), json.dumps(row)) for n, row in enumerate(rows)])
    where, params = _prefilter(wanted)
    kept = {doc_id for (doc_id,) in db.execute(f"SELECT id FROM documents{where}", params)}
    assert {str(n) for n, row in enumerate(rows) if matches(row, wanted)} <= kept


def test_numbers_match_exactly_however_large() -> None:
    big = 2**53  # as a float, 2**53 + 1 is 2**53: two 64-bit user ids must not meet
    assert not matches({"user": big + 1}, {"user": big})
    assert matches({"user": big + 1}, {"user": {"$in": [big + 1]}})
    assert matches({"page": 1}, {"page": 1.0}) and not matches({"flag": True}, {"flag": 1})
    assert not matches({"user": 10**400}, {"user": 10**400 + 1}) and matches({"user": 10**400}, {"user": 10**400})
