"""The answering prompt and an LCEL chain: question → retrieved evidence → prompt → model → answer.

The context is laid out by the core's one builder (:func:`pathrag.query.context.items_context`, what
:func:`pathrag.query.context.result_context` uses, in the layout the retriever's documents were retrieved
for): the question first, then the passages from least to most relevant, then the paths from least to
most reliable (the most reliable right before the instructions). Its wording is the core's (:mod:`pathrag.llm.prompts`).

>>> from langchain_core.documents import Document
>>> weak = Document(page_content="A -> B", metadata={"kind": "path", "score": 0.2, "nodes": ["A", "B"]})
>>> strong = Document(page_content="A -> C", metadata={"kind": "path", "score": 0.9, "nodes": ["A", "C"]})
>>> print(format_paths([strong, weak]))
Path 1 (1 hop, reliability 0.200):
A -> B
<BLANKLINE>
Path 2 (1 hop, reliability 0.900):
A -> C
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseLanguageModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda, RunnableParallel, RunnablePassthrough

from pathrag import RetrievedItem, ScoredPath
from pathrag.params import check_max_tokens
from pathrag.query.citations import cited_items
from pathrag.query.context import (
    DEFAULT_CONTEXT_TOKENS,
    PathContext,
    format_path_blocks,
    full_instructions,
    items_context,
)

from .retrievers import LaidOut, PathRAGRetriever

__all__ = ["PATHRAG_PROMPT", "create_pathrag_chain", "format_context", "format_paths"]

#: Variables ``context`` (question and evidence: a PathRAGRetriever's own laid-out context, else
#: :func:`format_context` of the documents) and ``instructions``;
#: ``question`` is given too, for prompts of your own.
PATHRAG_PROMPT = ChatPromptTemplate.from_messages([("human", "{context}\n\n{instructions}")])


def _is_path(doc: Document) -> bool:
    nodes = doc.metadata.get("nodes")
    return doc.metadata.get("kind") == "path" and isinstance(nodes, (list, tuple)) and len(nodes) >= 2


def _score(doc: Document) -> float:
    """A document's own score: its kind's (``raw_score``, a path's reliability) when it has one."""
    try:
        return float(doc.metadata.get("raw_score", doc.metadata.get("score", 0.0)))
    except (TypeError, ValueError):
        return 0.0


def format_paths(docs: Sequence[Document]) -> str:
    """The retrieved documents as numbered blocks, from least to most reliable.

    Entity fills (``kind == "entity"``, and any document that is not a path) count as the least
    reliable and come first; then the paths by ascending score. Equal scores keep the retriever's
    order, reversed. No documents: ``"(no paths found)"``.
    """
    ranked = sorted(reversed(list(docs)), key=lambda d: (_is_path(d), _score(d)))
    paths = [d for d in ranked if _is_path(d)]
    blocks = [
        f"Entity {i} (on no path):\n{d.page_content}"
        for i, d in enumerate((d for d in ranked if not _is_path(d)), start=1)
    ]
    if paths or not blocks:
        blocks.append(
            format_path_blocks(
                [ScoredPath(nodes=tuple(d.metadata["nodes"]), score=_score(d)) for d in paths],
                [d.page_content for d in paths],
            )
        )
    return "\n\n".join(blocks)


def format_context(
    question: str, docs: Sequence[Document], *, max_tokens: int | None = DEFAULT_CONTEXT_TOKENS
) -> PathContext:
    """The context the core lays out for these documents (its ``text`` and answer ``instructions``).

    >>> from langchain_core.documents import Document
    >>> doc = Document(page_content="A met B.", metadata={"kind": "passage", "id": "c1", "score": 0.5})
    >>> print(format_context("Who met B?", [doc]).text)
    Question: Who met B?
    <BLANKLINE>
    Passages, least to most relevant:
    <BLANKLINE>
    Passage 1:
    A met B.
    """
    layout = "paths" if docs and all(doc.metadata.get("layout") == "paths" for doc in docs) else "evidence"
    items = [
        RetrievedItem.from_metadata(doc.metadata, doc.page_content, id=key)
        for doc, key in zip(docs, _item_ids(docs), strict=True)
    ]
    return items_context(question, items, layout, max_tokens=max_tokens)


def _question(value: Any) -> str:
    if isinstance(value, Mapping) and "question" in value:
        value = value["question"]
    if not isinstance(value, str):
        raise TypeError(f'expected a question string or {{"question": str}}, got {type(value).__name__}')
    return value


class _Unset(enum.Enum):
    """``create_pathrag_chain``'s "no budget given": a PathRAGRetriever's own budget applies."""

    BUDGET = 0


def _item_ids(docs: Sequence[Document]) -> list[str]:
    """The id each document's item has in a laid-out context: its metadata's ``id`` (as
    ``RetrievedItem.from_metadata`` reads it), else its own, else its position (``doc-1``...), so that two
    documents without one stay two items."""
    return [str(doc.metadata.get("id") or doc.id or f"doc-{n}") for n, doc in enumerate(docs, start=1)]


def _laying_out(retriever: Runnable[str, list[Document]], max_tokens: int | None | _Unset) -> Runnable[str, LaidOut]:
    """question → the documents and the context they are shown in.

    A :class:`PathRAGRetriever` lays its documents out itself, within its own budget (or, when the chain
    is given ``max_tokens``, that budget for this retrieval): the prompt is the retriever's context, with no
    second layout. Any other retriever's documents are laid out here from their metadata.
    """
    if isinstance(retriever, PathRAGRetriever):
        budget = {} if isinstance(max_tokens, _Unset) else {"max_tokens": max_tokens}

        def own(question: str, config: RunnableConfig) -> LaidOut:
            return retriever.invoke_laid_out(question, config, **budget)

        async def aown(question: str, config: RunnableConfig) -> LaidOut:
            return await retriever.ainvoke_laid_out(question, config, **budget)

        return RunnableLambda(own, afunc=aown, name="pathrag_retrieval")
    limit = DEFAULT_CONTEXT_TOKENS if isinstance(max_tokens, _Unset) else max_tokens

    def lay_out(question: str, docs: list[Document]) -> LaidOut:
        context = format_context(question, docs, max_tokens=limit)
        shown = {item.id for item in context.items}
        kept = [(key, doc) for key, doc in zip(_item_ids(docs), docs, strict=True) if key in shown]
        return LaidOut([doc for _, doc in kept], context, tuple(key for key, _ in kept))

    def other(question: str, config: RunnableConfig) -> LaidOut:
        return lay_out(question, retriever.invoke(question, config))

    async def aother(question: str, config: RunnableConfig) -> LaidOut:
        return lay_out(question, await retriever.ainvoke(question, config))

    return RunnableLambda(other, afunc=aother, name="pathrag_retrieval")


def _prompt_values(retrieved: Mapping[str, Any]) -> dict[str, str]:
    context: PathContext = retrieved["laid_out"].context
    return {"question": retrieved["question"], "context": context.text, "instructions": full_instructions(context)}


def _with_paths(answered: Mapping[str, Any]) -> dict[str, Any]:
    return {"question": answered["question"], "paths": answered["laid_out"].documents, "answer": answered["answer"]}


def _with_sources(answered: Mapping[str, Any]) -> dict[str, Any]:
    """The answer, the documents it cites (``sources``) and, apart, every document its prompt held (``sent``)."""
    laid_out: LaidOut = answered["laid_out"]
    by_id = dict(zip(laid_out.ids or _item_ids(laid_out.documents), laid_out.documents, strict=True))
    cited = [by_id[item.id] for item in cited_items(answered["answer"], laid_out.context) if item.id in by_id]
    return {
        "question": answered["question"],
        "answer": answered["answer"],
        "sources": cited,
        "sent": laid_out.documents,
    }


def create_pathrag_chain(
    retriever: Runnable[str, list[Document]],
    llm: BaseLanguageModel[Any],
    *,
    prompt: BasePromptTemplate[Any] = PATHRAG_PROMPT,
    return_paths: bool = False,
    return_sources: bool = False,
    max_tokens: int | None | _Unset = _Unset.BUDGET,
) -> Runnable[Any, Any]:
    """An LCEL chain answering a question (a ``str`` or ``{"question": str}``) from the key paths.

    The prompt numbers the context's items once (passages, then paths) and asks the model to cite them as
    ``[2]``. Returns the answer string; with ``return_sources=True`` a dict ``{"question", "answer",
    "sources", "sent"}``: ``sources`` are the documents the answer cites (in the order it first cites them),
    ``sent`` every document the prompt held (best first): what the model was shown, not what it used. With
    ``return_paths=True`` (the older form) a dict ``{"question", "paths", "answer"}``, ``paths`` being
    ``sent``.

    One budget, one layout: with a :class:`PathRAGRetriever` the prompt's context is the retriever's own
    laid-out context (:meth:`PathRAGRetriever.invoke_laid_out`), within the retriever's ``max_tokens``;
    ``max_tokens`` given here replaces that budget for the chain's retrievals. Any other retriever's
    documents are laid out from their metadata by :func:`format_context` within ``max_tokens`` (default
    4,000 tokens; ``None``: no limit). ``invoke``, ``ainvoke``, ``batch``, ``stream`` and ``astream`` all
    work; streaming yields the answer as the model writes it (with ``return_sources``, once it is whole).
    Model calls: one per question (the answer), plus the retriever's own (none by default).

    >>> from langchain_core.language_models import FakeListChatModel
    >>> from langchain_core.documents import Document
    >>> path = Document(page_content="MARA -> SALTMERE", metadata={"kind": "path", "score": 1.0,
    ...                                                           "nodes": ["MARA", "SALTMERE"]})
    >>> paths = RunnableLambda(lambda question: [path])
    >>> chain = create_pathrag_chain(paths, FakeListChatModel(responses=["Mara lives in Saltmere."]))
    >>> chain.invoke("Where does Mara live?")
    'Mara lives in Saltmere.'
    >>> answered = create_pathrag_chain(paths, FakeListChatModel(responses=["Saltmere [1]."]), return_sources=True
    ...                                 ).invoke({"question": "Where?"})
    >>> sorted(answered), [doc.page_content for doc in answered["sources"]]
    (['answer', 'question', 'sent', 'sources'], ['MARA -> SALTMERE'])
    """
    if return_paths and return_sources:
        raise ValueError("pass return_sources=True or return_paths=True, not both")
    if max_tokens is not None and not isinstance(max_tokens, _Unset):
        check_max_tokens(max_tokens)
    answer = RunnableLambda(_prompt_values) | prompt | llm | StrOutputParser()
    retrieve = RunnableLambda(_question) | RunnableParallel(
        question=RunnablePassthrough(), laid_out=_laying_out(retriever, max_tokens)
    )
    chain: Runnable[Any, Any]
    if return_sources:
        chain = retrieve | RunnablePassthrough.assign(answer=answer) | RunnableLambda(_with_sources)
    elif return_paths:
        chain = retrieve | RunnablePassthrough.assign(answer=answer) | RunnableLambda(_with_paths)
    else:
        chain = retrieve | answer
    return chain.with_config(run_name="pathrag_chain")
