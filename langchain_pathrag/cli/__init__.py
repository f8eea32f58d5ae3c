"""The ``pathrag`` command: index files, ask questions, look at the key paths, run the zero-key demo.

Models come from any LangChain provider (``--model openai:gpt-4o-mini``, ``ollama:llama3.1``...) or, for a
plain model name, the OpenAI-compatible endpoint (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``); see
:mod:`langchain_pathrag.cli.providers`. Without a key, retrieval still works with pathrag's model-free
:class:`~pathrag.HashingEmbedder`; commands that must generate say so in one line.

The modules: :mod:`~langchain_pathrag.cli.commands` (index, query, paths, delete, stats, demo),
:mod:`~langchain_pathrag.cli.options` (the options they share), :mod:`~langchain_pathrag.cli.eval` (``pathrag
eval``), :mod:`~langchain_pathrag.cli.imports` (``pathrag import``),
:mod:`~langchain_pathrag.cli.mcp_server` (``pathrag mcp``, the store as MCP tools), :mod:`~langchain_pathrag.cli.store`
(opening stores, and the store's errors in the command line's words),
:mod:`~langchain_pathrag.cli.providers` (``--model`` and ``--embedding-model``),
:mod:`~langchain_pathrag.cli.readers` (reading files), :mod:`~langchain_pathrag.cli.rendering` (what is
printed) and :mod:`~langchain_pathrag.cli.errors` (one-line errors).

>>> from typer.testing import CliRunner
>>> result = CliRunner().invoke(app, ["stats", "--store", "/nonexistent/store"])
>>> result.exit_code, result.stderr.strip()
(1, 'error: no pathrag store at /nonexistent/store (build one with: pathrag index PATH --store /nonexistent/store)')
"""

from __future__ import annotations

from . import eval as _eval
from . import imports as _imports
from . import mcp_server as _mcp_server
from .commands import app
from .errors import CliError
from .html_page import to_html
from .readers import html_to_text
from .rendering import to_mermaid

__all__ = ["CliError", "app", "html_to_text", "main", "to_html", "to_mermaid"]

_eval.register(app)
_imports.register(app)
_mcp_server.register(app)


def main() -> None:
    """Entry point of the ``pathrag`` console script."""
    app()
