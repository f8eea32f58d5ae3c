"""The index's values: what it is given (:class:`Document`, :class:`IndexConfig`) and what a write
answers (:class:`InsertSummary`, :class:`DeleteSummary`, :class:`ChunkFailure`)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..ids import digest
from ..llm.tokens import TokenCounter
from ..names import replace_surrogates
from .extraction import ExtractionConfig

__all__ = [
    "INSERT_BATCH",
    "MAX_METADATA_BYTES",
    "ChunkFailure",
    "DeleteSummary",
    "Document",
    "IndexConfig",
    "InsertSummary",
    "as_documents",
    "iter_documents",
]

INSERT_BATCH = 20_000
"""The most documents one commit of an insert takes: a bigger insert commits them this many at a time, read
from its iterable as it goes, so that its memory does not grow with the number of documents (about 8 KB a
document in flight, measured; 10^6 tiny documents in one commit held 14.6 GB). Each commit is whole, as any
is: a crash in the middle of a big insert leaves the batches before it in the store, and running the insert
again skips them at no LLM cost."""


MAX_METADATA_BYTES = 16_384
"""The most bytes a document's metadata may take as JSON (UTF-8). It is stored with the document and comes
back on every item drawn from it (a path carries the metadata of each of its documents), so it is meant
for what names and finds a source (``source``, ``title``, ``page``, ``user``...): 16 KiB holds hundreds of
such keys. A document over it is refused (``ValueError`` naming ``metadata``), never cut short."""


def json_metadata(metadata: Any, *, what: str = "metadata") -> dict[str, Any]:
    """``metadata`` as the JSON a store keeps and gives back: keys as strings, tuples and sets as lists.

    >>> json_metadata({"source": "a/b.md", "pages": (1, 2)})
    {'source': 'a/b.md', 'pages': [1, 2]}

    Raises:
        TypeError: ``metadata`` is not a mapping.
        ValueError: a value that is not JSON (a date, an object: convert it first, e.g. to its ``str``), a float
            that is not finite, nesting deeper than 32 levels, or JSON over :data:`MAX_METADATA_BYTES`.
    """
    if not isinstance(metadata, Mapping):
        raise TypeError(f"{what} must be a dict, got {type(metadata).__name__}")

    def safe(value: Any, key: str, depth: int) -> Any:
        if depth > 32:
            raise ValueError(f"{what} nests deeper than 32 levels")
        if value is None or isinstance(value, (bool, int)):
            return value
        if isinstance(value, str):
            return replace_surrogates(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"{what} must be JSON-serialisable: {key} is {value!r}")
            return value
        if isinstance(value, Mapping):
            return {replace_surrogates(str(k)): safe(v, f"{key}[{k!r}]", depth + 1) for k, v in value.items()}
        if isinstance(value, (list, tuple, set, frozenset)):
            items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
            return [safe(v, f"{key}[{n}]", depth + 1) for n, v in enumerate(items)]
        raise ValueError(f"{what} must be JSON-serialisable: {key} is a {type(value).__name__}")

    cleaned: dict[str, Any] = {replace_surrogates(str(k)): safe(v, f"key {k!r}", 1) for k, v in metadata.items()}
    size = len(json.dumps(cleaned, ensure_ascii=False).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(
            f"{what} takes {size:,} bytes as JSON; a document keeps at most {MAX_METADATA_BYTES:,} "
            "(keep large values elsewhere and put a reference to them in the metadata)"
        )
    return cleaned


class Document(BaseModel):
    """A document to index: its text, or its chunks already split (the adapters use their splitters).

    Without ``chunks`` the whole text is one chunk. Without ``id`` the id is a hash of the content. Lone
    surrogates in ``text`` and ``chunks`` (text no encoding can write, e.g. from ``errors="surrogateescape"``)
    become U+FFFD; an ``id`` holding one is refused (a changed id would not find the document again).
    ``metadata`` is kept with the document and comes back on every result drawn from it; it is made
    JSON-safe (:func:`json_metadata`) and may take up to :data:`MAX_METADATA_BYTES` as JSON.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = ""
    id: str | None = None
    chunks: tuple[str, ...] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("text")
    @classmethod
    def _encodable_text(cls, text: str) -> str:
        return replace_surrogates(text)

    @field_validator("metadata", mode="before")
    @classmethod
    def _json_metadata(cls, metadata: Any) -> dict[str, Any]:
        return json_metadata(metadata)

    @field_validator("chunks")
    @classmethod
    def _encodable_chunks(cls, chunks: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if chunks is None else tuple(replace_surrogates(c) for c in chunks)

    @field_validator("id")
    @classmethod
    def _encodable_id(cls, id: str | None) -> str | None:
        if id is not None and replace_surrogates(id) != id:
            raise ValueError(f"document id {id!r} holds a lone surrogate (not encodable as UTF-8)")
        return id

    def chunk_texts(self) -> list[str]:
        """The texts to index: ``chunks`` if given, else the whole ``text``; blank ones are dropped."""
        texts = self.chunks if self.chunks is not None else (self.text,)
        return [t for t in texts if t.strip()]

    def content_hash(self) -> str:
        """A hash of :meth:`chunk_texts`: the default id, and how a changed document is noticed."""
        return digest(*self.chunk_texts())


@dataclass(frozen=True)
class IndexConfig:
    """Knobs of the pipeline. The defaults follow the paper and the reference implementation."""

    extraction: ExtractionConfig = field(default_factory=ExtractionConfig)
    max_concurrency: int = 8
    max_attempts: int = 4
    retry_initial_wait: float = 1.0
    retry_max_wait: float = 30.0
    cache: bool = True
    summary_threshold_tokens: int = 500
    summary_max_words: int = 150
    directed_relations: bool = False
    show_progress: bool = False
    token_counter: TokenCounter | None = None
    lock_timeout: float = 0.0
    """Seconds a write waits for its turn when another process writes the same directory. 0: refused at once
    while another process writes. Otherwise the writes extract side by side and take turns to apply."""

    def __post_init__(self) -> None:
        if self.max_concurrency < 1 or self.max_attempts < 1:
            raise ValueError("max_concurrency and max_attempts must be at least 1")


@dataclass(frozen=True)
class ChunkFailure:
    """A chunk whose extraction failed: its id, the documents it belongs to, and the error."""

    chunk_id: str
    document_ids: tuple[str, ...]
    error: str


@dataclass
class InsertSummary:
    """What an insert did and cost."""

    documents: int = 0
    unchanged: int = 0
    chunks: int = 0
    chunks_extracted: int = 0
    entities: int = 0
    relations: int = 0
    llm_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: list[ChunkFailure] = field(default_factory=list)
    removed: int = 0
    """Known documents given again with no text: removed, as :meth:`PathRAGIndex.delete` would."""
    replaced: list[str] = field(default_factory=list)
    """Ids of documents the index already held that got new content (counted in ``documents`` too)."""
    records_dropped: int = 0
    """Extracted records over the per-chunk cap (:func:`pathrag.index.extraction.max_records_for`), not kept."""
    records_skipped: int = 0
    """Malformed records of the model's answers (missing fields, an empty name), not kept."""
    records_ungrounded: int = 0
    """Records naming what their chunk never spells (the prompt's examples parroted, records for another text;
    see :mod:`pathrag.index.grounding`), not kept."""

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: InsertSummary) -> None:
        """Count ``other`` (a later commit of the same insert) in this summary."""
        for name, value in vars(other).items():
            mine = getattr(self, name)
            setattr(self, name, mine + value)  # numbers add up, lists follow each other


@dataclass
class DeleteSummary:
    """What a delete did: documents removed (and ids not found), chunks released, entities and
    relations removed or rebuilt, and the LLM calls it made (summaries of what was rebuilt)."""

    documents: int = 0
    missing: list[str] = field(default_factory=list)
    chunks: int = 0
    entities_removed: int = 0
    relations_removed: int = 0
    entities_updated: int = 0
    relations_updated: int = 0
    llm_calls: int = 0


def as_documents(documents: Iterable[Document | str]) -> list[Document]:
    """``documents`` (a document, a text, or several) as :class:`Document` objects, checked; documents with no
    text and no id are dropped (one with an id but no text is kept: inserting it removes it)."""
    return list(iter_documents(documents))


def iter_documents(documents: Iterable[Document | str]) -> Iterator[Document]:
    """:func:`as_documents`, one at a time as ``documents`` yields them."""
    if isinstance(documents, (str, Document)):
        documents = [documents]
    for doc in documents:
        if isinstance(doc, str):
            doc = Document(text=doc)
        elif not isinstance(doc, Document):
            raise TypeError(f"expected pathrag.Document or str, got {type(doc).__name__}")
        try:
            json.dumps(doc.metadata)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"document metadata must be JSON-serialisable: {exc}") from exc
        if doc.chunk_texts() or doc.id is not None:  # an emptied document with an id removes it
            yield doc
