"""``pathrag mcp --store DIR``: a store as tools for any MCP client (an agent framework, a desktop assistant, an
IDE), served over stdio with the official ``mcp`` SDK (``pip install "pathrag[mcp]"``).

The tools:

- ``retrieve``: what a model should read to answer a question: the context laid out exactly as ``pathrag query``
  sends it, and its sources (each item's kind, score and documents), best first. No model is called.
- ``paths``: the key paths between the entities a question names, with scores and hops (``pathrag paths
  --format json``). No model is called.
- ``stats``: what the store holds: counts, its embeddings, its documents.
- ``query``: an answer from the configured chat model, with the sources it was sent. Listed only when a model
  is configured, found as ``pathrag query`` finds it (``--model`` or ``PATHRAG_MODEL``; a plain model name needs
  ``OPENAI_API_KEY``).

Each call opens the store, reads one committed state and closes it, so the server never holds the store between
calls and sees what ``pathrag index`` added meanwhile. A missing or damaged store, or a bad argument, is the
call's error (``isError``, one line naming the argument), never the end of the server.

>>> import asyncio
>>> server = build_server(Path("/nonexistent/store"), model="gpt-4o-mini", chat=None)
>>> sorted(tool.name for tool in asyncio.run(server.list_tools()))
['paths', 'retrieve', 'stats']
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer
from pydantic import Field

from .errors import CliError, one_line
from .options import DEFAULTS, MODEL, STORE, retrieval_params

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from mcp.server.mcpserver import MCPServer

    from pathrag import RetrievalResult

__all__ = ["SERVER_NAME", "build_server", "register"]

SERVER_NAME = "pathrag"
MAX_DOCUMENTS_LISTED = 200  # stats lists at most this many document ids (a store may hold millions)

log = logging.getLogger(__name__)
T = TypeVar("T")

# -- the tools' arguments, as the JSON schema an agent reads ------------------------------------------------

Question = Annotated[str, Field(min_length=1, description="The question, in plain words.")]
TopK = Annotated[int | None, Field(ge=1, description=f"Number of key paths (default {DEFAULTS.top_k}).")]
NumSeeds = Annotated[
    int | None,
    Field(ge=1, description=f"Seed entities taken from the question (default {DEFAULTS.num_seeds})."),
]
MaxTokens = Annotated[
    int | None,
    Field(ge=1, description=f"Token budget of the context (default {DEFAULTS.max_tokens})."),
]
Context = Annotated[
    Literal["evidence", "paths"] | None,
    Field(
        description="evidence: source passages and the key paths (default); paths: the paper's paths-only context.",
    ),
]
Settings = Annotated[
    dict[str, Any] | None,
    Field(
        description="Any other retrieval setting by name (a field of pathrag.RetrievalParams), e.g. "
        '{"theta": 0.01, "max_hops": 2}.',
    ),
]


def _tool(name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A tool body whose expected failures (no store, a damaged one, a bad setting) reach the client as the
    call's error in one line; an unexpected one too, by its type and message (its traceback goes to stderr)."""
    from mcp.server.mcpserver.exceptions import ToolError

    def wrap(body: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(body)
        def call(*args: Any, **kwargs: Any) -> T:
            try:
                return body(*args, **kwargs)
            except ToolError:
                raise
            except CliError as exc:
                raise ToolError(str(exc)) from exc
            except Exception as exc:  # the tool boundary: the server keeps serving
                log.exception("pathrag mcp: the %s tool failed", name)
                raise ToolError(f"{type(exc).__name__}: {one_line(str(exc))}") from exc

        return call

    return wrap


def _params(
    settings: dict[str, Any] | None, **named: Any
) -> Any:  # pathrag.RetrievalParams (the core is imported when a tool runs)
    """The retrieval settings of a call: ``settings`` by name, then the named arguments given."""
    extra = dict(settings or {})
    unknown = [key for key in extra if not isinstance(key, str)]
    if unknown:
        raise CliError(f"settings: names must be text, not {unknown!r}")
    # a bad value or an unknown name is a CliError naming the setting, e.g. "bad retrieval setting: ... top_k ..."
    return retrieval_params(None, **{**extra, **{k: v for k, v in named.items() if v is not None}})


def _retrieve(store: Path, embedding_model: str | None, question: str, params: Any) -> RetrievalResult:
    """One retrieval from ``store``, opened for it and closed after (what every reading tool does)."""
    from .store import opened

    with opened(store, embedding_model=embedding_model) as index:
        # keyword_llm=False: a retrieval through this server never calls a model (the index is opened without one)
        try:
            return index.retrieve(question, keyword_llm=False, params=params)
        except (TypeError, ValueError) as exc:
            raise CliError(f"question: {one_line(str(exc))}") from exc


def build_server(
    store: Path,
    *,
    model: str,
    chat: BaseChatModel | None,
    embedding_model: str | None = None,
) -> MCPServer:
    """The MCP server of ``store``: ``retrieve``, ``paths`` and ``stats``, and ``query`` when ``chat`` is a model.

    Nothing is opened here: each call opens the store (``embedding_model`` as ``pathrag query --embedding-model``).

    >>> import asyncio
    >>> server = build_server(Path("/nonexistent/store"), model="gpt-4o-mini", chat=None)
    >>> from mcp.server.mcpserver.exceptions import ToolError
    >>> try:
    ...     asyncio.run(server.call_tool("stats", {}))
    ... except ToolError as error:
    ...     print(error)
    Error executing tool stats: no pathrag store at /nonexistent/store (build one with: pathrag index PATH --store ...)
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    import pathrag

    server: MCPServer = MCPServer(
        SERVER_NAME,
        instructions=(
            f"Tools over one pathrag store ({store}): a knowledge graph of entities and relations extracted from "
            "documents, with the passages they came from. Call `retrieve` for the context to answer a question "
            "from (passages and the key relational paths, with their source documents), `paths` for the chains "
            "of relations between the entities a question names, `stats` for what the store holds."
            + (" `query` answers with the configured model." if chat is not None else "")
        ),
        version=pathrag.__version__,
        log_level="WARNING",  # stderr is the client's log: keep it for what goes wrong
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    from .store import opened

    @server.tool(annotations=read_only, structured_output=True)
    @_tool("retrieve")
    def retrieve(
        question: Question,
        top_k: TopK = None,
        num_seeds: NumSeeds = None,
        max_tokens: MaxTokens = None,
        context: Context = None,
        settings: Settings = None,
    ) -> dict[str, Any]:
        """What to read to answer `question` from the store: `context` is the text pathrag gives an answering
        model (numbered passages and key relational paths), `sources` its items best first, each with its kind
        (passage, path or entity), score and the ids of the documents it comes from. Calls no model."""
        from pathrag.query.context import result_context

        from .rendering import sources

        params = _params(settings, top_k=top_k, num_seeds=num_seeds, max_tokens=max_tokens, context=context)
        result = _retrieve(store, embedding_model, question, params)
        laid_out = result_context(result)
        return {
            "question": result.query,
            "context": laid_out.text,
            "tokens": laid_out.tokens,
            "sources": sources(laid_out),
        }

    @server.tool(annotations=read_only, structured_output=True)
    @_tool("paths")
    def paths(
        question: Question,
        top_k: TopK = None,
        num_seeds: NumSeeds = None,
        settings: Settings = None,
    ) -> dict[str, Any]:
        """The key relational paths between the entities `question` is about, best first: each with its score
        (reliability), hop count, the entities along it (`nodes`) and its text; the seed entities found for the
        question come first as `seeds`. Calls no model."""
        from .rendering import as_json

        result = _retrieve(store, embedding_model, question, _params(settings, top_k=top_k, num_seeds=num_seeds))
        # the graph alone, as `pathrag paths`: the key paths, then the seeds on no path
        fill = [item for item in result.items if item.kind == "entity"]
        return as_json(dataclasses.replace(result, items=[*result.key_paths, *fill]))

    @server.tool(annotations=read_only, structured_output=True)
    @_tool("stats")
    def stats() -> dict[str, Any]:
        """What the store holds: counts of documents, chunks, entities and relations, the embeddings it was
        built with, and its document ids (the first 200, with each one's chunk count)."""
        from .providers import describe_embeddings
        from .store import read_meta

        meta = read_meta(store)
        with opened(store) as index:
            counts = index.stats()
            documents = {doc_id: len(doc.chunks) for doc_id, doc in sorted(index.documents.items())}
        listed = dict(list(documents.items())[:MAX_DOCUMENTS_LISTED])
        return {
            "store": str(store),
            **counts,
            "embeddings": describe_embeddings(meta["embeddings"]) if meta and meta.get("embeddings") else None,
            "document_chunks": listed,
            "documents_listed": len(listed),
        }

    if chat is not None:
        _add_query(server, store, model, chat, embedding_model, read_only)
    return server


def _add_query(
    server: MCPServer,
    store: Path,
    model: str,
    chat: BaseChatModel,
    embedding_model: str | None,
    annotations: Any,
) -> None:
    """The ``query`` tool: the configured model answers from the context ``retrieve`` gives."""
    from .providers import describe_chat_model, language_model

    llm = language_model(chat)

    @server.tool(annotations=annotations, structured_output=True)
    @_tool("query")
    def query(
        question: Question,
        top_k: TopK = None,
        num_seeds: NumSeeds = None,
        max_tokens: MaxTokens = None,
        context: Context = None,
        settings: Settings = None,
    ) -> dict[str, Any]:
        """An answer to `question` from the store, written by the server's chat model from the context `retrieve`
        gives, with `sources`: the items the answer cites as `[n]`, and apart `sent`: every item of that context
        (kind, score, documents, text), best first. One model call: the answer."""
        from pathrag.query.context import answer_prompt, result_context

        from .rendering import cited_sources, sources

        params = _params(settings, top_k=top_k, num_seeds=num_seeds, max_tokens=max_tokens, context=context)
        result = _retrieve(store, embedding_model, question, params)
        laid_out = result_context(result)
        shown = sources(laid_out)
        answer = llm.complete(answer_prompt(laid_out))
        return {
            "question": result.query,
            "answer": answer,
            "model": describe_chat_model(model),
            "sources": cited_sources(answer, shown),
            "sent": shown,
        }


# -- the command ----------------------------------------------------------------------------------------------


def register(app: typer.Typer) -> None:
    """Add ``pathrag mcp`` to the command line (the SDK is imported only when it runs)."""

    @app.command("mcp")
    def serve_mcp(store: Path = STORE, model: str = MODEL) -> None:
        """Serve the store to MCP clients over stdio: tools retrieve, paths, stats, and query with a model.

        Each call reads the store as it is then. retrieve, paths and stats call no model; query, listed only
        when --model names a model that can be made (a plain name needs OPENAI_API_KEY), makes one call.
        """
        # no --embedding-model: the server never makes a store, and reads a store with the embeddings it records
        try:
            import mcp.server.mcpserver  # noqa: F401
        except ImportError:
            raise CliError('pathrag mcp needs the MCP SDK: pip install "pathrag[mcp]"') from None
        from .providers import chat_model
        from .store import read_meta

        chat = chat_model(model)  # as `pathrag query` finds its model; None: no key, no `query` tool
        try:  # said once on stderr at start; the tools say it again on each call, and the server keeps serving
            if read_meta(store) is None:
                typer.echo(f"note: no pathrag store at {store} yet: the tools say so until one is built", err=True)
        except CliError as exc:
            typer.echo(f"note: {exc}", err=True)
        build_server(store, model=model, chat=chat).run("stdio")
