"""LlamaIndex adapter for pathrag: kg extractor, property-graph retriever, QA template, query engine.

>>> from llama_index_pathrag import PATHRAG_QA_TEMPLATE
>>> sorted(PATHRAG_QA_TEMPLATE.template_vars)
['context_str', 'instructions', 'query_str']
"""

from .embeddings import HashingEmbedding
from .extractor import PathRAGExtractor
from .graph import DEFAULT_IGNORED_RELATIONS, RELATION_LABEL, PropertyGraphStoreAdapter
from .index_retriever import PathRAGIndexRetriever
from .query_engine import PATHRAG_QA_TEMPLATE, PathOrderPostprocessor, PathRAGContextPostprocessor, PathRAGQueryEngine
from .retriever import PathRAGRetriever

__all__ = [
    "DEFAULT_IGNORED_RELATIONS",
    "HashingEmbedding",
    "PATHRAG_QA_TEMPLATE",
    "PathOrderPostprocessor",
    "PathRAGContextPostprocessor",
    "PathRAGExtractor",
    "PathRAGIndexRetriever",
    "PathRAGQueryEngine",
    "PathRAGRetriever",
    "PropertyGraphStoreAdapter",
    "RELATION_LABEL",
]
