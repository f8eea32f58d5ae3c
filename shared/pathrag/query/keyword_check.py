"""Keyword answers that are about the question, or none: what a weak or parroting model's answer is worth.

A model that copies the keyword prompt (LlamaIndex's ``MockLLM`` does it exactly, small local models partly)
answers with the prompt's example keywords; a confused one with names the question never mentions. Searched
as they stand, they seed the graph with the example's entities instead of the question's. :func:`checked_keywords`
keeps an answer's keywords by two rules:

* a keyword of the prompt's example (:data:`~pathrag.llm.prompts.KEYWORDS_EXAMPLE`) is dropped unless the question
  itself spells it;
* when none of the keywords left shares a word with the question (case-insensitive; words of three letters or
  more, compared by their first five letters so "flooding" meets "flood"; function words do not count; a word
  of a script written without spaces is looked for anywhere in the question), the answer names nothing in the
  question and is not used: retrieval searches with the question, as without a model.

>>> from pathrag.models import Keywords
>>> checked_keywords("Who built the Saltgate Barrier?", Keywords(("flood defence",), ("Saltgate Barrier",)))
Keywords(high_level=(), low_level=('Saltgate Barrier',))
>>> checked_keywords("Where does Mara Quill live?", Keywords(("accountability",), ("Greyfen Marine Company",))) is None
True
"""

from __future__ import annotations

import json
import re
from functools import cache

from ..llm.prompts import KEYWORDS_EXAMPLE
from ..models import Keywords
from ..names import FUNCTION_WORDS

__all__ = ["checked_keywords"]

_WORD = re.compile(r"\w+", re.UNICODE)
_STEM = 5


@cache
def _example_keywords() -> frozenset[str]:
    example = json.loads(KEYWORDS_EXAMPLE)
    return frozenset(k.casefold() for values in example.values() for k in values)


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.casefold()) if (len(w) >= 3 or not w.isascii()) and w not in FUNCTION_WORDS]


def _about(keyword: str, asked: str, stems: set[str]) -> bool:
    """Whether ``keyword`` shares a word with the question (``asked`` folded, ``stems`` its words' beginnings);
    a word of a script written without spaces is looked for anywhere in the question."""
    return any(w[:_STEM] in stems or (not w.isascii() and w in asked) for w in _words(keyword))


def checked_keywords(question: str, keywords: Keywords) -> Keywords | None:
    """``keywords`` without the prompt's example ones the question does not spell; ``None`` when what is left
    names nothing in the question (see the module docstring)."""
    asked = " ".join(question.casefold().split())
    examples = _example_keywords()

    def kept(values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(v for v in values if v.casefold() not in examples or " ".join(v.casefold().split()) in asked)

    high, low = kept(keywords.high_level), kept(keywords.low_level)
    stems = {w[:_STEM] for w in _words(question)}
    if not any(_about(keyword, asked, stems) for keyword in (*high, *low)):
        return None
    return Keywords(high, low)
