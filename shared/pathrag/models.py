"""The data model shared by every part of pathrag: entities, relations and scored paths.

All three are immutable pydantic models, so they can be cached, compared and serialised
(``model_dump`` / ``model_validate``) without surprises.

>>> from pathrag import Entity, Relation
>>> alice = Entity(name="ALICE", type="person", description="A ship's navigator.")
>>> Relation(source="ALICE", target="MERIDIAN", keywords=("crew",), weight=3.0).pair
('ALICE', 'MERIDIAN')
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["Entity", "Relation", "ScoredPath"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


def _clean_strings(values: object) -> tuple[str, ...]:
    """Accept any iterable of strings (or one string); drop blanks and duplicates, keep first-seen order."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = (values,)
    seen: dict[str, None] = {}
    for value in values:  # type: ignore[union-attr]
        text = str(value).strip()
        if text:
            seen.setdefault(text, None)
    return tuple(seen)


class Entity(BaseModel):
    """A node of the knowledge graph: a named thing with a type and a description.

    ``source_ids`` are the ids of the chunks the entity was extracted from.
    """

    model_config = _FROZEN

    name: str = Field(min_length=1)
    type: str = ""
    description: str = ""
    source_ids: tuple[str, ...] = ()

    @field_validator("source_ids", mode="before")
    @classmethod
    def _source_ids(cls, value: object) -> tuple[str, ...]:
        return _clean_strings(value)


class Relation(BaseModel):
    """An edge of the knowledge graph, recorded in the direction it was extracted (source → target).

    ``weight`` is the summed strength of every extraction that mentioned the relation.
    """

    model_config = _FROZEN

    source: str = Field(min_length=1)
    target: str = Field(min_length=1)
    description: str = ""
    keywords: tuple[str, ...] = ()
    weight: float = 1.0
    source_ids: tuple[str, ...] = ()

    @field_validator("keywords", "source_ids", mode="before")
    @classmethod
    def _strings(cls, value: object) -> tuple[str, ...]:
        return _clean_strings(value)

    @property
    def pair(self) -> tuple[str, str]:
        """``(source, target)`` in the recorded direction."""
        return (self.source, self.target)


class ScoredPath(BaseModel):
    """A relational path between two seed entities, with its reliability score.

    ``nodes`` runs from the seed whose propagation scored the path to the other seed;
    ``resources`` holds each node's resource in that propagation, so that
    ``score == sum(resources) / hops``.
    """

    model_config = _FROZEN

    nodes: tuple[str, ...] = Field(min_length=2)
    score: float
    resources: tuple[float, ...] = ()

    @property
    def hops(self) -> int:
        """Number of edges on the path."""
        return len(self.nodes) - 1

    @property
    def start(self) -> str:
        return self.nodes[0]

    @property
    def end(self) -> str:
        return self.nodes[-1]

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        """Consecutive node pairs in walking order (not necessarily the recorded relation direction)."""
        return tuple(zip(self.nodes, self.nodes[1:]))
