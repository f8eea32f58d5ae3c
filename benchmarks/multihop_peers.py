"""The peers of the multi-hop benchmark (``multihop_qa.py``): published graph retrievers, rebuilt on pathrag's graph.

Every peer reads the same graph, the same passages and the same embedder as pathrag's own methods, so a
difference in the table is a difference of method. None calls an LLM at query time.

* :class:`FactGraph` is HippoRAG 2's graph (arXiv 2502.14802) without its LLM fact filter:

  - *phrase* nodes, one per entity (the store's normalised names), and *passage* nodes, one per chunk;
  - one edge per pair of phrases some triple joins, weighted by how many triples join them;
  - an edge from each passage to every phrase extracted from it (weight 1);
  - *synonym* edges between phrases whose name vectors have cosine >= 0.8, weighted by the cosine;
  - *facts*: each triple as the string ``subject predicate object``, embedded.

  :meth:`FactGraph.ppr` is HippoRAG 2's ranking: the 5 facts most similar to the question each give
  both their phrases the fact's similarity divided by the number of passages naming the phrase; every
  passage gets 0.05 x its min-max-normalised dense similarity; a personalized PageRank with damping 0.5
  (the share of rank that follows an edge) from that restart vector; passages in PageRank order.

  :meth:`FactGraph.proprag` is a PropRAG-style ranking (arXiv 2504.18070, which searches chains of
  propositions; here the propositions are the triples): a beam search over chains of facts that share an
  entity, from the question's 5 best facts, each chain scored by the cosine between the question and the
  mean of its facts' vectors (beam 5, at most 3 facts, 10 continuations tried per chain); the facts of the
  5 best chains then seed the same PageRank as HippoRAG 2's top facts do (each gives both its phrases its
  similarity divided by the number of passages naming the phrase), beside the same 0.05 x dense restart
  of every passage. (Seeding with every entity of the 10 best chains, each weighted by its chain's score,
  was tried first: recall@5 64 / 78 on the two dev sets, against 68 / 82 this way.)

* :func:`lightrag_sections` lays out LightRAG-style contexts (entities, relations, passages: a third of
  the budget each, unused room carried on).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pathrag import PathRAGIndex
from pathrag.llm.tokens import count_tokens
from pathrag.names import normalize_name

SYNONYM_SIMILARITY = 0.8
LINKED_FACTS = 5
PASSAGE_WEIGHT = 0.05
DAMPING = 0.5
MAX_ITERATIONS = 100
TOLERANCE = 1e-10
BEAM_WIDTH = 5
BEAM_LENGTH = 3
BEAM_CONTINUATIONS = 10


@dataclass(frozen=True)
class Fact:
    """One triple: its two phrases (normalised names), its text, and the passage it was extracted from."""

    subject: str
    obj: str
    text: str
    chunk: str


def openie_facts(path: Path, chunk_of: dict[str, str]) -> list[Fact]:
    """Every well-formed triple of a HippoRAG OpenIE file, with the chunk id of its passage
    (``chunk_of``: passage text -> chunk id, as the index stored it)."""
    facts = []
    for doc in json.loads(path.read_text(encoding="utf-8"))["docs"]:
        text = (doc.get("passage") or f"{doc.get('title', '')}\n{doc.get('text', '')}").strip()
        chunk = chunk_of.get(text)
        if chunk is None:
            continue
        for row in doc.get("extracted_triples") or ():
            if not (isinstance(row, list) and len(row) == 3 and all(isinstance(p, str) and p.strip() for p in row)):
                continue
            subject, predicate, obj = (" ".join(p.split()) for p in row)
            a, b = normalize_name(subject), normalize_name(obj)
            if a and b and a != b:
                facts.append(Fact(a, b, f"{subject} {predicate} {obj}", chunk))
    return facts


def relation_facts(index: PathRAGIndex) -> list[Fact]:
    """One fact per stored relation (its description), for a graph built by extraction, not from triples."""
    return [
        Fact(r.source, r.target, r.description or f"{r.source} {' '.join(r.keywords)} {r.target}", cid)
        for r in index.graph.iter_relations()  # type: ignore[attr-defined]
        for cid in r.source_ids[:1]
    ]


def _unit_rows(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


class FactGraph:
    """HippoRAG 2's phrase-and-passage graph over pathrag's graph, with its PageRank (see the module docstring)."""

    def __init__(self, index: PathRAGIndex, facts: Sequence[Fact], embedder: Any) -> None:
        self.index, self.embedder = index, embedder
        rows = index.chunk_index.rows()  # type: ignore[attr-defined]
        self.chunk_ids = [row[0] for row in rows]
        chunk_phrases = {row[0]: list(row[2].get("entities") or ()) for row in rows}
        named = {n for phrases in chunk_phrases.values() for n in phrases}
        names = sorted(named | {n for f in facts for n in (f.subject, f.obj)})
        self.phrase = {name: i for i, name in enumerate(names)}
        self.passage = {cid: len(names) + i for i, cid in enumerate(self.chunk_ids)}
        self.size = len(names) + len(self.chunk_ids)
        self.passages_naming = np.zeros(len(names))
        edges: dict[tuple[int, int], float] = {}

        def join(a: int, b: int, weight: float) -> None:
            key = (a, b) if a < b else (b, a)
            edges[key] = edges.get(key, 0.0) + weight

        for fact in facts:
            join(self.phrase[fact.subject], self.phrase[fact.obj], 1.0)
        for cid, phrases in chunk_phrases.items():
            for name in set(phrases):
                join(self.phrase[name], self.passage[cid], 1.0)
                self.passages_naming[self.phrase[name]] += 1
        for a, b, similarity in self._synonyms(names):
            edges.setdefault((a, b), similarity)
        pairs = np.array(list(edges), dtype=np.int64).reshape(-1, 2)
        weights = np.array(list(edges.values()))
        self.sources = np.concatenate([pairs[:, 0], pairs[:, 1]])
        self.targets = np.concatenate([pairs[:, 1], pairs[:, 0]])
        both = np.concatenate([weights, weights])
        out = np.bincount(self.sources, weights=both, minlength=self.size)
        self.transition = both / out[self.sources]
        self.dangling = out == 0
        self.facts = list(facts)
        self.fact_vectors = _unit_rows(embedder.embed([f.text for f in facts])) if facts else np.zeros((0, 1))
        self.facts_of: dict[str, list[int]] = {}
        for i, fact in enumerate(self.facts):
            for name in (fact.subject, fact.obj):
                self.facts_of.setdefault(name, []).append(i)

    def _synonyms(self, names: Sequence[str]) -> Iterable[tuple[int, int, float]]:
        """Phrase pairs whose name vectors have cosine >= :data:`SYNONYM_SIMILARITY`."""
        if len(names) < 2:
            return
        vectors = _unit_rows(self.embedder.embed(list(names)))
        for start in range(0, len(names), 2048):
            block = vectors[start : start + 2048] @ vectors.T
            for offset, j in zip(*np.nonzero(block >= SYNONYM_SIMILARITY), strict=True):
                i = start + int(offset)
                if int(j) > i:
                    yield i, int(j), float(block[offset, j])

    # -- query side -----------------------------------------------------------------------------------

    def _question(self, question: str) -> np.ndarray:
        return _unit_rows(self.embedder.embed([question]))[0]

    def best_facts(self, question: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` facts most similar to the question: (fact number, cosine), best first."""
        if not self.facts:
            return []
        scores = self.fact_vectors @ self._question(question)
        top = np.argsort(-scores, kind="stable")[:k]
        return [(int(i), float(scores[i])) for i in top]

    def _dense_restart(self, question: str) -> np.ndarray:
        restart = np.zeros(self.size)
        hits = self.index.chunk_index.query(question, len(self.chunk_ids))
        if hits:
            scores = np.array([h.score for h in hits])
            low, high = float(scores.min()), float(scores.max())
            for hit, score in zip(hits, scores, strict=True):
                restart[self.passage[hit.id]] = PASSAGE_WEIGHT * (score - low) / ((high - low) or 1.0)
        return restart

    def _seed(self, restart: np.ndarray, name: str, weight: float) -> None:
        node = self.phrase.get(name)
        if node is not None:
            restart[node] += weight / max(self.passages_naming[node], 1.0)

    def _ranked(self, restart: np.ndarray) -> list[str]:
        """Passages by personalized PageRank from ``restart`` (power iteration; dangling rank restarts)."""
        if restart.sum() <= 0:
            return []
        restart = restart / restart.sum()
        rank = restart.copy()
        for _ in range(MAX_ITERATIONS):
            spread = np.bincount(self.targets, weights=rank[self.sources] * self.transition, minlength=self.size)
            updated = (1 - DAMPING) * restart + DAMPING * (spread + rank[self.dangling].sum() * restart)
            done = np.abs(updated - rank).sum() < TOLERANCE
            rank = updated
            if done:
                break
        order = sorted(self.chunk_ids, key=lambda cid: -rank[self.passage[cid]])
        return order

    def ppr(self, question: str) -> list[str]:
        """Chunk ids, best first, by HippoRAG 2's PageRank (see the module docstring)."""
        restart = self._dense_restart(question)
        for i, score in self.best_facts(question, LINKED_FACTS):
            for name in (self.facts[i].subject, self.facts[i].obj):
                self._seed(restart, name, score)
        return self._ranked(restart)

    def fact_chains(self, question: str) -> list[tuple[float, tuple[int, ...]]]:
        """The PropRAG-style beam search: the best chains of facts, (score, fact numbers), best first."""
        if not self.facts:
            return []
        q = self._question(question)
        similarity = self.fact_vectors @ q

        def score(chain: tuple[int, ...]) -> float:
            mean = self.fact_vectors[list(chain)].mean(axis=0)
            return float(mean @ q / max(float(np.linalg.norm(mean)), 1e-12))

        beam = [(float(similarity[i]), (i,)) for i, _ in self.best_facts(question, BEAM_WIDTH)]
        seen = dict((chain, s) for s, chain in beam)
        for _ in range(BEAM_LENGTH - 1):
            grown = []
            for _, chain in beam:
                last = self.facts[chain[-1]]
                nearby = {j for name in (last.subject, last.obj) for j in self.facts_of.get(name, ())} - set(chain)
                for j in sorted(nearby, key=lambda j: -similarity[j])[:BEAM_CONTINUATIONS]:
                    longer = (*chain, j)
                    if longer not in seen:
                        seen[longer] = score(longer)
                        grown.append((seen[longer], longer))
            if not grown:
                break
            beam = sorted([*beam, *grown], key=lambda item: -item[0])[:BEAM_WIDTH]
        return sorted(((s, chain) for chain, s in seen.items()), key=lambda item: -item[0])

    def proprag(self, question: str) -> list[str]:
        """Chunk ids, best first: the facts of the beam's best chains seed the PageRank (see the module
        docstring)."""
        restart = self._dense_restart(question)
        similarity = self.fact_vectors @ self._question(question) if self.facts else np.zeros(0)
        chosen = dict.fromkeys(i for _, chain in self.fact_chains(question)[:BEAM_WIDTH] for i in chain)
        for i in chosen:
            for name in (self.facts[i].subject, self.facts[i].obj):
                self._seed(restart, name, float(similarity[i]))
        return self._ranked(restart)


def lightrag_sections(question: str, parts: Sequence[tuple[str, Sequence[str], int]], budget: int) -> str:
    """LightRAG-style sections: each (title, lines best first, its budget share); unused room carries on."""
    text = f"Question: {question}"
    used = count_tokens(text)
    room = 0
    for title, lines, share in parts:
        room += share
        kept = []
        for line in lines:
            cost = count_tokens("\n\n" + line)
            if used + cost > min(budget, used + room):
                continue
            kept.append(line)
            used += cost
            room -= cost
        if kept:
            text += f"\n\n{title}:\n\n" + "\n\n".join(reversed(kept))
    return text
