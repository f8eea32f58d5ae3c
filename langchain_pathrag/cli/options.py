"""The options the ``pathrag`` commands share, defined once: the store, the models, the retrieval settings.

``index``, ``query``, ``paths``, ``delete``, ``stats`` (:mod:`~langchain_pathrag.cli.commands`), ``import``
(:mod:`~langchain_pathrag.cli.imports`) and ``eval`` (:mod:`~langchain_pathrag.cli.eval`) declare their
parameters with these. The retrieval options write no default of their own (``None``: the core's), and
:func:`retrieval_params` builds the one settings object from them. Only :mod:`pathrag.params` is imported from
the core: ``pathrag --help`` needs nothing more.

>>> retrieval_params(["alpha=0.9"], top_k=5, theta=None).alpha, DEFAULTS.theta
(0.9, 0.05)
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

import typer

from pathrag.params import MAX_HOPS as HOPS_LIMIT
from pathrag.params import RetrievalParams

from .errors import CliError
from .providers import DEFAULT_EMBEDDING_MODEL, DEFAULT_MODEL

__all__ = [
    "CONTEXT",
    "DEFAULTS",
    "EMBEDDING_MODEL",
    "IMPORT_EMBEDDING_MODEL",
    "IMPORT_STORE",
    "MAX_HOPS",
    "MODEL",
    "NUM_SEEDS",
    "PARAM",
    "REPLAY",
    "STORE",
    "THETA",
    "TOP_K",
    "WAIT",
    "ContextKind",
    "retrieval_params",
]

#: The core's retrieval settings, whose defaults the options' help shows.
DEFAULTS = RetrievalParams()

# -- the store and the models ----------------------------------------------------------------------------


def _store(text: str) -> Any:
    return typer.Option(..., "--store", "-s", help=text, show_default=False)


def _embedding_model(text: str) -> Any:
    return typer.Option(
        None, "--embedding-model", "-e", envvar="PATHRAG_EMBEDDING_MODEL", show_default=False, help=text
    )


STORE = _store("The store directory (a PathRAG index).")
IMPORT_STORE = _store(
    "The store to import into (created if needed; an existing one keeps its documents and embeddings)."
)
WAIT = typer.Option(
    0.0,
    "--wait",
    min=0,
    metavar="SECONDS",
    help="Wait up to SECONDS for another process writing the store (0: fail at once).",
)
MODEL = typer.Option(
    DEFAULT_MODEL,
    "--model",
    "-m",
    envvar="PATHRAG_MODEL",
    help="Chat model: PROVIDER:MODEL for any LangChain provider (openai:gpt-4o-mini, "
    "ollama:llama3.1, anthropic:...; needs its langchain-PROVIDER package), or a plain name "
    "of the OpenAI-compatible endpoint (needs OPENAI_API_KEY).",
)
EMBEDDING_MODEL = _embedding_model(
    f"Embedding model for a new store: a model of the endpoint (default {DEFAULT_EMBEDDING_MODEL} with "
    "OPENAI_API_KEY), PROVIDER:MODEL for LangChain's init_embeddings (ollama:nomic-embed-text...), or "
    "'hashing' (offline, the default without a key). An existing store keeps its own."
)
IMPORT_EMBEDDING_MODEL = _embedding_model(  # an import needs no key: its new stores default to hashing
    "Embeddings of a new store: 'hashing' (offline, the default), a model of the OpenAI-compatible "
    "endpoint (needs OPENAI_API_KEY) or PROVIDER:MODEL for LangChain's init_embeddings. An existing "
    "store keeps its own."
)
REPLAY = typer.Option(
    None,
    "--replay",
    hidden=True,
    exists=True,
    help="Folder with corpus/ and extractions/: replay recorded answers instead of a model.",
)

# -- retrieval settings: the common ones by name, any of pathrag.RetrievalParams with --param -------------

TOP_K = typer.Option(
    None, "--top-k", "-k", min=1, show_default=False, help=f"Number of key paths [default: {DEFAULTS.top_k}]."
)
NUM_SEEDS = typer.Option(
    None,
    "--num-seeds",
    min=1,
    show_default=False,
    help=f"Seed entities taken from the question's keywords [default: {DEFAULTS.num_seeds}].",
)
MAX_HOPS = typer.Option(
    None,
    "--max-hops",
    min=1,
    max=HOPS_LIMIT,
    show_default=False,
    help=f"Longest path, in relations, up to {HOPS_LIMIT} [default: {DEFAULTS.max_hops}].",
)
THETA = typer.Option(
    None,
    "--theta",
    min=0.0,
    show_default=False,
    help=f"Pruning threshold of the flow (PathRAG's θ) [default: {DEFAULTS.theta}].",
)
PARAM = typer.Option(
    None,
    "--param",
    "-p",
    metavar="NAME=VALUE",
    show_default=False,
    help="Any retrieval setting (a field of pathrag.RetrievalParams: "
    f"{', '.join(RetrievalParams.names())}), repeatable, e.g. --param alpha=0.9. The value is "
    "read as JSON (3, 0.1, true, null), else as text. It wins over the named options.",
)


class ContextKind(str, Enum):
    """What ``pathrag query`` puts in the prompt (``--context``)."""

    evidence = "evidence"
    paths = "paths"


CONTEXT = typer.Option(
    None,
    "--context",
    show_default=False,
    help=f"evidence: source passages ranked with the flow, then the key paths; paths: the "
    f"paper's paths-only context [default: {DEFAULTS.context}].",
)


def retrieval_params(settings: list[str] | None = None, **named: Any) -> RetrievalParams:
    """The core's settings with the named options given (``None``: not given) and ``--param`` ones applied.

    Raises:
        CliError: ``--param`` without ``=``, an unknown setting or a value out of range (exit code 2).
    """
    changes = {name: value for name, value in named.items() if value is not None}
    for setting in settings or ():
        name, equals, raw = setting.partition("=")
        if not equals:
            raise CliError(f"--param takes NAME=VALUE, got {setting!r}", code=2)
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        changes[name.strip().replace("-", "_")] = value
    try:
        return DEFAULTS.override(**changes)
    except (TypeError, ValueError) as exc:
        raise CliError(f"bad retrieval setting: {exc}", code=2) from exc
