"""The answering side: the path-ordered QA prompt, the node order that feeds it, and a ready query engine.

PathRAG puts the query first and the paths from least to most reliable, so the most reliable path sits
next to where the model starts writing. Retrievers return best first, so :class:`PathOrderPostprocessor`
sorts the nodes ascending by score before synthesis, and :data:`PATHRAG_QA_TEMPLATE` (the core's
:data:`pathrag.prompts.ANSWER_TEMPLATE` with LlamaIndex's ``{query_str}`` / ``{context_str}``) says so.
With the default ``compact`` mode the nodes are joined in that order; only on overflow does LlamaIndex
split them over several calls (then refining with its own refine prompt).

>>> print(PATHRAG_QA_TEMPLATE.format(query_str="Who?", context_str="A -> B").split(chr(10))[0])
Question: Who?
"""

from __future__ import annotations

from typing import Any

from llama_index.core.indices.property_graph import PropertyGraphIndex
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import PromptTemplate, PromptType
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import ResponseMode, get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.settings import Settings

from pathrag.prompts import ANSWER_TEMPLATE

from .retriever import PathRAGRetriever

__all__ = ["PATHRAG_QA_TEMPLATE", "PathOrderPostprocessor", "PathRAGQueryEngine"]

PATHRAG_QA_TEMPLATE = PromptTemplate(
    ANSWER_TEMPLATE.format(question="{query_str}", paths="{context_str}"), prompt_type=PromptType.QUESTION_ANSWER
)
"""The core's answer prompt: the question, the paths least to most reliable, the instructions."""


class PathOrderPostprocessor(BaseNodePostprocessor):
    """Order nodes ascending by score, so the most reliable path comes last in the prompt.

    Equal scores keep the retriever's tie-break, reversed: of two equally reliable paths, the one the
    retriever ranked first ends up last, as in :func:`pathrag.context.build_context`.

    >>> from llama_index.core.schema import TextNode
    >>> ranked = [("best", 0.9), ("tie, ranked first", 0.5), ("tie, ranked second", 0.5), ("weak", 0.2)]
    >>> nodes = [NodeWithScore(node=TextNode(text=t), score=s) for t, s in ranked]
    >>> [n.node.text for n in PathOrderPostprocessor().postprocess_nodes(nodes)]
    ['weak', 'tie, ranked second', 'tie, ranked first', 'best']
    """

    @classmethod
    def class_name(cls) -> str:
        return "PathOrderPostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return sorted(reversed(nodes), key=lambda n: n.score or 0.0)  # stable: ties stay reversed


class PathRAGQueryEngine(RetrieverQueryEngine):
    """A ``RetrieverQueryEngine`` wired for PathRAG: :class:`PathRAGRetriever`, ascending path order and
    :data:`PATHRAG_QA_TEMPLATE`. Build it with :meth:`from_index`; ``query``, ``aquery`` and streaming work
    as for any query engine, and ``get_prompts`` / ``update_prompts`` reach the QA template as
    ``"response_synthesizer:text_qa_template"``.
    """

    @classmethod
    def from_index(
        cls,
        index: PropertyGraphIndex,
        llm: LLM | None = None,
        *,
        keyword_llm: LLM | bool = True,
        text_qa_template: PromptTemplate | None = None,
        response_mode: ResponseMode = ResponseMode.COMPACT,
        streaming: bool = False,
        **retriever_params: Any,
    ) -> PathRAGQueryEngine:
        """A ready engine over ``index``'s graph.

        ``llm`` answers (default ``Settings.llm``). ``keyword_llm``: ``True`` asks ``llm`` for the query's
        keywords, ``False`` searches with the query text, or pass another LLM. ``retriever_params`` go
        to :class:`PathRAGRetriever` (``top_k``, ``num_seeds``, ``alpha``, ``theta``, ``max_hops``,
        ``paths_per_pair``, ``directed``, ``ignore_relations``, ``vector_store``, ``embed_model``); the
        vector store and embedding model default to the index's.
        """
        if not isinstance(index, PropertyGraphIndex):
            raise TypeError(f"from_index needs a PropertyGraphIndex, got {type(index).__name__}")
        llm = llm or Settings.llm
        retriever_params.setdefault("vector_store", index.vector_store)
        # PropertyGraphIndex keeps its embedding model private; None falls back to Settings.embed_model
        retriever_params.setdefault("embed_model", getattr(index, "_embed_model", None))
        keywords = llm if keyword_llm is True else (keyword_llm or None)
        retriever = PathRAGRetriever(index.property_graph_store, llm=keywords, **retriever_params)
        synthesizer = get_response_synthesizer(llm=llm, text_qa_template=text_qa_template or PATHRAG_QA_TEMPLATE,
                                               response_mode=response_mode, streaming=streaming)
        return cls(retriever, response_synthesizer=synthesizer, node_postprocessors=[PathOrderPostprocessor()])
