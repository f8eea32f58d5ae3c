"""How the graph and the vector indexes follow the chunk records.

Every entity and relation is a pure function of the extraction records of the live chunks that mention
it. :func:`rebuild` recomputes those a change touches from the chunks that remain
(:func:`pathrag.index.merging.merge_records`), has a :class:`Summariser` shorten long merged descriptions, and
writes the result to the graph and the entity and relation vector indexes; :func:`sync_chunk_vectors`
does the same for the chunk vectors and drops the chunks no document claims any more.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import StoreDamaged
from ..graphs.base import GraphStore
from ..ids import digest, entity_vector_id, relation_vector_id
from ..llm.prompts import build_summary_prompt
from ..llm.tokens import TokenCounter, count_tokens
from ..models import Entity, Relation
from ..names import truncate
from ..vectors.base import VectorIndex, VectorItem
from ..vectors.items import chunk_metadata, entity_vector_item, relation_vector_item
from .merging import merge_records, relation_key
from .records import RecordTables, cited
from .tables import StringTable

__all__ = ["UNSUMMARISED_MAX_CHARS", "Rebuilt", "Summariser", "rebuild", "sync_chunk_vectors"]

logger = logging.getLogger(__name__)
T = TypeVar("T", Entity, Relation)

Ask = Callable[[str], Awaitable[str]]

UNSUMMARISED_MAX_CHARS = 4_000
"""The most characters (about 1,000 tokens) of a description over the summary threshold that the graph keeps
when no summary is made (no LLM, a failed call, an empty answer), and of a summary answer: the rest is cut and
the text ends with `` …``. The chunk records keep every description whole, so a later rebuild with a working
LLM summarises all of it (within :data:`pathrag.llm.prompts.SUMMARY_INPUT_MAX_CHARS`)."""


@dataclass
class Rebuilt:
    """What a rebuild wrote (merged again) and removed (no live chunk mentions them any more)."""

    entities: list[Entity]
    relations: list[Relation]
    gone_entities: list[str]
    gone_relations: list[tuple[str, str]]


class Summariser:
    """Replaces a merged description longer than ``threshold_tokens`` with an LLM summary, remembered in
    ``summaries`` by its exact prompt (so a rebuild of the same records never asks again).

    Bounded on hostile input: the prompt is capped (see :func:`pathrag.llm.prompts.build_summary_prompt`), and a
    long description that gets no summary, like a summary answer, is cut to :data:`UNSUMMARISED_MAX_CHARS`."""

    def __init__(
        self,
        summaries: StringTable,
        *,
        threshold_tokens: int = 500,
        max_words: int = 150,
        language: str = "English",
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.summaries = summaries
        self.threshold_tokens = threshold_tokens
        self.max_words = max_words
        self.language = language
        self.token_counter = token_counter

    def needs_summary(self, description: str) -> bool:
        """Whether ``description`` is over the threshold (a text of no more UTF-8 bytes than the threshold is
        under it for the default counters, tiktoken's and the approximation, without being counted)."""
        if self.token_counter is None and len(description.encode("utf-8", "surrogatepass")) <= self.threshold_tokens:
            return False
        return count_tokens(description, self.token_counter) > self.threshold_tokens

    async def summarise(self, item: T, label: str, records: Sequence[Entity | Relation], ask: Ask | None) -> T:
        """``item`` with its description summarised when too long (``ask``: ``None`` without an LLM, then
        only a remembered summary is used; without a summary, or after a failed call, the joined descriptions
        are kept, cut to :data:`UNSUMMARISED_MAX_CHARS`)."""
        description = item.description
        if not self.needs_summary(description):
            return item
        parts = list(dict.fromkeys(r.description.strip() for r in records if r.description.strip()))
        prompt = build_summary_prompt(label, parts, language=self.language, max_words=self.max_words)
        key = digest(prompt)
        if key not in self.summaries and ask is not None:
            try:
                self.summaries[key] = " ".join((await ask(prompt)).split())
            except StoreDamaged:  # the store's file, not the call: the write stops
                raise
            except Exception as exc:
                logger.warning("summary of %s failed, keeping the joined descriptions: %r", label, exc)
        summary = self.summaries.get(key) or description  # no LLM, a failed call or an empty answer
        return item.model_copy(update={"description": truncate(summary, UNSUMMARISED_MAX_CHARS)})


async def rebuild(
    chunk_ids: Sequence[str],
    records: RecordTables,
    graph: GraphStore,
    entity_index: VectorIndex,
    relation_index: VectorIndex,
    summarise: Callable[[Any, str, Sequence[Entity | Relation]], Awaitable[Any]],
    *,
    directed: bool = False,
    on_phase: Callable[[str], None] | None = None,
    needs_summary: Callable[[str], bool] | None = None,
    graph_follows_records: bool = False,
) -> Rebuilt:
    """Recompute every entity and relation mentioned by ``chunk_ids`` from the live chunks, and write them
    (or their removal) to the graph and the two vector indexes. ``on_phase`` is told, in one line, when the
    merging (with the summaries of long descriptions) and the embedding start, with the merged counts.
    ``needs_summary`` (a description -> whether ``summarise`` may change it) spares the others a call: a
    bulk import merges 10⁵ items per commit, nearly all of them short. ``graph_follows_records``: the graph
    is committed with the records (the index's own kinds), so a relation it lacks is held by no chunk the
    change did not touch, and no such chunk is read for it."""
    described, ends, touched_relations = _touched(chunk_ids, records, directed)
    if not described and not ends:
        return Rebuilt([], [], [], [])
    stored = touched_relations
    if graph_follows_records:
        stored = {relation_key(*pair, directed=directed) for pair in graph.get_relations(sorted(touched_relations))}
    live = _live(records, chunk_ids, described, ends, touched_relations, stored, directed)
    merged = _merge(live, touched_relations, directed)
    say = on_phase or (lambda _: None)
    say(f"merging into {merged.kept()}")
    entities = await _summarised(
        [merged.by_name[n] for n in merged.names if n in merged.by_name],
        lambda e: summarise(e, e.name, live.entity_records.get(e.name, [])),
        needs_summary,
    )
    relations = await _summarised(
        [merged.by_key[k] for k in merged.keys if k in merged.by_key],
        lambda r: summarise(
            r, f"{r.source} -> {r.target}", live.relation_records[relation_key(*r.pair, directed=directed)]
        ),
        needs_summary,
    )
    rebuilt = Rebuilt(entities, relations, merged.gone_entities(), merged.gone_relations())
    await _write_graph(graph, rebuilt)
    say(f"embedding {merged.kept()}")
    await _write_vectors(entity_index, relation_index, rebuilt, directed)
    return rebuilt


@dataclass
class _Live:
    """The live records of what a change touches, read for its rebuild."""

    entity_records: dict[str, list[Entity]]
    relation_records: dict[tuple[str, str], list[Relation]]
    endpoint_chunks: dict[str, list[str]]
    """Each name that exists, with the chunks naming it as a relation end (see :func:`merge_records`)."""
    touched_entities: set[str]


def _live(
    records: RecordTables,
    chunk_ids: Sequence[str],
    described: set[str],
    ends: set[str],
    touched_relations: set[tuple[str, str]],
    stored: set[tuple[str, str]],
    directed: bool,
) -> _Live:
    """Read the live records of the entities and relations a change of ``chunk_ids`` touches (``stored``: the
    touched relations the graph holds, when it follows the records; else all of them)."""
    wanted, alive, unchanged = _chunks_to_read(records, described, ends, stored, set(chunk_ids))
    entity_records, relation_records, endpoint_chunks = _live_records(
        records, wanted, described, touched_relations, directed
    )
    # A name the change mentions only as a relation end without text keeps what it was while a chunk the
    # change did not touch names it; else it is bare (named by the change's chunks alone) or gone.
    bare = (ends - unchanged) & alive
    for name in described & alive | bare:
        endpoint_chunks.setdefault(name, [])  # exists: named by a live chunk, perhaps one not read
    return _Live(entity_records, relation_records, endpoint_chunks, described | (ends - unchanged))


@dataclass
class _Merged:
    """The touched entities and relations merged again from their live records; those missing are gone."""

    by_name: dict[str, Entity]
    by_key: dict[tuple[str, str], Relation]
    names: list[str]
    keys: list[tuple[str, str]]

    def gone_entities(self) -> list[str]:
        return [n for n in self.names if n not in self.by_name]

    def gone_relations(self) -> list[tuple[str, str]]:
        return [k for k in self.keys if k not in self.by_key]

    def kept(self) -> str:
        """How many are kept, as a progress line says it."""
        entities = sum(n in self.by_name for n in self.names)
        return f"{entities:,} entities and {sum(k in self.by_key for k in self.keys):,} relations"


def _merge(live: _Live, touched_relations: set[tuple[str, str]], directed: bool) -> _Merged:
    merged_entities, merged_relations = merge_records(
        (e for group in live.entity_records.values() for e in group),
        (r for group in live.relation_records.values() for r in group),
        directed=directed,
        endpoint_sources=live.endpoint_chunks,
    )
    return _Merged(
        {e.name: e for e in merged_entities},
        {relation_key(r.source, r.target, directed=directed): r for r in merged_relations},
        sorted(live.touched_entities),
        sorted(touched_relations),
    )


async def _write_graph(graph: GraphStore, rebuilt: Rebuilt) -> None:
    await graph.adelete_relations(rebuilt.gone_relations)
    await graph.adelete_entities(rebuilt.gone_entities)
    await graph.aupsert_entities(rebuilt.entities)
    await graph.aupsert_relations(rebuilt.relations)  # replaces, whichever way round it was stored


async def _write_vectors(
    entity_index: VectorIndex, relation_index: VectorIndex, rebuilt: Rebuilt, directed: bool
) -> None:
    await entity_index.adelete([entity_vector_id(n) for n in rebuilt.gone_entities])
    await entity_index.aupsert([entity_vector_item(e) for e in rebuilt.entities])
    await relation_index.adelete([relation_vector_id(k) for k in rebuilt.gone_relations])
    await relation_index.aupsert([relation_vector_item(r, directed=directed) for r in rebuilt.relations])


async def _summarised(
    items: list[T], summarise: Callable[[T], Awaitable[T]], needs_summary: Callable[[str], bool] | None
) -> list[T]:
    """``items`` with ``summarise`` applied, concurrently, to those whose description may need it."""
    wanted = [i for i, item in enumerate(items) if needs_summary is None or needs_summary(item.description)]
    done = await asyncio.gather(*(summarise(items[i]) for i in wanted))
    out = list(items)
    for i, item in zip(wanted, done, strict=True):
        out[i] = item
    return out


def _touched(
    chunk_ids: Sequence[str], records: RecordTables, directed: bool
) -> tuple[set[str], set[str], set[tuple[str, str]]]:
    """What the records of ``chunk_ids`` mention: the entity names they may describe (see
    :func:`~pathrag.sqlite.codec.mention_rows`), the names they only give existence to (relation ends in
    chunks without text), and the relation keys."""
    described: set[str] = set()
    ends: set[str] = set()
    relations: set[tuple[str, str]] = set()
    for cid in chunk_ids:
        chunk = records.chunks.get(cid)
        if chunk is None:
            continue
        for name, describes in chunk.mentions():
            (described if describes else ends).add(name)
        relations.update(relation_key(r["source"], r["target"], directed=directed) for r in chunk.relations)
    return described, ends - described, relations


def _chunks_to_read(
    records: RecordTables, described: set[str], ends: set[str], keys: set[tuple[str, str]], changed: set[str]
) -> tuple[list[str], set[str], set[str]]:
    """The live chunks whose records a rebuild must read, in order: the changed ones, those that may
    describe a ``described`` name, and those naming both ends of one of ``keys`` (the relations that
    chunks other than the changed ones may hold). Also the names some live chunk names, and those of
    ``ends`` that a live chunk outside ``changed`` names. A bulk import's later batch thereby reads none of
    the earlier batches' record chunks that name its entities only as relation ends (it read all of them,
    and the reading grew with every batch)."""
    partners: dict[str, set[str]] = {}
    for a, b in keys:
        partners.setdefault(a, set()).add(b)
        partners.setdefault(b, set()).add(a)
    wanted: list[str] = []
    alive: set[str] = set()
    unchanged: set[str] = set()
    for cid, named in records.live_mentions(described | ends).items():
        alive.update(named)
        if cid not in changed:
            unchanged.update(n for n in named if n in ends)
        if (
            cid in changed
            or any(describes and name in described for name, describes in named.items())
            or _names_a_pair(named, partners)
        ):
            wanted.append(cid)
    return wanted, alive, unchanged


def _names_a_pair(named: Mapping[str, bool], partners: Mapping[str, set[str]]) -> bool:
    """Whether ``named`` holds both ends of a pair (``partners``: each end -> the other ends)."""
    for name in named:
        others = partners.get(name)
        if others and (
            any(o in named for o in others) if len(others) <= len(named) else any(n in others for n in named)
        ):
            return True
    return False


def _live_records(
    records: RecordTables, cids: list[str], names: set[str], keys: set[tuple[str, str]], directed: bool
) -> tuple[dict[str, list[Entity]], dict[tuple[str, str], list[Relation]], dict[str, list[str]]]:
    """The records of the entities ``names`` and relations ``keys`` in the live chunks ``cids`` and, per
    name named there as a relation end, the chunks with text naming it so (the chunks are read one at a
    time, none kept)."""
    entity_records: dict[str, list[Entity]] = {}
    relation_records: dict[tuple[str, str], list[Relation]] = {}
    endpoint_chunks: dict[str, list[str]] = {}
    for chunk in records.read_chunks(cids):
        for n, e in enumerate(chunk.entities):
            if e["name"] in names:
                entity_records.setdefault(e["name"], []).append(chunk.entity(n))
        for n, r in enumerate(chunk.relations):
            key = relation_key(r["source"], r["target"], directed=directed)
            if key in keys:
                relation_records.setdefault(key, []).append(chunk.relation(n))
            for end in (r["source"], r["target"]):
                if end in names:
                    cited_by = endpoint_chunks.setdefault(end, [])
                    if chunk.text:  # record-only chunks have no text to cite
                        cited_by.append(chunk.id)
    return entity_records, relation_records, endpoint_chunks


async def sync_chunk_vectors(
    records: RecordTables, chunk_index: VectorIndex, added: Sequence[str], released: set[str]
) -> None:
    """Embed the chunks that became live (``added``); of the ``released`` ones, drop those no document
    claims any more: their vectors, the passages only their records cited (an import's), and the chunks."""
    chunks = records.chunks
    gone = sorted(cid for cid in released if not ((chunk := chunks.get(cid)) is not None and chunk.refs))
    await chunk_index.adelete([cid for cid in gone if (chunk := chunks.get(cid)) is not None and chunk.text])
    # the passages an importer put in the chunk index go with the last import citing them
    dropped = cited(chunks[cid] for cid in gone if cid in chunks and not chunks[cid].text)
    if dropped:
        dropped -= cited(records.live_record_chunks())
        await chunk_index.adelete(sorted(cid for cid in dropped if cid not in chunks))
    await chunk_index.aupsert(
        [
            VectorItem(cid, chunks[cid].text, chunk_metadata(cid, chunks[cid].mentioned()))
            for cid in dict.fromkeys(added)
        ]
    )
    records.drop_chunks(gone)
