"""The front matter of a text file: a YAML block between two ``---`` lines at its very top (Markdown notes,
static-site pages), read into the document's metadata by ``pathrag index``.

The text is indexed as it is, front matter included: only the metadata is added. A block that is not YAML,
not a mapping, or too large to keep (:data:`pathrag.index.values.MAX_METADATA_BYTES` with the file path)
is left out of the metadata with a note on stderr; the file is still indexed.

>>> front_matter("---\\ntitle: Harbour log\\ntags: [sea, 1887]\\n---\\nThe Gull came in at dawn.")
{'title': 'Harbour log', 'tags': ['sea', 1887]}
>>> front_matter("No front matter here.")
{}
"""

from __future__ import annotations

import re
from typing import Any

from pathrag.errors import PathRAGError

__all__ = ["front_matter"]

_BLOCK = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_MAX_BLOCK = 65_536  # characters: larger than any metadata a document keeps, so not worth parsing


class FrontMatterError(PathRAGError, ValueError):
    """A front matter block that cannot be kept: why, in one line."""


def front_matter(text: str) -> dict[str, Any]:
    """The front matter of ``text`` as a dict (``{}`` when it has none).

    Raises:
        FrontMatterError: a block that is not YAML, not a mapping, or longer than 64 Ki characters.
    """
    match = _BLOCK.match(text[: _MAX_BLOCK + 16])
    if match is None:
        if text.startswith("---") and len(text) > _MAX_BLOCK and _BLOCK.match(text):
            raise FrontMatterError(f"front matter longer than {_MAX_BLOCK:,} characters")
        return {}
    import yaml

    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise FrontMatterError(f"front matter is not YAML ({problem})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontMatterError(f"front matter is a {type(data).__name__}, not a mapping of keys to values")
    return {str(key): value for key, value in data.items()}
