"""The :class:`~pathrag.GraphStore` and :class:`~pathrag.VectorIndex` contracts as test suites: subclass
one once per store.

``GraphStoreContract`` holds pytest test methods that check what the core relies on: batched reads
that leave unknown names out, relations found either way round and keyed as asked, missing endpoints
created bare, upserts that replace (or merge through the hook) and are idempotent, neighbourhoods and
degrees both directed and undirected with limits and ``keep``, deletes (an entity's relations go with
it; a relation's endpoints stay), names beyond ASCII, refused names writing nothing, and async twins
answering as the sync methods. It needs pytest (the ``dev`` extra); ``import pathrag`` never imports it.

Subclass it in a test module (the name must start with ``Test``) and override the ``store`` fixture
to return a fresh, empty store; as a fixture it may use other fixtures (a database, ``tmp_path``)::

    from pathrag.testing import GraphStoreContract

    class TestMyStore(GraphStoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            return MyStore(tmp_path)

``VectorIndexContract`` does the same for a vector index: ranking best first with higher scores closer
(cosines known exactly, from :class:`CompassEmbedder`), ``k`` bounds, upserts that replace (text and
metadata) and are idempotent, the last of duplicate ids winning, deletes ignoring unknown ids, metadata
and odd ids kept verbatim, zero vectors scored finitely, vectors of another dimension or an embedder's
short answer refused, and async twins answering as the sync methods without the blocking ``embed``. Its
fixture is ``index(self, embedder)``: a fresh, empty index embedding with the contract's ``embedder``::

    class TestMyIndex(VectorIndexContract):
        @pytest.fixture
        def index(self, embedder):
            return MyVectorIndex(embedder)

The async checks run with ``asyncio.run`` inside sync tests, so no asyncio pytest plugin is needed.
For pytest's detailed assertion messages, call ``pytest.register_assert_rewrite("pathrag.testing")``
(in ``conftest.py``, or before the import).
"""

from __future__ import annotations

import asyncio
import math
import re
import zlib
from collections.abc import Awaitable, Mapping, Sequence
from typing import TypeVar

import pytest

from .graph import GraphStore, Neighborhood
from .models import Entity, Relation
from .names import EntityNameError
from .vectors import VectorHit, VectorIndex, VectorItem

__all__ = ["CompassEmbedder", "GraphStoreContract", "VectorIndexContract"]

T = TypeVar("T")

ALICE = Entity(name="ALICE", type="person", description="A navigator.")
HARBOUR = Entity(name="HARBOUR", type="location", description="A port with 'quotes',\nand two lines.")
SAILS = Relation(
    source="ALICE",
    target="HARBOUR",
    description="Alice sails from the harbour.",
    keywords=("sailing", "home port"),
    weight=3,
    source_ids=("c1", "c2"),
)
LOCK = Relation(source="HARBOUR", target="ÉCLUSE 中", description="To a missing endpoint.", keywords=("lock",))

# The traversal graph: relations in their recorded direction, a self-loop on D, an isolated LONER.
EDGES = [("A", "B"), ("C", "B"), ("B", "D"), ("D", "D"), ("E", "A")]
UNDIRECTED = {
    "A": Neighborhood(2, {"B": 3, "E": 1}),
    "B": Neighborhood(3, {"A": 2, "C": 1, "D": 1}),
    "C": Neighborhood(1, {"B": 3}),
    "D": Neighborhood(1, {"B": 3}),  # the self-loop is no neighbour
    "E": Neighborhood(1, {"A": 2}),
    "LONER": Neighborhood(0, {}),
}
DIRECTED = {  # out-edges only
    "A": Neighborhood(1, {"B": 1}),
    "B": Neighborhood(1, {"D": 0}),
    "C": Neighborhood(1, {"B": 1}),
    "D": Neighborhood(0, {}),
    "E": Neighborhood(1, {"A": 1}),
    "LONER": Neighborhood(0, {}),
}
# Names a store must keep verbatim: unicode, quotes, Cypher syntax, inner whitespace.
ODD_NAMES = [
    "ÉCLUSE 中 🚢",
    "it's",
    "back`tick`",
    "{braces}",
    "$param",
    "MATCH (n) DETACH DELETE n",
    "tab\there",
    "two\nlines",
    "back\\slash",
    "null",
]


def edge(source: str, target: str) -> Relation:
    return Relation(source=source, target=target, description=f"{source}>{target}", keywords=(f"{source}{target}",))


class GraphStoreContract:
    """The contract tests; override the ``store`` fixture (see the module docstring)."""

    @pytest.fixture
    def store(self) -> GraphStore:
        """A fresh, empty store: override in the subclass."""
        raise NotImplementedError(f"{type(self).__name__} must override the `store` fixture")

    # -- helpers -----------------------------------------------------------------------------------

    # Each test writes the endpoints of its relations first, except the one about missing endpoints.

    @staticmethod
    def load_sample(store: GraphStore) -> None:
        """Write ALICE, HARBOUR and the relation SAILS between them."""
        store.upsert_entities([ALICE, HARBOUR])
        store.upsert_relations([SAILS])

    @staticmethod
    def load_traversal_graph(store: GraphStore) -> None:
        """Write the traversal graph: the entities A to E and LONER, and the relations of ``EDGES``."""
        store.upsert_entities([Entity(name=n) for n in ["A", "B", "C", "D", "E", "LONER"]])
        store.upsert_relations([edge(s, t) for s, t in EDGES])

    # -- shape ---------------------------------------------------------------------------------------

    def test_is_a_graph_store(self, store: GraphStore) -> None:
        """The store passes ``isinstance(store, GraphStore)``."""
        assert isinstance(store, GraphStore)

    def test_an_empty_store_answers_nothing(self, store: GraphStore) -> None:
        """An empty store reads back nothing, and deleting unknown names or pairs is no error."""
        assert store.get_entities(["A", "B"]) == {}
        assert store.get_relations([("A", "B")]) == {}
        assert store.neighborhoods({"A": None, "B": 0}, keep={"A"}) == {}
        assert store.get_entities([]) == {} and store.get_relations([]) == {} and store.neighborhoods({}) == {}
        store.delete_entities(["A"])  # unknown names: no error
        store.delete_relations([("A", "B")])
        store.delete_entities([])
        store.delete_relations([])
        assert store.get_entities(["A"]) == {}

    # -- entities and relations ----------------------------------------------------------------------

    def test_entities_read_back_as_written_and_unknown_names_are_left_out(self, store: GraphStore) -> None:
        """Entities read back equal to what was written; unknown names are left out."""
        self.load_sample(store)
        found = store.get_entities(iter(["HARBOUR", "NOBODY", "ALICE", "ALICE"]))
        assert found == {"HARBOUR": HARBOUR, "ALICE": ALICE}

    def test_relations_are_found_either_way_round_and_keyed_as_asked(self, store: GraphStore) -> None:
        """A relation is found from either end, keyed by the pair as asked, in its recorded direction."""
        self.load_sample(store)
        found = store.get_relations(iter([("HARBOUR", "ALICE"), ("ALICE", "NOBODY"), ("ALICE", "HARBOUR")]))
        assert found == {("HARBOUR", "ALICE"): SAILS, ("ALICE", "HARBOUR"): SAILS}
        assert found[("HARBOUR", "ALICE")].pair == ("ALICE", "HARBOUR")  # the recorded direction
        store.upsert_entities([Entity(name="ÉCLUSE 中")])
        assert store.get_relations([("ALICE", "ÉCLUSE 中")]) == {}  # no relation between two entities

    def test_entities_keep_their_source_ids(self, store: GraphStore) -> None:
        """An entity's ``source_ids`` survive the round trip."""
        cited = Entity(name="CITED", type="thing", description="From two chunks.", source_ids=("c1", "c2"))
        store.upsert_entities([cited])
        assert store.get_entities(["CITED"]) == {"CITED": cited}

    def test_a_relation_without_keywords_reads_back_without_keywords(self, store: GraphStore) -> None:
        """A relation with no keywords reads back with none."""
        store.upsert_entities([Entity(name="A"), Entity(name="B")])
        plain = Relation(source="A", target="B")
        store.upsert_relations([plain])
        assert store.get_relations([("A", "B")]) == {("A", "B"): plain}

    def test_a_relation_creates_missing_endpoints_bare_and_leaves_stored_ones_alone(self, store: GraphStore) -> None:
        """Writing a relation creates a missing endpoint bare and leaves a stored one as it is."""
        self.load_sample(store)
        store.upsert_relations([LOCK])
        assert store.get_entities(["ÉCLUSE 中", "HARBOUR"]) == {
            "ÉCLUSE 中": Entity(name="ÉCLUSE 中"),
            "HARBOUR": HARBOUR,
        }
        assert store.get_relations([("ÉCLUSE 中", "HARBOUR")]) == {("ÉCLUSE 中", "HARBOUR"): LOCK}

    def test_upserts_replace_and_are_idempotent(self, store: GraphStore) -> None:
        """Writing the same data twice changes nothing; new data replaces the old."""
        self.load_sample(store)
        self.load_sample(store)  # the same writes again change nothing
        assert store.get_entities(["ALICE", "HARBOUR"]) == {"ALICE": ALICE, "HARBOUR": HARBOUR}
        assert store.get_relations([("ALICE", "HARBOUR")]) == {("ALICE", "HARBOUR"): SAILS}
        assert store.neighborhoods({"HARBOUR": None}) == {"HARBOUR": Neighborhood(1, {"ALICE": 1})}  # one edge
        pilot = Entity(name="ALICE", type="pilot", description="Now a pilot.")
        store.upsert_entities([pilot])
        assert store.get_entities(["ALICE"]) == {"ALICE": pilot}
        flies = Relation(
            source="ALICE",
            target="HARBOUR",
            description="Flies over it.",
            keywords=("flying",),
            weight=1.5,
            source_ids=("c9",),
        )
        store.upsert_relations([flies])
        assert store.get_relations([("HARBOUR", "ALICE")]) == {("HARBOUR", "ALICE"): flies}

    def test_the_reverse_pair_replaces_the_relation_in_its_own_direction(self, store: GraphStore) -> None:
        """A relation on the reverse pair replaces the stored one and is kept in its own direction."""
        store.upsert_entities([Entity(name="A"), Entity(name="B")])
        store.upsert_relations([edge("A", "B")])
        back = Relation(source="B", target="A", description="ba", keywords=("back",), weight=2)
        store.upsert_relations([back])
        assert store.get_relations([("A", "B"), ("B", "A")]) == {("A", "B"): back, ("B", "A"): back}
        assert store.neighborhoods({"A": None}, directed=True) == {"A": Neighborhood(0, {})}
        assert store.neighborhoods({"B": None}, directed=True) == {"B": Neighborhood(1, {"A": 0})}

    def test_merge_hooks_see_the_stored_and_the_incoming_item(self, store: GraphStore) -> None:
        """Merge hooks get ``(stored, incoming)``, only for names and pairs already stored."""
        self.load_sample(store)
        seen: list[tuple[str, str]] = []

        def merge_entity(old: Entity, new: Entity) -> Entity:
            seen.append((old.description, new.description))
            return new.model_copy(update={"description": f"{old.description} | {new.description}"})

        def add_weights(old: Relation, new: Relation) -> Relation:
            return old.model_copy(update={"weight": old.weight + new.weight})

        store.upsert_entities(
            [
                Entity(name="ALICE", type="person", description="Also a cook."),
                Entity(name="NEWCOMER", description="fresh"),
            ],
            merge=merge_entity,
        )
        assert seen == [("A navigator.", "Also a cook.")]  # never called for a name not stored
        assert store.get_entities(["ALICE", "NEWCOMER"]) == {
            "ALICE": Entity(name="ALICE", type="person", description="A navigator. | Also a cook."),
            "NEWCOMER": Entity(name="NEWCOMER", description="fresh"),
        }
        store.upsert_relations(
            [
                Relation(source="HARBOUR", target="ALICE", keywords=("k",), weight=2),
                Relation(source="ALICE", target="NEWCOMER", keywords=("new",), weight=4),
            ],
            merge=add_weights,
        )
        found = store.get_relations([("ALICE", "HARBOUR"), ("ALICE", "NEWCOMER")])
        assert found == {
            ("ALICE", "HARBOUR"): SAILS.model_copy(update={"weight": 5.0}),
            ("ALICE", "NEWCOMER"): Relation(source="ALICE", target="NEWCOMER", keywords=("new",), weight=4),
        }

    # -- traversal -----------------------------------------------------------------------------------

    def test_neighborhoods_undirected(self, store: GraphStore) -> None:
        """Undirected neighbourhoods and degrees of the traversal graph; unknown nodes left out."""
        self.load_traversal_graph(store)
        assert store.neighborhoods(dict.fromkeys([*UNDIRECTED, "GHOST"])) == UNDIRECTED

    def test_neighborhoods_directed_follow_out_edges(self, store: GraphStore) -> None:
        """Directed neighbourhoods follow out-edges only."""
        self.load_traversal_graph(store)
        assert store.neighborhoods(dict.fromkeys([*DIRECTED, "GHOST"]), directed=True) == DIRECTED

    def test_a_node_over_its_limit_lists_only_kept_neighbours(self, store: GraphStore) -> None:
        """A node whose degree is over its limit lists only its neighbours in ``keep``."""
        self.load_traversal_graph(store)
        keep = {"C", "E", "GHOST"}
        assert store.neighborhoods({"B": 3}, keep=keep) == {"B": UNDIRECTED["B"]}  # degree == limit: all
        assert store.neighborhoods({"B": 2, "A": 1, "C": 5}, keep=keep) == {
            "B": Neighborhood(3, {"C": 1}),
            "A": Neighborhood(2, {"E": 1}),
            "C": UNDIRECTED["C"],
        }
        assert store.neighborhoods({"B": 0}) == {"B": Neighborhood(3, {})}
        assert store.neighborhoods({"A": 0}, directed=True, keep={"B", "E"}) == {"A": Neighborhood(1, {"B": 1})}
        assert store.neighborhoods({"E": 0}, directed=True, keep={"GHOST"}) == {"E": Neighborhood(1, {})}

    # -- deletes -------------------------------------------------------------------------------------

    def test_deleting_an_entity_removes_its_relations_and_nothing_else(self, store: GraphStore) -> None:
        """Deleting an entity deletes its relations too, and nothing else."""
        self.load_traversal_graph(store)
        store.delete_entities(iter(["B", "GHOST"]))
        assert set(store.get_entities(["A", "B", "C", "D", "E"])) == {"A", "C", "D", "E"}
        assert store.get_relations([("A", "B"), ("B", "C"), ("B", "D")]) == {}
        assert store.get_relations([("A", "E")]) == {("A", "E"): edge("E", "A")}
        assert store.neighborhoods(dict.fromkeys("ABCDE")) == {
            "A": Neighborhood(1, {"E": 1}),
            "C": Neighborhood(0, {}),
            "D": Neighborhood(0, {}),
            "E": Neighborhood(1, {"A": 1}),
        }

    def test_deleting_a_relation_either_way_round_keeps_its_endpoints(self, store: GraphStore) -> None:
        """A relation can be deleted from either end; its endpoints stay."""
        self.load_traversal_graph(store)
        store.delete_relations(iter([("B", "A"), ("X", "Y"), ("C", "E")]))
        assert store.get_relations([("A", "B"), ("B", "A")]) == {}
        assert set(store.get_entities(["A", "B"])) == {"A", "B"}
        assert store.get_relations([("C", "B")]) == {("C", "B"): edge("C", "B")}
        assert store.neighborhoods({"A": None, "B": None}) == {
            "A": Neighborhood(1, {"E": 1}),
            "B": Neighborhood(2, {"C": 1, "D": 1}),
        }

    # -- names ---------------------------------------------------------------------------------------

    def test_odd_names_are_stored_and_found_verbatim(self, store: GraphStore) -> None:
        """Names with unicode, quotes, Cypher syntax or inner whitespace are stored and found verbatim."""
        entities = [Entity(name=n, type="thing", description=f"about {n}") for n in ODD_NAMES]
        store.upsert_entities([*entities, Entity(name="ANCHOR")])
        store.upsert_relations([Relation(source=n, target="ANCHOR", description=n, keywords=(n,)) for n in ODD_NAMES])
        assert store.get_entities(ODD_NAMES) == {e.name: e for e in entities}
        assert store.neighborhoods({"ANCHOR": 1}, keep=ODD_NAMES[:3]) == {
            "ANCHOR": Neighborhood(len(ODD_NAMES), dict.fromkeys(ODD_NAMES[:3], 1))
        }
        found = store.get_relations([("ANCHOR", n) for n in ODD_NAMES])
        assert {pair: (r.source, r.description) for pair, r in found.items()} == {
            ("ANCHOR", n): (n, n) for n in ODD_NAMES
        }
        store.delete_entities(ODD_NAMES[:4])
        assert set(store.get_entities([*ODD_NAMES, "ANCHOR"])) == {*ODD_NAMES[4:], "ANCHOR"}

    @pytest.mark.parametrize("bad", [" padded ", "x" * 5000, "bell\x07", ""])
    def test_a_refused_name_writes_nothing(self, store: GraphStore, bad: str) -> None:
        """A batch holding a name the stores refuse raises EntityNameError and writes nothing."""
        with pytest.raises(EntityNameError):
            store.upsert_entities(
                [Entity(name="FINE"), Entity.model_construct(name=bad, type="", description="", source_ids=())]
            )
        with pytest.raises(EntityNameError):
            store.upsert_relations(
                [
                    Relation(source="FINE", target="OTHER"),
                    Relation.model_construct(
                        source="FINE", target=bad, description="", keywords=(), weight=1.0, source_ids=()
                    ),
                ]
            )
        assert store.get_entities(["FINE", "OTHER"]) == {}
        assert store.get_relations([("FINE", "OTHER")]) == {}

    # -- async twins -----------------------------------------------------------------------------------

    def test_async_twins_answer_as_the_sync_methods(self, store: GraphStore) -> None:
        """Every async twin gives the same answer as its sync method."""
        asyncio.run(self._async_twins(store))

    async def _async_twins(self, store: GraphStore) -> None:
        names = [*UNDIRECTED, "GHOST"]
        await store.aupsert_entities(Entity(name=n) for n in ["A", "B", "C", "D", "E", "LONER"])
        await store.aupsert_relations(edge(s, t) for s, t in EDGES)
        await store.aupsert_entities(
            [Entity(name="A", type="hub", description="first")],
            merge=lambda old, new: new.model_copy(update={"description": "merged"}),
        )
        pairs = [("B", "A"), ("B", "C"), ("A", "C")]
        for directed in (False, True):
            expected = UNDIRECTED if not directed else DIRECTED
            assert await store.aneighborhoods(dict.fromkeys(names), directed=directed) == expected
            assert store.neighborhoods(dict.fromkeys(names), directed=directed) == expected
        assert (
            await store.aneighborhoods({"B": 1}, keep={"C"})
            == store.neighborhoods({"B": 1}, keep={"C"})
            == {"B": Neighborhood(3, {"C": 1})}
        )
        entities = await store.aget_entities(iter(names))
        assert entities == store.get_entities(names) and entities["A"] == Entity(
            name="A", type="hub", description="merged"
        )
        relations = await store.aget_relations(iter(pairs))
        assert relations == store.get_relations(pairs) and set(relations) == {("B", "A"), ("B", "C")}
        await store.adelete_relations(iter([("B", "A")]))
        await store.adelete_entities(iter(["D"]))
        assert store.get_relations(pairs) == {("B", "C"): edge("C", "B")}
        assert set(store.get_entities(names)) == {"A", "B", "C", "E", "LONER"}
        assert await store.aneighborhoods({"B": None}) == {"B": Neighborhood(1, {"C": 1})}


# -- the VectorIndex contract ------------------------------------------------------------------------

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


class VectorIndexContract:
    """The :class:`~pathrag.VectorIndex` contract tests; override the ``index`` fixture.

    ``index(self, embedder)`` must return a fresh, empty index that embeds with ``embedder`` (a
    :class:`CompassEmbedder`; a framework store gets it wrapped in its framework's embeddings class).
    Optional methods the core uses when an index has them are checked when present: ``get(id)`` (passage
    texts), ``ids()``, ``len()`` and ``upsert_vectors(items, vectors)`` (reusing imported vectors).

    Class attributes to set for an index that legitimately differs:

    * ``keeps_text = False``: hits carry ``text=""`` instead of the item's text.
    * ``cosine_scores = False``: scores are another similarity than the cosine (still higher is closer).
    """

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
