"""The index's document and chunk records, and how they are kept in the store.

A :class:`DocumentRecord` says which chunks a document is made of; a :class:`ChunkRecord` holds a
chunk's text, the entity and relation records extracted from it, and which documents claim it
(``refs``). The document rows are the commit record: a chunk is live while some document claims it.
:class:`RecordTables` keeps both tables (a dict in memory, or rows of a :class:`~pathrag.store.SQLiteStore`
fetched on first use) together with the entity names each chunk mentions, and writes every change
the way a crash-safe commit needs it (see :mod:`pathrag.indexing`). :class:`StringTable` is the
key -> text table of the LLM answer cache and the summaries.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .store import SQLiteStore, dumps, mentioned_names, pack_records, pack_text, unpack_records, unpack_text

__all__ = [
    "ChunkRecord",
    "DocumentRecord",
    "LazyRows",
    "RecordTables",
    "StringTable",
    "chunk_id",
    "cited",
    "digest",
]

V = TypeVar("V")


def digest(*parts: str) -> str:
    """A short content hash of ``parts`` (the ids of chunks, documents, cache entries and vectors)."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def chunk_id(text: str) -> str:
    """Content id of a chunk: the same text always gets the same id."""
    return f"chunk-{digest(text)}"


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

    def mentioned(self) -> list[str]:
        """The entity names the chunk's records name, relation ends included (sorted, distinct)."""
        return mentioned_names(self.entities, self.relations)

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

    def __getitem__(self, key: str) -> V:
        self.prefetch([key])
        return self._rows[key]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
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


_ABSENT: Any = object()  # in the undo journal: the row did not exist before the commit


class RecordTables:
    """The document and chunk records of one index, and which chunks mention each entity name.

    Without a store all three are dicts in memory. With one, documents and chunks are rows fetched on
    first use (a retrieval never needs them, a write only its own) and the mentions a table of the store:
    a chunk's records are written the moment they are kept (:meth:`store_chunk`), the document rows a
    commit changed inside its transaction (:meth:`write_documents`).
    """

    def __init__(self, store: SQLiteStore | None) -> None:
        self._store = store
        self.documents: LazyRows[DocumentRecord] = LazyRows()
        self.chunks: LazyRows[ChunkRecord] = LazyRows()
        self._mentions: dict[str, set[str]] = {}  # in memory: entity name -> ids of the chunks naming it
        self._dirty: set[str] = set()  # documents changed by the open commit
        # In memory, during a commit: each changed row as it was before (see begin_undo).
        self._undo: tuple[dict[str, Any], dict[str, Any]] | None = None
        self.reset()

    def reset(self) -> None:
        """Forget what was fetched from the store (after a rollback, or another process's commit)."""
        store = self._store
        if store is None:
            return
        self.documents = LazyRows(
            functools.partial(_fetch_documents, store), functools.partial(_fetch_documents, store, None)
        )
        self.chunks = LazyRows(functools.partial(_fetch_chunks, store), functools.partial(_fetch_chunks, store, None))

    # -- chunks ------------------------------------------------------------------------------------

    def note_mentions(self, chunk: ChunkRecord, *, forget: bool = False) -> None:
        """Keep the chunk's mentions: a row per entity name in the store, else in memory."""
        names = chunk.mentioned()
        if self._store is not None:
            if not forget:
                self._store.executemany("INSERT OR IGNORE INTO mentions VALUES (?, ?)", [(n, chunk.id) for n in names])
            return  # forgetting: the chunk's rows go with it (see drop_chunks)
        for name in names:
            if forget:
                held = self._mentions.get(name)
                if held is not None:
                    held.discard(chunk.id)
                    if not held:
                        del self._mentions[name]
            else:
                self._mentions.setdefault(name, set()).add(chunk.id)

    def store_chunk(
        self, cid: str, text: str, entities: list[dict[str, Any]], relations: list[dict[str, Any]]
    ) -> ChunkRecord:
        """Keep a chunk's extraction records and write them at once (no document claims it yet).

        Outside a commit this is its own tiny transaction: a crash later on does not lose the LLM's work.
        """
        record = ChunkRecord(cid, text, entities, relations)
        chunks = self.chunks
        self._keep_chunk(cid)
        if self._store is not None:
            with self._store.transaction():  # the chunk and its mentions: both or neither survive a crash
                self._store.execute(
                    "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?)", (cid, text, pack_records(entities, relations))
                )
                self._store.execute("DELETE FROM mentions WHERE chunk_id = ?", (cid,))
                self.note_mentions(record)
        else:
            if cid in chunks:
                self.note_mentions(chunks[cid], forget=True)
            self.note_mentions(record)
        chunks[cid] = record
        return record

    def claim(self, cid: str, doc_id: str, position: int) -> None:
        """Record that chunk ``cid`` is at ``position`` of document ``doc_id``."""
        self._keep_chunk(cid)
        self.chunks[cid].refs[doc_id] = position

    def unref(self, doc_id: str, chunk_ids: Iterable[str]) -> set[str]:
        """Drop ``doc_id``'s claim on its chunks; return the chunks nobody claims any more."""
        orphaned = set()
        for cid in chunk_ids:
            chunk = self.chunks.get(cid)
            if chunk is not None:
                self._keep_chunk(cid)
                chunk.refs.pop(doc_id, None)
                if not chunk.refs:
                    orphaned.add(cid)
        return orphaned

    def drop_chunks(self, gone: list[str]) -> None:
        """Remove chunks no document claims, with their mentions (inside the open commit)."""
        for cid in gone:
            self._keep_chunk(cid)
            chunk = self.chunks.pop(cid, None)
            if chunk is not None:
                self.note_mentions(chunk, forget=True)
        if self._store is not None and gone:
            self._store.execute("DELETE FROM chunks WHERE id IN (SELECT value FROM json_each(?))", (dumps(gone),))
            self._store.execute(
                "DELETE FROM mentions WHERE chunk_id IN (SELECT value FROM json_each(?))", (dumps(gone),)
            )

    def live_chunks_mentioning(self, names: Iterable[str]) -> list[ChunkRecord]:
        """The live chunks mentioning any of ``names``, in a stable order: by document (sorted id), then
        position in it. Only those chunks are read, so a write costs the same whatever the store's size."""
        chunks = self.chunks
        if self._store is not None:
            candidates = {
                cid
                for (cid,) in self._store.wread(
                    "SELECT DISTINCT chunk_id FROM mentions WHERE name IN (SELECT value FROM json_each(?))",
                    (dumps(sorted(names)),),
                )
            }
            chunks.prefetch(candidates)
        else:
            candidates = set().union(*(self._mentions.get(n, ()) for n in names))
        order = {
            cid: (doc_id, position)
            for cid in candidates
            if (chunk := chunks.get(cid)) and chunk.refs
            for doc_id, position in [min(chunk.refs.items())]
        }
        return [chunks[cid] for cid in sorted(order, key=order.__getitem__)]

    def live_record_chunks(self) -> list[ChunkRecord]:
        """The record chunks (imports, :meth:`~pathrag.PathRAGIndex.add_records`) some document still claims."""
        ids = (
            [row[0] for row in self._store.wread("SELECT id FROM chunks WHERE id LIKE 'records-%'")]
            if self._store is not None
            else [cid for cid in self.chunks if cid.startswith("records-")]
        )
        return [chunk for cid in ids if (chunk := self.chunks.get(cid)) is not None and chunk.refs]

    def chunk_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The text of each live chunk among ``ids`` (unknown, released and record-only chunks are left out)."""
        ids = list(dict.fromkeys(ids))
        if self._store is not None:
            rows = self._store.read(
                "SELECT c.id, c.text FROM chunks c WHERE c.id IN (SELECT value FROM json_each(?)) AND c.text != '' "
                "AND EXISTS (SELECT 1 FROM doc_chunks d WHERE d.chunk_id = c.id)",
                (dumps(ids),),
            )
            found = dict(rows)
            return {cid: found[cid] for cid in ids if cid in found}
        return {
            cid: chunk.text for cid in ids if (chunk := self.chunks.get(cid)) is not None and chunk.refs and chunk.text
        }

    # -- documents ---------------------------------------------------------------------------------

    def start_commit(self) -> None:
        """A commit begins: no document row changed by it yet."""
        self._dirty = set()

    def set_document(self, doc_id: str, doc: DocumentRecord | None) -> DocumentRecord | None:
        """Replace (or with ``None`` remove) a document record; returns the previous one."""
        if self._undo is not None and doc_id not in self._undo[0]:
            self._undo[0][doc_id] = self.documents.get(doc_id, _ABSENT)
        old = self.documents.pop(doc_id, None)
        if doc is not None:
            self.documents[doc_id] = doc
        self._dirty.add(doc_id)
        return old

    def write_documents(self) -> None:
        """Write the document rows this commit changed (inside its transaction)."""
        store, dirty = self._store, sorted(self._dirty)
        if store is None or not dirty:
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
        self._dirty = set()

    # -- an in-memory index's rollback -------------------------------------------------------------

    def begin_undo(self) -> None:
        """In memory, a commit begins: from now on each row is kept as it was before its first change."""
        self._undo = ({}, {})

    def end_undo(self) -> None:
        """The commit ended well: forget the rows kept for undoing it."""
        self._undo = None

    def undo(self) -> None:
        """The commit failed: put back every row it changed, and their mentions."""
        if self._undo is None:
            return
        documents, chunks = self._undo
        self._undo = None
        for doc_id, doc in documents.items():
            self.documents.pop(doc_id, None)
            if doc is not _ABSENT:
                self.documents[doc_id] = doc
        for cid, chunk in chunks.items():
            current = self.chunks.pop(cid, None)
            if current is not None:
                self.note_mentions(current, forget=True)
            if chunk is not _ABSENT:
                self.chunks[cid] = chunk
                self.note_mentions(chunk)

    def _keep_chunk(self, cid: str) -> None:
        if self._undo is not None and cid not in self._undo[1]:
            chunk = self.chunks.get(cid)
            self._undo[1][cid] = _ABSENT if chunk is None else replace(chunk, refs=dict(chunk.refs))


class StringTable:
    """A string -> string table: a dict in memory, or rows of the store (written at once, or with the
    open commit) so that nothing is loaded before it is needed."""

    def __init__(self, store: SQLiteStore | None, table: str, column: str, *, packed: bool = False) -> None:
        self._store = store
        self._pack: Callable[[str], str | bytes] = pack_text if packed else str
        self._memory: dict[str, str] = {}
        self._get = f"SELECT {column} FROM {table} WHERE key = ?"
        self._put = f"INSERT OR REPLACE INTO {table} VALUES (?, ?)"
        self._all = f"SELECT key, {column} FROM {table}"
        self._pending: dict[str, str] = {}  # written inside the open commit: rewritten if it rolls back

    def get(self, key: str) -> str | None:
        """The value stored under ``key``, or ``None``."""
        if self._store is None:
            return self._memory.get(key)
        rows = self._store.wread(self._get, (key,))
        return unpack_text(rows[0][0]) if rows else None

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __getitem__(self, key: str) -> str:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: str) -> None:
        if self._store is None:
            self._memory[key] = value
        else:
            if self._store.in_transaction:
                self._pending[key] = value
            self._store.execute(self._put, (key, self._pack(value)))

    def flush_pending(self) -> None:
        """After a rollback: write again what the rolled-back commit had written (LLM answers)."""
        pending, self._pending = self._pending, {}
        if self._store is not None and pending:
            self._store.executemany(self._put, [(key, self._pack(value)) for key, value in pending.items()])

    def clear_pending(self) -> None:
        """Forget what the open commit wrote (it committed: nothing to write again)."""
        self._pending = {}

    def items(self) -> list[tuple[str, str]]:
        """Every ``(key, value)`` pair."""
        if self._store is None:
            return list(self._memory.items())
        return [(key, unpack_text(value)) for key, value in self._store.wread(self._all)]
