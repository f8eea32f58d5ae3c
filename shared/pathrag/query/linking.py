"""Which graph entities a question names: its spans that spell an entity's name, found offline.

Every run of up to :data:`MAX_NAME_WORDS` consecutive words of the question that neither opens nor closes
with a lower-case function word ("the", "of", "which") is a candidate, normalised
exactly as the store normalises entity names (:func:`pathrag.names.normalize_name`: case, spacing,
quotes), with a trailing possessive ``'s`` and sentence punctuation removed. One batched
``GraphStore.get_entities`` call says which candidates exist; of overlapping ones the longest wins (then
the earliest), so "West Virginia" is linked rather than "Virginia".

Common nouns are entities too in extracted graphs ("country", "author"), and linking them would seed the
search with hubs the question merely mentions. So when a question holds capital letters, a candidate must
hold a word that is capitalised (other than a function word opening the sentence) or has a digit; in an
all-lower-case question any candidate qualifies. Languages that do not
separate words with spaces link nothing here and rely on the keyword and embedding seeds.

>>> spans = name_spans("Who founded the company that built the Orla bridge?")
>>> linked_names(spans, known={"ORLA BRIDGE", "ORLA", "COMPANY", "BRIDGE"})
['ORLA BRIDGE']
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..names import FUNCTION_WORDS as _FUNCTION_WORDS
from ..names import normalize_name

__all__ = ["MAX_NAME_WORDS", "NameSpan", "linked_names", "name_spans"]

#: The longest name looked up, in words (titles such as "Alexander and the Terrible, Horrible, No Good,
#: Very Bad Day" run longer and are then found through the keyword and embedding seeds).
MAX_NAME_WORDS = 8

#: At most this many words of a question are scanned: a name is spelled within its first few hundred
#: words, and the lookup stays one bounded batch whatever is pasted in.
MAX_QUESTION_WORDS = 400

_EDGE_PUNCTUATION = "?!.,;:\"'()[]{}“”‘’«»"
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)


@dataclass(frozen=True)
class NameSpan:
    """A run of the question's words (``start`` to ``end``, exclusive) and its name key."""

    start: int
    end: int
    key: str


def _clean(word: str) -> str:
    return _POSSESSIVE.sub("", word.strip(_EDGE_PUNCTUATION)).strip(_EDGE_PUNCTUATION)


def _joining(word: str) -> bool:
    """A lower-case function word: it joins a name to the sentence and never opens or closes a name
    ("the" in "the country", unlike "The" in "The Hague")."""
    return word.lower() in _FUNCTION_WORDS and not word[:1].isupper()


def _capitalised(word: str) -> bool:
    return word[:1].isupper() or any(ch.isdigit() for ch in word)


def name_spans(question: str, max_words: int = MAX_NAME_WORDS) -> list[NameSpan]:
    """The question's candidate name spans, longest first (see the module docstring for which qualify).

    >>> [s.key for s in name_spans("where was mara born?", max_words=2)]
    ['MARA BORN', 'MARA', 'BORN']
    """
    words = question.split()[:MAX_QUESTION_WORDS]
    cleaned = [_clean(w) for w in words]
    cased = any(ch.isupper() for ch in question)
    # a capitalised word counts as a name's, except a function word opening the question ("What ...")
    marks = [
        bool(c) and _capitalised(c) and not (i == 0 and c.lower() in _FUNCTION_WORDS) for i, c in enumerate(cleaned)
    ]
    spans: dict[str, NameSpan] = {}
    for length in range(min(max_words, len(words)), 0, -1):
        for start in range(len(words) - length + 1):
            end = start + length
            first, last = cleaned[start], cleaned[end - 1]
            if not first or not last or _joining(first) or _joining(last):
                continue
            if cased and not any(marks[start:end]):
                continue
            # inner punctuation stays: "Johnnycake, West Virginia" is a name of its own
            key = normalize_name(_clean(" ".join(words[start:end])))
            if key and key not in spans:
                spans[key] = NameSpan(start, end, key)
    return sorted(spans.values(), key=lambda s: (-(s.end - s.start), s.start))


def linked_names(spans: Sequence[NameSpan], known: Collection[str]) -> list[str]:
    """The names of ``known`` entities among ``spans``: longest first, then earliest, never overlapping.

    >>> spans = name_spans("Is Johnnycake in West Virginia?")
    >>> linked_names(spans, {"WEST VIRGINIA", "VIRGINIA", "JOHNNYCAKE"})
    ['WEST VIRGINIA', 'JOHNNYCAKE']
    """
    taken: set[int] = set()
    names: list[str] = []
    for span in spans:  # longest first, then earliest
        if span.key not in known or any(i in taken for i in range(span.start, span.end)):
            continue
        taken.update(range(span.start, span.end))
        names.append(span.key)
    return names
