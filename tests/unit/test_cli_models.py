"""``--model`` and ``--embedding-model``: LangChain provider specs (``provider:model``) and plain names of the
OpenAI-compatible endpoint. No network, no key: LangChain's factories are replaced where a model is made."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from langchain_core.language_models import FakeListChatModel
from typer.testing import CliRunner

from langchain_pathrag import PathRAGEmbeddings
from langchain_pathrag.cli import CliError, app
from langchain_pathrag.cli.providers import (
    HASHING,
    ModelSpec,
    chat_model,
    embedder,
    embedding_spec,
    lazy_language_model,
    parse_model_spec,
)
from pathrag import HashingEmbedder
from pathrag.demo import demo_data, load_questions

from .test_cli import assert_error

DATA = Path(str(demo_data()))
QUESTION = load_questions()[0].question


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATHRAG_MODEL", "PATHRAG_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def chat_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """``init_chat_model`` records its (model, provider) and returns a scripted chat model."""
    import langchain.chat_models

    calls: list[tuple[str, str]] = []

    def init_chat_model(model: str, *, model_provider: str, **kwargs):
        calls.append((model, model_provider))
        return FakeListChatModel(responses=["An answer from the fake model."])

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", init_chat_model)
    return calls


@pytest.fixture
def embedding_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """``init_embeddings`` records its (model, provider) and returns offline hashing embeddings."""
    import langchain.embeddings

    calls: list[tuple[str, str]] = []

    def init_embeddings(model: str, *, provider: str, **kwargs):
        calls.append((model, provider))
        return PathRAGEmbeddings(HashingEmbedder(64))

    monkeypatch.setattr(langchain.embeddings, "init_embeddings", init_embeddings)
    return calls


# -- parsing ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("gpt-4o-mini", ModelSpec("openai", "gpt-4o-mini")),  # a plain name: the OpenAI-compatible endpoint
        ("openai:gpt-4o-mini", ModelSpec("openai", "gpt-4o-mini")),
        ("ollama:llama3.1:8b", ModelSpec("ollama", "llama3.1:8b")),
        ("anthropic:claude-sonnet-4-5", ModelSpec("anthropic", "claude-sonnet-4-5")),
        ("Google-GenAI:gemini-2.5-flash", ModelSpec("google_genai", "gemini-2.5-flash")),
        ("ft:gpt-4o-mini-2024-07-18:org::abc", ModelSpec("openai", "ft:gpt-4o-mini-2024-07-18:org::abc")),
    ],
)
def test_model_specs(spec: str, expected: ModelSpec) -> None:
    assert parse_model_spec(spec) == expected


def test_a_colon_name_of_another_endpoint_is_its_model(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CliError, match="unknown model provider 'llama3.1'"):
        parse_model_spec("llama3.1:8b")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")  # e.g. Ollama's OpenAI-compatible API
    assert parse_model_spec("llama3.1:8b") == ModelSpec("openai", "llama3.1:8b")


def test_embedding_specs() -> None:
    assert embedding_spec(None) == HASHING  # no key: the offline default
    assert embedding_spec("hashing") == embedding_spec(" HASHING-256 ") == HASHING
    assert embedding_spec("text-embedding-3-small") == "openai:text-embedding-3-small"
    assert embedding_spec("openai:text-embedding-3-small") == "openai:text-embedding-3-small"
    assert embedding_spec("ollama:nomic-embed-text") == "ollama:nomic-embed-text"
    with pytest.raises(CliError, match="unknown model provider 'nosuch' in --embedding-model"):
        embedding_spec("nosuch:model")


# -- what reaches LangChain's factories --------------------------------------------------------------------


def test_specs_reach_init_chat_model_with_their_provider(chat_calls, monkeypatch: pytest.MonkeyPatch) -> None:
    assert chat_model("ollama:llama3.1") is not None
    assert chat_model("anthropic:claude-sonnet-4-5") is not None
    assert chat_model("gpt-4o-mini") is None and chat_model("openai:gpt-4o-mini") is None  # no key: no model
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    chat_model("gpt-4o-mini")
    chat_model("openai:gpt-4o")
    assert chat_calls == [
        ("llama3.1", "ollama"),
        ("claude-sonnet-4-5", "anthropic"),
        ("gpt-4o-mini", "openai"),
        ("gpt-4o", "openai"),
    ]


def test_a_lazy_model_is_made_on_its_first_use_only(chat_calls, monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_pathrag import LangChainLanguageModel

    assert lazy_language_model("gpt-4o-mini") is None  # no key: no model, as chat_model says
    with pytest.raises(CliError, match="unknown model provider"):  # the spec is checked at once
        lazy_language_model("nosuch:model")
    model = lazy_language_model("ollama:llama3.1")
    assert model is not None and chat_calls == []
    assert model.complete("Hello?") == "An answer from the fake model."
    assert model.name == LangChainLanguageModel(FakeListChatModel(responses=["An answer from the fake model."])).name
    model.complete("Again?")
    assert chat_calls == [("llama3.1", "ollama")]  # made once
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert lazy_language_model("gpt-4o-mini") is not None and chat_calls == [("llama3.1", "ollama")]


def test_a_plain_name_with_a_key_is_still_chat_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_openai import ChatOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = chat_model("gpt-4o-mini")
    assert isinstance(model, ChatOpenAI) and model.model_name == "gpt-4o-mini"


def test_embedding_specs_reach_init_embeddings(embedding_calls, tmp_path: Path) -> None:
    assert embedder("ollama:nomic-embed-text", tmp_path).embed(["a harbour"])
    assert embedding_calls == [("nomic-embed-text", "ollama")]
    with pytest.raises(CliError, match="OPENAI_API_KEY"):  # as before: the endpoint's model needs the key
        embedder("openai:text-embedding-3-small", tmp_path)
    with pytest.raises(CliError, match="cannot make; open it from Python"):
        embedder("my-own-embedder", tmp_path)


# -- through the command line ------------------------------------------------------------------------------


def test_openai_spec_without_a_key_is_todays_no_key_error(tmp_path: Path) -> None:
    assert run("demo", "--store", tmp_path / "kb", "--no-prompts").exit_code == 0
    for model in ("gpt-4o-mini", "openai:gpt-4o-mini"):
        assert_error(
            run("query", QUESTION, "--store", tmp_path / "kb", "--model", model),
            1,
            "answering needs a language model: set OPENAI_API_KEY",
            "--context-only",
        )
    # retrieval needs no model: without a key it runs model-free, as before
    assert run("paths", QUESTION, "--store", tmp_path / "kb", "--model", "openai:gpt-4o-mini").exit_code == 0


def test_unknown_provider_is_one_line(tmp_path: Path) -> None:
    assert_error(
        run("paths", QUESTION, "--store", tmp_path, "--model", "nosuch:model"),
        2,
        "unknown model provider 'nosuch' in --model 'nosuch:model'",
        "openai:nosuch:model",
    )
    assert_error(
        run(
            "index", DATA / "corpus", "--store", tmp_path / "kb", "--replay", DATA, "--embedding-model", "nosuch:model"
        ),
        2,
        "unknown model provider 'nosuch' in --embedding-model",
    )


def test_missing_provider_package_names_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_anthropic", None)  # import langchain_anthropic -> ImportError
    monkeypatch.setitem(sys.modules, "langchain_ollama", None)
    assert_error(
        run("paths", QUESTION, "--store", tmp_path, "--model", "anthropic:claude-sonnet-4-5"),
        1,
        "--model anthropic:claude-sonnet-4-5 needs the langchain-anthropic package: pip install langchain-anthropic",
    )
    store = tmp_path / "kb"
    assert_error(
        run(
            "index", DATA / "corpus", "--store", store, "--replay", DATA, "--embedding-model", "ollama:nomic-embed-text"
        ),
        1,
        "pip install langchain-ollama",
    )
    assert not store.exists()  # nothing is left behind


def test_demo_answers_with_a_provider_model(chat_calls) -> None:
    result = run("demo", "--no-prompts", "--model", "ollama:llama3.1")
    assert result.exit_code == 0, result.output
    assert "Answers: ollama:llama3.1." in result.output and "Answer: An answer from the fake model." in result.output
    assert chat_calls == [("llama3.1", "ollama")]


def test_a_store_with_provider_embeddings_records_and_reuses_them(embedding_calls, tmp_path: Path) -> None:
    store = tmp_path / "kb"
    result = run(
        "index", DATA / "corpus", "--store", store, "--replay", DATA, "--embedding-model", "ollama:nomic-embed-text"
    )
    assert result.exit_code == 0, result.output
    stats = run("stats", "--store", store)
    assert "ollama:nomic-embed-text (LangChain's init_embeddings)" in stats.output
    assert run("paths", QUESTION, "--store", store, "--num-seeds", "2", "--theta", "0.001").exit_code == 0
    assert {call for call in embedding_calls} == {("nomic-embed-text", "ollama")}
    assert_error(
        run("paths", QUESTION, "--store", store, "--embedding-model", "hashing"),
        1,
        "was built with the embeddings ollama:nomic-embed-text",
    )
