"""Entity and relation extraction: build the prompts, call the model, parse its answers.

The model answers in a plain-text tuple format (see :mod:`pathrag.llm.prompts`)::

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
* Lone surrogates (text no encoding can write) become U+FFFD, so the chunk's valid records are kept.
* At most :func:`max_records_for` records per chunk (with ``max_records``; :func:`extract_records` always
  applies it): one per 10 characters of the chunk, at least 200; the rest are counted in ``dropped``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from pathrag.models import Entity, Relation
from pathrag.names import (
    QUOTES,
    clean_description,
    normalize_name,
    normalize_type,
    replace_surrogates,
    split_keywords,
)

from ..llm.overflow import ContextOverflow, is_context_overflow
from ..llm.prompts import (
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
    "max_records_for",
    "parse_answers",
    "parse_extraction",
]

logger = logging.getLogger(__name__)

MIN_STRENGTH, MAX_STRENGTH = 1.0, 10.0

MIN_RECORDS_PER_CHUNK = 200
"""The per-chunk record cap of the shortest chunks (see :func:`max_records_for`)."""
CHARS_PER_RECORD = 10
"""Above the floor, a chunk keeps one record per this many characters of its text (see :func:`max_records_for`)."""


def max_records_for(text: str) -> int:
    """The most entity and relation records (together; distinct ones) one chunk keeps, across its extraction
    answer and gleanings: one per :data:`CHARS_PER_RECORD` (10) characters of its text, at least
    :data:`MIN_RECORDS_PER_CHUNK` (200). Real answers hold tens of records per chunk (a default chunk of about
    4,800 characters may keep 480); a runaway or hostile answer (100,000 records for a 40-character chunk)
    would otherwise cost time and memory in proportion. Keywords are capped at the same number.

    >>> max_records_for("Mara lives in Saltmere."), max_records_for("x" * 4_800)
    (200, 480)
    """
    return max(MIN_RECORDS_PER_CHUNK, len(text) // CHARS_PER_RECORD)


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
        """The values of the delimiter placeholders of :mod:`pathrag.llm.prompts`."""
        return {
            "tuple_delimiter": self.tuple_delimiter,
            "record_delimiter": self.record_delimiter,
            "completion_delimiter": self.completion_delimiter,
        }


DEFAULT_FORMAT = ExtractionFormat()


DEFAULT_MAX_ANSWER_TOKENS = 4_000
"""The default output cap of an extraction call (:attr:`ExtractionConfig.max_answer_tokens`): the demo's densest
chunk (about 800 tokens) has an answer of about 2,800 tokens; a runaway answer stops here."""

PACK_TOKENS = 1_200
"""A budget for :attr:`ExtractionConfig.pack_tokens` when packing: the paper's chunk size, the length of text one
extraction call is made for (see :mod:`pathrag.index.packing`)."""

CHARS_PER_ANSWER_TOKEN = 4
"""An answer is cut at this many characters per token of the cap (English averages about four)."""


@dataclass(frozen=True)
class ExtractionConfig:
    """What to extract and how: delimiters, entity types, output language, gleaning rounds, and the output cap.

    ``max_answer_tokens`` caps every extraction answer: the adapters pass it to their model as ``max_tokens``
    where the model takes one (``ChatOpenAI``, a LlamaIndex ``OpenAI``...). Whatever the model, answers longer
    than :data:`CHARS_PER_ANSWER_TOKEN` characters per token of it are read (up to the record cap) but never
    quoted back in a gleaning prompt: a runaway answer ends the gleaning instead of pushing the next prompt past
    the model's window."""

    format: ExtractionFormat = DEFAULT_FORMAT
    entity_types: tuple[str, ...] = DEFAULT_ENTITY_TYPES
    language: str = DEFAULT_LANGUAGE
    max_gleaning: int = 1
    max_answer_tokens: int = DEFAULT_MAX_ANSWER_TOKENS
    pack_tokens: int = 0
    """The compact extraction asks consecutive chunks together while their texts add up to at most this many
    tokens (see :mod:`pathrag.index.packing`; :data:`PACK_TOKENS` is the paper's chunk size). 0, the default,
    asks every chunk alone: packed, a 1.5B local model found a third fewer entities."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "entity_types", tuple(self.entity_types))
        if self.max_gleaning < 0:
            raise ValueError("max_gleaning must be >= 0")
        if self.pack_tokens < 0:
            raise ValueError(f"pack_tokens must be 0 (no packing) or more, got {self.pack_tokens!r}")
        if self.max_answer_tokens < 1:
            raise ValueError(f"max_answer_tokens must be at least 1, got {self.max_answer_tokens!r}")


@dataclass
class ExtractionResult:
    """Parsed records; ``skipped`` counts the malformed records that were dropped, ``dropped`` the records
    over the per-chunk cap (:func:`max_records_for`), ``ungrounded`` the records naming what their chunk never
    spells (see :mod:`pathrag.index.grounding`)."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    content_keywords: list[str] = field(default_factory=list)
    skipped: int = 0
    dropped: int = 0
    ungrounded: int = 0


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


def _records(opening: re.Pattern[str], body: str) -> Iterator[tuple[re.Match[str], int]]:
    """Each record opening of ``body`` and where the record ends (the next opening), found lazily."""
    matches = opening.finditer(body)
    match = next(matches, None)
    while match is not None:
        following = next(matches, None)
        yield match, following.start() if following else len(body)
        match = following


def _record(
    tag: str, fields: list[str], fmt: ExtractionFormat, source_ids: tuple[str, ...]
) -> Entity | Relation | None:
    if tag == "entity":
        return _entity(fields, fmt, source_ids)
    return _relation(fields, fmt, source_ids)


def parse_extraction(
    text: str, fmt: ExtractionFormat = DEFAULT_FORMAT, *, chunk_id: str | None = None, max_records: int | None = None
) -> ExtractionResult:
    """Parse one model answer; never raises (see the module docstring for the rules).

    ``max_records``: keep at most that many distinct entity and relation records (and as many keywords), in
    the order they appear; the rest are only counted, in ``dropped``.

    >>> r = parse_extraction('```\\n("entity"<|>"Alice"<|>Person<|>A navigator.)##\\n'
    ...     '("relationship"<|>Alice<|>Meridian<|>She sails it.<|>crew, ship<|>12)<|COMPLETE|>\\n```')
    >>> r.entities[0].name, r.entities[0].type, r.relations[0].keywords, r.relations[0].weight
    ('ALICE', 'person', ('crew', 'ship'), 10.0)
    >>> r = parse_extraction('("entity"<|>A<|>x<|>d)##("entity"<|>B<|>x<|>d)##("entity"<|>C<|>x<|>d)', max_records=2)
    >>> [e.name for e in r.entities], r.dropped
    (['A', 'B'], 1)
    """
    opening = _opening(fmt)
    source_ids = (chunk_id,) if chunk_id else ()
    body = replace_surrogates(_answer_body(text, fmt))
    cap = len(body) if max_records is None else max_records  # an answer cannot hold more records than characters
    entities: dict[Entity, None] = {}
    relations: dict[Relation, None] = {}
    keywords: dict[str, None] = {}
    result = ExtractionResult()
    for match, end in _records(opening, body):
        tag = match.group("tag").lower()
        is_keywords = tag.startswith("content")
        if (len(keywords) if is_keywords else len(entities) + len(relations)) >= cap:
            result.dropped += 1  # over the cap: counted, not even split into fields
            continue
        fields = _fields(body[match.end() : end], fmt)
        if is_keywords:
            words = split_keywords(fields)
            keywords.update(dict.fromkeys(words[: cap - len(keywords)]))
            result.skipped += not words
            continue
        record = _record(tag, fields, fmt, source_ids)
        if record is None:
            result.skipped += 1
        elif isinstance(record, Entity):
            entities[record] = None
        else:
            relations[record] = None
    result.entities, result.relations, result.content_keywords = list(entities), list(relations), list(keywords)
    return result


def _combine(results: Iterable[ExtractionResult], max_records: int | None = None) -> ExtractionResult:
    """Concatenate results, keeping each identical record or keyword once, and at most ``max_records``
    entity and relation records (the first result's first; the rest are counted in ``dropped``)."""
    results = list(results)
    combined = ExtractionResult(
        content_keywords=list(dict.fromkeys(k for r in results for k in r.content_keywords)),
        skipped=sum(r.skipped for r in results),
        dropped=sum(r.dropped for r in results),
        ungrounded=sum(r.ungrounded for r in results),
    )
    kept: dict[Entity | Relation, None] = {}
    for result in results:
        records: list[Entity | Relation] = [*result.entities, *result.relations]
        for record in records:
            if record in kept:
                continue
            if max_records is not None and len(kept) >= max_records:
                combined.dropped += 1
            else:
                kept[record] = None
    combined.entities = [r for r in kept if isinstance(r, Entity)]
    combined.relations = [r for r in kept if isinstance(r, Relation)]
    if max_records is not None:
        combined.content_keywords = combined.content_keywords[:max_records]
    return combined


def parse_answers(
    answers: Iterable[str],
    fmt: ExtractionFormat = DEFAULT_FORMAT,
    chunk_id: str | None = None,
    max_records: int | None = None,
) -> ExtractionResult:
    """Rebuild the combined result of stored answers (first answer, then gleanings) without a model
    (``max_records``: as for :func:`extract_records`, e.g. ``max_records_for(chunk_text)``).

    >>> parse_answers(['("entity"<|>A<|>x<|>d)', '("entity"<|>B<|>x<|>d)', '<|COMPLETE|>']).entities[1].name
    'B'
    """
    return _combine(
        (parse_extraction(answer, fmt, chunk_id=chunk_id, max_records=max_records) for answer in answers), max_records
    )


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


MIN_SPLIT_CHARS = 400
"""A chunk whose extraction prompt overflows the model's window is extracted again in two halves, and so on
down to pieces of this many characters; a piece this short that still overflows fails the chunk."""


async def extract_records(
    text: str,
    ask: Callable[[str], Awaitable[str]],
    config: ExtractionConfig,
    *,
    chunk_id: str | None = None,
) -> ChunkExtraction:
    """Extract a chunk with at most ``1 + config.max_gleaning`` calls to ``ask``.

    Gleaning stops early once an answer brings no new entity name and no new relation pair. Every call asks for at
    most :attr:`ExtractionConfig.max_answer_tokens` (a model that takes ``max_tokens`` stops there), and an
    answer longer than that ends the gleaning. Records naming what the chunk never spells
    (the prompt's examples parroted, an answer for another text) are dropped and counted in
    ``result.ungrounded`` (see :mod:`pathrag.index.grounding`). The chunk keeps at most :func:`max_records_for`
    records (the rest are counted in ``result.dropped``), and lone surrogates in the answers become U+FFFD (so
    the answers and records can be stored).

    When the model refuses a prompt as longer than its context window (see
    :func:`pathrag.llm.overflow.is_context_overflow`): a gleaning prompt ends the gleaning (the records so far
    are kept); the first prompt is asked again for each half of the chunk (at a line or sentence break), down
    to :data:`MIN_SPLIT_CHARS` characters, every record still citing ``chunk_id``; past that the chunk fails
    with a :class:`~pathrag.llm.overflow.ContextOverflow` saying so.

    >>> import asyncio
    >>> async def ask(prompt): return '("entity"<|>Alice<|>person<|>A navigator.)<|COMPLETE|>'
    >>> done = asyncio.run(extract_records("Alice navigates.", ask, ExtractionConfig()))
    >>> len(done.answers), [e.name for e in done.result.entities]
    (2, ['ALICE'])
    """
    from .grounding import ground  # grounding imports this module's result type

    fmt, cap = config.format, max_records_for(text)
    limit = config.max_answer_tokens * CHARS_PER_ANSWER_TOKEN

    async def answer(prompt: str) -> str:
        return replace_surrogates(await ask(prompt))

    try:
        answers = [await answer(build_extraction_prompt(text, config))]
    except Exception as exc:
        if not is_context_overflow(exc):
            raise
        return await extract_halves(
            text, lambda half: extract_records(half, ask, config, chunk_id=chunk_id), chunk_id, exc
        )
    result = ground(parse_extraction(answers[0], fmt, chunk_id=chunk_id, max_records=cap), text)
    for _ in range(config.max_gleaning):
        if sum(map(len, answers)) > limit:  # a runaway answer: quoting it back would overflow, not glean
            logger.warning(
                "chunk %s: answers over the output cap (%d tokens); no gleaning", chunk_id, config.max_answer_tokens
            )
            break
        try:
            answers.append(await answer(build_gleaning_prompt(text, config, answers)))
        except Exception as exc:
            if not is_context_overflow(exc):
                raise
            logger.warning("chunk %s: the gleaning prompt overflows the model's window; gleaning stops", chunk_id)
            break
        gleaned = ground(parse_extraction(answers[-1], fmt, chunk_id=chunk_id, max_records=cap), text)
        known = _keys(result)
        result = _combine([result, gleaned], cap)
        if _keys(gleaned) <= known:
            break
    if result.dropped:
        logger.warning("chunk %s: %d records over the cap of %d dropped", chunk_id or "?", result.dropped, cap)
    if result.ungrounded:
        logger.warning(
            "chunk %s: %d records naming what the chunk never spells dropped (the prompt's examples parroted, or "
            "records for another text)",
            chunk_id or "?",
            result.ungrounded,
        )
    return ChunkExtraction(answers=answers, result=result)


def _halves(text: str) -> tuple[str, str]:
    """``text`` in two, at the line, sentence or word break nearest its middle (the middle itself without one)."""
    middle = len(text) // 2
    for separator in ("\n\n", "\n", ". ", " "):
        before, after = text.rfind(separator, 0, middle), text.find(separator, middle)
        cuts = [c + len(separator) for c in (before, after) if c > 0 and c + len(separator) < len(text)]
        if cuts:
            cut = min(cuts, key=lambda c: abs(c - middle))
            if len(text) // 4 <= cut <= 3 * len(text) // 4:  # a break far from the middle halves nothing
                return text[:cut], text[cut:]
    return text[:middle], text[middle:]


async def extract_halves(
    text: str,
    extract: Callable[[str], Awaitable[ChunkExtraction]],
    chunk_id: str | None,
    exc: Exception,
    prompt: str = "extraction",
) -> ChunkExtraction:
    """The records of ``text`` extracted half by half by ``extract``, after its whole ``prompt`` overflowed the
    model's window (``exc``); a piece too short to halve again fails with :class:`ContextOverflow`."""
    if len(text) < 2 * MIN_SPLIT_CHARS:
        raise ContextOverflow(
            f"the {prompt} prompt does not fit the model's context window even for a piece of {len(text):,} "
            f"characters ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); use a model with a larger "
            "window (for a local server, raise its context size)"
        ) from exc
    logger.warning("chunk %s: the prompt overflows the model's window; extracting it in two halves", chunk_id)
    parts = [await extract(half) for half in _halves(text)]
    result = _combine([p.result for p in parts], max_records_for(text))
    return ChunkExtraction(answers=[a for p in parts for a in p.answers], result=result)
