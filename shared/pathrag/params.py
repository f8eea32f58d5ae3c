"""The settings of a retrieval, in one place: their defaults (the paper's) and their checks.

:class:`PathParams` holds what the path search and the resource flow take (α, θ, hop limit, K, ...);
:class:`RetrievalParams` extends it with what a whole retrieval adds (seed count, context kind,
passages). Both are frozen: a per-call change is a new object, made with :meth:`PathParams.override`
(:func:`dataclasses.replace` with a clear error for an unknown name). Every entry point (the core's
functions, the LangChain and LlamaIndex retrievers, the command line) builds one of these, so a new
setting is one field here plus its use.

>>> params = RetrievalParams(top_k=5)
>>> params.override(theta=0.1).theta, params.top_k
(0.1, 5)
>>> params.override(topk=3)
Traceback (most recent call last):
...
TypeError: unknown retrieval parameter(s): topk
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from .filters import check_filter

__all__ = [
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_KEY_PATHS",
    "MAX_HOPS",
    "MAX_TOKENS_LIMIT",
    "PATH_STEPS",
    "PathParams",
    "RetrievalParams",
    "check_max_tokens",
    "uses_keyword_llm",
]

#: The context budget every entry point uses unless told otherwise: 4,000 tokens, the chunk budget
#: LightRAG and the PathRAG reference code default to, and a small part of any current model's window.
#: Without a limit, a retrieval's 100 passages could fill tens of thousands of tokens.
DEFAULT_CONTEXT_TOKENS = 4000

#: The paper's K: how many key paths a retrieval keeps (``top_k``) unless told otherwise.
DEFAULT_KEY_PATHS = 15

#: The largest budget accepted: ten million tokens is beyond any model's window, so a larger number is
#: a mistake (a byte count, a missing unit), not a budget.
MAX_TOKENS_LIMIT = 10_000_000

#: The longest path a search follows, in relations: the largest ``max_hops`` accepted, and the bound of
#: ``max_hops=None`` (which θ bounds too: at the paper's α and θ no node beyond 13 hops can be expanded).
#: A path of more relations says nothing a prompt can use, and the walk is recursive.
MAX_HOPS = 32

#: The most steps (a step: one neighbour looked at) the path search's walk takes in one query, shared
#: evenly among the seeds, each taking its share of what the seeds before it left. Paths are counted, not
#: timed: the walk enumerates simple paths, whose number grows exponentially with ``max_hops`` at a small
#: θ (on the demo store, θ=0.001 and 12 hops ran 100 s into 5.3 GB). The paper's settings take far fewer
#: (on the demo store's questions at most N steps, see docs/reliability.md), so they find every path;
#: a search that would take more keeps the best paths of those it found, in about a second at most.
PATH_STEPS = 200_000

P = TypeVar("P", bound="PathParams")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, kw_only=True)
class PathParams:
    """The path search's settings; defaults are the paper's (K=15 paths, α=0.8, θ=0.05).

    Attributes:
        alpha: share of a node's resource passed on to its neighbours, in (0, 1].
        theta: a node whose resource per neighbour is below it is not expanded (>= 0).
        max_hops: longest path, in relations, up to :data:`MAX_HOPS` (``None``: ``theta`` bounds the search,
            so it must be > 0, and :data:`MAX_HOPS` does). The walk takes at most :data:`PATH_STEPS` steps.
        top_k: paths kept over all seed pairs (>= 0).
        paths_per_pair: at most this many paths per pair of seeds before pooling (``None``: all).
        directed: follow relations only from source to target.

    Raises:
        ValueError: a value out of its range (at construction).
    """

    alpha: float = 0.8
    theta: float = 0.05
    max_hops: int | None = 3
    top_k: int = DEFAULT_KEY_PATHS
    paths_per_pair: int | None = None
    directed: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.alpha, (int, float)) and not isinstance(self.alpha, bool) and 0 < self.alpha <= 1):
            raise ValueError(f"alpha must be in (0, 1], got {self.alpha!r}")
        if not (
            isinstance(self.theta, (int, float)) and not isinstance(self.theta, bool) and 0 <= self.theta < math.inf
        ):
            raise ValueError(f"theta must be a finite number >= 0, got {self.theta!r}")
        if self.max_hops is not None and not (_is_int(self.max_hops) and 1 <= self.max_hops <= MAX_HOPS):
            raise ValueError(f"max_hops must be an int from 1 to {MAX_HOPS} or None, got {self.max_hops!r}")
        if self.max_hops is None and self.theta == 0:
            raise ValueError("max_hops=None needs theta > 0, or the search is unbounded")
        if not (_is_int(self.top_k) and self.top_k >= 0):
            raise ValueError(f"top_k must be an int >= 0, got {self.top_k!r}")
        if self.paths_per_pair is not None and not (_is_int(self.paths_per_pair) and self.paths_per_pair >= 1):
            raise ValueError(f"paths_per_pair must be a positive int or None, got {self.paths_per_pair!r}")
        if not isinstance(self.directed, bool):  # "false" would be true
            raise ValueError(f"directed must be True or False, got {self.directed!r}")
        # stored as floats whatever number was given, so that equal settings compare equal
        object.__setattr__(self, "alpha", float(self.alpha))
        object.__setattr__(self, "theta", float(self.theta))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The setting names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def override(self: P, **changes: Any) -> P:
        """A copy with ``changes`` applied (and checked).

        Raises:
            TypeError: a name that is not a setting of this class.
            ValueError: a value out of its range.
        """
        unknown = sorted(set(changes) - set(self.names()))
        if unknown:
            raise TypeError(f"unknown retrieval parameter(s): {', '.join(unknown)}")
        return dataclasses.replace(self, **changes) if changes else self

    @classmethod
    def from_settings(cls: type[P], params: P | None = None, **settings: Any) -> P:
        """``params`` (default: the defaults) with ``settings`` given by name on top: how an entry point that
        takes both (the LangChain and LlamaIndex retrievers) makes its one settings object.

        >>> RetrievalParams.from_settings(RetrievalParams(top_k=5), theta=0.1).top_k
        5

        Raises:
            TypeError: ``params`` not of this class, or a name that is not a setting.
            ValueError: a value out of its range.
        """
        if params is not None and not isinstance(params, cls):
            raise TypeError(f"params must be a pathrag.{cls.__name__}, got {type(params).__name__}")
        return (params or cls()).override(**settings)


@dataclass(frozen=True, kw_only=True)
class RetrievalParams(PathParams):
    """A retrieval's settings: the path search's (:class:`PathParams`) and what a retrieval adds.

    ``context`` picks what is retrieved and how :func:`pathrag.query.context.result_context` lays it out:
    ``"evidence"`` (default) retrieves query-aware key paths, chains of the relations most like the
    question, and up to ``num_passages`` candidate source passages ranked with the flow (see
    :mod:`pathrag.query.retrieval`); ``"paths"`` is the paper's paths-only retrieval.

    Attributes:
        num_seeds: seed entities picked from the query's keywords (the paper's N=40; >= 0).
        context: ``"evidence"`` or ``"paths"``.
        num_passages: candidate passages for the evidence context (>= 0).
        num_relations: candidate relations for the evidence context's key paths: the ones most similar
            to the question (>= 0).
        max_tokens: the context's token budget (``None``: no limit; otherwise 1 to
            :data:`MAX_TOKENS_LIMIT`). Every entry point lays out what it shows within it.
        more_paths: in the evidence context, after the ``top_k`` key paths, the further paths the
            candidate relations form, which a layout shows while its budget has room (``False``: the
            key paths only).
        filter: only text from the documents whose metadata matches reaches the result (see
            :mod:`pathrag.filters`: ``{"key": value}``, ``{"key": {"$in": [...]}}``; ``None``: every
            document). Needs the index's documents: :meth:`pathrag.PathRAGIndex.retrieve` and the retrievers
            made from an index apply it (see :mod:`pathrag.index.sources`).
    """

    num_seeds: int = 40
    context: Literal["evidence", "paths"] = "evidence"
    num_passages: int = 100
    num_relations: int = 500
    max_tokens: int | None = DEFAULT_CONTEXT_TOKENS
    more_paths: bool = True
    filter: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "filter", check_filter(self.filter))  # spelt out, so equal filters compare equal
        if self.context not in ("evidence", "paths"):
            raise ValueError(f"context must be 'evidence' or 'paths', got {self.context!r}")
        for name in ("num_seeds", "num_passages", "num_relations"):
            value = getattr(self, name)
            if not (_is_int(value) and value >= 0):
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        check_max_tokens(self.max_tokens)
        if not isinstance(self.more_paths, bool):  # "false" would be true
            raise ValueError(f"more_paths must be True or False, got {self.more_paths!r}")


def check_max_tokens(value: Any) -> int | None:
    """``value`` if it is a valid context budget (``None``, or an int from 1 to :data:`MAX_TOKENS_LIMIT`).

    >>> check_max_tokens(600)
    600
    >>> check_max_tokens(0)
    Traceback (most recent call last):
    ...
    ValueError: max_tokens must be None or an int from 1 to 10,000,000, got 0
    """
    if value is None:
        return None
    if _is_int(value) and 1 <= value <= MAX_TOKENS_LIMIT:
        return int(value)
    raise ValueError(f"max_tokens must be None or an int from 1 to {MAX_TOKENS_LIMIT:,}, got {value!r}")


def uses_keyword_llm(keyword_llm: bool | None, context: str) -> bool:
    """Whether an entry point holding a model asks it for the query's keywords (one model call per retrieval).

    ``keyword_llm=None`` (every entry point's default) asks only in the paper's mode, ``context="paths"``,
    whose seeds come from the paper's keyword step; the default ``context="evidence"`` makes **no model
    call** at query time (its seeds come from the query's own words and vectors). ``True`` always asks,
    ``False`` never does. A retrieval without a model never asks, whatever this says.

    >>> uses_keyword_llm(None, "evidence"), uses_keyword_llm(None, "paths"), uses_keyword_llm(True, "evidence")
    (False, True, True)
    """
    if keyword_llm is not None and not isinstance(keyword_llm, bool):
        raise TypeError(f"keyword_llm must be True, False or None, got {type(keyword_llm).__name__}")
    return context == "paths" if keyword_llm is None else keyword_llm
