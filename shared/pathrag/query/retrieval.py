"""Query time, one way through: query → keywords → seeds → passages ↔ key paths → items.

* **Keywords.** With an LLM, :data:`~pathrag.llm.prompts.KEYWORDS_PROMPT` splits the question into
  high-level (themes) and low-level (names) keywords. Without one, or when its answer is unusable,
  the query text itself is the keyword: retrieval never dead-ends on the model.
* **Seeds.** Each low-level keyword (else each high-level one) asks the entity index for its nearest
  entities; seeds are taken round-robin over those lists until ``num_seeds`` distinct ones. In the
  evidence context the entities the question names come first (:mod:`pathrag.query.linking`, one batched
  lookup, no model).
* **Paths.** ``context="paths"`` (the paper): :func:`pathrag.find_key_paths` between the seeds, each
  rendered as a walk (:func:`pathrag.query.context.render_path`). ``context="evidence"`` (the default): the
  query-aware paths of :mod:`pathrag.query.query_paths`, chains of the ``num_relations`` relations most like
  the question, weighted by the rank of the passage they were stated in, each one line of relation
  statements (:func:`pathrag.query.context.render_chain`): the ``top_k`` key paths, then (``more_paths``)
  the further paths the relations they leave out form. Without a ``relation_index`` (or with
  ``num_relations=0``) the evidence context's paths are the paper's, written as chains.
  Each path carries the union of its entities' and relations' source chunks.
* **Fill.** When fewer than ``top_k`` paths exist, the best-matching seeds not on any path are added as
  single entities, so a graph that knows something relevant never returns nothing.
* **Passages** (``context="evidence"``, the default, when a ``passage_index`` is given): the
  ``num_passages`` chunks nearest the query are the candidates, and :mod:`pathrag.query.passage_rank` ranks
  passages by the paper's flow run to convergence (a personalized PageRank) over entities and
  passages, in two stages of one flow: from what the candidates and the question's named entities say,
  which ranks the passages the key paths' relations are weighted by; then, continued, from the
  passages the key paths were stated in as well. The best ``num_passages`` are returned, passages no
  similarity reached among them (a multi-hop question's second and third hops).

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

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..graphs.base import GraphStore
from ..ids import retrieved_item_id
from ..llm.client import LanguageModel, as_language_model, complete_sync
from ..llm.prompts import KEYWORDS_PROMPT
from ..models import Entity, Keywords, Relation, RetrievalResult, RetrievedItem, ScoredPath
from ..params import RetrievalParams
from ..vectors.base import VectorHit, VectorIndex, VectorItem
from .context import path_lookups, path_names, path_pairs, path_relations, render_chain, render_entity, render_path
from .keyword_check import checked_keywords
from .linking import linked_names, name_spans
from .passage_rank import PassageRank, named_source, paths_source, ranked_ids, read_passages, similar_source, spread
from .pruning import afind_key_paths, find_key_paths
from .query_paths import Chain, chain_relations, merge_chains, more_chains, weigh_relations
from .steps import Step, Steps, arun, query_step, run

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
    checked = checked_keywords(query, parsed) if parsed is not None else None  # a parroted answer is not used
    if parsed is not None and checked is None:
        logger.warning(
            "the keyword answer names nothing in the question (or copies the prompt's example): "
            "searching with the question"
        )
    return checked or Keywords(low_level=(query,))


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


def _with_text(hits: Sequence[VectorHit], texts: Mapping[str, VectorItem]) -> list[VectorHit]:
    """Hits with their text: from the hit, else from ``texts`` (items read from the index); hits with
    none are dropped."""
    found = []
    for hit in hits:
        text = hit.text or (texts[hit.id].text if hit.id in texts else "")
        if text and text.strip():
            found.append(VectorHit(hit.id, hit.score, hit.metadata, text))
    return found


def _passage_items(ids: Sequence[str], scores: Mapping[str, float], texts: Mapping[str, str]) -> list[RetrievedItem]:
    """Passages with a text, in the order given, scored by ``scores``."""
    return [
        RetrievedItem("passage", cid, texts[cid], scores.get(cid, 0.0), (), (cid,)) for cid in ids if texts.get(cid)
    ]


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
    return run(_retrieval(query, graph, entity_index, passage_index, relation_index, llm, _params(params, overrides)))


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
    return await arun(
        _retrieval(query, graph, entity_index, passage_index, relation_index, llm, _params(params, overrides))
    )


def _retrieval(
    query: str,
    graph: GraphStore,
    entity_index: VectorIndex,
    passage_index: VectorIndex | None,
    relation_index: VectorIndex | None,
    llm: LanguageModel | None,
    params: RetrievalParams,
) -> Steps[RetrievalResult]:
    """The retrieval, yielding each read as a :class:`~pathrag.query.steps.Step` and receiving its result
    (or its error)."""
    query = _check(query)
    result = RetrievalResult(
        query=query,
        keywords=Keywords(),
        seeds=[],
        context=params.context,
        max_tokens=params.max_tokens,
        top_k=params.top_k,
    )
    if not query or params.top_k == 0:
        return result
    result.keywords = yield from _keywords(query, llm)
    evidence = params.context == "evidence"
    named = (yield from _named(query, graph)) if evidence else {}  # the paper's seeds: the keywords alone
    hit_lists = []
    for term in _search_terms(query, result.keywords):
        hit_lists.append((yield query_step(entity_index, term, params.num_seeds)))
    seeds = result.seeds = pick_seeds(hit_lists, params.num_seeds, first=list(named))
    flow: PassageRank | None = None  # the passages' ranking, when there are passages
    candidates: list[VectorHit] = []
    if evidence and passage_index is not None and params.num_passages > 0:
        candidates = yield from _candidates(query, passage_index, params.num_passages)
        if candidates:
            flow = yield from _first_flow(graph, passage_index, candidates, named, params)
    paths, entities = yield from _paths(query, graph, relation_index, seeds, list(named), flow, candidates, params)
    passages: list[RetrievedItem] = []
    if flow is not None and passage_index is not None:  # continued with what the key paths found
        flow.add_source(paths_source(paths[: params.top_k]))
        flow = yield from spread(flow, graph, passage_index, directed=params.directed)
        passages = yield from _ranked_passages(flow, passage_index, candidates, params.num_passages)
    if len(paths) < params.top_k and seeds:
        if entities is None:
            entities = yield Step(lambda: graph.get_entities(seeds), lambda: graph.aget_entities(seeds))
        paths += _fill(paths, seeds, entities, params.top_k)
    result.items = [*paths, *passages]
    return result


def _keywords(query: str, llm: LanguageModel | None) -> Steps[Keywords]:
    """The keyword model's split of the query (the query itself without a model or a usable answer)."""
    answer = None
    if llm is not None:
        model = as_language_model(llm)  # outside the try: a wrong type is an error, not a reason to fall back
        prompt = KEYWORDS_PROMPT.format(question=query)
        try:  # complete_sync runs async-only models too
            answer = yield Step(lambda: complete_sync(model, prompt), lambda: model.acomplete(prompt))
        except Exception as exc:  # the query text still works as a keyword
            logger.warning("keyword extraction failed, searching with the query text: %r", exc)
    return _keywords_or_query(query, answer)


def _named(query: str, graph: GraphStore) -> Steps[dict[str, Entity]]:
    """The entities the question names (:mod:`pathrag.query.linking`), in one batched read."""
    spans = name_spans(query)
    keys = [span.key for span in spans]
    found = (yield Step(lambda: graph.get_entities(keys), lambda: graph.aget_entities(keys))) if keys else {}
    return {name: found[name] for name in linked_names(spans, found)}


def _candidates(query: str, index: VectorIndex, k: int) -> Steps[list[VectorHit]]:
    """The ``k`` passages nearest the query, with their texts (read where the hits carry none)."""
    found = yield query_step(index, query, k)
    missing = [hit.id for hit in found if not hit.text]
    read = (yield Step(lambda: read_passages(index, missing), None)) if missing else {}
    return _with_text(found, read)


def _first_flow(
    graph: GraphStore,
    index: VectorIndex,
    candidates: Sequence[VectorHit],
    named: Mapping[str, Entity],
    params: RetrievalParams,
) -> Steps[PassageRank]:
    """The flow's first stage: from what the candidates and the question's named entities say."""
    flow = PassageRank(alpha=params.alpha)
    flow.passages.update((hit.id, VectorItem(hit.id, hit.text or "", hit.metadata)) for hit in candidates)
    flow.add_source(similar_source(candidates))
    flow.add_source(named_source(named))
    return (yield from spread(flow, graph, index, directed=params.directed))


def _paths(
    query: str,
    graph: GraphStore,
    relation_index: VectorIndex | None,
    seeds: Sequence[str],
    named: Sequence[str],
    flow: PassageRank | None,
    candidates: Sequence[VectorHit],
    params: RetrievalParams,
) -> Steps[tuple[list[RetrievedItem], Mapping[str, Entity] | None]]:
    """The path items, and the entities read on the way (the paper's paths read the seeds'; ``None``
    when none were read): query-aware paths in the evidence context with relation vectors, else the
    paper's key paths between the seeds."""
    if params.context == "evidence" and relation_index is not None and params.num_relations > 0:
        ranks = _ranks(flow, candidates)
        return (yield from _query_paths(query, graph, relation_index, ranks, named, params)), None
    found = yield Step(lambda: find_key_paths(graph, seeds, params), lambda: afind_key_paths(graph, seeds, params))
    names, pairs = path_lookups(found, seeds)
    relations = yield Step(lambda: graph.get_relations(pairs), lambda: graph.aget_relations(pairs))
    entities = yield Step(lambda: graph.get_entities(names), lambda: graph.aget_entities(names))
    return _paper_path_items(found, entities, relations, as_chains=params.context == "evidence"), entities


def _ranks(flow: PassageRank | None, candidates: Sequence[VectorHit]) -> dict[str, int] | None:
    """Each passage's rank (0 = best) by the flow so far, for weighing the relations stated in it
    (``None`` without passages)."""
    if flow is None:
        return None
    return {cid: rank for rank, cid in enumerate(ranked_ids(flow, [hit.id for hit in candidates]))}


def _ranked_passages(
    flow: PassageRank, index: VectorIndex, candidates: Sequence[VectorHit], limit: int
) -> Steps[list[RetrievedItem]]:
    """The ``limit`` best passages by the flow that have a text (read where the flow did not; a passage
    the index cannot give a text for makes room for the next)."""
    ranked = ranked_ids(flow, [hit.id for hit in candidates])
    texts = {cid: item.text for cid, item in flow.passages.items() if (item.text or "").strip()}
    missing = [cid for cid in ranked[:limit] if cid not in texts]
    if missing:
        read = yield Step(lambda: read_passages(index, missing), None)
        texts.update({cid: item.text for cid, item in read.items() if (item.text or "").strip()})
    return _passage_items([cid for cid in ranked if texts.get(cid)][:limit], flow.scores(), texts)


def _query_paths(
    query: str,
    graph: GraphStore,
    index: VectorIndex,
    passage_ranks: Mapping[str, int] | None,
    named: Sequence[str],
    params: RetrievalParams,
) -> Steps[list[RetrievedItem]]:
    """The ``top_k`` query-aware key paths (:mod:`pathrag.query.query_paths`) with the paper's key paths between
    the entities the question names, all scored by the weights of their relations, best first; then the
    further paths the relations they leave out form, best first (the layout shows as many as it holds)."""
    hits = yield query_step(index, query, params.num_relations)
    paired = [(hit, pair) for hit in hits if (pair := _hit_pair(hit)) is not None]
    pairs = list(dict.fromkeys(pair for _, pair in paired))
    relations = yield Step(lambda: graph.get_relations(pairs), lambda: graph.aget_relations(pairs))
    candidates = [(relations[pair], hit.score) for hit, pair in paired if pair in relations]
    weighted = weigh_relations(_unique(candidates), passage_ranks, alpha=params.alpha)
    chains = chain_relations(weighted, origins=set(named), max_paths=params.top_k, max_hops=params.max_hops)
    if len(named) >= 2:  # the paper's flow joins the named entities; relations like the question score them
        joining = yield Step(
            lambda: find_key_paths(graph, named, params), lambda: afind_key_paths(graph, named, params)
        )
        hops = [pair for path in joining for pair in path_pairs(path)]
        found = (yield Step(lambda: graph.get_relations(hops), lambda: graph.aget_relations(hops))) if hops else {}
        chains = merge_chains(chains, joining, found, weighted, params.top_k, set(named))
    more = more_chains(weighted, chains, origins=set(named), max_hops=params.max_hops) if params.more_paths else []
    return _chain_items([*chains, *more])


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
    checked = (params or RetrievalParams()).override(**overrides)
    if checked.filter is not None:  # refused rather than ignored: an ignored filter shows every user's text
        raise ValueError(
            "filter needs the documents' metadata, which only an index keeps: retrieve with "
            "PathRAGIndex.retrieve, or a retriever made from an index (PathRAGIndexer.as_retriever, "
            "PathRAGRetriever(index=...), PathRAGIndexRetriever)"
        )
    return checked
