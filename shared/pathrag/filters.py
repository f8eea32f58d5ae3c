"""Metadata filters: which documents a retrieval may draw text from.

A filter is a mapping from a metadata key to a condition, every condition to be met (an AND):

* ``{"user": "ana"}`` or ``{"user": {"$eq": "ana"}}``: the document's ``user`` equals ``"ana"``;
* ``{"user": {"$in": ["ana", "ben"]}}``: it equals one of them.

A document without the key matches no condition on it. Values compare as JSON values do: ``1`` equals
``1.0``, but ``True`` is not ``1`` and ``"1"`` is not ``1``. A list in the metadata is a value like any
other (``{"tags": ["a"]}`` matches ``{"tags": ["a"]}``, not ``{"tags": "a"}``). Any other operator
(``$gt``, ``$ne``, ``$or``...) is refused with a ``ValueError`` naming it: a filter that silently matched
everything would show one user's text to another.

>>> check_filter({"user": {"$in": ["ana", "ben"]}, "lang": "en"})
{'user': {'$in': ['ana', 'ben']}, 'lang': {'$eq': 'en'}}
>>> matches({"user": "ben", "lang": "en"}, {"user": {"$in": ["ana", "ben"]}, "lang": "en"})
True
>>> check_filter({"year": {"$gt": 2020}})
Traceback (most recent call last):
...
ValueError: filter: unknown operator '$gt' for key 'year'; supported: a value (equality), {'$eq': v}, {'$in': [v, ...]}
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["OPERATORS", "check_filter", "matches", "predicate"]

#: The operators a filter condition may use.
OPERATORS = ("$eq", "$in")

_SUPPORTED = "supported: a value (equality), {'$eq': v}, {'$in': [v, ...]}"


def _json_value(value: Any, where: str) -> Any:
    """``value`` as a JSON value (tuples become lists), or a ``ValueError`` naming ``where``."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"filter: {where} is {value!r}, which no document's metadata can hold")
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v, where) for v in value]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {k: _json_value(v, where) for k, v in value.items()}
    raise ValueError(f"filter: {where} is a {type(value).__name__}; compare with JSON values (str, number, bool, None)")


def check_filter(value: Any) -> dict[str, dict[str, Any]] | None:
    """``value`` as a checked filter, each condition spelt out (``{key: {"$eq": v}}`` or ``{"$in": [...]}``);
    ``None`` for no filter.

    Raises:
        ValueError: not a mapping of string keys, an unknown operator, a condition with several operators,
            an ``$in`` without a list, or a value that is not JSON.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"filter must be a dict of metadata key -> value, got {type(value).__name__}")
    checked: dict[str, dict[str, Any]] = {}
    for key, condition in value.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"filter: keys are metadata keys (non-empty strings), got {key!r}")
        if key.startswith("$"):
            raise ValueError(f"filter: unknown operator {key!r} at the top level; {_SUPPORTED}, one per key")
        if isinstance(condition, Mapping) and any(isinstance(k, str) and k.startswith("$") for k in condition):
            if len(condition) != 1:
                raise ValueError(f"filter: key {key!r} has {len(condition)} operators; give one ({_SUPPORTED})")
            ((operator, operand),) = condition.items()
            if operator not in OPERATORS:
                raise ValueError(f"filter: unknown operator {operator!r} for key {key!r}; {_SUPPORTED}")
            if operator == "$in":
                if not isinstance(operand, (list, tuple, set, frozenset)):
                    raise ValueError(f"filter: '$in' for key {key!r} takes a list, got {type(operand).__name__}")
                checked[key] = {"$in": [_json_value(v, f"a value of key {key!r}") for v in operand]}
            else:
                checked[key] = {"$eq": _json_value(operand, f"the value of key {key!r}")}
        else:
            checked[key] = {"$eq": _json_value(condition, f"the value of key {key!r}")}
    return checked


def _canonical(value: Any) -> str:
    """A JSON text equal for equal JSON values (so ``1`` and ``1.0`` agree, ``True`` and ``1`` do not)."""

    def normal(v: Any) -> Any:
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, int):
            return v  # exact, however large: 64-bit user ids must not meet as floats
        if isinstance(v, float):
            if not math.isfinite(v):
                return str(v)
            return int(v) if v.is_integer() else v
        if isinstance(v, (list, tuple)):
            return [normal(x) for x in v]
        if isinstance(v, Mapping):
            return {str(k): normal(x) for k, x in v.items()}
        return str(v)

    return json.dumps(normal(value), sort_keys=True)


def predicate(filter: Mapping[str, Any] | None) -> Callable[[Mapping[str, Any]], bool]:
    """A test of a document's metadata against ``filter``, checked once (see :func:`matches`).

    >>> keep = predicate({"user": {"$in": ["ana", "ben"]}})
    >>> keep({"user": "ben"}), keep({"user": "cy"}), keep({})
    (True, False, False)
    """
    checked = check_filter(filter)
    if checked is None:
        return lambda metadata: True
    # each condition as the set of values it accepts ($eq: one)
    wanted = [(key, {_canonical(v) for v in cond.get("$in", [cond.get("$eq")])}) for key, cond in checked.items()]

    def test(metadata: Mapping[str, Any]) -> bool:
        return all(key in metadata and _canonical(metadata[key]) in allowed for key, allowed in wanted)

    return test


def matches(metadata: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether a document's ``metadata`` meets every condition of ``filter`` (``None``: no filter).

    >>> matches({"user": "ana"}, {"user": "ben"}), matches({}, {"user": {"$in": [None]}})
    (False, False)
    """
    return predicate(filter)(metadata)
