"""The compact extraction (the default): a short prompt, one record per line.

The paper's prompt (:mod:`pathrag.llm.prompts`) spends about 1,300 tokens of rules and few-shot examples on
every call, and a gleaning call sends them again with the first answer: about 3,300 prompt tokens for a
100-token passage. :data:`COMPACT_PROMPT` states the same task in about 300 tokens and asks for lines
instead of tuples, which also shortens the answer (no quotes, brackets or three-character delimiters)::

    E|name|type|description
    R|name|name|keywords|description
    END

Its one short example (three records of a made-up sentence) shows a weak model the shape of a line; a model
copying it adds nothing, since the records of names a chunk never spells are dropped. There is no gleaning
round: the second call of the paper's recipe costs more than the first (it sends the first answer back), in
the demo's recorded answers it found new records for 2 of 6 chunks, 3 records each against 34 to 60 in the
first answers, and with a real 1.5B local model it found nothing. :class:`pathrag.PathRAGIndex` uses it unless
told otherwise (``extractor="compact"``); small chunks can share one call (:mod:`pathrag.index.packing`).

Parsing (:func:`parse_compact`) never raises: a line starting with ``E`` or ``R`` (also ``entity``,
``relation``, ``relationship``; bullets, numbers and code fences are ignored) and the ``|`` delimiter is a
record; one with too few fields, an empty name or a relation from a name to itself is skipped and counted; a
relation line of three fields has no keywords (``R|name|name|description``, as weak models write it); a
description holding ``|`` is joined back; an ``END`` line is passed over (a model echoing the prompt writes its
own records after the example's END). Names, types, keywords and
descriptions are cleaned as every record is (:mod:`pathrag.names`), records naming what the chunk never
spells are dropped (:mod:`pathrag.index.grounding`), and at most :func:`~pathrag.index.extraction.max_records_for`
records are kept. A prompt over the model's window is handled as the paper's extraction does (halves).

>>> result = parse_compact("E|Mara Quill|person|A sailor.\\nR|Mara Quill|Saltmere|home port|She sails from it.\\nEND")
>>> [e.name for e in result.entities], [(r.source, r.target, r.keywords) for r in result.relations]
(['MARA QUILL'], [('MARA QUILL', 'SALTMERE', ('home port',))])
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable

from ..llm.overflow import is_context_overflow
from ..models import Entity, Relation
from ..names import clean_description, normalize_name, normalize_type, replace_surrogates, split_keywords
from .extraction import ChunkExtraction, ExtractionConfig, ExtractionResult, extract_halves
from .extraction import max_records_for as _max_records_for

__all__ = [
    "COMPACT_EXAMPLE",
    "COMPACT_PROMPT",
    "COMPACT_RULES",
    "build_compact_prompt",
    "compact_lines",
    "extract_compact",
    "parse_compact",
    "read_compact",
]

logger = logging.getLogger(__name__)

COMPACT_RULES = """Turn the text at the end into knowledge-graph records, one per line, and nothing else.
First one line per entity the text names (people, organisations, places, events, works, dates, ideas):
E|entity name|type|what the text says about it
Then one line per pair of those entities that the text links:
R|entity name|other entity name|keywords|how the text links the two
- type is one of: {entity_types}. keywords are a few words for the kind of link.
- Spell names as the text does. Use only what the text states. Write descriptions in {language}, in at most \
25 words each.
"""

COMPACT_EXAMPLE = """For instance, "Ida Marr founded the Tarn Rowing Club in 1902." gives:
E|Ida Marr|person|Founded the Tarn Rowing Club in 1902.
E|Tarn Rowing Club|organization|Club founded by Ida Marr in 1902.
E|1902|event|The year the Tarn Rowing Club was founded.
R|Ida Marr|Tarn Rowing Club|founder|Ida Marr founded the club in 1902.
R|Tarn Rowing Club|1902|founding year|The club was founded in 1902.
END
"""

COMPACT_PROMPT = (
    COMPACT_RULES
    + """- Write END on the last line.

"""
    + COMPACT_EXAMPLE
    + """
Text:
{input_text}
"""
)

_LINE = re.compile(r"^[\s>*•\-]*(?:\d+[.)]\s*)?(?P<tag>e|r|entity|relation|relationship)\s*\|(?P<rest>.*)$", re.I)


def build_compact_prompt(text: str, config: ExtractionConfig) -> str:
    """The compact prompt for a chunk.

    >>> prompt = build_compact_prompt("Text with {braces}.", ExtractionConfig(entity_types=("ship", "crew")))
    >>> "type is one of: ship, crew." in prompt and prompt.endswith("Text with {braces}.\\n")
    True
    """
    return COMPACT_PROMPT.format(entity_types=", ".join(config.entity_types), language=config.language, input_text=text)


def parse_compact(text: str, *, chunk_id: str | None = None, max_records: int | None = None) -> ExtractionResult:
    """Read a compact answer (the rules of the module docstring); never raises."""
    source_ids = (chunk_id,) if chunk_id else ()
    cap = max_records if max_records is not None else len(text)
    entities: dict[Entity, None] = {}
    relations: dict[Relation, None] = {}
    result = ExtractionResult()
    for line in replace_surrogates(text).splitlines():
        if line.strip().strip("`").upper() == "END":
            # not the end of reading: a model that echoes the prompt's example (which ends with END) writes
            # its own records after it; the echoed ones name nothing in the chunk and are dropped by grounding
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        if len(entities) + len(relations) >= cap:
            result.dropped += 1
            continue
        fields = [f.strip() for f in match.group("rest").split("|")]
        record = _entity(fields, source_ids) if match.group("tag")[0] in "eE" else _relation(fields, source_ids)
        if record is None:
            result.skipped += 1
        elif isinstance(record, Entity):
            entities[record] = None
        else:
            relations[record] = None
    result.entities, result.relations = list(entities), list(relations)
    return result


def compact_lines(entities: Iterable[Entity], relations: Iterable[Relation]) -> list[str]:
    """Records written as the compact prompt asks for them, one line each (the inverse of :func:`parse_compact`:
    a replay of recorded records, a stand-in model).

    >>> compact_lines([Entity(name="MARA", type="person", description="A sailor.")], [])
    ['E|MARA|person|A sailor.']
    """
    lines = [f"E|{e.name}|{e.type}|{_one_line(e.description)}" for e in entities]
    lines += [f"R|{r.source}|{r.target}|{', '.join(r.keywords)}|{_one_line(r.description)}" for r in relations]
    return lines


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _entity(fields: list[str], source_ids: tuple[str, ...]) -> Entity | None:
    if len(fields) < 3 or not (name := normalize_name(fields[0])):
        return None
    return Entity(
        name=name,
        type=normalize_type(fields[1]),
        description=clean_description("|".join(fields[2:])),
        source_ids=source_ids,
    )


def _relation(fields: list[str], source_ids: tuple[str, ...]) -> Relation | None:
    if len(fields) < 3:
        return None
    source, target = normalize_name(fields[0]), normalize_name(fields[1])
    if not source or not target or source == target:
        return None
    # three fields: the keywords left out (weak models do), the third is the description
    keywords, description = (fields[2], fields[3:]) if len(fields) > 3 else ("", fields[2:])
    return Relation(
        source=source,
        target=target,
        keywords=tuple(split_keywords([keywords])),
        description=clean_description("|".join(description)),
        source_ids=source_ids,
    )


async def extract_compact(
    text: str, ask: Callable[[str], Awaitable[str]], config: ExtractionConfig, *, chunk_id: str | None = None
) -> ChunkExtraction:
    """Extract a chunk with one call of the compact prompt (see the module docstring).

    >>> import asyncio
    >>> async def ask(prompt): return "E|Alice|person|A navigator.\\nEND"
    >>> done = asyncio.run(extract_compact("Alice navigates.", ask, ExtractionConfig()))
    >>> len(done.answers), [e.name for e in done.result.entities]
    (1, ['ALICE'])
    """
    try:
        answer = replace_surrogates(await ask(build_compact_prompt(text, config)))
    except Exception as exc:
        if not is_context_overflow(exc):
            raise
        return await extract_halves(
            text, lambda half: extract_compact(half, ask, config, chunk_id=chunk_id), chunk_id, exc, "compact"
        )
    return read_compact(answer, text, chunk_id)


def read_compact(answer: str, text: str, chunk_id: str | None) -> ChunkExtraction:
    """A compact ``answer`` for the chunk ``text`` as kept: parsed, grounded in ``text`` and capped.

    >>> done = read_compact("E|Alice|person|A navigator.\\nE|Bob|person|Not in the text.", "Alice navigates.", "c1")
    >>> [e.name for e in done.result.entities], done.result.ungrounded
    (['ALICE'], 1)
    """
    from .grounding import ground

    cap = _max_records_for(text)
    result = ground(parse_compact(answer, chunk_id=chunk_id, max_records=cap), text)
    if result.ungrounded or result.dropped:
        logger.warning(
            "chunk %s: %d records naming what the chunk never spells and %d over the cap of %d dropped",
            chunk_id or "?",
            result.ungrounded,
            result.dropped,
            cap,
        )
    return ChunkExtraction(answers=[answer], result=result)
