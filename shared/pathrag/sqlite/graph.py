"""The graph on the store: :class:`SQLiteGraphStore`, a :class:`~pathrag.GraphStore` on the ``entities``
and ``relations`` tables, where each hop of a path search is a few indexed queries."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

from typing_extensions import override

from ..graphs.base import BaseGraphStore, Merge, Neighborhood, stored_pair
from ..models import Entity, Relation
from ..names import check_name
from .codec import IN_JSON, REL_COLUMNS, REL_FIELDS, dumps, entity_of, entity_row, relation_of, relation_row
from .store import SQLiteStore

__all__ = ["SQLiteGraphStore"]


class SQLiteGraphStore(BaseGraphStore):
    """A :class:`~pathrag.GraphStore` on the ``entities`` and ``relations`` tables of a store.

    Same semantics as :class:`~pathrag.NetworkXGraphStore` (a directed graph whose relations are, unless
    ``directed_relations``, identified by their unordered pair and stored in the direction first seen).
    Reads see the last committed state; writes join the store's open transaction. Each hop of a path
    search is two indexed queries for the whole frontier, whatever the size of the graph: the degrees are
    read from the ``degrees`` table the store keeps (format 3), or counted on a store too old to keep them.
    """

    # The async twins call the sync methods on the caller's thread, not in a worker thread: a reader's
    # snapshot (SQLiteStore.snapshot) and the writer's transaction lock belong to the thread that opened
    # them, so `with store.snapshot(): await graph.aget_entities(...)` must read on that same thread.
    async_in_thread = False

    def __init__(self, store: SQLiteStore, *, directed_relations: bool = False) -> None:
        self.store = store
        self.directed_relations = directed_relations

    # -- traversal ---------------------------------------------------------------------------------

    def _adjacency_sql(self, directed: bool, filtered: bool) -> str:
        keep = f" AND target IN {IN_JSON}" if filtered else ""
        out = f"SELECT source, target FROM relations WHERE source IN {IN_JSON} AND target != source{keep}"
        if directed:
            return out
        keep_in = f" AND source IN {IN_JSON}" if filtered else ""
        return (
            f"{out} UNION SELECT target, source FROM relations WHERE target IN {IN_JSON} AND source != target{keep_in}"
        )

    def _adjacency(
        self, nodes: Collection[str], directed: bool, keep: Collection[str] | None = None
    ) -> tuple[str, list[str]]:
        """The query of the ``(node, neighbour)`` pairs of ``nodes`` (only the neighbours in ``keep``, if
        given), and its parameters."""
        names = dumps(list(nodes))
        if keep is None:
            return self._adjacency_sql(directed, False), [names] if directed else [names, names]
        kept = dumps(list(keep))
        return self._adjacency_sql(directed, True), [names, kept] if directed else [names, kept, names, kept]

    def _degrees(self, nodes: Collection[str], directed: bool) -> dict[str, int]:
        """Traversal degrees counted from the relations (a store of format 2 keeps none): every node of
        ``nodes`` present, 0 for one without relations."""
        if not nodes:
            return {}
        names = dumps(list(nodes))
        rows = self.store.read(
            f"SELECT source, COUNT(*) FROM ({self._adjacency_sql(directed, False)}) GROUP BY source",
            (names,) if directed else (names, names),
        )
        found = dict.fromkeys(nodes, 0)
        found.update(rows)
        return found

    @property
    def kept_degrees(self) -> bool:
        """Whether the store keeps its degrees (format 3 on): then a hop reads them instead of counting."""
        return self.store.format_version >= 3

    def _known(self, requests: Iterable[str], directed: bool) -> dict[str, int]:
        """The requested names that are entities, with their traversal degree: one query."""
        names = dumps([str(n) for n in requests])
        if not self.kept_degrees:
            known = [row[0] for row in self.store.read(f"SELECT name FROM entities WHERE name IN {IN_JSON}", (names,))]
            return self._degrees(known, directed)
        column = "out_degree" if directed else "degree"
        return dict(
            self.store.read(
                f"SELECT e.name, COALESCE(d.{column}, 0) FROM entities e LEFT JOIN degrees d ON d.name = e.name "
                f"WHERE e.name IN {IN_JSON}",
                (names,),
            )
        )

    def _hop(
        self, whole: Sequence[str], capped: Sequence[str], keep: Collection[str], directed: bool
    ) -> list[tuple[Any, ...]]:
        """``(node, neighbour, neighbour's degree)`` for every neighbour of ``whole`` and every neighbour of
        ``capped`` in ``keep``: one query on a store keeping its degrees (``None`` degrees otherwise)."""
        asked = ([self._adjacency(whole, directed)] if whole else []) + (
            [self._adjacency(capped, directed, keep)] if capped and keep else []
        )
        parts = [sql for sql, _ in asked]
        params = [param for _, values in asked for param in values]
        if not parts:
            return []
        pairs = " UNION ".join(parts)
        if not self.kept_degrees:
            return [(u, v, None) for u, v in self.store.read(pairs, params)]
        column = "out_degree" if directed else "degree"
        return self.store.read(
            f"SELECT p.source, p.target, COALESCE(d.{column}, 0) FROM ({pairs}) p "
            "LEFT JOIN degrees d ON d.name = p.target",
            params,
        )

    @override
    def neighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        # Two queries on a store keeping its degrees (the requested entities with their degrees, then every
        # listed neighbour with its degree), four on an older one (the degrees counted from the relations).
        if not requests:
            return {}
        degree = self._known(requests, directed)
        asked = [u for u in requests if u in degree]
        linked = [u for u in asked if degree[u]]  # a degree of 0: no neighbour to look for
        whole = [u for u in linked if (limit := requests[u]) is None or degree[u] <= limit]
        listed = set(whole)
        capped = [u for u in linked if u not in listed]
        neighbours: dict[str, list[str]] = {u: [] for u in asked}
        unknown: set[str] = set()
        for u, v, d in self._hop(whole, capped, keep, directed):
            neighbours[u].append(v)
            if d is None:
                unknown.add(v)
            elif v not in degree:
                degree[v] = d
        degree.update(self._degrees(unknown.difference(degree), directed))
        return {u: Neighborhood(degree[u], {v: degree[v] for v in sorted(neighbours[u])}) for u in asked}

    # -- reads -------------------------------------------------------------------------------------

    @override
    def get_entities(self, names: Iterable[str]) -> dict[str, Entity]:
        names = list(names)
        if not names:
            return {}
        rows = {
            row[0]: row
            for row in self.store.read(
                f"SELECT name, type, description, source_ids FROM entities WHERE name IN {IN_JSON}", (dumps(names),)
            )
        }
        return {name: entity_of(rows[name]) for name in names if name in rows}

    def _relation_rows(self, pairs: Sequence[tuple[str, str]], *, writer: bool) -> dict[tuple[str, str], Relation]:
        """Stored relations whose (source, target) is one of ``pairs`` or (undirected) its reverse."""
        if not pairs:
            return {}
        wanted = [list(p) for p in pairs]
        if not self.directed_relations:
            wanted += [[t, s] for s, t in pairs]
        sql = (
            f"SELECT {', '.join('r.' + c for c in REL_FIELDS)} FROM json_each(?) j "
            "JOIN relations r ON r.source = json_extract(j.value, '$[0]') AND r.target = json_extract(j.value, '$[1]')"
        )
        rows = (self.store.wread if writer else self.store.read)(sql, (dumps(wanted),))
        return {(row[0], row[1]): relation_of(row) for row in rows}

    @override
    def get_relations(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Relation]:
        pairs = [(source, target) for source, target in pairs]
        stored = self._relation_rows(pairs, writer=False)
        found: dict[tuple[str, str], Relation] = {}
        for pair in pairs:
            key = stored_pair(stored, *pair, directed=self.directed_relations)
            if key is not None:
                found[pair] = stored[key]
        return found

    def iter_entities(self) -> Iterator[Entity]:
        """Every entity, in insertion order (streamed)."""
        for row in self.store.iread("SELECT name, type, description, source_ids FROM entities ORDER BY rowid"):
            yield entity_of(row)

    def iter_relations(self) -> Iterator[Relation]:
        """Every relation, in insertion order (streamed)."""
        for row in self.store.iread(f"SELECT {REL_COLUMNS} FROM relations ORDER BY rowid"):
            yield relation_of(row)

    def __len__(self) -> int:
        return int(self.store.read("SELECT COUNT(*) FROM entities")[0][0])

    def number_of_relations(self) -> int:
        """How many relations are stored."""
        return int(self.store.read("SELECT COUNT(*) FROM relations")[0][0])

    # -- writes ------------------------------------------------------------------------------------

    @override
    def upsert_entities(self, entities: Iterable[Entity], *, merge: Merge[Entity] | None = None) -> None:
        entities = list(entities)
        if not entities:
            return
        for entity in entities:  # refused, never renamed: see pathrag.names.check_name
            check_name(entity.name)
        with self.store.transaction():
            if merge is not None:
                rows = self.store.wread(
                    f"SELECT name, type, description, source_ids FROM entities WHERE name IN {IN_JSON}",
                    (dumps([e.name for e in entities]),),
                )
                current = {row[0]: entity_of(row) for row in rows}
                merged = []
                for entity in entities:
                    if entity.name in current:
                        entity = merge(current[entity.name], entity)
                    current[entity.name] = entity
                    merged.append(entity)
                entities = merged
            self.store.executemany(
                "INSERT INTO entities VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET type = excluded.type, "
                "description = excluded.description, source_ids = excluded.source_ids",
                [entity_row(e) for e in entities],
            )

    @override
    def upsert_relations(self, relations: Iterable[Relation], *, merge: Merge[Relation] | None = None) -> None:
        relations = list(relations)
        if not relations:
            return
        for name in dict.fromkeys(n for r in relations for n in r.pair):  # each name once
            check_name(name)
        with self.store.transaction():
            stored = self._relation_rows([r.pair for r in relations], writer=True)
            removed: dict[tuple[str, str], None] = {}
            written: dict[tuple[str, str], Relation] = {}
            for relation in relations:
                key = stored_pair(stored, relation.source, relation.target, directed=self.directed_relations)
                if key is not None and merge is not None:
                    relation = merge(stored[key], relation)
                if key is not None and key != relation.pair:  # the merge may have re-oriented it
                    del stored[key]
                    written.pop(key, None)
                    removed[key] = None
                removed.pop(relation.pair, None)
                stored[relation.pair] = written[relation.pair] = relation
            ends = dict.fromkeys(n for r in written.values() for n in r.pair)
            self.store.executemany("INSERT OR IGNORE INTO entities VALUES (?, '', '', '[]')", [(n,) for n in ends])
            self.store.executemany("DELETE FROM relations WHERE source = ? AND target = ?", list(removed))
            self.store.insert_rows(  # "WHERE true": an upsert's SELECT needs one to parse
                f"INSERT INTO relations ({REL_COLUMNS}) SELECT {REL_COLUMNS} FROM {{rows}} WHERE true ORDER BY rowid "
                "ON CONFLICT (source, target) DO UPDATE SET description = excluded.description, "
                "keywords = excluded.keywords, weight = excluded.weight, source_ids = excluded.source_ids",
                REL_FIELDS,
                [relation_row(r) for r in written.values()],
            )

    @override
    def delete_entities(self, names: Iterable[str]) -> None:
        names = dumps(list(names))
        if names == "[]":
            return
        with self.store.transaction():
            self.store.execute(
                f"DELETE FROM relations WHERE source IN {IN_JSON} OR target IN {IN_JSON}", (names, names)
            )
            self.store.execute(f"DELETE FROM entities WHERE name IN {IN_JSON}", (names,))

    @override
    def delete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        pairs = [(source, target) for source, target in pairs]
        if not pairs:
            return
        with self.store.transaction():
            stored = self._relation_rows(pairs, writer=True)
            keys = {
                key: None
                for pair in pairs
                if (key := stored_pair(stored, *pair, directed=self.directed_relations)) is not None
            }
            self.store.executemany("DELETE FROM relations WHERE source = ? AND target = ?", list(keys))

    def __repr__(self) -> str:
        return f"SQLiteGraphStore({self.store.path})"
