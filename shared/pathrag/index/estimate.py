"""What an insert would cost, before paying for it: calls and tokens, with no model call.

:meth:`pathrag.PathRAGIndex.estimate` plans an insert as :meth:`~pathrag.PathRAGIndex.insert` would (unchanged
documents and chunks whose records the store holds already cost nothing) and prices each chunk left to
extract by :func:`chunk_cost`:

* the extraction prompt is built and counted exactly (the index's token counter);
* its answer is not known before it is given: it is taken as :data:`ANSWER_TOKENS_PER_TEXT_TOKEN` tokens per
  token of the chunk (within the output cap), about what the default prompt's answers measured;
* each gleaning round (at most ``max_gleaning``; it stops as soon as a round brings nothing new) sends the
  extraction prompt again with the answers so far, and is taken to answer a fifth as much.

So the calls are a range (no gleaning needed, every round run) and the tokens the upper end of it. Not
counted: answers cached in the store from an earlier run (they cost nothing), and the description summaries
of names met in many chunks, which depend on what the answers say. The lexical extractor costs nothing.

>>> from pathrag.index.extraction import ExtractionConfig
>>> cost = chunk_cost("Mara Quill sails the Gull to Saltmere.", ExtractionConfig())
>>> cost.calls, cost.max_calls, cost.prompt_tokens > 1_000
(1, 2, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..llm.prompts import GLEANING_PROMPT
from ..llm.tokens import TokenCounter, count_tokens
from .extraction import ExtractionConfig, build_extraction_prompt

__all__ = ["ANSWER_TOKENS_PER_TEXT_TOKEN", "ChunkCost", "IndexEstimate", "chunk_cost"]

ANSWER_TOKENS_PER_TEXT_TOKEN = 3.0
"""Answer tokens per token of the chunk, for the estimate: the default prompt's answers to the demo's chunks
run 3 to 3.5 times as long as the chunk (descriptions restate the text); the issue's 30 encyclopedia
paragraphs, about 3 with both calls."""

COMPACT_ANSWER_TOKENS_PER_TEXT_TOKEN = 1.5
"""The same for the compact prompt's answers (:mod:`pathrag.index.compact`): half the default prompt's (one line
per record, descriptions of at most 25 words). Measured: the real 1.5B local model's answers ran 1.8 times its
MuSiQue paragraphs; the demo's records written in the compact lines keep the estimate within 30 % (a test)."""

GLEANING_ANSWER_SHARE = 0.2
"""A gleaning round's answer, as a share of the first answer, for the estimate."""


@dataclass(frozen=True)
class ChunkCost:
    """The estimated cost of extracting one chunk: ``calls`` to ``max_calls`` calls, and the tokens of the
    most calls."""

    calls: int = 0
    max_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: ChunkCost) -> ChunkCost:
        return ChunkCost(
            self.calls + other.calls,
            self.max_calls + other.max_calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass
class IndexEstimate:
    """What :meth:`pathrag.PathRAGIndex.estimate` says an insert would cost (see the module docstring).

    ``documents``: new or changed documents (``unchanged``: the others); ``chunks``: their chunks;
    ``chunks_to_extract``: those whose records the store does not hold yet; ``calls`` to ``max_calls``
    model calls; ``prompt_tokens`` and ``completion_tokens`` of the most calls (the answers estimated)."""

    extractor: str = "compact"
    documents: int = 0
    unchanged: int = 0
    chunks: int = 0
    chunks_to_extract: int = 0
    calls: int = 0
    max_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def tokens_per_document(self) -> float:
        """Tokens per new or changed document (0 without one)."""
        return self.tokens / self.documents if self.documents else 0.0

    def add(self, cost: ChunkCost, chunks: int = 1) -> None:
        """Count the cost of ``chunks`` chunks extracted together."""
        self.chunks_to_extract += chunks
        self.calls += cost.calls
        self.max_calls += cost.max_calls
        self.prompt_tokens += cost.prompt_tokens
        self.completion_tokens += cost.completion_tokens


def chunk_cost(text: str, config: ExtractionConfig, token_counter: TokenCounter | None = None) -> ChunkCost:
    """The estimated cost of extracting ``text`` with the model (see the module docstring)."""
    prompt = count_tokens(build_extraction_prompt(text, config), token_counter)
    answer = min(round(ANSWER_TOKENS_PER_TEXT_TOKEN * count_tokens(text, token_counter)), config.max_answer_tokens)
    follow_up = count_tokens(GLEANING_PROMPT.format(extraction_prompt="", previous_answers="", completion_delimiter=""))
    prompt_tokens, completion_tokens, answers = prompt, answer, answer
    for _ in range(config.max_gleaning):
        gleaned = round(GLEANING_ANSWER_SHARE * answer)
        prompt_tokens += prompt + answers + follow_up
        completion_tokens += gleaned
        answers += gleaned
    return ChunkCost(1, 1 + config.max_gleaning, prompt_tokens, completion_tokens)
