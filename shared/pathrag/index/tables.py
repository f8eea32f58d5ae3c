"""Where an index's record tables live: dicts in memory, or rows of a SQLite store fetched on first use.

:class:`MemoryRecordTables` and :class:`SQLiteRecordTables` keep the rows of the
:class:`~pathrag.index.records.RecordTables` commit logic; :class:`StringTable` and
:class:`SQLiteStringTable` are the key -> text tables of the LLM answer cache and the summaries.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from typing_extensions import override

from ..ids import RECORD_CHUNK_LIKE, is_record_chunk
from ..sqlite.codec import dumps, pack_records, pack_text, unpack_records, unpack_text
from ..sqlite.store import SQLiteStore
from .records import ChunkRecord, DocumentRecord, RecordTables
from .rows import Absent, LayeredRows, LazyRows

__all__ = ["MemoryRecordTables", "SQLiteRecordTables", "SQLiteStringTable", "StringTable"]


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
            if not isinstance(row, Absent):
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
