"""The systems an evaluation compares, and their registry: a new configuration is one registration.

A :class:`Configuration` is a name and a ``query -> context`` function. Registered factories build
them for an index by name (:func:`build_configurations`); built in are ``default`` (the index's
context), ``paths-only`` (the paper's), ``pathrag-lt`` (the paper's light variant, N = 20 seeds,
K = 5 paths) and ``dense`` (nearest passages, no graph). Each is one line, e.g.::

    register_configuration("k5", lambda index, options: path_configuration(index, options, name="k5", top_k=5))

>>> list(configuration_names())[:4]
['default', 'paths-only', 'pathrag-lt', 'dense']
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..llm.client import LanguageModel
from ..llm.prompts import ANSWER_INSTRUCTIONS
from ..llm.tokens import TokenCounter
from ..models import RetrievedItem
from ..query.context import DEFAULT_CONTEXT_TOKENS, PathContext, build_evidence_context, result_context
from ..query.retrieval import RetrievalParams, RetrievalResult, aretrieve
from .questions import item_text

if TYPE_CHECKING:
    from ..index.front import PathRAGIndex

__all__ = [
    "DEFAULT_CONFIGURATIONS",
    "DEFAULT_MAX_TOKENS",
    "Configuration",
    "ConfigurationFactory",
    "ConfigurationOptions",
    "ContextFunction",
    "build_configurations",
    "configuration_names",
    "passage_configuration",
    "path_configuration",
    "register_configuration",
    "shared_answer_prompt",
]

#: The configurations compared when none are named: the first is the reference.
DEFAULT_CONFIGURATIONS: tuple[str, ...] = ("default", "paths-only", "pathrag-lt", "dense")
#: The context budget every configuration gets unless told otherwise: the entry points' default (tokens).
DEFAULT_MAX_TOKENS = DEFAULT_CONTEXT_TOKENS

ContextFunction = Callable[[str], "str | PathContext | Awaitable[str | PathContext]"]


def shared_answer_prompt(context: str) -> str:
    """The answer prompt every configuration shares: its context, then pathrag's answer instructions
    (exactly what :func:`pathrag.query.context.answer_prompt` sends for a path context).

    >>> shared_answer_prompt("Passage 1: ...").startswith("Passage 1: ...\\n\\nAnswer the question")
    True
    """
    return f"{context}\n\n{ANSWER_INSTRUCTIONS}"


@dataclass(frozen=True)
class Configuration:
    """One system under evaluation: a name and a ``query -> context text`` function (sync or async).

    ``prompt`` turns the context text into the answer prompt; keep the shared one so that only retrieval
    differs between configurations. A ``context`` function may also return a
    :class:`~pathrag.query.context.PathContext`: it is then answered with
    :func:`pathrag.query.context.answer_prompt`, exactly what ``pathrag query`` sends. A sync ``context`` runs
    in a worker thread.
    """

    name: str
    context: ContextFunction
    prompt: Callable[[str], str] = shared_answer_prompt
    description: str = ""


@dataclass(frozen=True)
class ConfigurationOptions:
    """What a configuration factory gets besides the index.

    ``params``: the base retrieval settings; ``max_tokens``: the context budget; ``keyword_llm``: the model
    for query keywords (the evaluation passes a journalled one, so those calls are recorded and resumable;
    None: the query text is the keyword).
    """

    params: RetrievalParams = field(default_factory=RetrievalParams)
    max_tokens: int | None = None
    keyword_llm: LanguageModel | None = None
    token_counter: TokenCounter | None = None


ConfigurationFactory = Callable[["PathRAGIndex", ConfigurationOptions], Configuration]
_REGISTRY: dict[str, tuple[ConfigurationFactory, str]] = {}


def register_configuration(
    name: str, factory: ConfigurationFactory, *, description: str = "", replace_existing: bool = False
) -> None:
    """Make ``factory(index, options) -> Configuration`` available by ``name`` (case-insensitive).

    Raises:
        ValueError: the name is empty or already taken (unless ``replace_existing``).
    """
    key = name.strip().lower()
    if not key:
        raise ValueError("a configuration needs a name")
    if key in _REGISTRY and not replace_existing:
        raise ValueError(f"a configuration named {key!r} is already registered")
    _REGISTRY[key] = (factory, description)


def configuration_names() -> dict[str, str]:
    """Registered configuration names with their one-line descriptions, in registration order."""
    return {name: description for name, (_, description) in _REGISTRY.items()}


def build_configurations(
    index: PathRAGIndex, names: Sequence[str], options: ConfigurationOptions | None = None
) -> list[Configuration]:
    """Instantiate registered configurations for ``index``.

    Raises:
        ValueError: an unknown or repeated name.
    """
    options = options or ConfigurationOptions()
    built, seen = [], set()
    for name in names:
        key = name.strip().lower()
        if key not in _REGISTRY:
            raise ValueError(f"unknown configuration {name!r} (known: {', '.join(_REGISTRY)})")
        if key in seen:
            raise ValueError(f"configuration {name!r} is named twice")
        seen.add(key)
        factory, description = _REGISTRY[key]
        config = factory(index, options)
        built.append(config if config.description else replace(config, description=description))
    return built


def _index_context(result: RetrievalResult, options: ConfigurationOptions) -> PathContext:
    """The index's own layout of ``result`` within the budget (answered with its own instructions)."""
    return result_context(result, max_tokens=options.max_tokens, token_counter=options.token_counter)


def path_configuration(
    index: PathRAGIndex,
    options: ConfigurationOptions,
    *,
    name: str,
    render: Callable[[RetrievalResult, ConfigurationOptions], str | PathContext] = _index_context,
    description: str = "",
    **overrides: Any,
) -> Configuration:
    """A configuration that retrieves from ``index`` as ``PathRAGIndex.aretrieve`` does and lays the result
    out with ``render`` (default: :func:`pathrag.query.context.result_context` within ``options.max_tokens``, so
    the answer prompt is exactly what ``pathrag query`` sends).

    ``overrides`` are :class:`~pathrag.RetrievalParams` fields applied on top of ``options.params``
    (e.g. ``num_seeds=20, top_k=5``). The keywords come from ``options.keyword_llm``.
    """
    params = replace(options.params, **overrides) if overrides else options.params

    async def context(query: str) -> str | PathContext:
        # the module function, not index.aretrieve: the keyword model must be the journalled one
        result = await aretrieve(
            query,
            graph=index.graph,
            entity_index=index.entity_index,
            passage_index=index.chunk_index,
            relation_index=index.relation_index,
            llm=options.keyword_llm,
            params=params,
        )
        return render(result, options)

    return Configuration(name=name, context=context, description=description)


def passage_configuration(
    index: PathRAGIndex, options: ConfigurationOptions, *, name: str, description: str = ""
) -> Configuration:
    """Dense retrieval: the ``options.params.num_passages`` chunks nearest the query in the index's chunk
    index, laid out as passages only (least to most similar) within ``options.max_tokens``, and answered
    with the evidence instructions. No graph, no keyword call."""

    async def context(query: str) -> PathContext:
        hits = await index.chunk_index.aquery(query, options.params.num_passages)
        texts = index.chunk_texts([hit.id for hit in hits])
        items = [
            RetrievedItem("passage", hit.id, text, hit.score, (), (hit.id,))
            for hit in hits
            # a document's chunk, else the hit's own text (an imported passage)
            if (text := texts.get(hit.id) or getattr(hit, "text", None) or item_text(index.chunk_index, hit.id))
        ]
        return build_evidence_context(query, items, max_tokens=options.max_tokens, token_counter=options.token_counter)

    return Configuration(name=name, context=context, description=description)


# Each configuration is one line; a new context mode or baseline of the core plugs in the same way.
register_configuration(
    "default",
    lambda index, o: path_configuration(index, o, name="default"),
    description="the index's default context, as pathrag query sends it",
)
register_configuration(
    "paths-only",
    lambda index, o: path_configuration(index, o, name="paths-only", context="paths"),
    description="the paper's context: key paths only, most reliable last",
)
register_configuration(
    "pathrag-lt",
    lambda index, o: path_configuration(index, o, name="pathrag-lt", num_seeds=20, top_k=5, more_paths=False),
    description="PathRAG-lt: N = 20 seed entities, K = 5 paths",
)
register_configuration(
    "dense",
    lambda index, o: passage_configuration(index, o, name="dense"),
    description="dense retrieval: the passages nearest the question, no graph",
)
