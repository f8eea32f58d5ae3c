"""What records are called: entity names (the merge keys every part of pathrag shares), types, keywords and
descriptions, and the check every store makes before writing a name.

:func:`normalize_name` strips quotes, markdown and stray brackets, collapses whitespace and upper-cases
(``str.upper``, Unicode-aware), as LightRAG and GraphRAG do, so ``"Alice"`` from one chunk and ``ALICE`` from
another become one node and answers recorded for those tools parse to the same keys. Types are lower-cased
instead. It is the one place names are made: the extraction parser, the importers and both framework
extractors call it. It also removes control characters and keeps a name within :data:`MAX_NAME_BYTES` (512)
UTF-8 bytes: a longer one is cut at a character boundary and ends with ``~`` and a 12-digit hash of the whole
name, so two long names that share their beginning stay two names. Stores check what they are asked to write
with :func:`check_name` and refuse (never rename) a name some store cannot hold.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from typing import cast

from .errors import PathRAGError

__all__ = [
    "MAX_NAME_BYTES",
    "FUNCTION_WORDS",
    "EntityNameError",
    "check_name",
    "clean_description",
    "normalize_name",
    "normalize_type",
    "replace_surrogates",
    "split_keywords",
    "truncate",
]

FUNCTION_WORDS = frozenset(
    """a an the of in on at to for by with from into onto over under about after before between through during
    and or nor but if then than as so that this these those it its it's they them their there here
    is was are were be been being am do does did done has have had having can could will would shall should may
    might must who whom whose what which when where why how whoever whatever whichever not no yes""".split()
)
"""Words that are never a name on their own (articles, prepositions, pronouns, auxiliaries, question words):
the question's name lookup (:mod:`pathrag.query.linking`) and the lexical extractor
(:mod:`pathrag.index.lexical`) both skip them."""

# the quote marks stripped around names (the extraction parser also reads fields wrapped in them)
QUOTES = "\"'`‘’‚‛“”„‟«»‹›"
_BRACKETS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSERS = {v: k for k, v in _BRACKETS.items()}
_JUNK = QUOTES + "*"


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


class EntityNameError(PathRAGError, ValueError):
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
    pathrag.names.EntityNameError: entity name ' Alice' starts or ends with whitespace or a control ...
    """
    problem = _name_problem(name, max_bytes)
    if problem is not None:
        if isinstance(name, str) and len(name) > 60:
            shown = f"{name[:40]!r}... ({len(name):,} characters)"
        else:
            shown = repr(name)
        raise EntityNameError(
            f"entity name {shown} {problem}; pathrag.names.normalize_name(name) gives a name every store can hold"
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


_SURROGATES = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (a code point no UTF encoding can write: ``"\\ud800"``, as a
    model's or a decoder's ``surrogateescape`` output may hold) replaced by U+FFFD; other text is returned as is.

    >>> replace_surrogates("Saltmere \\udc80harbour")
    'Saltmere \ufffdharbour'
    """
    if text.isascii() or text.isprintable():  # the usual case: isprintable is false for every surrogate
        return text
    return _SURROGATES.sub("\ufffd", text)


TRUNCATION_MARK = " …"
"""What :func:`truncate` puts at the end of a text it cut."""


def truncate(text: str, max_chars: int) -> str:
    """``text`` if it has at most ``max_chars`` characters, else its beginning ending with
    :data:`TRUNCATION_MARK` (`` …``), ``max_chars`` characters in all.

    >>> truncate("A harbour pilot.", 100), truncate("A harbour pilot of Saltmere.", 12)
    ('A harbour pilot.', 'A harbour …')
    """
    if len(text) <= max_chars:
        return text
    return text[: max(max_chars - len(TRUNCATION_MARK), 0)].rstrip() + TRUNCATION_MARK


def split_keywords(fields: Iterable[str]) -> list[str]:
    """Keywords from fields of comma- (or semicolon-) separated words: cleaned, distinct, in order.

    >>> split_keywords(["sea, ships; navigation", "ships"])
    ['sea', 'ships', 'navigation']
    """
    words = (_clean(w) for f in fields for w in re.split(r"[,;，、；]", f))
    return list(dict.fromkeys(w for w in words if w))
