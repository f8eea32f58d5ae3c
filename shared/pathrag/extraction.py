"""Entity and relation extraction: build the prompts, call the model, parse its answers.

The model answers in a plain-text tuple format (see :mod:`pathrag.prompts`)::

    ("entity"<|>NAME<|>TYPE<|>DESCRIPTION)##
    ("relationship"<|>SOURCE<|>TARGET<|>DESCRIPTION<|>KEYWORDS<|>STRENGTH)##
    ("content_keywords"<|>KEYWORDS)<|COMPLETE|>

Names are merge keys: :func:`normalize_name` strips quotes, markdown and stray brackets,
collapses whitespace and upper-cases (``str.upper``, Unicode-aware), as LightRAG and
GraphRAG do, so ``"Alice"`` from one chunk and ``ALICE`` from another become one node and
answers recorded for those tools parse to the same keys. Types are lower-cased instead.
It is the one place names are made: the parser, the importers and both framework extractors
call it. It also removes control characters and keeps a name within :data:`MAX_NAME_BYTES`
(512) UTF-8 bytes: a longer one is cut at a character boundary and ends with ``~`` and a
12-digit hash of the whole name, so two long names that share their beginning stay two names.
Stores check what they are asked to write with :func:`check_name` and refuse (never rename)
a name some store cannot hold.

:func:`parse_extraction` never raises. Its rules for sloppy output:

* Records are found by their openings (``("entity"<|>``, ``'Relationship' <|>``, a bare
  ``entity<|>`` at the start of a line or after ``##``...), not by splitting on ``##``, so a
  delimiter inside a description cannot cut a record in two, and newline-only separators work.
  A record ends at the next opening, or earlier at an unbalanced ``)`` followed by a newline,
  ``##`` or the end of the text (so trailing chatter is dropped).
* Code fences are ignored. The completion marker ends the answer (later text is ignored)
  unless it sits mid-sentence inside a record, where it is kept as text.
* Surplus fields (a stray ``<|>``) are joined back into the description: for entities
  everything after the type; for relationships everything between the target and the last
  two fields (keywords, strength).
* Too few fields, an empty name, or a relation from an entity to itself: the record is
  skipped and counted in ``skipped``.
* Strength: the first number in the field, clamped to [1, 10] (the scale the prompt asks
  for, keeping weights positive); 1.0 when there is no number.
* Keywords are split on commas (also ``;`` and the CJK ``，`` / ``、``).
* Identical records are kept once (a model repeating itself must not double a weight);
  different records about the same name are all kept for the indexing layer to merge.
* Relations may name entities that have no entity record; the indexing layer adds them.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import cast

from pathrag.models import Entity, Relation
from pathrag.prompts import (
    DEFAULT_ENTITY_TYPES,
    DEFAULT_LANGUAGE,
    EXAMPLE_TEMPLATE,
    EXTRACTION_EXAMPLES,
    EXTRACTION_PROMPT,
    GLEANING_PROMPT,
)

__all__ = [
    "DEFAULT_FORMAT",
    "MAX_NAME_BYTES",
    "EntityNameError",
    "check_name",
    "ChunkExtraction",
    "ExtractionConfig",
    "ExtractionFormat",
    "ExtractionResult",
    "build_extraction_prompt",
    "build_gleaning_prompt",
    "clean_description",
    "extract_records",
    "normalize_name",
    "normalize_type",
    "parse_answers",
    "parse_extraction",
    "split_keywords",
]

MIN_STRENGTH, MAX_STRENGTH = 1.0, 10.0


@dataclass(frozen=True)
class ExtractionFormat:
    """The delimiters of the tuple format."""

    tuple_delimiter: str = "<|>"
    record_delimiter: str = "##"
    completion_delimiter: str = "<|COMPLETE|>"

    def __post_init__(self) -> None:
        values = (self.tuple_delimiter, self.record_delimiter, self.completion_delimiter)
        if not all(values) or len(set(values)) != 3:
            raise ValueError(f"delimiters must be distinct and non-empty, got {values!r}")

    def placeholders(self) -> dict[str, str]:
        """The values of the delimiter placeholders of :mod:`pathrag.prompts`."""
        return {
            "tuple_delimiter": self.tuple_delimiter,
            "record_delimiter": self.record_delimiter,
            "completion_delimiter": self.completion_delimiter,
        }


DEFAULT_FORMAT = ExtractionFormat()


@dataclass(frozen=True)
class ExtractionConfig:
    """What to extract and how: delimiters, entity types, output language, gleaning rounds."""

    format: ExtractionFormat = DEFAULT_FORMAT
    entity_types: tuple[str, ...] = DEFAULT_ENTITY_TYPES
    language: str = DEFAULT_LANGUAGE
    max_gleaning: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "entity_types", tuple(self.entity_types))
        if self.max_gleaning < 0:
            raise ValueError("max_gleaning must be >= 0")


@dataclass
class ExtractionResult:
    """Parsed records; ``skipped`` counts the malformed records that were dropped."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    content_keywords: list[str] = field(default_factory=list)
    skipped: int = 0


@dataclass
class ChunkExtraction:
    """The raw answers of one chunk (for caching and replay) and their combined parse."""

    answers: list[str]
    result: ExtractionResult


# --- normalisation -------------------------------------------------------------------

_QUOTES = "\"'`‘’‚‛“”„‟«»‹›"
_BRACKETS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSERS = {v: k for k, v in _BRACKETS.items()}
_JUNK = _QUOTES + "*"


def _clean(text: str) -> str:
    """Strip whitespace, quotes, ``*`` and wrapping or unmatched brackets from both ends."""
    partner: dict[int, int] = {}  # matched bracket pairs, each bracket type on its own
    stacks: dict[str, list[int]] = {opener: [] for opener in _BRACKETS}
    for i, char in enumerate(text):
        if char in _BRACKETS:
            stacks[char].append(i)
        elif char in _CLOSERS and stacks[_CLOSERS[char]]:
            j = stacks[_CLOSERS[char]].pop()
            partner[i], partner[j] = j, i
    lo, hi = 0, len(text)  # the kept window is text[lo:hi]; each step shrinks it, so this is linear
    while lo < hi:
        first, last = text[lo], text[hi - 1]
        if first.isspace() or first in _JUNK:
            lo += 1
        elif last.isspace() or last in _JUNK:
            hi -= 1
        elif first in _BRACKETS and partner.get(lo, hi) >= hi - 1:  # unmatched in the window, or wrapping it
            if partner.get(lo) == hi - 1:
                hi -= 1
            lo += 1
        elif last in _CLOSERS and partner.get(hi - 1, -1) < lo:
            hi -= 1
        else:
            break
    return " ".join(text[lo:hi].split())


MAX_NAME_BYTES = 512
"""The longest entity name, in UTF-8 bytes, that :func:`normalize_name` makes and every store accepts.

Far below what the databases take (FalkorDB's indexed keys: 4,096 bytes), so a graph built in the
embedded store moves to any of them; long enough for any real name (170 CJK characters at least).
"""

_HASH_DIGITS = 12
_MIN_NAME_BYTES = 32  # room for a readable beginning next to the "~" and the hash
# Removed rather than kept: invisible marks that make two spellings of one name differ.
_INVISIBLE = {"\u200b", "\ufeff"}  # zero-width space, byte-order mark


def _visible(text: str) -> str:
    """``text`` without control characters other than whitespace (whitespace is collapsed later),
    unpaired surrogates (not encodable) and zero-width spaces or byte-order marks."""
    if text.isprintable():  # the usual case: nothing to remove (isprintable is false for all of them)
        return text
    return "".join(
        c for c in text if c.isspace() or (unicodedata.category(c) not in ("Cc", "Cs") and c not in _INVISIBLE)
    )


def _fit(name: str, max_bytes: int) -> str:
    """``name`` if it fits in ``max_bytes`` UTF-8 bytes, else its beginning, ``~`` and a hash of all of it."""
    raw = name.encode("utf-8")
    if len(raw) <= max_bytes:
        return name
    digest = hashlib.sha256(raw).hexdigest()[:_HASH_DIGITS].upper()  # upper: stable under normalize_name
    head = raw[: max_bytes - _HASH_DIGITS - 1].decode("utf-8", errors="ignore")  # drops a cut character
    # Clean the cut end (a space, an opener whose closer was cut off) so normalising again changes nothing.
    return f"{_clean(head)}~{digest}"


def normalize_name(name: str, *, max_bytes: int = MAX_NAME_BYTES) -> str:
    """The merge key of an entity name ("" if nothing is left after cleaning).

    Control characters, zero-width spaces and byte-order marks are removed; surrounding whitespace,
    quotes, ``*`` and stray brackets are stripped; whitespace runs become one space; letters are
    upper-cased. A key longer than ``max_bytes`` UTF-8 bytes is cut at a character boundary and ends
    with ``~`` and 12 hex digits of a SHA-256 of the whole key. Normalising a key again changes nothing.

    >>> normalize_name(' **"Hedda   Voss"** ')
    'HEDDA VOSS'
    >>> normalize_name("(ISC)² [certified]")
    '(ISC)² [CERTIFIED]'
    >>> normalize_name("Tide\\x00 \\t Board\\x07")
    'TIDE BOARD'
    >>> long = normalize_name("harbour " * 100)
    >>> len(long.encode()), long[-13:]
    (512, '~903140FC1DE8')

    Raises:
        ValueError: ``max_bytes`` is below 32.
    """
    if max_bytes < _MIN_NAME_BYTES:
        raise ValueError(f"max_bytes must be at least {_MIN_NAME_BYTES}, got {max_bytes!r}")
    return _fit(_clean(_visible(name)).upper(), max_bytes)


class EntityNameError(ValueError):
    """An entity name that a store cannot hold; the message says why and what to do."""


def check_name(name: object, *, max_bytes: int = MAX_NAME_BYTES) -> str:
    """Return ``name`` if every store can hold it, else raise :class:`EntityNameError`.

    Stores call this on every name they are asked to write, and refuse rather than rename: a store
    that silently changed a name would answer nothing when asked for the name it was given. A name
    can be held if it is a non-empty string of at most ``max_bytes`` UTF-8 bytes, starting and ending
    with neither whitespace nor a control character, and holding no control character other than tab,
    line feed and carriage return (a real FalkorDB server crashes on a key with surrounding whitespace,
    a ``\\x01`` or more than 4,096 bytes). Every name :func:`normalize_name` makes can be held.

    >>> check_name("Alice")
    'Alice'
    >>> check_name(" Alice")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pathrag.extraction.EntityNameError: entity name ' Alice' starts or ends with whitespace or a control ...
    """
    problem = _name_problem(name, max_bytes)
    if problem is not None:
        if isinstance(name, str) and len(name) > 60:
            shown = f"{name[:40]!r}... ({len(name):,} characters)"
        else:
            shown = repr(name)
        raise EntityNameError(
            f"entity name {shown} {problem}; pathrag.extraction.normalize_name(name) gives a name every store can hold"
        )
    return cast(str, name)  # _name_problem refuses anything but a string


def _name_problem(name: object, max_bytes: int) -> str | None:
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a string"
    if not name:
        return "is empty"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "holds an unpaired surrogate (not encodable as UTF-8)"
    if size > max_bytes:
        return f"is {size:,} bytes long (UTF-8); stores hold at most {max_bytes:,} (MAX_NAME_BYTES)"
    for end in (name[0], name[-1]):
        if end.isspace() or unicodedata.category(end) == "Cc":
            return "starts or ends with whitespace or a control character"
    if not name.isprintable():  # fast path: a printable name holds no control character at all
        bad = next((c for c in name if unicodedata.category(c) == "Cc" and c not in "\t\n\r"), None)
        if bad is not None:
            what = "a NUL" if bad == "\x00" else f"the control character {bad!r}"
            return f"holds {what}"
    return None


def normalize_type(entity_type: str) -> str:
    """A cleaned, lower-case entity type ("" if empty).

    >>> normalize_type(' "Organization" ')
    'organization'
    """
    return _clean(entity_type).lower()


def clean_description(text: str) -> str:
    """A description as records keep it: whitespace collapsed, one pair of quotes wrapping the whole
    text dropped.

    >>> clean_description(' "A  harbour   pilot." ')
    'A harbour pilot.'
    """
    text = " ".join(text.split())
    if len(text) > 1 and (text[0], text[-1]) in {('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("`", "`")}:
        text = " ".join(text[1:-1].split())
    return text


def split_keywords(fields: Iterable[str]) -> list[str]:
    """Keywords from fields of comma- (or semicolon-) separated words: cleaned, distinct, in order.

    >>> split_keywords(["sea, ships; navigation", "ships"])
    ['sea', 'ships', 'navigation']
    """
    words = (_clean(w) for f in fields for w in re.split(r"[,;，、；]", f))
    return list(dict.fromkeys(w for w in words if w))


def _strength(text: str) -> float:
    match = re.search(r"[-+]?[0-9]+(?:\.[0-9]+)?", text)
    return min(max(float(match.group()), MIN_STRENGTH), MAX_STRENGTH) if match else MIN_STRENGTH


# --- parsing -------------------------------------------------------------------------

_FENCE_LINE = re.compile(r"^[^\S\n]*```[\w+.-]*[^\S\n]*$", re.MULTILINE)
_Q = f"[{_QUOTES}]"


@lru_cache(maxsize=16)
def _opening(fmt: ExtractionFormat) -> re.Pattern[str]:
    """The start of a record: a tag and the first tuple delimiter."""
    td, rd = re.escape(fmt.tuple_delimiter), re.escape(fmt.record_delimiter)
    return re.compile(
        # "(" or a quote before the tag, or a bare tag (maybe bulleted) starting a line or after "##"
        rf"(?:\([^\S\n]*{_Q}?|{_Q}|(?:^|(?<={rd}))[^\S\n]*(?:(?:[-*•]|[0-9]+[.)])[^\S\n]*)?)"
        rf"(?P<tag>entity|relationship|relation|content[ _-]?keywords){_Q}?[^\S\n]*{td}",
        re.IGNORECASE | re.MULTILINE,
    )


def _skip_closing(text: str, i: int, record_delimiter: str = "") -> int:
    """End of the run starting at ``i`` of ``)``, non-newline whitespace and record delimiters."""
    while i < len(text):
        if text[i] == ")" or (text[i].isspace() and text[i] != "\n"):
            i += 1
        elif record_delimiter and text.startswith(record_delimiter, i):
            i += len(record_delimiter)
        else:
            break
    return i


def _answer_body(text: str, fmt: ExtractionFormat) -> str:
    """The answer without code fences and without anything after the completion marker.

    Inline fences go only after the cut: removing them first could make a marker of junk (``<|```COMPLETE|>``)."""
    text = _FENCE_LINE.sub("", text)
    marker, rd = fmt.completion_delimiter, fmt.record_delimiter
    at = text.find(marker)
    while at != -1:
        before = at
        while before and text[before - 1] in " \t`":
            before -= 1
        after = _skip_closing(text, at + len(marker), rd)
        while after < len(text) and text[after] == "`":  # an inline fence closing the answer
            after = _skip_closing(text, after + 1, rd)
        # The real end marker follows a record or a line break, or ends its line; one mid-sentence is text.
        starts_line = not before or text.endswith(("\n", "\r", ")", rd), 0, before)
        if starts_line or after == len(text) or text.startswith("\n", after):
            return text[:at].replace("```", "")
        at = text.find(marker, at + len(marker))
    return text.replace("```", "")


def _fields(body: str, fmt: ExtractionFormat) -> list[str]:
    """Split one record's text (after the opening) into stripped fields."""
    rd, depth, i = fmt.record_delimiter, 0, 0
    while i < len(body):
        if body[i] == "(":
            depth += 1
        elif body[i] == ")" and depth:
            depth -= 1
        elif body[i] == ")":  # unbalanced: it closes the record if only a separator follows
            end = _skip_closing(body, i)
            if end == len(body) or body.startswith(("\n", rd), end):
                body = body[:i]
                break
            i = end
            continue
        i += 1
    end = len(body)  # drop separators and the stray "(" of a doubled opening left at the end
    while end:
        if body[end - 1].isspace() or body[end - 1] == "(":
            end -= 1
        elif body.endswith(rd, 0, end):
            end -= len(rd)
        else:
            break
    return [f.strip() for f in body[:end].split(fmt.tuple_delimiter)]


def _entity(fields: list[str], fmt: ExtractionFormat, source_ids: tuple[str, ...]) -> Entity | None:
    name = normalize_name(fields[0])
    if len(fields) < 3 or not name:
        return None
    description = clean_description(fmt.tuple_delimiter.join(fields[2:]))
    return Entity(name=name, type=normalize_type(fields[1]), description=description, source_ids=source_ids)


def _relation(fields: list[str], fmt: ExtractionFormat, source_ids: tuple[str, ...]) -> Relation | None:
    if len(fields) < 5:
        return None
    source, target = normalize_name(fields[0]), normalize_name(fields[1])
    if not source or not target or source == target:
        return None
    return Relation(
        source=source,
        target=target,
        description=clean_description(fmt.tuple_delimiter.join(fields[2:-2])),
        keywords=tuple(split_keywords(fields[-2:-1])),
        weight=_strength(fields[-1]),
        source_ids=source_ids,
    )


def parse_extraction(
    text: str, fmt: ExtractionFormat = DEFAULT_FORMAT, *, chunk_id: str | None = None
) -> ExtractionResult:
    """Parse one model answer; never raises (see the module docstring for the rules).

    >>> r = parse_extraction('```\\n("entity"<|>"Alice"<|>Person<|>A navigator.)##\\n'
    ...     '("relationship"<|>Alice<|>Meridian<|>She sails it.<|>crew, ship<|>12)<|COMPLETE|>\\n```')
    >>> r.entities[0].name, r.entities[0].type, r.relations[0].keywords, r.relations[0].weight
    ('ALICE', 'person', ('crew', 'ship'), 10.0)
    """
    opening = _opening(fmt)
    source_ids = (chunk_id,) if chunk_id else ()
    body = _answer_body(text, fmt)
    result = ExtractionResult()
    starts = list(opening.finditer(body))
    # strict=False: with no record at all the second list is [None], one longer, and nothing is zipped
    for match, following in zip(starts, [*starts[1:], None], strict=False):
        fields = _fields(body[match.end() : following.start() if following else None], fmt)
        tag = match.group("tag").lower()
        record: Entity | Relation | None
        if tag == "entity":
            record = _entity(fields, fmt, source_ids)
        elif tag.startswith("relation"):
            record = _relation(fields, fmt, source_ids)
        else:
            words = split_keywords(fields)
            result.content_keywords.extend(words)
            result.skipped += not words
            continue
        if record is None:
            result.skipped += 1
        elif isinstance(record, Entity):
            result.entities.append(record)
        else:
            result.relations.append(record)
    return _combine([result])


def _combine(results: Iterable[ExtractionResult]) -> ExtractionResult:
    """Concatenate results, keeping each identical record or keyword once."""
    results = list(results)
    return ExtractionResult(
        entities=list(dict.fromkeys(e for r in results for e in r.entities)),
        relations=list(dict.fromkeys(x for r in results for x in r.relations)),
        content_keywords=list(dict.fromkeys(k for r in results for k in r.content_keywords)),
        skipped=sum(r.skipped for r in results),
    )


def parse_answers(
    answers: Iterable[str], fmt: ExtractionFormat = DEFAULT_FORMAT, chunk_id: str | None = None
) -> ExtractionResult:
    """Rebuild the combined result of stored answers (first answer, then gleanings) without a model.

    >>> parse_answers(['("entity"<|>A<|>x<|>d)', '("entity"<|>B<|>x<|>d)', '<|COMPLETE|>']).entities[1].name
    'B'
    """
    return _combine(parse_extraction(answer, fmt, chunk_id=chunk_id) for answer in answers)


# --- prompts and the model loop -------------------------------------------------------


def build_extraction_prompt(text: str, config: ExtractionConfig) -> str:
    """The first prompt for a chunk: rules, few-shot examples and the chunk text.

    >>> prompt = build_extraction_prompt("Text with {braces}.", ExtractionConfig(entity_types=("ship", "crew")))
    >>> "one of: ship, crew." in prompt and prompt.endswith("Text with {braces}.\\nOutput:\\n")
    True
    """
    delimiters = config.format.placeholders()
    examples = "\n\n".join(
        EXAMPLE_TEMPLATE.format(number=n, text=example.text, output=example.output.format(**delimiters))
        for n, example in enumerate(EXTRACTION_EXAMPLES, start=1)
    )
    return EXTRACTION_PROMPT.format(
        **delimiters,
        entity_types=", ".join(config.entity_types),
        language=config.language,
        examples=examples,
        input_text=text,
    )


def build_gleaning_prompt(text: str, config: ExtractionConfig, previous_answers: list[str]) -> str:
    """The follow-up prompt: the first prompt, the answers so far, and a request for missed records.

    >>> "ALICE-RECORD" in build_gleaning_prompt("t", ExtractionConfig(), ["ALICE-RECORD"])
    True
    """
    return GLEANING_PROMPT.format(
        extraction_prompt=build_extraction_prompt(text, config),
        previous_answers="\n".join(answer.strip() for answer in previous_answers),
        completion_delimiter=config.format.completion_delimiter,
    )


def _keys(result: ExtractionResult) -> set[object]:
    return {e.name for e in result.entities} | {r.pair for r in result.relations}


async def extract_records(
    text: str,
    ask: Callable[[str], Awaitable[str]],
    config: ExtractionConfig,
    *,
    chunk_id: str | None = None,
) -> ChunkExtraction:
    """Extract a chunk with at most ``1 + config.max_gleaning`` calls to ``ask``.

    Gleaning stops early once an answer brings no new entity name and no new relation pair.

    >>> import asyncio
    >>> async def ask(prompt): return '("entity"<|>Alice<|>person<|>A navigator.)<|COMPLETE|>'
    >>> done = asyncio.run(extract_records("Alice navigates.", ask, ExtractionConfig()))
    >>> len(done.answers), [e.name for e in done.result.entities]
    (2, ['ALICE'])
    """
    fmt = config.format
    answers = [await ask(build_extraction_prompt(text, config))]
    result = parse_extraction(answers[0], fmt, chunk_id=chunk_id)
    for _ in range(config.max_gleaning):
        answers.append(await ask(build_gleaning_prompt(text, config, answers)))
        gleaned = parse_extraction(answers[-1], fmt, chunk_id=chunk_id)
        known = _keys(result)
        result = _combine([result, gleaned])
        if _keys(gleaned) <= known:
            break
    return ChunkExtraction(answers=answers, result=result)
