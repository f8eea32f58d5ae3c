"""pathrag: PathRAG's flow-pruned relational paths, framework-neutral.

>>> import networkx as nx, pathrag
>>> g = nx.Graph([("s", "a"), ("a", "t")])
>>> pathrag.find_key_paths(g, ["s", "t"])[0].nodes
('s', 'a', 't')
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__

# Names are imported on first use (PEP 562): the ``pathrag`` command's --help and option defaults need
# only pathrag.params, not numpy, networkx and pydantic.
_EXPORTS = {
    "CypherGraphStore": "graphs.cypher",
    "BaseGraphStore": "graphs.base",
    "GraphStore": "graphs.base",
    "Neighborhood": "graphs.base",
    "NetworkXGraphStore": "graphs.memory",
    "PathRAGError": "errors",
    "as_graph_store": "graphs.memory",
    "ExtractionConfig": "index.extraction",
    "Document": "index.front",
    "IndexConfig": "index.front",
    "InsertSummary": "index.front",
    "PathRAGIndex": "index.front",
    "LanguageModel": "llm.client",
    "as_language_model": "llm.client",
    "Entity": "models",
    "Keywords": "models",
    "Relation": "models",
    "RetrievalResult": "models",
    "RetrievedItem": "models",
    "ScoredPath": "models",
    "SourceDocument": "models",
    "PathParams": "params",
    "RetrievalParams": "params",
    "afind_key_paths": "query.pruning",
    "apropagate_resources": "query.pruning",
    "aspread_resources": "query.pruning",
    "find_key_paths": "query.pruning",
    "propagate_resources": "query.pruning",
    "spread_resources": "query.pruning",
    "aretrieve": "query.retrieval",
    "retrieve": "query.retrieval",
    "Embedder": "vectors.base",
    "HashingEmbedder": "vectors.hashing",
    "InMemoryVectorIndex": "vectors.memory",
    "VectorHit": "vectors.base",
    "VectorIndex": "vectors.base",
    "VectorItem": "vectors.base",
}

if TYPE_CHECKING:  # pragma: no cover
    from .errors import PathRAGError
    from .graphs.base import BaseGraphStore, GraphStore, Neighborhood
    from .graphs.cypher import CypherGraphStore
    from .graphs.memory import NetworkXGraphStore, as_graph_store
    from .index.extraction import ExtractionConfig
    from .index.front import Document, IndexConfig, InsertSummary, PathRAGIndex
    from .llm.client import LanguageModel, as_language_model
    from .models import Entity, Keywords, Relation, RetrievalResult, RetrievedItem, ScoredPath, SourceDocument
    from .params import PathParams, RetrievalParams
    from .query.pruning import (
        afind_key_paths,
        apropagate_resources,
        aspread_resources,
        find_key_paths,
        propagate_resources,
        spread_resources,
    )
    from .query.retrieval import aretrieve, retrieve
    from .vectors.base import Embedder, VectorHit, VectorIndex, VectorItem
    from .vectors.hashing import HashingEmbedder
    from .vectors.memory import InMemoryVectorIndex

__all__ = [
    "BaseGraphStore",
    "CypherGraphStore",
    "Document",
    "Embedder",
    "Entity",
    "ExtractionConfig",
    "HashingEmbedder",
    "IndexConfig",
    "InMemoryVectorIndex",
    "InsertSummary",
    "PathParams",
    "PathRAGError",
    "PathRAGIndex",
    "VectorHit",
    "VectorIndex",
    "VectorItem",
    "GraphStore",
    "LanguageModel",
    "Neighborhood",
    "NetworkXGraphStore",
    "Keywords",
    "Relation",
    "RetrievalParams",
    "RetrievalResult",
    "RetrievedItem",
    "ScoredPath",
    "SourceDocument",
    "afind_key_paths",
    "aretrieve",
    "apropagate_resources",
    "as_graph_store",
    "as_language_model",
    "find_key_paths",
    "propagate_resources",
    "aspread_resources",
    "spread_resources",
    "retrieve",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):  # a submodule (``pathrag.sqlite``), as when this module imported them all
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":  # the submodule exists but lacks a dependency
                raise
    raise AttributeError(f"module 'pathrag' has no attribute {name!r}")


def __dir__() -> list[str]:
    return [*__all__, "__version__"]
