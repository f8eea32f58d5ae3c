"""Reading a model's free-form answer: the JSON in it, keys compared loosely, text cleaned to one line.

Models wrap JSON in code fences or prose, vary the case of keys and pad values; the parsers of
questions, users and verdicts all start here, and none of them raises on what a model writes.

>>> json_value('Sure! ```json\\n{"Users": []}\\n``` Hope it helps.')
{'Users': []}
>>> loose_key("Comprehensiveness "), clean_text('  "two\\n lines"  ')
('comprehensiveness', 'two lines')
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["clean_text", "json_value", "loose_key"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def json_value(text: Any) -> Any:
    """The JSON object or list in a model's answer (bare, fenced, or inside prose); None if there is none.

    >>> json_value("The verdict is [1, 2].") , json_value("no JSON here")
    ([1, 2], None)
    """
    if not isinstance(text, str):
        return None
    candidates = [text.strip(), *(m.strip() for m in _FENCE.findall(text))]
    for opening, closing in (("{", "}"), ("[", "]")):
        start, end = text.find(opening), text.rfind(closing)
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError, ValueError):
            continue
        if isinstance(value, (dict, list)):
            return value
    return None


def loose_key(name: Any) -> str:
    """``name`` lower-cased with everything but letters dropped, so that ``"Over_all "`` matches ``"overall"``.

    >>> loose_key("Over_all ")
    'overall'
    """
    return re.sub(r"[^a-z]", "", str(name).lower())


def clean_text(text: Any, limit: int = 600) -> str:
    """``text`` on one line, without surrounding quotes, cut to ``limit`` characters.

    >>> clean_text("'a   b'", limit=2)
    'a '
    """
    cleaned = " ".join(str(text).split()).strip().strip("\"'")
    return cleaned[:limit]
