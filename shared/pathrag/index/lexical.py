"""A graph with no model: entities are the names a text spells, relations the sentences naming two of them.

:func:`lexical_records` reads a chunk and returns the records an extraction model would, by rules a
reader can check against the text:

* **Sentences** come from ``sentencex`` (rule-based, ~300 languages, no download), and each line of the
  text is a sentence of its own (a title line, a list item).
* **Entities** are the names a sentence spells: maximal runs of capitalised words or numbers, joined
  through a lower-case connector between two of them ("Bank *of* England", "Alexander *the* Great"),
  with a possessive ``'s`` and edge punctuation dropped, normalised as the store normalises names. A
  function word alone ("The", "It") is no name, nor a capitalised word that opens a sentence and is
  never capitalised elsewhere in the chunk ("Several", "Founded"): English capitalises those for
  position, not for meaning. A name's description is the first sentence naming it; a name of digits
  only (a year) has the type ``number``.
* **Relations** join names that one sentence spells, each to the next two after it (a sentence listing
  twenty names links neighbours, not every pair); the sentence is the relation's description, and the
  words between the two names, when they are few (at most :data:`MAX_LINK_WORDS`), its keywords.

The chunk's first line, when it is a title (no sentence punctuation at its end), is what the chunk is
about: its names join the names of the chunk's first sentence, so a page's subject meets the facts about
it ("Gull\\nThe Gull is a trawler moored at Saltmere." links GULL and SALTMERE).

>>> records = lexical_records("Tide Board\\nThe Tide Board hired Ida Marr in 1902. Ida designed the Sea Wall.", "c1")
>>> sorted(e.name for e in records.entities)
['1902', 'IDA', 'IDA MARR', 'SEA WALL', 'TIDE BOARD']
>>> [(r.source, r.target, r.keywords) for r in records.relations][:2]
[('TIDE BOARD', 'IDA MARR', ('hired',)), ('TIDE BOARD', '1902', ('hired ida marr in',))]
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..models import Entity, Relation
from ..names import FUNCTION_WORDS as _FUNCTION_WORDS
from ..names import normalize_name, replace_surrogates
from .extraction import ExtractionResult

__all__ = ["MAX_DESCRIPTION_CHARS", "MAX_LINK_WORDS", "LEXICAL_LANGUAGE", "lexical_records"]

#: The words between two names that become a relation's keywords when they are this few or fewer ("founded
#: by", "a village in"); a longer stretch is left to the description.
MAX_LINK_WORDS = 5

#: The longest description a record takes from its sentence, in characters: a longer sentence (a line with no
#: sentence punctuation, a table flattened to one line) gives the stretch around the names instead.
MAX_DESCRIPTION_CHARS = 600

#: The language ``sentencex`` segments by; its rules for English handle abbreviations ("Dr.", "U.S.").
LEXICAL_LANGUAGE = "en"

_TOKEN = re.compile(r"[\w][\w'’.\-&]*", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s?$")
_SENTENCE_END = ".!?:;"
#: Lower-case words that join two capitalised ones into one name ("Bank of England", "Council for Small
#: Business", "Ludwig van Beethoven"); "and" and "in" are left out: they join two names more often than not.
_CONNECTORS = frozenset("of the for de la le les du des del della di da van von der den y al el bin ibn".split())


@dataclass(frozen=True)
class _Mention:
    name: str
    start: int  # character offsets in the sentence
    end: int


def _sentences(text: str) -> Iterator[tuple[int, str]]:
    """(line number, sentence) for every sentence of every non-empty line."""
    from sentencex import segment  # imported here: only the lexical extractor needs it

    for number, line in enumerate(text.splitlines()):
        if line.strip():
            for sentence in segment(LEXICAL_LANGUAGE, line):
                if sentence.strip():
                    yield number, sentence.strip()


def _capitalised(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit()


def _clean(word: str) -> str:
    return _POSSESSIVE.sub("", word).strip(".-&'’")


def _mentions(sentence: str, known_capitals: set[str]) -> list[_Mention]:
    """The names a sentence spells (see the module docstring), in order."""
    tokens = list(_TOKEN.finditer(sentence))
    mentions: list[_Mention] = []
    i = 0
    while i < len(tokens):
        if not _capitalised(tokens[i].group()):
            i += 1
            continue
        j = i + 1  # extend through capitalised words, and through a connector followed by one
        while j < len(tokens) and _adjacent(sentence, tokens[j - 1], tokens[j]):
            word = tokens[j].group()
            if _capitalised(word):
                j += 1
            elif (
                word.lower() in _CONNECTORS
                and j + 1 < len(tokens)
                and _capitalised(tokens[j + 1].group())
                and _adjacent(sentence, tokens[j], tokens[j + 1])
            ):
                j += 2
            else:
                break
        words = [w for w in (_clean(t.group()) for t in tokens[i:j]) if w]
        while len(words) > 1 and words[0].lower() in _FUNCTION_WORDS:  # "The Tide Board" is TIDE BOARD
            words = words[1:]
        if _is_name(words, opens=i == 0, known_capitals=known_capitals):
            name = normalize_name(" ".join(words))
            if name:
                mentions.append(_Mention(name, tokens[i].start(), tokens[j - 1].end()))
        i = j
    return mentions


def _adjacent(sentence: str, left: re.Match[str], right: re.Match[str]) -> bool:
    """Two words of one name: only spaces between them, and no sentence part ending at the first."""
    return not sentence[left.end() : right.start()].strip() and left.group()[-1:] not in ",;:"


def _is_name(words: Sequence[str], *, opens: bool, known_capitals: set[str]) -> bool:
    if not words:
        return False
    if len(words) == 1:
        word = words[0]
        if word.lower() in _FUNCTION_WORDS:
            return False
        if opens and not word[:1].isdigit() and word not in known_capitals:
            return False  # capitalised for its place only
    return True


def _capitals_inside_sentences(sentences: Sequence[tuple[int, str]]) -> set[str]:
    """The words the chunk capitalises somewhere other than at a sentence's start."""
    found: set[str] = set()
    for _, sentence in sentences:
        for token in list(_TOKEN.finditer(sentence))[1:]:
            word = _clean(token.group())
            if word[:1].isupper():
                found.add(word)
    return found


def _between(sentence: str, left: _Mention, right: _Mention) -> tuple[str, ...]:
    words = _TOKEN.findall(sentence[left.end : right.start])
    if not words or len(words) > MAX_LINK_WORDS:
        return ()
    return (" ".join(words).lower(),)


def _excerpt(sentence: str, start: int, end: int) -> str:
    """``sentence``, or when it is longer than :data:`MAX_DESCRIPTION_CHARS` the stretch around ``start:end``
    (the names a record is about), cut at spaces and marked with ``…`` where it was cut."""
    if len(sentence) <= MAX_DESCRIPTION_CHARS:
        return sentence
    room = max(MAX_DESCRIPTION_CHARS - (end - start), 0) // 2
    lo, hi = max(start - room, 0), min(end + room, len(sentence))
    if end - start > MAX_DESCRIPTION_CHARS:  # two names far apart: their beginnings and ends only
        half = MAX_DESCRIPTION_CHARS // 2
        return f"{_cut(sentence, start, start + half)} … {_cut(sentence, end - half, end)}"
    return _cut(sentence, lo, hi)


def _cut(sentence: str, lo: int, hi: int) -> str:
    """``sentence[lo:hi]`` without the words cut at either end, with ``…`` on a side that was cut."""
    part = sentence[lo:hi]
    if lo > 0 and " " in part:
        part = "… " + part.split(" ", 1)[1]
    if hi < len(sentence) and " " in part:
        part = part.rsplit(" ", 1)[0] + " …"
    return part.strip()


def lexical_records(text: str, source_id: str) -> ExtractionResult:
    """The entities and relations of one chunk by the rules of the module docstring, citing ``source_id``."""
    sentences = list(_sentences(replace_surrogates(text)))  # sentencex encodes the text: no lone surrogate
    capitals = _capitals_inside_sentences(sentences)
    entities: dict[str, Entity] = {}
    relations: dict[frozenset[str], Relation] = {}
    title: list[str] = []
    for index, (line, sentence) in enumerate(sentences):
        mentions = _mentions(sentence, capitals)
        for mention in mentions:
            if mention.name not in entities:
                kind = "number" if mention.name.replace(" ", "").isdigit() else ""
                entities[mention.name] = Entity(
                    name=mention.name,
                    type=kind,
                    description=_excerpt(sentence, mention.start, mention.end),
                    source_ids=(source_id,),
                )
        pairs = [
            (left, right, _between(sentence, left, right))
            for a, left in enumerate(mentions)
            for right in mentions[a + 1 : a + 3]
        ]
        if index == 0 and line == 0 and sentence[-1:] not in _SENTENCE_END:
            title = [m.name for m in mentions]  # a title line: what the chunk is about
        elif index > 0 and title and sentences[index - 1][0] == 0:  # the first sentence after the title
            pairs += [(_Mention(name, 0, 0), right, ()) for name in title for right in mentions]
        for left, right, keywords in pairs:
            key = frozenset((left.name, right.name))
            if len(key) == 2 and key not in relations:
                relations[key] = Relation(
                    source=left.name,
                    target=right.name,
                    description=_excerpt(sentence, left.start if left.end else right.start, right.end),
                    keywords=keywords,
                    source_ids=(source_id,),
                )
    return ExtractionResult(entities=list(entities.values()), relations=list(relations.values()))
