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

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseLanguageModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnableParallel, RunnablePassthrough

from pathrag import RetrievedItem, ScoredPath
from pathrag.query.context import DEFAULT_CONTEXT_TOKENS, PathContext, format_path_blocks, items_context

__all__ = ["PATHRAG_PROMPT", "create_pathrag_chain", "format_context", "format_paths"]

#: Variables ``context`` (question and evidence, from :func:`format_context`) and ``instructions``;
#: ``question`` is given too, for prompts of your own.
PATHRAG_PROMPT = ChatPromptTemplate.from_messages([("human", "{context}\n\n{instructions}")])


def _is_path(doc: Document) -> bool:
    nodes = doc.metadata.get("nodes")
    return doc.metadata.get("kind") == "path" and isinstance(nodes, (list, tuple)) and len(nodes) >= 2


def _score(doc: Document) -> float:
    try:
        return float(doc.metadata.get("score", 0.0))
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
    items = [RetrievedItem.from_metadata(doc.metadata, doc.page_content, id=doc.id) for doc in docs]
    return items_context(question, items, layout, max_tokens=max_tokens)


def _question(value: Any) -> str:
    if isinstance(value, Mapping) and "question" in value:
        value = value["question"]
    if not isinstance(value, str):
        raise TypeError(f'expected a question string or {{"question": str}}, got {type(value).__name__}')
    return value


def _prompt_values(retrieved: Mapping[str, Any], max_tokens: int | None) -> dict[str, str]:
    context = format_context(retrieved["question"], retrieved["paths"], max_tokens=max_tokens)
    return {"question": retrieved["question"], "context": context.text, "instructions": context.instructions}


def create_pathrag_chain(
    retriever: Runnable[str, list[Document]],
    llm: BaseLanguageModel[Any],
    *,
    prompt: BasePromptTemplate[Any] = PATHRAG_PROMPT,
    return_paths: bool = False,
    max_tokens: int | None = DEFAULT_CONTEXT_TOKENS,
) -> Runnable[Any, Any]:
    """An LCEL chain answering a question (a ``str`` or ``{"question": str}``) from the key paths.

    Returns the answer string, or with ``return_paths=True`` a dict ``{"question", "paths", "answer"}``
    where ``paths`` are the retrieved documents (best first). ``max_tokens`` bounds the context, as
    :func:`pathrag.query.context.result_context` does (default 4,000 tokens; ``None``: no limit). ``invoke``,
    ``ainvoke``, ``batch``, ``stream`` and ``astream`` all work; streaming yields the answer as the model
    writes it.

    >>> from langchain_core.language_models import FakeListChatModel
    >>> from langchain_core.documents import Document
    >>> path = Document(page_content="MARA -> SALTMERE", metadata={"kind": "path", "score": 1.0,
    ...                                                           "nodes": ["MARA", "SALTMERE"]})
    >>> paths = RunnableLambda(lambda question: [path])
    >>> chain = create_pathrag_chain(paths, FakeListChatModel(responses=["Mara lives in Saltmere."]))
    >>> chain.invoke("Where does Mara live?")
    'Mara lives in Saltmere.'
    >>> sorted(create_pathrag_chain(paths, FakeListChatModel(responses=["ok"]), return_paths=True).invoke(
    ...     {"question": "Where?"}))
    ['answer', 'paths', 'question']
    """
    values: RunnableLambda[Mapping[str, Any], dict[str, str]] = RunnableLambda(
        lambda retrieved: _prompt_values(retrieved, max_tokens)
    )
    answer = values | prompt | llm | StrOutputParser()
    retrieve = RunnableLambda(_question) | RunnableParallel(question=RunnablePassthrough(), paths=retriever)
    chain = retrieve | (RunnablePassthrough.assign(answer=answer) if return_paths else answer)
    return chain.with_config(run_name="pathrag_chain")
