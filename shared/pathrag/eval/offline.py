"""A free, deterministic stand-in for every model of an evaluation (``pathrag eval --offline``).

It recognises each prompt the evaluation sends by its opening and answers mechanically, so a setup can be
checked end to end and its prompt sizes measured without an API key. Its questions, answers and verdicts
mean nothing about quality.

>>> OfflineEvalModel().complete("EVALUATION SETUP: DESCRIBE\\nExcerpts:\\n[1] The flood came. It rained."
...                             "\\n\\nDescription:")
'A collection of documents. The flood came.'
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable

from typing_extensions import override

from ..llm.client import LanguageModel
from ..llm.prompts import ANSWER_INSTRUCTIONS, KEYWORDS_PROMPT

__all__ = ["OfflineEvalModel"]

_CAPITALISED = re.compile(r"\b(?:[A-Z][\w'’-]+)(?: +(?:of +the +|of +|the +)?[A-Z][\w'’-]+)*")
# capitalised words that open sentences or label context lines, not names
_STOP = frozenset(
    "The A An How What Why Who Which When Where In On Is Are Did Does Do And Of To For "
    "Path Question Answer Relational Describe".split()
)
_ANSWER_OPENING = "\n\n" + " ".join(ANSWER_INSTRUCTIONS.split()[:4])  # "Answer the question above"
_KEYWORDS_OPENING = KEYWORDS_PROMPT.split("{", 1)[0]
_ROLES = ("historian", "journalist", "analyst", "student", "planner", "auditor", "teacher")
_CONTEXT_LABELS = ("Path ", "Passage ", "Entity ", "Relational paths", "Source passages")


def _names(text: str) -> list[str]:
    """The capitalised names in ``text`` (several words joined, ``of the`` allowed), first seen first."""
    found = (m.group(0) for m in _CAPITALISED.finditer(text))
    return list(dict.fromkeys(n for n in found if n not in _STOP and len(n) > 2))


def _number(pattern: str, prompt: str) -> int:
    """The number ``pattern``'s group catches in ``prompt`` (the prompts are ours: it is there)."""
    match = re.search(pattern, prompt)
    if match is None:
        raise ValueError(f"not a prompt of the evaluation: no match for {pattern!r}")
    return int(match.group(1))


def _description(prompt: str) -> str:
    excerpts = prompt.split("Excerpts:\n", 1)[-1].rsplit("\n\nDescription:", 1)[0]
    firsts = [re.split(r"(?<=[.!?])\s", p.split("] ", 1)[-1], maxsplit=1)[0] for p in excerpts.split("\n\n")]
    return "A collection of documents. " + " ".join(firsts)[:1500]


def _users(prompt: str) -> str:
    users, tasks = _number(r"Imagine (\d+)", prompt), _number(r"name (\d+) distinct", prompt)
    people = [
        {
            "user": f"A {_ROLES[u % len(_ROLES)]} ({u + 1})",
            "tasks": [f"task {t + 1} of user {u + 1}" for t in range(tasks)],
        }
        for u in range(users)
    ]
    return json.dumps({"users": people})


def _questions(prompt: str) -> str:
    count = _number(r"Write (\d+) questions", prompt)
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


def _verdict(prompt: str) -> str:
    first = prompt.split("\nAnswer 1:\n", 1)[-1].split("\n\nAnswer 2:\n", 1)
    one, two = first[0], first[-1].split("\n\nCompare the two answers", 1)[0]
    score = {
        "comprehensiveness": (len(one.split()), len(two.split())),
        "diversity": (len(set(one.lower().split())), len(set(two.lower().split()))),
        "logicality": (one.count("."), two.count(".")),
        "relevance": (-abs(len(one) - 600), -abs(len(two) - 600)),
        "coherence": (-one.count("\n"), -two.count("\n")),
    }
    verdict = {d: {"winner": 1 if s1 >= s2 else 2, "reason": "mechanical comparison"} for d, (s1, s2) in score.items()}
    ones = sum(v["winner"] == 1 for v in verdict.values())
    verdict["overall"] = {"winner": 1 if ones >= 3 else 2, "reason": "majority of the dimensions"}
    return json.dumps(verdict)


def _keywords(prompt: str) -> str:
    question = prompt.rsplit("Question:", 1)[-1].rsplit("JSON:", 1)[0]
    return json.dumps({"high_level": [], "low_level": _names(question)})


def _answer(prompt: str) -> str:
    context = prompt.rsplit(_ANSWER_OPENING, 1)[0]
    lines = [line.strip() for line in context.splitlines()[1:] if line.strip() and not line.startswith(_CONTEXT_LABELS)]
    words = " ".join(lines[:8]).split()[:150]
    return " ".join(words) or "The knowledge graph does not cover this question."


#: Which prompt gets which answer, tried in order: (does the prompt match, answer).
_HANDLERS: tuple[tuple[Callable[[str], bool], Callable[[str], str]], ...] = (
    (lambda p: p.startswith("EVALUATION SETUP: DESCRIBE"), _description),
    (lambda p: p.startswith("EVALUATION SETUP: USERS"), _users),
    (lambda p: p.startswith("EVALUATION SETUP: QUESTIONS"), _questions),
    (lambda p: p.startswith("You are judging two answers"), _verdict),
    (lambda p: p.startswith(_KEYWORDS_OPENING), _keywords),
    (lambda p: _ANSWER_OPENING in p, _answer),  # the opening every answer instruction of the core shares
)


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
        for matches, respond in _HANDLERS:
            if matches(prompt):
                return respond(prompt)
        return "(the offline stand-in model has no answer for this prompt)"

    @override
    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)

    def __repr__(self) -> str:
        return f"OfflineEvalModel(name={self.name!r})"
