"""The ``pathrag`` command: index files, ask questions, look at the key paths, run the zero-key demo.

Models come from any OpenAI-compatible endpoint through langchain-openai (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ``--model``, ``--embedding-model``). Without a key, retrieval still works with
pathrag's model-free :class:`~pathrag.HashingEmbedder`; commands that must generate say so in one line.

A store is a :class:`~pathrag.PathRAGIndex` directory: its ``pathrag.sqlite`` records the embeddings it
was built with (and the pathrag version), so that any store, whoever made it, opens here and a later
command cannot query it with different embeddings. A store of the older JSON format (with ``cli.json``)
is migrated on first open.

>>> from typer.testing import CliRunner
>>> result = CliRunner().invoke(app, ["stats", "--store", "/nonexistent/store"])
>>> result.exit_code, result.stderr.strip()
(1, 'error: no pathrag store at /nonexistent/store (build one with: pathrag index PATH --store /nonexistent/store)')
"""

from __future__ import annotations

import html
import json
import logging
import math
import os
import statistics
import sys
import time
import traceback
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import Enum
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

try:  # recent typer ships its own copy of click
    from typer._click.exceptions import NoArgsIsHelpError, UsageError
except ImportError:  # older typer runs on click itself
    from click.exceptions import NoArgsIsHelpError, UsageError  # type: ignore[assignment]

import pathrag
from pathrag import Document, HashingEmbedder, IndexConfig, PathRAGIndex, RetrievalResult
from pathrag.context import DEFAULT_CONTEXT_TOKENS, answer_prompt, render_entity, result_context
from pathrag.store import LEGACY_FILES, STORE_FILE, StoreError, StoreLocked, read_store_info, write_store_info
from pathrag.demo import (
    DEMO_PARAMS,
    QuestionRun,
    ReplayLLM,
    ReplayMiss,
    ask_demo_question,
    load_corpus,
    load_questions,
    open_demo_index,
)
from pathrag.tokens import approximate_token_count, count_tokens, default_token_counter

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["CliError", "app", "main"]

STORE_META = "cli.json"  # the JSON format's record of the embeddings (migrated into the store)
HASHING = "hashing-256"  # the offline embeddings: pathrag.HashingEmbedder(256)
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
TEXT_SUFFIXES = {".txt", ".text", ".md", ".markdown"}
HTML_SUFFIXES = {".html", ".htm"}
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".pdf"}
NO_KEY = "set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible endpoint)"

out = Console(soft_wrap=True, highlight=False)


class CliError(Exception):
    """An expected failure: shown as one ``error: ...`` line, exit code ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _one_line(text: str, limit: int = 500) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Group(TyperGroup):
    """Every failure becomes one ``error:`` line and a non-zero exit; ``--debug`` (anywhere) adds the traceback."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        end = argv.index("--") if "--" in argv else len(argv)
        debug = "--debug" in argv[:end]
        argv = [a for a in argv[:end] if a != "--debug"] + argv[end:]
        code = self._run(argv, prog_name or "pathrag", complete_var, debug, **extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(self, argv: list[str], prog_name: str, complete_var: str | None, debug: bool, **extra: Any) -> int:
        with warnings.catch_warnings(), _debug_logging(debug):
            # reported as "(approximate)" next to token counts instead of a two-line warning
            warnings.filterwarnings("ignore", message="tiktoken encoding", category=RuntimeWarning)
            try:
                code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
                return code if isinstance(code, int) else 0
            except NoArgsIsHelpError as exc:
                typer.echo(exc.format_message())
                return 0
            except UsageError as exc:
                where = exc.ctx.command_path if exc.ctx is not None else prog_name
                _fail(f"{_one_line(exc.format_message())} (see: {where} --help)")
                return exc.exit_code
            except (typer.Abort, KeyboardInterrupt):
                _fail("aborted")
                return 130
            except CliError as exc:
                if debug:
                    traceback.print_exc()
                _fail(str(exc))
                return exc.code
            except Exception as exc:  # the command boundary: never a traceback unless --debug
                if debug:
                    traceback.print_exc()
                hint = "" if debug else " (--debug shows the traceback)"
                _fail(f"{type(exc).__name__}: {_one_line(str(exc))}{hint}")
                return 1


@contextmanager
def _debug_logging(debug: bool) -> Iterator[None]:
    """With ``--debug``, pathrag's own debug logs go to stderr for this run (not the HTTP clients': they
    may print request headers)."""
    if not debug:
        yield
        return
    handler = logging.StreamHandler()  # bound to this run's stderr, so it is removed afterwards
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    loggers = [logging.getLogger(name) for name in ("pathrag", "langchain_pathrag")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.removeHandler(handler)
            logger.setLevel(level)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)


app = typer.Typer(
    cls=_Group,
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


# -- models and stores ---------------------------------------------------------------------------------


def _has_key() -> bool:
    return bool(os.environ.get("OPENAI_API_KEY", "").strip())


def _chat_model(model: str) -> BaseChatModel | None:
    """The OpenAI-compatible chat model, or None without a key (OPENAI_BASE_URL is read by the SDK)."""
    if not _has_key():
        return None
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=model)


def _language_model(chat: BaseChatModel) -> pathrag.LanguageModel:
    from langchain_pathrag.models import LangChainLanguageModel

    return LangChainLanguageModel(chat)


def _embedder(spec: str, store: Path) -> pathrag.Embedder:
    if spec == HASHING:
        return HashingEmbedder(256)
    dimensions = spec.removeprefix("hashing-")
    if spec.startswith("hashing-") and dimensions.isdigit():  # a store made by the library, say
        return HashingEmbedder(int(dimensions))
    if not spec.startswith("openai:"):
        raise CliError(f"the store {store} was built with the embeddings {spec!r}, which the command line cannot "
                       "make; open it from Python with the same embedder")
    name = spec.removeprefix("openai:")
    if not _has_key():
        raise CliError(f"the store {store} uses the embedding model {name!r}: {NO_KEY}")
    from langchain_openai import OpenAIEmbeddings

    from langchain_pathrag.models import LangChainEmbedder

    # raw text, no client-side tiktoken: works offline-cached or not, and with non-OpenAI endpoints
    return LangChainEmbedder(OpenAIEmbeddings(model=name, check_embedding_ctx_length=False))


def _embedding_spec(requested: str | None) -> str:
    if requested is None:
        return f"openai:{DEFAULT_EMBEDDING_MODEL}" if _has_key() else HASHING
    return HASHING if requested.strip().lower() in {"hashing", HASHING} else f"openai:{requested.strip()}"


def _describe(spec: str) -> str:
    if spec.startswith("hashing-") and spec != HASHING:  # a library-made store, e.g. HashingEmbedder(128)
        return f"{spec} (pathrag.HashingEmbedder, offline and model-free)"
    return ("hashing (pathrag.HashingEmbedder, offline and model-free)" if spec == HASHING
            else f"{spec.removeprefix('openai:')} (OpenAI-compatible endpoint)")


def _read_meta(store: Path) -> dict[str, Any] | None:
    """``{"embeddings": spec}`` as the store records it; ``{}`` if it does not say; ``None``: no store yet."""
    if not store.exists():
        return None
    if not store.is_dir():
        raise CliError(f"{store} is a file, not a pathrag store directory")
    try:
        info = read_store_info(store)
    except StoreError as exc:
        raise CliError(_one_line(str(exc))) from exc
    if info is not None:
        return {"embeddings": info["embedder"]} if info.get("embedder") else {}
    meta = store / STORE_META  # a store of the JSON format, migrated when opened
    if not meta.exists():
        if any(p.name in LEGACY_FILES for p in store.iterdir()):
            return {}
        if any(store.iterdir()):
            raise CliError(f"{store} is not a store made by the pathrag command (no {STORE_FILE})")
        return None
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) and isinstance(data.get("embeddings"), str) else {}
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read {meta}: {exc}") from exc


def _open_store(store: Path, *, create: bool = False, embedding_model: str | None = None,
                llm: pathrag.LanguageModel | None = None, config: IndexConfig | None = None) -> PathRAGIndex:
    """Open (or, with ``create``, start) a store, refusing embeddings other than the ones it was built with."""
    meta = _read_meta(store)
    if meta is None and not create:
        raise CliError(f"no pathrag store at {store} (build one with: pathrag index PATH --store {store})")
    if meta == {}:
        raise CliError(f"the store {store} does not say which embeddings it uses (a store made by the library "
                       "with an embedder of its own: open it from Python)")
    spec = meta["embeddings"] if meta else _embedding_spec(embedding_model)
    if meta and embedding_model is not None and _embedding_spec(embedding_model) != spec:
        raise CliError(f"the store {store} was built with the embeddings {_describe(spec)}, not "
                       f"{_describe(_embedding_spec(embedding_model))}; use another --store to switch")
    embedder = _embedder(spec, store)
    # the one-line note of a JSON-format store's migration goes to stderr, whatever logging is set up
    note = logging.StreamHandler(sys.stderr)
    note.setFormatter(logging.Formatter("%(message)s"))
    note.setLevel(logging.WARNING)
    store_log = logging.getLogger("pathrag.store")
    store_log.addHandler(note)
    try:  # the store records the embeddings (and refuses others) itself
        return PathRAGIndex(store, llm=llm, embedder=embedder, config=config, embedder_name=spec)
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot open the store {store}: {_one_line(str(exc))}") from exc
    finally:
        store_log.removeHandler(note)


def _write_meta(store: Path, spec: str) -> None:
    """Create the store (if needed) recording its embeddings."""
    try:
        write_store_info(store, embedder=spec, pathrag_version=pathrag.__version__)
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot write the store {store}: {_one_line(str(exc))}") from exc


@contextmanager
def _opened(store: Path, **kwargs: Any) -> Iterator[PathRAGIndex]:
    index = _open_store(store, **kwargs)
    try:
        yield index
    except StoreLocked as exc:  # another process is writing: say how to wait from the command line
        raise CliError(str(exc).split(": wait for it")[0] + ": wait for it to finish, or add --wait SECONDS") from exc
    finally:
        index.close()


def _replay(path: Path | None) -> ReplayLLM | None:
    if path is None:
        return None
    try:
        return ReplayLLM.from_directory(path)
    except ReplayMiss as exc:
        raise CliError(str(exc)) from exc


# -- reading files -----------------------------------------------------------------------------------


class _HTMLText(HTMLParser):
    """Visible text of an HTML page, one line per block element; scripts and styles dropped."""

    BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article",
              "header", "footer", "blockquote", "pre", "table", "ul", "ol", "title"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "noscript", "template"):
            self._skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "noscript", "template"):
            self._skip = max(0, self._skip - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)

    def text(self) -> str:
        lines = (" ".join(line.split()) for line in "".join(self.parts).splitlines())
        return "\n".join(line for line in lines if line)


def html_to_text(markup: str) -> str:
    """The visible text of an HTML document.

    >>> html_to_text("<h1>Lowmarrow</h1><script>x()</script><p>A harbour&nbsp;town.</p>")
    'Lowmarrow\\nA harbour town.'
    """
    parser = _HTMLText()
    parser.feed(markup)
    parser.close()
    return parser.text()


def _collect(paths: Sequence[Path], skipped: list[str] | None = None) -> list[tuple[str, Path]]:
    """``(document id, file)`` for every supported regular file; ids are paths relative to the argument given.

    A FIFO, socket or device with a supported name is skipped with a note (reading a FIFO would block
    forever); notes go to ``skipped`` if given, else to stderr.
    """
    found: dict[str, Path] = {}
    notes: list[str] = [] if skipped is None else skipped
    for arg in paths:
        if not arg.exists():
            raise CliError(f"no such file or folder: {arg}")
        if arg.is_dir():
            files = []
            for p in sorted(arg.rglob("*")):
                if p.suffix.lower() not in SUFFIXES or any(part.startswith(".") for part in p.relative_to(arg).parts):
                    continue
                if p.is_file():  # follows symbolic links; true only for a regular file
                    files.append((p.relative_to(arg).as_posix(), p))
                elif not p.is_dir():
                    notes.append(f"{p}: not a regular file")
            if not files:
                raise CliError(f"no text, Markdown, HTML or PDF files under {arg}")
        elif not arg.is_file() and arg.suffix.lower() in SUFFIXES:
            notes.append(f"{arg}: not a regular file")
            continue
        elif arg.suffix.lower() in SUFFIXES:
            files = [(arg.name, arg)]
        else:
            raise CliError(f"unsupported file type: {arg} (supported: {', '.join(sorted(SUFFIXES))})")
        for doc_id, path in files:
            if doc_id in found and found[doc_id].resolve() != path.resolve():
                raise CliError(f"{found[doc_id]} and {path} would both get the document id {doc_id!r}; "
                               "index them in separate runs")
            found[doc_id] = path
    if skipped is None:
        for note in notes:
            typer.echo(f"skipped {note}", err=True)
    return list(found.items())


def _read(path: Path) -> str:
    """The text of one file. Raises :class:`ImportError` for a PDF when pypdf is missing."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        from pypdf import PdfReader  # optional: the caller skips PDFs without it
    try:
        if suffix == ".pdf":
            return "\n\n".join(page.extract_text() or "" for page in PdfReader(path).pages)
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CliError(f"cannot read {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except Exception as exc:  # permissions, broken PDFs: name the file, not the parser's internals
        raise CliError(f"cannot read {path}: {_one_line(getattr(exc, 'strerror', None) or str(exc))}") from exc
    return html_to_text(text) if suffix in HTML_SUFFIXES else text


def _documents(paths: Sequence[Path]) -> list[Document]:
    """Read and split every file; files without text are skipped (an error if nothing is left)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from langchain_pathrag.indexer import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE

    splitter = RecursiveCharacterTextSplitter(chunk_size=DEFAULT_CHUNK_SIZE, chunk_overlap=DEFAULT_CHUNK_OVERLAP,
                                              length_function=count_tokens)
    docs: list[Document] = []
    skipped: list[str] = []
    for doc_id, path in _collect(paths, skipped):
        try:
            chunks = splitter.split_text(_read(path))
        except ImportError:
            skipped.append(f"{path}: install pypdf to index PDF files")
            continue
        if chunks:
            docs.append(Document(id=doc_id, chunks=tuple(chunks), metadata={"source": str(path)}))
        else:
            skipped.append(f"{path}: no text")
    if not docs:
        raise CliError(_one_line("nothing to index: " + "; ".join(skipped)))
    for note in skipped:
        typer.echo(f"skipped {note}", err=True)
    return docs


# -- output helpers ----------------------------------------------------------------------------------


def _approximate_tokens() -> bool:
    return default_token_counter() is approximate_token_count


def _token_note() -> str:
    return " (approximate: tiktoken's encoding is not available offline)" if _approximate_tokens() else ""


def _report(title: str, rows: Sequence[tuple[str, Any]]) -> None:
    """A titled block of aligned ``key  value`` lines (plain text: safe to grep and to pipe)."""
    width = max(len(key) for key, _ in rows)
    typer.echo(title)
    for key, value in rows:
        typer.echo(f"  {key:<{width}}  {f'{value:,}' if isinstance(value, int) else value}")


def _arrow(nodes: Sequence[str]) -> str:
    return " → ".join(nodes)


def _retrieve(index: PathRAGIndex, question: str, keyword_llm: bool, **params: Any) -> RetrievalResult:
    try:
        return index.retrieve(question, keyword_llm=keyword_llm, **params)
    except (TypeError, ValueError) as exc:  # bad retrieval settings
        raise CliError(str(exc), code=2) from exc


def _hop_summary(result: RetrievalResult) -> str:
    hops = [item.hops for item in result.paths]
    if not hops:
        return "no paths"
    counts = ", ".join(f"{hops.count(h)} × {h} hop{'s' * (h != 1)}" for h in sorted(set(hops)))
    return f"{len(hops)} path{'s' * (len(hops) != 1)}: {counts}; mean {statistics.fmean(hops):.1f} hops"


# -- options -----------------------------------------------------------------------------------------

STORE = typer.Option(..., "--store", "-s", help="The store directory (a PathRAG index).", show_default=False)
MODEL = typer.Option(DEFAULT_MODEL, "--model", "-m", envvar="PATHRAG_MODEL",
                     help="Chat model of the OpenAI-compatible endpoint (needs OPENAI_API_KEY).")
EMBEDDING_MODEL = typer.Option(
    None, "--embedding-model", "-e", envvar="PATHRAG_EMBEDDING_MODEL", show_default=False,
    help=f"Embedding model for a new store: a model of the endpoint (default {DEFAULT_EMBEDDING_MODEL} with "
    "OPENAI_API_KEY) or 'hashing' (offline, the default without a key). An existing store keeps its own.")
REPLAY = typer.Option(None, "--replay", hidden=True, exists=True,
                      help="Folder with corpus/ and extractions/: replay recorded answers instead of a model.")
TOP_K = typer.Option(15, "--top-k", "-k", min=1, help="Number of key paths.")
NUM_SEEDS = typer.Option(40, "--num-seeds", min=1, help="Seed entities taken from the question's keywords.")
MAX_HOPS = typer.Option(3, "--max-hops", min=1, help="Longest path, in relations.")
THETA = typer.Option(0.05, "--theta", min=0.0, help="Pruning threshold of the flow (PathRAG's θ).")


class ContextKind(str, Enum):
    evidence = "evidence"
    paths = "paths"


CONTEXT = typer.Option(ContextKind.evidence, "--context",
                       help="evidence: source passages ranked with the flow, then the key paths (default); "
                            "paths: the paper's paths-only context.")


class Format(str, Enum):
    table = "table"
    json = "json"
    mermaid = "mermaid"
    html = "html"


# -- commands ----------------------------------------------------------------------------------------


@app.command()
def index(
    paths: list[Path] = typer.Argument(..., help="Files or folders (.txt, .md, .html, and .pdf with pypdf).",
                                       show_default=False),
    store: Path = STORE,
    model: str = MODEL,
    embedding_model: str | None = EMBEDDING_MODEL,
    replay: Path | None = REPLAY,
    wait: float = typer.Option(0.0, "--wait", min=0, metavar="SECONDS",
                               help="Wait up to SECONDS for another process writing the store (0: fail at once)."),
) -> None:
    """Extract entities and relations from documents into the store (re-running skips unchanged files)."""
    llm = _replay(replay) or (_language_model(chat) if (chat := _chat_model(model)) else None)
    if llm is None:
        raise CliError(f"indexing extracts entities with a language model: {NO_KEY}")
    docs = _documents(paths)
    # a replay miss is not transient: no retries with back-off
    config = IndexConfig(show_progress=True, lock_timeout=wait, **({"max_attempts": 1} if replay else {}))
    with _opened(store, create=True, embedding_model=embedding_model, llm=llm, config=config) as idx:
        summary = idx.insert(docs)
        stats = idx.stats()
    _report(f"Indexed into {store}:", [
        ("documents indexed", summary.documents), ("documents unchanged", summary.unchanged),
        ("chunks", summary.chunks), ("chunks extracted", summary.chunks_extracted),
        ("entities touched", summary.entities), ("relations touched", summary.relations),
        ("LLM calls", summary.llm_calls), ("LLM cache hits", summary.cache_hits),
        ("tokens (prompt + completion)", f"{summary.tokens:,}{_token_note()}"),
        ("store now holds", f"{stats['documents']:,} documents, {stats['entities']:,} entities, "
                            f"{stats['relations']:,} relations"),
    ])
    for failure in summary.failures:
        typer.echo(f"failed: chunk {failure.chunk_id} of {', '.join(failure.document_ids)}: "
                   f"{_one_line(failure.error, 300)}", err=True)
    if summary.failures:
        raise CliError(f"{len(summary.failures)} chunk(s) failed; run the same command again to retry them")


@app.command()
def query(
    question: str = typer.Argument(..., help="The question.", show_default=False),
    store: Path = STORE,
    context_only: bool = typer.Option(False, "--context-only", help="Print the prompt that would be sent, "
                                      "without calling a model."),
    stream: bool = typer.Option(False, "--stream", help="Print the answer as it is generated."),
    max_tokens: int = typer.Option(DEFAULT_CONTEXT_TOKENS, "--max-tokens", min=1,
                                   help="Token budget of the context (least relevant evidence goes first)."),
    context: ContextKind = CONTEXT,
    model: str = MODEL,
    embedding_model: str | None = EMBEDDING_MODEL,
    top_k: int = TOP_K,
    num_seeds: int = NUM_SEEDS,
    max_hops: int = MAX_HOPS,
    theta: float = THETA,
    replay: Path | None = REPLAY,
) -> None:
    """Answer a question from the key paths and their passages (or, with --context-only, print the prompt)."""
    chat = None if replay else _chat_model(model)
    if chat is None and not context_only:
        raise CliError(f"answering needs a language model: {NO_KEY}, or add --context-only to print the "
                       "prompt that would be sent")
    llm = _replay(replay) or (_language_model(chat) if chat else None)
    with _opened(store, embedding_model=embedding_model, llm=llm) as idx:
        result = _retrieve(idx, question, llm is not None, top_k=top_k, num_seeds=num_seeds, max_hops=max_hops,
                           theta=theta, context=context.value)
    prompt = answer_prompt(result_context(result, max_tokens=max_tokens))
    if context_only or chat is None or llm is None:
        typer.echo(prompt)
    elif stream:
        for piece in chat.stream(prompt):
            typer.echo(piece.text, nl=False)
        typer.echo()
    else:
        typer.echo(llm.complete(prompt))  # the chat model, wrapped


@app.command()
def paths(
    question: str = typer.Argument(..., help="The question.", show_default=False),
    store: Path = STORE,
    format: Format = typer.Option(Format.table, "--format", "-f",
                                  help="table, json, mermaid (a Mermaid graph) or html (a self-contained picture)."),
    model: str = MODEL,
    embedding_model: str | None = EMBEDDING_MODEL,
    top_k: int = TOP_K,
    num_seeds: int = NUM_SEEDS,
    max_hops: int = MAX_HOPS,
    theta: float = THETA,
    replay: Path | None = REPLAY,
) -> None:
    """Show the key paths for a question, with scores and hop counts (no model needed)."""
    llm = _replay(replay) or (_language_model(chat) if (chat := _chat_model(model)) else None)
    with _opened(store, embedding_model=embedding_model, llm=llm) as idx:
        result = _retrieve(idx, question, llm is not None, top_k=top_k, num_seeds=num_seeds, max_hops=max_hops,
                           theta=theta, context="paths")  # this command shows the key paths themselves
        graph = _subgraph(idx, result)
    if format is Format.json:
        typer.echo(json.dumps(_as_json(result), indent=2, ensure_ascii=False))
    elif format is Format.mermaid:
        typer.echo(to_mermaid(*graph))
    elif format is Format.html:
        typer.echo(to_html(result, *graph))
    else:
        _print_paths(result)


@app.command()
def delete(
    doc_ids: list[str] = typer.Argument(..., metavar="DOC_ID...", help="Document ids (see: pathrag stats).",
                                        show_default=False),
    store: Path = STORE,
    model: str = MODEL,
    wait: float = typer.Option(0.0, "--wait", min=0, metavar="SECONDS",
                               help="Wait up to SECONDS for another process writing the store (0: fail at once)."),
) -> None:
    """Remove documents; what only they supported leaves the graph."""
    chat = _chat_model(model)  # only needed to summarise a merged description never summarised before
    with _opened(store, llm=_language_model(chat) if chat else None, config=IndexConfig(lock_timeout=wait)) as idx:
        missing = [d for d in dict.fromkeys(doc_ids) if d not in idx.documents]
        if missing:
            known = ", ".join(sorted(idx.documents)[:5]) or "none"
            raise CliError(f"no document {', '.join(map(repr, missing))} in {store} (documents: {known}"
                           f"{', …' if len(idx.documents) > 5 else ''})")
        summary = idx.delete(doc_ids)
        stats = idx.stats()
    _report(f"Deleted from {store}:", [
        ("documents deleted", summary.documents), ("chunks released", summary.chunks),
        ("entities removed", summary.entities_removed), ("entities updated", summary.entities_updated),
        ("relations removed", summary.relations_removed), ("relations updated", summary.relations_updated),
        ("store now holds", f"{stats['documents']:,} documents, {stats['entities']:,} entities, "
                            f"{stats['relations']:,} relations"),
    ])


@app.command()
def stats(store: Path = STORE, check: bool = typer.Option(
        False, "--check", help="Also check that documents, chunks, graph and vectors agree (exit 1 if not).")) -> None:
    """Count entities, relations, chunks and documents, and summarise node degrees."""
    meta = _read_meta(store)
    with _opened(store) as idx:
        problems = idx.check() if check else []
        counts = idx.stats()
        names = [e.name for e in idx.graph.iter_entities()]  # type: ignore[attr-defined]
        degree = {n: hood.degree for n, hood in idx.graph.neighborhoods(dict.fromkeys(names, 0)).items()}
        documents = {doc_id: len(doc["chunks"]) for doc_id, doc in sorted(idx.documents.items())}
    rows: list[tuple[str, Any]] = [
        ("documents", counts["documents"]), ("chunks", counts["chunks"]), ("entities", counts["entities"]),
        ("relations", counts["relations"]), ("embeddings", _describe(meta["embeddings"]) if meta else "?")]
    if counts.get("imports"):  # documents made by `pathrag import` or the importers: records, not chunks
        rows[1:1] = [("imports", counts["imports"]), ("imported records", counts["records"])]
    if degree:
        values = sorted(degree.values())
        hubs = sorted(degree.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        rows += [("degree min / median / mean / max",
                  f"{values[0]} / {statistics.median(values):g} / {statistics.fmean(values):.1f} / {values[-1]}"),
                 ("isolated entities", sum(v == 0 for v in values)),
                 ("hubs", ", ".join(f"{n} ({d})" for n, d in hubs))]
    _report(f"Store {store}:", rows)
    if documents:
        _report("Documents (id: chunks):", list(documents.items())[:50])
        if len(documents) > 50:
            typer.echo(f"  … and {len(documents) - 50} more")
    if check:
        if problems:
            raise CliError(f"the store {store} is inconsistent: {'; '.join(problems)} (rebuild it: index the "
                           "documents into a new --store)")
        typer.echo("Check: documents, chunks, entities, relations and vectors agree.")


@app.command()
def demo(
    store: Path | None = typer.Option(None, "--store", "-s", show_default=False,
                                      help="Keep the demo index in this directory (then try `pathrag paths`)."),
    show_prompts: bool = typer.Option(True, "--prompts/--no-prompts", help="Print the exact prompt of each question."),
    model: str = MODEL,
) -> None:
    """Index a small fictional corpus with recorded extraction answers and answer three questions (no key needed)."""
    started = time.perf_counter()
    docs = load_corpus()
    words = sum(len(d.text.split()) for d in docs)
    chat = _chat_model(model)
    if store is not None:
        meta = _read_meta(store)
        if meta and meta.get("embeddings") != HASHING:
            raise CliError(f"the store {store} uses other embeddings than the demo's; choose another --store")
        _write_meta(store, HASHING)
    typer.echo(f"PathRAG demo: {len(docs)} fictional documents about the harbour town of Lowmarrow "
               f"({words:,} words), indexed through the real pipeline with recorded extraction answers.")
    typer.echo(f"Embeddings: {_describe(HASHING)}. Answers: "
               + (f"{model} via OPENAI_API_KEY." if chat else "none (set OPENAI_API_KEY to have a model answer)."))
    typer.echo(f"Retrieval: {DEMO_PARAMS.num_seeds} seeds per question, θ = {DEMO_PARAMS.theta}, "
               f"top {DEMO_PARAMS.top_k} paths, at most {DEMO_PARAMS.max_hops} hops.")
    if _approximate_tokens():
        typer.echo("Token counts are approximate: tiktoken's encoding cannot be downloaded offline.")
    typer.echo("")

    answer_llm = _language_model(chat) if chat else None
    index, summary = open_demo_index(store)
    try:
        counts = index.stats()
        typer.echo(f"Indexed {summary.documents} documents ({summary.chunks} chunks): {counts['entities']} entities, "
                   f"{counts['relations']} relations from {summary.llm_calls} replayed LLM calls "
                   f"({summary.tokens:,} tokens) "
                   f"in {time.perf_counter() - started:.1f} s.\n")
        runs = []
        for number, question in enumerate(load_questions(), 1):
            runs.append(ask_demo_question(index, question, answer_llm=answer_llm))
            _print_question(number, runs[-1], show_prompts)
    finally:
        index.close()
    found = sum(q.rank_of(q.question.expected_path) is not None for q in runs)
    typer.echo(f"Done in {time.perf_counter() - started:.1f} s: the reference path of {found} of "
               f"{len(runs)} questions is among the key paths.")
    if store is not None:
        typer.echo(f"The demo index is kept in {store}; try:\n  pathrag paths \"{runs[0].question.question}\" "
                   f"--store {store} --num-seeds {DEMO_PARAMS.num_seeds} --theta {DEMO_PARAMS.theta} "
                   "--format html > demo.html")
    typer.echo("Next, your own documents (extraction needs OPENAI_API_KEY; retrieval does not):\n"
               "  pathrag index ./my-docs --store ./my-store\n"
               "  pathrag paths \"How is A connected to B?\" --store ./my-store --format html > paths.html\n"
               "  pathrag query \"How is A connected to B?\" --store ./my-store")


def _print_question(number: int, done: QuestionRun, show_prompt: bool) -> None:
    result, question = done.result, done.question
    typer.echo(f"━━ Question {number}: {question.question}")
    typer.echo(f"Keywords: {', '.join(result.keywords.low_level or result.keywords.high_level) or question.question}")
    typer.echo(f"Seed entities: {', '.join(result.seeds) or '(none)'}")
    typer.echo("Key paths (best first):")
    for rank, item in enumerate(result.paths, 1):
        typer.echo(f"  {rank}. score {item.score:.4f}  {item.hops} hop{'s' * (item.hops != 1)}  {_arrow(item.nodes)}")
    found = done.rank_of(question.expected_path)
    typer.echo(f"Reference path: {_arrow(question.expected_path)} — "
               + (f"key path {found}" if found else "not among the key paths"))
    typer.echo(f"Hops: {_hop_summary(result)}")
    typer.echo(f"Context: {done.context.tokens:,} tokens, {len(done.context.paths)} paths "
               "(least reliable first, most reliable last)")
    if show_prompt:
        head = f"── exact prompt ({count_tokens(done.prompt):,} tokens) "
        typer.echo(head + "─" * max(0, 78 - len(head)))
        typer.echo(done.prompt)
        typer.echo("── end of prompt " + "─" * 61)
    if done.answer is not None:
        typer.echo(f"Answer: {done.answer.strip()}")
    typer.echo("")


# -- paths as table, JSON, Mermaid and HTML --------------------------------------------------------------


def _print_paths(result: RetrievalResult) -> None:
    out.print(Text(f"Keywords: {', '.join(result.keywords.low_level + result.keywords.high_level) or result.query}"))
    more = f", … ({len(result.seeds) - 10} more)" if len(result.seeds) > 10 else ""
    out.print(Text(f"Seeds ({len(result.seeds)}): {', '.join(result.seeds[:10]) or '(none)'}{more}"))
    if not result.items:
        out.print("No key paths: no entity of the store matches the question.")
        return
    table = Table("#", "score", "hops", "path", title=f"Key paths ({_hop_summary(result)})")
    for rank, item in enumerate(result.items, 1):
        score = f"{item.score:.4f}" if item.kind == "path" else "seed"
        table.add_row(str(rank), score, str(item.hops), Text(_arrow(item.nodes)))
    out.print(table)


def _as_json(result: RetrievalResult) -> dict[str, Any]:
    return {"query": result.query,
            "keywords": {"high_level": list(result.keywords.high_level), "low_level": list(result.keywords.low_level)},
            "seeds": result.seeds,
            "items": [{"id": item.id, **item.metadata(), "text": item.text} for item in result.items]}


Subgraph = tuple[dict[str, pathrag.Entity | None], dict[tuple[str, str], pathrag.Relation | None], list[str]]


def _subgraph(index: PathRAGIndex, result: RetrievalResult) -> Subgraph:
    """The retrieved entities (first-seen order), the relations along the paths, and the seeds among them."""
    names = list(dict.fromkeys(n for item in result.items for n in item.nodes))
    pairs = list(dict.fromkeys((min(a, b), max(a, b)) for item in result.paths
                               for a, b in zip(item.nodes, item.nodes[1:])))
    entities, relations = index.graph.get_entities(names), index.graph.get_relations(pairs)
    return ({n: entities.get(n) for n in names}, {p: relations.get(p) for p in pairs},  # type: ignore[misc]
            [s for s in result.seeds if s in names])


def _edge_ends(pair: tuple[str, str], relation: pathrag.Relation | None) -> tuple[str, str]:
    return (relation.source, relation.target) if relation is not None else pair


def _edge_label(relation: pathrag.Relation | None) -> str:
    return ", ".join(relation.keywords[:2]) if relation is not None and relation.keywords else "related"


def _mermaid_text(text: str) -> str:
    return " ".join(text.split()).replace("#", "#35;").replace('"', "#quot;")


def to_mermaid(entities: dict[str, Any], relations: dict[tuple[str, str], Any], seeds: Sequence[str]) -> str:
    """A Mermaid ``graph LR``: one ``nK["NAME"]`` line per entity, one ``a -- "keywords" --> b`` per relation.

    >>> print(to_mermaid({"A": None, "B \\"x\\"": None}, {("A", 'B "x"'): None}, ["A"]))
    graph LR
        n1["A"]
        n2["B #quot;x#quot;"]
        n1 -- "related" --> n2
        classDef seed stroke-width:3px
        class n1 seed
    """
    ids = {name: f"n{i}" for i, name in enumerate(entities, 1)}
    lines = ["graph LR"]
    lines += [f'    {ids[name]}["{_mermaid_text(name)}"]' for name in entities]
    for pair, relation in relations.items():
        a, b = _edge_ends(pair, relation)
        lines.append(f'    {ids[a]} -- "{_mermaid_text(_edge_label(relation))}" --> {ids[b]}')
    if seeds:
        lines += ["    classDef seed stroke-width:3px", f"    class {','.join(ids[s] for s in seeds)} seed"]
    return "\n".join(lines)


_CSS = """body{font-family:system-ui,sans-serif;margin:2rem;color:#1f2933}
svg{border:1px solid #d9e2ec;border-radius:8px;max-width:100%;height:auto;background:#fbfcfe}
.edge{stroke:#829ab1;stroke-width:1.5}.edge-label{font-size:11px;fill:#52606d;paint-order:stroke;stroke:#fbfcfe;stroke-width:4px}
.node circle{fill:#dceefb;stroke:#2680c2;stroke-width:1.5}.node.seed circle{fill:#ffe3a3;stroke:#cb6e17;stroke-width:3}
.node text{font-size:12px;font-weight:600}td,th{padding:.2rem .6rem;text-align:left}
.score{font-variant-numeric:tabular-nums}"""


def _layout(entities: dict[str, Any], relations: dict[tuple[str, str], Any]
            ) -> tuple[dict[str, tuple[float, float]], int, int]:
    """Deterministic positions: each connected part gets a spring layout stretched over its own band,
    the largest part on top; returns the positions and the picture's size."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(entities)
    graph.add_edges_from(relations)
    order = {name: i for i, name in enumerate(entities)}
    parts = sorted(nx.connected_components(graph), key=lambda p: (-len(p), min(order[n] for n in p)))
    width, pad_x, pad_y = 960, 150.0, 40.0  # room for the labels
    pos: dict[str, tuple[float, float]] = {}
    top = 0.0
    for part in parts:
        band = 140.0 if len(part) <= 2 else min(560.0, 120.0 + 50.0 * len(part))
        sub = graph.subgraph(sorted(part, key=order.__getitem__))
        raw = nx.spring_layout(sub, seed=7) if len(sub) > 1 else {n: (0.0, 0.0) for n in sub}
        xs, ys = [float(p[0]) for p in raw.values()], [float(p[1]) for p in raw.values()]

        def stretch(value: float, low: float, high: float, start: float, size: float, pad: float) -> float:
            return start + size / 2 if high - low < 1e-9 else start + pad + (value - low) / (high - low) * (size - 2 * pad)

        for name, (x, y) in raw.items():
            pos[name] = (stretch(float(x), min(xs), max(xs), 0.0, width, pad_x),
                         stretch(float(y), min(ys), max(ys), top, band, pad_y))
        top += band
    return pos, width, max(1, round(top))


def to_html(result: RetrievalResult, entities: dict[str, Any], relations: dict[tuple[str, str], Any],
            seeds: Sequence[str]) -> str:
    """A self-contained HTML page (inline SVG, no scripts, no external links) of the retrieved subgraph."""
    radius = 16
    pos, width, height = _layout(entities, relations)
    esc = html.escape
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{esc(f"Retrieved subgraph: {len(entities)} entities, {len(relations)} relations")}">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#829ab1"/></marker></defs>']
    labelled = len(relations) <= 12  # beyond that labels pile up; the tooltips still say it all
    for pair, relation in relations.items():
        a, b = _edge_ends(pair, relation)
        (x1, y1), (x2, y2) = pos[a], pos[b]
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        dx, dy = (x2 - x1) / length * radius, (y2 - y1) / length * radius  # stop at the circles' rims
        tip = f"{a} → {b}" + (f": {relation.description}" if relation is not None and relation.description else "")
        svg.append(f'<g class="relation"><title>{esc(tip)}</title>'
                   f'<line class="edge" x1="{x1 + dx:.1f}" y1="{y1 + dy:.1f}" x2="{x2 - dx:.1f}" y2="{y2 - dy:.1f}" '
                   f'marker-end="url(#arrow)"/>'
                   + (f'<text class="edge-label" x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2 - 4:.1f}" '
                      f'text-anchor="middle">{esc(_edge_label(relation))}</text>' if labelled else "")
                   + "</g>")
    for name, entity in entities.items():
        x, y = pos[name]
        tip = render_entity(name, entity)
        svg.append(f'<g class="node{" seed" if name in seeds else ""}"><title>{esc(tip)}</title>'
                   f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}"/>'
                   f'<text x="{x:.1f}" y="{y + radius + 14:.1f}" text-anchor="middle">{esc(name)}</text></g>')
    svg.append("</svg>")
    rows = "".join(
        f'<tr><td>{rank}</td><td class="score">{f"{item.score:.4f}" if item.kind == "path" else "seed"}</td>'
        f"<td>{item.hops}</td><td>{esc(_arrow(item.nodes))}</td></tr>"
        for rank, item in enumerate(result.items, 1))
    keywords = ", ".join(result.keywords.low_level + result.keywords.high_level) or result.query
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>pathrag: key paths for {esc(result.query)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>",
        f"<h1>Key paths</h1><p><strong>Question:</strong> {esc(result.query)}</p>",
        f"<p><strong>Keywords:</strong> {esc(keywords)}<br><strong>Seeds</strong> (outlined in orange): "
        f"{esc(', '.join(result.seeds) or '(none)')}</p>",
        "".join(svg),
        f"<h2>Paths ({esc(_hop_summary(result))})</h2>",
        f"<table><thead><tr><th>#</th><th>score</th><th>hops</th><th>path</th></tr></thead><tbody>{rows}</tbody></table>",
        "</body>", "</html>"])


from langchain_pathrag import cli_eval  # noqa: E402  (pathrag eval lives in its own module)

cli_eval.register(app)

from langchain_pathrag import cli_import  # noqa: E402  (pathrag import, likewise)

cli_import.register(app)


def main() -> None:
    """Entry point of the ``pathrag`` console script."""
    app()


if __name__ == "__main__":
    main()
