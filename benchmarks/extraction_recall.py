"""Benchmark: how many of a passage's entities a model's extraction finds, per extraction setting.

The first ``--limit`` passages of a dev set (``../shared/data/musique-dev``: ``corpus.json``, else the OpenIE
file) are indexed, one document and one chunk each, by a model at an OpenAI-compatible ``--url`` (a local
llama.cpp server, say: see ``../shared/notes/local-model.md``), once per setting (``compact``: the default,
:mod:`pathrag.index.compact`, one call per passage; ``compact-packed``: the same prompt, small chunks packed
into one call up to 1,200 tokens, :mod:`pathrag.index.packing`; ``paper``: the paper's prompt, ``extractor="llm"``,
with a gleaning round; ``paper-no-gleaning``). For each setting:

* **entity recall**: the share of the OpenIE file's entities (gpt-3.5's) of those passages that the index
  holds under the same name (both normalised by :func:`pathrag.names.normalize_name`), and the share it holds
  within a longer or shorter name ("JAN PHILIP SOLOVEJ" for "SOLOVEJ");
* **records dropped**: malformed, and naming what their chunk never spells (parroted examples, invented names);
* **kept names not in their passage**: entities the index holds that their passage does not spell (0 expected:
  such records are dropped);
* calls, tokens (the index's own count) and seconds.

Run (from the repository root, with the server up)::

    python benchmarks/extraction_recall.py --data ../shared/data/musique-dev --url http://127.0.0.1:8765/v1 \\
        --model qwen2.5-coder-1.5b --limit 10 --settings compact,paper-no-gleaning
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex
from pathrag.index.extraction import PACK_TOKENS, ExtractionConfig
from pathrag.index.grounding import ChunkWords, name_occurs
from pathrag.names import normalize_name

SETTINGS = ("compact", "compact-packed", "paper", "paper-no-gleaning")


def passages_and_entities(data: Path, limit: int) -> list[tuple[str, set[str]]]:
    """The first ``limit`` passages (``title\\ntext``) with their OpenIE entities, normalised."""
    found = sorted(data.glob("openie*.json"))
    if not found:
        raise SystemExit(f"{data} has no openie*.json file")
    docs = json.loads(found[0].read_text(encoding="utf-8"))["docs"][:limit]
    out = []
    for doc in docs:
        text = doc.get("passage") or f"{doc['title']}\n{doc['text']}"
        names = {normalize_name(str(n)) for n in doc.get("extracted_entities") or []} - {""}
        out.append((text, names))
    return out


def run_setting(setting: str, rows: Sequence[tuple[str, set[str]]], url: str, model: str) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI

    from langchain_pathrag import LangChainLanguageModel

    gleaning = 1 if setting == "paper" else 0
    extraction = ExtractionConfig(max_gleaning=gleaning, pack_tokens=PACK_TOKENS if setting == "compact-packed" else 0)
    config = IndexConfig(extraction=extraction, max_concurrency=1, max_attempts=1)
    # a client of its own: langchain-openai shares one per URL, bound to the event loop of the first insert
    client = httpx.AsyncClient(timeout=600)
    chat = ChatOpenAI(model=model, base_url=url, api_key="sk-local", temperature=0, http_async_client=client)  # type: ignore[arg-type]
    llm = LangChainLanguageModel(chat, max_tokens=config.extraction.max_answer_tokens)
    extractor = "llm" if setting.startswith("paper") else "compact"
    index = PathRAGIndex(llm=llm, embedder=HashingEmbedder(), config=config, extractor=extractor)
    started = time.perf_counter()
    summary = index.insert([Document(id=f"p{i}", text=text) for i, (text, _) in enumerate(rows)])
    seconds = time.perf_counter() - started
    found = exact = near = 0
    foreign = 0
    for i, (text, wanted) in enumerate(rows):
        cid = index.documents[f"p{i}"].chunks[0] if f"p{i}" in index.documents else None
        chunk = index.chunks.get(cid) if cid else None
        names: set[str] = set()
        if chunk is not None:  # the graph's names: entity records and the relations' ends (the index adds those)
            names = {e["name"] for e in chunk.entities}
            names |= {n for r in chunk.relations for n in (r["source"], r["target"])}
        words = ChunkWords(text)
        foreign += sum(not name_occurs(n, words) for n in names)
        for name in wanted:
            found += 1
            exact += name in names
            near += name in names or any(name in n or n in name for n in names)
    return {
        "setting": setting,
        "passages": len(rows),
        "entity_recall": exact / max(found, 1),
        "entity_recall_near": near / max(found, 1),
        "records_skipped": summary.records_skipped,
        "records_ungrounded": summary.records_ungrounded,
        "kept_names_not_in_passage": foreign,
        "failures": len(summary.failures),
        "calls": summary.llm_calls,
        "prompt_tokens": summary.prompt_tokens,
        "completion_tokens": summary.completion_tokens,
        "seconds": seconds,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--url", required=True, help="an OpenAI-compatible endpoint")
    parser.add_argument("--model", required=True)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = passages_and_entities(args.data, args.limit)
    results = []
    for setting in [s.strip() for s in args.settings.split(",") if s.strip()]:
        if setting not in SETTINGS:
            parser.error(f"unknown setting {setting!r}")
        print(f"{setting}: {len(rows)} passages…", file=sys.stderr)
        results.append(run_setting(setting, rows, args.url, args.model))
        print(json.dumps(results[-1]), file=sys.stderr)
    head = (
        "| setting | entity recall (exact / within a name) | dropped: malformed / not in chunk "
        "| kept names not in passage | calls | tokens per passage | s per passage |"
    )
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in results:
        n = max(r["passages"], 1)
        print(
            f"| {r['setting']} | {100 * r['entity_recall']:.0f} % / {100 * r['entity_recall_near']:.0f} % "
            f"| {r['records_skipped']} / {r['records_ungrounded']} | {r['kept_names_not_in_passage']} | {r['calls']} "
            f"| {(r['prompt_tokens'] + r['completion_tokens']) / n:,.0f} | {r['seconds'] / n:.0f} |"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
