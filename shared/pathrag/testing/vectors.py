"""The :class:`~pathrag.VectorIndex` contract as a test suite: :class:`VectorIndexContract` and its exact
embedder :class:`CompassEmbedder` (see :mod:`pathrag.testing`)."""

from __future__ import annotations

import asyncio
import math
import re
import zlib
from collections.abc import Awaitable, Mapping, Sequence
from typing import TypeVar

import pytest

from ..vectors.base import VectorHit, VectorIndex, VectorItem

__all__ = ["CompassEmbedder", "VectorIndexContract"]

T = TypeVar("T")

# the VectorIndex contract ------------------------------------------------------------------------

_WORD = re.compile(r"\w+")
# Words of the contract embedder: the compass rose in the first two dimensions, up and down in the third.
_COMPASS = {
    "north": (0, 1.0),
    "south": (0, -1.0),
    "east": (1, 1.0),
    "west": (1, -1.0),
    "up": (2, 1.0),
    "down": (2, -1.0),
}


class CompassEmbedder:
    """The contract's embedder: vectors whose cosines are known exactly, so every ranking is fixed.

    ``north``/``south`` and ``east``/``west`` are opposite unit vectors on two axes, ``up``/``down`` on a
    third; any other word is hashed to a signed slot among the remaining dimensions. A text's vector is
    the unit sum of its words' (all zeros for a text without words). ``dimensions`` may be changed
    between calls to play an embedder swapped for another one; ``short`` drops that many vectors from
    each answer to play a broken one. ``calls`` counts the calls to :meth:`embed` and :meth:`aembed`.

    >>> CompassEmbedder().embed(["north east"])[0][:3]
    [0.7071067811865475, 0.7071067811865475, 0.0]
    """

    def __init__(self, dimensions: int = 8) -> None:
        self.dimensions = dimensions
        self.short = 0
        self.calls = {"embed": 0, "aembed": 0}

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in _WORD.findall(text.lower()):
            slot, sign = _COMPASS.get(word, (None, 1.0))
            if slot is None:
                code = zlib.crc32(word.encode("utf-8"))
                slot, sign = 3 + code % (self.dimensions - 3), (1.0 if code >> 31 else -1.0)
            vector[slot] += sign
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text (``short`` fewer)."""
        self.calls["embed"] += 1
        vectors = [self._vector(text) for text in texts]
        return vectors[: len(vectors) - self.short]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed` (counted on its own)."""
        self.calls["aembed"] += 1
        vectors = [self._vector(text) for text in texts]
        return vectors[: len(vectors) - self.short]


# Seven points whose cosines to "north" all differ: the order every index must rank them in.
POINTS = [
    VectorItem("n", "north", {"dir": "N"}),
    VectorItem("nne", "north north east", {"dir": "NNE"}),
    VectorItem("ne", "north east", {"dir": "NE"}),
    VectorItem("ene", "east east north", {"dir": "ENE"}),
    VectorItem("e", "east", {"dir": "E"}),
    VectorItem("se", "south east", {"dir": "SE"}),
    VectorItem("s", "south", {"dir": "S"}),
]
BY_NORTH = [item.id for item in POINTS]
NORTH_COSINES = [1.0, 2 / math.sqrt(5), math.sqrt(0.5), 1 / math.sqrt(5), 0.0, -math.sqrt(0.5), -1.0]
# Metadata of every JSON type, nested, beyond ASCII: what the core writes (entity names, lists of them).
RICH_METADATA = {
    "name": "ÉCLUSE 中 🚢",
    "entities": ["ALICE", "it's"],
    "weight": 2.5,
    "count": 3,
    "flag": True,
    "nothing": None,
    "nested": {"keywords": ["home port"], "empty": []},
}
# Ids an index must keep verbatim: unicode, quotes, SQL wildcards, separators, whitespace.
ODD_IDS = ["ÉCLUSE 中 🚢", "it's", 'say "hi"', "50%_off", "*", "a/b:c", "two\nlines", "tab\there", "back\\slash"]


class _SearchContract:
    """The fixtures and helpers of :class:`VectorIndexContract`, and its tests of what a search answers."""

    keeps_text = True
    cosine_scores = True

    @pytest.fixture
    def embedder(self) -> CompassEmbedder:
        """The embedder the ``index`` fixture must embed with."""
        return CompassEmbedder()

    @pytest.fixture
    def index(self, embedder: CompassEmbedder) -> VectorIndex:
        """A fresh, empty index embedding with ``embedder``: override in the subclass."""
        raise NotImplementedError(f"{type(self).__name__} must override the `index` fixture")

    # -- helpers -----------------------------------------------------------------------------------

    @staticmethod
    def ranked(index: VectorIndex, text: str, k: int) -> list[str]:
        """The ids of the ``k`` hits nearest ``text``, best first."""
        return [hit.id for hit in index.query(text, k)]

    def assert_stored(self, index: VectorIndex, expected: Mapping[str, VectorItem | None]) -> None:
        """Where the index has ``get``: each id reads back as expected (``None``: absent)."""
        get = getattr(index, "get", None)
        if callable(get):
            assert {i: get(i) for i in expected} == dict(expected)

    def assert_hit(self, hit: VectorHit, item: VectorItem) -> None:
        """A hit of ``item`` carries its id, metadata and (if the index keeps it) text."""
        assert (hit.id, dict(hit.metadata), hit.text) == (
            item.id,
            dict(item.metadata),
            item.text if self.keeps_text else "",
        )
        assert isinstance(hit.score, float) and math.isfinite(hit.score)

    # -- shape and the empty index -------------------------------------------------------------------

    def test_is_a_vector_index(self, index: VectorIndex) -> None:
        """The index passes ``isinstance(index, VectorIndex)``."""
        assert isinstance(index, VectorIndex)

    def test_an_empty_index_answers_nothing(self, index: VectorIndex) -> None:
        """An empty index finds nothing; deleting unknown ids and upserting nothing are no errors."""
        assert index.query("north", 5) == []
        index.delete(["ghost"])
        index.delete([])
        index.upsert([])
        assert index.query("north", 5) == []
        assert asyncio.run(index.aquery("north", 5)) == []
        self.assert_stored(index, {"ghost": None})

    # -- search --------------------------------------------------------------------------------------

    def test_hits_come_best_first_and_higher_scores_are_closer(self, index: VectorIndex) -> None:
        """Hits are ranked by similarity, best first, with strictly decreasing scores (the cosines when
        ``cosine_scores``); each hit carries its item's metadata and text."""
        index.upsert(POINTS)
        hits = index.query("north", len(POINTS))
        assert [hit.id for hit in hits] == BY_NORTH
        scores = [hit.score for hit in hits]
        assert all(a > b for a, b in zip(scores, scores[1:], strict=False)), scores
        if self.cosine_scores:
            assert scores == pytest.approx(NORTH_COSINES, abs=1e-5)
        for hit, item in zip(hits, POINTS, strict=True):
            self.assert_hit(hit, item)
        assert self.ranked(index, "south", len(POINTS)) == BY_NORTH[::-1]

    def test_every_item_is_nearest_its_own_text(self, index: VectorIndex) -> None:
        """Querying an item's own text finds that item first."""
        index.upsert(POINTS)
        assert [self.ranked(index, item.text, 1) for item in POINTS] == [[item.id] for item in POINTS]

    def test_k_bounds_the_hits(self, index: VectorIndex) -> None:
        """At most ``k`` hits, the best ones; ``k`` above the size gives every item once; ``k <= 0`` none."""
        index.upsert(POINTS)
        for k in range(1, len(POINTS) + 1):
            assert self.ranked(index, "north", k) == BY_NORTH[:k]
        assert self.ranked(index, "north", 1000) == BY_NORTH
        assert index.query("north", 0) == [] and index.query("north", -1) == []

    def test_an_item_without_features_scores_finitely(self, index: VectorIndex) -> None:
        """An item whose text embeds to the zero vector (no words) is stored and scores finitely."""
        index.upsert([*POINTS, VectorItem("blank", "?!")])
        hits = index.query("north", 100)
        assert sorted(hit.id for hit in hits) == sorted([*BY_NORTH, "blank"])
        assert all(math.isfinite(hit.score) for hit in hits)

    def test_a_query_without_features_scores_finitely(self, index: VectorIndex) -> None:
        """A query that embeds to the zero vector (no words, e.g. ``"?"``) finds items with finite scores."""
        index.upsert(POINTS)
        hits = index.query("...", 100)
        assert sorted(hit.id for hit in hits) == sorted(BY_NORTH)
        assert all(math.isfinite(hit.score) for hit in hits)

    def test_metadata_and_text_round_trip(self, index: VectorIndex) -> None:
        """Metadata of every JSON type (nested, unicode) and multi-line unicode text come back as written;
        an item without metadata has empty metadata."""
        rich = VectorItem("rich", "north\nÉcluse 中 🚢 \"quoted\" 'it's'", RICH_METADATA)
        bare = VectorItem("bare", "south")
        index.upsert([rich, bare])
        first, second = index.query("north", 2)
        self.assert_hit(first, rich)
        self.assert_hit(second, bare)
        self.assert_stored(index, {"rich": rich, "bare": bare})


class VectorIndexContract(_SearchContract):
    """The :class:`~pathrag.VectorIndex` contract tests; override the ``index`` fixture.

    ``index(self, embedder)`` must return a fresh, empty index that embeds with ``embedder`` (a
    :class:`CompassEmbedder`; a framework store gets it wrapped in its framework's embeddings class).
    Optional methods the core uses when an index has them are checked when present: ``get(id)`` (passage
    texts), ``ids()``, ``len()`` and ``upsert_vectors(items, vectors)`` (reusing imported vectors).

    Class attributes to set for an index that legitimately differs:

    * ``keeps_text = False``: hits carry ``text=""`` instead of the item's text.
    * ``cosine_scores = False``: scores are another similarity than the cosine (still higher is closer).
    """

    # -- upserts -------------------------------------------------------------------------------------

    def test_upserting_an_id_again_replaces_its_text_and_metadata(self, index: VectorIndex) -> None:
        """An item upserted under a stored id replaces it: found by its new text only, never twice."""
        index.upsert(POINTS)
        moved = VectorItem("n", "west west south", {"dir": "moved", "v": 2})
        index.upsert([moved])
        assert self.ranked(index, "north", 100) == ["nne", "ne", "ene", "e", "n", "se", "s"]
        [hit] = index.query("west", 1)
        self.assert_hit(hit, moved)
        self.assert_stored(index, {"n": moved})

    def test_a_metadata_only_change_is_stored(self, index: VectorIndex) -> None:
        """Upserting the same text with other metadata replaces the metadata."""
        index.upsert(POINTS)
        retagged = VectorItem("ne", "north east", {"dir": "NE", "entities": ["NEW"]})
        index.upsert([retagged])
        hits = index.query("north east", 1)
        assert len(hits) == 1
        self.assert_hit(hits[0], retagged)
        self.assert_stored(index, {"ne": retagged})

    def test_upserting_the_same_items_again_changes_nothing(self, index: VectorIndex) -> None:
        """Upserts are idempotent: the same items again leave the same hits, none duplicated."""
        index.upsert(POINTS)
        before = index.query("north", 100)
        index.upsert(list(reversed(POINTS)))
        assert index.query("north", 100) == before and len(before) == len(POINTS)

    def test_the_last_of_duplicate_ids_in_a_batch_wins(self, index: VectorIndex) -> None:
        """A batch holding one id twice stores the last item, once (as every pathrag index does)."""
        last = VectorItem("d", "south", {"v": 2})
        index.upsert([VectorItem("d", "north", {"v": 1}), last])
        hits = index.query("south", 10)
        assert len(hits) == 1
        self.assert_hit(hits[0], last)

    # -- deletes -------------------------------------------------------------------------------------

    def test_delete_removes_items_and_ignores_unknown_ids(self, index: VectorIndex) -> None:
        """Deleted ids are never found again; unknown ids (and an iterator of ids) are fine."""
        index.upsert(POINTS)
        index.delete(iter(["n", "ghost", "s"]))
        assert self.ranked(index, "north", 100) == ["nne", "ne", "ene", "e", "se"]
        self.assert_stored(index, {"n": None, "s": None, "e": POINTS[4]})
        index.delete(["n", "ghost"])  # again: nothing left to delete
        index.delete([])
        assert self.ranked(index, "south", 100) == ["se", "e", "ene", "ne", "nne"]

    def test_a_deleted_id_can_be_upserted_again(self, index: VectorIndex) -> None:
        """After a delete, the same id can be written again, with the same or another text."""
        index.upsert(POINTS)
        index.delete([item.id for item in POINTS])
        assert index.query("north", 100) == []
        index.upsert([POINTS[0]])
        [hit] = index.query("south", 100)
        self.assert_hit(hit, POINTS[0])

    # -- ids -----------------------------------------------------------------------------------------

    def test_odd_ids_are_kept_verbatim(self, index: VectorIndex) -> None:
        """Ids with unicode, quotes, SQL wildcards or whitespace are stored, found and deleted verbatim."""
        items = [VectorItem(i, f"north {i}", {"id": i}) for i in ODD_IDS]
        index.upsert(items)
        hits = index.query("north", 100)
        assert sorted(hit.id for hit in hits) == sorted(ODD_IDS)
        for hit in hits:
            self.assert_hit(hit, items[ODD_IDS.index(hit.id)])
        index.delete(ODD_IDS[:4])
        assert sorted(self.ranked(index, "north", 100)) == sorted(ODD_IDS[4:])
        self.assert_stored(index, {i: None for i in ODD_IDS[:4]} | {item.id: item for item in items[4:]})

    def test_optional_readers_list_what_is_stored(self, index: VectorIndex) -> None:
        """Where present: ``get`` reads an item back (``None`` if absent), ``ids()`` lists the ids sorted,
        ``len()`` counts them."""
        readers = [name for name in ("get", "ids", "__len__") if callable(getattr(index, name, None))]
        if not readers:
            pytest.skip(f"{type(index).__name__} has none of get, ids, len")
        index.upsert(POINTS)
        index.delete(["nne"])
        left = [item for item in POINTS if item.id != "nne"]
        self.assert_stored(index, {"nne": None, "ghost": None} | {item.id: item for item in left})
        if "ids" in readers:
            assert index.ids() == sorted(item.id for item in left)  # type: ignore[attr-defined]
        if "__len__" in readers:
            assert len(index) == len(left)  # type: ignore[arg-type]

    # -- embedders -----------------------------------------------------------------------------------

    def test_upsert_vectors_stores_the_vectors_given(self, index: VectorIndex, embedder: CompassEmbedder) -> None:
        """Where present, ``upsert_vectors(items, vectors)`` stores those vectors without embedding."""
        upsert_vectors = getattr(index, "upsert_vectors", None)
        if not callable(upsert_vectors):
            pytest.skip(f"{type(index).__name__} has no upsert_vectors")
        calls = dict(embedder.calls)
        upsert_vectors([VectorItem("v", "not about north")], CompassEmbedder().embed(["south"]))
        assert embedder.calls == calls
        index.upsert(POINTS)
        assert self.ranked(index, "south", 2) in (["v", "s"], ["s", "v"])  # both exactly south
        assert self.ranked(index, "north", 100)[-2:] in (["v", "s"], ["s", "v"])

    def test_a_vector_of_another_dimension_is_refused(self, index: VectorIndex, embedder: CompassEmbedder) -> None:
        """An upsert whose vectors differ in dimension from the stored ones raises ValueError and writes
        nothing: the index keeps answering (one bad batch must not break every later query)."""
        index.upsert(POINTS)
        embedder.dimensions = 5
        with pytest.raises(ValueError):
            index.upsert([VectorItem("x", "north")])
        embedder.dimensions = 8
        assert self.ranked(index, "north", 100) == BY_NORTH
        self.assert_stored(index, {"x": None})

    def test_a_query_of_another_dimension_raises(self, index: VectorIndex, embedder: CompassEmbedder) -> None:
        """A query embedded in another dimension than the stored vectors raises ValueError, sync and async."""
        index.upsert(POINTS)
        embedder.dimensions = 5
        with pytest.raises(ValueError):
            index.query("north", 3)
        with pytest.raises(ValueError):
            asyncio.run(index.aquery("north", 3))

    def test_a_short_answer_from_the_embedder_writes_nothing(
        self, index: VectorIndex, embedder: CompassEmbedder
    ) -> None:
        """An embedder answering fewer vectors than texts makes the upsert raise ValueError, writing nothing."""
        embedder.short = 1
        with pytest.raises(ValueError):
            index.upsert(POINTS[:3])
        embedder.short = 0
        assert index.query("north", 100) == []
        self.assert_stored(index, {item.id: None for item in POINTS[:3]})

    # -- async twins ---------------------------------------------------------------------------------

    def test_async_twins_answer_as_the_sync_methods(self, index: VectorIndex, embedder: CompassEmbedder) -> None:
        """Every async twin gives the sync method's answer, and embeds with ``aembed`` (a blocking
        ``embed`` would stall the event loop)."""
        asyncio.run(self._async_twins(index, embedder))

    async def _async_twins(self, index: VectorIndex, embedder: CompassEmbedder) -> None:
        async def unblocking(call: Awaitable[T]) -> T:
            """Await ``call``, checking it embedded with ``aembed`` only."""
            before = embedder.calls["embed"]
            answer = await call
            assert embedder.calls["embed"] == before, "an async twin called the blocking embed"
            return answer

        await unblocking(index.aupsert(POINTS))
        assert embedder.calls["aembed"] > 0
        for text, k in [("north", 100), ("south", 3), ("east", 1), ("up", 0)]:
            found = await unblocking(index.aquery(text, k))
            assert [hit.id for hit in found] == [hit.id for hit in index.query(text, k)]
        hits = await unblocking(index.aquery("north", 100))
        assert [hit.id for hit in hits] == BY_NORTH
        if self.cosine_scores:
            assert [hit.score for hit in hits] == pytest.approx(NORTH_COSINES, abs=1e-5)
        moved = VectorItem("n", "west west south", {"dir": "moved"})
        await unblocking(index.aupsert([moved, POINTS[1]]))
        await unblocking(index.adelete(iter(["s", "ghost"])))
        await unblocking(index.adelete([]))
        found = await unblocking(index.aquery("north", 100))
        assert [hit.id for hit in found] == ["nne", "ne", "ene", "e", "n", "se"]
        self.assert_hit((await unblocking(index.aquery("west", 1)))[0], moved)
        self.assert_stored(index, {"n": moved, "s": None})
