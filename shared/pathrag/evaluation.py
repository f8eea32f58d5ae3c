"""The papers' evaluation on your own index: generated questions, pairwise LLM-judge win rates, token cost.

The protocol of the PathRAG and LightRAG papers, as a tool:

1. **Questions.** A model describes the corpus from excerpts spread over it, imagines users and their
   tasks, then writes questions per (user, task) that need the corpus as a whole
   (:func:`agenerate_questions`). They are saved as ``questions.jsonl`` and can be reused.
2. **Answers.** Every question is answered once per :class:`Configuration`: a name and a function
   ``query -> context``. The built-in configurations send exactly the prompt ``pathrag query`` sends
   (:func:`pathrag.context.answer_prompt`); a configuration that returns plain context text gets the
   shared answer prompt (the context, then :data:`~pathrag.prompts.ANSWER_INSTRUCTIONS`). Prompt tokens,
   answer tokens, the tokens of LLM calls made while retrieving (keywords) and latency are recorded.
3. **Judging.** For each pair of configurations and each question a judge model compares the two
   answers on comprehensiveness, diversity, logicality, relevance and coherence, plus an overall
   verdict, **once in each order**. Each order counts as one judgement; the report gives win rates and
   how often the two orders disagree (the judge's position bias). A verdict that cannot be read is
   asked for once more, then counted as invalid; it never stops the run.

Every model answer is journalled in ``<run_dir>/calls.jsonl`` as it arrives, keyed by model and prompt,
so an interrupted run (crash, Ctrl-C, ``kill -9``) loses only calls in flight, and running it again
pays only for what is missing. The run writes ``answers.jsonl``, ``judgements.jsonl``,
``results.json`` and a standalone ``report.html`` (inline SVG, no external assets).

Configurations come from a registry (:func:`register_configuration`): built in are ``default`` (the
index's context), ``paths-only`` (the paper's), ``pathrag-lt`` (the paper's light variant, N = 20 seeds,
K = 5 paths) and ``dense`` (nearest passages, no graph). Each is one line, e.g.::

    register_configuration("k5", lambda index, options: path_configuration(index, options, name="k5", top_k=5))

>>> parse_verdict('{"comprehensiveness": {"winner": "Answer 2", "reason": "more detail"}, '
...               '"diversity": 2, "logicality": "1", "relevance": {"winner": 1}, '
...               '"coherence": {"winner": "answer 1"}, "overall": {"winner": 2, "reason": "fuller"}}')["overall"]
(2, 'fuller')
>>> parse_verdict("Answer 1 is better.") is None
True
>>> tally = DimensionTally(wins_a=3, wins_b=1, both_orders=2, disagreements=1)
>>> tally.win_rate_a, tally.disagreement_rate
(0.75, 0.5)
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import html
import inspect
import json
import logging
import math
import os
import re
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential
from tqdm.auto import tqdm
from typing_extensions import override

from .context import DEFAULT_CONTEXT_TOKENS, PathContext, answer_prompt, build_evidence_context, result_context
from .evaluation_prompts import (
    CORPUS_SUMMARY_PROMPT,
    DIMENSION_DEFINITIONS,
    JUDGE_PROMPT,
    QUESTIONS_PROMPT,
    RETRY_SUFFIX,
    USERS_PROMPT,
)
from .indexing import run_sync
from .llm import LanguageModel, as_language_model
from .models import RetrievedItem
from .prompts import ANSWER_INSTRUCTIONS, KEYWORDS_PROMPT
from .retrieval import RetrievalParams, RetrievalResult, aretrieve
from .tokens import TokenCounter, count_tokens

if TYPE_CHECKING:
    from .indexing import PathRAGIndex

__all__ = [
    "DEFAULT_CONFIGURATIONS",
    "DEFAULT_MAX_TOKENS",
    "DIMENSIONS",
    "AnswerRecord",
    "Configuration",
    "ConfigurationOptions",
    "ConfigurationSummary",
    "DimensionTally",
    "EvalReport",
    "Evaluation",
    "EvaluationError",
    "Judgement",
    "LosingQuestion",
    "OfflineEvalModel",
    "PairResult",
    "Pricing",
    "Question",
    "aevaluate",
    "agenerate_questions",
    "build_configurations",
    "configuration_names",
    "corpus_excerpts",
    "evaluate",
    "index_passages",
    "parse_questions",
    "parse_users",
    "parse_verdict",
    "passage_configuration",
    "path_configuration",
    "read_questions",
    "register_configuration",
    "render_html",
    "shared_answer_prompt",
    "tally_pair",
    "write_questions",
]

logger = logging.getLogger(__name__)

#: The judged dimensions, in report order; "overall" is the judge's verdict all things considered.
DIMENSIONS: tuple[str, ...] = tuple(DIMENSION_DEFINITIONS)
#: The configurations compared when none are named: the first is the reference.
DEFAULT_CONFIGURATIONS: tuple[str, ...] = ("default", "paths-only", "pathrag-lt", "dense")
#: The context budget every configuration gets unless told otherwise: the entry points' default (tokens).
DEFAULT_MAX_TOKENS = DEFAULT_CONTEXT_TOKENS

CALLS_FILE = "calls.jsonl"
QUESTIONS_FILE = "questions.jsonl"
ANSWERS_FILE = "answers.jsonl"
JUDGEMENTS_FILE = "judgements.jsonl"
RESULTS_FILE = "results.json"
REPORT_FILE = "report.html"


class EvaluationError(RuntimeError):
    """The evaluation cannot go on (e.g. no usable questions); the message says why."""


# -- files -------------------------------------------------------------------------------------------


class _Jsonl:
    """An append-only JSON-lines file: each record is flushed at once, a torn last line is skipped on read."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._handle: Any = None

    def read(self) -> Iterable[dict[str, Any]]:
        if not self.path.exists():
            return []
        rows = []
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:  # the line a killed process was writing
                logger.warning("%s: skipping an unreadable line", self.path)
                continue
            if isinstance(row, dict):
                rows.append(row)
        return rows

    def append(self, record: Mapping[str, Any]) -> None:
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = self.path.open("a", encoding="utf-8")
            if self._handle.tell() > 0:
                self._handle.write("\n")  # never glue a record onto a torn last line
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _write_atomically(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step: readers see the old file or the new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide the results from other users
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _jsonl(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


# -- questions ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """A generated (or supplied) question, with the imagined user and task it was written for."""

    text: str
    user: str = ""
    task: str = ""

    @property
    def id(self) -> str:
        """A stable id from the text (whitespace-insensitive), so answers survive reordering."""
        return hashlib.sha256(" ".join(self.text.split()).encode("utf-8")).hexdigest()[:12]

    def to_json(self) -> dict[str, str]:
        """The question as one JSON line's object: ``{"id", "question", "user", "task"}``."""
        return {"id": self.id, "question": self.text, "user": self.user, "task": self.task}


def write_questions(path: str | Path, questions: Iterable[Question]) -> None:
    """Save questions as JSON lines (``{"id", "question", "user", "task"}``), atomically."""
    _write_atomically(path, _jsonl(q.to_json() for q in questions))


def read_questions(path: str | Path) -> list[Question]:
    """Load questions from JSON lines (as written by :func:`write_questions`) or plain text, one per line.

    Blank lines and duplicates are skipped. Raises :class:`EvaluationError` if the file holds none.
    """
    found: dict[str, Question] = {}
    text = Path(path).read_text(encoding="utf-8-sig")
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        row: Any = None
        if line.startswith("{"):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                row = None
        if isinstance(row, dict):
            value = row.get("question") or row.get("text")
            question = (
                Question(str(value).strip(), str(row.get("user") or ""), str(row.get("task") or ""))
                if isinstance(value, str) and value.strip()
                else None
            )
        else:
            question = Question(line)
        if question is not None:
            found.setdefault(question.id, question)
    if not found:
        raise EvaluationError(f"no questions in {path}")
    return list(found.values())


def index_passages(index: PathRAGIndex) -> list[str]:
    """The text of every live chunk of ``index``, by document id, then position (imported records have none)."""
    ids = [cid for doc_id in sorted(index.documents) for cid in index.documents[doc_id].chunks]
    if callable(getattr(index, "chunk_texts", None)):  # reads only the texts, not the extraction records
        texts = index.chunk_texts(ids)
    else:
        texts = {cid: chunk.text if (chunk := index.chunks.get(cid)) is not None else "" for cid in ids}
    passages = list(dict.fromkeys(t.strip() for cid in ids if (t := texts.get(cid)) and t.strip()))
    if not passages:  # an imported graph's passages live in the chunk index only
        passages = [text for cid in _index_ids(index.chunk_index) if (text := _item_text(index.chunk_index, cid))]
    return list(dict.fromkeys(passages))


def _index_ids(vectors: Any) -> list[str]:
    return list(vectors.ids()) if callable(getattr(vectors, "ids", None)) else []


def _item_text(vectors: Any, item_id: str) -> str:
    """The text a vector index keeps for ``item_id`` ("" if it keeps none or cannot say)."""
    item = vectors.get(item_id) if callable(getattr(vectors, "get", None)) else None
    return str(getattr(item, "text", "") or "").strip()


def _cut(text: str, max_tokens: int, token_counter: TokenCounter | None) -> str:
    """The longest word prefix of ``text`` within ``max_tokens`` (binary search over words)."""
    words = text.split()
    if count_tokens(" ".join(words), token_counter) <= max_tokens:
        return " ".join(words)
    low, high = 0, len(words)
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(" ".join(words[:middle]), token_counter) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low]) + " …"


def corpus_excerpts(
    passages: Sequence[str], *, max_tokens: int = 6000, token_counter: TokenCounter | None = None
) -> str:
    """Numbered excerpts spread evenly over ``passages``, within about ``max_tokens``.

    A corpus too large for the budget is sampled at even intervals (so every part of it is seen), each
    sampled passage cut to an equal share of the budget.

    >>> print(corpus_excerpts(["Alpha one.", "Beta two."], token_counter=len))
    [1] Alpha one.
    <BLANKLINE>
    [2] Beta two.
    """
    if not passages:
        return ""
    total = sum(count_tokens(p, token_counter) for p in passages)
    if total <= max_tokens:
        chosen = list(passages)
        share = max_tokens
    else:
        # at least ~200 tokens per excerpt: shorter ones say too little about what a document is about
        k = max(1, min(len(passages), max_tokens // 200))
        chosen = [passages[math.floor(i * len(passages) / k)] for i in range(k)]
        share = max(1, max_tokens // k)
    return "\n\n".join(f"[{i}] {_cut(p, share, token_counter)}" for i, p in enumerate(chosen, 1))


# -- defensive parsing of model output -----------------------------------------------------------------

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_NUMBERING = re.compile(r"^\s*(?:[-*•]+|\(?\d+[.)]|Q\d+[:.)])\s*")


def _json_value(text: Any) -> Any:
    """The JSON object or list in a model's answer (bare, fenced, or inside prose); None if there is none."""
    if not isinstance(text, str):
        return None
    candidates = [text.strip(), *(m.strip() for m in _FENCE.findall(text))]
    for opening, closing in (("{", "}"), ("[", "]")):
        start, end = text.find(opening), text.rfind(closing)
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError, ValueError):
            continue
        if isinstance(value, (dict, list)):
            return value
    return None


def _key(name: Any) -> str:
    return re.sub(r"[^a-z]", "", str(name).lower())


def _clean(text: Any, limit: int = 600) -> str:
    cleaned = " ".join(str(text).split()).strip().strip("\"'")
    return cleaned[:limit]


def parse_questions(text: str) -> list[str]:
    """Questions from a model's answer: ``{"questions": [...]}``, a JSON list, or numbered/bulleted lines
    ending in ``?``. Duplicates and blanks are dropped; never raises.

    >>> parse_questions('Sure!\\n1. How did the flood change the town?\\n2) Who paid for the barrier?\\nThanks')
    ['How did the flood change the town?', 'Who paid for the barrier?']
    """
    data = _json_value(text)
    items: Any = None
    if isinstance(data, dict):
        items = next((v for k, v in data.items() if _key(k) in ("questions", "question", "items")), None)
    elif isinstance(data, list):
        items = data
    found: list[str] = []
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict):
                item = item.get("question") or item.get("text")
            if isinstance(item, str) and _clean(item):
                found.append(_clean(_NUMBERING.sub("", item)))
    elif isinstance(text, str):
        for line in text.splitlines():
            line = _clean(_NUMBERING.sub("", line.strip()))
            if line.endswith("?") and len(line) > 3:
                found.append(line)
    return list(dict.fromkeys(q for q in found if q))


def parse_users(text: str) -> list[tuple[str, list[str]]]:
    """``(user, tasks)`` pairs from ``{"users": [{"user": ..., "tasks": [...]}]}`` (or a bare list of such
    objects; ``name``/``role``/``description`` also name the user). Users without tasks are dropped;
    never raises.

    >>> parse_users('{"users": [{"user": "A historian", "tasks": ["Trace the flood", 7]}, {"user": "x"}]}')
    [('A historian', ['Trace the flood'])]
    """
    data = _json_value(text)
    if isinstance(data, dict):
        data = next((v for k, v in data.items() if _key(k) in ("users", "personas", "people")), None)
    if not isinstance(data, list):
        return []
    found = []
    for item in data:
        if not isinstance(item, dict):
            continue
        keys = {_key(k): v for k, v in item.items()}
        user = next(
            (keys[k] for k in ("user", "name", "role", "description", "persona") if isinstance(keys.get(k), str)), ""
        )
        tasks = keys.get("tasks")
        tasks = [_clean(t) for t in tasks if isinstance(t, str) and _clean(t)] if isinstance(tasks, list) else []
        if _clean(user) and tasks:
            found.append((_clean(user), list(dict.fromkeys(tasks))))
    return found


def _side(value: Any) -> int | None:
    """1 or 2 from a judge's winner field (``1``, ``"2"``, ``"Answer 1"``, ``"first"``...), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value in (1, 2):
        return int(value)
    if not isinstance(value, str):
        return None
    word = value.strip().lower().strip(".!\"'*")
    if word in ("first", "the first", "first answer"):
        return 1
    if word in ("second", "the second", "second answer"):
        return 2
    match = re.fullmatch(r"(?:answer|response|system)?\s*[#_-]?\s*([12])", word)
    return int(match.group(1)) if match else None


def parse_verdict(text: str) -> dict[str, tuple[int, str]] | None:
    """The judge's verdict: for every dimension of :data:`DIMENSIONS`, ``(winner, reason)`` with winner 1 or 2.

    Accepts ``{"dimension": {"winner": ..., "reason": ...}}`` or ``{"dimension": winner}``, keys in any
    case, fenced or inside prose, optionally wrapped in one outer object. Returns None when any dimension
    is missing or has no clear winner (a tie counts as unclear); never raises.
    """
    data = _json_value(text)
    if not isinstance(data, dict):
        return None
    keyed = {_key(k): v for k, v in data.items()}
    if not any(d in keyed for d in DIMENSIONS) and len(data) == 1:
        inner = next(iter(data.values()))  # {"verdict": {...}}
        keyed = {_key(k): v for k, v in inner.items()} if isinstance(inner, dict) else {}
    verdict = {}
    for dimension in DIMENSIONS:
        value = keyed.get(dimension)
        reason: Any = ""
        if isinstance(value, dict):
            inner_keys = {_key(k): v for k, v in value.items()}
            reason = inner_keys.get("reason") or inner_keys.get("explanation") or ""
            value = next((inner_keys[k] for k in ("winner", "better", "choice", "answer") if k in inner_keys), None)
        side = _side(value)
        if side is None:
            return None
        verdict[dimension] = (side, _clean(reason, 400))
    return verdict


# -- configurations ----------------------------------------------------------------------------------

ContextFunction = Callable[[str], "str | PathContext | Awaitable[str | PathContext]"]


def shared_answer_prompt(context: str) -> str:
    """The answer prompt every configuration shares: its context, then pathrag's answer instructions
    (exactly what :func:`pathrag.context.answer_prompt` sends for a path context)."""
    return f"{context}\n\n{ANSWER_INSTRUCTIONS}"


@dataclass(frozen=True)
class Configuration:
    """One system under evaluation: a name and a ``query -> context text`` function (sync or async).

    ``prompt`` turns the context text into the answer prompt; keep the shared one so that only retrieval
    differs between configurations. A ``context`` function may also return a
    :class:`~pathrag.context.PathContext`: it is then answered with
    :func:`pathrag.context.answer_prompt`, exactly what ``pathrag query`` sends. A sync ``context`` runs
    in a worker thread.
    """

    name: str
    context: ContextFunction
    prompt: Callable[[str], str] = shared_answer_prompt
    description: str = ""


@dataclass(frozen=True)
class ConfigurationOptions:
    """What a configuration factory gets besides the index.

    ``params``: the base retrieval settings; ``max_tokens``: the context budget; ``keyword_llm``: the model
    for query keywords (the evaluation passes a journalled one, so those calls are recorded and resumable;
    None: the query text is the keyword).
    """

    params: RetrievalParams = field(default_factory=RetrievalParams)
    max_tokens: int | None = None
    keyword_llm: LanguageModel | None = None
    token_counter: TokenCounter | None = None


ConfigurationFactory = Callable[["PathRAGIndex", ConfigurationOptions], Configuration]
_REGISTRY: dict[str, tuple[ConfigurationFactory, str]] = {}


def register_configuration(
    name: str, factory: ConfigurationFactory, *, description: str = "", replace_existing: bool = False
) -> None:
    """Make ``factory(index, options) -> Configuration`` available by ``name`` (case-insensitive).

    Raises:
        ValueError: the name is empty or already taken (unless ``replace_existing``).
    """
    key = name.strip().lower()
    if not key:
        raise ValueError("a configuration needs a name")
    if key in _REGISTRY and not replace_existing:
        raise ValueError(f"a configuration named {key!r} is already registered")
    _REGISTRY[key] = (factory, description)


def configuration_names() -> dict[str, str]:
    """Registered configuration names with their one-line descriptions, in registration order."""
    return {name: description for name, (_, description) in _REGISTRY.items()}


def build_configurations(
    index: PathRAGIndex, names: Sequence[str], options: ConfigurationOptions | None = None
) -> list[Configuration]:
    """Instantiate registered configurations for ``index``.

    Raises:
        ValueError: an unknown or repeated name.
    """
    options = options or ConfigurationOptions()
    built, seen = [], set()
    for name in names:
        key = name.strip().lower()
        if key not in _REGISTRY:
            raise ValueError(f"unknown configuration {name!r} (known: {', '.join(_REGISTRY)})")
        if key in seen:
            raise ValueError(f"configuration {name!r} is named twice")
        seen.add(key)
        factory, description = _REGISTRY[key]
        config = factory(index, options)
        built.append(config if config.description else replace(config, description=description))
    return built


def _index_context(result: RetrievalResult, options: ConfigurationOptions) -> PathContext:
    """The index's own layout of ``result`` within the budget (answered with its own instructions)."""
    return result_context(result, max_tokens=options.max_tokens, token_counter=options.token_counter)


def path_configuration(
    index: PathRAGIndex,
    options: ConfigurationOptions,
    *,
    name: str,
    render: Callable[[RetrievalResult, ConfigurationOptions], str | PathContext] = _index_context,
    description: str = "",
    **overrides: Any,
) -> Configuration:
    """A configuration that retrieves from ``index`` as ``PathRAGIndex.aretrieve`` does and lays the result
    out with ``render`` (default: :func:`pathrag.context.result_context` within ``options.max_tokens``, so
    the answer prompt is exactly what ``pathrag query`` sends).

    ``overrides`` are :class:`~pathrag.RetrievalParams` fields applied on top of ``options.params``
    (e.g. ``num_seeds=20, top_k=5``). The keywords come from ``options.keyword_llm``.
    """
    params = replace(options.params, **overrides) if overrides else options.params

    async def context(query: str) -> str | PathContext:
        # the module function, not index.aretrieve: the keyword model must be the journalled one
        result = await aretrieve(
            query,
            graph=index.graph,
            entity_index=index.entity_index,
            passage_index=index.chunk_index,
            relation_index=index.relation_index,
            llm=options.keyword_llm,
            params=params,
        )
        return render(result, options)

    return Configuration(name=name, context=context, description=description)


def passage_configuration(
    index: PathRAGIndex, options: ConfigurationOptions, *, name: str, description: str = ""
) -> Configuration:
    """Dense retrieval: the ``options.params.num_passages`` chunks nearest the query in the index's chunk
    index, laid out as passages only (least to most similar) within ``options.max_tokens``, and answered
    with the evidence instructions. No graph, no keyword call."""

    async def context(query: str) -> PathContext:
        hits = await index.chunk_index.aquery(query, options.params.num_passages)
        texts = index.chunk_texts([hit.id for hit in hits])
        items = [
            RetrievedItem("passage", hit.id, text, hit.score, (), (hit.id,))
            for hit in hits
            # a document's chunk, else the hit's own text (an imported passage)
            if (text := texts.get(hit.id) or getattr(hit, "text", None) or _item_text(index.chunk_index, hit.id))
        ]
        return build_evidence_context(query, items, max_tokens=options.max_tokens, token_counter=options.token_counter)

    return Configuration(name=name, context=context, description=description)


# Each configuration is one line; a new context mode or baseline of the core plugs in the same way.
register_configuration(
    "default",
    lambda index, o: path_configuration(index, o, name="default"),
    description="the index's default context, as pathrag query sends it",
)
register_configuration(
    "paths-only",
    lambda index, o: path_configuration(index, o, name="paths-only", context="paths"),
    description="the paper's context: key paths only, most reliable last",
)
register_configuration(
    "pathrag-lt",
    lambda index, o: path_configuration(index, o, name="pathrag-lt", num_seeds=20, top_k=5),
    description="PathRAG-lt: N = 20 seed entities, K = 5 paths",
)
register_configuration(
    "dense",
    lambda index, o: passage_configuration(index, o, name="dense"),
    description="dense retrieval: the passages nearest the question, no graph",
)


# -- calls: journal, reuse, limits, retries, usage -------------------------------------------------------


@dataclass(frozen=True)
class Pricing:
    """Prices in currency units per million tokens (prompt, answer)."""

    prompt_per_million: float = 0.0
    answer_per_million: float = 0.0

    def cost(self, prompt_tokens: int, answer_tokens: int) -> float:
        """The price of ``prompt_tokens`` prompt and ``answer_tokens`` answer tokens."""
        return (prompt_tokens * self.prompt_per_million + answer_tokens * self.answer_per_million) / 1e6

    @classmethod
    def parse(cls, text: str) -> Pricing:
        """``"0.15,0.60"`` (prompt, answer per million tokens).

        Raises:
            ValueError: not two non-negative numbers.
        """
        parts = [p.strip() for p in str(text).split(",")]
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 2 or any(not math.isfinite(v) or v < 0 for v in values):
            raise ValueError(f"a price is two non-negative numbers 'PROMPT,ANSWER' per million tokens, got {text!r}")
        return cls(values[0], values[1])


@dataclass(frozen=True)
class CallRecord:
    """One model call as journalled: who answered what, its size and how long it took."""

    key: str
    model: str
    role: str
    answer: str
    prompt_tokens: int
    answer_tokens: int
    latency_s: float


@dataclass
class Usage:
    """Calls and tokens of one role. ``calls`` were made by this run; ``reused`` came from the journal
    (or a duplicate in flight). Token totals cover both: they are what the evaluation costs in full."""

    calls: int = 0
    reused: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    answer_tokens: int = 0
    new_prompt_tokens: int = 0
    new_answer_tokens: int = 0
    cost: float = 0.0
    new_cost: float = 0.0


#: The LLM calls made while computing one context (keywords), collected per answer task.
_SPENT: contextvars.ContextVar[list[CallRecord] | None] = contextvars.ContextVar("pathrag_eval_spent", default=None)


class _CallFailed(Exception):
    """A model call failed after every attempt."""


class _Recorder:
    """Every model call goes through here: journal lookup, in-flight sharing, concurrency limit, retries."""

    def __init__(
        self,
        path: Path | None,
        *,
        max_concurrency: int,
        max_attempts: int,
        retry_wait: float,
        token_counter: TokenCounter | None,
        prices: Mapping[str, Pricing],
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self._journal = _Jsonl(path) if path is not None else None
        self._done: dict[str, CallRecord] = {}
        for row in self._journal.read() if self._journal else ():
            try:
                record = CallRecord(**{k: row[k] for k in CallRecord.__dataclass_fields__})
            except (KeyError, TypeError):
                continue
            self._done[record.key] = record
        self._pending: dict[str, asyncio.Future[CallRecord]] = {}
        self._semaphore = asyncio.Semaphore(max_concurrency)  # built inside the run's own loop
        self._attempts, self._wait = max_attempts, retry_wait
        self._counter = token_counter
        self._prices = prices
        self.usage: dict[str, Usage] = {}
        self.on_change = on_change
        self.loop = asyncio.get_running_loop()

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()

    def totals(self) -> Usage:
        total = Usage()
        for usage in self.usage.values():
            for name in Usage.__dataclass_fields__:
                setattr(total, name, getattr(total, name) + getattr(usage, name))
        return total

    def _account(self, record: CallRecord, role: str, new: bool) -> None:
        usage = self.usage.setdefault(role, Usage())
        price = self._prices.get(role, Pricing())
        cost = price.cost(record.prompt_tokens, record.answer_tokens)
        usage.prompt_tokens += record.prompt_tokens
        usage.answer_tokens += record.answer_tokens
        usage.cost += cost
        if new:
            usage.calls += 1
            usage.new_prompt_tokens += record.prompt_tokens
            usage.new_answer_tokens += record.answer_tokens
            usage.new_cost += cost
        else:
            usage.reused += 1
        spent = _SPENT.get()
        if spent is not None:
            spent.append(record)
        self.on_change()

    async def ask(self, model: LanguageModel, prompt: str, role: str) -> CallRecord:
        """The model's answer to ``prompt``: from the journal if it is there, else asked (and journalled).

        Raises:
            _CallFailed: every attempt failed (nothing is journalled, so a re-run asks again).
        """
        key = hashlib.sha256(f"{model.name}\x1f{prompt}".encode()).hexdigest()[:32]
        if key in self._done:
            self._account(self._done[key], role, new=False)
            return self._done[key]
        if key in self._pending:  # the same prompt asked twice at once (shared keywords): one call
            record = await asyncio.shield(self._pending[key])
            self._account(record, role, new=False)
            return record
        future: asyncio.Future[CallRecord] = self.loop.create_future()
        self._pending[key] = future
        try:
            record = await self._call(model, prompt, role, key)
        except BaseException as exc:
            future.set_exception(exc if isinstance(exc, Exception) else _CallFailed("interrupted"))
            future.exception()  # mark retrieved: waiters get it, nobody else needs to
            raise
        finally:
            self._pending.pop(key, None)
        future.set_result(record)
        self._done[key] = record
        if self._journal is not None:  # at once: a crash after this line loses nothing
            self._journal.append(asdict(record))
        self._account(record, role, new=True)
        return record

    async def _call(self, model: LanguageModel, prompt: str, role: str, key: str) -> CallRecord:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._attempts),
            wait=wait_random_exponential(multiplier=self._wait, max=max(self._wait, 30.0)),
            retry=retry_if_exception_type(Exception),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    async with self._semaphore:  # the limit covers calls, not back-off sleeps
                        started = time.perf_counter()
                        answer = await model.acomplete(prompt)
                        latency = time.perf_counter() - started
                    if not isinstance(answer, str):
                        raise TypeError(f"the model returned {type(answer).__name__}, not text")
        except Exception as exc:
            self.usage.setdefault(role, Usage()).failed += 1
            self.on_change()
            raise _CallFailed(f"{type(exc).__name__}: {exc}") from exc
        return CallRecord(
            key=key,
            model=model.name,
            role=role,
            answer=answer,
            prompt_tokens=count_tokens(prompt, self._counter),
            answer_tokens=count_tokens(answer, self._counter),
            latency_s=round(latency, 4),
        )


class _RecordedModel:
    """A :class:`~pathrag.LanguageModel` whose calls go through the recorder (journalled, limited, counted).

    ``complete`` is for sync context functions, which run in worker threads: it hands the call to the
    evaluation's event loop and waits.
    """

    def __init__(self, recorder: _Recorder, model: LanguageModel, role: str) -> None:
        self._recorder, self._model, self._role = recorder, model, role
        self.name = model.name

    async def acomplete(self, prompt: str) -> str:
        return (await self._recorder.ask(self._model, prompt, self._role)).answer

    def complete(self, prompt: str) -> str:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            spent = _SPENT.get()  # this thread's copy of the answer task's context

            async def call() -> str:
                _SPENT.set(spent)
                return await self.acomplete(prompt)

            return asyncio.run_coroutine_threadsafe(call(), self._recorder.loop).result()
        raise RuntimeError("call `await acomplete(...)` inside the event loop (complete() would block it)")


class _LateModel:
    """Stands in for a recorded model before the run's loop exists (configurations are built first)."""

    def __init__(self, model: LanguageModel, role: str) -> None:
        self.model, self.role = model, role
        self.name = model.name
        self.target: _RecordedModel | None = None

    async def acomplete(self, prompt: str) -> str:
        if self.target is None:
            return await self.model.acomplete(prompt)
        return await self.target.acomplete(prompt)

    def complete(self, prompt: str) -> str:
        return self.model.complete(prompt) if self.target is None else self.target.complete(prompt)


# -- question generation -----------------------------------------------------------------------------


async def _ask_parsed(
    recorder: _Recorder, model: LanguageModel, prompt: str, role: str, parse: Callable[[str], Any]
) -> tuple[Any, int]:
    """Ask, parse; if nothing usable comes back, ask once more with a reminder of the format.

    Returns the parsed value (falsy if both answers were unusable) and the number of attempts.
    """
    value = parse((await recorder.ask(model, prompt, role)).answer)
    if value:
        return value, 1
    return parse((await recorder.ask(model, prompt + RETRY_SUFFIX, role)).answer), 2


async def _generate(
    recorder: _Recorder,
    model: LanguageModel,
    passages: Sequence[str],
    *,
    num_questions: int,
    users: int,
    tasks: int,
    excerpt_tokens: int,
    token_counter: TokenCounter | None,
    progress: Callable[[], None] = lambda: None,
) -> list[Question]:
    if num_questions < 1 or users < 1 or tasks < 1:
        raise ValueError("num_questions, users and tasks must be >= 1")
    excerpts = corpus_excerpts(passages, max_tokens=excerpt_tokens, token_counter=token_counter)
    if not excerpts:
        raise EvaluationError("the corpus has no text to write questions about")
    try:
        description = (
            await recorder.ask(model, CORPUS_SUMMARY_PROMPT.format(max_words=200, excerpts=excerpts), "questions")
        ).answer.strip()
        progress()
        people, _ = await _ask_parsed(
            recorder,
            model,
            USERS_PROMPT.format(description=description, users=users, tasks=tasks),
            "questions",
            parse_users,
        )
        progress()
    except _CallFailed as exc:  # nothing to go on without these two answers
        raise EvaluationError(f"the question model failed: {exc}") from exc
    if not people:
        raise EvaluationError(
            "the question model proposed no usable users and tasks (asked twice); "
            "try another model, or pass your own questions"
        )
    pairs = [(user, task) for user, its in people[:users] for task in its[:tasks]]
    per_pair = max(1, math.ceil(num_questions / len(pairs)))

    async def one(user: str, task: str) -> list[str]:
        prompt = QUESTIONS_PROMPT.format(description=description, user=user, task=task, count=per_pair)
        try:
            found, _ = await _ask_parsed(recorder, model, prompt, "questions", parse_questions)
        except _CallFailed as exc:
            logger.warning("no questions for %r / %r: %s", user, task, exc)
            found = []
        progress()
        return list(found)[:per_pair]

    lists = await asyncio.gather(*(one(u, t) for u, t in pairs))
    chosen: dict[str, Question] = {}
    for rank in range(per_pair):  # round-robin, so a cut keeps every user and task represented
        for (user, task), found in zip(pairs, lists, strict=True):
            if rank < len(found) and len(chosen) < num_questions:
                question = Question(found[rank], user, task)
                chosen.setdefault(question.id, question)
    if not chosen:
        raise EvaluationError("the question model wrote no usable questions")
    return list(chosen.values())


async def agenerate_questions(
    llm: LanguageModel | Callable[[str], Any],
    passages: Sequence[str],
    *,
    num_questions: int = 25,
    users: int = 5,
    tasks: int = 5,
    excerpt_tokens: int = 6000,
    journal: str | Path | None = None,
    max_concurrency: int = 4,
    token_counter: TokenCounter | None = None,
) -> list[Question]:
    """Write ``num_questions`` corpus-level questions about ``passages`` with ``llm``.

    One call describes the corpus (from excerpts within ``excerpt_tokens``), one proposes ``users``
    users with ``tasks`` tasks each, then one call per (user, task) writes its share of questions; the
    result takes them round-robin. With ``journal``, every answer is journalled there and reused.

    Raises:
        EvaluationError: no usable users/tasks or questions came back.
    """
    recorder = _Recorder(
        Path(journal) if journal else None,
        max_concurrency=max_concurrency,
        max_attempts=3,
        retry_wait=1.0,
        token_counter=token_counter,
        prices={},
    )
    try:
        return await _generate(
            recorder,
            as_language_model(llm),
            passages,
            num_questions=num_questions,
            users=users,
            tasks=tasks,
            excerpt_tokens=excerpt_tokens,
            token_counter=token_counter,
        )
    finally:
        recorder.close()


# -- answers and judgements --------------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerRecord:
    """One configuration's answer to one question. ``error`` is set (and ``answer`` empty) when it failed."""

    question_id: str
    configuration: str
    answer: str
    context_tokens: int = 0
    prompt_tokens: int = 0
    answer_tokens: int = 0
    retrieval_calls: int = 0
    retrieval_tokens: int = 0
    retrieval_s: float = 0.0
    answer_s: float = 0.0
    error: str | None = None

    @property
    def latency_s(self) -> float:
        """Seconds from question to answer: retrieval and answer together."""
        return self.retrieval_s + self.answer_s


@dataclass(frozen=True)
class Judgement:
    """One verdict on one question, with ``first`` shown as Answer 1 and ``second`` as Answer 2.

    ``winners`` maps each dimension to the winning configuration's name; it is None for an invalid
    verdict (unreadable twice, or the call failed: then ``error`` says so).
    """

    question_id: str
    first: str
    second: str
    winners: dict[str, str] | None
    reasons: dict[str, str] = field(default_factory=dict)
    attempts: int = 1
    error: str | None = None

    @property
    def valid(self) -> bool:
        """Whether the verdict could be read (``winners`` is set)."""
        return self.winners is not None


def _judge_prompt(question: str, answer_1: str, answer_2: str) -> str:
    dimensions = "\n".join(f"- {name}: {text}" for name, text in DIMENSION_DEFINITIONS.items())
    example = json.dumps({d: {"winner": 1, "reason": "one short sentence"} for d in DIMENSIONS})
    return JUDGE_PROMPT.format(
        question=question, answer_1=answer_1, answer_2=answer_2, dimensions=dimensions, example=example
    )


# -- results -----------------------------------------------------------------------------------------


@dataclass
class DimensionTally:
    """Wins of a pair ``a`` vs ``b`` on one dimension, over every valid judgement (each order counts once).

    ``both_orders``: questions judged validly in both orders; ``disagreements``: those where the two
    orders picked different configurations.
    """

    wins_a: int = 0
    wins_b: int = 0
    both_orders: int = 0
    disagreements: int = 0

    @property
    def judged(self) -> int:
        """Valid verdicts on this dimension: the wins of ``a`` and ``b`` together."""
        return self.wins_a + self.wins_b

    @property
    def win_rate_a(self) -> float | None:
        """The share of :attr:`judged` verdicts won by ``a`` (``None`` when nothing was judged)."""
        return self.wins_a / self.judged if self.judged else None

    @property
    def disagreement_rate(self) -> float | None:
        """The share of the ``both_orders`` questions whose two verdicts differ (``None``: no such question)."""
        return self.disagreements / self.both_orders if self.both_orders else None

    def to_json(self) -> dict[str, Any]:
        """The counts and rates as a JSON-ready dict."""
        return {
            "wins_a": self.wins_a,
            "wins_b": self.wins_b,
            "judged": self.judged,
            "win_rate_a": self.win_rate_a,
            "both_orders": self.both_orders,
            "disagreements": self.disagreements,
            "disagreement_rate": self.disagreement_rate,
        }


@dataclass
class PairResult:
    """Configuration ``a`` against ``b``: the tally per dimension; ``judgements`` counts verdicts asked
    for (two per question), ``invalid`` those that could not be read, ``missing`` those not asked because
    an answer was missing."""

    a: str
    b: str
    judgements: int = 0
    invalid: int = 0
    missing: int = 0
    dimensions: dict[str, DimensionTally] = field(default_factory=lambda: {d: DimensionTally() for d in DIMENSIONS})

    def to_json(self) -> dict[str, Any]:
        """The pair, its counts and each dimension's tally as a JSON-ready dict."""
        return {
            "a": self.a,
            "b": self.b,
            "judgements": self.judgements,
            "invalid": self.invalid,
            "missing": self.missing,
            "dimensions": {d: t.to_json() for d, t in self.dimensions.items()},
        }


def tally_pair(a: str, b: str, judgements: Iterable[Judgement], *, missing: int = 0) -> PairResult:
    """Count the judgements of ``a`` vs ``b`` (either order); others are ignored.

    Each valid judgement adds one win per dimension to the configuration it names. For questions judged
    validly in both orders, a dimension where the orders name different winners is a disagreement.
    """
    result = PairResult(a, b, missing=missing)
    by_question: dict[str, dict[str, Judgement]] = {}
    for j in judgements:
        if {j.first, j.second} != {a, b}:
            continue
        result.judgements += 1
        if not j.valid:
            result.invalid += 1
            continue
        by_question.setdefault(j.question_id, {})["ab" if j.first == a else "ba"] = j
        for dimension, tally in result.dimensions.items():
            if j.winners[dimension] == a:  # type: ignore[index]
                tally.wins_a += 1
            else:
                tally.wins_b += 1
    for orders in by_question.values():
        if len(orders) == 2:
            for dimension, tally in result.dimensions.items():
                tally.both_orders += 1
                ab, ba = orders["ab"].winners, orders["ba"].winners
                tally.disagreements += ab[dimension] != ba[dimension]  # type: ignore[index]
    return result


@dataclass(frozen=True)
class ConfigurationSummary:
    """Per configuration: answers, failures, mean tokens (context, prompt, answer, retrieval LLM) and
    latency, and the cost of its answers (prompt + answer + retrieval tokens) at the answer model's price."""

    name: str
    description: str
    answered: int
    failed: int
    mean_context_tokens: float
    mean_prompt_tokens: float
    mean_answer_tokens: float
    mean_retrieval_tokens: float
    mean_latency_s: float
    total_tokens: int
    cost: float


@dataclass(frozen=True)
class LosingQuestion:
    """A question where ``a`` lost the most judgements to ``b`` (``losses`` of ``of`` dimension-orders)."""

    a: str
    b: str
    question: Question
    overall_losses: int
    losses: int
    of: int
    answer_a: str
    answer_b: str
    reasons: tuple[str, ...]


@dataclass
class EvalReport:
    """Everything a run produced. ``pairs[i].dimensions[d].win_rate_a`` is the headline number."""

    run_dir: str | None
    questions: list[Question]
    configurations: list[ConfigurationSummary]
    pairs: list[PairResult]
    worst: list[LosingQuestion]
    usage: dict[str, Usage]
    answers: list[AnswerRecord]
    judgements: list[Judgement]
    models: dict[str, str]
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "run_dir": self.run_dir,
            "models": self.models,
            "questions": len(self.questions),
            "dimensions": list(DIMENSIONS),
            "configurations": [asdict(c) for c in self.configurations],
            "pairs": [p.to_json() for p in self.pairs],
            "usage": {role: asdict(u) for role, u in self.usage.items()},
            "worst": [
                {
                    "a": w.a,
                    "b": w.b,
                    "question": w.question.to_json(),
                    "overall_losses": w.overall_losses,
                    "losses": w.losses,
                    "of": w.of,
                }
                for w in self.worst
            ],
            "seconds": round(self.seconds, 3),
        }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _worst(
    pair: PairResult,
    questions: Sequence[Question],
    answers: Mapping[tuple[str, str], AnswerRecord],
    judgements: Sequence[Judgement],
    limit: int,
) -> list[LosingQuestion]:
    found = []
    for question in questions:
        mine = [
            j
            for j in judgements
            if j.valid and j.question_id == question.id and {j.first, j.second} == {pair.a, pair.b}
        ]
        if not mine:
            continue
        losses = sum(w == pair.b for j in mine for w in j.winners.values())  # type: ignore[union-attr]
        overall = sum(j.winners["overall"] == pair.b for j in mine)  # type: ignore[index]
        if not losses:
            continue
        reasons = tuple(j.reasons.get("overall", "") for j in mine if j.reasons.get("overall"))
        found.append(
            LosingQuestion(
                pair.a,
                pair.b,
                question,
                overall,
                losses,
                len(mine) * len(DIMENSIONS),
                answers[(question.id, pair.a)].answer,
                answers[(question.id, pair.b)].answer,
                reasons,
            )
        )
    found.sort(key=lambda w: (-w.overall_losses, -w.losses, w.question.text))
    return found[:limit]


# -- the run -----------------------------------------------------------------------------------------


class Evaluation:
    """One evaluation run in ``run_dir`` (None: nothing is written, nothing can be resumed).

    Args:
        run_dir: where the journal, questions, answers, judgements, results and report go. Running again
            with the same directory reuses every journalled model answer.
        llm: the answering model (also the keyword model of the built-in configurations).
        configurations: the systems compared; the first is the reference (see ``pairs``).
        judge_llm: the judging model (default: ``llm``).
        question_llm: the model that writes questions (default: the judge).
        questions: the questions to use; else ``<run_dir>/questions.jsonl`` if present; else generated
            from ``passages``.
        passages: the corpus, for question generation.
        num_questions, users, tasks: how many questions to generate, for how many users with how many tasks.
        pairs: which configurations to compare (names); default: the first against each other one, or
            with ``all_pairs`` every pair.
        max_concurrency: model calls in flight at once (all roles together).
        max_attempts, retry_wait: attempts per call on errors, and the back-off base in seconds.
        prices: :class:`Pricing` per model role (``"answer"``, ``"keywords"``, ``"judge"``, ``"questions"``).
        show_progress: tqdm bars with calls, tokens and cost.
        worst: how many worst-losing questions per pair the report shows.
    """

    def __init__(
        self,
        run_dir: str | Path | None,
        *,
        llm: LanguageModel | Callable[[str], Any],
        configurations: Sequence[Configuration],
        judge_llm: LanguageModel | Callable[[str], Any] | None = None,
        question_llm: LanguageModel | Callable[[str], Any] | None = None,
        questions: Sequence[Question] | None = None,
        passages: Sequence[str] | None = None,
        num_questions: int = 25,
        users: int = 5,
        tasks: int = 5,
        excerpt_tokens: int = 6000,
        pairs: Sequence[tuple[str, str]] | None = None,
        all_pairs: bool = False,
        max_concurrency: int = 4,
        max_attempts: int = 3,
        retry_wait: float = 1.0,
        token_counter: TokenCounter | None = None,
        prices: Mapping[str, Pricing] | None = None,
        show_progress: bool = False,
        worst: int = 5,
    ) -> None:
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.llm = as_language_model(llm, name="answer-model")
        self.judge_llm = as_language_model(judge_llm, name="judge-model") if judge_llm is not None else self.llm
        self.question_llm = (
            as_language_model(question_llm, name="question-model") if question_llm is not None else self.judge_llm
        )
        if not configurations:
            raise ValueError("give at least two configurations to compare")
        names = [c.name for c in configurations]
        if len(set(names)) != len(names):
            raise ValueError(f"configuration names must differ: {names}")
        self.configurations = list(configurations)
        if pairs is not None:
            self.pairs = list(pairs)
        elif all_pairs:
            self.pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        else:
            self.pairs = [(names[0], other) for other in names[1:]]
        for a, b in self.pairs:
            if a not in names or b not in names or a == b:
                raise ValueError(f"a pair names two different configurations of {names}, got ({a!r}, {b!r})")
        if not self.pairs:
            raise ValueError("give at least two configurations to compare")
        if max_concurrency < 1 or max_attempts < 1:
            raise ValueError("max_concurrency and max_attempts must be >= 1")
        self.questions = list(questions) if questions is not None else None
        self.passages = passages
        self.num_questions, self.users, self.tasks, self.excerpt_tokens = num_questions, users, tasks, excerpt_tokens
        self.max_concurrency, self.max_attempts, self.retry_wait = max_concurrency, max_attempts, retry_wait
        self.token_counter = token_counter
        self.prices = dict(prices or {})
        self.show_progress = show_progress
        self.worst = worst
        self._late: list[_LateModel] = []  # keyword models built before the run (see aevaluate)

    def run(self) -> EvalReport:
        """Sync twin of :meth:`arun` (safe inside a running event loop)."""
        return run_sync(self.arun())

    async def arun(self) -> EvalReport:
        """Generate (or load) questions, answer them with every configuration, judge, and write the results."""
        started = time.perf_counter()
        if self.run_dir is not None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        bar: list[Any] = [None]
        recorder = _Recorder(
            self.run_dir / CALLS_FILE if self.run_dir else None,
            max_concurrency=self.max_concurrency,
            max_attempts=self.max_attempts,
            retry_wait=self.retry_wait,
            token_counter=self.token_counter,
            prices=self.prices,
            on_change=lambda: self._postfix(bar[0], recorder),
        )
        for late in self._late:
            late.target = _RecordedModel(recorder, late.model, late.role)
        try:
            questions = await self._questions(recorder, bar)
            answers = await self._answers(recorder, questions, bar)
            judgements = await self._judgements(recorder, questions, answers, bar)
        finally:
            recorder.close()
            for late in self._late:
                late.target = None
        report = self._report(questions, answers, judgements, recorder, time.perf_counter() - started)
        if self.run_dir is not None:
            _write_atomically(self.run_dir / ANSWERS_FILE, _jsonl(asdict(a) for a in answers.values()))
            _write_atomically(self.run_dir / JUDGEMENTS_FILE, _jsonl(asdict(j) for j in judgements))
            _write_atomically(self.run_dir / RESULTS_FILE, json.dumps(report.to_json(), indent=1, ensure_ascii=False))
            _write_atomically(self.run_dir / REPORT_FILE, render_html(report))
        return report

    # -- stages --------------------------------------------------------------------------------------

    def _bar(self, total: int, label: str) -> Any:
        return tqdm(total=total, desc=label, unit="step", disable=not self.show_progress, dynamic_ncols=True)

    def _postfix(self, bar: Any, recorder: _Recorder) -> None:
        if bar is None or bar.disable:
            return
        total = recorder.totals()
        cost = f" · cost {total.cost:.4f}" if self.prices else ""
        bar.set_postfix_str(
            f"calls {total.calls} new + {total.reused} reused · "
            f"{total.prompt_tokens + total.answer_tokens:,} tokens{cost}",
            refresh=False,
        )

    async def _questions(self, recorder: _Recorder, bar: list[Any]) -> list[Question]:
        saved = self.run_dir / QUESTIONS_FILE if self.run_dir else None
        if self.questions is not None:
            questions = self.questions
        elif saved is not None and saved.exists():
            return read_questions(saved)
        else:
            if not self.passages:
                raise EvaluationError("no questions given and no corpus passages to write them from")
            bar[0] = self._bar(2 + self.users * self.tasks, "questions")
            try:
                questions = await _generate(
                    recorder,
                    self.question_llm,
                    self.passages,
                    num_questions=self.num_questions,
                    users=self.users,
                    tasks=self.tasks,
                    excerpt_tokens=self.excerpt_tokens,
                    token_counter=self.token_counter,
                    progress=lambda: bar[0].update(),
                )
            finally:
                bar[0].close()
        if not questions:
            raise EvaluationError("no questions to evaluate")
        if saved is not None:
            write_questions(saved, questions)
        return list(questions)

    async def _answer(self, recorder: _Recorder, question: Question, config: Configuration) -> AnswerRecord:
        spent: list[CallRecord] = []
        token = _SPENT.set(spent)
        started = time.perf_counter()
        try:
            value = (
                config.context(question.text)
                if inspect.iscoroutinefunction(config.context)
                else await asyncio.to_thread(config.context, question.text)
            )  # sync retrieval may block
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:  # a broken configuration costs its answers, not the run
            logger.warning("%s: retrieval failed for %r: %r", config.name, question.text, exc)
            return AnswerRecord(question.id, config.name, "", error=f"retrieval: {type(exc).__name__}: {exc}")
        finally:
            _SPENT.reset(token)
        retrieval_s = time.perf_counter() - started
        if isinstance(value, PathContext):  # the index's own layout: its own instructions, as in pathrag query
            context, prompt = value.text, answer_prompt(value)
        else:
            context = str(value)
            prompt = config.prompt(context)
        base = AnswerRecord(
            question.id,
            config.name,
            "",
            context_tokens=count_tokens(context, self.token_counter),
            retrieval_calls=len(spent),
            retrieval_tokens=sum(r.prompt_tokens + r.answer_tokens for r in spent),
            retrieval_s=round(retrieval_s, 4),
        )
        try:
            record = await recorder.ask(self.llm, prompt, "answer")
        except _CallFailed as exc:
            return replace(base, prompt_tokens=count_tokens(prompt, self.token_counter), error=str(exc))
        return replace(
            base,
            answer=record.answer,
            prompt_tokens=record.prompt_tokens,
            answer_tokens=record.answer_tokens,
            answer_s=record.latency_s,
        )

    async def _answers(
        self, recorder: _Recorder, questions: Sequence[Question], bar: list[Any]
    ) -> dict[tuple[str, str], AnswerRecord]:
        bar[0] = self._bar(len(questions) * len(self.configurations), "answers")

        async def one(question: Question, config: Configuration) -> AnswerRecord:
            # retrieval is not limited by the semaphore: without a bound, hundreds would start at once
            async with retrieval_slots:
                record = await self._answer(recorder, question, config)
            bar[0].update()
            return record

        retrieval_slots = asyncio.Semaphore(self.max_concurrency * 2)
        try:
            done = await asyncio.gather(*(one(q, c) for q in questions for c in self.configurations))
        finally:
            bar[0].close()
        return {(a.question_id, a.configuration): a for a in done}

    async def _judge(
        self, recorder: _Recorder, question: Question, first: AnswerRecord, second: AnswerRecord
    ) -> Judgement:
        names = {1: first.configuration, 2: second.configuration}
        prompt = _judge_prompt(question.text, first.answer, second.answer)
        try:
            verdict, attempts = await _ask_parsed(recorder, self.judge_llm, prompt, "judge", parse_verdict)
        except _CallFailed as exc:
            return Judgement(question.id, names[1], names[2], None, error=str(exc))
        if verdict is None:
            return Judgement(question.id, names[1], names[2], None, attempts=attempts, error="unreadable verdict")
        return Judgement(
            question.id,
            names[1],
            names[2],
            {d: names[side] for d, (side, _) in verdict.items()},
            {d: reason for d, (_, reason) in verdict.items()},
            attempts,
        )

    async def _judgements(
        self,
        recorder: _Recorder,
        questions: Sequence[Question],
        answers: Mapping[tuple[str, str], AnswerRecord],
        bar: list[Any],
    ) -> list[Judgement]:
        jobs = []
        self._missing: dict[tuple[str, str], int] = {}
        for a, b in self.pairs:
            for question in questions:
                one, other = answers[(question.id, a)], answers[(question.id, b)]
                if one.error or other.error:
                    self._missing[(a, b)] = self._missing.get((a, b), 0) + 2
                    continue
                jobs += [(question, one, other), (question, other, one)]  # both orders, each counted once
        bar[0] = self._bar(len(jobs), "judging")

        async def run(question: Question, first: AnswerRecord, second: AnswerRecord) -> Judgement:
            judgement = await self._judge(recorder, question, first, second)
            bar[0].update()
            return judgement

        try:
            return list(await asyncio.gather(*(run(*job) for job in jobs)))
        finally:
            bar[0].close()

    def _report(
        self,
        questions: list[Question],
        answers: Mapping[tuple[str, str], AnswerRecord],
        judgements: list[Judgement],
        recorder: _Recorder,
        seconds: float,
    ) -> EvalReport:
        price = self.prices.get("answer", Pricing())
        summaries = []
        for config in self.configurations:
            mine = [answers[(q.id, config.name)] for q in questions]
            ok = [a for a in mine if not a.error]
            total = sum(a.prompt_tokens + a.answer_tokens + a.retrieval_tokens for a in ok)
            summaries.append(
                ConfigurationSummary(
                    name=config.name,
                    description=config.description,
                    answered=len(ok),
                    failed=len(mine) - len(ok),
                    mean_context_tokens=_mean([a.context_tokens for a in ok]),
                    mean_prompt_tokens=_mean([a.prompt_tokens for a in ok]),
                    mean_answer_tokens=_mean([a.answer_tokens for a in ok]),
                    mean_retrieval_tokens=_mean([a.retrieval_tokens for a in ok]),
                    mean_latency_s=_mean([a.latency_s for a in ok]),
                    total_tokens=total,
                    cost=price.cost(
                        sum(a.prompt_tokens + a.retrieval_tokens for a in ok), sum(a.answer_tokens for a in ok)
                    ),
                )
            )
        pairs = [tally_pair(a, b, judgements, missing=self._missing.get((a, b), 0)) for a, b in self.pairs]
        worst = [w for p in pairs for w in _worst(p, questions, answers, judgements, self.worst)]
        models = {"answer": self.llm.name, "judge": self.judge_llm.name, "questions": self.question_llm.name}
        return EvalReport(
            str(self.run_dir) if self.run_dir else None,
            questions,
            summaries,
            pairs,
            worst,
            dict(recorder.usage),
            list(answers.values()),
            judgements,
            models,
            seconds,
        )


async def aevaluate(
    index: PathRAGIndex,
    run_dir: str | Path | None,
    *,
    llm: LanguageModel | Callable[[str], Any],
    judge_llm: LanguageModel | Callable[[str], Any] | None = None,
    configurations: Sequence[str | Configuration] = DEFAULT_CONFIGURATIONS,
    params: RetrievalParams | None = None,
    max_tokens: int | None = DEFAULT_MAX_TOKENS,
    keywords: bool = True,
    **options: Any,
) -> EvalReport:
    """Evaluate configurations of ``index`` (registered names or :class:`Configuration` objects).

    ``params`` and ``max_tokens`` set the base retrieval and the context budget of the built-in
    configurations (the same budget for all: a comparison at equal cost; None: no budget); with
    ``keywords`` the answer model extracts query keywords (journalled like every other call). Other
    keyword arguments go to :class:`Evaluation` (``questions=``, ``num_questions=``, ``pairs=``,
    ``max_concurrency=``, ``prices=``, ``show_progress=``...). The corpus for question generation is
    the index's chunks.
    """
    answer_model = as_language_model(llm, name="answer-model")
    late = _LateModel(answer_model, "keywords") if keywords else None
    built_options = ConfigurationOptions(
        params=params or RetrievalParams(),
        max_tokens=max_tokens,
        keyword_llm=late,
        token_counter=options.get("token_counter"),
    )
    built = iter(build_configurations(index, [c for c in configurations if isinstance(c, str)], built_options))
    chosen = [next(built) if isinstance(c, str) else c for c in configurations]
    if options.get("passages") is None and options.get("questions") is None:
        options["passages"] = index_passages(index)
    evaluation = Evaluation(run_dir, llm=answer_model, judge_llm=judge_llm, configurations=chosen, **options)
    if late is not None:
        evaluation._late.append(late)  # journalled from the moment the run's loop exists
    return await evaluation.arun()


def evaluate(index: PathRAGIndex, run_dir: str | Path | None, **kwargs: Any) -> EvalReport:
    """Sync twin of :func:`aevaluate` (safe inside a running event loop)."""
    return run_sync(aevaluate(index, run_dir, **kwargs))


# -- a stand-in model ----------------------------------------------------------------------------------

_CAPITALISED = re.compile(r"\b(?:[A-Z][\w'’-]+)(?: +(?:of +the +|of +|the +)?[A-Z][\w'’-]+)*")
_STOP = {
    "The",
    "A",
    "An",
    "How",
    "What",
    "Why",
    "Who",
    "Which",
    "When",
    "Where",
    "In",
    "On",
    "Is",
    "Are",
    "Did",
    "Does",
    "Do",
    "And",
    "Of",
    "To",
    "For",
    "Path",
    "Question",
    "Answer",
    "Relational",
    "Describe",
}


_ANSWER_OPENING = "\n\n" + " ".join(ANSWER_INSTRUCTIONS.split()[:4])  # "Answer the question above"


def _names(text: str) -> list[str]:
    found = (m.group(0) for m in _CAPITALISED.finditer(text))
    return list(dict.fromkeys(n for n in found if n not in _STOP and len(n) > 2))


class OfflineEvalModel(LanguageModel):
    """A deterministic, free stand-in for every model of an evaluation: checks a setup end to end and
    measures prompt sizes without an API key. Its questions, answers and verdicts are mechanical and
    mean nothing about quality.

    It describes a corpus by its first sentences, invents generic users and tasks, asks how the
    capitalised names of the description relate, answers with the first lines of its context, and
    judges by answer length (comprehensiveness, overall), vocabulary (diversity) and the like.
    """

    def __init__(self, name: str = "offline-eval") -> None:
        self.name = name

    @override
    def complete(self, prompt: str) -> str:
        if prompt.startswith("EVALUATION SETUP: DESCRIBE"):
            excerpts = prompt.split("Excerpts:\n", 1)[-1].rsplit("\n\nDescription:", 1)[0]
            firsts = [re.split(r"(?<=[.!?])\s", p.split("] ", 1)[-1], maxsplit=1)[0] for p in excerpts.split("\n\n")]
            return "A collection of documents. " + " ".join(firsts)[:1500]
        if prompt.startswith("EVALUATION SETUP: USERS"):
            users = int(re.search(r"Imagine (\d+)", prompt).group(1))  # type: ignore[union-attr]
            tasks = int(re.search(r"name (\d+) distinct", prompt).group(1))  # type: ignore[union-attr]
            roles = ["historian", "journalist", "analyst", "student", "planner", "auditor", "teacher"]
            return json.dumps(
                {
                    "users": [
                        {
                            "user": f"A {roles[u % len(roles)]} ({u + 1})",
                            "tasks": [f"task {t + 1} of user {u + 1}" for t in range(tasks)],
                        }
                        for u in range(users)
                    ]
                }
            )
        if prompt.startswith("EVALUATION SETUP: QUESTIONS"):
            count = int(re.search(r"Write (\d+) questions", prompt).group(1))  # type: ignore[union-attr]
            description = prompt.split("collection of documents:", 1)[-1].split("\nUser:", 1)[0]
            names = _names(description) or ["the collection"]
            seed = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
            questions = []
            for i in range(count):
                a, b = names[(seed + i) % len(names)], names[(seed // 7 + 3 * i + 1) % len(names)]
                questions.append(
                    f"How is {a} connected to {b}, and what followed from it?"
                    if a != b
                    else f"What part does {a} play across the collection?"
                )
            return json.dumps({"questions": questions})
        if prompt.startswith("You are judging two answers"):
            first = prompt.split("\nAnswer 1:\n", 1)[-1].split("\n\nAnswer 2:\n", 1)
            one, two = first[0], first[-1].split("\n\nCompare the two answers", 1)[0]
            score = {
                "comprehensiveness": (len(one.split()), len(two.split())),
                "diversity": (len(set(one.lower().split())), len(set(two.lower().split()))),
                "logicality": (one.count("."), two.count(".")),
                "relevance": (-abs(len(one) - 600), -abs(len(two) - 600)),
                "coherence": (-one.count("\n"), -two.count("\n")),
            }
            verdict = {
                d: {"winner": 1 if s1 >= s2 else 2, "reason": "mechanical comparison"} for d, (s1, s2) in score.items()
            }
            ones = sum(v["winner"] == 1 for v in verdict.values())
            verdict["overall"] = {"winner": 1 if ones >= 3 else 2, "reason": "majority of the dimensions"}
            return json.dumps(verdict)
        if prompt.startswith(KEYWORDS_PROMPT.split("{", 1)[0]):
            question = prompt.rsplit("Question:", 1)[-1].rsplit("JSON:", 1)[0]
            return json.dumps({"high_level": [], "low_level": _names(question)})
        if _ANSWER_OPENING in prompt:  # the opening every answer instruction of the core shares
            context = prompt.rsplit(_ANSWER_OPENING, 1)[0]
            lines = [
                line.strip()
                for line in context.splitlines()[1:]
                if line.strip()
                and not line.startswith(("Path ", "Passage ", "Entity ", "Relational paths", "Source passages"))
            ]
            words = " ".join(lines[:8]).split()[:150]
            return " ".join(words) or "The knowledge graph does not cover this question."
        return "(the offline stand-in model has no answer for this prompt)"

    @override
    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)

    def __repr__(self) -> str:
        return f"OfflineEvalModel(name={self.name!r})"


# -- the HTML report ---------------------------------------------------------------------------------

_REPORT_CSS = """body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1f2933;line-height:1.45}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}
td,th{padding:.25rem .7rem;border-bottom:1px solid #e4e7eb;text-align:right}
td:first-child,th:first-child{text-align:left}.num{font-variant-numeric:tabular-nums}
svg{max-width:100%;height:auto}.a{fill:#2680c2}.b{fill:#f0b429}.axis{stroke:#9aa5b1;stroke-dasharray:3 3}
.label{font-size:13px;fill:#1f2933}.pct{font-size:12px;fill:#fff;font-weight:600}
.pct-b{font-size:12px;fill:#1f2933;font-weight:600}.note{font-size:12px;fill:#52606d}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
.pair div{background:#f5f7fa;border-radius:6px;padding:.6rem .8rem;white-space:pre-wrap;font-size:14px}
.muted{color:#52606d;font-size:14px}h3{margin-bottom:.2rem}
.key-a{color:#2680c2;font-weight:700}.key-b{color:#b7791f;font-weight:700}"""


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _chart(pair: PairResult) -> str:
    """Inline SVG: one bar per dimension split into a's share (left) and b's share (right) of the wins."""
    esc = html.escape
    label_w, bar_w, row_h, top = 150, 560, 30, 10
    height = top + row_h * len(DIMENSIONS) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {label_w + bar_w + 170} {height}" role="img" '
        f'aria-label="{esc(f"Win rate of {pair.a} against {pair.b} per dimension")}">'
    ]
    for row, dimension in enumerate(DIMENSIONS):
        tally = pair.dimensions[dimension]
        y = top + row * row_h
        parts.append(f'<text class="label" x="0" y="{y + 18}">{esc(dimension)}</text>')
        rate = tally.win_rate_a
        if rate is None:
            parts.append(f'<text class="note" x="{label_w}" y="{y + 18}">no valid judgements</text>')
            continue
        split = bar_w * rate
        parts.append(
            f'<rect class="a" x="{label_w}" y="{y + 4}" width="{split:.1f}" height="20"><title>'
            f"{esc(pair.a)}: {tally.wins_a} of {tally.judged}</title></rect>"
        )
        parts.append(
            f'<rect class="b" x="{label_w + split:.1f}" y="{y + 4}" width="{bar_w - split:.1f}" height="20">'
            f"<title>{esc(pair.b)}: {tally.wins_b} of {tally.judged}</title></rect>"
        )
        if rate >= 0.12:
            parts.append(f'<text class="pct" x="{label_w + 6}" y="{y + 19}">{_pct(rate)}</text>')
        if rate <= 0.88:
            parts.append(
                f'<text class="pct-b" x="{label_w + bar_w - 6}" y="{y + 19}" text-anchor="end">{_pct(1 - rate)}</text>'
            )
        parts.append(
            f'<text class="note" x="{label_w + bar_w + 10}" y="{y + 18}">orders disagree '
            f"{_pct(tally.disagreement_rate)}</text>"
        )
    parts.append(
        f'<line class="axis" x1="{label_w + bar_w / 2}" y1="{top}" x2="{label_w + bar_w / 2}" '
        f'y2="{height - 10}"/></svg>'
    )
    return "".join(parts)


def render_html(report: EvalReport) -> str:
    """A standalone HTML page of ``report``: no scripts, no external links, charts as inline SVG."""
    esc = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        "<title>pathrag evaluation</title>",
        f"<style>{_REPORT_CSS}</style>",
        "</head>",
        "<body>",
        "<h1>PathRAG evaluation</h1>",
        f'<p class="muted">{len(report.questions)} questions · answers by {esc(report.models.get("answer", "?"))}'
        f" · judged by {esc(report.models.get('judge', '?'))} · each pair judged in both orders"
        f" · {report.seconds:.1f} s</p>",
        "<h2>Configurations</h2>",
        "<table><thead><tr><th>configuration</th><th>answered</th><th>failed</th><th>context tokens</th>"
        "<th>prompt tokens</th><th>answer tokens</th><th>retrieval LLM tokens</th><th>latency s</th>"
        "<th>cost</th></tr></thead><tbody>",
    ]
    for c in report.configurations:
        out.append(
            f'<tr><td>{esc(c.name)}<br><span class="muted">{esc(c.description)}</span></td>'
            f'<td class="num">{c.answered}</td><td class="num">{c.failed}</td>'
            f'<td class="num">{c.mean_context_tokens:,.0f}</td><td class="num">{c.mean_prompt_tokens:,.0f}</td>'
            f'<td class="num">{c.mean_answer_tokens:,.0f}</td>'
            f'<td class="num">{c.mean_retrieval_tokens:,.0f}</td>'
            f'<td class="num">{c.mean_latency_s:.2f}</td><td class="num">{c.cost:.4f}</td></tr>'
        )
    out.append('</tbody></table><p class="muted">Token columns are means per question.</p>')
    for pair in report.pairs:
        out.append(f'<h2><span class="key-a">{esc(pair.a)}</span> vs <span class="key-b">{esc(pair.b)}</span></h2>')
        out.append(
            f'<p class="muted">Share of wins per dimension over {pair.judgements} judgements '
            f"({pair.invalid} invalid, {pair.missing} not judged for want of an answer). "
            '"Orders disagree": questions where swapping the answers changed the winner.</p>'
        )
        out.append(_chart(pair))
    losing = report.worst
    if losing:
        out.append("<h2>Worst-losing questions</h2>")
    for w in losing:
        out.append(
            f"<h3>{esc(w.question.text)}</h3>"
            f'<p class="muted"><span class="key-a">{esc(w.a)}</span> lost {w.losses} of {w.of} '
            f'dimension verdicts (overall: {w.overall_losses} of 2) to <span class="key-b">{esc(w.b)}</span>'
            + (f" · user: {esc(w.question.user)} · task: {esc(w.question.task)}" if w.question.user else "")
            + "</p>"
        )
        out.append(
            f'<div class="pair"><div><strong>{esc(w.a)}</strong>\n{esc(w.answer_a)}</div>'
            f"<div><strong>{esc(w.b)}</strong>\n{esc(w.answer_b)}</div></div>"
        )
        if w.reasons:
            out.append('<p class="muted">Judge (overall): ' + esc(" / ".join(w.reasons)) + "</p>")
    usage = ", ".join(
        f"{role}: {u.calls} calls made + {u.reused} reused, {u.prompt_tokens + u.answer_tokens:,} tokens"
        for role, u in report.usage.items()
    )
    out += [f'<p class="muted">Model use: {esc(usage) or "none"}.</p>', "</body>", "</html>"]
    return "\n".join(out)
