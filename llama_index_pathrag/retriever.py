"""``PathRAGRetriever``: PathRAG's key paths as a property-graph sub-retriever.

One query runs the core's :func:`pathrag.query.retrieval.retrieve` (or ``aretrieve``) unchanged: keywords
(the query text; from ``llm`` only with ``context="paths"`` or ``keyword_llm=True``: one model call) → seed
entities by vector search → flow-pruned key paths over the graph
(:class:`~llama_index_pathrag.graph.PropertyGraphStoreAdapter`) → path texts. The adapter supplies the graph; this
module supplies the seeds and the keyword model:

* seeds come from the graph store's own vector search when it has one (``supports_vector_queries``),
  else from ``vector_store``, where ``PropertyGraphIndex`` keeps entity embeddings
  (``index.vector_store``); ``embed_model`` embeds the keywords (default ``Settings.embed_model``);
* the result is one ``NodeWithScore`` per item the core's context shows first (:mod:`pathrag.query.context`):
  paths, passages and, when fewer than ``top_k`` paths exist, the best seeds not on
  a path (score 0), best first, at most ``similarity_top_k`` of them (``None``: no cap) and within the
  retrieval's token budget ``max_tokens`` (default 4,000; ``None``: no limit);
  A node's ``score`` is on one ``[0, 1]`` scale for every kind (its raw score over the best of its kind;
  :mod:`pathrag.query.citations`), its metadata's ``raw_score`` the kind's own (a path's reliability);
* with ``relation_index`` (a :class:`pathrag.VectorIndex` of relation vectors, e.g. a pathrag store's),
  the evidence context's paths are query-aware (:mod:`pathrag.query.query_paths`); without it, they are the
  paper's key paths between the seeds (property-graph stores keep no relation vectors);
* with ``passage_retriever`` (any LlamaIndex retriever over the same chunks, e.g.
  ``VectorStoreIndex(nodes).as_retriever(similarity_top_k=100)``) and ``context="evidence"`` (the
  default), the source passages follow, ranked with the flow as in the core
  (:mod:`pathrag.query.passage_rank`); a chunk's ``pathrag_extracted`` metadata (written by
  :class:`~llama_index_pathrag.PathRAGExtractor`) names the entities the flow passes through to reach
  further passages (a retriever has no ``get``: passages it did not return are left out).

Node metadata (``kind``, ``id``, ``score``, ``nodes``, ``hops``, ``source_ids``, ``layout``) is hidden from the
LLM and from embeddings, so the prompt holds the path text only. Nodes from a pathrag store
(:class:`~llama_index_pathrag.PathRAGIndexRetriever`) also carry their documents: the metadata each was
indexed with (``file_name``...; see :meth:`pathrag.RetrievedItem.metadata`), and the first as the node's
``SOURCE`` relationship (``node.ref_doc_id``).

Bad input: no vector search anywhere → ``ValueError`` naming what to pass; a graph store that is not a
``PropertyGraphStore`` or an unknown parameter → ``TypeError``; a bad ``top_k`` / ``num_seeds`` →
``ValueError`` at construction, a bad ``alpha`` / ``theta`` / ``max_hops`` → ``ValueError`` at the first
query (the core checks them there). An empty or blank query, or an empty graph, gives no nodes. A keyword
model that fails or answers without usable JSON is logged and replaced by the query text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.graph_stores.types import VECTOR_SOURCE_KEY, EntityNode, PropertyGraphStore
from llama_index.core.indices.property_graph.sub_retrievers.base import BasePGRetriever
from llama_index.core.llms import LLM
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.settings import Settings
from llama_index.core.vector_stores.types import BasePydanticVectorStore, VectorStoreQuery, VectorStoreQueryResult
from typing_extensions import override

from pathrag import RetrievalParams, RetrievalResult, VectorHit, VectorIndex, aretrieve, retrieve
from pathrag.params import uses_keyword_llm
from pathrag.query.citations import relevance_scores
from pathrag.query.context import result_context

from .extractor import EXTRACTED_KEY
from .graph import DEFAULT_IGNORED_RELATIONS, CypherPropertyGraphAdapter, PropertyGraphStoreAdapter, cypher_runner

__all__ = ["PathRAGRetriever"]


class _LlamaLanguageModel:
    """A LlamaIndex LLM as a pathrag :class:`~pathrag.LanguageModel` (for the keyword prompt)."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.name = llm.metadata.model_name

    def complete(self, prompt: str) -> str:
        return self.llm.complete(prompt).text

    async def acomplete(self, prompt: str) -> str:
        return (await self.llm.acomplete(prompt)).text


class _EntitySeeds:
    """The read side of a pathrag ``VectorIndex`` over the store that holds entity embeddings."""

    def __init__(
        self,
        graph_store: PropertyGraphStore,
        vector_store: BasePydanticVectorStore | None,
        embed_model: BaseEmbedding | None,
    ) -> None:
        self.graph_store = graph_store
        self.vector_store = None if graph_store.supports_vector_queries else vector_store
        self._embed_model = embed_model

    @property
    def embed_model(self) -> BaseEmbedding:
        return self._embed_model or Settings.embed_model

    def query(self, text: str, k: int) -> list[VectorHit]:
        question = VectorStoreQuery(query_embedding=self.embed_model.get_query_embedding(text), similarity_top_k=k)
        if self.vector_store is None:
            return _node_hits(*self.graph_store.vector_query(question))
        return _result_hits(self.vector_store.query(question))

    async def aquery(self, text: str, k: int) -> list[VectorHit]:
        embedding = await self.embed_model.aget_query_embedding(text)
        question = VectorStoreQuery(query_embedding=embedding, similarity_top_k=k)
        if self.vector_store is None:
            return _node_hits(*await self.graph_store.avector_query(question))
        return _result_hits(await self.vector_store.aquery(question))


class _Passages:
    """The read side of a pathrag ``VectorIndex`` over a LlamaIndex retriever of chunks (its own top-k). One
    per query: it keeps the nodes it found (``found``), whose source and metadata the passages keep."""

    def __init__(self, retriever: BaseRetriever) -> None:
        self.retriever = retriever
        self.found: dict[str, BaseNode] = {}

    def _hits(self, found: list[NodeWithScore], k: int) -> list[VectorHit]:
        self.found.update((n.node.node_id, n.node) for n in found[:k])
        return [_passage_hit(n) for n in found][:k]

    def query(self, text: str, k: int) -> list[VectorHit]:
        return self._hits(self.retriever.retrieve(text), k)

    async def aquery(self, text: str, k: int) -> list[VectorHit]:
        return self._hits(await self.retriever.aretrieve(text), k)


def _passage_hit(found: NodeWithScore) -> VectorHit:
    """A retrieved chunk with its text and the entities its extraction touched (when recorded)."""
    entities: list[str] = []
    raw = found.node.metadata.get(EXTRACTED_KEY)
    if isinstance(raw, str):
        try:
            touched = json.loads(raw)
            entities = [str(n) for n in touched.get("entities", ())] if isinstance(touched, dict) else []
        except json.JSONDecodeError:
            entities = []
    return VectorHit(
        found.node.node_id,
        float(found.score or 0.0),
        {"entities": entities} if entities else {},
        found.node.get_content(metadata_mode=MetadataMode.NONE),
    )


def _hit(name: str, score: float | None) -> VectorHit:
    return VectorHit(name, float(score or 0.0), {"name": name})


def _node_hits(nodes: Sequence[Any], scores: Sequence[float]) -> list[VectorHit]:
    return [_hit(node.id, score) for node, score in zip(nodes, scores, strict=True) if isinstance(node, EntityNode)]


def _result_hits(result: VectorStoreQueryResult) -> list[VectorHit]:
    scores = result.similarities or []
    if result.nodes:  # stores that keep text return the nodes: the entity id is in the metadata
        ids = [node.metadata.get(VECTOR_SOURCE_KEY, node.node_id) for node in result.nodes]
    else:
        ids = list(result.ids or [])
    # strict=False: a store without similarities (None, read as []) gives no hits, as it always has
    return [_hit(str(i), s) for i, s in zip(ids, scores, strict=False)]


class PathRAGRetriever(BasePGRetriever):
    """Key paths between the entities a query is about, for ``PropertyGraphIndex`` (see the module doc).

    ``params``: a :class:`pathrag.RetrievalParams` (default: the paper's settings); ``settings``: any of
    its fields by name (``top_k=5``, ``theta=0.1``, ``max_tokens=1200``...), applied on top of it.
    ``similarity_top_k``: at most this many nodes (``None``: as many as the token budget holds).
    ``ignore_relations``: relation labels never traversed (provenance by default). ``pushdown``: on
    LlamaIndex's FalkorDB and Neo4j stores, run each hop as one Cypher query
    (:class:`~llama_index_pathrag.graph.CypherPropertyGraphAdapter`; same results, far fewer rows
    shipped); ``False`` keeps the generic ``get_triplets`` path.

    >>> from llama_index.core.graph_stores import SimplePropertyGraphStore
    >>> PathRAGRetriever(SimplePropertyGraphStore())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: PathRAGRetriever picks seed entities by vector search, ... pass vector_store= (...
    """

    def __init__(
        self,
        graph_store: PropertyGraphStore,
        *,
        vector_store: BasePydanticVectorStore | None = None,
        embed_model: BaseEmbedding | None = None,
        llm: LLM | None = None,
        keyword_llm: bool | None = None,
        passage_retriever: BaseRetriever | None = None,
        relation_index: VectorIndex | None = None,
        similarity_top_k: int | None = None,
        ignore_relations: Sequence[str] = tuple(DEFAULT_IGNORED_RELATIONS),
        pushdown: bool = True,
        callback_manager: CallbackManager | None = None,
        params: RetrievalParams | None = None,
        **settings: Any,
    ) -> None:
        if not isinstance(graph_store, PropertyGraphStore):
            raise TypeError(f"graph_store must be a llama_index PropertyGraphStore, got {type(graph_store).__name__}")
        if not graph_store.supports_vector_queries and vector_store is None:
            raise ValueError(
                f"PathRAGRetriever picks seed entities by vector search, and {type(graph_store).__name__} has "
                "none: pass vector_store= (with PropertyGraphIndex: vector_store=index.vector_store, which holds "
                "the entity embeddings when embed_kg_nodes=True), or use PathRAGQueryEngine.from_index(index)"
            )
        self.params = RetrievalParams.from_settings(params, **settings)
        if self.params.filter is not None:
            raise ValueError(
                "filter needs the documents' metadata, which a property graph store does not keep per document: "
                "filter the passage_retriever's own nodes, or retrieve from a pathrag store with "
                "PathRAGIndexRetriever(index, filters=...)"
            )
        self.similarity_top_k = _check_top_k(similarity_top_k)
        if relation_index is not None and not isinstance(relation_index, VectorIndex):
            raise TypeError(f"relation_index must be a pathrag.VectorIndex, got {type(relation_index).__name__}")
        self._relations = relation_index
        self.ignore_relations = tuple(ignore_relations)
        self.pushdown = pushdown
        self._seeds = _EntitySeeds(graph_store, vector_store, embed_model)
        # no model call per query unless asked for, or in the paper's mode (see pathrag.params.uses_keyword_llm)
        wanted = uses_keyword_llm(keyword_llm, self.params.context)
        self._llm = _LlamaLanguageModel(llm) if llm is not None and wanted else None
        if passage_retriever is not None and not isinstance(passage_retriever, BaseRetriever):
            raise TypeError(
                f"passage_retriever must be a llama_index retriever, got {type(passage_retriever).__name__}"
            )
        self._passage_retriever = passage_retriever
        super().__init__(graph_store=graph_store, include_text=False, callback_manager=callback_manager)

    def _graph(self) -> PropertyGraphStoreAdapter:  # one per query
        run = cypher_runner(self._graph_store) if self.pushdown else None
        if run is not None:
            return CypherPropertyGraphAdapter(self._graph_store, run, ignore_relations=self.ignore_relations)
        return PropertyGraphStoreAdapter(self._graph_store, ignore_relations=self.ignore_relations)

    # _EntitySeeds and _Passages are the read half of a VectorIndex: retrieval only queries them
    def _passages(self) -> _Passages | None:  # one per query
        return _Passages(self._passage_retriever) if self._passage_retriever is not None else None

    @override
    def retrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        passages = self._passages()
        return _nodes(
            retrieve(
                query_bundle.query_str,
                graph=self._graph(),
                entity_index=self._seeds,  # type: ignore[arg-type]
                passage_index=passages,  # type: ignore[arg-type]
                relation_index=self._relations,
                llm=self._llm,
                params=self.params,
            ),
            self.similarity_top_k,
            passages.found if passages is not None else {},
        )

    @override
    async def aretrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        passages = self._passages()
        return _nodes(
            await aretrieve(
                query_bundle.query_str,
                graph=self._graph(),
                entity_index=self._seeds,  # type: ignore[arg-type]
                passage_index=passages,  # type: ignore[arg-type]
                relation_index=self._relations,
                llm=self._llm,
                params=self.params,
            ),
            self.similarity_top_k,
            passages.found if passages is not None else {},
        )


def _check_top_k(similarity_top_k: Any) -> int | None:
    """``similarity_top_k`` if valid: the most nodes a retriever returns (``None``: what the budget holds)."""
    if similarity_top_k is not None and (
        isinstance(similarity_top_k, bool) or not isinstance(similarity_top_k, int) or similarity_top_k < 1
    ):
        raise ValueError(f"similarity_top_k must be None or an int >= 1, got {similarity_top_k!r}")
    return similarity_top_k


def _nodes(
    result: RetrievalResult, top_k: int | None, passages: Mapping[str, BaseNode] | None = None
) -> list[NodeWithScore]:
    """The items the context shows first (within its budget, at most ``top_k``), best first. ``passages``: the
    chunks a passage retriever found, whose SOURCE and metadata their passages keep."""
    nodes = []
    relevance = relevance_scores(result.items)  # one [0, 1] scale for every kind; the kind's own beside it
    for item in result_context(result, max_items=top_k).ranked:
        metadata = {**item.metadata(), "score": relevance.get(item.id, 0.0), "raw_score": item.score}
        metadata["layout"] = result.context
        # the first document is the node's SOURCE (ref_doc_id), as a LlamaIndex reader's node has it
        relationships = (
            {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc.id, metadata=dict(doc.metadata))}
            if (doc := next(iter(item.documents), None)) is not None
            else {}
        )
        chunk = (passages or {}).get(item.id) if item.kind == "passage" else None
        if chunk is not None:  # the chunk's own source and metadata (file_name...), pathrag's keys first
            metadata = {**{k: v for k, v in chunk.metadata.items() if k != EXTRACTED_KEY}, **metadata}
            if isinstance(source := chunk.relationships.get(NodeRelationship.SOURCE), RelatedNodeInfo):
                relationships = {NodeRelationship.SOURCE: source}
        node = TextNode(
            id_=item.id,
            text=item.text,
            metadata=metadata,
            relationships=relationships,
            excluded_llm_metadata_keys=list(metadata),
            excluded_embed_metadata_keys=list(metadata),
        )
        nodes.append(NodeWithScore(node=node, score=relevance.get(item.id, 0.0)))
    return nodes
