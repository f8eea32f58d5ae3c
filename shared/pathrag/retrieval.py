"""Query time, one way through: query → keywords → seed entities → key paths → path texts.

* **Keywords.** With an LLM, :data:`~pathrag.prompts.KEYWORDS_PROMPT` splits the question into
  high-level (themes) and low-level (names) keywords. Without one, or when its answer is unusable,
  the query text itself is the keyword: retrieval never dead-ends on the model.
* **Seeds.** Each low-level keyword (else each high-level one) asks the entity index for its nearest
  entities; seeds are taken round-robin over those lists until ``num_seeds`` distinct ones.
* **Paths** come from :func:`pathrag.find_key_paths`; each is rendered as text (:mod:`pathrag.context`)
  with the union of its entities' and relations' source chunks.
* **Fill.** When fewer than ``top_k`` paths exist, the best-matching seeds not on any path are added as
  single entities, so a graph that knows something relevant never returns nothing.

>>> import networkx as nx
>>> from pathrag import HashingEmbedder, InMemoryVectorIndex, NetworkXGraphStore, VectorItem
>>> graph = NetworkXGraphStore(nx.Graph([("MARA", "SALTMERE"), ("SALTMERE", "GULL")]))
>>> entities = InMemoryVectorIndex(HashingEmbedder())
>>> entities.upsert([VectorItem(n, n, {"name": n}) for n in ("MARA", "SALTMERE", "GULL")])
>>> result = retrieve("How is Mara linked to the Gull?", graph=graph, entity_index=entities, num_seeds=2)
>>> [item.nodes for item in result.items]
[('GULL', 'SALTMERE', 'MARA')]
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .context import path_lookups, render_entity, render_path
from .graph import GraphStore
from .llm import LanguageModel
from .models import Entity, Relation, ScoredPath
from .prompts import KEYWORDS_PROMPT
from .pruning import _Params, afind_key_paths, find_key_paths
from .vectors import VectorHit, VectorIndex

__all__ = [
    "Keywords",
    "RetrievalParams",
    "RetrievalResult",
    "RetrievedItem",
    "aretrieve",
    "parse_keywords",
    "pick_seeds",
    "retrieve",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Keywords:
    high_level: tuple[str, ...] = ()
    low_level: tuple[str, ...] = ()


@dataclass(frozen=True)
class RetrievalParams:
    """The knobs of one retrieval; defaults are the paper's (K=15 paths, N=40 seeds, α=0.8, θ=0.05)."""

    top_k: int = 15
    num_seeds: int = 40
    alpha: float = 0.8
    theta: float = 0.05
    max_hops: int | None = 3
    paths_per_pair: int | None = None
    directed: bool = False

    def __post_init__(self) -> None:
        for name in ("top_k", "num_seeds"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if self.paths_per_pair is not None and (
                not isinstance(self.paths_per_pair, int) or self.paths_per_pair < 1):
            raise ValueError(f"paths_per_pair must be a positive int or None, got {self.paths_per_pair!r}")
        _Params.checked(self.alpha, self.theta, self.max_hops, self.directed)  # fail at construction

    def path_kwargs(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "theta": self.theta, "max_hops": self.max_hops, "top_k": self.top_k,
                "paths_per_pair": self.paths_per_pair, "directed": self.directed}


@dataclass(frozen=True)
class RetrievedItem:
    """One result: a path (``kind="path"``) or, as fill, one seed entity (``kind="entity"``)."""

    kind: Literal["path", "entity"]
    id: str
    text: str
    score: float
    nodes: tuple[str, ...]
    source_ids: tuple[str, ...]
    path: ScoredPath | None = None

    @property
    def hops(self) -> int:
        return len(self.nodes) - 1

    def metadata(self) -> dict[str, Any]:
        """JSON-friendly metadata for a framework document or node."""
        return {"kind": self.kind, "score": self.score, "nodes": list(self.nodes), "hops": self.hops,
                "source_ids": list(self.source_ids)}


@dataclass
class RetrievalResult:
    """Everything a query produced, best item first."""

    query: str
    keywords: Keywords
    seeds: list[str]
    items: list[RetrievedItem] = field(default_factory=list)

    @property
    def paths(self) -> list[RetrievedItem]:
        return [item for item in self.items if item.kind == "path"]


# -- keywords ---------------------------------------------------------------------------------------

_JSON_OBJECT = re.compile(r"\{.*\}", re.S)
_LINE = re.compile(r"^\W*(high|low)[\s_-]*(?:level)?[\s_-]*(?:keywords)?\W*[:=]\s*(.+)$", re.I | re.M)


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)):
        return ()
    return tuple(dict.fromkeys(s.strip().strip("\"'") for s in value if isinstance(s, str) and s.strip()))


def parse_keywords(text: str) -> Keywords | None:
    """Read high- and low-level keywords from a model's answer; ``None`` when nothing usable is there.

    Accepts a JSON object (also inside code fences or prose) with ``high_level``/``low_level`` keys
    (``high_level_keywords`` and the like too), or ``high: a, b`` / ``low: c`` lines. Never raises.

    >>> parse_keywords('```json\\n{"high_level": ["flood"], "low_level": ["Mara", "Gull"]}\\n```')
    Keywords(high_level=('flood',), low_level=('Mara', 'Gull'))
    >>> parse_keywords("I cannot help with that.") is None
    True
    """
    if not isinstance(text, str):
        return None
    high: tuple[str, ...] = ()
    low: tuple[str, ...] = ()
    data: Any = None
    match = _JSON_OBJECT.search(text)
    if match:
        try:
            data = json.loads(match.group(0))
        except (json.JSONDecodeError, RecursionError):
            pass
        if isinstance(data, dict):
            for key, value in data.items():
                lowered = str(key).lower()
                if lowered.startswith("high"):
                    high = _strings(value)
                elif lowered.startswith("low"):
                    low = _strings(value)
    if not isinstance(data, dict):  # no JSON object: try "high: a, b" / "low: c" lines
        for level, values in _LINE.findall(text):
            if level.lower() == "high":
                high = _strings(values)
            else:
                low = _strings(values)
    return Keywords(high, low) if high or low else None


def _keywords_or_query(query: str, answer: str | None) -> Keywords:
    parsed = parse_keywords(answer) if answer is not None else None
    return parsed or Keywords(low_level=(query,))


def _search_terms(query: str, keywords: Keywords) -> tuple[str, ...]:
    return keywords.low_level or keywords.high_level or (query,)


# -- seeds, paths, fill -----------------------------------------------------------------------------


def _hit_name(hit: VectorHit) -> str | None:
    name = hit.metadata.get("name") if isinstance(hit.metadata, Mapping) else None
    return str(name) if name else None


def pick_seeds(hit_lists: Sequence[Sequence[VectorHit]], num_seeds: int) -> list[str]:
    """Round-robin over the keywords' hit lists (best first) until ``num_seeds`` distinct entity names.

    >>> from pathrag import VectorHit
    >>> a = [VectorHit("1", 0.9, {"name": "A"}), VectorHit("2", 0.8, {"name": "B"})]
    >>> b = [VectorHit("2", 0.7, {"name": "B"}), VectorHit("3", 0.6, {"name": "C"})]
    >>> pick_seeds([a, b], 3)
    ['A', 'B', 'C']
    """
    seeds: dict[str, None] = {}
    longest = max((len(hits) for hits in hit_lists), default=0)
    for rank in range(longest):
        for hits in hit_lists:
            if len(seeds) >= num_seeds:
                return list(seeds)
            if rank < len(hits) and (name := _hit_name(hits[rank])):
                seeds.setdefault(name, None)
    return list(seeds)[:num_seeds]


def _item_id(kind: str, parts: Iterable[str]) -> str:
    return f"{kind}-" + hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:24]


def _assemble(
    query: str,
    keywords: Keywords,
    seeds: list[str],
    paths: list[ScoredPath],
    entities: Mapping[str, Entity],
    relations: Mapping[tuple[str, str], Relation],
    top_k: int,
) -> RetrievalResult:
    items = []
    for path in paths:
        sources: dict[str, None] = {}
        for name in path.nodes:
            sources.update(dict.fromkeys(entities[name].source_ids if name in entities else ()))
        for edge in path.edges:
            relation = relations.get(edge) or relations.get(edge[::-1])
            sources.update(dict.fromkeys(relation.source_ids if relation else ()))
        items.append(RetrievedItem("path", _item_id("path", path.nodes), render_path(path, entities, relations),
                                   path.score, path.nodes, tuple(sources), path))
    on_paths = {n for p in paths for n in p.nodes}
    for name in seeds:
        if len(items) >= top_k:
            break
        if name in on_paths or name not in entities:
            continue
        entity = entities[name]
        items.append(RetrievedItem("entity", _item_id("entity", [name]), render_entity(name, entity), 0.0, (name,),
                                   entity.source_ids))
    return RetrievalResult(query=query, keywords=keywords, seeds=seeds, items=items)


def _check(query: Any) -> str:
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    return query.strip()


def retrieve(
    query: str,
    *,
    graph: GraphStore,
    entity_index: VectorIndex,
    llm: LanguageModel | None = None,
    params: RetrievalParams | None = None,
    **overrides: Any,
) -> RetrievalResult:
    """Retrieve the key paths for ``query`` (sync). An empty query gives an empty result.

    ``overrides`` are :class:`RetrievalParams` fields (``top_k=5``...) applied on top of ``params``.
    """
    query = _check(query)
    params = _params(params, overrides)
    if not query or params.top_k == 0:
        return RetrievalResult(query=query, keywords=Keywords(), seeds=[])
    answer = None
    if llm is not None:
        try:
            answer = llm.complete(KEYWORDS_PROMPT.format(question=query))
        except Exception as exc:  # the query text still works as a keyword
            logger.warning("keyword extraction failed, searching with the query text: %r", exc)
    keywords = _keywords_or_query(query, answer)
    hit_lists = [entity_index.query(term, params.num_seeds) for term in _search_terms(query, keywords)]
    seeds = pick_seeds(hit_lists, params.num_seeds)
    paths = find_key_paths(graph, seeds, **params.path_kwargs())
    names, pairs = path_lookups(paths, seeds)
    return _assemble(query, keywords, seeds, paths, graph.get_entities(names), graph.get_relations(pairs),
                     params.top_k)


async def aretrieve(
    query: str,
    *,
    graph: GraphStore,
    entity_index: VectorIndex,
    llm: LanguageModel | None = None,
    params: RetrievalParams | None = None,
    **overrides: Any,
) -> RetrievalResult:
    """Async twin of :func:`retrieve`."""
    query = _check(query)
    params = _params(params, overrides)
    if not query or params.top_k == 0:
        return RetrievalResult(query=query, keywords=Keywords(), seeds=[])
    answer = None
    if llm is not None:
        try:
            answer = await llm.acomplete(KEYWORDS_PROMPT.format(question=query))
        except Exception as exc:
            logger.warning("keyword extraction failed, searching with the query text: %r", exc)
    keywords = _keywords_or_query(query, answer)
    hit_lists = [await entity_index.aquery(term, params.num_seeds) for term in _search_terms(query, keywords)]
    seeds = pick_seeds(hit_lists, params.num_seeds)
    paths = await afind_key_paths(graph, seeds, **params.path_kwargs())
    names, pairs = path_lookups(paths, seeds)
    return _assemble(query, keywords, seeds, paths, await graph.aget_entities(names),
                     await graph.aget_relations(pairs), params.top_k)


def _params(params: RetrievalParams | None, overrides: Mapping[str, Any]) -> RetrievalParams:
    base = params or RetrievalParams()
    if not overrides:
        return base
    unknown = set(overrides) - set(RetrievalParams.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown retrieval parameter(s): {', '.join(sorted(unknown))}")
    return RetrievalParams(**{**base.__dict__, **overrides})
