"""The answering side: the QA prompt, the node layout that feeds it, and a ready query engine.

The prompt is the core's, to the character: :class:`PathRAGContextPostprocessor` lays the retrieved
nodes out with :func:`pathrag.query.context.items_context` (the one builder the CLI and LangChain use too:
question first, passages least to most relevant, paths least to most reliable, the most reliable last,
within ``max_tokens``) and gives each node its block of that text; :data:`PATHRAG_QA_TEMPLATE` puts the
question before them and the core's answer instructions after. With the default ``compact`` mode the
blocks are joined in that order; only on overflow does LlamaIndex split them over several calls.

>>> print(PATHRAG_QA_TEMPLATE.format(query_str="Who?", context_str="A -> B").split(chr(10))[0])
Question: Who?
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.response.schema import RESPONSE_TYPE, Response
from llama_index.core.indices.property_graph import PropertyGraphIndex
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import PromptTemplate, PromptType
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import ResponseMode, get_response_synthesizer
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.settings import Settings
from typing_extensions import override

from pathrag import RetrievedItem
from pathrag.llm.prompts import CITATION_INSTRUCTIONS, EVIDENCE_TEMPLATE
from pathrag.query.citations import cited_numbers
from pathrag.query.context import DEFAULT_CONTEXT_TOKENS, context_blocks, instructions_for, items_context

from .retriever import PathRAGRetriever

__all__ = [
    "CITED_KEY",
    "PATHRAG_QA_TEMPLATE",
    "PathOrderPostprocessor",
    "PathRAGContextPostprocessor",
    "PathRAGQueryEngine",
    "item_from_node",
]

_PASSAGES_HEADER, _PATHS_HEADER = EVIDENCE_TEMPLATE.split("\n\n")[1], EVIDENCE_TEMPLATE.split("\n\n")[3]
#: Node metadata holding the head of the node's block in the prompt (numbering, score, section header).
BLOCK_KEY = "pathrag_block"


#: Node metadata holding the node's number in the prompt (what an answer's ``[n]`` cites).
NUMBER_KEY = "pathrag_number"
#: Node metadata holding the node's rank in the retrieval (0: best), the order of ``response.source_nodes``.
RANK_KEY = "pathrag_rank"
#: ``response.metadata`` key of the nodes the answer cites, in the order it first cites them.
CITED_KEY = "cited_nodes"


def _instructions(**variables: object) -> str:
    """The core's instructions for what the context shows (passages, paths, or both), then the request to
    cite the numbered items."""
    context = str(variables.get("context_str", ""))
    passages = context.startswith(_PASSAGES_HEADER)
    shown = instructions_for(passages=passages, paths=not passages or f"\n\n{_PATHS_HEADER}\n\n" in context)
    return f"{shown} {CITATION_INSTRUCTIONS}"


PATHRAG_QA_TEMPLATE = PromptTemplate(
    "Question: {query_str}\n\n{context_str}\n\n{instructions}",
    prompt_type=PromptType.QUESTION_ANSWER,
    function_mappings={"instructions": _instructions},
)
"""The core's answer prompt: the question, the laid-out evidence, the instructions for that layout."""


def item_from_node(found: NodeWithScore) -> RetrievedItem:
    """A retrieved node back as the core's item (from the metadata the retriever wrote)."""
    text = found.node.get_content(metadata_mode=MetadataMode.NONE)
    return RetrievedItem.from_metadata(found.node.metadata, text, score=found.score or 0.0, id=found.node.node_id)


class PathRAGContextPostprocessor(BaseNodePostprocessor):
    """Lay the nodes out as the core does (:func:`pathrag.query.context.items_context`, within ``max_tokens``):
    what fits, in display order, each node's LLM view (``get_content("llm")``) its block of the core's
    context; the node's own text and metadata stay as retrieved.

    >>> from llama_index.core.schema import TextNode
    >>> found = [NodeWithScore(node=TextNode(text=f"{a} -> {b}", metadata={"kind": "path", "nodes": [a, b]}),
    ...                        score=s) for a, b, s in [("A", "B", 0.9), ("A", "C", 0.2)]]
    >>> laid_out = PathRAGContextPostprocessor().postprocess_nodes(found, query_str="Q")
    >>> [n.node.text for n in laid_out]
    ['A -> C', 'A -> B']
    >>> print(laid_out[0].node.get_content(metadata_mode="llm"))
    Relational paths from the knowledge graph, least to most reliable:
    <BLANKLINE>
    Path 1:
    A -> C
    """

    max_tokens: int | None = DEFAULT_CONTEXT_TOKENS

    @classmethod
    @override
    def class_name(cls) -> str:
        return "PathRAGContextPostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        items = [item_from_node(n) for n in nodes]
        layout = "paths" if nodes and all(n.node.metadata.get("layout") == "paths" for n in nodes) else "evidence"
        query = query_bundle.query_str if query_bundle is not None else ""
        context = items_context(query, items, layout, max_tokens=self.max_tokens)
        by_id = {item.id: n for item, n in zip(items, nodes, strict=True)}
        rank = {item.id: r for r, item in enumerate(context.ranked)}
        laid_out = []
        for number, (item, (head, _)) in enumerate(zip(context.items, context_blocks(context), strict=True), start=1):
            original = by_id[item.id]
            # the node keeps its own text; the block's head goes in through the one metadata entry the
            # LLM sees, so get_content(LLM) is exactly this item's block of the core's context
            metadata = {
                **original.node.metadata,
                BLOCK_KEY: head.removesuffix("\n"),
                NUMBER_KEY: number,
                RANK_KEY: rank.get(item.id, len(rank) + number),
            }
            node = TextNode(
                id_=original.node.node_id,
                text=original.node.get_content(metadata_mode=MetadataMode.NONE),
                metadata=metadata,
                metadata_template="{value}",
                text_template="{metadata_str}\n{content}",
                excluded_llm_metadata_keys=[k for k in metadata if k != BLOCK_KEY],
                excluded_embed_metadata_keys=list(metadata),
            )
            laid_out.append(NodeWithScore(node=node, score=original.score))
        return laid_out


class PathOrderPostprocessor(BaseNodePostprocessor):
    """Order nodes ascending by score, so the most reliable path comes last in the prompt.

    Equal scores keep the retriever's tie-break, reversed: of two equally reliable paths, the one the
    retriever ranked first ends up last, as in :func:`pathrag.query.context.build_context`.

    >>> from llama_index.core.schema import TextNode
    >>> ranked = [("best", 0.9), ("tie, ranked first", 0.5), ("tie, ranked second", 0.5), ("weak", 0.2)]
    >>> nodes = [NodeWithScore(node=TextNode(text=t), score=s) for t, s in ranked]
    >>> [n.node.text for n in PathOrderPostprocessor().postprocess_nodes(nodes)]
    ['weak', 'tie, ranked second', 'tie, ranked first', 'best']
    """

    @classmethod
    @override
    def class_name(cls) -> str:
        return "PathOrderPostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return sorted(reversed(nodes), key=lambda n: n.score or 0.0)  # stable: ties stay reversed


class PathRAGQueryEngine(RetrieverQueryEngine):
    """A ``RetrieverQueryEngine`` wired for PathRAG: :class:`PathRAGRetriever`, the core's layout
    (:class:`PathRAGContextPostprocessor`) and :data:`PATHRAG_QA_TEMPLATE`. Build it with
    :meth:`from_index`; ``query``, ``aquery`` and streaming work as for any query engine, and
    ``get_prompts`` / ``update_prompts`` reach the QA template as ``"response_synthesizer:text_qa_template"``.

    The prompt numbers the nodes and asks the model to cite them (``[2]``). A response's ``source_nodes``
    are every node the prompt held, what was *sent*, best first as ``retriever.retrieve`` gives them (their
    ``score`` on one ``[0, 1]`` scale for every kind, see :mod:`pathrag.query.citations`);
    ``response.metadata["cited_nodes"]`` are the ones the answer cites, in the order it first cites them
    (not filled for a streaming response, whose text is not known yet).
    """

    @override
    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return _sourced(super()._query(query_bundle))

    @override
    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return _sourced(await super()._aquery(query_bundle))

    @classmethod
    def from_index(
        cls,
        index: PropertyGraphIndex,
        llm: LLM | None = None,
        *,
        keyword_llm: LLM | bool | None = None,
        text_qa_template: PromptTemplate | None = None,
        response_mode: ResponseMode = ResponseMode.COMPACT,
        streaming: bool = False,
        max_tokens: int | None = DEFAULT_CONTEXT_TOKENS,
        **retriever_params: Any,
    ) -> PathRAGQueryEngine:
        """A ready engine over ``index``'s graph.

        ``llm`` answers (default ``Settings.llm``): one model call per query (or more, as the response mode
        asks). ``keyword_llm``: ``None`` (default) asks ``llm`` for the query's keywords only in the paper's
        mode ``context="paths"`` (one more call), ``True`` always, ``False`` never (the query text is the
        keyword), or pass another LLM to ask always. ``max_tokens`` bounds the
        context as :func:`pathrag.query.context.result_context` does. ``retriever_params`` go to
        :class:`PathRAGRetriever` (``similarity_top_k``, ``relation_index``, ``top_k``, ``num_seeds``,
        ``alpha``, ``theta``, ``max_hops``, ``paths_per_pair``, ``directed``, ``context``, ``num_passages``,
        ``passage_retriever``, ``ignore_relations``, ``vector_store``, ``embed_model``); the vector store and
        embedding model default to the index's, the retrieval's budget to ``max_tokens``.
        """
        if not isinstance(index, PropertyGraphIndex):
            raise TypeError(f"from_index needs a PropertyGraphIndex, got {type(index).__name__}")
        llm = llm or Settings.llm
        retriever_params.setdefault("vector_store", index.vector_store)
        retriever_params.setdefault("max_tokens", max_tokens)  # one budget: what is retrieved, what is shown
        # PropertyGraphIndex keeps its embedding model private; None falls back to Settings.embed_model
        retriever_params.setdefault("embed_model", getattr(index, "_embed_model", None))
        if isinstance(keyword_llm, bool) or keyword_llm is None:
            keywords, wanted = llm, keyword_llm
        else:  # another model: asked every time
            keywords, wanted = keyword_llm, True
        retriever = PathRAGRetriever(index.property_graph_store, llm=keywords, keyword_llm=wanted, **retriever_params)
        synthesizer = get_response_synthesizer(
            llm=llm,
            text_qa_template=text_qa_template or PATHRAG_QA_TEMPLATE,
            response_mode=response_mode,
            streaming=streaming,
        )
        return cls(
            retriever,
            response_synthesizer=synthesizer,
            node_postprocessors=[PathRAGContextPostprocessor(max_tokens=max_tokens)],
        )


def _sourced(response: RESPONSE_TYPE) -> RESPONSE_TYPE:
    """``response`` with its source nodes best first and, for a whole answer, the nodes it cites."""
    sent = list(response.source_nodes)
    response.source_nodes = sorted(sent, key=lambda n: n.node.metadata.get(RANK_KEY, 0))
    if isinstance(response, Response):
        by_number = {n.node.metadata.get(NUMBER_KEY): n for n in sent}
        cited = [by_number[k] for k in cited_numbers(str(response.response or ""), len(sent)) if k in by_number]
        response.metadata = {**(response.metadata or {}), CITED_KEY: cited}
    return response
