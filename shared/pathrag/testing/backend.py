"""The index backend contract as a test suite: :class:`IndexBackendContract`, run on a
:class:`~pathrag.PathRAGIndex` over a backend, with its scripted model and failing embedder (see
:mod:`pathrag.testing`)."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from .. import Document, IndexConfig, PathRAGIndex
from ..graphs.base import GraphStore
from ..index.backend import IndexBackend
from ..models import Entity, Relation, RetrievalResult
from ..vectors.base import Embedder, VectorIndex, VectorItem
from ..vectors.hashing import HashingEmbedder
from .facts import fact_answer, fact_texts

__all__ = ["FaultyEmbedder", "IndexBackendContract", "ScriptedModel", "backend_of", "committed_state"]

T = TypeVar("T")

# -- the IndexBackend contract -----------------------------------------------------------------------

# What an index built by the contract holds: facts written into the chunks, answered by ScriptedModel.
HARBOUR_DOCS = (
    "harbour",
    (
        "ENTITY Mara | person | A pilot of the harbour.\nENTITY Saltmere | place | A harbour town.\n"
        "LINK Mara | Saltmere | Mara lives in Saltmere. | home | 7",
        "ENTITY Gull | object | A small boat.\nLINK Mara | Gull | Mara sails the Gull. | sailing | 5",
    ),
)
LIGHTHOUSE_DOC = (
    "lighthouse",
    ("ENTITY Ida | person | Keeps the lighthouse.\nLINK Ida | Saltmere | Ida guards the coast. | watch | 4",),
)
FERRY_DOC = (
    "ferry",
    (
        "ENTITY Ferry | object | Crosses the bay.\nENTITY Mara | person | Also the ferry's captain.\n"
        "LINK Ferry | Saltmere | The ferry docks at Saltmere. | transport | 3",
    ),
)
# Counts of HARBOUR_DOCS and LIGHTHOUSE_DOC together (entities: MARA, SALTMERE, GULL, IDA).
BASE_STATS = {"documents": 2, "chunks": 3, "imports": 0, "records": 0, "entities": 4, "relations": 3}
QUESTION = "Who lives in Saltmere and sails the Gull?"


class ScriptedModel:
    """A deterministic language model for the contracts: a chunk line ``ENTITY name | type | description``
    or ``LINK source | target | description | keywords | strength`` comes back as the matching extraction
    record (:func:`pathrag.testing.facts.fact_answer`, either prompt); gleaning finds nothing more; a summary
    prompt gets a short summary. ``delay`` seconds per call
    (awaited); ``texts`` holds the chunk text of every extraction and gleaning prompt, in call order."""

    name = "scripted"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.prompts: list[str] = []
        self.texts: list[str] = []

    def complete(self, prompt: str) -> str:
        """Sync twin of :meth:`acomplete`."""
        return asyncio.run(self.acomplete(prompt))

    async def acomplete(self, prompt: str) -> str:
        """The scripted answer to ``prompt``."""
        self.prompts.append(prompt)
        if self.delay:
            await asyncio.sleep(self.delay)
        if prompt.rstrip().endswith("Merged description:"):
            return f"A summary of {prompt.count(chr(10) + '- ')} descriptions."
        self.texts.append("\n".join(fact_texts(prompt)))
        return fact_answer(prompt) or ""


class FaultyEmbedder(HashingEmbedder):
    """Hashing vectors (64 dimensions) that can be made to fail: after :meth:`fail_on` ``n``, the ``n``-th
    embedding call from then on raises (``how="raise"``) or answers vectors of another dimension
    (``how="dimension"``: the plan takes them, the vector index refuses them when the change set is applied).
    ``calls`` counts every call; ``hook`` (if set) runs once at the next call, before embedding."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls = 0
        self.hook: Callable[[], None] | None = None
        self._fail: tuple[int, str] | None = None

    def fail_on(self, n: int, how: str = "raise") -> None:
        """Make the ``n``-th call from now fail (``"raise"`` or ``"dimension"``)."""
        self._fail = (self.calls + n, how)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Hashing vectors, unless this is the call made to fail."""
        self.calls += 1
        if self.hook is not None:
            hook, self.hook = self.hook, None
            hook()
        if self._fail is not None and self._fail[0] == self.calls:
            how = self._fail[1]
            self._fail = None
            if how == "raise":
                raise ConnectionError(f"embedding call {self.calls} failed")
            return HashingEmbedder(32).embed(texts)
        return super().embed(texts)

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed`."""
        return self.embed(texts)


def backend_of(index: PathRAGIndex) -> IndexBackend:
    """The backend an index runs on."""
    return index._backend  # noqa: SLF001 - the contract's subject


def documents(*facts: tuple[str, tuple[str, ...]]) -> list[Document]:
    return [Document(id=doc_id, chunks=chunks) for doc_id, chunks in facts]


def committed_state(index: PathRAGIndex) -> dict[str, object]:
    """Everything a commit changes, read from one committed state: documents, graph, vectors, stats."""

    def read(graph: GraphStore, indexes: Mapping[str, VectorIndex]) -> dict[str, object]:
        vectors = {}
        for name, vector_index in sorted(indexes.items()):
            ids, get = getattr(vector_index, "ids", None), getattr(vector_index, "get", None)
            held = ids() if ids is not None else []
            vectors[name] = sorted((i, get(i).text if get is not None else "") for i in held)
        iter_entities, iter_relations = getattr(graph, "iter_entities", None), getattr(graph, "iter_relations", None)
        return {
            "entities": sorted(e.model_dump_json() for e in iter_entities()) if iter_entities else [],
            "relations": sorted(r.model_dump_json() for r in iter_relations()) if iter_relations else [],
            "vectors": vectors,
        }

    state = index.read_committed(read)
    state["documents"] = {doc_id: doc.row() for doc_id, doc in sorted(index.documents.items())}
    state["stats"] = index.stats()
    return state


# Every entity name and relation pair the contract's facts hold: what :func:`shape` looks up.
NAMES = ["MARA", "SALTMERE", "GULL", "IDA", "FERRY", "LANTERN"]
PAIRS = [("MARA", "SALTMERE"), ("MARA", "GULL"), ("IDA", "SALTMERE"), ("FERRY", "SALTMERE"), ("IDA", "LANTERN")]


Read = Callable[[GraphStore, Mapping[str, VectorIndex]], T]


def shape(graph: GraphStore, indexes: Mapping[str, VectorIndex]) -> tuple[int, ...]:
    """A committed read's counts: the contract's entities and relations in the graph (looked up by name and
    pair), then the items of each vector index (entities, relations, chunks)."""
    entities, relations = graph.get_entities(NAMES), graph.get_relations(PAIRS)
    return (len(entities), len(relations), *(len(indexes[name]) for name in ("entities", "relations", "chunks")))  # type: ignore[arg-type]


def listing(graph: GraphStore, indexes: Mapping[str, VectorIndex]) -> tuple[list[str], list[tuple[str, str]]]:
    """The graph's entity names and relation pairs as its iterators list them (where it has them)."""
    iter_entities, iter_relations = getattr(graph, "iter_entities", None), getattr(graph, "iter_relations", None)
    return (
        sorted(e.name for e in iter_entities()) if iter_entities else [],
        sorted(r.pair for r in iter_relations()) if iter_relations else [],
    )


def retrieved(result: RetrievalResult) -> list[tuple[str, str, str, float]]:
    """A retrieval's items (kind, id, text, score to 6 places: float32 vectors may round differently)."""
    return [(item.kind, item.id, item.text, round(item.score, 6)) for item in result.items]


def _doc_of(text: str) -> str:
    return "lighthouse" if "Ida" in text else "ferry" if "Ferry" in text else "harbour"


class IndexBackendContract:
    """The contract tests of an index backend; override the ``make_index`` fixture (see the module docstring).

    ``make_index(name, *, llm, embedder, config)`` returns a :class:`~pathrag.PathRAGIndex` over the
    backend's storage called ``name``: another name, other storage (empty at first); the same name again,
    the same storage opened again (another writer of it) when the backend keeps what it commits
    (``persistent``), an empty index when it does not. The contract closes every index it opens.
    """

    persistent = True
    """Whether what an index commits outlives it: the same storage opened again holds it."""

    @pytest.fixture
    def make_index(self) -> Callable[..., PathRAGIndex]:
        """The index factory: override in the subclass."""
        raise NotImplementedError(f"{type(self).__name__} must override the `make_index` fixture")

    def commit_count(self, index: PathRAGIndex) -> int | None:
        """The backend's count of commits, if it keeps one (``None``: it does not): override to check it."""
        return None

    @pytest.fixture
    def open_index(self, make_index: Callable[..., PathRAGIndex]) -> Iterator[Callable[..., PathRAGIndex]]:
        """``open_index(name="main", llm=None, embedder=None, **config)``: an index with a
        :class:`ScriptedModel` and a :class:`FaultyEmbedder` unless given, closed after the test."""
        opened: list[PathRAGIndex] = []

        def open_(
            name: str = "main", *, llm: object = None, embedder: Embedder | None = None, **config: Any
        ) -> PathRAGIndex:
            config.setdefault("lock_timeout", 30.0)
            index = make_index(
                name, llm=llm or ScriptedModel(), embedder=embedder or FaultyEmbedder(), config=IndexConfig(**config)
            )
            opened.append(index)
            return index

        yield open_
        for index in reversed(opened):
            index.close()

    # -- helpers -----------------------------------------------------------------------------------

    @staticmethod
    def clean_state(open_index: Callable[..., PathRAGIndex], *facts: tuple[str, tuple[str, ...]]) -> dict[str, object]:
        """The committed state of an index given only ``facts``, in one insert (other storage)."""
        clean = open_index(f"clean-{len(facts)}")
        if facts:
            clean.insert(documents(*facts))
        return committed_state(clean)

    # -- the tests ---------------------------------------------------------------------------------

    def test_the_index_runs_on_an_index_backend(self, open_index: Callable[..., PathRAGIndex]) -> None:
        """The index's backend is an :class:`~pathrag.index.backend.IndexBackend`; a new index holds nothing."""
        index = open_index()
        assert isinstance(backend_of(index), IndexBackend)
        assert index.stats() == dict.fromkeys(BASE_STATS, 0)
        assert index.read_committed(shape) == (0, 0, 0, 0, 0)

    def test_stats_count_what_was_inserted(self, open_index: Callable[..., PathRAGIndex]) -> None:
        """``stats()`` counts the documents, chunks, imports and records inserted, and agrees with the graph
        and vector indexes a committed read sees."""
        index = open_index()
        summary = index.insert(documents(HARBOUR_DOCS, LIGHTHOUSE_DOC))
        assert (summary.documents, summary.chunks, summary.entities, summary.relations) == (2, 3, 4, 3)
        assert index.stats() == BASE_STATS
        assert index.read_committed(shape) == (4, 3, 4, 3, 3)  # one vector per entity, relation, chunk
        lantern = Entity(name="LANTERN", type="object", description="A storm lantern.")
        lights = Relation(source="IDA", target="LANTERN", description="Ida lights the lantern.", keywords=("light",))
        index.add_records("imported", [lantern], [lights])
        assert index.stats() == {
            **BASE_STATS,
            "documents": 3,
            "imports": 1,
            "records": 2,
            "entities": 5,
            "relations": 4,
        }
        assert index.read_committed(shape) == (5, 4, 5, 4, 3)  # an import's records are no passage

    def test_an_insert_is_seen_all_at_once_by_committed_reads(self, open_index: Callable[..., PathRAGIndex]) -> None:
        """Reads from the plan (the embedder's calls) and from another thread while the change set is being
        applied (held up in its last write, the chunk vectors) see the state before or the state after."""
        embedder = FaultyEmbedder()
        index = open_index(embedder=embedder)
        index.insert(documents(HARBOUR_DOCS))
        before = index.read_committed(shape)
        seen: list[tuple[int, ...]] = []
        embedder.hook = lambda: seen.append(index.read_committed(shape))  # during the plan
        chunks: Any = index.vector_indexes["chunks"]  # its upsert_vectors held up below
        upsert_vectors, applying = chunks.upsert_vectors, threading.Event()

        def slow_upsert_vectors(items: Sequence[VectorItem], vectors: Sequence[Sequence[float]]) -> None:
            applying.set()
            time.sleep(0.3)  # the graph and the other vectors of the change set are written by now
            upsert_vectors(items, vectors)

        chunks.upsert_vectors = slow_upsert_vectors
        errors: list[BaseException] = []
        writer = threading.Thread(target=_catching(errors, lambda: index.insert(documents(LIGHTHOUSE_DOC))))
        writer.start()
        try:
            while writer.is_alive():
                seen.append(index.read_committed(shape))
                if applying.is_set():
                    seen.append(index.read_committed(shape))  # while the apply is held up
        finally:
            writer.join(60)
        after = index.read_committed(shape)
        assert errors == [] and applying.is_set()
        assert after == (4, 3, 4, 3, 3) and before == (3, 2, 3, 2, 2)
        assert set(seen) <= {before, after}, f"half a commit seen: {sorted(set(seen) - {before, after})}"

    def test_a_committed_read_sees_one_state_throughout(self, open_index: Callable[..., PathRAGIndex]) -> None:
        """A commit landing (from another thread) while a committed read runs: the graph's lookups and the
        vector indexes that read sees are of one state (a read that overlapped may be run again)."""
        first, second = self.read_across_a_commit(open_index, shape)
        assert first == second, f"one committed read saw two states: {first} then {second}"

    def test_a_committed_read_iterates_one_state(self, open_index: Callable[..., PathRAGIndex]) -> None:
        """The same with the graph's iterators (``iter_entities``, ``iter_relations``) where it has them."""
        first, second = self.read_across_a_commit(open_index, listing)
        assert first == second, f"one committed read listed two states: {first} then {second}"

    @staticmethod
    def read_across_a_commit(open_index: Callable[..., PathRAGIndex], look: Read[T]) -> tuple[T, T]:
        """``look`` twice in one committed read, an insert committed by another thread in between (on the
        read's first run); checks the insert landed."""
        index = open_index()
        index.insert(documents(HARBOUR_DOCS))
        writes: list[threading.Thread] = []
        errors: list[BaseException] = []

        def read(graph: GraphStore, indexes: Mapping[str, VectorIndex]) -> tuple[T, T]:
            first = look(graph, indexes)
            if not writes:  # the first run of the read: a commit lands in the middle of it
                insert = functools.partial(index.insert, documents(LIGHTHOUSE_DOC))
                writes.append(threading.Thread(target=_catching(errors, insert)))
                writes[0].start()
                writes[0].join(60)
            return first, look(graph, indexes)

        looks = index.read_committed(read)
        assert errors == [] and index.stats()["documents"] == 2
        return looks

    def test_stats_during_a_write_are_those_before_or_after(self, open_index: Callable[..., PathRAGIndex]) -> None:
        """``stats()`` asked while a write plans (from its embedder) counts the state before it."""
        embedder = FaultyEmbedder()
        index = open_index(embedder=embedder)
        index.insert(documents(HARBOUR_DOCS))
        before = index.stats()
        seen: list[dict[str, int]] = []
        embedder.hook = lambda: seen.append(index.stats())
        index.insert(documents(LIGHTHOUSE_DOC))
        assert seen == [before], f"stats of half a commit: {seen} (before: {before}, after: {index.stats()})"

    @pytest.mark.parametrize(("operation", "call"), [("insert", 1), ("insert", 2), ("insert", 3), ("delete", 1)])
    def test_a_failed_plan_leaves_the_committed_state_as_it_was(
        self, open_index: Callable[..., PathRAGIndex], operation: str, call: int
    ) -> None:
        """The ``call``-th embedding call of a write raises while it plans: documents, graph, vectors and
        stats stay as they were, and the write made again lands as on a clean index."""
        self.check_a_failed_write(open_index, operation, call, "raise")

    @pytest.mark.parametrize("call", [1, 2, 3])
    def test_a_failed_apply_leaves_the_committed_state_as_it_was(
        self, open_index: Callable[..., PathRAGIndex], call: int
    ) -> None:
        """The ``call``-th embedding call of an insert answers vectors of another dimension: the plan takes
        them, the vector index refuses them while the change set is applied (after the graph's writes). The
        committed state stays as it was, and the insert made again lands as on a clean index."""
        self.check_a_failed_write(open_index, "insert", call, "dimension")

    def check_a_failed_write(
        self, open_index: Callable[..., PathRAGIndex], operation: str, call: int, how: str
    ) -> None:
        """A write whose ``call``-th embedding call fails (``how``) changes nothing; made again, it lands."""
        embedder = FaultyEmbedder()
        index = open_index(embedder=embedder)
        index.insert(documents(HARBOUR_DOCS, LIGHTHOUSE_DOC))
        if operation == "delete":
            index.insert(documents(FERRY_DOC))

        def write() -> None:
            if operation == "insert":
                index.insert(documents(FERRY_DOC))
            else:
                index.delete(["ferry"])

        before = committed_state(index)
        embedder.fail_on(call, how)
        with pytest.raises((ConnectionError, ValueError)):
            write()
        assert committed_state(index) == before
        write()
        facts = (HARBOUR_DOCS, LIGHTHOUSE_DOC, FERRY_DOC) if operation == "insert" else (HARBOUR_DOCS, LIGHTHOUSE_DOC)
        assert committed_state(index) == self.clean_state(open_index, *facts)

    def test_insert_then_delete_restores_the_stats_and_the_state(self, open_index: Callable[..., PathRAGIndex]) -> None:
        """Insert then delete a document (one that changes a merged description): documents, graph, vectors
        and stats are back as they were; deleting the rest leaves an empty index."""
        index = open_index()
        index.insert(documents(HARBOUR_DOCS, LIGHTHOUSE_DOC))
        before = committed_state(index)
        index.insert(documents(FERRY_DOC))  # changes MARA's description, adds FERRY and a relation
        assert index.stats() == {**BASE_STATS, "documents": 3, "chunks": 4, "entities": 5, "relations": 4}
        summary = index.delete(["ferry"])
        assert (summary.documents, summary.entities_removed, summary.relations_removed) == (1, 1, 1)
        assert committed_state(index) == before
        index.delete(["harbour", "lighthouse"])
        assert committed_state(index) == self.clean_state(open_index)

    def test_inserting_unchanged_documents_again_commits_nothing(
        self, open_index: Callable[..., PathRAGIndex], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Unchanged documents inserted again: no LLM or embedding call, no change set applied, no commit
        counted (see :meth:`commit_count`), the same state."""
        model, embedder = ScriptedModel(), FaultyEmbedder()
        index = open_index(llm=model, embedder=embedder)
        index.insert(documents(HARBOUR_DOCS, LIGHTHOUSE_DOC))
        before, count, calls = committed_state(index), self.commit_count(index), (len(model.prompts), embedder.calls)
        backend, applied = backend_of(index), []
        apply = backend.apply

        def spy(staged: Any) -> bool:
            applied.append(bool(staged) or backend.records.changed())
            return apply(staged)

        monkeypatch.setattr(backend, "apply", spy)
        summary = index.insert(documents(HARBOUR_DOCS, LIGHTHOUSE_DOC))
        assert (summary.unchanged, summary.documents, summary.llm_calls) == (2, 0, 0)
        assert (len(model.prompts), embedder.calls) == calls
        assert not any(applied), "an unchanged insert applied a change set"
        assert self.commit_count(index) == count
        assert committed_state(index) == before

    @pytest.mark.parametrize("how", ["threads", "tasks"])
    def test_two_writers_of_one_index_take_turns_and_both_land(
        self, open_index: Callable[..., PathRAGIndex], how: str
    ) -> None:
        """Two inserts at once on one index (two threads, or two tasks of one loop): one write runs at a time
        (their LLM calls do not interleave) and neither is lost."""
        model = ScriptedModel(delay=0.02)
        index = open_index(llm=model)
        first, second = documents(HARBOUR_DOCS), documents(LIGHTHOUSE_DOC)
        if how == "threads":
            errors: list[BaseException] = []
            threads = [
                threading.Thread(target=_catching(errors, functools.partial(index.insert, d))) for d in (first, second)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            assert errors == []
        else:

            async def both() -> None:
                await asyncio.gather(index.ainsert(first), index.ainsert(second))

            asyncio.run(both())
        order = [_doc_of(text) for text in model.texts]
        turns = [doc for i, doc in enumerate(order) if i == 0 or order[i - 1] != doc]
        assert sorted(turns) == ["harbour", "lighthouse"], f"the writes interleaved: {order}"
        assert committed_state(index) == self.clean_state(open_index, HARBOUR_DOCS, LIGHTHOUSE_DOC)

    def test_two_indexes_over_one_storage_both_land(self, open_index: Callable[..., PathRAGIndex]) -> None:
        """Two index objects over the same storage (as two processes would be) insert at once: both land."""
        if not self.persistent:
            pytest.skip("the backend keeps nothing: two indexes never share its storage")
        first, second = open_index(llm=ScriptedModel(delay=0.02)), open_index(llm=ScriptedModel(delay=0.02))
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=_catching(errors, lambda: first.insert(documents(HARBOUR_DOCS)))),
            threading.Thread(target=_catching(errors, lambda: second.insert(documents(LIGHTHOUSE_DOC)))),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        clean = self.clean_state(open_index, HARBOUR_DOCS, LIGHTHOUSE_DOC)
        assert committed_state(first) == committed_state(second) == clean

    def test_a_saved_copy_reopens_with_the_same_stats_and_retrieval(
        self, open_index: Callable[..., PathRAGIndex], tmp_path: Path
    ) -> None:
        """``save(directory)`` writes a store that opens with the same documents, graph, vectors, stats and
        retrieval, and changes nothing in the index saved."""
        index = open_index()
        index.insert(documents(HARBOUR_DOCS, LIGHTHOUSE_DOC))
        index.add_records("imported", [Entity(name="LANTERN", description="A storm lantern.")], [])
        state, found = committed_state(index), index.retrieve(QUESTION, keyword_llm=False)
        assert found.paths and found.passages
        index.save(tmp_path / "saved-copy")
        copy = PathRAGIndex(tmp_path / "saved-copy", llm=ScriptedModel(), embedder=HashingEmbedder(64))
        try:
            assert committed_state(copy) == state
            assert retrieved(copy.retrieve(QUESTION, keyword_llm=False)) == retrieved(found)
        finally:
            copy.close()
        assert committed_state(index) == state  # saving changed nothing

    def test_storage_opened_again_holds_what_was_committed(self, open_index: Callable[..., PathRAGIndex]) -> None:
        """The index closed and its storage opened again: the same state and retrieval (a persistent backend)."""
        if not self.persistent:
            pytest.skip("the backend keeps nothing once its index is gone")
        index = open_index()
        index.insert(documents(HARBOUR_DOCS, LIGHTHOUSE_DOC))
        state, found = committed_state(index), index.retrieve(QUESTION, keyword_llm=False)
        index.close()
        again = open_index()
        assert committed_state(again) == state
        assert retrieved(again.retrieve(QUESTION, keyword_llm=False)) == retrieved(found)


def _catching(errors: list[BaseException], run: Callable[[], object]) -> Callable[[], None]:
    """``run`` for a thread: what it raises is kept in ``errors``."""

    def target() -> None:
        try:
            run()
        except BaseException as exc:  # noqa: BLE001 - every failure counts
            errors.append(exc)

    return target
