"""The index's document and chunk records, and how they are kept in the store.

A :class:`DocumentRecord` says which chunks a document is made of; a :class:`ChunkRecord` holds a
chunk's text, the entity and relation records extracted from it, and which documents claim it
(``refs``). The document rows are the commit record: a chunk is live while some document claims it.
:class:`RecordTables` keeps both tables (a dict in memory, or rows of a :class:`~pathrag.sqlite.SQLiteStore`
fetched on first use: :class:`MemoryRecordTables`, :class:`SQLiteRecordTables`) together with the entity
names each chunk mentions, and writes every change the way a crash-safe commit needs it (see
:mod:`pathrag.index.backend`). :class:`StringTable` is the key -> text table of the LLM answer cache and the
summaries.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from typing_extensions import override

from ..ids import RECORD_CHUNK_LIKE, is_record_chunk
from ..models import Entity, Relation
from ..sqlite.codec import dumps, mention_rows, pack_records, pack_text, unpack_records, unpack_text
from ..sqlite.store import SQLiteStore

__all__ = [
    "ChunkRecord",
    "DocumentRecord",
    "LazyRows",
    "MemoryRecordTables",
    "RecordTables",
    "SQLiteRecordTables",
    "SQLiteStringTable",
    "StringTable",
    "cited",
]

V = TypeVar("V")


class _Absent:
    """The row of a key a commit deleted (in its layer, see :class:`LayeredRows`)."""


_ABSENT = _Absent()


@dataclass
class DocumentRecord:
    """A document of the index: the hash of its content, its chunk ids in order, its metadata, and the
    chunks whose extraction failed (extracted again by the next insert of the document)."""

    hash: str
    chunks: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        """The record as the store's snapshot writer takes it."""
        return {"hash": self.hash, "chunks": list(self.chunks), "metadata": self.metadata, "failed": list(self.failed)}


@dataclass
class ChunkRecord:
    """A chunk: its text (empty for the records of an import), its extraction records as stored (JSON
    rows of :class:`~pathrag.Entity` and :class:`~pathrag.Relation`) and ``refs``: document id -> the
    chunk's position in it. A chunk no document claims (empty ``refs``) is not live."""

    id: str
    text: str
    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)
    refs: dict[str, int] = field(default_factory=dict)
    validated: tuple[Sequence[Entity], Sequence[Relation]] | None = field(default=None, compare=False, repr=False)
    """The records as the models they were made from, row for row, while the writer that stored them holds
    it (an import's): a rebuild takes them instead of validating the rows again (10⁵ a batch)."""

    def entity(self, n: int) -> Entity:
        """The ``n``-th entity record as a model."""
        return self.validated[0][n] if self.validated else Entity.model_validate(self.entities[n])

    def relation(self, n: int) -> Relation:
        """The ``n``-th relation record as a model."""
        return self.validated[1][n] if self.validated else Relation.model_validate(self.relations[n])

    def mentioned(self) -> list[str]:
        """The entity names the chunk's records name, relation ends included (sorted, distinct)."""
        return [name for name, _ in self.mentions()]

    def mentions(self) -> list[tuple[str, int]]:
        """``(name, describes)`` of each name the chunk's records name (see
        :func:`~pathrag.sqlite.codec.mention_rows`)."""
        return mention_rows(self.text, self.entities, self.relations)

    def row(self) -> dict[str, Any]:
        """The record as the store's snapshot writer takes it (no ``refs``: the documents hold them)."""
        return {"id": self.id, "text": self.text, "entities": self.entities, "relations": self.relations}


def cited(chunks: Iterable[ChunkRecord]) -> set[str]:
    """The chunk ids the records of these chunks cite as their sources."""
    return {sid for chunk in chunks for r in (*chunk.entities, *chunk.relations) for sid in r.get("source_ids", ())}


class LazyRows(MutableMapping[str, V]):
    """Rows of a store table, fetched by key on first use and then kept with this process's changes;
    iterating fetches the rest. Without ``fetch`` it is a plain dict (an in-memory index)."""

    def __init__(
        self,
        fetch: Callable[[list[str]], dict[str, V]] | None = None,
        fetch_all: Callable[[], dict[str, V]] | None = None,
    ) -> None:
        self._rows: dict[str, V] = {}
        self._absent: set[str] = set()  # known not to exist (or deleted here): never fetched again
        self._fetch, self._fetch_all = fetch, fetch_all
        self._complete = fetch is None

    def prefetch(self, keys: Iterable[str]) -> None:
        """Fetch the rows of ``keys`` not known yet, in one query."""
        if self._complete:
            return
        wanted = [k for k in dict.fromkeys(keys) if k not in self._rows and k not in self._absent]
        if wanted:
            assert self._fetch is not None
            found = self._fetch(wanted)
            self._rows.update(found)
            self._absent.update(k for k in wanted if k not in found)

    def peek(self, key: str) -> tuple[bool, V | None]:
        """Without a query: whether the row of ``key`` is known here, and then the row (``None``: it does
        not exist, or was deleted here)."""
        if key in self._rows:
            return True, self._rows[key]
        return self._complete or key in self._absent, None

    def __getitem__(self, key: str) -> V:
        row = self._rows.get(key, _ABSENT)  # fetched already: no query (a rebuild looks 10⁵ rows up)
        if isinstance(row, _Absent):
            self.prefetch([key])
            return self._rows[key]
        return row

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        if key in self._rows:
            return True
        self.prefetch([key])
        return key in self._rows

    def __setitem__(self, key: str, value: V) -> None:
        self._rows[key] = value
        self._absent.discard(key)

    def __delitem__(self, key: str) -> None:
        self.prefetch([key])
        del self._rows[key]
        self._absent.add(key)

    def __iter__(self) -> Iterator[str]:
        if not self._complete:
            assert self._fetch_all is not None
            for key, row in self._fetch_all().items():
                if key not in self._rows and key not in self._absent:
                    self._rows[key] = row
            self._complete = True
        return iter(list(self._rows))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class LayeredRows(LazyRows[V]):
    """The rows of an index without a directory: the committed rows (:attr:`committed`: what readers
    see) and, while a commit is open (:meth:`open`), that commit's changes over them: reads through this
    mapping see both, writes change only the layer, :meth:`publish` makes it committed (in place) and
    :meth:`drop` forgets it. Outside a commit, writes go to the committed rows."""

    def __init__(self) -> None:
        super().__init__()
        self.committed: dict[str, V] = self._rows
        self._layer: dict[str, V | _Absent] | None = None
        self._deleted: set[str] = set()  # keys deleted by the open commit (set again: they move to the end)

    def open(self) -> None:
        """A commit opens: writes go to its layer from now on."""
        self._layer, self._deleted = {}, set()

    def layer(self) -> dict[str, V | _Absent]:
        """The open commit's changes: key -> new row (:data:`_ABSENT`: deleted); empty with none open."""
        return dict(self._layer or {})

    def publish(self) -> None:
        """The commit lands: its changes become committed rows (a deleted row set again moves to the end)."""
        layer, deleted = self._layer or {}, self._deleted
        self._layer, self._deleted = None, set()
        for key, row in layer.items():
            if key in deleted:
                self._rows.pop(key, None)
            if isinstance(row, _Absent):
                self._rows.pop(key, None)
            else:
                self._rows[key] = row

    def is_open(self) -> bool:
        """Whether a commit's layer is open."""
        return self._layer is not None

    def in_layer(self, key: str) -> bool:
        """Whether the open commit changed (or deleted) the row of ``key``."""
        return self._layer is not None and key in self._layer

    def drop(self) -> None:
        """The commit failed: its changes are forgotten."""
        self._layer, self._deleted = None, set()

    @override
    def prefetch(self, keys: Iterable[str]) -> None:
        pass

    @override
    def __getitem__(self, key: str) -> V:
        if self._layer is not None and key in self._layer:
            row = self._layer[key]
            if isinstance(row, _Absent):
                raise KeyError(key)
            return row
        return self._rows[key]

    @override
    def __contains__(self, key: object) -> bool:
        if self._layer is not None and key in self._layer:
            return not isinstance(self._layer[key], _Absent)
        return key in self._rows

    @override
    def __setitem__(self, key: str, value: V) -> None:
        if self._layer is None:
            self._rows[key] = value
        else:
            self._layer[key] = value

    @override
    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        if self._layer is None:
            del self._rows[key]
        else:
            self._layer[key] = _ABSENT
            self._deleted.add(key)

    @override
    def __iter__(self) -> Iterator[str]:
        layer = self._layer
        if layer is None:
            return iter(list(self._rows))
        # the committed order, a row deleted and set again (or new) at the end, as publish() leaves them
        moved = self._deleted
        kept = [k for k in self._rows if k not in moved and not isinstance(layer.get(k), _Absent)]
        fresh = [k for k, row in layer.items() if not isinstance(row, _Absent) and (k in moved or k not in self._rows)]
        return iter(kept + fresh)


def _fetch_documents(store: SQLiteStore, ids: list[str] | None) -> dict[str, DocumentRecord]:
    """Document rows (all of them for ``ids=None``) with their chunk lists, as the writer sees them."""
    where, params = ("WHERE id IN (SELECT value FROM json_each(?))", (dumps(ids),)) if ids is not None else ("", ())
    docs = {
        doc_id: DocumentRecord(content, [], json.loads(metadata), json.loads(failed))
        for doc_id, content, metadata, failed in store.wread(
            f"SELECT id, hash, metadata, failed FROM documents {where} ORDER BY rowid", params
        )
    }
    where = where.replace("WHERE id", "WHERE doc_id")
    for doc_id, _, cid in store.wread(
        f"SELECT doc_id, position, chunk_id FROM doc_chunks {where} ORDER BY doc_id, position", params
    ):
        if doc_id in docs:
            docs[doc_id].chunks.append(cid)
    return docs


def _fetch_chunks(store: SQLiteStore, ids: list[str] | None) -> dict[str, ChunkRecord]:
    """Chunk rows with their records and ``refs`` (document id -> position; the document rows are the
    commit record: they alone say which chunks are live). Called for a chunk before any document of the
    running operation changes its claim on it, so the stored claims are the current ones."""
    where, params = ("WHERE id IN (SELECT value FROM json_each(?))", (dumps(ids),)) if ids is not None else ("", ())
    chunks = {}
    for cid, text, records in store.wread(f"SELECT id, text, records FROM chunks {where} ORDER BY rowid", params):
        rows = unpack_records(records)
        chunks[cid] = ChunkRecord(cid, text, rows.get("entities", []), rows.get("relations", []))
    where = where.replace("WHERE id", "WHERE chunk_id")
    for cid, doc_id, position in store.wread(f"SELECT chunk_id, doc_id, position FROM doc_chunks {where}", params):
        if cid in chunks:
            chunks[cid].refs[doc_id] = position
    return chunks


class RecordTables:
    """The document and chunk records of one index, and which chunks mention each entity name.

    The commit logic is here; where the rows live is a subclass's: :class:`MemoryRecordTables` (dicts) or
    :class:`SQLiteRecordTables` (rows of a store fetched on first use). A commit changes the records in
    memory (:meth:`set_document`, :meth:`claim`, :meth:`unref`, :meth:`drop_chunks`; in a layer of their
    own for :class:`MemoryRecordTables`) and then writes them in its transaction (:meth:`write_commit`); a
    chunk's extraction is kept the moment it arrives (:meth:`store_chunk`).
    """

    def __init__(self) -> None:
        self.documents: LazyRows[DocumentRecord] = LazyRows()
        self.chunks: LazyRows[ChunkRecord] = LazyRows()
        self._dirty: set[str] = set()  # documents changed by the open commit
        self._dropped: set[str] = set()  # chunks it dropped

    # -- where the rows live (the subclasses) ------------------------------------------------------

    def reset(self) -> None:
        """Forget what was read (a store's rows are read again: after a failed commit, or another's)."""

    def note_mentions(self, chunk: ChunkRecord, *, forget: bool = False) -> None:
        """Keep (or forget) which entity names the chunk mentions."""
        raise NotImplementedError

    def _save_chunk(self, record: ChunkRecord) -> ChunkRecord:
        """Keep a chunk's extraction records now; returns the record kept."""
        raise NotImplementedError

    def _mentioning(self, names: Iterable[str]) -> dict[str, dict[str, bool]]:
        """The chunks (live or not) whose records mention one of ``names``: chunk id -> {each of those names
        it mentions: whether it may describe it (see :meth:`ChunkRecord.mentions`)}."""
        raise NotImplementedError

    def _record_chunk_ids(self) -> list[str]:
        """Ids of the record chunks (``records-…``), live or not."""
        raise NotImplementedError

    def chunk_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The text of each live chunk among ``ids`` (unknown, released and record-only chunks are left out)."""
        raise NotImplementedError

    def write_commit(self) -> None:
        """Write the document rows this commit changed and delete the chunks it dropped (inside its
        transaction)."""
        self._dirty, self._dropped = set(), set()

    def begin_undo(self) -> None:
        """A commit begins (in memory: its changes go to a layer over the committed rows from now on)."""

    def end_undo(self) -> None:
        """The commit ended (in memory: its layer was published by :meth:`write_commit`)."""

    def undo(self) -> None:
        """The commit failed (in memory: its layer is dropped, the committed rows were never changed)."""

    def _keep_chunk(self, cid: str) -> None:
        """Chunk ``cid`` is about to change (in memory: the commit's layer gets a copy of its own to change)."""

    # -- the commit logic --------------------------------------------------------------------------

    def store_chunk(
        self,
        cid: str,
        text: str,
        entities: list[dict[str, Any]],
        relations: list[dict[str, Any]],
        *,
        validated: tuple[Sequence[Entity], Sequence[Relation]] | None = None,
    ) -> ChunkRecord:
        """Keep a chunk's extraction records and write them at once (no document claims it yet);
        ``validated``: the models the rows were dumped from, if the caller has them.

        In a store this is its own tiny transaction, made at once and outside the commit's lock: a crash
        later on does not lose the LLM's work. The id is the text's hash, so another process may store the
        same chunk meanwhile: the first one stored is kept, and returned (a commit merges what it read).
        """
        self._keep_chunk(cid)
        record = self._save_chunk(ChunkRecord(cid, text, entities, relations, validated=validated))
        self.chunks[cid] = record
        return record

    def claim(self, cid: str, doc_id: str, position: int) -> None:
        """Record that chunk ``cid`` is at ``position`` of document ``doc_id``."""
        self._keep_chunk(cid)
        self.chunks[cid].refs[doc_id] = position

    def unref(self, doc_id: str, chunk_ids: Iterable[str]) -> set[str]:
        """Drop ``doc_id``'s claim on its chunks; return the chunks nobody claims any more."""
        orphaned = set()
        for cid in chunk_ids:
            if cid in self.chunks:
                self._keep_chunk(cid)  # first: it may give the commit a copy of its own to change
                chunk = self.chunks[cid]
                chunk.refs.pop(doc_id, None)
                if not chunk.refs:
                    orphaned.add(cid)
        return orphaned

    def drop_chunks(self, gone: list[str]) -> None:
        """Remove chunks no document claims, with their mentions (their rows go at :meth:`write_commit`)."""
        for cid in gone:
            self._keep_chunk(cid)
            chunk = self.chunks.pop(cid, None)
            if chunk is not None:
                self.note_mentions(chunk, forget=True)
        self._dropped.update(gone)

    def live_mentions(self, names: Iterable[str]) -> dict[str, dict[str, bool]]:
        """The live chunks mentioning any of ``names``, in a stable order (by document, sorted by id, then
        position in it): chunk id -> {each of those names it mentions: whether it may describe it}. Only
        the mentions are read, not the chunks' records (see :meth:`read_chunks`).

        >>> tables = MemoryRecordTables()
        >>> _ = tables.store_chunk("c1", "", [{"name": "A"}], [{"source": "A", "target": "B"}])
        >>> tables.claim("c1", "doc", 0)
        >>> tables.live_mentions(["A", "B"])
        {'c1': {'A': True, 'B': False}}
        """
        found = self._mentioning(names)
        order = self._claimed(set(found))
        return {cid: found[cid] for cid in sorted(order, key=order.__getitem__)}

    def read_chunks(self, cids: list[str]) -> Iterator[ChunkRecord]:
        """The chunks ``cids``, in that order, all among the last :meth:`live_mentions`' (a write reads only
        them, so it costs the same whatever the store's size).

        Yielded one at a time: in a store, a chunk the commit has not read yet is read for the iteration
        and not kept (a later batch of a bulk import naming earlier ones' entities reads their record
        chunks a group at a time, not all of them at once)."""
        return self._read_in_order(cids)

    def _claimed(self, cids: set[str]) -> dict[str, tuple[str, int]]:
        """Of the chunks ``cids``, the live ones, each with its first claim: (document id, position)."""
        chunks = self.chunks
        chunks.prefetch(cids)
        return {
            cid: (doc_id, position)
            for cid in cids
            if (chunk := chunks.get(cid)) and chunk.refs
            for doc_id, position in [min(chunk.refs.items())]
        }

    def _read_in_order(self, cids: list[str]) -> Iterator[ChunkRecord]:
        """The chunks ``cids`` (live, as :meth:`_claimed` found them), in that order."""
        chunks = self.chunks
        return (chunks[cid] for cid in cids)

    def live_record_chunks(self) -> list[ChunkRecord]:
        """The record chunks (imports, :meth:`~pathrag.PathRAGIndex.add_records`) some document still claims."""
        return [chunk for cid in self._record_chunk_ids() if (chunk := self.chunks.get(cid)) is not None and chunk.refs]

    def start_commit(self) -> None:
        """A commit begins: no row changed by it yet."""
        self._dirty, self._dropped = set(), set()

    def changed(self) -> bool:
        """Whether the open commit changed a document or dropped a chunk."""
        return bool(self._dirty or self._dropped)

    def set_document(self, doc_id: str, doc: DocumentRecord | None) -> DocumentRecord | None:
        """Replace (or with ``None`` remove) a document record; returns the previous one."""
        self._keep_document(doc_id)
        old = self.documents.pop(doc_id, None)
        if doc is not None:
            self.documents[doc_id] = doc
        self._dirty.add(doc_id)
        return old

    def _keep_document(self, doc_id: str) -> None:
        """Document ``doc_id`` is about to change (in memory: journal it for :meth:`undo`)."""


class MemoryRecordTables(RecordTables):
    """The records of an index without a directory: dicts. A commit's changes go to a layer over the
    committed rows (:class:`LayeredRows`) that the plan reads through and readers of the committed state
    do not see (:meth:`chunk_texts`, :attr:`committed_documents`, :attr:`committed_chunks`); the apply
    publishes it (:meth:`write_commit`), a failed commit drops it (:meth:`undo`)."""

    def __init__(self) -> None:
        super().__init__()
        self.documents = self._documents = LayeredRows[DocumentRecord]()
        self.chunks = self._chunks = LayeredRows[ChunkRecord]()
        self._mentions: dict[str, dict[str, bool]] = {}  # name -> the chunks naming it -> describes (the plan's view)

    @property
    def committed_documents(self) -> dict[str, DocumentRecord]:
        """The committed document rows (copy it before iterating from another thread: a commit lands in place)."""
        return self._documents.committed

    @property
    def committed_chunks(self) -> dict[str, ChunkRecord]:
        """The committed chunk rows (likewise)."""
        return self._chunks.committed

    @override
    def note_mentions(self, chunk: ChunkRecord, *, forget: bool = False) -> None:
        for name, describes in chunk.mentions():
            if forget:
                held = self._mentions.get(name)
                if held is not None:
                    held.pop(chunk.id, None)
                    if not held:
                        del self._mentions[name]
            else:
                self._mentions.setdefault(name, {})[chunk.id] = bool(describes)

    def _save_chunk(self, record: ChunkRecord) -> ChunkRecord:
        if record.id in self.chunks:
            self.note_mentions(self.chunks[record.id], forget=True)
        self.note_mentions(record)
        return record

    def _mentioning(self, names: Iterable[str]) -> dict[str, dict[str, bool]]:
        found: dict[str, dict[str, bool]] = {}
        for name in dict.fromkeys(names):
            for cid, describes in self._mentions.get(name, {}).items():
                found.setdefault(cid, {})[name] = describes
        return found

    def _record_chunk_ids(self) -> list[str]:
        return [cid for cid in self.chunks if is_record_chunk(cid)]

    @override
    def chunk_texts(self, ids: Iterable[str]) -> dict[str, str]:
        committed = self._chunks.committed
        return {
            cid: chunk.text
            for cid in dict.fromkeys(ids)
            if (chunk := committed.get(cid)) is not None and chunk.refs and chunk.text
        }

    @override
    def begin_undo(self) -> None:
        self.undo()  # a layer left open (never: a plan ends applied or abandoned) is not built on
        self._documents.open()
        self._chunks.open()

    @override
    def write_commit(self) -> None:
        super().write_commit()
        for row in self._chunks.layer().values():  # the commit's own copies: the models go with it
            if isinstance(row, ChunkRecord):
                row.validated = None
        self._documents.publish()
        self._chunks.publish()

    @override
    def undo(self) -> None:
        for cid, row in self._chunks.layer().items():  # the mentions back to the committed chunks'
            if not isinstance(row, _Absent):
                self.note_mentions(row, forget=True)
            before = self._chunks.committed.get(cid)
            if before is not None:
                self.note_mentions(before)
        self._documents.drop()
        self._chunks.drop()

    def _keep_chunk(self, cid: str) -> None:
        # copy on write: a committed row is never changed in place while a commit is open
        rows = self._chunks
        if rows.is_open() and not rows.in_layer(cid) and (chunk := rows.committed.get(cid)) is not None:
            rows[cid] = replace(chunk, refs=dict(chunk.refs))


_READ_BUDGET = 4 << 20
"""Bytes of stored (compressed) records read in one query when a rebuild streams chunks it does not keep."""


class SQLiteRecordTables(RecordTables):
    """The records of an index in a store: rows fetched on first use (a retrieval never needs them, a write
    only its own), the mentions a table of the store."""

    def __init__(self, store: SQLiteStore) -> None:
        super().__init__()
        self._store = store
        self._sizes: dict[str, int] = {}  # stored size of the records of chunks _claimed found unread
        self.reset()

    @override
    def reset(self) -> None:
        store = self._store
        self.documents = LazyRows(
            functools.partial(_fetch_documents, store), functools.partial(_fetch_documents, store, None)
        )
        self.chunks = LazyRows(functools.partial(_fetch_chunks, store), functools.partial(_fetch_chunks, store, None))

    @override
    def note_mentions(self, chunk: ChunkRecord, *, forget: bool = False) -> None:
        if forget:  # the chunk's rows go with it (see write_commit)
            return
        if self._store.format_version >= 4:
            self._store.executemany(
                "INSERT OR IGNORE INTO mentions (name, chunk_id, describes) VALUES (?, ?, ?)",
                [(n, chunk.id, describes) for n, describes in chunk.mentions()],
            )
        else:  # an older store's writes keep its format
            self._store.executemany(
                "INSERT OR IGNORE INTO mentions (name, chunk_id) VALUES (?, ?)",
                [(n, chunk.id) for n in chunk.mentioned()],
            )

    def _save_chunk(self, record: ChunkRecord) -> ChunkRecord:
        store = self._store
        with store.transaction():  # the chunk and its mentions: both or neither survive a crash
            stored = store.wread("SELECT records FROM chunks WHERE id = ?", (record.id,))
            if stored:  # stored first by another process: that one is kept
                rows = unpack_records(stored[0][0])
                return ChunkRecord(record.id, record.text, rows.get("entities", []), rows.get("relations", []))
            store.execute(
                "INSERT INTO chunks VALUES (?, ?, ?)",
                (record.id, record.text, pack_records(record.entities, record.relations)),
            )
            self.note_mentions(record)
        return record

    def _mentioning(self, names: Iterable[str]) -> dict[str, dict[str, bool]]:
        describes = "describes" if self._store.format_version >= 4 else "1"  # before: every mention may
        found: dict[str, dict[str, bool]] = {}
        for cid, name, flag in self._store.wread(
            f"SELECT chunk_id, name, {describes} FROM mentions WHERE name IN (SELECT value FROM json_each(?))",
            (dumps(sorted(names)),),
        ):
            found.setdefault(cid, {})[name] = bool(flag)
        return found

    def _record_chunk_ids(self) -> list[str]:
        return [row[0] for row in self._store.wread(f"SELECT id FROM chunks WHERE id LIKE '{RECORD_CHUNK_LIKE}'")]

    @override
    def _claimed(self, cids: set[str]) -> dict[str, tuple[str, int]]:
        # the rows this commit holds (it may have changed their claims) as they are, the others' claims read
        # from the store without their records (and their records' size, for _read_in_order)
        found: dict[str, tuple[str, int]] = {}
        unread = []
        for cid in cids:
            held, chunk = self.chunks.peek(cid)
            if not held:
                unread.append(cid)
            elif chunk is not None and chunk.refs:
                found[cid] = min(chunk.refs.items())
        self._sizes = {}
        for cid, doc_id, position, size in self._store.wread(
            "SELECT d.chunk_id, d.doc_id, d.position, length(c.records) FROM doc_chunks d JOIN chunks c "
            "ON c.id = d.chunk_id WHERE d.chunk_id IN (SELECT value FROM json_each(?))",
            (dumps(sorted(unread)),),
        ):
            if cid not in found or (doc_id, position) < found[cid]:
                found[cid] = (doc_id, position)
            self._sizes[cid] = size
        return found

    @override
    def _read_in_order(self, cids: list[str]) -> Iterator[ChunkRecord]:
        sizes, self._sizes = self._sizes, {}
        group: list[str] = []
        budget = 0
        for cid in [*cids, None]:  # None: the end, the last group is read
            if cid is not None and cid in sizes and budget + sizes[cid] <= _READ_BUDGET and len(group) < 512:
                group.append(cid)
                budget += sizes[cid]
                continue
            if group:  # the chunks not held, read a group at a time and not kept
                read = _fetch_chunks(self._store, group)
                yield from (read[g] for g in group if g in read)
                group, budget = [], 0
            if cid is None:
                break
            if cid in sizes:  # over the budget alone: read by itself
                group, budget = [cid], sizes[cid]
            else:
                yield self.chunks[cid]

    @override
    def chunk_texts(self, ids: Iterable[str]) -> dict[str, str]:
        ids = list(dict.fromkeys(ids))
        rows = self._store.read(
            "SELECT c.id, c.text FROM chunks c WHERE c.id IN (SELECT value FROM json_each(?)) AND c.text != '' "
            "AND EXISTS (SELECT 1 FROM doc_chunks d WHERE d.chunk_id = c.id)",
            (dumps(ids),),
        )
        found = dict(rows)
        return {cid: found[cid] for cid in ids if cid in found}

    @override
    def write_commit(self) -> None:
        store, dirty, gone = self._store, sorted(self._dirty), dumps(sorted(self._dropped))
        super().write_commit()
        if gone != "[]":
            store.execute("DELETE FROM chunks WHERE id IN (SELECT value FROM json_each(?))", (gone,))
            store.execute("DELETE FROM mentions WHERE chunk_id IN (SELECT value FROM json_each(?))", (gone,))
        if not dirty:
            return
        ids = dumps(dirty)
        store.execute("DELETE FROM doc_chunks WHERE doc_id IN (SELECT value FROM json_each(?))", (ids,))
        store.execute("DELETE FROM documents WHERE id IN (SELECT value FROM json_each(?))", (ids,))
        kept = [(d, self.documents[d]) for d in dirty if d in self.documents]
        store.executemany(
            "INSERT INTO documents VALUES (?, ?, ?, ?)",
            [(d, doc.hash, dumps(doc.metadata), dumps(doc.failed)) for d, doc in kept],
        )
        store.executemany(
            "INSERT INTO doc_chunks VALUES (?, ?, ?)",
            [(d, position, cid) for d, doc in kept for position, cid in enumerate(doc.chunks)],
        )


class StringTable:
    """A string -> string table (the LLM answer cache, the summaries): a dict in memory; see
    :class:`SQLiteStringTable` for a store's."""

    def __init__(self) -> None:
        self._memory: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        """The value stored under ``key``, or ``None``."""
        return self._memory.get(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __getitem__(self, key: str) -> str:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: str) -> None:
        self._memory[key] = value

    def items(self) -> list[tuple[str, str]]:
        """Every ``(key, value)`` pair."""
        return list(self._memory.items())


class SQLiteStringTable(StringTable):
    """A string table as rows of a store, written at once (LLM answers and summaries are keyed by their
    prompt's hash: saved as they arrive, outside any commit), read by key: nothing is loaded before use."""

    def __init__(self, store: SQLiteStore, table: str, column: str, *, packed: bool = False) -> None:
        super().__init__()
        self._store = store
        self._pack: Callable[[str], str | bytes] = pack_text if packed else str
        self._get = f"SELECT {column} FROM {table} WHERE key = ?"
        self._put = f"INSERT OR REPLACE INTO {table} VALUES (?, ?)"
        self._all = f"SELECT key, {column} FROM {table}"

    @override
    def get(self, key: str) -> str | None:
        rows = self._store.wread(self._get, (key,))
        return unpack_text(rows[0][0]) if rows else None

    def __setitem__(self, key: str, value: str) -> None:
        self._store.execute(self._put, (key, self._pack(value)))

    @override
    def items(self) -> list[tuple[str, str]]:
        return [(key, unpack_text(value)) for key, value in self._store.wread(self._all)]
