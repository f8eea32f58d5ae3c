"""Every prompt pathrag sends to a language model lives here.

Templates use ``str.format`` placeholders. Only the template text itself is parsed for
braces, so values such as the chunk text may contain ``{`` and ``}`` freely. The few-shot
examples are written with the delimiter placeholders too, so a custom
:class:`~pathrag.index.extraction.ExtractionFormat` changes the examples along with the rules.

Placeholders of :data:`EXTRACTION_PROMPT`: ``tuple_delimiter``, ``record_delimiter``,
``completion_delimiter``, ``entity_types``, ``language``, ``examples``, ``input_text``
(:func:`pathrag.index.extraction.build_extraction_prompt` fills them from an ``ExtractionConfig``).

>>> prompt = build_summary_prompt("ALICE", ["A navigator.", "Sails the {Meridian}."], max_words=50)
>>> "- Sails the {Meridian}." in prompt and "at most 50 words" in prompt
True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ..names import truncate

__all__ = [
    "DEFAULT_ENTITY_TYPES",
    "DEFAULT_LANGUAGE",
    "EXAMPLE_TEMPLATE",
    "EXTRACTION_EXAMPLES",
    "EXTRACTION_PROMPT",
    "ExtractionExample",
    "GLEANING_PROMPT",
    "SUMMARY_PROMPT",
    "KEYWORDS_EXAMPLE",
    "KEYWORDS_PROMPT",
    "CONTEXT_TEMPLATE",
    "EVIDENCE_TEMPLATE",
    "ANSWER_INSTRUCTIONS",
    "EVIDENCE_INSTRUCTIONS",
    "PASSAGE_INSTRUCTIONS",
    "ANSWER_TEMPLATE",
    "CITATION_INSTRUCTIONS",
    "SUMMARY_DESCRIPTION_MAX_CHARS",
    "SUMMARY_INPUT_MAX_CHARS",
    "build_summary_prompt",
]

#: Broad types that fit most prose: who (person, organization), where (location),
#: what happened (event) and the ideas, methods or things discussed (concept).
#: The few-shot examples only use these types.
DEFAULT_ENTITY_TYPES: tuple[str, ...] = ("person", "organization", "location", "event", "concept")
DEFAULT_LANGUAGE = "English"

EXTRACTION_PROMPT = """TASK
Read the text at the end and turn it into knowledge-graph records: the entities it mentions, the relationships between \
them, and the keywords of the whole text.

RECORDS
1. One record per entity whose type is one of: {entity_types}.
("entity"{tuple_delimiter}NAME{tuple_delimiter}TYPE{tuple_delimiter}DESCRIPTION)
   NAME: the name as written in the text. TYPE: one of the types above.
   DESCRIPTION: everything the text says about the entity.
2. One record per pair of those entities that the text links together.
("relationship"{tuple_delimiter}SOURCE{tuple_delimiter}TARGET{tuple_delimiter}DESCRIPTION{tuple_delimiter}KEYWORDS{tuple_delimiter}STRENGTH)
   SOURCE, TARGET: entity names exactly as in the entity records.
   DESCRIPTION: how and why the two are linked. KEYWORDS: a few comma-separated words naming the kind of link.
   STRENGTH: a whole number from 1 (incidental) to 10 (essential).
3. Exactly one record listing, comma-separated, the main topics of the whole text.
("content_keywords"{tuple_delimiter}KEYWORDS)

RULES
- Put {record_delimiter} between records and {completion_delimiter} after the last one.
- Write descriptions and keywords in {language}; keep names as spelled in the text.
- Use only facts stated in the text. Output the records and nothing else: no commentary, no code fences.

EXAMPLES
{examples}

NOW THE REAL TEXT
Text:
{input_text}
Output:
"""

# The extraction prompt, then the answers so far (read as the model's own output), then the request.
GLEANING_PROMPT = """{extraction_prompt}{previous_answers}

FOLLOW-UP
The records above probably miss some entities or relationships of the text. Re-read the text and output only the \
missing records, in the same format and language, without repeating any record given above. End with \
{completion_delimiter}. If nothing is missing, reply with {completion_delimiter} alone.
Missing records:
"""

SUMMARY_PROMPT = """You maintain a knowledge graph. Several passages described "{name}" (an entity, or a relationship \
between two entities) separately. Merge their descriptions into one.
- Keep every distinct fact once; drop repetition.
- If two descriptions contradict each other, keep both versions and say that sources differ.
- Write in the third person, in {language}, and name "{name}" so the text stands on its own.
- Use at most {max_words} words. Output only the merged description.

Descriptions:
{descriptions}

Merged description:
"""


class ExtractionExample(NamedTuple):
    """A few-shot example: a source text and the expected answer (with delimiter placeholders)."""

    text: str
    output: str


EXAMPLE_TEMPLATE = "Example {number}\nText:\n{text}\nOutput:\n{output}"

EXTRACTION_EXAMPLES: tuple[ExtractionExample, ...] = (
    ExtractionExample(
        text=(
            "At the Lantern Fair of 1911 in the river town of Ossely, the clockmaker Hedda Voss demonstrated "
            "tide reckoning, her method for predicting the river's tides from the phases of the moon. "
            "Tobiah Crane, master of the Ossely Ferrymen's Guild, watched the demonstration and had the guild "
            "adopt the method for its night crossings the following week."
        ),
        output="""("entity"{tuple_delimiter}Hedda Voss{tuple_delimiter}person{tuple_delimiter}Clockmaker who devised \
tide reckoning and demonstrated it at the Lantern Fair of 1911.){record_delimiter}
("entity"{tuple_delimiter}Tide Reckoning{tuple_delimiter}concept{tuple_delimiter}Method for predicting the river's \
tides from the phases of the moon, devised by Hedda Voss.){record_delimiter}
("entity"{tuple_delimiter}Lantern Fair of 1911{tuple_delimiter}event{tuple_delimiter}Fair held in Ossely in 1911 where \
tide reckoning was first demonstrated.){record_delimiter}
("entity"{tuple_delimiter}Ossely{tuple_delimiter}location{tuple_delimiter}River town that hosted the Lantern Fair of \
1911; its ferries make night crossings.){record_delimiter}
("entity"{tuple_delimiter}Tobiah Crane{tuple_delimiter}person{tuple_delimiter}Master of the Ossely Ferrymen's Guild, \
who had the guild adopt tide reckoning.){record_delimiter}
("entity"{tuple_delimiter}Ossely Ferrymen's Guild{tuple_delimiter}organization{tuple_delimiter}Guild of the Ossely \
ferrymen; it adopted tide reckoning for its night crossings.){record_delimiter}
("relationship"{tuple_delimiter}Hedda Voss{tuple_delimiter}Tide Reckoning{tuple_delimiter}Hedda Voss devised tide \
reckoning and showed it in public.{tuple_delimiter}invention, demonstration{tuple_delimiter}9){record_delimiter}
("relationship"{tuple_delimiter}Tide Reckoning{tuple_delimiter}Lantern Fair of 1911{tuple_delimiter}Tide reckoning was \
first shown at the Lantern Fair of 1911.{tuple_delimiter}debut, public event{tuple_delimiter}6){record_delimiter}
("relationship"{tuple_delimiter}Lantern Fair of 1911{tuple_delimiter}Ossely{tuple_delimiter}The Lantern Fair of 1911 \
took place in Ossely.{tuple_delimiter}venue{tuple_delimiter}7){record_delimiter}
("relationship"{tuple_delimiter}Tobiah Crane{tuple_delimiter}Ossely Ferrymen's Guild{tuple_delimiter}Tobiah Crane is \
the master of the guild.{tuple_delimiter}leadership, membership{tuple_delimiter}8){record_delimiter}
("relationship"{tuple_delimiter}Ossely Ferrymen's Guild{tuple_delimiter}Tide Reckoning{tuple_delimiter}The guild \
adopted tide reckoning for its night crossings a week after the fair.{tuple_delimiter}adoption, navigation \
safety{tuple_delimiter}8){record_delimiter}
("content_keywords"{tuple_delimiter}tide prediction, river ferries, invention, adopting a new \
method){completion_delimiter}""",
    ),
    ExtractionExample(
        text=(
            "The Brightwater Cooperative has opened a seed library in the old Marlow Street fire station. "
            "Its founder, Priya Adeyemi-Strand, says growers may borrow heirloom bean varieties "
            "as long as they bring back seeds after the harvest."
        ),
        output="""("entity"{tuple_delimiter}Brightwater \
Cooperative{tuple_delimiter}organization{tuple_delimiter}Community cooperative that opened a seed library in the old \
Marlow Street fire station.){record_delimiter}
("entity"{tuple_delimiter}Marlow Street Fire Station{tuple_delimiter}location{tuple_delimiter}Former fire station that \
now houses the Brightwater Cooperative's seed library.){record_delimiter}
("entity"{tuple_delimiter}Priya Adeyemi-Strand{tuple_delimiter}person{tuple_delimiter}Founder of the Brightwater \
Cooperative.){record_delimiter}
("entity"{tuple_delimiter}Seed Library{tuple_delimiter}concept{tuple_delimiter}Lending scheme in which growers borrow \
heirloom bean varieties and return seeds after the harvest.){record_delimiter}
("relationship"{tuple_delimiter}Priya Adeyemi-Strand{tuple_delimiter}Brightwater Cooperative{tuple_delimiter}Priya \
Adeyemi-Strand founded the cooperative.{tuple_delimiter}founding, leadership{tuple_delimiter}9){record_delimiter}
("relationship"{tuple_delimiter}Brightwater Cooperative{tuple_delimiter}Seed Library{tuple_delimiter}The cooperative \
opened and runs the seed library.{tuple_delimiter}operation, community service{tuple_delimiter}8){record_delimiter}
("relationship"{tuple_delimiter}Seed Library{tuple_delimiter}Marlow Street Fire Station{tuple_delimiter}The seed \
library is housed in the old fire station.{tuple_delimiter}premises, building reuse{tuple_delimiter}7){record_delimiter}
("content_keywords"{tuple_delimiter}seed saving, community cooperative, heirloom crops, \
lending){completion_delimiter}""",
    ),
)


SUMMARY_DESCRIPTION_MAX_CHARS = 4_000
"""The most characters (about 1,000 tokens) of one description a summary prompt lists; a longer one
(model output is untrusted: one answer held a 1 MB description) is cut, ending with `` …``."""

SUMMARY_INPUT_MAX_CHARS = 40_000
"""The most characters (about 10,000 tokens) of descriptions one summary prompt lists in all: the descriptions
after that are left out (the prompt says how many), so a prompt stays under about 42,000 characters."""


def build_summary_prompt(
    name: str, descriptions: Iterable[str], *, language: str = DEFAULT_LANGUAGE, max_words: int = 200
) -> str:
    """Prompt asking to merge several descriptions of one entity or relation (e.g. ``"ALICE -> BOB"``).

    Bounded whatever the descriptions: each is cut to :data:`SUMMARY_DESCRIPTION_MAX_CHARS` characters and
    the list stops before :data:`SUMMARY_INPUT_MAX_CHARS` (the rest are counted, not listed). Descriptions
    within both caps give the same prompt as with no cap.

    >>> "at most 80 words" in build_summary_prompt("BOB", ["x", "y"], max_words=80)
    True
    >>> len(build_summary_prompt("BOB", ["word " * 1_000_000] * 100)) < 42_000
    True
    """
    lines: list[str] = []
    size, left_out = 0, 0
    for description in descriptions:
        line = f"- {truncate(' '.join(description.split()), SUMMARY_DESCRIPTION_MAX_CHARS)}"
        if left_out or size + len(line) + 1 > SUMMARY_INPUT_MAX_CHARS:
            left_out += 1
            continue
        lines.append(line)
        size += len(line) + 1
    if left_out:
        lines.append(f"- ({left_out:,} more descriptions left out: too long to list)")
    listed = "\n".join(lines)
    return SUMMARY_PROMPT.format(name=name, descriptions=listed, language=language, max_words=max_words)


# -- query time --------------------------------------------------------------------------------------

#: The example answer of :data:`KEYWORDS_PROMPT`: a keyword answer copying it is not used (see
#: :mod:`pathrag.query.keyword_check`).
KEYWORDS_EXAMPLE = (
    '{"high_level": ["flood defence", "accountability"], "low_level": ["Saltgate Barrier", "Greyfen Marine Company"]}'
)

KEYWORDS_PROMPT = (
    """Pick the search keywords for a question that will be answered from a knowledge graph.
- "high_level": up to 5 broad themes or concepts the question is about.
- "low_level": up to 8 specific names the question mentions or needs: people, places, organisations, events, objects, \
terms. Use the exact names from the question.
Reply with one JSON object and nothing else, for example:
"""
    + KEYWORDS_EXAMPLE.replace("{", "{{").replace("}", "}}")
    + """

Question: {question}
JSON:"""
)

#: The context an answering model reads: the question first, then the paths from least to most
#: reliable, so that the most reliable one sits right before the instructions.
CONTEXT_TEMPLATE = """Question: {question}

Relational paths from the knowledge graph, least to most reliable:

{paths}"""

ANSWER_INSTRUCTIONS = """Answer the question above using only the relational paths. The later a path appears, the more \
reliable it is; prefer it when paths disagree. Mention the entities your answer relies on. If the paths do not contain \
what the question asks, say that the knowledge graph does not cover it rather than guessing."""

ANSWER_TEMPLATE = CONTEXT_TEMPLATE + "\n\n" + ANSWER_INSTRUCTIONS

#: The default context: source passages, then the relational paths (most reliable last).
EVIDENCE_TEMPLATE = """Question: {question}

Passages, least to most relevant:

{passages}

Relational paths, least to most reliable:

{paths}"""

EVIDENCE_INSTRUCTIONS = """Answer the question above using only the passages and relational paths. Later passages are \
more relevant and later paths more reliable; prefer them when sources disagree. A question may need several facts \
chained together: follow the entities from one passage or path to the next. If the evidence does not contain what the \
question asks, say so rather than guessing."""

#: The instructions when the context shows passages and no path (none was found, or none fitted).
PASSAGE_INSTRUCTIONS = """Answer the question above using only the passages. Later passages are more relevant; prefer \
them when they disagree. A question may need several facts chained together: follow the entities from one passage to \
the next. If the passages do not contain what the question asks, say so rather than guessing."""

#: Appended to the answer instructions by every entry point that answers (``pathrag query``, the LangChain
#: chain, the LlamaIndex engine): the context numbers its items once, passages and paths alike, so that the
#: answer's ``[n]`` marks name the items it rests on (:mod:`pathrag.query.citations` reads them back).
CITATION_INSTRUCTIONS = """After each statement, cite the numbered passages or paths it rests on in square brackets, \
e.g. [2] or [1][3]."""
