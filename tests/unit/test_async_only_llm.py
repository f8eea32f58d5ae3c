"""A sync retrieve() given an async-only model runs it: the keywords come from the model, never silently
from the raw query text (issue 16)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pathrag import Document, HashingEmbedder, Keywords, PathRAGIndex, retrieve
from pathrag.llm.client import as_language_model, complete_sync
from pathrag.llm.prompts import KEYWORDS_PROMPT

from ..fakes import ScriptedLLM

CORPUS = [
    Document(
        id="port",
        text=(
            "ENTITY Tide Board | organization | Runs the port.\nENTITY Sea Wall | object | Flood barrier.\n"
            "LINK Tide Board | Sea Wall | The Tide Board paid for the sea wall. | funding | 9\n"
            "ENTITY Great Surge | event | A storm surge.\n"
            "LINK Great Surge | Sea Wall | The Great Surge broke the sea wall. | breach | 10"
        ),
    )
]
ANSWER = '{"high_level": ["storms"], "low_level": ["Great Surge", "Tide Board"]}'
QUESTION = "Who paid for what broke in the storms?"


async def async_keywords(prompt: str) -> str:
    await asyncio.sleep(0)  # a real await: the coroutine must be driven by an event loop
    async_keywords.prompts.append(prompt)  # type: ignore[attr-defined]
    return ANSWER


class AsyncOnlyModel:
    """A LanguageModel whose sync side is not implemented."""

    name = "async-only"

    def complete(self, prompt: str) -> str:
        raise NotImplementedError("this model is async-only")

    async def acomplete(self, prompt: str) -> str:
        await asyncio.sleep(0)
        return ANSWER


@pytest.fixture(scope="module")
def index() -> PathRAGIndex:
    idx = PathRAGIndex(llm=ScriptedLLM(), embedder=HashingEmbedder())
    idx.insert(CORPUS)
    return idx


@pytest.fixture(autouse=True)
def fresh_prompts():
    async_keywords.prompts = []  # type: ignore[attr-defined]


def check(result, caplog) -> None:
    assert result.keywords == Keywords(("storms",), ("Great Surge", "Tide Board"))
    assert set(result.seeds) == {"GREAT SURGE", "TIDE BOARD"}  # the query text alone would not seed both
    assert not [r for r in caplog.records if "keyword extraction failed" in r.getMessage()]


def test_sync_retrieve_runs_an_async_function(index, caplog):
    caplog.set_level(logging.WARNING)
    index.llm = as_language_model(async_keywords, name="async-kw")
    check(index.retrieve(QUESTION, keyword_llm=True, num_seeds=2), caplog)
    assert async_keywords.prompts == [KEYWORDS_PROMPT.format(question=QUESTION)]  # type: ignore[attr-defined]


async def test_sync_retrieve_inside_a_running_loop_runs_it_too(index, caplog):
    caplog.set_level(logging.WARNING)
    index.llm = as_language_model(async_keywords, name="async-kw")
    check(
        index.retrieve(QUESTION, keyword_llm=True, num_seeds=2), caplog
    )  # sync call from async code: a private thread
    assert len(async_keywords.prompts) == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("model", [async_keywords, AsyncOnlyModel()], ids=["plain async function", "async-only model"])
def test_the_retrieve_function_takes_async_only_models(index, model, caplog):
    caplog.set_level(logging.WARNING)
    result = retrieve(QUESTION, graph=index.graph, entity_index=index.entity_index, llm=model, num_seeds=2)
    check(result, caplog)


def test_complete_sync_and_a_clear_error_for_what_is_no_model():
    assert complete_sync(AsyncOnlyModel(), "q") == ANSWER
    assert as_language_model(async_keywords, name="a").complete("q") == ANSWER
    with pytest.raises(TypeError, match="LanguageModel"):
        complete_sync(42, "q")  # type: ignore[arg-type]


def test_a_failing_model_still_falls_back_with_a_warning(index, caplog):
    async def down(prompt: str) -> str:
        raise TimeoutError("model down")

    caplog.set_level(logging.WARNING)
    index.llm = as_language_model(down, name="down")
    result = index.retrieve("Great Surge", keyword_llm=True, num_seeds=2)
    assert result.keywords == Keywords(low_level=("Great Surge",))
    assert [r for r in caplog.records if "keyword extraction failed" in r.getMessage()]
