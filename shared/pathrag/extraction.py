"""Entity and relation extraction: build the prompts, call the model, parse its answers.

The model answers in a plain-text tuple format (see :mod:`pathrag.prompts`)::

    ("entity"<|>NAME<|>TYPE<|>DESCRIPTION)##
    ("relationship"<|>SOURCE<|>TARGET<|>DESCRIPTION<|>KEYWORDS<|>STRENGTH)##
    ("content_keywords"<|>KEYWORDS)<|COMPLETE|>

Names, types, keywords and descriptions are cleaned by the rules of :mod:`pathrag.names`
(names are merge keys: ``"Alice"`` and ``ALICE`` become one node).

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

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from pathrag.models import Entity, Relation
from pathrag.names import QUOTES, clean_description, normalize_name, normalize_type, split_keywords
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
    "ChunkExtraction",
    "ExtractionConfig",
    "ExtractionFormat",
    "ExtractionResult",
    "build_extraction_prompt",
    "build_gleaning_prompt",
    "extract_records",
    "parse_answers",
    "parse_extraction",
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


def _strength(text: str) -> float:
    match = re.search(r"[-+]?[0-9]+(?:\.[0-9]+)?", text)
    return min(max(float(match.group()), MIN_STRENGTH), MAX_STRENGTH) if match else MIN_STRENGTH


# --- parsing -------------------------------------------------------------------------

_FENCE_LINE = re.compile(r"^[^\S\n]*```[\w+.-]*[^\S\n]*$", re.MULTILINE)
_Q = f"[{QUOTES}]"


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
