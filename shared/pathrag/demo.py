"""The zero-key demo: a small fictional corpus indexed through the real pipeline with recorded answers.

``demo_data/`` holds six short documents about the town of Lowmarrow (``corpus/*.md``, one chunk
each), the answers an extraction model gave for them (``extractions/<stem>.txt``, and
``<stem>.glean.txt`` where the gleaning round found more) and three questions whose answers need
several hops. :class:`ReplayLLM` answers pathrag's own prompts from those recordings, so
:func:`run_demo` exercises the real extraction parser, merging, vector indexes, keyword step, path
pruning and context layout with no network and no API key.

>>> llm = ReplayLLM.from_directory()
>>> len(llm.entity_names), "ODRIC PELHAM" in llm.entity_names
(37, True)
>>> llm.complete(KEYWORDS_PROMPT.format(question="Who chairs the Morrow Inquiry?"))
'{"high_level": [], "low_level": ["MORROW INQUIRY"]}'
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeAlias

from typing_extensions import override

try:
    from importlib.resources.abc import Traversable
except ImportError:  # Python 3.10
    from importlib.abc import Traversable

from .errors import PathRAGError
from .index.compact import compact_lines
from .index.extraction import parse_answers
from .index.front import Document, IndexConfig, InsertSummary, PathRAGIndex
from .index.packing import compact_answer, prompt_texts
from .llm.client import LanguageModel
from .llm.prompts import ANSWER_INSTRUCTIONS, KEYWORDS_PROMPT, SUMMARY_PROMPT
from .models import Entity, Relation
from .query.context import PathContext, answer_prompt, result_context
from .query.retrieval import RetrievalParams, RetrievalResult
from .vectors.base import Embedder
from .vectors.hashing import HashingEmbedder

__all__ = [
    "DEMO_PARAMS",
    "DemoQuestion",
    "DemoRun",
    "QuestionRun",
    "ReplayLLM",
    "ReplayMiss",
    "answer_prompt",
    "ask_demo_question",
    "demo_data",
    "load_corpus",
    "load_questions",
    "open_demo_index",
    "result_context",
    "run_demo",
]

Root: TypeAlias = str | os.PathLike[str] | Traversable

#: Retrieval settings of the demo. The paper's defaults (40 seeds, θ = 0.05, 15 paths) are sized for
#: large sparse graphs. This one has 37 entities and 104 relations, and each question's answer runs
#: through hubs of degree 8 to 14: at θ = 0.05 no flow gets through them. So: one seed per name in
#: the question, θ = 0.001, and five paths, which keeps the printed prompts readable.
DEMO_PARAMS = RetrievalParams(top_k=5, num_seeds=2, theta=0.001)


def demo_data() -> Traversable:
    """The packaged demo data folder (works from a wheel as well as from a source tree)."""
    return resources.files("pathrag") / "demo_data"


def _root(root: Root | None) -> Traversable:
    if root is None:
        return demo_data()
    return Path(root) if isinstance(root, (str, os.PathLike)) else root


def _text_files(folder: Traversable, suffix: str) -> list[Traversable]:
    return sorted((f for f in folder.iterdir() if f.is_file() and f.name.endswith(suffix)), key=lambda f: f.name)


def load_corpus(root: Root | None = None) -> list[Document]:
    """The demo documents, one chunk each, with the file stem as id.

    >>> [d.id for d in load_corpus()][:2]
    ['01-lowmarrow-gazetteer', '02-greyfen-expansion-plan']
    """
    folder = _root(root) / "corpus"
    return [
        Document(id=f.name.rsplit(".", 1)[0], text=f.read_text(encoding="utf-8")) for f in _text_files(folder, ".md")
    ]


@dataclass(frozen=True)
class DemoQuestion:
    """A demo question with its reference answer and the path that answers it."""

    question: str
    answer: str
    key_entities: tuple[str, ...]
    expected_path: tuple[str, ...]


def load_questions(root: Root | None = None) -> list[DemoQuestion]:
    """The demo questions from ``questions.json``.

    >>> load_questions()[0].expected_path
    ('ODRIC PELHAM', 'NORTH CHANNEL DREDGING', 'LANTERN NIGHT FLOOD')
    """
    rows = json.loads((_root(root) / "questions.json").read_text(encoding="utf-8"))
    return [DemoQuestion(r["question"], r["answer"], tuple(r["key_entities"]), tuple(r["expected_path"])) for r in rows]


# -- the replay model --------------------------------------------------------------------------------


class ReplayMiss(PathRAGError, LookupError):
    """The replay model was asked something it has no recorded answer for."""


_CHUNK = re.compile(r"NOW THE REAL TEXT\nText:\n(.*)\nOutput:\n", re.S)
_KEYWORDS_HEAD, _KEYWORDS_TAIL = KEYWORDS_PROMPT.format(question="\x00").split("\x00")
_SUMMARY_HEAD = SUMMARY_PROMPT.split('"{name}"', 1)[0]
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _normal(text: str) -> str:
    return " ".join(text.split())


class ReplayLLM(LanguageModel):
    """A :class:`~pathrag.LanguageModel` that answers pathrag's prompts from recorded answers.

    * Extraction prompt: the recorded first answer for the chunk text inside the prompt (matched
      with whitespace collapsed); gleaning prompt: the recorded gleaning answer, else "nothing missing".
      The compact prompt (one text or several packed): the records of every recorded answer of each text,
      written in its lines.
    * Keyword prompt: the known entity names written in the question (longest match first), so the
      query side runs as it would with a real model.
    * Summary prompt: the first sentence of each description, joined and cut to the word limit.
    * Anything else (an answer prompt, say) raises :class:`ReplayMiss` naming the prompt kind.

    ``recordings`` maps each chunk text to its answers: the first extraction, then the gleanings.
    """

    def __init__(
        self,
        recordings: Mapping[str, Sequence[str]],
        *,
        name: str = "replay",
        completion_delimiter: str = "<|COMPLETE|>",
    ) -> None:
        self.name = name
        self._answers = {_normal(text): list(answers) for text, answers in recordings.items()}
        self._done = completion_delimiter
        names = {e.name for answers in recordings.values() for e in parse_answers(answers).entities}
        names |= {n for answers in recordings.values() for r in parse_answers(answers).relations for n in r.pair}
        self.entity_names = frozenset(names)
        alternatives = "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))
        self._names = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.I) if names else None

    @classmethod
    def from_directory(cls, root: Root | None = None, **kwargs: Any) -> ReplayLLM:
        """Load ``corpus/<stem>.*`` with ``extractions/<stem>.txt`` (and ``<stem>.glean.txt``) from
        ``root`` (default: the packaged demo data). Raises :class:`ReplayMiss` if nothing is recorded."""
        folder = _root(root)
        try:
            answers = {f.name: f.read_text(encoding="utf-8") for f in _text_files(folder / "extractions", ".txt")}
            docs = [f for f in folder.joinpath("corpus").iterdir() if f.is_file()]
        except (OSError, UnicodeDecodeError) as exc:
            raise ReplayMiss(f"cannot read recorded answers under {folder}: {exc}") from exc
        recordings: dict[str, list[str]] = {}
        for doc in sorted(docs, key=lambda f: f.name):
            stem = doc.name.rsplit(".", 1)[0]
            if f"{stem}.txt" in answers:
                recordings[doc.read_text(encoding="utf-8")] = [
                    answers[f"{stem}.txt"],
                    *([answers[f"{stem}.glean.txt"]] if f"{stem}.glean.txt" in answers else []),
                ]
        if not recordings:
            raise ReplayMiss(f"no recorded extractions under {folder} (expected corpus/ and extractions/)")
        return cls(recordings, **kwargs)

    @override
    def complete(self, prompt: str) -> str:
        if prompt.startswith(_KEYWORDS_HEAD) and prompt.endswith(_KEYWORDS_TAIL):
            return self._keywords(prompt[len(_KEYWORDS_HEAD) : len(prompt) - len(_KEYWORDS_TAIL)])
        if prompt.startswith(_SUMMARY_HEAD) and prompt.rstrip().endswith("Merged description:"):
            return self._summary(prompt)
        found = _CHUNK.search(prompt)
        if found:
            answers = self._answers.get(_normal(found.group(1)))
            if answers is None:
                raise ReplayMiss(f"no recorded extraction for the chunk starting {found.group(1)[:60]!r}")
            if prompt.rstrip().endswith("Missing records:"):
                return answers[1] if len(answers) > 1 else self._done
            return answers[0]
        texts = prompt_texts(prompt)
        if texts:  # the compact prompt, of one text or several: the recorded records in its lines
            return compact_answer(["\n".join(compact_lines(*self._records(text))) for text in texts])
        kind = "answer" if ANSWER_INSTRUCTIONS in prompt else "unrecognised"
        raise ReplayMiss(
            f"the replay model has no answer for an {kind} prompt; it only replays extraction, "
            "gleaning, summary and keyword prompts"
        )

    @override
    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)

    def _records(self, text: str) -> tuple[list[Entity], list[Relation]]:
        """The records recorded for ``text``, first answer and gleanings together."""
        answers = self._answers.get(_normal(text))
        if answers is None:
            raise ReplayMiss(f"no recorded extraction for the chunk starting {text[:60]!r}")
        parsed = parse_answers(answers)
        return parsed.entities, parsed.relations

    def _keywords(self, question: str) -> str:
        found = [m.group(0).upper() for m in self._names.finditer(question)] if self._names else []
        # No known name: empty lists make the core fall back to the question text itself.
        return json.dumps({"high_level": [], "low_level": list(dict.fromkeys(found))})

    def _summary(self, prompt: str) -> str:
        listed = prompt.split("\nDescriptions:\n", 1)[-1].split("\n\nMerged description:", 1)[0]
        descriptions = [line[2:] for line in listed.splitlines() if line.startswith("- ")]
        limit = re.search(r"at most (\d+) words", prompt)
        firsts = dict.fromkeys(_SENTENCE.split(d.strip(), maxsplit=1)[0] for d in descriptions if d.strip())
        words = " ".join(firsts).split()
        return " ".join(words[: int(limit.group(1))] if limit else words)

    def __repr__(self) -> str:
        return f"ReplayLLM(name={self.name!r}, chunks={len(self._answers)})"


# -- the demo run ------------------------------------------------------------------------------------


@dataclass
class QuestionRun:
    """What one demo question produced."""

    question: DemoQuestion
    result: RetrievalResult
    context: PathContext
    prompt: str
    answer: str | None = None

    @property
    def hop_counts(self) -> dict[int, int]:
        """How many retrieved paths have each number of hops."""
        return dict(sorted(Counter(item.hops for item in self.result.key_paths).items()))

    def rank_of(self, nodes: Sequence[str]) -> int | None:
        """1-based rank of the path through ``nodes`` (either direction) among the results, else None."""
        wanted = {tuple(nodes), tuple(reversed(nodes))}
        return next((i for i, item in enumerate(self.result.key_paths, 1) if item.nodes in wanted), None)


@dataclass
class DemoRun:
    """What a demo run produced: the insert's summary, the index's stats and each question's run."""

    insert: InsertSummary
    stats: dict[str, int]
    questions: list[QuestionRun] = field(default_factory=list)


def open_demo_index(
    directory: str | os.PathLike[str] | None = None, *, embedder: Embedder | None = None, show_progress: bool = False
) -> tuple[PathRAGIndex, InsertSummary]:
    """Index the demo corpus with :class:`ReplayLLM` (in memory, or kept under ``directory``).

    The caller closes the index. Re-running on the same directory costs no LLM call.
    """
    index = PathRAGIndex(
        directory,
        llm=ReplayLLM.from_directory(),
        embedder=embedder or HashingEmbedder(),
        config=IndexConfig(show_progress=show_progress, max_attempts=1),
        extractor="llm",  # the recorded answers are the paper prompt's
    )
    try:
        return index, index.insert(load_corpus())
    except BaseException:
        index.close()
        raise


def ask_demo_question(
    index: PathRAGIndex,
    question: DemoQuestion,
    *,
    params: RetrievalParams = DEMO_PARAMS,
    answer_llm: LanguageModel | None = None,
) -> QuestionRun:
    """Retrieve the key paths for one question, lay out the prompt and, with ``answer_llm``, answer it."""
    result = index.retrieve(question.question, params=params)
    context = result_context(result)  # within the default budget, as every entry point lays it out
    prompt = answer_prompt(context)
    return QuestionRun(
        question, result, context, prompt, answer_llm.complete(prompt) if answer_llm is not None else None
    )


def run_demo(
    *,
    directory: str | os.PathLike[str] | None = None,
    embedder: Embedder | None = None,
    answer_llm: LanguageModel | None = None,
    params: RetrievalParams = DEMO_PARAMS,
) -> DemoRun:
    """Index the demo corpus with :class:`ReplayLLM` and run its questions (answered with ``answer_llm``).

    >>> run = run_demo()
    >>> run.insert.documents, run.insert.failures
    (6, [])
    >>> [q.rank_of(q.question.expected_path) is not None for q in run.questions]
    [True, True, True]
    """
    index, summary = open_demo_index(directory, embedder=embedder)
    try:
        return DemoRun(
            summary,
            index.stats(),
            [ask_demo_question(index, q, params=params, answer_llm=answer_llm) for q in load_questions()],
        )
    finally:
        index.close()
