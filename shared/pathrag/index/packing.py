"""Small chunks packed into one compact call, each record still traced to its own chunk.

The compact prompt's rules cost about 300 tokens, a 100-token paragraph a third of that: asked one by one,
short chunks pay mostly for the rules. With ``ExtractionConfig(pack_tokens=1200)``
(:data:`pathrag.index.extraction.PACK_TOKENS`, the paper's chunk size; ``pathrag index --pack 1200``),
:func:`packs` groups consecutive chunks into one call while their texts together stay within that many tokens;
a chunk as long as that is asked alone. It is off by default: with Qwen2.5-Coder-1.5B on 20 MuSiQue
paragraphs, entity recall fell from 52 % asked one by one to 32 % packed (it gave each text fewer records,
and some of another text's); no stronger model was measured (``benchmarks/extraction_recall.py``).
:func:`build_packed_prompt`
numbers the texts under header lines (``### Text 2``), shows a two-text example, and asks for each text's
records under its own header::

    ### Text 1
    E|Mara Quill|person|A sailor.
    ### Text 2
    E|Saltmere|location|A port.
    END

How an answer is shared out (:func:`extract_pack`), so that one chunk's bad luck never costs another its
records:

* each text takes the records under its own header, read and grounded against its own text as a single
  chunk's answer is (:func:`pathrag.index.compact.read_compact`): records for another text name what this one
  never spells and are dropped and counted;
* a text whose header the answer lacks (a model that ignores the headers, an answer cut short by the output
  cap) is asked again alone, by the single-chunk prompt;
* lines before the first header belong to no text: records among them are counted as skipped;
* a packed prompt over the model's window is split into two packs, down to single chunks (which are halved
  as usual).

The answer cache stays per chunk: each text's share of a packed answer is also kept under the key of its
single-chunk prompt, so a chunk met again, packed with other neighbours or alone, is never paid for twice (and
the same pack asked again, as a re-run after a crash does, is answered by the packed answer, cached too).

>>> import asyncio
>>> from pathrag.index.extraction import ExtractionConfig
>>> async def ask(prompt):
...     return "### Text 1\\nE|Ida Marr|person|A rower.\\n### Text 2\\nE|Tarn|location|A lake.\\nEND"
>>> done = asyncio.run(extract_pack([("c1", "Ida Marr rows."), ("c2", "Tarn is a lake.")], ask, ExtractionConfig()))
>>> [[e.name for e in d.result.entities] for d in done]
[['IDA MARR'], ['TARN']]
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from ..errors import StoreDamaged
from ..llm.overflow import is_context_overflow
from ..llm.tokens import TokenCounter, count_tokens
from ..names import replace_surrogates
from .compact import COMPACT_RULES, build_compact_prompt, extract_compact, parse_compact, read_compact
from .extraction import ChunkExtraction, ExtractionConfig

__all__ = [
    "PACK_HEADER",
    "AnswerMemo",
    "build_packed_prompt",
    "extract_pack",
    "compact_answer",
    "packs",
    "prompt_texts",
    "split_sections",
]

logger = logging.getLogger(__name__)

Chunk = tuple[str, str]
"""A chunk to extract: its id and its text."""

PACK_HEADER = "### Text {number}"

PACKED_EXAMPLE = """For instance, the texts
### Text 1
Ida Marr founded the Tarn Rowing Club in 1902.

### Text 2
The club rows on Lake Tarn.
give:
### Text 1
E|Ida Marr|person|Founded the Tarn Rowing Club in 1902.
E|Tarn Rowing Club|organization|Club founded by Ida Marr in 1902.
R|Ida Marr|Tarn Rowing Club|founder|Ida Marr founded the club in 1902.
### Text 2
E|Tarn Rowing Club|organization|A club that rows on Lake Tarn.
E|Lake Tarn|location|Where the club rows.
R|Tarn Rowing Club|Lake Tarn|rowing place|The club rows on Lake Tarn.
END
"""
"""The packed prompt's example: two texts, each answered under its header. A weak model copies the example's
shape more than it follows the rules (Qwen2.5-Coder-1.5B, shown the single-text example, wrote every text's
records in one list)."""

PACKED_PROMPT = (
    COMPACT_RULES
    + """- The texts are numbered, each under a header line such as "### Text 2". Answer text by text, in \
order: copy its header line, then write that text's records, using only that text. A text with nothing to \
record gets its header line alone.
- Write END once, on the last line, after the last text.

"""
    + PACKED_EXAMPLE
    + """
Texts:
{texts}
"""
)

_COMPACT_HEAD = COMPACT_RULES.split("\n", 1)[0]
_SINGLE_TAIL, _PACKED_TAIL = "\nText:\n", "\nTexts:\n"
_PACKED_TEXT = re.compile(r"^### Text \d+\n(?P<text>.*?)(?=\n\n### Text \d+\n|\n\Z)", re.S | re.M)
_HEADER = re.compile(r"^[\s#*>\[(]*text\s*(?P<number>\d+)\s*[\])#*:.]*\s*$", re.I)


@runtime_checkable
class AnswerMemo(Protocol):
    """A model's answer cache by prompt, as :func:`extract_pack` uses it (the index's LLM cache)."""

    def recall(self, prompt: str) -> str | None:
        """The answer kept for ``prompt``, or ``None``."""
        ...

    def remember(self, prompt: str, answer: str) -> None:
        """Keep ``answer`` for ``prompt``."""
        ...


def packs(chunks: Sequence[Chunk], budget: int, token_counter: TokenCounter | None = None) -> list[list[Chunk]]:
    """``chunks`` in order, grouped into packs whose texts add up to at most ``budget`` tokens (a chunk as long
    as that, or ``budget`` below 2, makes a pack of its own).

    >>> [len(p) for p in packs([("a", "one two"), ("b", "three"), ("c", "x " * 50)], budget=20)]
    [2, 1]
    """
    if budget < 2:  # packing off (the default): no chunk's tokens need counting
        return [[chunk] for chunk in chunks]
    grouped: list[list[Chunk]] = []
    used = budget  # nothing open yet: the first chunk starts a pack
    for chunk in chunks:
        size = count_tokens(chunk[1], token_counter)
        if used + size > budget:
            grouped.append([])
            used = 0
        grouped[-1].append(chunk)
        used += size
    return grouped


def build_packed_prompt(texts: Sequence[str], config: ExtractionConfig) -> str:
    """The compact prompt for several texts, numbered from 1 under :data:`PACK_HEADER` lines.

    >>> prompt = build_packed_prompt(["Ida rows.", "Tarn {is} a lake."], ExtractionConfig())
    >>> prompt.endswith("### Text 1\\nIda rows.\\n\\n### Text 2\\nTarn {is} a lake.\\n")
    True
    """
    numbered = "\n\n".join(f"{PACK_HEADER.format(number=n)}\n{text}" for n, text in enumerate(texts, 1))
    return PACKED_PROMPT.format(entity_types=", ".join(config.entity_types), language=config.language, texts=numbered)


def prompt_texts(prompt: str) -> list[str]:
    """The texts a compact prompt asks about: one (:func:`~pathrag.index.compact.build_compact_prompt`), or each
    of a packed one in order; none for any other prompt (for stand-in models that answer from the text).

    >>> prompt_texts(build_packed_prompt(["Ida rows.", "Tarn is a lake."], ExtractionConfig()))
    ['Ida rows.', 'Tarn is a lake.']
    >>> prompt_texts(build_compact_prompt("Ida rows.", ExtractionConfig())), prompt_texts("Hello")
    (['Ida rows.'], [])
    """
    if not prompt.startswith(_COMPACT_HEAD):
        return []
    if _PACKED_TAIL in prompt:
        return [m.group("text") for m in _PACKED_TEXT.finditer(prompt.rsplit(_PACKED_TAIL, 1)[1])]
    return [prompt.rsplit(_SINGLE_TAIL, 1)[1].removesuffix("\n")] if _SINGLE_TAIL in prompt else []


def compact_answer(shares: Sequence[str]) -> str:
    """What a model following the compact prompt answers, from each text's record lines in the order of
    :func:`prompt_texts`: one text's lines then END, or for a pack each text's under its header.

    >>> print(compact_answer(["E|Ida|person|A rower."]))
    E|Ida|person|A rower.
    END
    >>> print(compact_answer(["E|Ida|person|A rower.", ""]))
    ### Text 1
    E|Ida|person|A rower.
    ### Text 2
    <BLANKLINE>
    END
    """
    if len(shares) == 1:  # a single text's prompt (a pack always holds two or more)
        return f"{shares[0]}\nEND"
    return "\n".join(f"{PACK_HEADER.format(number=n)}\n{share}" for n, share in enumerate(shares, 1)) + "\nEND"


def split_sections(answer: str, count: int) -> tuple[dict[int, str], str]:
    """A packed ``answer``'s lines by text number (1 to ``count``; a header given twice adds to its text) and
    the lines under no valid header (before the first, or under a number out of range).

    >>> split_sections("note\\n### Text 2\\nE|b|x|y\\n### Text 9\\nE|z|x|y\\nEND", 2)
    ({2: 'E|b|x|y'}, 'note\\nE|z|x|y\\nEND')
    """
    sections: dict[int, list[str]] = {}
    loose: list[str] = []
    current: list[str] = loose
    for line in answer.splitlines():
        match = _HEADER.match(line)
        if match is not None:
            number = int(match.group("number"))
            current = sections.setdefault(number, []) if 1 <= number <= count else loose
            continue
        current.append(line)
    return {n: "\n".join(lines) for n, lines in sorted(sections.items())}, "\n".join(loose)


async def extract_pack(
    pack: Sequence[Chunk],
    ask: Callable[[str], Awaitable[str]],
    config: ExtractionConfig,
) -> list[ChunkExtraction | Exception]:
    """The records of each chunk of ``pack``, in order, from one compact call (the rules of the module
    docstring); a chunk asked again alone that fails gets its exception, the others their records. ``ask``
    may also be an :class:`AnswerMemo` (the index's model): then each chunk's share is cached by its own
    prompt, and chunks whose share is cached are not asked."""
    memo = ask if isinstance(ask, AnswerMemo) else None
    done: dict[str, ChunkExtraction | Exception] = {}
    todo, answer = list(pack), None
    if memo is not None and len(pack) > 1:
        # the same pack answered before (a re-run after a crash), else each chunk's own share
        answer = memo.recall(build_packed_prompt([text for _, text in pack], config))
        if answer is None:
            todo = []
            for cid, text in pack:
                kept = memo.recall(build_compact_prompt(text, config))
                if kept is None:
                    todo.append((cid, text))
                else:
                    done[cid] = read_compact(kept, text, cid)
    await _ask_packed(todo, ask, config, memo, done, answer)
    return [done[cid] for cid, _ in pack]


async def _ask_packed(
    todo: Sequence[Chunk],
    ask: Callable[[str], Awaitable[str]],
    config: ExtractionConfig,
    memo: AnswerMemo | None,
    done: dict[str, ChunkExtraction | Exception],
    answer: str | None = None,
) -> None:
    """Fill ``done`` with the records of the chunks ``todo``: one packed call (``answer``, when it is known
    already), then each missing one alone."""
    if len(todo) <= 1:
        for cid, text in todo:
            done[cid] = await _alone(cid, text, ask, config)
        return
    try:
        if answer is None:
            answer = replace_surrogates(await ask(build_packed_prompt([text for _, text in todo], config)))
    except Exception as exc:
        if not is_context_overflow(exc):
            raise
        middle = len(todo) // 2
        logger.warning("a pack of %d chunks overflows the model's window; asking two smaller packs", len(todo))
        await _ask_packed(todo[:middle], ask, config, memo, done)
        await _ask_packed(todo[middle:], ask, config, memo, done)
        return
    sections, loose = split_sections(answer, len(todo))
    for number, (cid, text) in enumerate(todo, 1):
        share = sections.get(number)
        if share is None:
            logger.warning("chunk %s: the packed answer has no section for it; asking it alone", cid)
            done[cid] = await _alone(cid, text, ask, config)
            continue
        share += "\nEND"
        if memo is not None:
            memo.remember(build_compact_prompt(text, config), share)
        done[cid] = read_compact(share, text, cid)
    # records under no text's header are no text's: counted once, as skipped, with the first chunk's
    stray = parse_compact(loose)
    first = done[todo[0][0]]
    if isinstance(first, ChunkExtraction):
        first.result.skipped += len(stray.entities) + len(stray.relations) + stray.skipped


async def _alone(
    cid: str, text: str, ask: Callable[[str], Awaitable[str]], config: ExtractionConfig
) -> ChunkExtraction | Exception:
    try:
        return await extract_compact(text, ask, config, chunk_id=cid)
    except StoreDamaged:  # the store's file (the cache), not the chunk: no chunk can be saved either
        raise
    except Exception as exc:  # this chunk's failure, not its pack's
        return exc
