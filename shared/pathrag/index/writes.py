"""A write from start to commit, in the order it runs: extract, plan, apply.

:class:`Writer` runs the writes of one :class:`~pathrag.PathRAGIndex` (one at a time: the index holds the
locks). An insert of a batch of documents:

1. reads which documents are new or changed and which of their chunks have no saved records
   (:func:`pathrag.index.extract.select`), with no lock but the index's own;
2. extracts those chunks with the index's extractor (the LLM, or rules), saving each one's records as it lands
   (:func:`pathrag.index.extract.extract_chunks`): processes writing the same store do this side by side;
3. commits (:meth:`pathrag.index.commit.Committer.commit`): the plan (:meth:`pathrag.index.plan.Planner.insert`)
   reads the committed state again, claims the chunks for the documents and rebuilds what they touch into a
   change set, which the backend then applies at once. Should another writer have dropped a chunk the plan
   needs meanwhile, the plan says so and the insert goes back to step 1 for that chunk.

A delete and an import of records (:meth:`~pathrag.PathRAGIndex.aadd_records`) extract nothing: they only
commit their plan.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

from tqdm.auto import tqdm

from ..llm.calls import LLMCaller, OperationCalls
from ..llm.client import LanguageModel
from ..vectors.base import Embedder
from ..vectors.embedders import LazyEmbedder
from .backend import IndexBackend
from .commit import Committer
from .extract import extract_chunks, select
from .extractors import NO_LLM, Extractor
from .plan import Ask, Planner, RecordsToAdd
from .rebuild import Summariser
from .records import RecordTables
from .values import DeleteSummary, Document, IndexConfig, InsertSummary

__all__ = ["Writer"]


class Writer:
    """The writes of one index. ``llm`` gives the index's LLM at the time of each call (it may be swapped
    between writes); ``embedder`` is the one of its own vector indexes, if any."""

    def __init__(
        self,
        config: IndexConfig,
        backend: IndexBackend,
        records: RecordTables,
        committer: Committer,
        summariser: Summariser,
        llm: Callable[[], LanguageModel | None],
        extractor: Callable[[], Extractor],
        embedder: Embedder | None,
    ) -> None:
        self.config = config
        self.backend = backend
        self.records = records
        self.committer = committer
        self._llm = llm
        self._extractor = extractor
        self._embedder = embedder
        self._calls = LLMCaller(
            backend.cache,
            use_cache=config.cache,
            max_attempts=config.max_attempts,
            retry_initial_wait=config.retry_initial_wait,
            retry_max_wait=config.retry_max_wait,
            token_counter=config.token_counter,
        )
        self.planner = Planner(
            records,
            committer,
            summariser,
            directed=config.directed_relations,
            check_writable=lambda embeds: self.check_writable(embeds=embeds),
        )

    async def insert(self, documents: list[Document], seen: dict[str, str]) -> InsertSummary:
        """One commit of an insert; ``seen``: the content hash of every document id of the insert so far."""
        summary = InsertSummary()
        run = OperationCalls(self.config.max_concurrency)
        failed: set[str] = set()
        shown = False
        extractor = self._extractor()  # one extractor for the whole write
        while True:
            # 1. what to extract, with no lock but this index's own
            self.backend.refresh()
            chosen = select(documents, failed, seen, self.records, extractor)
            if chosen.todo and not shown:
                shown = True
                self.check_writable()  # before paying for any LLM call
                self._announce(len(chosen.todo), len(chosen.planned), len(chosen.missing))
            # 2. extraction: each chunk's records are saved as they arrive (by content: another process may
            # save the same chunk, the first one is kept)
            missing = {cid: chosen.planned[cid] for cid in chosen.missing}
            del chosen  # selected again while planning: not held twice
            failed |= await self._extract(missing, run, summary, extractor)
            # 3. plan and apply
            plan = functools.partial(
                self.planner.insert, documents, set(failed), seen, run, self._asker(), self.phase, extractor
            )
            done = await self.committer.commit(plan)
            if done is not None:
                break
            # else another writer dropped chunks this insert needs since they were extracted: again
        for name in ("unchanged", "documents", "removed", "replaced", "chunks", "entities", "relations"):
            setattr(summary, name, getattr(done, name))
        summary.llm_calls, summary.cache_hits = run.calls, run.hits
        summary.prompt_tokens, summary.completion_tokens = run.prompt_tokens, run.completion_tokens
        return summary

    async def _extract(
        self,
        planned: dict[str, tuple[str, list[str]]],
        run: OperationCalls,
        summary: InsertSummary,
        extractor: Extractor,
    ) -> set[str]:
        """Extract ``planned`` chunks by ``extractor`` (with the index's LLM, if any); the ids of those that failed."""
        llm = self._llm()
        if planned and llm is None and extractor.uses_llm:
            raise ValueError(NO_LLM)
        return await extract_chunks(
            planned,
            self._calls.bound(llm, run) if llm is not None else None,
            self.config.extraction,
            self.records,
            summary,
            run,
            extractor=extractor,
            max_concurrency=self.config.max_concurrency,
            show_progress=self.config.show_progress,
            token_counter=self.config.token_counter,
        )

    async def delete(self, document_ids: list[str]) -> DeleteSummary:
        """One commit removing ``document_ids`` (see :meth:`pathrag.index.plan.Planner.delete`)."""
        run = OperationCalls(self.config.max_concurrency)
        ask = self._asker()
        summary = await self.committer.commit(lambda: self.planner.delete(document_ids, run, ask))
        summary.llm_calls = run.calls
        return summary

    async def add_records(self, added: RecordsToAdd) -> InsertSummary:
        """One commit keeping ``added`` (see :meth:`pathrag.index.plan.Planner.add_records`)."""
        run = OperationCalls(self.config.max_concurrency)
        ask = self._asker()
        summary = await self.committer.commit(lambda: self.planner.add_records(added, run, ask))
        summary.llm_calls = run.calls
        return summary

    def check_writable(self, *, embeds: bool = True) -> None:
        """Fail in one line before any LLM call when the store cannot be written, or for a write that
        ``embeds``, when a lazy embedder cannot be made (see :class:`LazyEmbedder`)."""
        self.backend.check_writable()
        if embeds and isinstance(self._embedder, LazyEmbedder):
            self._embedder.ready()

    def phase(self, text: str) -> None:
        """With ``show_progress``: one line on stderr saying which step of a write starts (after the bars)."""
        if self.config.show_progress:
            tqdm.write(text, file=sys.stderr)

    def _announce(self, documents: int, chunks: int, missing: int) -> None:
        saved = chunks - missing
        self.phase(
            f"{documents:,} new or changed document{'s' * (documents != 1)}: {missing:,} of "
            f"{chunks:,} chunk{'s' * (chunks != 1)} to extract" + (f", {saved:,} saved already" if saved else "")
        )

    def _asker(self) -> Ask | None:
        """The index's LLM for a plan's summaries, when it has one."""
        return self._ask if self._llm() is not None else None

    async def _ask(self, prompt: str, run: OperationCalls) -> str:
        """The index's LLM, behind its cache, the operation's concurrency limit and retries."""
        llm = self._llm()
        assert llm is not None
        return await self._calls.ask(llm, prompt, run)
