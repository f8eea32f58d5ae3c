"""The VectorIndex contract (:mod:`pathrag.testing`) on every vector index pathrag ships: the in-memory
index, the embedded SQLite store's, and the LangChain adapter over ``InMemoryVectorStore``.

The LlamaIndex adapter has no :class:`pathrag.VectorIndex` of its own: its retrievers only read a
LlamaIndex vector store (``_EntitySeeds``) and write entity vectors through ``PathRAGExtractor``, so
there is nothing there to run the whole contract on."""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite("pathrag.testing")  # before the import: detailed assertion messages

from pathrag import InMemoryVectorIndex, VectorItem  # noqa: E402
from pathrag.sqlite import SQLiteStore, SQLiteVectorIndex  # noqa: E402
from pathrag.testing import CompassEmbedder, VectorIndexContract  # noqa: E402


class TestInMemoryVectorIndex(VectorIndexContract):
    @pytest.fixture
    def index(self, embedder):
        return InMemoryVectorIndex(embedder)

    def test_a_saved_index_loads_as_it_was(self, index, embedder, tmp_path):
        """``save`` then ``load`` gives back the same items and the same hits."""
        index.upsert([VectorItem("rich", "north east", {"entities": ["É 中"], "n": 1}), VectorItem("s", "south")])
        index.save(tmp_path / "vectors.json")
        loaded = InMemoryVectorIndex(embedder).load(tmp_path / "vectors.json")
        assert loaded.ids() == ["rich", "s"] and loaded.get("rich") == index.get("rich")
        assert loaded.query("north", 5) == index.query("north", 5)


class TestSQLiteVectorIndex(VectorIndexContract):
    @pytest.fixture
    def sqlite(self, tmp_path):
        store = SQLiteStore(tmp_path)
        yield store
        store.close()

    @pytest.fixture
    def index(self, sqlite, embedder):
        return SQLiteVectorIndex(sqlite, "chunks", embedder)

    def test_spaces_of_one_store_are_apart(self, index, sqlite, embedder):
        """Two spaces of one store share nothing: same ids, separate items, separate deletes."""
        other = SQLiteVectorIndex(sqlite, "entities", embedder)
        index.upsert([VectorItem("a", "north", {"space": "chunks"})])
        other.upsert([VectorItem("a", "south", {"space": "entities"}), VectorItem("b", "east")])
        assert [(h.id, h.metadata) for h in index.query("north", 10)] == [("a", {"space": "chunks"})]
        other.delete(["a"])
        assert index.ids() == ["a"] and other.ids() == ["b"]

    def test_a_second_reader_sees_every_write(self, index, sqlite, embedder):
        """Another index over the same space (another reader's cached matrix) sees upserts and deletes."""
        reader = SQLiteVectorIndex(sqlite, "chunks", embedder)
        assert reader.query("north", 5) == []  # caches an empty matrix
        index.upsert([VectorItem("n", "north"), VectorItem("s", "south")])
        assert [h.id for h in reader.query("north", 5)] == ["n", "s"]
        index.delete(["n"])
        index.upsert([VectorItem("s", "north")])
        assert [(h.id, h.score) for h in reader.query("north", 5)] == [("s", pytest.approx(1.0))]

    def test_a_reopened_store_answers_as_before(self, index, sqlite, embedder, tmp_path):
        """The vectors are in the file: a store opened again finds the same hits."""
        index.upsert([VectorItem("n", "north", {"k": ["v"]}), VectorItem("e", "east")])
        before = index.query("north", 5)
        sqlite.close()
        again = SQLiteStore(tmp_path)
        try:
            assert SQLiteVectorIndex(again, "chunks", CompassEmbedder()).query("north", 5) == before
        finally:
            again.close()


class TestLangChainVectorIndexOnInMemoryVectorStore(VectorIndexContract):
    @pytest.fixture
    def index(self, embedder):
        vectorstores = pytest.importorskip("langchain_core.vectorstores")
        from langchain_pathrag import LangChainVectorIndex, PathRAGEmbeddings

        return LangChainVectorIndex(vectorstores.InMemoryVectorStore(PathRAGEmbeddings(embedder)))

    # strict: each starts failing the suite (XPASS) once the adapter handles it.

    @pytest.mark.xfail(
        strict=True,
        raises=AssertionError,
        reason="InMemoryVectorStore's cosine_similarity cannot score a query that embeds to the zero vector "
        "(HashingEmbedder's for a text without words, e.g. '?'): the adapter then finds nothing",
    )
    def test_a_query_without_features_scores_finitely(self, index):
        super().test_a_query_without_features_scores_finitely(index)

    @pytest.mark.xfail(
        strict=True,
        raises=pytest.fail.Exception,
        reason="InMemoryVectorStore.add_documents stores vectors of any length: the upsert succeeds and "
        "every later query raises ValueError (X and Y column counts differ)",
    )
    def test_a_vector_of_another_dimension_is_refused(self, index, embedder):
        super().test_a_vector_of_another_dimension_is_refused(index, embedder)

    @pytest.mark.xfail(
        strict=True,
        raises=pytest.fail.Exception,
        reason="InMemoryVectorStore.add_documents zips texts with vectors (strict=False): an embedder's "
        "short answer silently drops the last items instead of raising",
    )
    def test_a_short_answer_from_the_embedder_writes_nothing(self, index, embedder):
        super().test_a_short_answer_from_the_embedder_writes_nothing(index, embedder)


def test_a_langchain_retriever_answers_a_question_without_words() -> None:
    """A question of punctuation alone finds nothing, instead of InMemoryVectorStore's NaN error."""
    from langchain_pathrag import PathRAGIndexer

    from ..langchain_fakes import HARBOUR, ScriptedChatModel, embeddings

    indexer = PathRAGIndexer(ScriptedChatModel(), embeddings())
    indexer.add_documents([HARBOUR])
    retriever = indexer.as_retriever(llm=None)
    assert retriever.invoke("???") == []
    assert retriever.invoke("Who is Mara?")  # the same retriever still answers a question with words
