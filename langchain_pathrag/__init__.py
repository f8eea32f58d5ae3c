"""LangChain adapter for pathrag: indexer, retriever, answering prompt and chain.

>>> from langchain_pathrag import PATHRAG_PROMPT
>>> sorted(PATHRAG_PROMPT.input_variables)
['paths', 'question']
"""

from .chains import PATHRAG_PROMPT, create_pathrag_chain, format_paths
from .indexer import EXTRACTION_TAG, PathRAGIndexer, document_id
from .models import LangChainEmbedder, LangChainLanguageModel, LangChainVectorIndex, PathRAGEmbeddings
from .retrievers import ENTITY_SEARCH_TAG, KEYWORDS_TAG, PathRAGRetriever

__all__ = [
    "ENTITY_SEARCH_TAG",
    "EXTRACTION_TAG",
    "KEYWORDS_TAG",
    "PATHRAG_PROMPT",
    "LangChainEmbedder",
    "LangChainLanguageModel",
    "LangChainVectorIndex",
    "PathRAGEmbeddings",
    "PathRAGIndexer",
    "PathRAGRetriever",
    "create_pathrag_chain",
    "document_id",
    "format_paths",
]
