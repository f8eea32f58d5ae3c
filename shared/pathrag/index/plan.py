"""The middle phase of a write: the change it makes, planned against the committed state.

A plan runs inside :meth:`pathrag.index.commit.Committer.commit`: it reads the committed state, changes the
document and chunk records, rebuilds the entities and relations those records touch
(:func:`pathrag.index.rebuild.rebuild`: merged again, summarised by the LLM where long) and the vectors that
follow them, writing the graph and vectors through the commit's stand-ins. Nothing it writes is seen before
the commit applies. A plan may run twice when another writer committed first: it re-reads everything.

:class:`Planner` holds one plan of each kind: :meth:`Planner.insert` (documents extracted beforehand, see
:mod:`pathrag.index.extract`), :meth:`Planner.delete` and :meth:`Planner.add_records` (records extracted
elsewhere).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

import numpy as np

from ..llm.calls import OperationCalls
from ..models import Entity, Relation
from ..vectors.base import VectorItem
from ..vectors.items import aput_vectors
from .commit import Committer
from .extract import select
from .extractors import Extractor
from .rebuild import Rebuilt, Summariser, rebuild, sync_chunk_vectors
from .records import DocumentRecord, RecordTables
from .values import DeleteSummary, Document, InsertSummary

__all__ = ["Ask", "Planner", "RecordsToAdd"]

Ask = Callable[[str, OperationCalls], Awaitable[str]]
"""The index's LLM behind its cache and retries, counted in an operation's calls (``None``: no LLM)."""

Phase = Callable[[str], None]


class RecordsToAdd:
    """The records of one :meth:`pathrag.PathRAGIndex.aadd_records` call, checked and split in pieces."""

    def __init__(
        self,
        document_id: str,
        content: str,
        pieces: list[tuple[str, slice]],
        entities: Sequence[Entity],
        relations: Sequence[Relation],
        vector_items: Mapping[str, Sequence[VectorItem]],
        vectors: Mapping[str, Mapping[str, Sequence[float] | np.ndarray]],
    ) -> None:
        self.document_id, self.content, self.pieces = document_id, content, pieces
        self.entities, self.relations = entities, relations
        self.entity_rows = [e.model_dump(mode="json") for e in entities]
        self.relation_rows = [r.model_dump(mode="json") for r in relations]
        self.vector_items, self.vectors = vector_items, vectors


class Planner:
    """The plans of one index: what each write changes in ``records`` and, through ``committer``, in the
    graph and vector indexes. ``check_writable(embeds)`` fails before the first LLM call of a write that
    cannot be committed."""

    def __init__(
        self,
        records: RecordTables,
        committer: Committer,
        summariser: Summariser,
        *,
        directed: bool,
        check_writable: Callable[[bool], None],
    ) -> None:
        self.records = records
        self.committer = committer
        self.summariser = summariser
        self.directed = directed
        self.check_writable = check_writable

    # -- the plans ------------------------------------------------------------------------------------

    async def insert(
        self,
        documents: list[Document],
        failed: set[str],
        seen: dict[str, str],
        run: OperationCalls,
        ask: Ask | None,
        phase: Phase,
        extractor: Extractor,
    ) -> InsertSummary | None:
        """Claim the extracted chunks for the new and changed documents and rebuild what they touch.
        ``None`` (nothing planned): a chunk to claim is missing (another writer dropped it since it was
        extracted: extract again)."""
        chosen = select(documents, failed, seen, self.records, extractor)
        if chosen.missing:
            return None
        summary = InsertSummary(unchanged=chosen.unchanged)
        released: set[str] = set()
        touched: list[str] = []
        newly_live: list[str] = []
        for doc_id, (doc, content, chunks) in chosen.todo.items():
            self._claim_document(doc_id, doc, content, list(chunks), failed, summary, released, touched, newly_live)
        summary.chunks = len(dict.fromkeys(touched))
        released -= set(touched)
        shown = phase if chosen.todo else None  # nothing changed: no phases to show
        rebuilt = await self._rebuild(touched + sorted(released), run, ask, shown)
        summary.entities, summary.relations = len(rebuilt.entities), len(rebuilt.relations)
        if shown is not None and newly_live:
            live = len(dict.fromkeys(newly_live))
            shown(f"embedding {live:,} chunk{'s' * (live != 1)}")
        await self._sync_chunk_vectors(newly_live, released)
        if shown is not None:
            shown("committing…")
        return summary

    def _claim_document(
        self,
        doc_id: str,
        doc: Document,
        content: str,
        chunk_ids: list[str],
        failed: set[str],
        summary: InsertSummary,
        released: set[str],
        touched: list[str],
        newly_live: list[str],
    ) -> None:
        """One new or changed document takes its chunks (a changed one releases its old ones first)."""
        records = self.records
        old = records.documents.get(doc_id)
        if old is not None and old.hash == content and not old.failed:  # its metadata alone changed
            records.set_document(doc_id, DocumentRecord(content, list(old.chunks), doc.metadata, []))
            summary.documents += 1
            return
        if old is not None:  # a changed document replaces its previous version
            released.update(records.unref(doc_id, old.chunks))
        for position, cid in enumerate(chunk_ids):
            if cid in records.chunks:
                if not records.chunks[cid].refs or cid in released:
                    newly_live.append(cid)
                records.claim(cid, doc_id, position)
                touched.append(cid)
        if not chunk_ids:  # the document was emptied: it goes, as with delete()
            records.set_document(doc_id, None)
            summary.removed += 1
            return
        failures = sorted(c for c in chunk_ids if c in failed)
        records.set_document(doc_id, DocumentRecord(content, chunk_ids, doc.metadata, failures))
        summary.documents += 1
        if old is not None and old.hash != content:
            summary.replaced.append(doc_id)

    async def delete(self, document_ids: list[str], run: OperationCalls, ask: Ask | None) -> DeleteSummary:
        """Drop the documents; what only they supported disappears, the rest is rebuilt."""
        summary = DeleteSummary()
        records = self.records
        if any(doc_id in records.documents for doc_id in document_ids):
            self.check_writable(False)  # a delete embeds only the descriptions it changes
        released: set[str] = set()
        for doc_id in dict.fromkeys(document_ids):
            doc = records.set_document(doc_id, None)
            if doc is None:
                summary.missing.append(doc_id)
                continue
            released.update(records.unref(doc_id, doc.chunks))
            summary.documents += 1
        summary.chunks = len(released)
        rebuilt = await self._rebuild(sorted(released), run, ask)
        summary.entities_removed = len(rebuilt.gone_entities)
        summary.relations_removed = len(rebuilt.gone_relations)
        summary.entities_updated, summary.relations_updated = len(rebuilt.entities), len(rebuilt.relations)
        await self._sync_chunk_vectors([], released)
        return summary

    async def add_records(self, added: RecordsToAdd, run: OperationCalls, ask: Ask | None) -> InsertSummary:
        """Keep ``added``'s records as one document of record chunks (replacing an earlier version)."""
        records, document_id = self.records, added.document_id
        old = records.documents.get(document_id)
        if old is not None and old.hash == added.content:
            return InsertSummary(unchanged=1)
        self.check_writable(True)
        released = records.unref(document_id, old.chunks) if old is not None else set()
        for position, (cid, part) in enumerate(added.pieces):
            validated = (added.entities[part], added.relations[part])  # a rebuild takes them as they are
            records.store_chunk(cid, "", added.entity_rows[part], added.relation_rows[part], validated=validated)
            records.claim(cid, document_id, position)
            released.discard(cid)
        cids = [cid for cid, _ in added.pieces]
        records.set_document(document_id, DocumentRecord(added.content, cids, {"records": True}, []))
        for name, items in added.vector_items.items():
            await aput_vectors(self.committer.written_index(name), items, added.vectors.get(name, {}))
        rebuilt = await self._rebuild([*cids, *sorted(released)], run, ask)
        await self._sync_chunk_vectors([], released)
        return InsertSummary(
            documents=1, chunks=len(cids), entities=len(rebuilt.entities), relations=len(rebuilt.relations)
        )

    # -- what every plan does: the graph and vectors follow the records ------------------------------

    async def _rebuild(
        self, chunk_ids: Sequence[str], run: OperationCalls, ask: Ask | None, on_phase: Phase | None = None
    ) -> Rebuilt:
        """Recompute every entity and relation mentioned by ``chunk_ids`` from the live chunks."""
        asking = (lambda prompt: ask(prompt, run)) if ask is not None else None
        committer, summariser = self.committer, self.summariser
        return await rebuild(
            chunk_ids,
            self.records,
            committer.written_graph(),
            committer.written_index("entities"),
            committer.written_index("relations"),
            lambda item, label, found: summariser.summarise(item, label, found, asking),
            directed=self.directed,
            on_phase=on_phase,
            needs_summary=summariser.needs_summary,
            graph_follows_records=committer.graph_staged(),
        )

    async def _sync_chunk_vectors(self, added: Sequence[str], released: set[str]) -> None:
        await sync_chunk_vectors(self.records, self.committer.written_index("chunks"), added, released)
