"""The :class:`~pathrag.GraphStore`, :class:`~pathrag.VectorIndex` and index backend
(:class:`~pathrag.backend.IndexBackend`) contracts as test suites: subclass one once per store.

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

``IndexBackendContract`` runs a :class:`~pathrag.PathRAGIndex` over a backend, with a
:class:`ScriptedModel` (extraction records written into the chunks as ``ENTITY``/``LINK`` lines) and a
:class:`FaultyEmbedder` (hashing vectors, made to fail on the n-th call): an insert seen all at once by
committed reads (from the plan and from another thread while the change set is applied), one committed
read seeing one state throughout, ``stats()`` agreeing with what was inserted and never counting half a
commit, a write failing while it plans or while its change set is applied leaving documents, graph,
vectors and stats as they were, insert then delete restoring them, unchanged documents inserted again
committing nothing, two writers of one index taking turns with neither lost, and a saved copy (and, for a
backend that keeps what it commits, the storage opened again) giving the same stats and retrieval. Its
fixture is ``make_index``: a factory ``make_index(name, *, llm, embedder, config)`` of indexes over the
backend's storage ``name``; set ``persistent = False`` for a backend that keeps nothing, and override
``commit_count(index)`` if it counts commits::

    class TestMyBackend(IndexBackendContract):
        @pytest.fixture
        def make_index(self, tmp_path):
            return lambda name, **kwargs: PathRAGIndex(tmp_path / name, **kwargs)

The async checks run with ``asyncio.run`` inside sync tests, so no asyncio pytest plugin is needed.
For pytest's detailed assertion messages, call ``pytest.register_assert_rewrite("pathrag.testing")``
(in ``conftest.py``, or before the import).
"""

from __future__ import annotations

import asyncio
import functools
import math
import re
import threading
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from . import Document, IndexConfig, PathRAGIndex
from .backend import IndexBackend
from .graph import GraphStore, Neighborhood
from .models import Entity, Relation, RetrievalResult
from .names import EntityNameError
from .vectors import Embedder, HashingEmbedder, VectorHit, VectorIndex, VectorItem

__all__ = [
    "CompassEmbedder",
    "FaultyEmbedder",
    "GraphStoreContract",
    "IndexBackendContract",
    "ScriptedModel",
    "VectorIndexContract",
]

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

_REAL_TEXT = re.compile(r"NOW THE REAL TEXT\nText:\n(.*?)\nOutput:\n", re.S)


class ScriptedModel:
    """A deterministic language model for the contracts: a chunk line ``ENTITY name | type | description``
    or ``LINK source | target | description | keywords | strength`` comes back as the matching extraction
    record; gleaning finds nothing more; a summary prompt gets a short summary. ``delay`` seconds per call
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
        found = _REAL_TEXT.findall(prompt)
        text = found[-1] if found else ""
        self.texts.append(text)
        if prompt.rstrip().endswith("Missing records:"):
            return "<|COMPLETE|>"
        records = []
        for line in text.splitlines():
            kind, _, rest = line.partition(" ")
            fields = "<|>".join(f.strip() for f in rest.split("|"))
            if kind == "ENTITY":
                records.append(f'("entity"<|>{fields})')
            elif kind == "LINK":
                records.append(f'("relationship"<|>{fields})')
        return "##\n".join(records) + "<|COMPLETE|>"


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
        """The index's backend is an :class:`~pathrag.backend.IndexBackend`; a new index holds nothing."""
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
