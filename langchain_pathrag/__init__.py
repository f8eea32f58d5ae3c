"""LangChain adapter for pathrag: indexer, retriever, answering prompt and chain.

Names are imported on first use, so the ``pathrag`` command starts without loading LangChain's chain
machinery it does not need.

>>> from langchain_pathrag import PATHRAG_PROMPT
>>> sorted(PATHRAG_PROMPT.input_variables)
['context', 'instructions']
>>> import langchain_pathrag
>>> langchain_pathrag.__all__ == sorted(langchain_pathrag._EXPORTS)
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "PATHRAG_PROMPT": "chains",
    "create_pathrag_chain": "chains",
    "format_context": "chains",
    "format_paths": "chains",
    "EXTRACTION_TAG": "indexer",
    "PathRAGDocumentIndex": "indexer",
    "PathRAGIndexer": "indexer",
    "document_id": "indexer",
    "LangChainEmbedder": "adapters",
    "LangChainLanguageModel": "adapters",
    "LangChainVectorIndex": "adapters",
    "PathRAGEmbeddings": "adapters",
    "ENTITY_SEARCH_TAG": "retrievers",
    "KEYWORDS_TAG": "retrievers",
    "PathRAGRetriever": "retrievers",
}

# Spelled out (not ``sorted(_EXPORTS)``) so linters and type checkers see the re-exports; kept equal to
# ``_EXPORTS`` by the doctest in the module docstring.
__all__ = [
    "ENTITY_SEARCH_TAG",
    "EXTRACTION_TAG",
    "KEYWORDS_TAG",
    "LangChainEmbedder",
    "LangChainLanguageModel",
    "LangChainVectorIndex",
    "PATHRAG_PROMPT",
    "PathRAGDocumentIndex",
    "PathRAGEmbeddings",
    "PathRAGIndexer",
    "PathRAGRetriever",
    "create_pathrag_chain",
    "document_id",
    "format_context",
    "format_paths",
]

if TYPE_CHECKING:  # pragma: no cover
    from .adapters import LangChainEmbedder, LangChainLanguageModel, LangChainVectorIndex, PathRAGEmbeddings
    from .chains import PATHRAG_PROMPT, create_pathrag_chain, format_context, format_paths
    from .indexer import EXTRACTION_TAG, PathRAGDocumentIndex, PathRAGIndexer, document_id
    from .retrievers import ENTITY_SEARCH_TAG, KEYWORDS_TAG, PathRAGRetriever


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'langchain_pathrag' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
