"""``PathRAGIndexRetriever``: a pathrag store (made by ``pathrag index``, LangChain or the core) as a retriever.

The core does the work: :meth:`pathrag.PathRAGIndex.retrieve` (or ``aretrieve``) and the budgeted context
of :func:`pathrag.query.context.result_context`; this class turns the items that context shows into
``NodeWithScore`` (the same nodes as :class:`~llama_index_pathrag.PathRAGRetriever`'s, so
:class:`~llama_index_pathrag.PathRAGContextPostprocessor` and :data:`~llama_index_pathrag.PATHRAG_QA_TEMPLATE`
lay them out as the core does). :meth:`PathRAGIndexRetriever.from_store` opens a store directory with the
embeddings it records (``hashing-<dim>``); pass ``embed_model`` for an endpoint's (the same model).

>>> from pathrag.demo import open_demo_index
>>> index, _ = open_demo_index()
>>> retriever = PathRAGIndexRetriever(index, similarity_top_k=2, keyword_llm=False)
>>> [n.node.metadata["kind"] for n in retriever.retrieve("Who is Odric Pelham?")]
['path', 'passage']
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms import LLM
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters
from typing_extensions import override

from pathrag import PathRAGIndex, RetrievalParams
from pathrag.vectors.embedders import ask_for_embedder_as

from .filters import to_pathrag_filter
from .retriever import _check_top_k, _LlamaLanguageModel, _nodes

__all__ = ["PathRAGIndexRetriever"]


class _LlamaEmbedder:
    """A LlamaIndex embedding model as a :class:`pathrag.Embedder` (texts embedded as documents)."""

    def __init__(self, embed_model: BaseEmbedding) -> None:
        self.embed_model = embed_model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_model.get_text_embedding_batch(list(texts))

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.embed_model.aget_text_embedding_batch(list(texts))


class PathRAGIndexRetriever(BaseRetriever):
    """Key paths and their passages from a :class:`pathrag.PathRAGIndex`, as LlamaIndex nodes (see the module doc).

    ``similarity_top_k``: at most this many nodes (``None``: as many as the token budget holds).
    ``keyword_llm``: whether to ask the index's LLM for the query's keywords (one model call per query):
    ``None`` (default) only with ``context="paths"``, the paper's mode; ``True`` always; ``False`` never (the
    query text is the keyword). By default a retrieval makes no model call.
    ``params`` / ``settings``: a :class:`pathrag.RetrievalParams` and any of its fields by name (``top_k=5``,
    ``max_tokens=1200``...) on top of it. ``filters``: LlamaIndex ``MetadataFilters`` on the documents'
    metadata (``EQ`` and ``IN`` joined by ``AND``; others refused, see :mod:`llama_index_pathrag.filters`):
    only text from the matching documents reaches the nodes. Each node carries its documents' metadata and
    the first one as its ``SOURCE`` (``node.ref_doc_id``).
    """

    def __init__(
        self,
        index: PathRAGIndex,
        *,
        similarity_top_k: int | None = None,
        keyword_llm: bool | None = None,
        callback_manager: CallbackManager | None = None,
        filters: MetadataFilters | None = None,
        params: RetrievalParams | None = None,
        **settings: Any,
    ) -> None:
        if not isinstance(index, PathRAGIndex):
            raise TypeError(f"index must be a pathrag.PathRAGIndex, got {type(index).__name__}")
        self.index = index
        translated = to_pathrag_filter(filters)
        if translated is not None:
            if "filter" in settings:
                raise ValueError("pass filters= (LlamaIndex MetadataFilters) or filter= (a pathrag filter), not both")
            settings["filter"] = translated
        self.params = RetrievalParams.from_settings(params, **settings)
        self.similarity_top_k = _check_top_k(similarity_top_k)
        self.keyword_llm = keyword_llm
        super().__init__(callback_manager=callback_manager)

    @classmethod
    def from_store(
        cls,
        directory: str | os.PathLike[str],
        *,
        llm: LLM | None = None,
        embed_model: BaseEmbedding | None = None,
        **kwargs: Any,
    ) -> PathRAGIndexRetriever:
        """A retriever over the store in ``directory`` (``kwargs`` as for the constructor); ``close()`` it after.

        ``llm`` extracts the query's keywords when the retriever asks for them (``keyword_llm``; by default
        only with ``context="paths"``); otherwise the query text is the keyword. ``embed_model``
        embeds queries: needed only when the store's embeddings are not ``hashing-<dim>`` (e.g. a store
        indexed with ``--embedding-model text-embedding-3-small``: pass LlamaIndex's ``OpenAIEmbedding`` of
        that model); without it such a store still opens, and a query raises
        :class:`pathrag.errors.MissingEmbedderError` naming the embeddings it needs.

        Raises:
            FileNotFoundError: no pathrag store in ``directory``.
        """
        from pathrag.sqlite import store_exists
        from pathrag.sqlite.legacy import legacy_files

        if not (store_exists(directory) or legacy_files(directory)):
            raise FileNotFoundError(f"no pathrag store at {directory} (build one with: pathrag index PATH --store ...)")
        index = PathRAGIndex(
            directory,
            llm=_LlamaLanguageModel(llm) if llm is not None else None,
            embedder=_LlamaEmbedder(embed_model) if embed_model is not None else None,
        )
        ask_for_embedder_as(index.embedder, "embed_model")  # what a query without it asks for
        try:
            return cls(index, **kwargs)
        except BaseException:
            index.close()
            raise

    def close(self) -> None:
        """Close the index's store."""
        self.index.close()

    @override
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.index.retrieve(query_bundle.query_str, keyword_llm=self.keyword_llm, params=self.params)
        return _nodes(result, self.similarity_top_k)

    @override
    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.index.aretrieve(query_bundle.query_str, keyword_llm=self.keyword_llm, params=self.params)
        return _nodes(result, self.similarity_top_k)
