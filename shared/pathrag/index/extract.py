"""The first phase of an insert: which documents are new or changed, and the extraction of their chunks.

:func:`select` reads the committed state and says what an insert of some documents changes; it runs
before extraction (to know what to extract) and again while planning (see :mod:`pathrag.index.plan`),
since another writer may have committed meanwhile. :func:`extract_chunks` asks the index's extractor (the
LLM, or the model-free rules) for the records of each chunk still to extract and saves them the moment they
arrive, so that a re-run after a crash (even ``kill -9``) re-extracts only the chunks whose records were not
saved.

>>> from pathrag import Document
>>> from pathrag.index.extractors import as_extractor
>>> from pathrag.index.tables import MemoryRecordTables
>>> chosen = select([Document(text="Alice flies.", id="a")], set(), {}, MemoryRecordTables(), as_extractor("llm"))
>>> list(chosen.todo), chosen.unchanged, len(chosen.missing)
(['a'], 0, 1)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tqdm.auto import tqdm

from ..errors import StoreDamaged
from ..llm.calls import OperationCalls
from ..llm.tokens import TokenCounter
from .extraction import ChunkExtraction, ExtractionConfig
from .extractors import Extractor
from .records import DocumentRecord, RecordTables
from .values import ChunkFailure, Document, InsertSummary

__all__ = ["Selection", "extract_chunks", "select"]

logger = logging.getLogger(__name__)


@dataclass
class Selection:
    """What an insert changes, read from the committed state."""

    todo: dict[str, tuple[Document, str, dict[str, str]]]
    """The new or changed documents: id -> (document, content hash, chunk id -> text)."""
    unchanged: int
    """How many documents are known already with the same text."""
    planned: dict[str, tuple[str, list[str]]]
    """Their chunks in document order: id -> (text, ids of the documents holding it)."""
    missing: list[str]
    """The chunks to extract: not saved before (now or before a crash) and not failed."""


def select(
    documents: list[Document], failed: set[str], given: dict[str, str], records: RecordTables, extractor: Extractor
) -> Selection:
    """What inserting ``documents`` changes against ``records``' committed state (``failed``: chunks whose
    extraction failed in this insert; ``given``: the content hash of each document id met so far in this
    insert, one version per id). ``extractor``'s name is in the content hashes and chunk ids: a document
    indexed with another extractor is extracted again."""
    todo: dict[str, tuple[Document, str, dict[str, str]]] = {}
    unchanged = 0
    known_documents, chunks = records.documents, records.chunks
    known_documents.prefetch(d.id or f"doc-{d.content_hash()}" for d in documents)
    for doc in documents:
        doc_id, content = _identity(doc, given, extractor)
        known = known_documents.get(doc_id)
        if not doc.chunk_texts() and known is None:
            continue  # an empty document nobody knows: nothing to do
        if doc_id in todo or (known and _same_document(known, content, doc)):
            unchanged += 1
            continue
        todo[doc_id] = (doc, content, {extractor.chunk_id(t): t for t in doc.chunk_texts()})
    planned = _chunks_of(todo)
    chunks.prefetch(planned)
    missing = [cid for cid in planned if cid not in chunks and cid not in failed]
    return Selection(todo, unchanged, planned, missing)


def _chunks_of(todo: dict[str, tuple[Document, str, dict[str, str]]]) -> dict[str, tuple[str, list[str]]]:
    """The chunks of the documents ``todo``, in document order: id -> (text, ids of the documents holding it)."""
    planned: dict[str, tuple[str, list[str]]] = {}
    for doc_id, (_, _, texts) in todo.items():
        for cid, text in texts.items():
            planned.setdefault(cid, (text, []))[1].append(doc_id)
    return planned


def _identity(doc: Document, given: dict[str, str], extractor: Extractor) -> tuple[str, str]:
    """A document's id (its own, else one from its text) and content hash (by ``extractor``); one version per
    id in an insert (``given``: the hash of each id met so far)."""
    content = extractor.content_hash(doc)
    doc_id = doc.id or f"doc-{doc.content_hash()}"
    if given.setdefault(doc_id, content) != content:
        raise ValueError(
            f"document id {doc_id!r} appears twice in one insert with different texts: pass one version per id"
        )
    return doc_id, content


async def extract_chunks(
    planned: dict[str, tuple[str, list[str]]],
    ask: Callable[[str], Awaitable[str]] | None,
    config: ExtractionConfig,
    records: RecordTables,
    summary: InsertSummary,
    run: OperationCalls,
    *,
    extractor: Extractor,
    max_concurrency: int,
    show_progress: bool,
    token_counter: TokenCounter | None = None,
) -> set[str]:
    """Extract every chunk of ``planned`` (id -> text, document ids) concurrently by ``extractor`` (with
    ``ask``, the index's LLM, when it has one), in the calls it packs them into (``token_counter`` measures
    the packs), saving each one's records in ``records`` as they land; the ids of the chunks that failed (each
    reported in ``summary.failures`` and skipped: one bad chunk must not sink the run)."""
    failed: set[str] = set()
    shown = show_progress and bool(planned)  # no bar when every chunk is saved already
    progress = tqdm(total=len(planned), unit="chunk", desc="extracting", disable=not shown)
    counts = {"entities": 0, "relations": 0}

    def fail(cid: str, doc_ids: list[str], exc: Exception) -> None:  # reported and skipped
        logger.warning("chunk %s failed after retries: %r", cid, exc)
        summary.failures.append(ChunkFailure(cid, tuple(doc_ids), f"{type(exc).__name__}: {exc}"))
        failed.add(cid)

    def save(cid: str, text: str, done: ChunkExtraction) -> None:
        records.store_chunk(
            cid,
            text,
            [e.model_dump(mode="json") for e in done.result.entities],
            [r.model_dump(mode="json") for r in done.result.relations],
        )
        summary.chunks_extracted += 1
        summary.records_dropped += done.result.dropped
        summary.records_skipped += done.result.skipped
        summary.records_ungrounded += done.result.ungrounded
        counts["entities"] += len(done.result.entities)
        counts["relations"] += len(done.result.relations)

    async def one(pack: list[tuple[str, str]]) -> None:
        try:
            results: list[ChunkExtraction | Exception] = await extractor.extract_pack(pack, ask, config)
        except StoreDamaged:  # the store's file, not the chunk: no other chunk can be saved either
            raise
        except Exception as exc:  # the whole call failed: every chunk of it
            results = [exc] * len(pack)
        for (cid, text), done in zip(pack, results, strict=True):
            if isinstance(done, Exception):
                fail(cid, planned[cid][1], done)
            else:
                save(cid, text, done)
        progress.update(len(pack))
        progress.set_postfix_str(  # raw counts: merging the same names across chunks makes them smaller
            f"{run.calls} calls, {run.prompt_tokens + run.completion_tokens:,} tokens, before merging "
            f"{counts['entities']} entities, {counts['relations']} relations",
            refresh=False,
        )

    # A few workers take the calls in turn from one queue, instead of a task per call from the start: the
    # tasks of 10^6 tiny documents held 10 GB before the first answer. Twice the model's concurrency keeps
    # it busy while some wait to retry.
    calls = extractor.packs([(cid, text) for cid, (text, _) in planned.items()], config, token_counter)
    queue = iter(calls)

    async def worker() -> None:
        for pack in queue:
            await one(pack)

    tasks = [asyncio.ensure_future(worker()) for _ in range(min(len(calls), 2 * max_concurrency))]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        # Cancellation or an interrupt: stop the other chunks too instead of leaving them running.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        progress.close()
    return failed


def _same_document(known: DocumentRecord, content: str, doc: Document) -> bool:
    """Whether the document stored as ``known`` is ``doc`` already: the same chunks, all extracted, and the
    same metadata (which the results carry and the filters read)."""
    return known.hash == content and not known.failed and known.metadata == doc.metadata
