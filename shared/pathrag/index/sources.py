"""Where a retrieval's text comes from: each item's documents, and filters on their metadata.

The core's retrieval (:mod:`pathrag.query.retrieval`) reads a graph and vector indexes and knows chunk ids
only. An index also knows which documents claim each chunk and the metadata each document was indexed with
(:class:`~pathrag.index.records.DocumentRecord`, kept in the same commit as the document and deleted with
it). :func:`finish` joins the two on one committed state:

* **Sources.** Every item gets the documents of its ``source_ids`` (:attr:`RetrievedItem.documents
  <pathrag.RetrievedItem.documents>`, at most :data:`MAX_ITEM_DOCUMENTS`): a passage its own, a path its
  relations' and entities'.
* **Filters.** With ``RetrievalParams.filter`` (:mod:`pathrag.filters`), only text from the documents whose
  metadata matches reaches the result. A passage is kept when a matching document claims it. A path or an
  entity is written again from the extraction records of the matching documents' chunks alone: each entity
  and relation on it must be stated there (else the item is left out), and its description is the join of
  what those chunks say, never the merged description (or its summary) that other documents fed. The seeds
  (entity names) are kept when a matching document names them. The retrieval runs with more candidates
  than asked (:func:`core_params`) so that what the filter leaves still fills the result.

Passages an importer put in the chunk index (no document claims them) have no documents, and a filter
leaves them out.

Cost: a filtered retrieval finds the matching documents first. In a store, the conditions on string and
number values narrow the documents in SQL (:func:`_prefilter`) before the exact test, so a user's few
documents are found without decoding every document's metadata (``benchmarks/filter_lookup.py`` compares
the two); in memory the documents are tested one by one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..filters import check_filter, predicate
from ..models import Entity, Relation, RetrievalResult, RetrievedItem, ScoredPath, SourceDocument
from ..params import RetrievalParams
from ..query.context import render_chain, render_entity, render_path
from ..sqlite.codec import dumps, unpack_records
from .merging import merge_entity, merge_relation
from .records import RecordTables
from .tables import MemoryRecordTables, SQLiteRecordTables

if TYPE_CHECKING:
    from ..sqlite.store import SQLiteStore

__all__ = [
    "MAX_ITEM_DOCUMENTS",
    "CommittedDocuments",
    "committed_documents",
    "core_params",
    "finish",
    "wanted_params",
]

MAX_ITEM_DOCUMENTS = 16
"""The most documents one item carries (the first its source chunks name): an entity many documents mention
would otherwise carry all of them, metadata and all, on every path through it."""

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a key a JSON path names without quotes

#: How many more candidates a filtered retrieval asks the core for: a filter drops what other documents say.
_PASSAGES_FACTOR, _PATHS_FACTOR, _MAX_PASSAGES = 4, 2, 1000


class CommittedDocuments:
    """The document side of one committed state of an index, for :func:`finish` (read inside
    :meth:`~pathrag.PathRAGIndex.read_committed`). This generic one reads the record tables' mappings (any
    :class:`~pathrag.index.backend.IndexBackend`); the built-in backends have faster ones."""

    def __init__(self, records: RecordTables) -> None:
        self._records = records

    def claims(self, chunk_ids: Iterable[str]) -> dict[str, list[str]]:
        """Chunk id -> the ids of the documents claiming it (sorted), for the live chunks among ``chunk_ids``."""
        found: dict[str, list[str]] = {}
        chunks = self._records.chunks
        for cid in dict.fromkeys(chunk_ids):
            chunk = chunks.get(cid)
            if chunk is not None and chunk.refs:
                found[cid] = sorted(chunk.refs)
        return found

    def metadata(self, doc_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Document id -> its metadata, for the documents among ``doc_ids``."""
        documents = self._records.documents
        return {d: dict(doc.metadata) for d in dict.fromkeys(doc_ids) if (doc := documents.get(d)) is not None}

    def matching_chunks(self, filter: Mapping[str, Any]) -> set[str]:
        """The chunks claimed by a document whose metadata matches ``filter`` (see :mod:`pathrag.filters`)."""
        test = predicate(filter)
        return {cid for doc in self._records.documents.values() if test(doc.metadata) for cid in doc.chunks}

    def records(self, names: Iterable[str], among: set[str]) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        """The extraction records (entity rows, relation rows) of the chunks among ``among`` that mention one
        of ``names``, in chunk id order."""
        mentioning = sorted(set(self._records._mentioning(names)) & among)
        chunks = self._records.chunks
        return [(chunk.entities, chunk.relations) for cid in mentioning if (chunk := chunks.get(cid)) is not None]


class _MemoryDocuments(CommittedDocuments):
    """An index without a directory: the committed rows (a commit being planned is not seen)."""

    def __init__(self, tables: MemoryRecordTables) -> None:
        super().__init__(tables)
        self._tables = tables

    def claims(self, chunk_ids: Iterable[str]) -> dict[str, list[str]]:
        committed = self._tables.committed_chunks
        return {
            cid: sorted(chunk.refs)
            for cid in dict.fromkeys(chunk_ids)
            if (chunk := committed.get(cid)) is not None and chunk.refs
        }

    def metadata(self, doc_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        committed = self._tables.committed_documents
        return {d: dict(doc.metadata) for d in dict.fromkeys(doc_ids) if (doc := committed.get(d)) is not None}

    def matching_chunks(self, filter: Mapping[str, Any]) -> set[str]:
        test = predicate(filter)
        documents = list(self._tables.committed_documents.values())  # a commit lands in place: copied first
        return {cid for doc in documents if test(doc.metadata) for cid in doc.chunks}

    def records(self, names: Iterable[str], among: set[str]) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        committed = self._tables.committed_chunks
        found = []
        for cid in sorted(set(self._tables._mentioning(names)) & among):
            chunk = committed.get(cid)
            if chunk is not None and chunk.refs:
                found.append((chunk.entities, chunk.relations))
        return found


class _SQLiteDocuments(CommittedDocuments):
    """A store: reads of the caller's snapshot (:meth:`~pathrag.sqlite.SQLiteStore.snapshot`), never the
    writer's uncommitted rows."""

    def __init__(self, tables: SQLiteRecordTables, store: SQLiteStore) -> None:
        super().__init__(tables)
        self._store = store

    def claims(self, chunk_ids: Iterable[str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for cid, doc_id in self._store.read(
            "SELECT chunk_id, doc_id FROM doc_chunks WHERE chunk_id IN (SELECT value FROM json_each(?)) "
            "ORDER BY chunk_id, doc_id",
            (dumps(list(dict.fromkeys(chunk_ids))),),
        ):
            found.setdefault(cid, []).append(doc_id)
        return found

    def metadata(self, doc_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        rows = self._store.read(
            "SELECT id, metadata FROM documents WHERE id IN (SELECT value FROM json_each(?))",
            (dumps(list(dict.fromkeys(doc_ids))),),
        )
        return {doc_id: json.loads(metadata) for doc_id, metadata in rows}

    def matching_chunks(self, filter: Mapping[str, Any]) -> set[str]:
        test, (where, params) = predicate(filter), _prefilter(filter)
        wanted = [
            doc_id
            for doc_id, metadata in self._store.stream(f"SELECT id, metadata FROM documents{where}", params)
            if test(json.loads(metadata))  # the exact test: SQLite's JSON reads true as 1, and 1.0 as 1
        ]
        rows = self._store.read(
            "SELECT chunk_id FROM doc_chunks WHERE doc_id IN (SELECT value FROM json_each(?))", (dumps(wanted),)
        )
        return {cid for (cid,) in rows}

    def records(self, names: Iterable[str], among: set[str]) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        store = self._store
        mentioning = {
            cid
            for (cid,) in store.read(
                "SELECT DISTINCT chunk_id FROM mentions WHERE name IN (SELECT value FROM json_each(?))",
                (dumps(sorted(set(names))),),
            )
        }
        wanted = sorted(mentioning & among)
        found = []
        for _, blob in store.read(
            "SELECT id, records FROM chunks WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id", (dumps(wanted),)
        ):
            rows = unpack_records(blob)
            found.append((rows.get("entities", []), rows.get("relations", [])))
        return found


def _prefilter(filter: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """A ``WHERE`` clause keeping (at least) the documents whose metadata may match ``filter``, so that a store
    of many documents is not read whole to find a user's few: the conditions on plain keys whose values are
    strings and numbers, compared by SQLite's JSON functions; the rows it keeps are tested exactly after."""
    clauses, params = [], []
    for key, condition in (check_filter(filter) or {}).items():
        values = condition.get("$in", [condition.get("$eq")])
        if not _PLAIN_KEY.fullmatch(key) or not all(
            isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values
        ):
            continue  # left to the exact test (true, null, lists, keys needing quotes)
        clauses.append("json_extract(metadata, ?) IN (SELECT value FROM json_each(?))")
        params += [f"$.{key}", dumps(values)]
    return (" WHERE " + " AND ".join(clauses), params) if clauses else ("", [])


def committed_documents(records: RecordTables, store: SQLiteStore | None = None) -> CommittedDocuments:
    """The reader of the documents of an index's ``records`` (with its ``store``, when it has one)."""
    if isinstance(records, SQLiteRecordTables) and store is not None:
        return _SQLiteDocuments(records, store)
    if isinstance(records, MemoryRecordTables):
        return _MemoryDocuments(records)
    return CommittedDocuments(records)


def wanted_params(settings: dict[str, Any]) -> RetrievalParams:
    """The settings a retrieval asks for from its keyword arguments: ``params`` (a :class:`RetrievalParams`,
    taken out of ``settings``) with the other fields by name on top.

    >>> wanted_params({"params": RetrievalParams(top_k=5), "theta": 0.1}).top_k
    5
    """
    given = settings.pop("params", None)
    if given is not None and not isinstance(given, RetrievalParams):
        raise TypeError(f"params must be a RetrievalParams, got {type(given).__name__}")
    return (given or RetrievalParams()).override(**settings)


def core_params(params: RetrievalParams) -> RetrievalParams:
    """The settings the core's retrieval runs with for ``params``: without the filter (:func:`finish`
    applies it) and, with one, more passages and paths to choose from.

    >>> core_params(RetrievalParams(filter={"user": "ana"})).num_passages
    400
    """
    if params.filter is None:
        return params
    return params.override(
        filter=None,
        num_passages=max(params.num_passages, min(params.num_passages * _PASSAGES_FACTOR, _MAX_PASSAGES)),
        top_k=params.top_k * _PATHS_FACTOR,
    )


def finish(result: RetrievalResult, documents: CommittedDocuments, params: RetrievalParams) -> RetrievalResult:
    """``result`` (retrieved with :func:`core_params` of ``params``) filtered by ``params.filter`` and with
    each item's documents (see the module docstring). Call it in the same committed read as the retrieval."""
    if params.filter is not None:
        result = _filtered(result, documents, params)
    ids = {cid for item in result.items for cid in item.source_ids}
    claims = documents.claims(ids)
    metadata = documents.metadata({d for doc_ids in claims.values() for d in doc_ids})
    if params.filter is not None:  # a chunk two documents hold: the other one's metadata is not shown either
        test = predicate(params.filter)
        metadata = {d: meta for d, meta in metadata.items() if test(meta)}
    items = []
    for item in result.items:
        doc_ids = [d for d in dict.fromkeys(d for cid in item.source_ids for d in claims.get(cid, ())) if d in metadata]
        found = tuple(SourceDocument(d, metadata[d]) for d in doc_ids[:MAX_ITEM_DOCUMENTS])
        items.append(replace(item, documents=found))
    result.items = items
    return result


def _filtered(result: RetrievalResult, documents: CommittedDocuments, params: RetrievalParams) -> RetrievalResult:
    """Only what the matching documents say (see the module docstring)."""
    allowed = documents.matching_chunks(params.filter or {})
    graph_items = [item for item in result.items if item.kind != "passage"]
    names = {n for item in graph_items for n in item.nodes} | set(result.seeds)
    said = _Statements(documents.records(names, allowed) if names and allowed else [])
    paths: list[RetrievedItem] = []
    fill: list[RetrievedItem] = []
    passages: list[RetrievedItem] = []
    for item in result.items:
        if item.kind == "passage":
            if item.id in allowed and len(passages) < params.num_passages:
                passages.append(item)
            continue
        kept = said.item(item, result.context)
        if kept is not None:
            (paths if kept.kind == "path" else fill).append(kept)
    result.seeds = [name for name in result.seeds if said.names(name)]
    # the fill makes up for missing key paths: as many as the paths left lack
    result.items = [*paths, *fill[: max(params.top_k - len(paths), 0)], *passages]
    result.top_k = params.top_k
    return result


class _Statements:
    """The entity and relation records of the matching documents' chunks, by name and by pair."""

    def __init__(self, records: Sequence[tuple[list[dict[str, Any]], list[dict[str, Any]]]]) -> None:
        self._entities: dict[str, list[Entity]] = {}
        self._relations: dict[frozenset[str], list[Relation]] = {}
        self._ends: dict[str, list[str]] = {}  # name -> source ids of the relation records naming it
        for entities, relations in records:
            for row in entities:
                entity = Entity.model_validate(row)
                self._entities.setdefault(entity.name, []).append(entity)
            for row in relations:
                relation = Relation.model_validate(row)
                self._relations.setdefault(frozenset(relation.pair), []).append(relation)
                for end in relation.pair:
                    self._ends.setdefault(end, []).extend(relation.source_ids)

    def names(self, name: str) -> bool:
        """Whether a matching document names ``name`` (as an entity, or as a relation's end)."""
        return name in self._entities or name in self._ends

    def entity(self, name: str) -> Entity | None:
        if not self.names(name):
            return None
        return merge_entity(name, self._entities.get(name, []), extra_source_ids=self._ends.get(name, ()))

    def relation(self, a: str, b: str) -> Relation | None:
        records = self._relations.get(frozenset((a, b)))
        return merge_relation(records) if records else None

    def item(self, item: RetrievedItem, layout: str) -> RetrievedItem | None:
        """``item`` written from these records alone, or ``None`` when they do not state all of it."""
        names = item.nodes
        entities = {name: entity for name in names if (entity := self.entity(name)) is not None}
        if len(entities) != len(names) or not names:
            return None
        if item.kind == "entity" or len(names) < 2:
            (name,) = names[:1]
            entity = entities[name]
            return replace(item, text=render_entity(name, entity), source_ids=entity.source_ids)
        hops = [self.relation(a, b) for a, b in zip(names, names[1:], strict=False)]
        if any(hop is None for hop in hops):
            return None
        relations = [hop for hop in hops if hop is not None]
        if layout == "paths":
            path = item.path or ScoredPath(nodes=names, score=item.score)
            text = render_path(path, entities, {r.pair: r for r in relations})
            stated: list[Entity | Relation] = [*entities.values(), *relations]
            sources = [s for record in stated for s in record.source_ids]
        else:
            text = render_chain(names, relations)
            sources = [s for r in relations for s in r.source_ids]
        return replace(item, text=text, source_ids=tuple(dict.fromkeys(sources)))
