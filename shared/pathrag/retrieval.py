"""Query time, one way through: query → keywords → seeds → passages → key paths → items.

* **Keywords.** With an LLM, :data:`~pathrag.prompts.KEYWORDS_PROMPT` splits the question into
  high-level (themes) and low-level (names) keywords. Without one, or when its answer is unusable,
  the query text itself is the keyword: retrieval never dead-ends on the model.
* **Seeds.** Each low-level keyword (else each high-level one) asks the entity index for its nearest
  entities; seeds are taken round-robin over those lists until ``num_seeds`` distinct ones. In the
  evidence context the entities the question names come first (:mod:`pathrag.linking`, one batched
  lookup, no model).
* **Paths.** ``context="paths"`` (the paper): :func:`pathrag.find_key_paths` between the seeds, each
  rendered as a walk (:func:`pathrag.context.render_path`). ``context="evidence"`` (the default): the
  query-aware paths of :mod:`pathrag.query_paths`, chains of the ``num_relations`` relations most like
  the question, weighted by the rank of the passage they were stated in, each one line of relation
  statements (:func:`pathrag.context.render_chain`). Without a ``relation_index`` (or with
  ``num_relations=0``) the evidence context's paths are the paper's, written as chains.
  Each path carries the union of its entities' and relations' source chunks.
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

Bad input: a query that is not a string is a ``TypeError``; one longer than :data:`MAX_QUERY_CHARS`
characters a ``ValueError``; control characters (NUL...) count as spaces; an empty query gives an
empty result.

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

import heapq
import json
import logging
import re
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .context import path_lookups, path_names, path_pairs, path_relations, render_chain, render_entity, render_path
from .graph import GraphStore
from .ids import retrieved_item_id
from .linking import linked_names, name_spans
from .llm import LanguageModel, as_language_model, complete_sync
from .models import Entity, Keywords, Relation, RetrievalResult, RetrievedItem, ScoredPath
from .params import RetrievalParams
from .prompts import KEYWORDS_PROMPT
from .pruning import afind_key_paths, aspread_resources, find_key_paths, spread_resources
from .query_paths import Chain, chain_relations, merge_chains, weigh_relations
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


def pick_seeds(hit_lists: Sequence[Sequence[VectorHit]], num_seeds: int, first: Sequence[str] = ()) -> list[str]:
    """Round-robin over the keywords' hit lists (best first) until ``num_seeds`` distinct entity names,
    after the names in ``first`` (the entities the question names).

    >>> from pathrag import VectorHit
    >>> a = [VectorHit("1", 0.9, {"name": "A"}), VectorHit("2", 0.8, {"name": "B"})]
    >>> b = [VectorHit("2", 0.7, {"name": "B"}), VectorHit("3", 0.6, {"name": "C"})]
    >>> pick_seeds([a, b], 3)
    ['A', 'B', 'C']
    """
    seeds: dict[str, None] = dict.fromkeys(first[:num_seeds])
    longest = max((len(hits) for hits in hit_lists), default=0)
    for rank in range(longest):
        for hits in hit_lists:
            if len(seeds) >= num_seeds:
                return list(seeds)
            if rank < len(hits) and (name := _hit_name(hits[rank])):
                seeds.setdefault(name, None)
    return list(seeds)[:num_seeds]


def _paper_path_items(
    paths: Sequence[ScoredPath],
    entities: Mapping[str, Entity],
    relations: Mapping[tuple[str, str], Relation],
    as_chains: bool,
) -> list[RetrievedItem]:
    """The paper's key paths as items: written as walks, or as chains (the evidence context's way)."""
    items = []
    for path in paths:
        names = path_names(path)  # paths found in a GraphStore: entity names
        sources: dict[str, None] = {}
        for name in names:
            sources.update(dict.fromkeys(entities[name].source_ids if name in entities else ()))
        hops = path_relations(names, relations)
        for relation in hops:
            sources.update(dict.fromkeys(relation.source_ids if relation else ()))
        text = render_chain(names, hops) if as_chains else render_path(path, entities, relations)
        items.append(
            RetrievedItem("path", retrieved_item_id("path", names), text, path.score, names, tuple(sources), path)
        )
    return items


def _chain_items(chains: Sequence[Chain]) -> list[RetrievedItem]:
    """Query-aware paths as items: one line of relation statements each, scored by their weights."""
    return [
        RetrievedItem(
            "path",
            retrieved_item_id("path", chain.nodes),
            render_chain(chain.nodes, chain.relations),
            chain.score,
            tuple(chain.nodes),
            chain.source_ids,
            ScoredPath(nodes=tuple(chain.nodes), score=chain.score),
        )
        for chain in chains
    ]


def _fill(
    paths: Sequence[RetrievedItem], seeds: Sequence[str], entities: Mapping[str, Entity], top_k: int
) -> list[RetrievedItem]:
    """The best-matching seeds on no path, as single entities, until ``top_k`` items."""
    on_paths = {n for item in paths for n in item.nodes}
    fill: list[RetrievedItem] = []
    for name in seeds:
        if len(paths) + len(fill) >= top_k:
            break
        if name in on_paths or name not in entities:
            continue
        entity = entities[name]
        fill.append(
            RetrievedItem(
                "entity",
                retrieved_item_id("entity", [name]),
                render_entity(name, entity),
                0.0,
                (name,),
                entity.source_ids,
            )
        )
    return fill


# -- passages ---------------------------------------------------------------------------------------


def _passage_hits(index: VectorIndex, hits: Sequence[VectorHit]) -> list[VectorHit]:
    """Hits with their text: from the hit, else from the index (:func:`_texts`); hits with none are dropped."""
    texts = _texts(index, [hit.id for hit in hits if not hit.text])
    found = []
    for hit in hits:
        text = hit.text or texts.get(hit.id, "")
        if text.strip():
            found.append(VectorHit(hit.id, hit.score, hit.metadata, text))
    return found


def _texts(index: VectorIndex, ids: Sequence[str]) -> dict[str, str]:
    """The texts the index holds for ``ids``: in one read where it has ``get_many`` (the embedded store's),
    else through its ``get(id)`` for each (none without a ``get``)."""
    if not ids:
        return {}
    many = getattr(index, "get_many", None)
    if callable(many):
        return {item_id: item.text or "" for item_id, item in many(ids).items()}
    lookup = getattr(index, "get", None)
    if not callable(lookup):
        return {}
    return {item_id: getattr(lookup(item_id), "text", "") or "" for item_id in dict.fromkeys(ids)}


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
    extra = heapq.nsmallest(limit, (cid for cid in gathered if cid not in returned), key=lambda c: (-gathered[c], c))
    return _passage_hits(index, [VectorHit(cid, floor) for cid in extra])


def _beyond(resources: Mapping[str, float], anchors: Sequence[str]) -> list[str]:
    """Entities the flow reached other than the anchors (what the anchor passage already says is no news)."""
    skip = set(anchors)
    return [name for name in resources if name not in skip]


#: The longest query accepted, in characters: ten thousand is pages of text, far beyond a question.
MAX_QUERY_CHARS = 10_000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _check(query: Any) -> str:
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(
            f"query is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,} are accepted (ask a question, "
            "not a document)"
        )
    return _CONTROL.sub(" ", query).strip()


def retrieve(
    query: str,
    *,
    graph: GraphStore,
    entity_index: VectorIndex,
    passage_index: VectorIndex | None = None,
    relation_index: VectorIndex | None = None,
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
        relation_index: relation vectors (hits carry the relation's ``source`` and ``target`` in their
            metadata); the evidence context's query-aware paths are built from them. Without it, the
            paths are the paper's key paths between the seeds.
        llm: splits the query into keywords; without it the query is the keyword.
        params: a :class:`RetrievalParams`; ``overrides`` are its fields (``top_k=5``...) applied on top.

    Raises:
        TypeError: ``query`` is not a string, or an override is not a :class:`RetrievalParams` field.
        ValueError: an override has an invalid value, or the query is longer than :data:`MAX_QUERY_CHARS`.
    """
    return _run(_retrieval(query, graph, entity_index, passage_index, relation_index, llm, _params(params, overrides)))


async def aretrieve(
    query: str,
    *,
    graph: GraphStore,
    entity_index: VectorIndex,
    passage_index: VectorIndex | None = None,
    relation_index: VectorIndex | None = None,
    llm: LanguageModel | None = None,
    params: RetrievalParams | None = None,
    **overrides: Any,
) -> RetrievalResult:
    """Async twin of :func:`retrieve`: the same steps, each awaited."""
    return await _arun(
        _retrieval(query, graph, entity_index, passage_index, relation_index, llm, _params(params, overrides))
    )


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
    relation_index: VectorIndex | None,
    llm: LanguageModel | None,
    params: RetrievalParams,
) -> Generator[_Step, Any, RetrievalResult]:
    """The retrieval, yielding each read as a :class:`_Step` and receiving its result (or its error)."""
    query = _check(query)
    result = RetrievalResult(
        query=query, keywords=Keywords(), seeds=[], context=params.context, max_tokens=params.max_tokens
    )
    if not query or params.top_k == 0:
        return result
    answer = None
    if llm is not None:
        model = as_language_model(llm)  # outside the try: a wrong type is an error, not a reason to fall back
        prompt = KEYWORDS_PROMPT.format(question=query)
        try:  # complete_sync runs async-only models too
            answer = yield _Step(lambda: complete_sync(model, prompt), lambda: model.acomplete(prompt))
        except Exception as exc:  # the query text still works as a keyword
            logger.warning("keyword extraction failed, searching with the query text: %r", exc)
    result.keywords = _keywords_or_query(query, answer)
    evidence = params.context == "evidence"
    named: list[str] = []
    if evidence:  # the paper's seeds come from the keywords alone
        spans = name_spans(query)
        keys = [span.key for span in spans]
        found = (yield _Step(lambda: graph.get_entities(keys), lambda: graph.aget_entities(keys))) if keys else {}
        named = linked_names(spans, found)
    hit_lists = []
    for term in _search_terms(query, result.keywords):
        hit_lists.append((yield _query_step(entity_index, term, params.num_seeds)))
    seeds = result.seeds = pick_seeds(hit_lists, params.num_seeds, first=named)
    passages: list[RetrievedItem] = []
    if evidence and passage_index is not None and params.num_passages > 0:
        passages = yield from _ranked_passages(query, graph, passage_index, seeds, params)
    entities: Mapping[str, Entity] | None = None  # the seeds' entities, for the fill
    if evidence and relation_index is not None and params.num_relations > 0:
        paths = yield from _query_paths(query, graph, relation_index, passages, named, params)
    else:
        found_paths = yield _Step(
            lambda: find_key_paths(graph, seeds, params), lambda: afind_key_paths(graph, seeds, params)
        )
        names, pairs = path_lookups(found_paths, seeds)
        relations = yield _Step(lambda: graph.get_relations(pairs), lambda: graph.aget_relations(pairs))
        entities = yield _Step(lambda: graph.get_entities(names), lambda: graph.aget_entities(names))
        paths = _paper_path_items(found_paths, entities, relations, as_chains=evidence)
    if len(paths) < params.top_k and seeds:
        if entities is None:
            entities = yield _Step(lambda: graph.get_entities(seeds), lambda: graph.aget_entities(seeds))
        paths += _fill(paths, seeds, entities, params.top_k)
    result.items = [*paths, *passages]
    return result


def _ranked_passages(
    query: str, graph: GraphStore, index: VectorIndex, seeds: Sequence[str], params: RetrievalParams
) -> Generator[_Step, Any, list[RetrievedItem]]:
    """The candidate passages, ranked by similarity and the flow from the best one's entities."""
    found = yield _query_step(index, query, params.num_passages)
    hits = _passage_hits(index, found)
    if not hits:
        return []
    anchors = _anchor_entities(hits[0], seeds, {})
    if not anchors:  # the index wrote no entity list: the seeds extracted from the anchor passage
        cited = yield _Step(lambda: graph.get_entities(seeds), lambda: graph.aget_entities(seeds))
        anchors = _anchor_entities(hits[0], seeds, cited)
    resources = yield _Step(
        lambda: spread_resources(graph, anchors, params), lambda: aspread_resources(graph, anchors, params)
    )
    beyond = _beyond(resources, anchors)
    reached = yield _Step(lambda: graph.get_entities(beyond), lambda: graph.aget_entities(beyond))
    gathered = _collected(resources, reached)
    hits += _reached_hits(index, hits, gathered, params.num_passages)
    return _passage_items(hits, gathered)[: params.num_passages]


def _query_paths(
    query: str,
    graph: GraphStore,
    index: VectorIndex,
    passages: Sequence[RetrievedItem],
    named: Sequence[str],
    params: RetrievalParams,
) -> Generator[_Step, Any, list[RetrievedItem]]:
    """The query-aware key paths (:mod:`pathrag.query_paths`), and the paper's key paths between the
    entities the question names, all scored by the weights of their relations."""
    hits = yield _query_step(index, query, params.num_relations)
    paired = [(hit, pair) for hit in hits if (pair := _hit_pair(hit)) is not None]
    pairs = list(dict.fromkeys(pair for _, pair in paired))
    relations = yield _Step(lambda: graph.get_relations(pairs), lambda: graph.aget_relations(pairs))
    candidates = [(relations[pair], hit.score) for hit, pair in paired if pair in relations]
    ranks = {item.id: rank for rank, item in enumerate(passages)} if passages else None
    weighted = weigh_relations(_unique(candidates), ranks, alpha=params.alpha)
    chains = chain_relations(weighted, origins=set(named), max_paths=params.top_k, max_hops=params.max_hops)
    if len(named) >= 2:  # the paper's flow joins the named entities; relations like the question score them
        joining = yield _Step(
            lambda: find_key_paths(graph, named, params), lambda: afind_key_paths(graph, named, params)
        )
        hops = [pair for path in joining for pair in path_pairs(path)]
        found = (yield _Step(lambda: graph.get_relations(hops), lambda: graph.aget_relations(hops))) if hops else {}
        chains = merge_chains(chains, joining, found, weighted, params.top_k, set(named))
    return _chain_items(chains)


def _hit_pair(hit: VectorHit) -> tuple[str, str] | None:
    """The ``(source, target)`` a relation vector's metadata names (``None`` when it names none)."""
    meta = hit.metadata if isinstance(hit.metadata, Mapping) else {}
    source, target = meta.get("source"), meta.get("target")
    return (source, target) if isinstance(source, str) and isinstance(target, str) else None


def _unique(candidates: Sequence[tuple[Relation, float]]) -> list[tuple[Relation, float]]:
    """One candidate per relation (an index may hold a pair's vector twice, e.g. both ways round)."""
    best: dict[frozenset[str], tuple[Relation, float]] = {}
    for relation, score in candidates:
        key = frozenset(relation.pair)
        if key not in best or score > best[key][1]:
            best[key] = (relation, score)
    return sorted(best.values(), key=lambda c: -c[1])


def _params(params: RetrievalParams | None, overrides: Mapping[str, Any]) -> RetrievalParams:
    if params is not None and not isinstance(params, RetrievalParams):
        raise TypeError(f"params must be a RetrievalParams, got {type(params).__name__}")
    return (params or RetrievalParams()).override(**overrides)
