"""Who turns a chunk into records: the language model (by the compact prompt, the default, or the paper's), or
the lexical rules (no model at all).

An index takes one extractor (``PathRAGIndex(..., extractor="lexical")``). The extractor decides four
things: the calls its chunks are asked in, the records of a chunk, the id a chunk's records are kept under,
and the hash that says whether a document is indexed already. The two model extractors (``"compact"`` and
``"llm"``) share the ids of every earlier version: a chunk a model extracted counts as extracted for either
prompt, so a store indexed before the compact prompt became the default is not paid for again. Any other
extractor puts its name in both, so that one store can hold documents indexed either way, and indexing a
folder again with a model replaces the lexical records (and the other way round) instead of counting them
unchanged.

>>> import asyncio
>>> from pathrag.index.extraction import ExtractionConfig
>>> lexical = as_extractor("lexical")
>>> done = asyncio.run(lexical.extract("Mara Quill sails to Saltmere.", "c1", None, ExtractionConfig()))
>>> sorted(e.name for e in done.result.entities), done.answers
(['MARA QUILL', 'SALTMERE'], [])
>>> lexical.chunk_id("Mara") != as_extractor("llm").chunk_id("Mara") == as_extractor("compact").chunk_id("Mara")
True
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from ..ids import chunk_id, digest
from ..llm.tokens import TokenCounter, count_tokens
from .compact import build_compact_prompt, extract_compact
from .estimate import COMPACT_ANSWER_TOKENS_PER_TEXT_TOKEN, ChunkCost, chunk_cost
from .extraction import ChunkExtraction, ExtractionConfig, _combine, extract_records, max_records_for
from .lexical import lexical_records
from .packing import Chunk, build_packed_prompt, extract_pack, packs
from .values import Document

__all__ = ["EXTRACTORS", "CompactExtractor", "Extractor", "LLMExtractor", "LexicalExtractor", "as_extractor"]

Ask = Callable[[str], Awaitable[str]]


class Extractor:
    """How an index turns a chunk into records (see the module docstring); subclass it for another kind.

    ``uses_llm`` says whether :meth:`extract` needs the index's model; ``name`` goes into chunk ids and
    document hashes when it does not (a model's records are kept under the text alone, whatever the prompt)."""

    name: str = ""
    uses_llm: bool = False

    def chunk_id(self, text: str) -> str:
        """The id the records of a chunk of ``text`` are kept under."""
        return chunk_id(text) if self.uses_llm else f"chunk-{digest('extractor:' + self.name, text)}"

    def content_hash(self, document: Document) -> str:
        """The hash a document's record keeps: the same one means "indexed already, by this extractor" (by a
        model, for the model extractors)."""
        content = document.content_hash()
        return content if self.uses_llm else digest(content, "extractor:" + self.name)

    async def extract(self, text: str, chunk_id: str, ask: Ask | None, config: ExtractionConfig) -> ChunkExtraction:
        """The records of one chunk (``ask``: the index's model behind its cache, ``None`` without one)."""
        raise NotImplementedError

    def packs(
        self, chunks: Sequence[Chunk], config: ExtractionConfig, token_counter: TokenCounter | None = None
    ) -> list[list[Chunk]]:
        """The calls ``chunks`` (id, text) are extracted in, in order: one chunk each, unless the extractor packs
        several into one call (:mod:`pathrag.index.packing`)."""
        return [[chunk] for chunk in chunks]

    async def extract_pack(
        self, pack: Sequence[Chunk], ask: Ask | None, config: ExtractionConfig
    ) -> list[ChunkExtraction | Exception]:
        """The records of each chunk of one of :meth:`packs`, in order; a chunk that failed alone gets its
        exception. Raises when the whole pack failed."""
        return [await self.extract(text, cid, ask, config) for cid, text in pack]

    def cost(
        self, texts: Sequence[str], config: ExtractionConfig, token_counter: TokenCounter | None = None
    ) -> ChunkCost:
        """The estimated cost of extracting one of :meth:`packs` (its chunks' ``texts``; see
        :mod:`pathrag.index.estimate`); none by default."""
        return ChunkCost()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


NO_LLM = "this index has no llm, so it cannot extract new chunks (or pass extractor='lexical')"


def needs_llm(ask: Ask | None) -> Ask:
    """``ask``, which an extractor that uses a model cannot do without: :data:`NO_LLM` when it is ``None``."""
    if ask is None:
        raise ValueError(NO_LLM)
    return ask


class LLMExtractor(Extractor):
    """The language model's extraction (:func:`pathrag.index.extraction.extract_records`)."""

    name, uses_llm = "llm", True

    async def extract(self, text: str, chunk_id: str, ask: Ask | None, config: ExtractionConfig) -> ChunkExtraction:
        """The model's records of the chunk (``ask`` is required)."""
        return await extract_records(text, needs_llm(ask), config, chunk_id=chunk_id)

    def cost(
        self, texts: Sequence[str], config: ExtractionConfig, token_counter: TokenCounter | None = None
    ) -> ChunkCost:
        """The model's calls and tokens for the chunk, estimated (:func:`pathrag.index.estimate.chunk_cost`)."""
        return sum((chunk_cost(text, config, token_counter) for text in texts), ChunkCost())


class LexicalExtractor(Extractor):
    """Records by the rules of :mod:`pathrag.index.lexical`: no model, no network, no cost but CPU."""

    name, uses_llm = "lexical", False

    async def extract(self, text: str, chunk_id: str, ask: Ask | None, config: ExtractionConfig) -> ChunkExtraction:
        """The lexical records of the chunk (``ask`` and ``config`` are not used)."""
        # the same per-chunk cap as a model's answer: a chunk of a million names keeps one per 10 characters
        return ChunkExtraction(answers=[], result=_combine([lexical_records(text, chunk_id)], max_records_for(text)))


class CompactExtractor(Extractor):
    """The compact prompt (:mod:`pathrag.index.compact`), one record per line: one short call per chunk, or per
    pack of small chunks with ``config.pack_tokens`` (:mod:`pathrag.index.packing`)."""

    name, uses_llm = "compact", True

    async def extract(self, text: str, chunk_id: str, ask: Ask | None, config: ExtractionConfig) -> ChunkExtraction:
        """The model's records of the chunk by the compact prompt (``ask`` is required)."""
        return await extract_compact(text, needs_llm(ask), config, chunk_id=chunk_id)

    def packs(
        self, chunks: Sequence[Chunk], config: ExtractionConfig, token_counter: TokenCounter | None = None
    ) -> list[list[Chunk]]:
        """Consecutive chunks packed up to ``config.pack_tokens`` (:func:`pathrag.index.packing.packs`)."""
        return packs(chunks, config.pack_tokens, token_counter)

    async def extract_pack(
        self, pack: Sequence[Chunk], ask: Ask | None, config: ExtractionConfig
    ) -> list[ChunkExtraction | Exception]:
        """The records of each chunk of the pack from one call (:func:`pathrag.index.packing.extract_pack`)."""
        return await extract_pack(pack, needs_llm(ask), config)

    def cost(
        self, texts: Sequence[str], config: ExtractionConfig, token_counter: TokenCounter | None = None
    ) -> ChunkCost:
        """One call: the prompt counted exactly, the answer estimated (see :mod:`pathrag.index.estimate`)."""
        if len(texts) == 1:
            prompt = count_tokens(build_compact_prompt(texts[0], config), token_counter)
        else:
            prompt = count_tokens(build_packed_prompt(texts, config), token_counter)
        text_tokens = sum(count_tokens(text, token_counter) for text in texts)
        answer = round(COMPACT_ANSWER_TOKENS_PER_TEXT_TOKEN * text_tokens)
        return ChunkCost(1, 1, prompt, min(answer, config.max_answer_tokens))


EXTRACTORS: dict[str, type[Extractor]] = {"llm": LLMExtractor, "compact": CompactExtractor, "lexical": LexicalExtractor}
"""The extractors known by name (``extractor="lexical"``)."""


def as_extractor(extractor: str | Extractor) -> Extractor:
    """``extractor`` as an :class:`Extractor`: one of :data:`EXTRACTORS` by name, or an instance as it is.

    >>> as_extractor("lexical")
    LexicalExtractor()
    >>> as_extractor("spacy")
    Traceback (most recent call last):
    ...
    ValueError: extractor must be one of 'llm', 'compact', 'lexical' (or an Extractor), not 'spacy'
    """
    if isinstance(extractor, Extractor):
        return extractor
    if isinstance(extractor, str) and extractor in EXTRACTORS:
        return EXTRACTORS[extractor]()
    known = ", ".join(repr(name) for name in EXTRACTORS)
    raise ValueError(f"extractor must be one of {known} (or an Extractor), not {extractor!r}")
