"""The ``pathrag`` commands: ``index``, ``query``, ``paths``, ``delete``, ``stats`` and ``demo`` (``eval`` and
``import`` live in :mod:`langchain_pathrag.cli.eval` and :mod:`langchain_pathrag.cli.imports`).

The options shared by the commands (store, models, retrieval settings) are defined once, in
:mod:`langchain_pathrag.cli.options`. The core and the store are imported inside the commands: ``pathrag
--help`` and the option definitions need neither.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .doc_ids import resolve_document_ids
from .errors import CliError, CliGroup, one_line
from .html_page import to_html
from .options import (
    CONTEXT,
    DEFAULTS,
    EMBEDDING_MODEL,
    MAX_HOPS,
    MODEL,
    NUM_SEEDS,
    PARAM,
    REPLAY,
    STORE,
    THETA,
    TOP_K,
    WAIT,
    ContextKind,
    retrieval_params,
)
from .providers import (
    HASHING,
    NO_KEY,
    chat_model,
    describe_chat_model,
    describe_embeddings,
    embedding_spec,
    language_model,
    lazy_language_model,
    replay_llm,
)
from .readers import CHUNK_OVERLAP, CHUNK_SIZE, collect_files, read_documents
from .rendering import (
    approximate_tokens,
    as_json,
    cited_sources,
    holdings,
    print_paths,
    print_question,
    print_sources,
    report,
    sources,
    subgraph,
    to_mermaid,
    token_note,
)

if TYPE_CHECKING:
    from pathrag import Document, InsertSummary, PathRAGIndex, RetrievalParams, RetrievalResult

__all__ = ["Format", "app"]

app = typer.Typer(
    cls=CliGroup,
    name="pathrag",
    help="PathRAG from the command line: index documents into a knowledge graph, then retrieve the key "
    "relational paths between the entities a question is about. Start with: pathrag demo",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _options(debug: bool = typer.Option(False, "--debug", help="Show the full traceback of an error.")) -> None:
    """(``--debug`` is taken out of the arguments before parsing, so it works in any position.)"""


# -- options (the shared ones are in .options) ------------------------------------------------------


class Format(str, Enum):
    """How ``pathrag paths`` shows the key paths (``--format``)."""

    table = "table"
    json = "json"
    mermaid = "mermaid"
    html = "html"


class ExtractorKind(str, Enum):
    """How ``pathrag index`` turns chunks into records (``--extractor``)."""

    llm = "llm"
    compact = "compact"
    lexical = "lexical"


# -- commands ----------------------------------------------------------------------------------------


def _retrieve(index: PathRAGIndex, question: str, params: RetrievalParams) -> RetrievalResult:
    """The retrieval, asking the model for keywords only in the paper's mode (``--context paths``)."""
    try:
        return index.retrieve(question, params=params)
    except TypeError as exc:  # a question that is not text (the settings were checked already)
        raise CliError(str(exc), code=2) from exc


@app.command()
def index(
    paths: list[Path] = typer.Argument(
        ..., help="Files or folders (.txt, .md, .html, and .pdf with pypdf).", show_default=False
    ),
    store: Path = STORE,
    model: str = MODEL,
    embedding_model: str | None = EMBEDDING_MODEL,
    replay: Path | None = REPLAY,
    wait: float = WAIT,
    id_prefix: str | None = typer.Option(
        None,
        "--id-prefix",
        show_default=False,
        help="What document ids start with: ids are PREFIX/path relative to each folder given (PREFIX/name "
        "for a file). Default: the folder's name for a folder, nothing for a file. '' gives the bare "
        "relative paths of earlier versions.",
    ),
    chunk_size: int = typer.Option(CHUNK_SIZE, "--chunk-size", help="Tokens per chunk."),
    chunk_overlap: int = typer.Option(
        CHUNK_OVERLAP, "--chunk-overlap", help="Tokens shared by consecutive chunks (less than --chunk-size)."
    ),
    extractor: ExtractorKind = typer.Option(
        ExtractorKind.compact,
        "--extractor",
        help="How chunks become entities and relations: 'compact' asks the language model with a short prompt, "
        "several small chunks in one call; 'llm' with the paper's prompt (few-shot examples, a gleaning round: "
        "about five times the tokens); 'lexical' needs no model and no key (capitalised names, and the "
        "sentences naming two of them as relations). A document a model extracted counts as indexed for "
        "either prompt; one indexed with 'lexical' is extracted again when a model is used.",
    ),
    pack: int = typer.Option(
        0,
        "--pack",
        help="With the compact extractor: ask consecutive small chunks in one call, up to this many tokens of "
        "text (1200: the default chunk size). Far fewer prompt tokens for short documents; a weak local model "
        "finds fewer entities packed. 0: one call per chunk.",
    ),
    estimate: bool = typer.Option(
        False,
        "--estimate",
        help="Print the model calls and tokens indexing would spend (new and changed documents only), "
        "without calling a model or writing anything.",
    ),
) -> None:
    """Extract entities and relations from documents into the store (re-running skips unchanged files)."""
    lexical = extractor is ExtractorKind.lexical
    _check_index_options(chunk_size, chunk_overlap, embedding_model, pack)
    if not (lexical or estimate) and replay is None and lazy_language_model(model) is None:  # said before reading
        raise CliError(f"indexing extracts entities with a language model: {NO_KEY}, or add --extractor lexical")
    earlier: dict[str, str] = {}
    files = collect_files(paths, id_prefix=id_prefix, earlier_ids=earlier)
    # before the model and the core are loaded, and the files read (PDFs are slow): a first sign of life
    typer.echo(f"Reading {len(files):,} file{'s' * (len(files) != 1)}…", err=True)
    if estimate:
        from .estimate import print_estimate

        docs = read_documents(files, chunk_size, chunk_overlap)
        keep = (
            (lambda idx, docs: _keep_earlier_ids(idx, docs, earlier, store)) if id_prefix is None and earlier else None
        )
        print_estimate(store, docs, extractor.value, keep, pack=pack)
        return
    llm = None if lexical else _extraction_llm(replay, model)  # lexical asks no model: it costs nothing, key or not
    if llm is None and not lexical:
        raise CliError(f"indexing extracts entities with a language model: {NO_KEY}, or add --extractor lexical")
    docs = read_documents(files, chunk_size, chunk_overlap)
    from pathrag import IndexConfig
    from pathrag.index.extraction import ExtractionConfig

    from .store import opened

    config = IndexConfig(show_progress=True, lock_timeout=wait, extraction=ExtractionConfig(pack_tokens=pack))
    if replay:  # a replay miss is not transient: no retries with back-off
        config = dataclasses.replace(config, max_attempts=1)
    with opened(
        store, create=True, embedding_model=embedding_model, llm=llm, config=config, extractor=extractor.value
    ) as idx:
        if id_prefix is None and earlier:
            docs = _keep_earlier_ids(idx, docs, earlier, store)
        try:
            summary = idx.insert(docs)
        except KeyboardInterrupt:
            raise CliError(_interrupted(idx, docs, store), code=130) from None
        stats = idx.stats()
    _report_insert(store, summary, stats)


def _check_index_options(chunk_size: int, chunk_overlap: int, embedding_model: str | None, pack: int) -> None:
    """``index``'s options that can be refused before anything is read."""
    if pack < 0:
        raise CliError(f"--pack must be 0 (one call per chunk) or a number of tokens, not {pack}", code=2)
    if chunk_size < 1:
        raise CliError(f"--chunk-size must be at least 1 token, not {chunk_size}", code=2)
    if not 0 <= chunk_overlap < chunk_size:
        raise CliError(
            f"--chunk-overlap must be at least 0 and less than --chunk-size ({chunk_size}), not {chunk_overlap}", code=2
        )
    if embedding_model is not None:
        embedding_spec(embedding_model)  # an unknown provider: said before anything is read, too


def _extraction_llm(replay: Path | None, model: str) -> Any:
    """The model ``index`` extracts with: a replay of recorded answers, else the chat model (``None``: no key),
    its answers capped as every extraction call's are."""
    from pathrag.index.extraction import DEFAULT_MAX_ANSWER_TOKENS as cap

    return replay_llm(replay) or (language_model(chat, cap) if (chat := chat_model(model)) else None)


def _report_insert(store: Path, summary: InsertSummary, stats: dict[str, int]) -> None:
    """What ``index`` did, then every chunk that failed; a failure makes the command fail."""
    report(
        f"Indexed into {store}:",
        [
            ("documents indexed", summary.documents),
            ("documents unchanged", summary.unchanged),
            ("documents replaced", _some(summary.replaced)),
            ("chunks", summary.chunks),
            ("chunks extracted", summary.chunks_extracted),
            ("entities touched", summary.entities),
            ("relations touched", summary.relations),
            *_damaged_records(summary),
            ("LLM calls", summary.llm_calls),
            ("LLM cache hits", summary.cache_hits),
            ("tokens (prompt + completion)", f"{summary.tokens:,}{token_note()}"),
            ("tokens per document", f"{summary.tokens / summary.documents:,.0f}" if summary.documents else "0"),
            holdings(stats),
        ],
    )
    for failure in summary.failures:
        typer.echo(
            f"failed: chunk {failure.chunk_id} of {', '.join(failure.document_ids)}: {one_line(failure.error, 300)}",
            err=True,
        )
    if summary.failures:
        raise CliError(f"{len(summary.failures)} chunk(s) failed; run the same command again to retry them")


def _damaged_records(summary: InsertSummary) -> list[tuple[str, str]]:
    """The report row of the model's records not kept, by reason (one row, ``0`` when every record was kept)."""
    reasons = [
        (summary.records_skipped, "malformed"),
        (summary.records_ungrounded, "naming what their chunk never spells"),
        (summary.records_dropped, "over the per-chunk cap"),
    ]
    total = sum(n for n, _ in reasons)
    shown = f"{total:,} (" + ", ".join(f"{n:,} {why}" for n, why in reasons if n) + ")" if total else "0"
    return [("records not kept", shown)]


def _some(ids: list[str], shown: int = 3) -> str:
    """A count and the first few ids, e.g. ``5 (a.md, b.md, c.md and 2 more)``."""
    if not ids:
        return "0"
    return f"{len(ids):,} ({_names(ids, shown)})"


def _names(ids: list[str], shown: int = 3) -> str:
    """The first few ids, e.g. ``a.md, b.md, c.md and 2 more``."""
    more = f" and {len(ids) - shown:,} more" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def _keep_earlier_ids(idx: PathRAGIndex, docs: list[Document], earlier: dict[str, str], store: Path) -> list[Document]:
    """Documents the store holds under the id earlier versions gave them (the path relative to the folder
    given, without the folder's name) keep that id, so that indexing a folder again updates them instead of
    adding copies: when the new id is unknown to the store and the earlier one came from the same file."""
    given = {doc.id for doc in docs}
    kept: list[str] = []
    out: list[Document] = []
    for doc in docs:
        old = earlier.get(doc.id or "")
        if old is not None and old not in given and doc.id not in idx.documents:
            record = idx.documents.get(old)
            if record is not None and _same_file(record.metadata.get("source"), doc.metadata["source"]):
                doc = doc.model_copy(update={"id": old})
                kept.append(old)
        out.append(doc)
    if kept:
        typer.echo(
            f"note: {len(kept):,} document{'s' * (len(kept) != 1)} already in {store} keep the id an earlier "
            f"version gave, without the folder's name ({_names(kept)}); --id-prefix chooses the ids",
            err=True,
        )
    return out


def _same_file(recorded: object, source: str) -> bool:
    """Whether a recorded ``source`` path is the file ``source`` (paths were recorded as given)."""
    if not isinstance(recorded, str):
        return False
    try:
        return recorded == source or Path(recorded).resolve() == Path(source).resolve()
    except OSError:
        return False


def _interrupted(idx: PathRAGIndex, docs: list[Document], store: Path) -> str:
    """What an interrupted ``index`` kept: each chunk's extraction is saved the moment it arrives (as is every
    LLM answer), while the documents, graph and vectors are written in one final commit."""
    wanted = {idx.extractor.chunk_id(text) for doc in docs for text in doc.chunk_texts()}
    try:
        saved = sum(cid in idx.chunks for cid in wanted)
    except Exception:  # the store could not be read back: say what holds in any case
        return (
            f"interrupted: nothing new is in the index; the chunk extractions (and LLM answers) received so far "
            f"are saved in {store}: run the same command again to resume"
        )
    left = len(wanted) - saved
    return (
        f"interrupted: nothing new is in the index; the extractions of {saved:,} of {len(wanted):,} chunks are "
        f"saved in {store}: run the same command again to resume, it sends only the other {left:,} "
        f"chunk{'s' * (left != 1)} to the model"
    )


@app.command()
def query(
    question: str = typer.Argument(..., help="The question.", show_default=False),
    store: Path = STORE,
    context_only: bool = typer.Option(
        False, "--context-only", help="Print the prompt that would be sent, without calling a model."
    ),
    stream: bool = typer.Option(False, "--stream", help="Print the answer as it is generated."),
    json_output: bool = typer.Option(
        False, "--json", help="Print the answer (or, with --context-only, the prompt) and its sources as JSON."
    ),
    max_tokens: int | None = typer.Option(
        None,
        "--max-tokens",
        min=1,
        show_default=False,
        help=f"Token budget of the context (least relevant evidence goes first) [default: {DEFAULTS.max_tokens}].",
    ),
    context: ContextKind | None = CONTEXT,
    model: str = MODEL,
    embedding_model: str | None = EMBEDDING_MODEL,
    top_k: int | None = TOP_K,
    num_seeds: int | None = NUM_SEEDS,
    max_hops: int | None = MAX_HOPS,
    theta: float | None = THETA,
    param: list[str] | None = PARAM,
    replay: Path | None = REPLAY,
) -> None:
    """Answer a question from the key paths and their passages, and list the sources the answer cites (or,
    with --context-only, print the prompt). The prompt numbers its items and asks the model to cite them as
    [2]; the items sent but not cited are counted apart (--json: "sources" cited, "sent" all)."""
    params = retrieval_params(
        param,
        top_k=top_k,
        num_seeds=num_seeds,
        max_hops=max_hops,
        theta=theta,
        max_tokens=max_tokens,
        context=context.value if context else None,
    )
    chat = None if replay else chat_model(model)
    if chat is None and not context_only:
        raise CliError(
            f"answering needs a language model: {NO_KEY}, or add --context-only to print the prompt that would be sent"
        )
    llm = replay_llm(replay) or (language_model(chat) if chat else None)
    from pathrag.query.context import answer_prompt, result_context

    from .store import opened

    with opened(store, embedding_model=embedding_model, llm=llm) as idx:
        result = _retrieve(idx, question, params)
        laid_out = result_context(result)  # within the retrieval's budget
        shown = sources(laid_out)
    prompt = answer_prompt(laid_out)
    if context_only or chat is None or llm is None:
        if json_output:  # nothing is cited yet: every item is what would be sent
            typer.echo(json.dumps({"question": result.query, "prompt": prompt, "sent": shown}, ensure_ascii=False))
        else:
            typer.echo(prompt)
        return
    if json_output:
        answer = llm.complete(prompt)
        cited = cited_sources(answer, shown)
        typer.echo(
            json.dumps(
                {"question": result.query, "answer": answer, "sources": cited, "sent": shown}, ensure_ascii=False
            )
        )
        return
    if stream:
        pieces = []
        for piece in chat.stream(prompt):
            pieces.append(piece.text)
            typer.echo(piece.text, nl=False)
        typer.echo()
        answer = "".join(pieces)
    else:
        answer = llm.complete(prompt)  # the chat model, wrapped
        typer.echo(answer)
    print_sources(cited_sources(answer, shown), shown)


@app.command()
def paths(
    question: str = typer.Argument(..., help="The question.", show_default=False),
    store: Path = STORE,
    format: Format = typer.Option(
        Format.table,
        "--format",
        "-f",
        help="table, json, mermaid (a Mermaid graph) or html (a self-contained picture).",
    ),
    model: str = MODEL,
    embedding_model: str | None = EMBEDDING_MODEL,
    top_k: int | None = TOP_K,
    num_seeds: int | None = NUM_SEEDS,
    max_hops: int | None = MAX_HOPS,
    theta: float | None = THETA,
    context: ContextKind | None = typer.Option(
        None,
        "--context",
        show_default=False,
        help="evidence: the paths `pathrag query` shows the model (chains of the relations nearest the "
        "question, between the entities it names); paths: the paper's paths between seed entities "
        f"[default: {DEFAULTS.context}].",
    ),
    param: list[str] | None = PARAM,
    replay: Path | None = REPLAY,
) -> None:
    """Show the key paths for a question, with scores and hop counts (no model needed)."""
    params = retrieval_params(
        param,
        top_k=top_k,
        num_seeds=num_seeds,
        max_hops=max_hops,
        theta=theta,
        context=context.value if context else None,
    )
    llm = replay_llm(replay) or (language_model(chat) if (chat := chat_model(model)) else None)
    from .store import opened

    with opened(store, embedding_model=embedding_model, llm=llm) as idx:
        result = _retrieve(idx, question, params)
        # the graph alone: the key paths and the entity fill (passages are what `pathrag query` lists among
        # its sources; the further paths are what a context shows when it has room)
        fill = [item for item in result.items if item.kind == "entity"]
        result = dataclasses.replace(result, items=[*result.key_paths, *fill])
        graph = subgraph(idx, result)
    if format is Format.json:
        typer.echo(json.dumps(as_json(result), indent=2, ensure_ascii=False))
    elif format is Format.mermaid:
        typer.echo(to_mermaid(*graph))
    elif format is Format.html:
        typer.echo(to_html(result, *graph))
    else:
        print_paths(result)


@app.command()
def delete(
    doc_ids: list[str] = typer.Argument(
        ...,
        metavar="DOC_ID...",
        help="Document ids (see: pathrag stats), or their files' paths from here (../docs/x.txt).",
        show_default=False,
    ),
    store: Path = STORE,
    model: str = MODEL,
    wait: float = WAIT,
) -> None:
    """Remove documents; what only they supported leaves the graph."""
    from pathrag import IndexConfig

    from .store import opened

    with opened(store, config=IndexConfig(lock_timeout=wait)) as idx:
        # asked only to summarise a merged description never summarised before: made then, if ever (an index
        # given a model at opening reads its name, which makes it)
        idx.llm = lazy_language_model(model)
        # an id is the path as indexed: a path typed from elsewhere (../docs/x.txt) names the one it ends with
        ids, notes = resolve_document_ids(doc_ids, idx.documents)
        for note in notes:
            typer.echo(note, err=True)
        summary = idx.delete(ids)
        stats = idx.stats()
    report(
        f"Deleted from {store}:",
        [
            ("documents deleted", summary.documents),
            ("chunks released", summary.chunks),
            ("entities removed", summary.entities_removed),
            ("entities updated", summary.entities_updated),
            ("relations removed", summary.relations_removed),
            ("relations updated", summary.relations_updated),
            holdings(stats),
        ],
    )


@app.command()
def stats(
    store: Path = STORE,
    check: bool = typer.Option(
        False, "--check", help="Also check that documents, chunks, graph and vectors agree (exit 1 if not)."
    ),
) -> None:
    """Count entities, relations, chunks and documents, and summarise node degrees."""
    from .store import opened, read_meta

    meta = read_meta(store)
    with opened(store, check_on_open=not check) as idx:  # --check lists every problem, not only the counts
        problems = idx.check() if check else []
        counts = idx.stats()
        names = [e.name for e in idx.graph.iter_entities()]  # type: ignore[attr-defined]
        degree = {n: hood.degree for n, hood in idx.graph.neighborhoods(dict.fromkeys(names, 0)).items()}
        documents = {doc_id: len(doc.chunks) for doc_id, doc in sorted(idx.documents.items())}
    rows: list[tuple[str, Any]] = [
        ("documents", counts["documents"]),
        ("chunks", counts["chunks"]),
        ("entities", counts["entities"]),
        ("relations", counts["relations"]),
        ("embeddings", describe_embeddings(meta["embeddings"]) if meta else "?"),
    ]
    if counts.get("imports"):  # documents made by `pathrag import` or the importers: records, not chunks
        rows[1:1] = [("imports", counts["imports"]), ("imported records", counts["records"])]
    if degree:
        values = sorted(degree.values())
        hubs = sorted(degree.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        rows += [
            (
                "degree min / median / mean / max",
                f"{values[0]} / {statistics.median(values):g} / {statistics.fmean(values):.1f} / {values[-1]}",
            ),
            ("isolated entities", sum(v == 0 for v in values)),
            ("hubs", ", ".join(f"{n} ({d})" for n, d in hubs)),
        ]
    report(f"Store {store}:", rows)
    if documents:
        report("Documents (id: chunks):", list(documents.items())[:50])
        if len(documents) > 50:
            typer.echo(f"  … and {len(documents) - 50} more")
    if check:
        if problems:
            raise CliError(
                f"the store {store} is inconsistent: {'; '.join(problems)} (rebuild it: index the "
                "documents into a new --store)"
            )
        typer.echo("Check: documents, chunks, entities, relations and vectors agree.")


@app.command()
def demo(
    store: Path | None = typer.Option(
        None,
        "--store",
        "-s",
        show_default=False,
        help="Keep the demo index in this directory (then try `pathrag paths`).",
    ),
    show_prompts: bool = typer.Option(True, "--prompts/--no-prompts", help="Print the exact prompt of each question."),
    model: str = MODEL,
) -> None:
    """Index a small fictional corpus with recorded extraction answers and answer three questions (no key needed)."""
    started = time.perf_counter()
    from pathrag.demo import DEMO_PARAMS, ask_demo_question, load_corpus, load_questions, open_demo_index

    from .store import check_embeddings, read_meta, write_meta

    docs = load_corpus()
    words = sum(len(d.text.split()) for d in docs)
    chat = chat_model(model)
    if store is not None:
        check_embeddings(store, read_meta(store), HASHING)
        write_meta(store, HASHING)
    typer.echo(
        f"PathRAG demo: {len(docs)} fictional documents about the harbour town of Lowmarrow "
        f"({words:,} words), indexed through the real pipeline with recorded extraction answers."
    )
    typer.echo(
        f"Embeddings: {describe_embeddings(HASHING)}. Answers: "
        + (f"{describe_chat_model(model)}." if chat else "none (set OPENAI_API_KEY to have a model answer).")
    )
    typer.echo(
        f"Retrieval: {DEMO_PARAMS.num_seeds} seeds per question, θ = {DEMO_PARAMS.theta}, "
        f"top {DEMO_PARAMS.top_k} paths, at most {DEMO_PARAMS.max_hops} hops, a context of at most "
        f"{DEMO_PARAMS.max_tokens:,} tokens (the default budget; the answer instructions come on top)."
    )
    if approximate_tokens():
        typer.echo("Token counts are approximate: tiktoken's encoding cannot be downloaded offline.")
    typer.echo("")

    answer_llm = language_model(chat) if chat else None
    index, summary = open_demo_index(store)
    try:
        counts = index.stats()
        typer.echo(
            f"Indexed {summary.documents} documents ({summary.chunks} chunks): {counts['entities']} entities, "
            f"{counts['relations']} relations from {summary.llm_calls} replayed LLM calls "
            f"({summary.tokens:,} tokens) "
            f"in {time.perf_counter() - started:.1f} s.\n"
        )
        runs = []
        for number, question in enumerate(load_questions(), 1):
            runs.append(ask_demo_question(index, question, answer_llm=answer_llm))
            print_question(number, runs[-1], show_prompts)
    finally:
        index.close()
    found = sum(q.rank_of(q.question.expected_path) is not None for q in runs)
    typer.echo(
        f"Done in {time.perf_counter() - started:.1f} s: the reference path of {found} of "
        f"{len(runs)} questions is among the key paths."
    )
    if store is not None:
        typer.echo(
            f'The demo index is kept in {store}; try:\n  pathrag paths "{runs[0].question.question}" '
            f"--store {store} --num-seeds {DEMO_PARAMS.num_seeds} --theta {DEMO_PARAMS.theta} "
            "--format html > demo.html"
        )
    typer.echo(
        "Next, your own documents (LLM extraction needs OPENAI_API_KEY; --extractor lexical and retrieval do not):\n"
        "  pathrag index ./my-docs --store ./my-store [--extractor lexical]\n"
        '  pathrag paths "How is A connected to B?" --store ./my-store --format html > paths.html\n'
        '  pathrag query "How is A connected to B?" --store ./my-store'
    )
