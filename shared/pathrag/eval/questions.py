"""The questions of an evaluation: the corpus they are about, how a model writes them, and their file.

A model describes the corpus from excerpts spread over it, imagines users and their tasks, then writes
questions per (user, task) that need the corpus as a whole (:func:`agenerate_questions`). They are saved
as JSON lines (:func:`write_questions`) and can be reused, or written by hand, one per line
(:func:`read_questions`).

>>> Question("How did the flood start?").id == Question(" How did  the flood start? ").id
True
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PathRAGError
from ..files import Journal, NotARegularFile, check_regular_file
from ..llm.client import LanguageModel, as_language_model
from ..llm.tokens import TokenCounter, count_tokens
from ..query.retrieval import MAX_QUERY_CHARS
from .calls import CallFailed, ModelCalls
from .parsing import clean_text, json_value, loose_key
from .prompts import CORPUS_SUMMARY_PROMPT, QUESTIONS_PROMPT, USERS_PROMPT

if TYPE_CHECKING:
    from ..index.front import PathRAGIndex

__all__ = [
    "EvaluationError",
    "Question",
    "agenerate_questions",
    "corpus_excerpts",
    "generate_questions",
    "index_passages",
    "item_text",
    "parse_questions",
    "parse_users",
    "read_questions",
    "write_questions",
]

logger = logging.getLogger(__name__)

_NUMBERING = re.compile(r"^\s*(?:[-*•]+|\(?\d+[.)]|Q\d+[:.)])\s*")


class EvaluationError(PathRAGError, RuntimeError):
    """The evaluation cannot go on (e.g. no usable questions); the message says why."""


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


# -- the file ----------------------------------------------------------------------------------------


def write_questions(path: str | Path, questions: Iterable[Question]) -> None:
    """Save questions as JSON lines (``{"id", "question", "user", "task"}``), atomically.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "questions.jsonl"
    >>> write_questions(path, [Question("Why?", "a mayor", "budget")])
    >>> read_questions(path)
    [Question(text='Why?', user='a mayor', task='budget')]
    """
    Journal(path).rewrite(q.to_json() for q in questions)


def read_questions(path: str | Path) -> list[Question]:
    """Load questions from JSON lines (as written by :func:`write_questions`) or plain text, one per line.

    Blank lines and duplicates are skipped. The first question line decides the format: when it is a JSON
    object, every line must be one with a ``"question"`` text; in plain text, a line starting with ``{`` (a
    damaged JSON line, most likely) is refused too, never taken as a question. Raises
    :class:`EvaluationError` naming the file and line for such a line, for a FIFO, socket or device (reading
    one would block), or if the file holds no question.
    """
    try:
        path = check_regular_file(path)
    except NotARegularFile as exc:
        raise EvaluationError(str(exc)) from None
    found: dict[str, Question] = {}
    json_lines: bool | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        row = _json_object(line)
        if json_lines is None:
            json_lines = row is not None
        question = _question_line(line, row, json_lines=json_lines, where=f"{path} line {number}")
        if len(question.text) > MAX_QUESTION_CHARS:  # every configuration would refuse it (and echo it)
            raise EvaluationError(
                f"{path} line {number} holds a question of {len(question.text):,} characters; at most "
                f"{MAX_QUESTION_CHARS:,} are accepted (one question per line)"
            )
        found.setdefault(question.id, question)
    if not found:
        raise EvaluationError(f"no questions in {path}")
    return list(found.values())


MAX_QUESTION_CHARS = MAX_QUERY_CHARS
"""The longest question a questions file may hold: the longest query a retrieval accepts."""


def brief(text: str, limit: int = 80) -> str:
    """``text`` as a log line shows it: its start, and its length when it is longer than ``limit``.

    >>> brief("How is Mara connected to the Gull?")
    'How is Mara connected to the Gull?'
    >>> brief("x" * 5_000_000, 10)
    'xxxxxxxxxx… (5,000,000 characters)'
    """
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def _json_object(line: str) -> dict[str, Any] | None:
    """The JSON object on ``line``; ``None`` when it holds none."""
    if not line.startswith("{"):
        return None
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return None
    return row if isinstance(row, dict) else None


def _question_line(line: str, row: dict[str, Any] | None, *, json_lines: bool, where: str) -> Question:
    """The question on one line of a questions file: ``row``, its JSON object of :func:`write_questions`, or
    the text. Raises :class:`EvaluationError` naming ``where`` for a line that is neither."""
    if row is None:
        if json_lines or line.startswith("{"):
            expected = "one JSON object per line, as in the first" if json_lines else "one question per line"
            raise EvaluationError(f"{where} is not a JSON object of a question: expected {expected}")
        return Question(line)
    value = row.get("question") or row.get("text")
    if not (isinstance(value, str) and value.strip()):
        raise EvaluationError(f'{where} has no "question" text')
    return Question(value.strip(), str(row.get("user") or ""), str(row.get("task") or ""))


# -- the corpus --------------------------------------------------------------------------------------


def index_passages(index: PathRAGIndex) -> list[str]:
    """The text of every live chunk of ``index``, by document id, then position (imported records have none)."""
    ids = [cid for doc_id in sorted(index.documents) for cid in index.documents[doc_id].chunks]
    if callable(getattr(index, "chunk_texts", None)):  # reads only the texts, not the extraction records
        texts = index.chunk_texts(ids)
    else:
        texts = {cid: chunk.text if (chunk := index.chunks.get(cid)) is not None else "" for cid in ids}
    passages = list(dict.fromkeys(t.strip() for cid in ids if (t := texts.get(cid)) and t.strip()))
    if not passages:  # an imported graph's passages live in the chunk index only
        passages = [text for cid in _item_ids(index.chunk_index) if (text := item_text(index.chunk_index, cid))]
    return list(dict.fromkeys(passages))


def _item_ids(vectors: Any) -> list[str]:
    """Every id in a vector index that can list them (not every implementation can)."""
    return list(vectors.ids()) if callable(getattr(vectors, "ids", None)) else []


def item_text(vectors: Any, item_id: str) -> str:
    """The text a vector index keeps for ``item_id`` ("" if it keeps none or cannot say).

    >>> item_text(object(), "c1")
    ''
    """
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


# -- reading the model's answers -----------------------------------------------------------------------


def parse_questions(text: str) -> list[str]:
    """Questions from a model's answer: ``{"questions": [...]}``, a JSON list, or numbered/bulleted lines
    ending in ``?``. Duplicates and blanks are dropped; never raises.

    >>> parse_questions('Sure!\\n1. How did the flood change the town?\\n2) Who paid for the barrier?\\nThanks')
    ['How did the flood change the town?', 'Who paid for the barrier?']
    """
    data = json_value(text)
    items: Any = None
    if isinstance(data, dict):
        items = next((v for k, v in data.items() if loose_key(k) in ("questions", "question", "items")), None)
    elif isinstance(data, list):
        items = data
    found: list[str] = []
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict):
                item = item.get("question") or item.get("text")
            if isinstance(item, str) and clean_text(item):
                found.append(clean_text(_NUMBERING.sub("", item)))
    elif isinstance(text, str):
        for line in text.splitlines():
            line = clean_text(_NUMBERING.sub("", line.strip()))
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
    data = json_value(text)
    if isinstance(data, dict):
        data = next((v for k, v in data.items() if loose_key(k) in ("users", "personas", "people")), None)
    if not isinstance(data, list):
        return []
    found = []
    for item in data:
        if not isinstance(item, dict):
            continue
        keys = {loose_key(k): v for k, v in item.items()}
        user = next(
            (keys[k] for k in ("user", "name", "role", "description", "persona") if isinstance(keys.get(k), str)), ""
        )
        tasks = keys.get("tasks")
        tasks = (
            [clean_text(t) for t in tasks if isinstance(t, str) and clean_text(t)] if isinstance(tasks, list) else []
        )
        if clean_text(user) and tasks:
            found.append((clean_text(user), list(dict.fromkeys(tasks))))
    return found


# -- writing them ------------------------------------------------------------------------------------


async def _people(
    calls: ModelCalls, model: LanguageModel, excerpts: str, users: int, tasks: int, progress: Callable[[], None]
) -> tuple[str, list[tuple[str, list[str]]]]:
    """The corpus description and the imagined users with their tasks (two calls, the second maybe retried)."""
    try:
        description = (
            await calls.ask(model, CORPUS_SUMMARY_PROMPT.format(max_words=200, excerpts=excerpts), "questions")
        ).answer.strip()
        progress()
        prompt = USERS_PROMPT.format(description=description, users=users, tasks=tasks)
        people, _ = await calls.ask_parsed(model, prompt, "questions", parse_users)
        progress()
    except CallFailed as exc:  # nothing to go on without these two answers
        raise EvaluationError(f"the question model failed: {exc}") from exc
    if not people:
        raise EvaluationError(
            "the question model proposed no usable users and tasks (asked twice); "
            "try another model, or pass your own questions"
        )
    return description, people


async def generate_questions(
    calls: ModelCalls,
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
    """:func:`agenerate_questions` inside a run: its calls go through ``calls``; ``progress`` after each.

    Raises:
        ValueError: a count below 1.
        EvaluationError: no usable users/tasks or questions came back.
    """
    if num_questions < 1 or users < 1 or tasks < 1:
        raise ValueError("num_questions, users and tasks must be >= 1")
    excerpts = corpus_excerpts(passages, max_tokens=excerpt_tokens, token_counter=token_counter)
    if not excerpts:
        raise EvaluationError("the corpus has no text to write questions about")
    description, people = await _people(calls, model, excerpts, users, tasks, progress)
    pairs = [(user, task) for user, its in people[:users] for task in its[:tasks]]
    per_pair = max(1, math.ceil(num_questions / len(pairs)))

    async def one(user: str, task: str) -> list[str]:
        prompt = QUESTIONS_PROMPT.format(description=description, user=user, task=task, count=per_pair)
        try:
            found, _ = await calls.ask_parsed(model, prompt, "questions", parse_questions)
        except CallFailed as exc:
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
    calls = ModelCalls(journal or None, max_concurrency=max_concurrency, token_counter=token_counter)
    with calls.session():
        return await generate_questions(
            calls,
            as_language_model(llm),
            passages,
            num_questions=num_questions,
            users=users,
            tasks=tasks,
            excerpt_tokens=excerpt_tokens,
            token_counter=token_counter,
        )
