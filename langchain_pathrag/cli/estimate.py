"""``pathrag index --estimate``: the calls and tokens an index would spend, printed before any is spent.

No model is made or called and nothing is written: the documents are planned against the store when it exists
(unchanged documents and chunks extracted already cost nothing), else against an empty index. See
:mod:`pathrag.index.estimate` for how a chunk is priced.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .rendering import report, token_note

if TYPE_CHECKING:
    from pathrag import Document, PathRAGIndex

__all__ = ["print_estimate"]


def print_estimate(
    store: Path,
    docs: list[Document],
    extractor: str,
    keep_ids: Callable[[PathRAGIndex, list[Document]], list[Document]] | None = None,
    *,
    pack: int = 0,
) -> None:
    """Print what indexing ``docs`` into ``store`` with ``extractor`` would cost (``keep_ids``: the ids earlier
    versions gave the documents, as ``pathrag index`` keeps them; ``pack``: ``--pack``)."""
    from pathrag import HashingEmbedder, IndexConfig, PathRAGIndex
    from pathrag.index.extraction import ExtractionConfig

    from .store import opened, read_meta

    config = IndexConfig(show_progress=False, extraction=ExtractionConfig(pack_tokens=pack))
    if read_meta(store) is None:  # no store yet: everything is new
        estimate = PathRAGIndex(embedder=HashingEmbedder(), config=config, extractor=extractor).estimate(docs)
    else:
        with opened(store, config=config, extractor=extractor) as idx:  # read only: its embeddings are not made
            estimate = idx.estimate(keep_ids(idx, docs) if keep_ids is not None else docs)
    calls = (
        f"{estimate.calls:,}"
        if estimate.calls == estimate.max_calls
        else f"{estimate.calls:,} to {estimate.max_calls:,}"
    )
    rows: list[tuple[str, object]] = [
        ("documents to index", estimate.documents),
        ("documents unchanged", estimate.unchanged),
        ("chunks", estimate.chunks),
        ("chunks to extract", estimate.chunks_to_extract),
        ("LLM calls", calls if extractor != "lexical" else "0 (the lexical extractor calls no model)"),
    ]
    if extractor != "lexical":
        rows += [
            ("prompt tokens", f"about {estimate.prompt_tokens:,}{token_note()}"),
            ("completion tokens", f"about {estimate.completion_tokens:,} (answers estimated)"),
            ("tokens per document", f"about {estimate.tokens_per_document:,.0f}"),
        ]
    report(f"Estimate for {store} (no model called, nothing written):", rows)
    if extractor != "lexical" and estimate.chunks_to_extract:
        gleaning = (
            "the most calls are counted (each gleaning round run); " if estimate.max_calls > estimate.calls else ""
        )
        print(
            f"  {gleaning}not counted: answers cached in the store, and the description summaries of names met in "
            "many chunks"
        )
