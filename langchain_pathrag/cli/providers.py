"""The models named on the command line: ``--model`` (a chat model) and ``--embedding-model``.

A spec is ``provider:model`` for any provider LangChain's ``init_chat_model`` (or ``init_embeddings``)
knows, e.g. ``openai:gpt-4o-mini``, ``ollama:llama3.1``, ``anthropic:claude-sonnet-4-5``; the provider's
integration package must be installed (``pip install langchain-ollama``...). A plain name, as before, is
a model of the OpenAI-compatible endpoint (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``); so is a name with a
colon that does not start with a provider (``llama3.1:8b``) when ``OPENAI_BASE_URL`` is set, and an
OpenAI fine-tune (``ft:...``). Without ``OPENAI_API_KEY`` an OpenAI model is no model at all: retrieval
then runs model-free, and commands that must generate say so in one line.

>>> parse_model_spec("gpt-4o-mini")
ModelSpec(provider='openai', name='gpt-4o-mini')
>>> parse_model_spec("ollama:llama3.1:8b")
ModelSpec(provider='ollama', name='llama3.1:8b')
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pathrag

from .errors import CliError, one_line

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from pathrag.demo import ReplayLLM

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_MODEL",
    "HASHING",
    "NO_KEY",
    "LazyLanguageModel",
    "OPENAI",
    "ModelSpec",
    "chat_model",
    "describe_chat_model",
    "describe_embeddings",
    "embedder",
    "embedding_spec",
    "has_key",
    "language_model",
    "lazy_language_model",
    "parse_model_spec",
    "replay_llm",
]

HASHING = "hashing-256"  # the offline embeddings: pathrag.HashingEmbedder(256)
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
OPENAI = "openai"  # the provider of plain model names: the OpenAI-compatible endpoint
NO_KEY = "set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible endpoint)"

T = TypeVar("T")


def has_key() -> bool:
    """Whether ``OPENAI_API_KEY`` is set (to something other than blanks)."""
    return bool(os.environ.get("OPENAI_API_KEY", "").strip())


@dataclass(frozen=True)
class ModelSpec:
    """A model named on the command line: LangChain's provider name and the provider's model name."""

    provider: str
    name: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"


def known_providers(kind: str = "chat") -> frozenset[str]:
    """The providers LangChain's ``init_chat_model`` (``kind="chat"``) or ``init_embeddings``
    (``kind="embeddings"``) knows; only ``openai`` without the ``langchain`` package."""
    try:
        module = importlib.import_module(
            "langchain.chat_models.base" if kind == "chat" else "langchain.embeddings.base"
        )
    except ImportError:
        return frozenset({OPENAI})
    # LangChain's registry of provider name -> integration package (a module attribute of both factories)
    return frozenset(getattr(module, "_BUILTIN_PROVIDERS", ())) | {OPENAI}


def parse_model_spec(spec: str, *, option: str = "--model", kind: str = "chat") -> ModelSpec:
    """Split ``provider:model`` (or a plain name of the OpenAI-compatible endpoint); an unknown provider
    prefix is a :class:`CliError` naming ``option``."""
    text = spec.strip()
    if not text:
        raise CliError(f"{option} is empty: name a model, e.g. {OPENAI}:{DEFAULT_MODEL}", code=2)
    prefix, colon, rest = text.partition(":")
    if not colon:
        return ModelSpec(OPENAI, text)
    provider = prefix.strip().lower().replace("-", "_")
    known = known_providers(kind)
    if provider in known:
        if not rest.strip():
            raise CliError(f"{option} {text!r} names no model after {prefix}:", code=2)
        return ModelSpec(provider, rest.strip())
    if prefix == "ft" or os.environ.get("OPENAI_BASE_URL", "").strip():
        return ModelSpec(OPENAI, text)  # an OpenAI fine-tune, or a name like llama3.1:8b of the endpoint
    hint = "" if len(known) > 1 else "; other providers need the langchain package: pip install langchain"
    raise CliError(
        f"unknown model provider {prefix!r} in {option} {text!r} (known: {', '.join(sorted(known))}{hint}); "
        f"a model of the OpenAI-compatible endpoint whose name has a colon: {OPENAI}:{text}",
        code=2,
    )


def _package_of(exc: ImportError, provider: str) -> str:
    """The pip package a missing import asks for (LangChain's message names it)."""
    found = re.search(r"pip install ([A-Za-z0-9_.\-]+)", str(exc))
    return found.group(1) if found else f"langchain-{provider.replace('_', '-')}"


def _make(make: Callable[[], T], what: str, option: str, spec: str, provider: str) -> T:
    """``make()``, with a missing integration package or a refused setting as a one-line error."""
    try:
        return make()
    except ImportError as exc:
        package = _package_of(exc, provider)
        raise CliError(f"{option} {spec} needs the {package} package: pip install {package}") from exc
    except Exception as exc:  # missing keys, bad settings: the provider's own words, on one line
        raise CliError(f"cannot make the {what} {spec}: {one_line(str(exc), 300)}") from exc


def chat_model(model: str) -> BaseChatModel | None:
    """The chat model ``model`` names, through LangChain's ``init_chat_model``; ``None`` for a model of the
    OpenAI-compatible endpoint without ``OPENAI_API_KEY`` (OPENAI_BASE_URL is read by the SDK)."""
    spec = parse_model_spec(model)
    if spec.provider == OPENAI and not has_key():
        return None
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:  # an install without the langchain package: the endpoint's models still work
        if spec.provider != OPENAI:
            raise CliError(f"--model {model} needs the langchain package: pip install langchain") from None
        from langchain_openai import ChatOpenAI

        from .endpoint import fail_fast_clients

        return ChatOpenAI(model=spec.name, **fail_fast_clients())
    # the OpenAI-compatible endpoint: a refused connection fails at once, naming the URL (see .endpoint)
    options: dict[str, Any] = {}
    if spec.provider == OPENAI:
        from .endpoint import fail_fast_clients

        options = fail_fast_clients()
    made: BaseChatModel = _make(
        lambda: init_chat_model(spec.name, model_provider=spec.provider, **options),
        "chat model",
        "--model",
        model,
        spec.provider,
    )
    return made


def describe_chat_model(model: str) -> str:
    """How the demo names the answering model: ``gpt-4o-mini via OPENAI_API_KEY`` or ``ollama:llama3.1``."""
    spec = parse_model_spec(model)
    return f"{spec.name} via OPENAI_API_KEY" if spec.provider == OPENAI else str(spec)


def language_model(chat: BaseChatModel, max_tokens: int | None = None) -> pathrag.LanguageModel:
    """A LangChain chat model as pathrag's :class:`~pathrag.LanguageModel` (``max_tokens``: every answer's cap, for
    a model with that setting)."""
    from langchain_pathrag.adapters import LangChainLanguageModel

    return LangChainLanguageModel(chat, max_tokens=max_tokens)


class LazyLanguageModel:
    """The chat model a ``--model`` spec names, as a :class:`pathrag.LanguageModel` made on its first use.

    For commands that seldom ask it (``delete`` asks only to summarise a merged description never summarised
    before): importing a provider's package costs seconds. Reading ``name`` makes the model too, since it
    is the made model's own name (the LLM cache's key); so give it to an index by assigning ``index.llm``
    after opening, where the index reads ``name`` only just before asking.
    """

    name: str  # the made model's own name (set when it is made: see __getattr__)

    def __init__(self, model: str) -> None:
        self.model = model
        self._made: pathrag.LanguageModel | None = None

    def _language_model(self) -> pathrag.LanguageModel:
        if self._made is None:
            chat = chat_model(self.model)
            assert chat is not None, "made by lazy_language_model() only for a model chat_model() makes"
            self._made = language_model(chat)
            self.name = self._made.name
        return self._made

    def __getattr__(self, attribute: str) -> Any:
        if attribute != "name":  # called only for attributes not set: name, before the model is made
            raise AttributeError(attribute)
        return self._language_model().name

    def complete(self, prompt: str) -> str:
        """The model's answer to ``prompt``."""
        return self._language_model().complete(prompt)

    async def acomplete(self, prompt: str) -> str:
        """Async :meth:`complete`."""
        return await self._language_model().acomplete(prompt)


def lazy_language_model(model: str) -> LazyLanguageModel | None:
    """What :func:`chat_model` would make, as a :class:`LazyLanguageModel`; ``None`` when it would be
    ``None``. The spec is checked at once (an unknown provider is still a usage error)."""
    spec = parse_model_spec(model)
    return None if spec.provider == OPENAI and not has_key() else LazyLanguageModel(model)


def replay_llm(path: Path | None) -> ReplayLLM | None:
    """The recorded answers of a ``--replay`` folder (corpus/ and extractions/), or ``None``."""
    if path is None:
        return None
    from pathrag.demo import ReplayLLM, ReplayMiss

    try:
        return ReplayLLM.from_directory(path)
    except ReplayMiss as exc:
        raise CliError(str(exc)) from exc


# -- embeddings ----------------------------------------------------------------------------------------


def embedding_spec(requested: str | None) -> str:
    """What a store records for ``--embedding-model``: ``hashing-256``, ``openai:NAME`` (a plain name, as
    before) or ``provider:NAME``; without the option, the endpoint's default model with a key, else hashing."""
    if requested is None:
        return f"{OPENAI}:{DEFAULT_EMBEDDING_MODEL}" if has_key() else HASHING
    if requested.strip().lower() in {"hashing", HASHING}:
        return HASHING
    return str(parse_model_spec(requested, option="--embedding-model", kind="embeddings"))


def _hashing_dimensions(spec: str) -> int | None:
    dimensions = spec.removeprefix("hashing-")
    return int(dimensions) if spec.startswith("hashing-") and dimensions.isdigit() else None


def _provider_of(spec: str) -> str | None:
    """The ``init_embeddings`` provider of a recorded spec, if the command line can make its embeddings."""
    provider, colon, name = spec.partition(":")
    return provider if colon and name and provider in known_providers("embeddings") else None


def embedder(spec: str, store: Path, *, lazy: bool = False) -> pathrag.Embedder:
    """The embedder a store's recorded ``spec`` names (``store`` is named in errors).

    ``lazy``: an endpoint's or provider's embeddings are made on first use (a
    ``pathrag.vectors.embedders.LazyEmbedder``), so that commands that embed nothing (``stats``, most deletes)
    need no key, and a missing key or package is the one-line error of the command that does embed, before it
    writes anything.
    """
    dimensions = _hashing_dimensions(spec)  # hashing-256, or a store made by the library, say
    if dimensions is not None:
        return pathrag.HashingEmbedder(dimensions)
    if lazy:
        from pathrag.vectors.embedders import LazyEmbedder

        return LazyEmbedder(lambda: embedder(spec, store), spec)
    provider = _provider_of(spec)
    if provider is None:
        raise CliError(
            f"the store {store} was built with the embeddings {spec!r}, which the command line cannot "
            "make; open it from Python with the same embedder"
        )
    name = spec.partition(":")[2]
    if provider == OPENAI and not has_key():
        raise CliError(f"the store {store} uses the embedding model {name!r}: {NO_KEY}")
    from langchain_pathrag.adapters import LangChainEmbedder

    # OpenAI: raw text, no client-side tiktoken: works offline-cached or not, and with non-OpenAI endpoints
    options: dict[str, Any] = {"check_embedding_ctx_length": False} if provider == OPENAI else {}

    def make() -> Any:
        try:
            from langchain.embeddings import init_embeddings
        except ImportError:  # an install without the langchain package: the endpoint's models still work
            if provider != OPENAI:
                raise
            from langchain_openai import OpenAIEmbeddings

            return OpenAIEmbeddings(model=name, **options)
        return init_embeddings(name, provider=provider, **options)

    return LangChainEmbedder(_make(make, "embeddings", "--embedding-model", spec, provider))


def describe_embeddings(spec: str) -> str:
    """A store's embeddings in words, e.g. ``hashing (pathrag.HashingEmbedder, offline and model-free)``."""
    if spec == HASHING:
        return "hashing (pathrag.HashingEmbedder, offline and model-free)"
    if _hashing_dimensions(spec) is not None:  # a library-made store, e.g. HashingEmbedder(128)
        return f"{spec} (pathrag.HashingEmbedder, offline and model-free)"
    if spec.startswith(f"{OPENAI}:"):
        return f"{spec.removeprefix(f'{OPENAI}:')} (OpenAI-compatible endpoint)"
    return f"{spec} (LangChain's init_embeddings)" if _provider_of(spec) else spec
