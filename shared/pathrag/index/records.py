"""The index's document and chunk records, and the commit logic of their tables.

A :class:`DocumentRecord` says which chunks a document is made of; a :class:`ChunkRecord` holds a
chunk's text, the entity and relation records extracted from it, and which documents claim it
(``refs``). The document rows are the commit record: a chunk is live while some document claims it.
:class:`RecordTables` keeps both tables together with the entity names each chunk mentions, and writes every
change the way a crash-safe commit needs it (see :mod:`pathrag.index.backend`). Where the rows live is
:mod:`pathrag.index.tables` (a dict in memory, or rows of a :class:`~pathrag.sqlite.SQLiteStore` fetched on
first use, as :mod:`pathrag.index.rows` maps them), with the key -> text tables of the LLM answer cache and
the summaries.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models import Entity, Relation
from ..sqlite.codec import mention_rows
from .rows import LazyRows

__all__ = ["ChunkRecord", "DocumentRecord", "RecordTables", "cited"]


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

        >>> from pathrag.index.tables import MemoryRecordTables
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
