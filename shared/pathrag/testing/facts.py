"""A scripted extraction model's answers, from facts written into the chunks (for tests; no model, no parser).

A chunk line ``ENTITY name | type | description`` or ``LINK source | target | description | keywords |
strength`` comes back as the matching record, in the format the prompt asks for: the paper's tuples
(:mod:`pathrag.llm.prompts`), or the compact prompt's lines (:mod:`pathrag.index.compact`), for one text or
for several packed under ``### Text N`` headers (:mod:`pathrag.index.packing`). ``LATE`` lines (the fields
of ``ENTITY``) come back only to the paper's gleaning prompt, which finds nothing else. The answers are
written here by hand, so that a test of them checks pathrag's real parsers.

>>> from pathrag.index.compact import build_compact_prompt
>>> from pathrag.index.extraction import ExtractionConfig
>>> print(fact_answer(build_compact_prompt("ENTITY Ida | person | A rower.", ExtractionConfig())))
E|Ida|person|A rower.
END
>>> fact_answer("What is the capital of France?") is None
True
"""

from __future__ import annotations

import re

from ..index.packing import compact_answer, prompt_texts

__all__ = ["fact_answer", "fact_texts"]

_PAPER_TEXT = re.compile(r"NOW THE REAL TEXT\nText:\n(.*?)\nOutput:\n", re.S)
_GLEANING_END = "Missing records:"


def fact_texts(prompt: str) -> list[str]:
    """The chunk texts an extraction prompt (either format, packed or not) asks about; none for another prompt."""
    found = _PAPER_TEXT.findall(prompt)
    return found[-1:] if found else prompt_texts(prompt)


def fact_answer(prompt: str) -> str | None:
    """The answer to an extraction prompt from its texts' fact lines; ``None`` for any other prompt."""
    texts = fact_texts(prompt)
    if not texts:
        return None
    if _PAPER_TEXT.search(prompt):
        gleaning = prompt.rstrip().endswith(_GLEANING_END)
        tuples = [_paper_record(kind, fields) for kind, fields in _facts(texts[0], late=gleaning)]
        return "##\n".join(tuples) + "<|COMPLETE|>"
    return compact_answer(["\n".join(_compact_lines(text)) for text in texts])


def _facts(text: str, *, late: bool = False) -> list[tuple[str, list[str]]]:
    """The ``ENTITY``/``LINK`` lines of ``text`` as (kind, fields), or with ``late`` its ``LATE`` lines."""
    facts = []
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        fields = [f.strip() for f in rest.split("|")]
        if (kind == "LATE") if late else kind in ("ENTITY", "LINK"):
            facts.append(("LINK" if kind == "LINK" else "ENTITY", fields))
    return facts


def _paper_record(kind: str, fields: list[str]) -> str:
    return f'("{"relationship" if kind == "LINK" else "entity"}"<|>' + "<|>".join(fields) + ")"


def _compact_lines(text: str) -> list[str]:
    lines = []
    for kind, fields in _facts(text):
        if kind == "ENTITY":
            lines.append("E|" + "|".join(fields))
        else:
            source, target, description, keywords = (fields + ["", "", "", ""])[:4]
            lines.append(f"R|{source}|{target}|{keywords}|{description}")
    return lines
