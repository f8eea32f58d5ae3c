"""The data model shared by every part of pathrag: entities, relations, scored paths, and what a
retrieval returns.

Entities, relations and paths are immutable pydantic models, so they can be cached, compared and
serialised (``model_dump`` / ``model_validate``) without surprises. A retrieval's result types are plain
dataclasses that hold them.

>>> from pathrag import Entity, Relation
>>> alice = Entity(name="ALICE", type="person", description="A ship's navigator.")
>>> Relation(source="ALICE", target="MERIDIAN", keywords=("crew",), weight=3.0).pair
('ALICE', 'MERIDIAN')
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .params import DEFAULT_CONTEXT_TOKENS, DEFAULT_KEY_PATHS

__all__ = ["Entity", "Keywords", "Relation", "RetrievalResult", "RetrievedItem", "ScoredPath", "SourceDocument"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


def _clean_strings(values: object) -> tuple[str, ...]:
    """Accept any iterable of strings (or one string); drop blanks and duplicates, keep first-seen order."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = (values,)
    if not isinstance(values, Iterable):  # pydantic hands over the raw input
        raise TypeError(f"'{type(values).__name__}' object is not iterable")
    seen: dict[str, None] = {}
    for value in values:
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
    """A relational path with its score.

    A key path of the paper's search (:func:`~pathrag.find_key_paths`) runs between two seed entities,
    from the seed whose propagation scored it to the other one; ``resources`` holds each node's resource
    in that propagation, so that ``score == sum(resources) / hops``. A query-aware path of the evidence
    context (:mod:`pathrag.query.query_paths`) is a chain of relations like the question, scored by the sum of
    their weights, with no ``resources``. Nodes are entity names for a :class:`~pathrag.GraphStore`, and
    a networkx graph's own nodes (any hashable: ints, tuples...) for a graph passed to
    :func:`~pathrag.find_key_paths` directly.
    """

    model_config = _FROZEN

    nodes: tuple[Hashable, ...] = Field(min_length=2)
    score: float
    resources: tuple[float, ...] = ()

    @property
    def hops(self) -> int:
        """Number of edges on the path."""
        return len(self.nodes) - 1

    @property
    def start(self) -> Hashable:
        """The first node: the seed whose propagation scored the path."""
        return self.nodes[0]

    @property
    def end(self) -> Hashable:
        """The last node: the other seed."""
        return self.nodes[-1]

    @property
    def edges(self) -> tuple[tuple[Hashable, Hashable], ...]:
        """Consecutive node pairs in walking order (not necessarily the recorded relation direction)."""
        return tuple(zip(self.nodes, self.nodes[1:], strict=False))  # n nodes, n - 1 edges


@dataclass(frozen=True)
class Keywords:
    """A query's keywords: high-level (themes) and low-level (names), as the keyword prompt splits them."""

    high_level: tuple[str, ...] = ()
    low_level: tuple[str, ...] = ()


ItemKind = Literal["path", "passage", "entity"]


@dataclass(frozen=True)
class SourceDocument:
    """A document an item's text comes from: its id in the index and the metadata it was indexed with
    (the input's own keys: ``source``, ``title``, ``page``...; see :mod:`pathrag.index.sources`)."""

    id: str
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def source(self) -> str:
        """The document's ``source`` metadata when it has one, else its id."""
        value = self.metadata.get("source")
        return str(value) if value not in (None, "") else self.id


@dataclass(frozen=True)
class RetrievedItem:
    """One piece of retrieved evidence.

    ``kind`` says what it is: a key ``path`` (its :class:`ScoredPath` in ``path``, score = reliability),
    a source ``passage`` (a chunk's text, ``id`` = the chunk id, score = its evidence score), or a seed
    ``entity`` given as fill when too few paths exist. ``source_ids`` are the chunks it comes from, and
    ``documents`` the indexed documents those chunks belong to (with their metadata), when the retrieval
    read them from an index (:mod:`pathrag.index.sources`): a path's are its relations' and entities'.
    """

    kind: ItemKind
    id: str
    text: str
    score: float
    nodes: tuple[str, ...]
    source_ids: tuple[str, ...]
    path: ScoredPath | None = None
    documents: tuple[SourceDocument, ...] = field(default=(), hash=False)

    @property
    def hops(self) -> int:
        """Number of edges between ``nodes`` (0 for a passage or an entity)."""
        return max(len(self.nodes) - 1, 0)

    def metadata(self) -> dict[str, Any]:
        """JSON-friendly metadata for a framework document or node (read back by :meth:`from_metadata`).

        With ``documents``: their ids (``document_ids``), each one's id and metadata (``documents``), the
        metadata keys they all share with the same value as keys of their own (never replacing the keys
        above: ``kind``, ``id``, ``score``...), and ``source``: the first document's ``source`` (else its id).

        >>> item = RetrievedItem("passage", "c1", "text", 0.5, (), ("c1",),
        ...                      documents=(SourceDocument("d1", {"source": "a.md", "page": 2}),))
        >>> meta = item.metadata()
        >>> meta["source"], meta["page"], meta["document_ids"]
        ('a.md', 2, ['d1'])
        """
        meta: dict[str, Any] = {
            "kind": self.kind,
            "id": self.id,
            "score": self.score,
            "nodes": list(self.nodes),
            "hops": self.hops,
            "source_ids": list(self.source_ids),
        }
        if self.documents:
            meta["document_ids"] = [doc.id for doc in self.documents]
            meta["documents"] = [{"id": doc.id, "metadata": dict(doc.metadata)} for doc in self.documents]
            first, rest = self.documents[0], self.documents[1:]
            for key, value in first.metadata.items():
                if all(key in doc.metadata and doc.metadata[key] == value for doc in rest):
                    meta.setdefault(key, value)
            meta.setdefault("source", first.source)
        return meta

    @classmethod
    def from_metadata(
        cls, metadata: Mapping[str, Any], text: str, *, score: float | None = None, id: str | None = None
    ) -> RetrievedItem:
        """The item back from a framework document or node: its :meth:`metadata` and its ``text``.

        The score is the metadata's ``raw_score`` when it has one (the kind's own scale), else ``score``,
        the framework's own when it keeps one (a LlamaIndex node's), else the metadata's (0.0 when missing or
        not a number); ``id`` is the framework's id, used when the metadata has none. An
        unknown ``kind`` reads as an entity; a path keeps its nodes and score (its ``resources`` are not
        in the metadata), and a path of fewer than two nodes has no :class:`ScoredPath`.

        >>> item = RetrievedItem("path", "path-1", "A -> B", 0.9, ("A", "B"), ("c1",), ScoredPath(nodes=("A", "B"),
        ...                      score=0.9))
        >>> RetrievedItem.from_metadata(item.metadata(), item.text) == item
        True
        >>> RetrievedItem.from_metadata({"kind": "note"}, "text", id="n1")
        RetrievedItem(kind='entity', id='n1', text='text', score=0.0, nodes=(), source_ids=(), path=None, documents=())
        """
        nodes = tuple(str(n) for n in metadata.get("nodes") or ())
        documents = tuple(
            SourceDocument(str(doc["id"]), dict(doc.get("metadata") or {}))
            for doc in metadata.get("documents") or ()
            if isinstance(doc, Mapping) and doc.get("id") is not None
        )
        stored_kind = metadata.get("kind")
        kind: ItemKind = stored_kind if stored_kind in ("path", "passage", "entity") else "entity"
        if "raw_score" in metadata:  # the adapters' "score" is the comparable one (pathrag.query.citations)
            value = _number(metadata["raw_score"])
        else:
            value = _number(metadata.get("score", 0.0)) if score is None else float(score)
        path = ScoredPath(nodes=nodes, score=value) if kind == "path" and len(nodes) >= 2 else None
        return cls(
            kind,
            str(metadata.get("id") or id or ""),
            text,
            value,
            nodes,
            tuple(str(s) for s in metadata.get("source_ids") or ()),
            path,
            documents,
        )


def _number(value: Any) -> float:
    """``value`` as a float, 0.0 when it is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


@dataclass
class RetrievalResult:
    """Everything a query produced: key paths best first, then entity fill, then passages best first.

    ``context`` is the layout it was retrieved for (``"evidence"`` or ``"paths"``, see
    :mod:`pathrag.query.context`), ``max_tokens`` the budget it was retrieved for (``None``: no limit), and
    ``top_k`` the number of key paths it asked for (the evidence layout alternates them with the passages),
    which :func:`pathrag.query.context.result_context` applies unless told otherwise.
    """

    query: str
    keywords: Keywords
    seeds: list[str]
    items: list[RetrievedItem] = field(default_factory=list)
    context: str = "evidence"
    max_tokens: int | None = DEFAULT_CONTEXT_TOKENS
    top_k: int = DEFAULT_KEY_PATHS

    @property
    def paths(self) -> list[RetrievedItem]:
        """The path items, in order: the key paths, then (in the evidence context) the further paths the
        candidate relations form, which a layout shows while its budget has room."""
        return [item for item in self.items if item.kind == "path"]

    @property
    def key_paths(self) -> list[RetrievedItem]:
        """The ``top_k`` best paths (what the paper calls the key paths), in order."""
        return self.paths[: self.top_k]

    @property
    def passages(self) -> list[RetrievedItem]:
        """The passage items, in order."""
        return [item for item in self.items if item.kind == "passage"]
