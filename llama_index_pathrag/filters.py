"""LlamaIndex ``MetadataFilters`` as a pathrag filter (:mod:`pathrag.filters`).

``EQ`` and ``IN`` conditions joined by ``AND`` (LlamaIndex's default) translate one for one; anything else
(``NE``, ``GT``, ``OR``, nested filters...) is refused with a ``ValueError`` naming it: a condition quietly
dropped would widen what a user sees.

>>> from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters
>>> to_pathrag_filter(MetadataFilters(filters=[MetadataFilter(key="user", value="ana"),
...                                            MetadataFilter(key="lang", value=["en", "fr"], operator="in")]))
{'user': 'ana', 'lang': {'$in': ['en', 'fr']}}
"""

from __future__ import annotations

from typing import Any

from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

__all__ = ["to_pathrag_filter"]


def to_pathrag_filter(filters: MetadataFilters | None) -> dict[str, Any] | None:
    """``filters`` as a pathrag ``filter`` (``None`` for none, or for no conditions).

    Raises:
        TypeError: ``filters`` is not a ``MetadataFilters``.
        ValueError: a condition other than ``AND``, an operator other than ``EQ`` and ``IN``, nested filters,
            or one key given twice.
    """
    if filters is None:
        return None
    if not isinstance(filters, MetadataFilters):
        raise TypeError(f"filters must be a llama_index MetadataFilters, got {type(filters).__name__}")
    if filters.condition not in (None, FilterCondition.AND) and len(filters.filters) > 1:
        raise ValueError(f"filters: only condition=AND is supported, got {filters.condition}")
    if filters.condition == FilterCondition.NOT:
        raise ValueError("filters: condition=NOT is not supported (only EQ and IN joined by AND)")
    found: dict[str, Any] = {}
    for condition in filters.filters:
        if not isinstance(condition, MetadataFilter):
            raise ValueError("filters: nested MetadataFilters are not supported (only EQ and IN joined by AND)")
        if condition.key in found:
            raise ValueError(f"filters: key {condition.key!r} is given twice; give one condition per key")
        if condition.operator == FilterOperator.EQ:
            found[condition.key] = condition.value
        elif condition.operator == FilterOperator.IN:
            if not isinstance(condition.value, list):
                raise ValueError(f"filters: IN for key {condition.key!r} takes a list, got {condition.value!r}")
            found[condition.key] = {"$in": list(condition.value)}
        else:
            raise ValueError(
                f"filters: operator {condition.operator.name} for key {condition.key!r} is not supported "
                "(only EQ and IN joined by AND)"
            )
    return found or None
