"""``PathRAGRetriever``: the key relational paths for a query, as LangChain ``Document``s.

One document per path, best first; when fewer than ``k`` paths exist, the best-matching seed
entities fill up (``metadata["kind"] == "entity"``). The work is the core's
(:func:`pathrag.retrieval.retrieve`); this module translates parameters, callbacks and results.

>>> from langchain_core.vectorstores import InMemoryVectorStore
>>> from pathrag import HashingEmbedder, NetworkXGraphStore, Relation
>>> from langchain_pathrag import PathRAGEmbeddings
>>> graph = NetworkXGraphStore()
>>> graph.upsert_relations([Relation(source="MARA", target="SALTMERE", description="Mara lives in Saltmere."),
...                         Relation(source="SALTMERE", target="GULL", description="The Gull is moored there.")])
>>> entities = InMemoryVectorStore(PathRAGEmbeddings(HashingEmbedder()))
>>> _ = entities.add_texts(["MARA", "SALTMERE", "GULL"], metadatas=[{"name": n} for n in ["MARA", "SALTMERE", "GULL"]])
>>> retriever = PathRAGRetriever(graph_store=graph, entity_index=entities, num_seeds=2)
>>> [doc.metadata["nodes"] for doc in retriever.invoke("How is Mara linked to the Gull?")]
[['GULL', 'SALTMERE', 'MARA']]
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseLanguageModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.vectorstores import VectorStore
from pydantic import AliasChoices, ConfigDict, Field, field_validator, model_validator

from pathrag import (
    GraphStore,
    RetrievalParams,
    RetrievalResult,
    VectorHit,
    VectorIndex,
    aretrieve,
    as_graph_store,
    retrieve,
)

from .adapters import LangChainLanguageModel, LangChainVectorIndex

__all__ = ["KEYWORDS_TAG", "ENTITY_SEARCH_TAG", "PathRAGRetriever"]

#: Tags of the retriever's inner runs: filter them out of ``astream_events`` with ``exclude_tags``.
KEYWORDS_TAG = "pathrag:keywords"
ENTITY_SEARCH_TAG = "pathrag:entity_search"

_DEFAULTS = RetrievalParams()


def _child_config(run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun,
                  tag: str) -> RunnableConfig:
    # config tags are inherited by every nested run (a get_child(tag=...) tag reaches only the first one)
    return {"callbacks": run_manager.get_child(), "tags": [tag], "run_name": tag.replace(":", "_")}


class _TracedIndex:
    """Runs the core's entity searches as child runs of the retriever (a vector store has no callbacks)."""

    def __init__(self, index: VectorIndex, config: RunnableConfig) -> None:
        self.index = index
        self.config = config

    def _search(self, k: int) -> RunnableLambda:
        async def asearch(text: str) -> list[VectorHit]:
            return await self.index.aquery(text, k)

        return RunnableLambda(lambda text: self.index.query(text, k), afunc=asearch)

    def query(self, text: str, k: int) -> list[VectorHit]:
        return self._search(k).invoke(text, self.config)

    async def aquery(self, text: str, k: int) -> list[VectorHit]:
        return await self._search(k).ainvoke(text, self.config)


class PathRAGRetriever(BaseRetriever):
    """Retrieve PathRAG's key relational paths for a query.

    Build it with :meth:`PathRAGIndexer.as_retriever <langchain_pathrag.PathRAGIndexer.as_retriever>`,
    or directly from a graph (a :class:`pathrag.GraphStore` or a networkx graph) and the entity index
    (a LangChain ``VectorStore`` or a :class:`pathrag.VectorIndex`) whose documents carry the entity
    name in ``metadata["name"]``.

    ``top_k`` (alias ``k``) paths are returned, from ``num_seeds`` seed entities; ``alpha``, ``theta``,
    ``max_hops``, ``paths_per_pair`` and ``directed`` tune the flow-based pruning (see the README).
    ``invoke(query, k=...)`` overrides ``top_k`` for one call; any other of those parameters can be
    overridden per call too. With ``llm``, high- and low-level keywords are extracted from the query
    first (a run tagged :data:`KEYWORDS_TAG`); without one, or when its answer is unusable, the query
    itself is the keyword. With ``passage_index`` (the indexer's chunk store) and ``context="evidence"``
    (the default), up to ``num_passages`` source passages ranked with the flow follow the paths;
    ``context="paths"`` is the paper's paths-only retrieval.

    Each document: ``page_content`` is the path (or passage) as text, ``id`` is stable, ``metadata``
    holds ``kind`` (``"path"``, ``"entity"`` or ``"passage"``), ``id``, ``score``, ``nodes``, ``hops`` and
    ``source_ids`` (the chunk ids behind it). An empty query gives ``[]``; a non-string, a ``TypeError``.
    :func:`format_context` lays them out exactly as the core's :func:`pathrag.context.result_context`.
    """

    model_config = ConfigDict(extra="forbid")

    graph_store: GraphStore = Field(exclude=True)
    entity_index: VectorIndex = Field(exclude=True)
    passage_index: VectorIndex | None = Field(default=None, exclude=True)
    llm: BaseLanguageModel | None = Field(default=None, exclude=True)
    top_k: int = Field(default=_DEFAULTS.top_k, validation_alias=AliasChoices("top_k", "k"))
    num_seeds: int = _DEFAULTS.num_seeds
    alpha: float = _DEFAULTS.alpha
    theta: float = _DEFAULTS.theta
    max_hops: int | None = _DEFAULTS.max_hops
    paths_per_pair: int | None = _DEFAULTS.paths_per_pair
    directed: bool = _DEFAULTS.directed
    context: Literal["evidence", "paths"] = _DEFAULTS.context
    num_passages: int = _DEFAULTS.num_passages

    @field_validator("graph_store", mode="before")
    @classmethod
    def _graph(cls, value: Any) -> GraphStore:
        try:
            return as_graph_store(value)
        except TypeError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("entity_index", "passage_index", mode="before")
    @classmethod
    def _index(cls, value: Any) -> VectorIndex | None:
        if value is None:
            return None
        if isinstance(value, VectorStore):
            return LangChainVectorIndex(value)
        if isinstance(value, VectorIndex):
            return value
        raise ValueError(f"expected a LangChain VectorStore or a pathrag.VectorIndex, got {type(value).__name__}")

    @model_validator(mode="after")
    def _check_params(self) -> PathRAGRetriever:
        self.params  # noqa: B018 - raises ValueError on a bad value, at construction
        return self

    @property
    def params(self) -> RetrievalParams:
        """The retrieval parameters as the core's :class:`pathrag.RetrievalParams`."""
        return RetrievalParams(top_k=self.top_k, num_seeds=self.num_seeds, alpha=self.alpha, theta=self.theta,
                               max_hops=self.max_hops, paths_per_pair=self.paths_per_pair, directed=self.directed,
                               context=self.context, num_passages=self.num_passages)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        result = retrieve(
            query, graph=self.graph_store, entity_index=_TracedIndex(self.entity_index, _child_config(  # type: ignore[arg-type]
                run_manager, ENTITY_SEARCH_TAG)), passage_index=self.passage_index, llm=self._keyword_llm(run_manager),
            params=self.params, **_overrides(k, kwargs))
        return _to_documents(result)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        result = await aretrieve(
            query, graph=self.graph_store, entity_index=_TracedIndex(self.entity_index, _child_config(  # type: ignore[arg-type]
                run_manager, ENTITY_SEARCH_TAG)), passage_index=self.passage_index, llm=self._keyword_llm(run_manager),
            params=self.params, **_overrides(k, kwargs))
        return _to_documents(result)

    def _keyword_llm(
        self, run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun
    ) -> LangChainLanguageModel | None:
        if self.llm is None:
            return None
        return LangChainLanguageModel(self.llm, config=_child_config(run_manager, KEYWORDS_TAG))


def _overrides(k: int | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Per-call parameters; the core rejects unknown names with a ``TypeError``."""
    kwargs.pop("verbose", None)  # BaseRetriever.invoke's own flag, forwarded along with ours
    if k is not None:
        if "top_k" in kwargs:
            raise TypeError("pass k or top_k, not both")
        kwargs["top_k"] = k
    return kwargs


def _to_documents(result: RetrievalResult) -> list[Document]:
    return [Document(id=item.id, page_content=item.text, metadata={**item.metadata(), "layout": result.context})
            for item in result.items]
