"""``PathRAGRetriever``: a query's key relational paths and source passages, as LangChain ``Document``s.

``k`` documents at most (LangChain's convention, default 4), within the retrieval's token budget
(``max_tokens``, default 4,000): the items the core's context would show first, in its order (the best
path, then passages, then further paths and entity fill; :mod:`pathrag.query.context`), returned best first.
The work is the core's (:func:`pathrag.query.retrieval.retrieve`); this module translates parameters,
callbacks and results.

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

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseLanguageModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, field_validator, model_validator
from typing_extensions import override

from pathrag import (
    GraphStore,
    PathRAGIndex,
    RetrievalParams,
    RetrievalResult,
    VectorHit,
    VectorIndex,
    aretrieve,
    as_graph_store,
    retrieve,
)
from pathrag.index.sources import core_params, finish
from pathrag.params import uses_keyword_llm
from pathrag.query.citations import relevance_scores
from pathrag.query.context import PathContext, items_context, result_context

from .adapters import LangChainLanguageModel, LangChainVectorIndex

__all__ = ["KEYWORDS_TAG", "ENTITY_SEARCH_TAG", "LaidOut", "PathRAGRetriever"]

#: Tags of the retriever's inner runs: filter them out of ``astream_events`` with ``exclude_tags``.
KEYWORDS_TAG = "pathrag:keywords"
ENTITY_SEARCH_TAG = "pathrag:entity_search"

T = TypeVar("T")
_SETTINGS = frozenset(RetrievalParams.names())

if TYPE_CHECKING:
    _LanguageModel: TypeAlias = BaseLanguageModel[Any]
else:
    # pydantic validates a field against its annotation at runtime, and BaseLanguageModel[Any] would be a
    # new (abstract) subclass that chat models and LLMs are not instances of
    _LanguageModel = BaseLanguageModel


def _child_config(
    run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun, tag: str
) -> RunnableConfig:
    # config tags are inherited by every nested run (a get_child(tag=...) tag reaches only the first one)
    return {"callbacks": run_manager.get_child(), "tags": [tag], "run_name": tag.replace(":", "_")}


class _TracedIndex:
    """Runs the core's entity searches as child runs of the retriever (a vector store has no callbacks)."""

    def __init__(self, index: VectorIndex, config: RunnableConfig) -> None:
        self.index = index
        self.config = config

    def _search(self, k: int) -> RunnableLambda[str, list[VectorHit]]:
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

    ``k`` (default 4) is the number of documents returned at most, LangChain's convention; paths and
    passages share those slots by the core's context rule, within the token budget ``max_tokens``
    (default 4,000, ``None`` for none). ``invoke(query, k=...)`` changes it for one call.

    Its retrieval settings are one :class:`pathrag.RetrievalParams`, ``params``; any of its fields may
    also be given by name (``PathRAGRetriever(..., top_k=5, max_tokens=1200)``) and is folded into
    ``params``, and overridden per call (``invoke(query, theta=0.1)``). ``top_k`` key paths are retrieved,
    from ``num_seeds`` seed entities; ``alpha``, ``theta``, ``max_hops``, ``paths_per_pair`` and
    ``directed`` tune the flow-based pruning (see the README). With ``index`` (a
    :class:`pathrag.PathRAGIndex`, as :meth:`PathRAGIndexer.as_retriever` gives), the graph and indexes
    are the index's, and every retrieval reads one committed state of it while documents are added or
    deleted.

    Model calls per retrieval: **none** by default. ``llm`` is asked for the query's high- and low-level
    keywords (one call, a run tagged :data:`KEYWORDS_TAG`) only in the paper's mode ``context="paths"``,
    or in any mode with ``keyword_llm=True`` (``False``: never; see :func:`pathrag.params.uses_keyword_llm`).
    Without a call, or when its answer is unusable, the query itself is the keyword.
    With ``context="evidence"`` (the default), the paths are query-aware (built from ``relation_index``,
    the index's relation vectors) and ``passage_index`` (the indexer's chunk store) gives up to
    ``num_passages`` source passages ranked with the flow; ``context="paths"`` is the paper's paths-only
    retrieval.

    Each document: ``page_content`` is the path (or passage) as text, ``id`` is stable, ``metadata``
    holds ``kind`` (``"path"``, ``"entity"`` or ``"passage"``), ``id``, ``score``, ``raw_score``, ``nodes``,
    ``hops`` and ``source_ids`` (the chunk ids behind it). ``score`` is on one scale for every kind, in
    ``[0, 1]``: the raw score over the best of its kind in the retrieval (the best path and the best passage
    score 1.0; see :mod:`pathrag.query.citations`), so a threshold works across kinds; ``raw_score`` is the
    kind's own (a path's reliability, unbounded; a passage's evidence score). With ``index``, also the
    documents those chunks belong to: ``document_ids``, ``documents`` (each one's id and the metadata it was
    indexed with), ``source`` (the first one's ``metadata["source"]``, else its id) and the metadata keys they
    share (see :meth:`pathrag.RetrievedItem.metadata`); ``PathRAGIndexer.get_by_ids`` takes those document ids
    and the chunk ids. ``filter`` (a setting: ``search_kwargs={"filter": {"user": "ana"}}``, ``{"$in": [...]}``
    for one of several values) keeps only text from the documents whose metadata matches; it needs ``index``.
    An empty query gives ``[]``; a non-string, a ``TypeError``; ``k`` below 1, a ``ValueError``.
    :meth:`invoke_laid_out` also gives the context they are laid out in (the core's
    :func:`pathrag.query.context.result_context`).
    """

    model_config = ConfigDict(extra="forbid")

    graph_store: GraphStore | None = Field(default=None, exclude=True)
    entity_index: VectorIndex | None = Field(default=None, exclude=True)
    passage_index: VectorIndex | None = Field(default=None, exclude=True)
    relation_index: VectorIndex | None = Field(default=None, exclude=True)
    index: PathRAGIndex | None = Field(default=None, exclude=True)
    llm: _LanguageModel | None = Field(default=None, exclude=True)
    keyword_llm: bool | None = None
    k: int = 4
    params: RetrievalParams = Field(default_factory=RetrievalParams)

    @model_validator(mode="before")
    @classmethod
    def _fold_settings(cls, data: Any) -> Any:
        """Settings given by name go into ``params``: one place holds them all."""
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        named = {name: data.pop(name) for name in list(data) if name in _SETTINGS}
        if named:
            params = data.get("params")
            try:
                if isinstance(params, Mapping):  # settings as a dict, as pydantic would take them
                    params = RetrievalParams(**params)
                data["params"] = RetrievalParams.from_settings(params, **named)
            except TypeError as exc:  # pydantic reports ValueErrors as validation errors
                raise ValueError(str(exc)) from None
        return data

    @classmethod
    def merge_arguments(cls, *sources: Mapping[str, Any], fixed: Collection[str] = ()) -> dict[str, Any]:
        """One set of arguments for the retriever from several places (LangChain's ``search_kwargs`` and
        keywords, say): each name one of its fields or settings (but not one of ``fixed``, the fields the
        caller sets itself), the same value wherever a name is given twice. Settings stay by name: the
        retriever folds them into ``params`` when it is made.

        >>> PathRAGRetriever.merge_arguments({"k": 3}, {"k": 3, "top_k": 5})
        {'k': 3, 'top_k': 5}

        Raises:
            ValueError: an unknown name (or ``search_type``), or one given twice with different values.
        """
        allowed = (set(cls.model_fields) - set(fixed)) | _SETTINGS
        merged: dict[str, Any] = {}
        for source in sources:
            for name, value in source.items():
                if name == "search_type":
                    raise ValueError(
                        "PathRAGRetriever has no search_type: it always returns key paths and their passages "
                        "(tune them with k, max_tokens, num_seeds, alpha, theta, max_hops...)"
                    )
                if name not in allowed:
                    raise ValueError(
                        f"unknown retriever parameter {name!r}; expected one of {', '.join(sorted(allowed))}"
                    )
                if name in merged and merged[name] != value:
                    raise ValueError(f"{name}={value!r} conflicts with {name}={merged[name]!r} given elsewhere")
                merged[name] = value
        return merged

    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, value: Any) -> int:
        return _check_k(value)

    def __getattr__(self, name: str) -> Any:
        if name in _SETTINGS:  # retriever.top_k reads params.top_k
            return getattr(self.params, name)
        return super().__getattr__(name)  # type: ignore[misc]

    @field_validator("graph_store", mode="before")
    @classmethod
    def _graph(cls, value: Any) -> GraphStore | None:
        if value is None:
            return None
        try:
            return as_graph_store(value)
        except TypeError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("entity_index", "passage_index", "relation_index", mode="before")
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
    def _check_sources(self) -> PathRAGRetriever:
        if self.index is None and (self.graph_store is None or self.entity_index is None):
            raise ValueError("pass index=, or graph_store= and entity_index=")
        return self

    def _sources(self, graph: GraphStore, indexes: Mapping[str, VectorIndex]) -> _Sources:
        """What one retrieval reads: the index's state, unless a store was passed in its own right."""
        return _Sources(
            graph if self.graph_store is None else self.graph_store,  # an empty store is falsy: compare
            indexes["entities"] if self.entity_index is None else self.entity_index,
            indexes.get("chunks") if self.passage_index is None else self.passage_index,
            indexes.get("relations") if self.relation_index is None else self.relation_index,
        )

    def _read(self, read: Callable[[_Sources], T]) -> T:
        if self.index is None:
            return read(self._own_sources())
        return self.index.read_committed(lambda graph, indexes: read(self._sources(graph, indexes)))

    async def _aread(self, read: Callable[[_Sources], Awaitable[T]]) -> T:
        if self.index is None:
            return await read(self._own_sources())
        return await self.index.aread_committed(lambda graph, indexes: read(self._sources(graph, indexes)))

    def _own_sources(self) -> _Sources:
        assert self.graph_store is not None and self.entity_index is not None  # checked at construction
        return _Sources(self.graph_store, self.entity_index, self.passage_index, self.relation_index)

    def invoke_laid_out(self, query: str, config: RunnableConfig | None = None, **kwargs: Any) -> LaidOut:
        """:meth:`invoke`, with the context the documents were laid out in: its ``text`` is exactly what an
        answering model is shown for them (``max_tokens`` and ``k`` as for ``invoke``), so a chain built on
        this retriever answers from the retriever's own layout and budget (see ``create_pathrag_chain``).

        >>> from pathrag import HashingEmbedder, NetworkXGraphStore, Relation
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> from langchain_pathrag import PathRAGEmbeddings
        >>> graph = NetworkXGraphStore()
        >>> graph.upsert_relations([Relation(source="MARA", target="SALTMERE", description="Mara lives there.")])
        >>> entities = InMemoryVectorStore(PathRAGEmbeddings(HashingEmbedder()))
        >>> _ = entities.add_texts(["MARA", "SALTMERE"], metadatas=[{"name": "MARA"}, {"name": "SALTMERE"}])
        >>> laid_out = PathRAGRetriever(graph_store=graph, entity_index=entities).invoke_laid_out("Where is Mara?")
        >>> len(laid_out.documents) == len(laid_out.context.items), laid_out.context.text.startswith("Question:")
        (True, True)
        """
        sink: list[PathContext] = []
        documents = self.invoke(query, config, **{_SINK: sink}, **kwargs)
        return LaidOut(documents, sink[0] if sink else items_context(query, []))

    async def ainvoke_laid_out(self, query: str, config: RunnableConfig | None = None, **kwargs: Any) -> LaidOut:
        """Async :meth:`invoke_laid_out`."""
        sink: list[PathContext] = []
        documents = await self.ainvoke(query, config, **{_SINK: sink}, **kwargs)
        return LaidOut(documents, sink[0] if sink else items_context(query, []))

    @override
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        sink = kwargs.pop(_SINK, None)
        (arguments, wanted), k = self._arguments(run_manager, kwargs), self.k if k is None else _check_k(k)
        return _to_documents(
            self._read(lambda sources: self._finish(retrieve(query, **arguments(sources)), wanted)), k, sink
        )

    @override
    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        sink = kwargs.pop(_SINK, None)
        (arguments, wanted), k = self._arguments(run_manager, kwargs), self.k if k is None else _check_k(k)

        async def read(sources: _Sources) -> RetrievalResult:
            return self._finish(await aretrieve(query, **arguments(sources)), wanted)

        return _to_documents(await self._aread(read), k, sink)

    def _finish(self, result: RetrievalResult, wanted: RetrievalParams) -> RetrievalResult:
        """With an index: each item's documents, and the filter of ``wanted`` applied (in the same committed
        read as the retrieval)."""
        if self.index is None:
            return result
        return finish(result, self.index.committed_documents(), wanted)

    def _arguments(
        self,
        run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun,
        kwargs: dict[str, Any],
    ) -> tuple[Callable[[_Sources], dict[str, Any]], RetrievalParams]:
        """The core's arguments for one call, given what it reads (settings checked before any read), and the
        settings asked for (with an index, the core runs without the filter, which :meth:`_finish` applies)."""
        kwargs.pop("verbose", None)  # BaseRetriever.invoke's own flag, forwarded along with ours
        params = wanted = self.params.override(**kwargs)
        llm = self._keyword_llm(run_manager) if uses_keyword_llm(self.keyword_llm, params.context) else None
        if self.index is not None:  # the index applies the filter after the core's retrieval (see _finish)
            params = core_params(params)
        config = _child_config(run_manager, ENTITY_SEARCH_TAG)
        return lambda sources: {
            "graph": sources.graph,
            "entity_index": _TracedIndex(sources.entities, config),
            "passage_index": sources.passages,
            "relation_index": sources.relations,
            "llm": llm,
            "params": params,
        }, wanted

    def _keyword_llm(
        self, run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun
    ) -> LangChainLanguageModel | None:
        if self.llm is None:
            return None
        return LangChainLanguageModel(self.llm, config=_child_config(run_manager, KEYWORDS_TAG))


class _Sources(NamedTuple):
    """The graph and vector indexes one retrieval reads."""

    graph: GraphStore
    entities: VectorIndex
    passages: VectorIndex | None
    relations: VectorIndex | None


def _check_k(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"k is the number of documents to return: an int >= 1, got {value!r}")
    return value


class LaidOut(NamedTuple):
    """A retrieval's documents (best first) and the context they are laid out in (its ``items`` in display
    order, its ``text`` what the answering model reads)."""

    documents: list[Document]
    context: PathContext
    ids: tuple[str, ...] = ()
    """The id of each document's item in ``context`` when it is not the document's own (a document
    without an id); empty: read from the documents."""


#: The keyword argument through which invoke_laid_out receives the context (never a retrieval setting)
_SINK = "_pathrag_laid_out"


def _to_documents(result: RetrievalResult, k: int, sink: list[PathContext] | None = None) -> list[Document]:
    """The ``k`` items the context would show first, within the retrieval's budget, best first.

    ``metadata["score"]`` is the one scale every kind shares (:func:`pathrag.query.citations.relevance_scores`),
    ``metadata["raw_score"]`` the kind's own (a path's reliability, a passage's evidence score).
    """
    context = result_context(result, max_items=k)
    if sink is not None:
        sink.append(context)
    relevance = relevance_scores(result.items)
    return [
        Document(
            id=item.id,
            page_content=item.text,
            metadata={
                **item.metadata(),
                "score": relevance.get(item.id, 0.0),
                "raw_score": item.score,
                "layout": result.context,
            },
        )
        for item in context.ranked
    ]
