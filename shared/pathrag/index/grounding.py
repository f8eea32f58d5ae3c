"""Records must be about their chunk: the names an extraction answer gives must occur in the chunk's text.

A model that parrots the prompt (the few-shot examples' people and places, the format's literal
``SOURCE``/``TARGET``) or answers for another text gives records whose names the chunk never spells. Kept,
they would join the graph as real entities and link unrelated chunks through them. :func:`ground` drops
them, and counts them, by this rule:

* A name **occurs** in a chunk when, both compared case-insensitively (Unicode case folding, compatibility
  forms such as full-width letters made plain), the whole name appears in the text, or at least half of the
  name's words do (rounded up; a word is a run of letters or digits; function words such as "the" or "of"
  and single letters do not count unless the name has no other word). A word appears when the text holds a word starting
  with it ("Guild" in "Guilds", "Voss" in "Voss's"), or for a script written without spaces (Chinese,
  Japanese, Thai), anywhere in the text. So "Marrow Estuary" occurs in "the estuary of the Marrow", and
  "the United States" does not occur in "the US" (a model's expansion of an abbreviation is lost with the
  parroted names: rare, and on the safe side).
* An entity record whose name does not occur is dropped, and so is every relation naming such a name,
  and every relation between the format's placeholders (``SOURCE`` and ``TARGET``) whatever the text.

>>> from pathrag.models import Entity, Relation
>>> result = ExtractionResult(
...     entities=[Entity(name="MARA QUILL"), Entity(name="HEDDA VOSS")],
...     relations=[Relation(source="MARA QUILL", target="HEDDA VOSS"), Relation(source="SOURCE", target="TARGET")],
... )
>>> kept = ground(result, "Mara Quill sails to Saltmere.")
>>> [e.name for e in kept.entities], kept.relations, kept.ungrounded
(['MARA QUILL'], [], 3)
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from dataclasses import replace
from functools import lru_cache

from ..names import FUNCTION_WORDS, _visible
from .extraction import ExtractionResult

__all__ = ["PLACEHOLDER_NAMES", "ChunkWords", "ground", "name_occurs"]

#: The format's field names a parroting model copies as names: a relation between two of them is never kept.
PLACEHOLDER_NAMES = frozenset({"SOURCE", "TARGET", "SOURCE_ENTITY", "TARGET_ENTITY", "NAME", "ENTITY"})

_WORD = re.compile(r"\w+", re.UNICODE)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _spaceless(word: str) -> bool:
    """Whether ``word`` is of a script written without spaces between words (one \\w+ run is a whole phrase)."""
    return any(
        unicodedata.name(c, "").startswith(("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR"))
        for c in word
    )


class ChunkWords:
    """A chunk's text, folded once, to test many names against (see :func:`name_occurs`)."""

    def __init__(self, text: str) -> None:
        # without the control and zero-width characters names lose too ("Tide\x01Board" is TIDEBOARD)
        self.text = " ".join(_fold(_visible(text)).split())
        self.words = sorted(set(_WORD.findall(self.text)))

    def has_word(self, word: str) -> bool:
        """Whether a word of the text starts with ``word`` (anywhere in the text for a spaceless script)."""
        if _spaceless(word):
            return word in self.text
        at = bisect_left(self.words, word)
        return at < len(self.words) and self.words[at].startswith(word)


@lru_cache(maxsize=4096)
def _name_words(name: str) -> tuple[str, tuple[str, ...]]:
    folded = " ".join(_fold(name).split())
    words = _WORD.findall(folded)
    # a letter alone ("s" of a possessive, an initial) says nothing: it starts some word of any text
    content = [w for w in words if w not in FUNCTION_WORDS and (len(w) > 1 or not w.isascii())]
    return folded, tuple(content or words)


def name_occurs(name: str, chunk: ChunkWords) -> bool:
    """Whether ``name`` occurs in ``chunk`` by the rule of the module docstring.

    >>> chunk = ChunkWords("The estuary of the Marrow, where the Ferrymen's Guilds meet.")
    >>> name_occurs("MARROW ESTUARY", chunk), name_occurs("FERRYMEN'S GUILD", chunk), name_occurs("OSSELY", chunk)
    (True, True, False)
    """
    folded, words = _name_words(name)
    if not folded:
        return False
    if _spaceless(folded) and folded in chunk.text:
        return True
    if re.search(rf"(?<!\w){re.escape(folded)}(?!\w)", chunk.text):  # the whole name, as words ("C++", "(ISC)²")
        return True
    if not words:
        return False
    found = sum(chunk.has_word(word) for word in words)
    return 2 * found >= len(words)


def ground(result: ExtractionResult, text: str) -> ExtractionResult:
    """``result`` without the records whose names do not occur in ``text`` (the chunk), which are counted in
    ``ungrounded`` (see the module docstring)."""
    chunk = ChunkWords(text)
    verdicts: dict[str, bool] = {}

    def occurs(name: str) -> bool:
        if name not in verdicts:
            verdicts[name] = name_occurs(name, chunk)
        return verdicts[name]

    entities = [e for e in result.entities if occurs(e.name)]
    relations = [
        r
        for r in result.relations
        if not (r.source in PLACEHOLDER_NAMES and r.target in PLACEHOLDER_NAMES)
        and occurs(r.source)
        and occurs(r.target)
    ]
    dropped = len(result.entities) - len(entities) + len(result.relations) - len(relations)
    if not dropped:
        return result
    return replace(result, entities=entities, relations=relations, ungrounded=result.ungrounded + dropped)
