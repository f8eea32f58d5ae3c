"""Benchmark: what indexing costs per passage, in calls and tokens, for each extraction setting.

The dev corpus's passages (``../shared/data/musique-dev``: ``corpus.json``, one ``title\\ntext`` passage per
document, one chunk each) are indexed through a recording OpenAI-compatible endpoint on loopback
(:class:`pathrag.testing.openai_stub.OpenAIStub`) by a real ``ChatOpenAI`` behind
:class:`langchain_pathrag.PathRAGIndexer`, once per setting:

* ``compact``: the default, the compact prompt (:mod:`pathrag.index.compact`: one short example, one record per
  line), one call per passage;
* ``compact-packed``: the same prompt, small chunks packed into one call up to 1,200 tokens of text
  (``ExtractionConfig(pack_tokens=1200)``, :mod:`pathrag.index.packing`);
* ``paper``: the paper's prompt (few-shot examples, ``extractor="llm"``) and one gleaning round;
* ``paper-no-gleaning``: the same prompt, no gleaning;
* ``lexical``: the lexical extractor (no model at all).

The endpoint reports usage as a server does and records every call; each prompt's tokens are exact (the core's
counter: tiktoken's ``o200k_base``, or its approximation offline, said in the output). The answers are a
stand-in: each passage's records from the OpenIE file (gpt-3.5's entities and triples, written in the
extraction format with the triple as description; a packed prompt gets each passage's under its header), and
"nothing missing" to a gleaning prompt; a real model's
answers are longer (descriptions restate the text), so the completion column is a floor. ``--url`` and
``--model`` send the same calls to a real OpenAI-compatible endpoint instead (a local llama.cpp server, say),
counted by the index's own summary.

Run (from the repository root)::

    python benchmarks/indexing_cost.py --data ../shared/data/musique-dev [--limit 300] [--json out.json]

Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from pathrag import Document, HashingEmbedder, IndexConfig
from pathrag.index.extraction import PACK_TOKENS, ExtractionConfig
from pathrag.index.packing import compact_answer, prompt_texts
from pathrag.llm.tokens import TokenCounter, approximate_token_count, default_token_counter
from pathrag.testing.openai_stub import OpenAIStub

SETTINGS = ("compact", "compact-packed", "paper", "paper-no-gleaning", "lexical")


def passages(data: Path, limit: int | None) -> list[str]:
    """The corpus's passages as ``title\\ntext`` (the first ``limit``): from ``corpus.json``, else the OpenIE file."""
    if (data / "corpus.json").exists():
        rows = json.loads((data / "corpus.json").read_text(encoding="utf-8"))
        return [f"{row['title']}\n{row['text']}" for row in rows][:limit]
    docs = json.loads(_openie_file(data).read_text(encoding="utf-8"))["docs"]
    return [doc.get("passage") or f"{doc['title']}\n{doc['text']}" for doc in docs][:limit]


def _openie_file(data: Path) -> Path:
    found = sorted(data.glob("openie*.json"))
    if not found:
        raise SystemExit(f"{data} has no openie*.json file")
    return found[0]


def openie_answers(data: Path) -> dict[str, tuple[str, str]]:
    """Passage text -> stand-in extraction answers (the paper's format, the compact one): its OpenIE entities and
    triples as records."""
    answers: dict[str, tuple[str, str]] = {}
    for doc in json.loads(_openie_file(data).read_text(encoding="utf-8"))["docs"]:
        text = doc.get("passage") or f"{doc['title']}\n{doc['text']}"
        triples = [t for t in doc.get("extracted_triples") or [] if isinstance(t, list) and len(t) == 3]
        records, lines = [], []
        for name in doc.get("extracted_entities") or []:
            about = next((" ".join(map(str, t)) for t in triples if name in (t[0], t[2])), name)
            records.append(f'("entity"<|>{name}<|>concept<|>{about}.)')
            lines.append(f"E|{name}|concept|{about}.")
        for s, p, o in triples:
            records.append(f'("relationship"<|>{s}<|>{o}<|>{s} {p} {o}.<|>{p}<|>5)')
            lines.append(f"R|{s}|{o}|{p}|{s} {p} {o}.")
        answers[" ".join(text.split())] = ("##\n".join(records) + "<|COMPLETE|>", "\n".join([*lines, "END"]))
    return answers


@dataclass
class Row:
    setting: str
    passages: int
    passage_tokens: float
    calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float

    def per_passage(self, value: float) -> float:
        return value / max(self.passages, 1)


def token_counter() -> tuple[TokenCounter, str]:
    """The counter of the usage report, and its name: tiktoken's ``o200k_base`` (OpenAI's current models), else
    ``cl100k_base`` from the copy LlamaIndex ships (offline; within a few percent of it on English), else the
    core's approximation."""
    counter = default_token_counter()
    if counter is not approximate_token_count:
        return counter, "tiktoken o200k_base"
    try:
        import llama_index.core
        import tiktoken

        shipped = Path(llama_index.core.__file__).parent / "_static" / "tiktoken_cache"
        before = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = before or str(shipped)
        try:
            encoding = tiktoken.get_encoding("cl100k_base")
        finally:  # the environment as it was
            if before is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
    except Exception:  # no LlamaIndex, or no copy: the approximation
        return counter, "the core's approximation (tiktoken offline)"
    return (lambda text: len(encoding.encode(text, disallowed_special=()))), "tiktoken cl100k_base (o200k_base offline)"


def run_setting(
    setting: str,
    texts: Sequence[str],
    answers: dict[str, tuple[str, str]],
    url: str | None,
    model: str,
    counter: TokenCounter,
) -> Row:
    """Index ``texts`` with one setting; the calls and tokens it spent."""
    from langchain_openai import ChatOpenAI

    from langchain_pathrag import PathRAGEmbeddings, PathRAGIndexer

    gleaning = 0 if setting == "paper-no-gleaning" else 1
    extraction = ExtractionConfig(max_gleaning=gleaning, pack_tokens=PACK_TOKENS if setting == "compact-packed" else 0)
    config = IndexConfig(extraction=extraction, max_attempts=1)
    docs = [Document(id=f"passage-{i}", text=t) for i, t in enumerate(texts)]
    mean = statistics.fmean(counter(t) for t in texts)

    def records(text: str) -> tuple[str, str]:
        return answers.get(" ".join(text.split()), ("<|COMPLETE|>", "END"))

    def answer(prompt: str, max_tokens: int | None) -> str:
        if prompt.rstrip().endswith("Missing records:"):
            return "<|COMPLETE|>"  # a gleaning round finds nothing missing
        compact = prompt_texts(prompt)
        if compact:  # one passage, or a pack of them: each passage's record lines
            return compact_answer([records(text)[1].removesuffix("END").rstrip("\n") for text in compact])
        if "\nText:\n" not in prompt:  # a description summary
            return "A merged description."
        text = prompt.rsplit("\nText:\n", 1)[1].rsplit("\nOutput:\n", 1)[0]  # the last text: the examples' come first
        return records(text)[0]

    started = time.perf_counter()
    embeddings = PathRAGEmbeddings(HashingEmbedder())
    extractor = "llm" if setting.startswith("paper") else "compact"
    if setting == "lexical":
        summary = PathRAGIndexer(None, embeddings, config=config, extractor="lexical").index.insert(docs)
        return Row(setting, len(texts), mean, summary.llm_calls, 0, 0, time.perf_counter() - started)
    if url is not None:
        chat = ChatOpenAI(model=model, base_url=url, api_key=os.environ.get("OPENAI_API_KEY") or "none")  # type: ignore[arg-type]
        summary = PathRAGIndexer(chat, embeddings, config=config, extractor=extractor).index.insert(docs)
        return Row(
            setting,
            len(texts),
            mean,
            summary.llm_calls,
            summary.prompt_tokens,
            summary.completion_tokens,
            time.perf_counter() - started,
        )
    with OpenAIStub(answer, token_counter=counter) as stub:
        chat = ChatOpenAI(model="stub", base_url=stub.url, api_key="sk-stub", max_retries=0)  # type: ignore[arg-type]
        PathRAGIndexer(chat, embeddings, config=config, extractor=extractor).index.insert(docs)
    return Row(
        setting,
        len(texts),
        mean,
        len(stub.calls),
        stub.prompt_tokens,
        stub.completion_tokens,
        time.perf_counter() - started,
    )


def format_table(rows: Sequence[Row], counter: str) -> str:
    head = (
        "| setting | passages | tokens per passage | calls per passage | prompt tokens per passage "
        "| completion tokens per passage | total per passage | seconds |"
    )
    lines = [f"tokens counted with {counter}", "", head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        total = r.prompt_tokens + r.completion_tokens
        lines.append(
            f"| {r.setting} | {r.passages:,} | {r.passage_tokens:.0f} | {r.per_passage(r.calls):.2f} "
            f"| {r.per_passage(r.prompt_tokens):,.0f} | {r.per_passage(r.completion_tokens):,.0f} "
            f"| {r.per_passage(total):,.0f} | {r.seconds:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True, help="folder with openie*.json (and corpus.json)")
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated, from {', '.join(SETTINGS)}")
    parser.add_argument("--limit", type=int, default=None, help="only the first N passages")
    parser.add_argument("--url", default=None, help="a real OpenAI-compatible endpoint instead of the stand-in")
    parser.add_argument("--model", default="stub", help="the model name at --url")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    unknown = set(settings) - set(SETTINGS)
    if unknown:
        parser.error(f"unknown setting(s): {', '.join(sorted(unknown))}")
    texts = passages(args.data, args.limit)
    answers = openie_answers(args.data)
    counter, counter_name = token_counter()
    rows = []
    for setting in settings:
        print(f"{setting}: indexing {len(texts):,} passages…", file=sys.stderr)
        rows.append(run_setting(setting, texts, answers, args.url, args.model, counter))
    print(format_table(rows, counter_name))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
