"""Query time, one way through: query → keywords → seeds → key paths (+ source passages) → items.

* **Keywords.** With an LLM, :data:`~pathrag.prompts.KEYWORDS_PROMPT` splits the question into
  high-level (themes) and low-level (names) keywords. Without one, or when its answer is unusable,
  the query text itself is the keyword: retrieval never dead-ends on the model.
* **Seeds.** Each low-level keyword (else each high-level one) asks the entity index for its nearest
  entities; seeds are taken round-robin over those lists until ``num_seeds`` distinct ones.
* **Paths** come from :func:`pathrag.find_key_paths`; each is rendered as text (:mod:`pathrag.context`)
  with the union of its entities' and relations' source chunks.
* **Fill.** When fewer than ``top_k`` paths exist, the best-matching seeds not on any path are added as
  single entities, so a graph that knows something relevant never returns nothing.
* **Passages** (``context="evidence"``, the default, when a ``passage_index`` is given). The
  ``num_passages`` chunks nearest the query are the candidates. The best of them is the *anchor*: its
  entities start the same flow as the paths (:func:`pathrag.spread_resources`), and every entity
  the flow reaches beyond them shares its resource equally among the passages it comes from. Up to
  ``num_passages`` passages the flow reached but the search did not return join the candidates, as
  similar as the least similar one (they can be no more similar than that). A passage's score is its
  similarity ``s`` plus ``|s| * g / g_max``, where ``g`` is the resource it collected and ``g_max`` the
  most any candidate collected: graph evidence can at most double a passage's similarity (or lift a
  negative one to zero), and a passage that only resembles the question keeps its rank. The best
  ``num_passages`` are returned. This is what brings in the second hop of a multi-hop question: a
  passage about the entity the anchor points to. The paper's paths-only behaviour is
  ``context="paths"``.

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
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .context import path_lookups, path_names, path_pairs, render_entity, render_path
from .graph import GraphStore
from .llm import LanguageModel, as_language_model, complete_sync
from .models import Entity, Keywords, Relation, RetrievalResult, RetrievedItem, ScoredPath
from .params import RetrievalParams
from .prompts import KEYWORDS_PROMPT
from .pruning import afind_key_paths, aspread_resources, find_key_paths, spread_resources
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
T = TypeVar("T")


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
    params: RetrievalParams,
) -> RetrievalResult:
    items = []
    for path in paths:
        names = path_names(path)  # paths found in a GraphStore: entity names
        sources: dict[str, None] = {}
        for name in names:
            sources.update(dict.fromkeys(entities[name].source_ids if name in entities else ()))
        for source, target in path_pairs(path):
            relation = relations.get((source, target)) or relations.get((target, source))
            sources.update(dict.fromkeys(relation.source_ids if relation else ()))
        items.append(
            RetrievedItem(
                "path",
                _item_id("path", names),
                render_path(path, entities, relations),
                path.score,
                names,
                tuple(sources),
                path,
            )
        )
    on_paths = {n for p in paths for n in p.nodes}
    for name in seeds:
        if len(items) >= params.top_k:
            break
        if name in on_paths or name not in entities:
            continue
        entity = entities[name]
        items.append(
            RetrievedItem(
                "entity", _item_id("entity", [name]), render_entity(name, entity), 0.0, (name,), entity.source_ids
            )
        )
    return RetrievalResult(query=query, keywords=keywords, seeds=seeds, items=items, context=params.context)


# -- passages ---------------------------------------------------------------------------------------


def _passage_hits(index: VectorIndex, hits: Sequence[VectorHit]) -> list[VectorHit]:
    """Hits with their text: from the hit, else from the index's ``get(id)``; hits with none are dropped."""
    lookup = getattr(index, "get", None)
    found = []
    for hit in hits:
        text = hit.text
        if not text and callable(lookup):
            text = getattr(lookup(hit.id), "text", "") or ""
        if text.strip():
            found.append(VectorHit(hit.id, hit.score, hit.metadata, text))
    return found


def _anchor_entities(anchor: VectorHit, seeds: Sequence[str], entities: Mapping[str, Entity]) -> list[str]:
    """The entities of the best passage: its ``entities`` metadata (written by the index and the
    importers), else the seeds that cite it."""
    listed = anchor.metadata.get("entities") if isinstance(anchor.metadata, Mapping) else None
    if isinstance(listed, (list, tuple)) and listed:
        return sorted({str(name) for name in listed})
    return sorted(name for name in seeds if name in entities and anchor.id in entities[name].source_ids)


def _collected(resources: Mapping[str, float], reached: Mapping[str, Entity]) -> dict[str, float]:
    """Resource per passage: each reached entity shares its resource equally among the passages it
    comes from (an entity named everywhere says little about any one passage)."""
    gathered: dict[str, float] = {}
    for name, entity in reached.items():
        if not entity.source_ids:
            continue
        share = resources.get(name, 0.0) / len(entity.source_ids)
        for cid in entity.source_ids:
            gathered[cid] = gathered.get(cid, 0.0) + share
    return gathered


def _passage_items(hits: Sequence[VectorHit], gathered: Mapping[str, float]) -> list[RetrievedItem]:
    """Passages best first: similarity plus ``|similarity| * g / g_max`` (graph evidence at most doubles a
    positive similarity and lifts a negative one at most to zero)."""
    best = max((gathered.get(hit.id, 0.0) for hit in hits), default=0.0)
    scored = [
        (hit.score + abs(hit.score) * (gathered.get(hit.id, 0.0) / best if best > 0 else 0.0), hit) for hit in hits
    ]
    scored.sort(key=lambda pair: (-pair[0], pair[1].id))
    return [RetrievedItem("passage", hit.id, hit.text, score, (), (hit.id,)) for score, hit in scored]


def _reached_hits(
    index: VectorIndex, hits: Sequence[VectorHit], gathered: Mapping[str, float], limit: int
) -> list[VectorHit]:
    """Passages the flow reached that the similarity search did not return (most resource first, at
    most ``limit``), with their text from the index's ``get``. Each is scored as similar as the least
    similar candidate: not being among the candidates, it is at most that similar."""
    if not hits:
        return []
    returned = {hit.id for hit in hits}
    floor = min(hit.score for hit in hits)
    extra = [cid for cid in sorted(gathered, key=lambda c: (-gathered[c], c)) if cid not in returned][:limit]
    return _passage_hits(index, [VectorHit(cid, floor) for cid in extra])


def _beyond(resources: Mapping[str, float], anchors: Sequence[str]) -> list[str]:
    """Entities the flow reached other than the anchors (what the anchor passage already says is no news)."""
    skip = set(anchors)
    return [name for name in resources if name not in skip]


def _check(query: Any) -> str:
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    return query.strip()


def retrieve(
    query: str,
    *,
    graph: GraphStore,
    entity_index: VectorIndex,
    passage_index: VectorIndex | None = None,
    llm: LanguageModel | None = None,
    params: RetrievalParams | None = None,
    **overrides: Any,
) -> RetrievalResult:
    """Retrieve the key paths for ``query`` and, with ``passage_index``, its ranked source passages.

    An empty query gives an empty result.

    Args:
        query: the user's question.
        graph: the knowledge graph.
        entity_index: entity vectors (hits carry the entity ``name`` in their metadata).
        passage_index: chunk vectors whose hit ids are the chunk ids that entities cite; used by
            ``context="evidence"`` (the default). Without it, only paths and fill are returned.
        llm: splits the query into keywords; without it the query is the keyword.
        params: a :class:`RetrievalParams`; ``overrides`` are its fields (``top_k=5``...) applied on top.

    Raises:
        TypeError: ``query`` is not a string, or an override is not a :class:`RetrievalParams` field.
        ValueError: an override has an invalid value.
    """
    return _run(_retrieval(query, graph, entity_index, passage_index, llm, _params(params, overrides)))


async def aretrieve(
    query: str,
    *,
    graph: GraphStore,
    entity_index: VectorIndex,
    passage_index: VectorIndex | None = None,
    llm: LanguageModel | None = None,
    params: RetrievalParams | None = None,
    **overrides: Any,
) -> RetrievalResult:
    """Async twin of :func:`retrieve`: the same steps, each awaited."""
    return await _arun(_retrieval(query, graph, entity_index, passage_index, llm, _params(params, overrides)))


@dataclass(frozen=True)
class _Step:
    """One read of a retrieval, as a sync call and its async twin; :func:`retrieve` runs the first and
    :func:`aretrieve` awaits the second, so the retrieval itself is written once (:func:`_retrieval`)."""

    run: Callable[[], Any]
    arun: Callable[[], Awaitable[Any]]


def _run(steps: Generator[_Step, Any, T]) -> T:
    """Drive ``steps`` with sync calls; a step's exception is raised inside ``steps``, where it was asked."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            result: T = done.value  # the generator's return value (StopIteration types it Any)
            return result
        try:
            value, error = step.run(), None
        except Exception as exc:
            value, error = None, exc


async def _arun(steps: Generator[_Step, Any, T]) -> T:
    """Async twin of :func:`_run`."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            result: T = done.value  # the generator's return value (StopIteration types it Any)
            return result
        try:
            value, error = await step.arun(), None
        except Exception as exc:
            value, error = None, exc


def _query_step(index: VectorIndex, text: str, k: int) -> _Step:
    """The step searching ``index`` for the ``k`` items nearest ``text``."""
    return _Step(lambda: index.query(text, k), lambda: index.aquery(text, k))


def _retrieval(
    query: str,
    graph: GraphStore,
    entity_index: VectorIndex,
    passage_index: VectorIndex | None,
    llm: LanguageModel | None,
    params: RetrievalParams,
) -> Generator[_Step, Any, RetrievalResult]:
    """The retrieval, yielding each read as a :class:`_Step` and receiving its result (or its error)."""
    query = _check(query)
    if not query or params.top_k == 0:
        return RetrievalResult(query=query, keywords=Keywords(), seeds=[], context=params.context)
    answer = None
    if llm is not None:
        model = as_language_model(llm)  # outside the try: a wrong type is an error, not a reason to fall back
        prompt = KEYWORDS_PROMPT.format(question=query)
        try:  # complete_sync runs async-only models too
            answer = yield _Step(lambda: complete_sync(model, prompt), lambda: model.acomplete(prompt))
        except Exception as exc:  # the query text still works as a keyword
            logger.warning("keyword extraction failed, searching with the query text: %r", exc)
    keywords = _keywords_or_query(query, answer)
    hit_lists = []
    for term in _search_terms(query, keywords):
        hit_lists.append((yield _query_step(entity_index, term, params.num_seeds)))
    seeds = pick_seeds(hit_lists, params.num_seeds)
    paths = yield _Step(lambda: find_key_paths(graph, seeds, params), lambda: afind_key_paths(graph, seeds, params))
    names, pairs = path_lookups(paths, seeds)
    entities = yield _Step(lambda: graph.get_entities(names), lambda: graph.aget_entities(names))
    relations = yield _Step(lambda: graph.get_relations(pairs), lambda: graph.aget_relations(pairs))
    result = _assemble(query, keywords, seeds, paths, entities, relations, params)
    if params.context != "evidence" or passage_index is None or params.num_passages == 0:
        return result
    index = passage_index
    found = yield _Step(
        lambda: index.query(query, params.num_passages), lambda: index.aquery(query, params.num_passages)
    )
    hits = _passage_hits(index, found)
    if hits:
        anchors = _anchor_entities(hits[0], seeds, entities)
        resources = yield _Step(
            lambda: spread_resources(graph, anchors, params), lambda: aspread_resources(graph, anchors, params)
        )
        beyond = _beyond(resources, anchors)
        reached = yield _Step(lambda: graph.get_entities(beyond), lambda: graph.aget_entities(beyond))
        gathered = _collected(resources, reached)
        hits += _reached_hits(index, hits, gathered, params.num_passages)
        result.items.extend(_passage_items(hits, gathered)[: params.num_passages])
    return result


def _params(params: RetrievalParams | None, overrides: Mapping[str, Any]) -> RetrievalParams:
    if params is not None and not isinstance(params, RetrievalParams):
        raise TypeError(f"params must be a RetrievalParams, got {type(params).__name__}")
    return (params or RetrievalParams()).override(**overrides)
