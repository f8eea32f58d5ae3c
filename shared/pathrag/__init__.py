"""pathrag: PathRAG's flow-pruned relational paths, framework-neutral.

>>> import networkx as nx, pathrag
>>> g = nx.Graph([("s", "a"), ("a", "t")])
>>> pathrag.find_key_paths(g, ["s", "t"])[0].nodes
('s', 'a', 't')
"""

from .cypher import CypherGraphStore
from .graph import BaseGraphStore, GraphStore, Neighborhood, NetworkXGraphStore, as_graph_store
from .indexing import Document, IndexConfig, InsertSummary, PathRAGIndex
from .llm import LanguageModel, as_language_model
from .models import Entity, Keywords, Relation, RetrievalResult, RetrievedItem, ScoredPath
from .params import PathParams, RetrievalParams
from .pruning import (
    afind_key_paths,
    apropagate_resources,
    aspread_resources,
    find_key_paths,
    propagate_resources,
    spread_resources,
)
from .retrieval import aretrieve, retrieve
from .vectors import Embedder, HashingEmbedder, InMemoryVectorIndex, VectorHit, VectorIndex, VectorItem

__all__ = [
    "BaseGraphStore",
    "CypherGraphStore",
    "Document",
    "Embedder",
    "Entity",
    "HashingEmbedder",
    "IndexConfig",
    "InMemoryVectorIndex",
    "InsertSummary",
    "PathParams",
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

__version__ = "0.1.0"
