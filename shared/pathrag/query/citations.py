"""What an answer cites, and one score a threshold can use.

**Citations.** The context numbers its items once, in the order shown (passages, then paths and entity fill,
or the paths alone in the paper's layout), and the answer instructions ask the model to cite them as
``[2]`` or ``[1][3]`` (:data:`pathrag.llm.prompts.CITATION_INSTRUCTIONS`). :func:`cited_items` reads the
marks back: the items an answer cites, in the order it first cites them. The model's answer is untrusted:
a number outside the context, a mark with no number, or a mark in a code span just cites nothing.

**Relevance.** Each kind of item carries a score on its own scale: a path's reliability is the flow's
(it can exceed 1: 2.09 on the demo store), a passage's is its evidence score (0.45 say), an entity fill's
is 0. :func:`relevance_scores` puts every item on one scale in ``[0, 1]``: its score divided by the best
score of its kind in the same retrieval, so the best path and the best passage both score 1.0 and a path
at 0.5 is half as reliable as the best path found. A threshold (``score >= 0.5``) then means "at least
half as good as the best of its kind", whatever the kind; the raw score stays beside it (``raw_score``).

>>> from pathrag import RetrievedItem
>>> items = [RetrievedItem("passage", "c1", "A met B.", 0.45, (), ("c1",)),
...          RetrievedItem("passage", "c2", "B met C.", 0.15, (), ("c2",))]
>>> relevance_scores(items)
{'c1': 1.0, 'c2': 0.333}
>>> from pathrag.query.context import items_context
>>> context = items_context("Who met B?", items)
>>> [item.id for item in cited_items("A met B [2], not C [9].", context)]
['c1']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..models import RetrievedItem
from .context import PathContext

__all__ = ["cited_items", "cited_numbers", "relevance_scores"]

# [2], [1, 3], [1; 3], [2-4]: numbers (a few digits at most) in one pair of square brackets
_MARK = re.compile(r"\[\s*(\d{1,4}(?:\s*(?:[,;]|-|–)\s*\d{1,4})*)\s*\]")
_NUMBER_OR_RANGE = re.compile(r"(\d{1,4})(?:\s*[-–]\s*(\d{1,4}))?")
_MAX_RANGE = 50  # a range wider than this in an answer is not a citation


_CODE_SPAN = re.compile(r"`[^`\n]*`")  # inline code: brackets there index, they do not cite


def cited_numbers(answer: str, count: int) -> list[int]:
    """The item numbers (1 to ``count``) ``answer`` cites, in the order first cited, each once.

    >>> cited_numbers("Mara lives there [2][1], as [1, 3] and [2-3] say; [7] is not shown.", 3)
    [2, 1, 3]
    >>> cited_numbers("The list is `xs[1]`, see [3].", 3)  # code is quoted, not cited
    [3]
    """
    if not isinstance(answer, str):
        return []
    found: dict[int, None] = {}
    for mark in _MARK.finditer(_CODE_SPAN.sub(" ", answer)):
        for start, end in _NUMBER_OR_RANGE.findall(mark.group(1)):
            low = int(start)
            high = int(end) if end else low
            if high < low or high - low > _MAX_RANGE:
                continue
            for number in range(low, high + 1):
                if 1 <= number <= count:
                    found.setdefault(number)
    return list(found)


def cited_items(answer: str, context: PathContext) -> tuple[RetrievedItem, ...]:
    """The items of ``context`` that ``answer`` cites by number, in the order first cited."""
    return tuple(context.items[n - 1] for n in cited_numbers(answer, len(context.items)))


def relevance_scores(items: Sequence[RetrievedItem]) -> dict[str, float]:
    """Each item's score on one scale in ``[0, 1]``, by id: its raw score over the best of its kind among
    ``items`` (0.0 when that best is not positive), rounded to 3 places."""
    best: dict[str, float] = {}
    for item in items:
        best[item.kind] = max(best.get(item.kind, 0.0), item.score)
    scores = {}
    for item in items:
        top = best[item.kind]
        scores[item.id] = round(min(max(item.score / top, 0.0), 1.0), 3) if top > 0 else 0.0
    return scores
