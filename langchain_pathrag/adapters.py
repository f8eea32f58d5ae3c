"""Translation between LangChain components and the core's protocols.

* :class:`LangChainLanguageModel` — any ``BaseChatModel`` / ``BaseLLM`` as a :class:`pathrag.LanguageModel`.
* :class:`LangChainEmbedder` — any LangChain ``Embeddings`` as a :class:`pathrag.Embedder`.
* :class:`LangChainVectorIndex` — any LangChain ``VectorStore`` as a :class:`pathrag.VectorIndex`.
* :class:`PathRAGEmbeddings` — the other way round: a core embedder (e.g. the model-free
  :class:`pathrag.HashingEmbedder`) as LangChain ``Embeddings``, for offline demos and tests.

>>> from langchain_core.language_models import FakeListChatModel
>>> llm = LangChainLanguageModel(FakeListChatModel(responses=["pong"]))
>>> llm.complete("ping"), llm.name
('pong', 'fake-list-chat-model:...')
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore
from typing_extensions import override

from pathrag import Embedder, VectorHit, VectorItem
from pathrag.errors import ModelUnreachable
from pathrag.vectors.base import checked_vectors

__all__ = [
    "LangChainEmbedder",
    "LangChainLanguageModel",
    "LangChainVectorIndex",
    "PathRAGEmbeddings",
    "model_unreachable",
]

#: The metadata key that also holds an item's id in stores that cannot look items up by id (see
#: :class:`LangChainVectorIndex`).
ID_KEY = "pathrag_id"


def _text(output: Any) -> str:
    """Chat models answer with a message (``str`` or content blocks), text LLMs with a ``str``."""
    if isinstance(output, BaseMessage):
        return str(output.text)
    if isinstance(output, str):
        return output
    raise TypeError(f"expected a message or a str from the model, got {type(output).__name__}")


def _model_name(llm: BaseLanguageModel[Any]) -> str:
    """``<llm type>:<model name>``, or a digest of the identifying parameters when there is no name.

    It keys the index's LLM cache: answers recorded with one model are not reused for another.
    """
    model = llm._get_ls_params().get("ls_model_name")
    if not model:
        params = json.dumps(dict(llm._identifying_params), sort_keys=True, default=str)
        model = hashlib.sha256(params.encode("utf-8")).hexdigest()[:12]
    kind = getattr(llm, "_llm_type", type(llm).__name__)  # chat models and LLMs define it
    return f"{kind}:{model}"


class LangChainLanguageModel:
    """A LangChain chat model or text LLM as a :class:`pathrag.LanguageModel` (text in, text out).

    ``config`` is passed to every call: give it ``callbacks`` (e.g. ``run_manager.get_child()``) to make
    the calls child runs of yours, and ``tags`` / ``run_name`` so they can be told apart in traces and
    ``astream_events``. ``max_tokens`` caps every answer, for a model that has that setting (``ChatOpenAI``,
    ``ChatAnthropic``...; others are called as they are).
    """

    def __init__(
        self,
        llm: BaseLanguageModel[Any],
        *,
        config: RunnableConfig | None = None,
        name: str | None = None,
        max_tokens: int | None = None,
    ) -> None:
        if not isinstance(llm, BaseLanguageModel):
            raise TypeError(f"expected a LangChain chat model or LLM, got {type(llm).__name__}")
        self.llm = llm
        self.config = config
        self.name = name or _model_name(llm)
        # passed per call only to a model with the field: another one could refuse the unknown argument
        fields = getattr(type(llm), "model_fields", {})
        self._kwargs: dict[str, Any] = {"max_tokens": max_tokens} if max_tokens and "max_tokens" in fields else {}

    def complete(self, prompt: str) -> str:
        """Invoke the model on ``prompt`` with ``config``; the answer's text.

        Raises:
            pathrag.errors.ModelUnreachable: the model's endpoint could not be reached (it names the URL).
        """
        try:
            return _text(self.llm.invoke(prompt, config=self.config, **self._kwargs))
        except Exception as exc:
            unreachable = model_unreachable(exc)
            if unreachable is None:
                raise
            raise unreachable from exc

    async def acomplete(self, prompt: str) -> str:
        """Async :meth:`complete` (``ainvoke``)."""
        try:
            return _text(await self.llm.ainvoke(prompt, config=self.config, **self._kwargs))
        except Exception as exc:
            unreachable = model_unreachable(exc)
            if unreachable is None:
                raise
            raise unreachable from exc

    def __repr__(self) -> str:
        return f"LangChainLanguageModel(name={self.name!r})"


#: What a connection error adds to the URL it names
_ENDPOINT_HINT = "check the model's base URL (OPENAI_BASE_URL for an OpenAI-compatible endpoint) and that it runs"


def model_unreachable(error: BaseException) -> ModelUnreachable | None:
    """``error`` as a :class:`pathrag.errors.ModelUnreachable` naming the URL it tried, when it is a failure to
    reach a model's HTTP endpoint (the ``openai`` SDK's ``APIConnectionError`` and its timeouts, httpx's
    connect errors, which carry the ``request``); ``None`` for any other error.

    >>> import httpx
    >>> request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    >>> print(model_unreachable(httpx.ConnectError("[Errno 111] Connection refused", request=request)))
    cannot reach the model at http://127.0.0.1:9/v1/chat/completions: connection refused (check the model's \
base URL (OPENAI_BASE_URL for an OpenAI-compatible endpoint) and that it runs)
    >>> model_unreachable(ValueError("bad answer")) is None
    True
    """
    if isinstance(error, ModelUnreachable):
        return error
    chain = _causes(error)
    names = {type(e).__name__ for e in chain}
    if not names & {"APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout", "OpenAIConnectionError"}:
        return None
    url = next((str(found) for e in chain if (found := _request_url(e)) is not None), None)
    if url is None:
        return None
    refused = any(isinstance(e, ConnectionRefusedError) or "refused" in str(e).lower() for e in chain)
    timed_out = any("Timeout" in type(e).__name__ for e in chain)
    reason = "connection refused" if refused else "timed out" if timed_out else _last_words(chain)
    return ModelUnreachable(url, reason, refused=refused, hint=_ENDPOINT_HINT)


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and the errors it was raised from, nearest first (cycles and long chains cut)."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain and len(chain) < 16:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _request_url(error: BaseException) -> Any:
    try:  # httpx raises RuntimeError when an error has no request
        request = getattr(error, "request", None)
    except RuntimeError:
        return None
    return getattr(request, "url", None)


def _last_words(chain: Sequence[BaseException]) -> str:
    """The innermost error's message: the network's own reason (DNS, TLS...), not the SDK's wrapper."""
    words = " ".join(str(chain[-1]).split())[:200]
    return words or type(chain[-1]).__name__


class LangChainEmbedder:
    """LangChain ``Embeddings`` as a :class:`pathrag.Embedder` (texts are embedded as documents)."""

    def __init__(self, embeddings: Embeddings) -> None:
        if not isinstance(embeddings, Embeddings):
            raise TypeError(f"expected LangChain Embeddings, got {type(embeddings).__name__}")
        self.embeddings = embeddings

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, from ``embed_documents``."""
        return self.embeddings.embed_documents(list(texts))

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Async :meth:`embed` (``aembed_documents``)."""
        return await self.embeddings.aembed_documents(list(texts))


class PathRAGEmbeddings(Embeddings):
    """A core :class:`pathrag.Embedder` as LangChain ``Embeddings``.

    >>> from pathrag import HashingEmbedder
    >>> embeddings = PathRAGEmbeddings(HashingEmbedder(64))
    >>> len(embeddings.embed_query("harbour pilot"))
    64
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    @override
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed(texts)

    @override
    def embed_query(self, text: str) -> list[float]:
        return list(checked_vectors(self.embedder, self.embedder.embed([text]), 1)[0])

    @override
    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await self.embedder.aembed(texts)

    @override
    async def aembed_query(self, text: str) -> list[float]:
        return list(checked_vectors(self.embedder, await self.embedder.aembed([text]), 1)[0])


class LangChainVectorIndex:
    """A LangChain ``VectorStore`` as a :class:`pathrag.VectorIndex`.

    * Upsert: documents whose text and metadata are already stored under their id are skipped (when
      the store supports ``get_by_ids``); changed ones are deleted first, since not every store
      overwrites an id on ``add_documents``. Then ``add_documents(docs, ids=...)``.
    * Query: ``similarity_search_with_relevance_scores`` (higher is closer, whatever the store's metric),
      else, for stores without a relevance function, ``similarity_search_with_score``
      (``InMemoryVectorStore``: cosine similarity). Hits keep the store's order (best first); passage
      ranking also uses the score, so a store whose raw score is a distance needs the relevance one.
      A query whose embedding is the zero vector (a text without words, for the hashing embedder) has no
      direction to compare: it finds nothing, instead of the error some stores raise (``InMemoryVectorStore``:
      ``NaN values found``). So does a query to a store that cannot score it while a plain search finds
      nothing (``langchain-milvus`` before its collection exists: ``No index params provided``).
    * Get: ``get_by_ids`` (``None`` where the store has no such item or cannot look one up).
    * Ids: a hit's id is its ``Document.id``. A store that cannot look items up by id (no ``get_by_ids``)
      also gets each item's id in the metadata, under :data:`ID_KEY`, because such stores may return
      search results without ``Document.id`` (``langchain-milvus`` does); hits take their id from there
      when ``Document.id`` is missing, and the key never shows in a hit's or item's metadata.
    * Delete: ``delete(ids)``, never called with an empty list (some stores then delete everything).
    * Event loops: the store's own async methods (``aadd_documents``...) are used in one event loop only,
      the first the index is used in; in any other, its sync methods run in a worker thread. Many async
      clients are bound to the loop they first ran in (``langchain-milvus``'s is), and the index's sync
      methods (``PathRAGIndexer.add_documents``...) run each call in a new loop.

    Give each of the entity, relation and chunk indexes its own store (or collection): their
    documents are told apart by nothing else.

    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> from pathrag import HashingEmbedder
    >>> index = LangChainVectorIndex(InMemoryVectorStore(PathRAGEmbeddings(HashingEmbedder())))
    >>> index.upsert([VectorItem("e1", "harbour pilot", {"name": "MARA"}), VectorItem("e2", "sea wall")])
    >>> [(hit.id, hit.metadata) for hit in index.query("the harbour pilot", k=1)]
    [('e1', {'name': 'MARA'})]
    """

    def __init__(self, store: VectorStore) -> None:
        if not isinstance(store, VectorStore):
            raise TypeError(f"expected a LangChain VectorStore, got {type(store).__name__}")
        self.store = store
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The store's ``a<name>`` in the first event loop the index ran in, else ``name`` in a thread."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        if loop is self._loop:
            return await getattr(self.store, f"a{name}")(*args, **kwargs)
        return await asyncio.to_thread(getattr(self.store, name), *args, **kwargs)

    def upsert(self, items: Sequence[VectorItem]) -> None:
        """Store ``items`` under their ids, skipping unchanged ones and replacing changed ones."""
        docs = _documents(items)
        if not docs:
            return
        try:
            stored = self.store.get_by_ids(list(docs))
        except NotImplementedError:
            stored = None
        todo, stale = _changes(docs, stored)
        if stale:
            self.store.delete(stale)
        if todo:
            self.store.add_documents(_with_id_key(todo, stored), ids=[doc.id for doc in todo])

    async def aupsert(self, items: Sequence[VectorItem]) -> None:
        """Async :meth:`upsert`."""
        docs = _documents(items)
        if not docs:
            return
        try:
            stored = await self._call("get_by_ids", list(docs))
        except NotImplementedError:
            stored = None
        todo, stale = _changes(docs, stored)
        if stale:
            await self._call("delete", stale)
        if todo:
            await self._call("add_documents", _with_id_key(todo, stored), ids=[doc.id for doc in todo])

    def query(self, text: str, k: int) -> list[VectorHit]:
        """The ``k`` items nearest ``text``, in the store's order (best first); none when ``k <= 0``."""
        if k <= 0:
            return []
        try:
            try:
                found = self.store.similarity_search_with_relevance_scores(text, k=k)
            except NotImplementedError:  # no relevance function: the raw score
                found = self.store.similarity_search_with_score(text, k=k)
        except ValueError:
            if self._directionless(text) or not self.store.similarity_search_with_score(text, k=1):
                return []
            raise
        return [_hit(doc, score) for doc, score in found]

    async def aquery(self, text: str, k: int) -> list[VectorHit]:
        """Async :meth:`query`."""
        if k <= 0:
            return []
        try:
            try:
                found = await self._call("similarity_search_with_relevance_scores", text, k=k)
            except NotImplementedError:
                found = await self._call("similarity_search_with_score", text, k=k)
        except ValueError:
            if self._directionless(text) or not await self._call("similarity_search_with_score", text, k=1):
                return []
            raise
        return [_hit(doc, score) for doc, score in found]

    def _directionless(self, text: str) -> bool:
        """Whether ``text`` embeds to the zero vector (asked only after a store refused to score it)."""
        embeddings = self.store.embeddings
        return embeddings is not None and not any(embeddings.embed_query(text))

    def get(self, item_id: str) -> VectorItem | None:
        """The stored item ``item_id`` (``None`` if absent, or if the store cannot look items up by id)."""
        try:
            found = self.store.get_by_ids([item_id])
        except NotImplementedError:
            return None
        return next(
            (VectorItem(item_id, doc.page_content, _metadata(doc)) for doc in found if _doc_id(doc) == item_id), None
        )

    def delete(self, ids: Iterable[str]) -> None:
        """Delete the items ``ids`` (the store is not called when there are none)."""
        ids = list(ids)
        if ids:
            self.store.delete(ids)

    async def adelete(self, ids: Iterable[str]) -> None:
        """Async :meth:`delete`."""
        ids = list(ids)
        if ids:
            await self._call("delete", ids)

    def __repr__(self) -> str:
        return f"LangChainVectorIndex({type(self.store).__name__})"


def _documents(items: Sequence[VectorItem]) -> dict[str, Document]:
    # the last of duplicate ids wins, as in the core's own index
    return {item.id: Document(id=item.id, page_content=item.text, metadata=dict(item.metadata)) for item in items}


def _changes(docs: dict[str, Document], stored: list[Document] | None) -> tuple[list[Document], list[str]]:
    """What to add, and which of those ids to delete first (all of them when the store cannot tell)."""
    if stored is None:
        return list(docs.values()), list(docs)
    known = {doc.id: doc for doc in stored}
    todo = [
        doc
        for doc_id, doc in docs.items()
        if doc_id not in known
        or (known[doc_id].page_content, known[doc_id].metadata) != (doc.page_content, doc.metadata)
    ]
    return todo, [doc.id for doc in todo if doc.id in known]  # type: ignore[misc]


def _with_id_key(docs: list[Document], stored: list[Document] | None) -> list[Document]:
    """``docs``, with their ids also in the metadata when the store cannot look ids up (``stored`` is None)."""
    if stored is not None:
        return docs
    return [
        Document(id=doc.id, page_content=doc.page_content, metadata={**doc.metadata, ID_KEY: doc.id}) for doc in docs
    ]


def _doc_id(doc: Document) -> str:
    return doc.id or str(doc.metadata.get(ID_KEY) or "")


def _metadata(doc: Document) -> dict[str, Any]:
    return {key: value for key, value in doc.metadata.items() if key != ID_KEY}


def _hit(doc: Document, score: float) -> VectorHit:
    return VectorHit(_doc_id(doc), float(score), _metadata(doc), doc.page_content)
