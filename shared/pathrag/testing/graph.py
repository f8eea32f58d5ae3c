"""The :class:`~pathrag.GraphStore` contract as a test suite: :class:`GraphStoreContract` (see
:mod:`pathrag.testing`)."""

from __future__ import annotations

import asyncio
from typing import TypeVar

import pytest

from ..graphs.base import GraphStore, Neighborhood
from ..models import Entity, Relation
from ..names import EntityNameError

__all__ = ["GraphStoreContract"]

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
