"""``PathRAGIndexer``: build and maintain a PathRAG index from LangChain ``Document``s.

A thin layer over :class:`pathrag.PathRAGIndex`, which extracts, merges, caches and deletes: this
module splits LangChain documents into chunks, adapts the chat model, embeddings, vector stores and
graph store, and persists the default in-memory vector stores next to the core's files.

>>> from langchain_core.documents import Document
>>> from langchain_core.language_models import FakeListChatModel
>>> from pathrag import HashingEmbedder
>>> from langchain_pathrag import PathRAGEmbeddings
>>> llm = FakeListChatModel(responses=[
...     '("entity"<|>Mara<|>person<|>A harbour pilot.)##'
...     '("relationship"<|>Mara<|>Saltmere<|>Mara lives in Saltmere.<|>home<|>7)<|COMPLETE|>'])
>>> indexer = PathRAGIndexer(llm, PathRAGEmbeddings(HashingEmbedder()))
>>> summary = indexer.add_documents([Document(page_content="Mara, a pilot, lives in Saltmere.", id="mara")])
>>> summary.documents, summary.entities, summary.relations
(1, 2, 1)
>>> [doc.metadata["nodes"] for doc in indexer.as_retriever(llm=None).invoke("Mara and Saltmere")]
[['MARA', 'SALTMERE']]
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseLanguageModel
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter, TextSplitter

import pathrag
from pathrag import GraphStore, IndexConfig, InsertSummary, PathRAGIndex, VectorItem
from pathrag.graph import atomic_write_text
from pathrag.indexing import STATE_FILE, DeleteSummary
from pathrag.tokens import count_tokens

from .models import LangChainLanguageModel, LangChainVectorIndex
from .retrievers import PathRAGRetriever

__all__ = ["DEFAULT_CHUNK_OVERLAP", "DEFAULT_CHUNK_SIZE", "EXTRACTION_TAG", "PathRAGIndexer", "document_id"]

DEFAULT_CHUNK_SIZE = 1200  # tokens, as in the paper's setup
DEFAULT_CHUNK_OVERLAP = 100
#: Tag of the extraction and summary calls of the indexer's model.
EXTRACTION_TAG = "pathrag:extraction"
#: Files of the default vector stores under the index directory (``InMemoryVectorStore.load`` reads them).
STORE_FILES = {"entities": "entities.vectorstore.json", "relations": "relations.vectorstore.json",
               "chunks": "chunks.vectorstore.json"}


def document_id(doc: Document) -> str:
    """The id a document is indexed under: ``doc.id`` when set, else a hash of its ``page_content``.

    >>> document_id(Document(page_content="x", id="a")), document_id(Document(page_content="x"))[:8]
    ('a', 'doc-2d71')
    """
    if doc.id:
        return doc.id
    return "doc-" + hashlib.sha256(doc.page_content.encode("utf-8")).hexdigest()[:32]


class _SavedStoreIndex(LangChainVectorIndex):
    """A default ``InMemoryVectorStore`` written to ``file`` after every change.

    Changes land before the core commits its document table, so a crash never leaves an index whose
    documents are recorded but whose vectors are not.
    """

    store: InMemoryVectorStore

    def __init__(self, store: InMemoryVectorStore, file: Path | None) -> None:
        super().__init__(store)
        self.file = file

    def save(self, path: str | os.PathLike[str]) -> None:
        # the store's entries are plain JSON: compact, atomic, and still readable by InMemoryVectorStore.load
        atomic_write_text(path, json.dumps(self.store.store))

    def _changed(self, what: Sequence[Any]) -> None:
        if self.file is not None and what:
            self.save(self.file)

    def upsert(self, items: Sequence[VectorItem]) -> None:
        super().upsert(items)
        self._changed(items)

    async def aupsert(self, items: Sequence[VectorItem]) -> None:
        await super().aupsert(items)
        self._changed(items)

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        super().delete(ids)
        self._changed(ids)

    async def adelete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        await super().adelete(ids)
        self._changed(ids)


class PathRAGIndexer:
    """Builds and maintains a PathRAG index (knowledge graph + entity, relation and chunk vectors).

    * ``llm``: any chat model or text LLM, used for extraction and description summaries (calls tagged
      :data:`EXTRACTION_TAG`). Only needed to add documents.
    * ``embeddings``: feeds the default vector stores (``InMemoryVectorStore``); not needed when all of
      ``entity_store``, ``relation_store`` and ``chunk_store`` are given (one store or collection each).
    * ``graph_store``: any :class:`pathrag.GraphStore`; default the embedded networkx store.
    * ``text_splitter``: default ``RecursiveCharacterTextSplitter`` of :data:`DEFAULT_CHUNK_SIZE` tokens with
      :data:`DEFAULT_CHUNK_OVERLAP` overlap, measured with the core's token counter (works offline).
    * ``path``: a directory that holds the index; every change is saved there as it happens, and an
      existing index there is reopened (see :meth:`load`). Stores you pass in persist themselves.
    * ``config``: the core's :class:`pathrag.IndexConfig` (concurrency, retries, cache, gleaning...).

    Documents are indexed under :func:`document_id`; re-adding an unchanged one costs nothing, a
    changed one replaces its previous version. ``index`` is the underlying :class:`pathrag.PathRAGIndex`
    (``stats()``, ``documents``...).

    The default stores suit small corpora: they search by brute force and, with ``path``, are rewritten
    as JSON after each change. For large ones pass real vector stores (Chroma, PGVector...).
    """

    def __init__(
        self,
        llm: BaseLanguageModel | None = None,
        embeddings: Embeddings | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        entity_store: VectorStore | None = None,
        relation_store: VectorStore | None = None,
        chunk_store: VectorStore | None = None,
        graph_store: GraphStore | None = None,
        text_splitter: TextSplitter | None = None,
        config: IndexConfig | None = None,
    ) -> None:
        given = {"entities": entity_store, "relations": relation_store, "chunks": chunk_store}
        if embeddings is None and any(store is None for store in given.values()):
            raise ValueError("pass embeddings, or all three of entity_store, relation_store and chunk_store")
        config = config or IndexConfig()
        self.llm = llm
        self.embeddings = embeddings
        self.path = Path(path) if path is not None else None
        self.text_splitter = text_splitter or RecursiveCharacterTextSplitter(
            chunk_size=DEFAULT_CHUNK_SIZE, chunk_overlap=DEFAULT_CHUNK_OVERLAP,
            length_function=functools.partial(count_tokens, token_counter=config.token_counter))
        indexes = {name: LangChainVectorIndex(store) if store is not None else self._default_index(name)
                   for name, store in given.items()}
        self.index = PathRAGIndex(
            self.path, graph=graph_store, config=config,
            llm=LangChainLanguageModel(llm, config={"tags": [EXTRACTION_TAG], "run_name": "pathrag_extraction"})
            if llm is not None else None,
            entity_index=indexes["entities"], relation_index=indexes["relations"], chunk_index=indexes["chunks"])
        if self.path is not None and self.index.documents:
            missing = [STORE_FILES[name] for name, index in indexes.items()
                       if isinstance(index, _SavedStoreIndex) and not (self.path / STORE_FILES[name]).exists()]
            if missing:
                self.index.close()
                raise ValueError(f"{self.path} holds an index without {', '.join(missing)}: it was not written by "
                                 "PathRAGIndexer with default vector stores; pass the stores it was built with")

    def _default_index(self, name: str) -> _SavedStoreIndex:
        file = self.path / STORE_FILES[name] if self.path is not None else None
        assert self.embeddings is not None
        if file is None or not file.exists():
            return _SavedStoreIndex(InMemoryVectorStore(self.embeddings), file)
        try:
            return _SavedStoreIndex(InMemoryVectorStore.load(str(file), self.embeddings), file)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read vector store {file}: {exc}") from exc

    @classmethod
    def load(cls, path: str | os.PathLike[str], llm: BaseLanguageModel | None = None,
             embeddings: Embeddings | None = None, **kwargs: Any) -> PathRAGIndexer:
        """Reopen an index saved at ``path`` (``kwargs`` as for the constructor, e.g. the stores it used)."""
        if not (Path(path) / STATE_FILE).exists():
            raise FileNotFoundError(f"no PathRAG index at {path}")
        return cls(llm, embeddings, path=path, **kwargs)

    # -- the stores ----------------------------------------------------------------------------------

    @property
    def graph_store(self) -> GraphStore:
        return self.index.graph

    @property
    def entity_store(self) -> VectorStore:
        return self.index.entity_index.store  # type: ignore[attr-defined, no-any-return]

    @property
    def relation_store(self) -> VectorStore:
        return self.index.relation_index.store  # type: ignore[attr-defined, no-any-return]

    @property
    def chunk_store(self) -> VectorStore:
        """The chunks' vector store (page_content = chunk text, metadata ``chunk_id``)."""
        return self.index.chunk_index.store  # type: ignore[attr-defined, no-any-return]

    # -- documents -----------------------------------------------------------------------------------

    def _split(self, documents: Sequence[Document]) -> list[pathrag.Document]:
        if isinstance(documents, Document):
            documents = [documents]
        out = []
        for doc in documents:
            if not isinstance(doc, Document):
                raise TypeError(f"expected LangChain Documents, got {type(doc).__name__}")
            out.append(pathrag.Document(
                id=document_id(doc), chunks=tuple(self.text_splitter.split_text(doc.page_content)),
                # loaders may put dates and the like in metadata: the index keeps it as JSON
                metadata=json.loads(json.dumps(doc.metadata, default=str))))
        return out

    def add_documents(self, documents: Sequence[Document]) -> InsertSummary:
        """Index new or changed documents and return what it did and cost (``pathrag.InsertSummary``)."""
        return self.index.insert(self._split(documents))

    async def aadd_documents(self, documents: Sequence[Document]) -> InsertSummary:
        """Async twin of :meth:`add_documents`."""
        return await self.index.ainsert(self._split(documents))

    def delete(self, doc_ids: str | Iterable[str]) -> DeleteSummary:
        """Remove documents by id (see :func:`document_id`): what only they supported disappears."""
        return self.index.delete(doc_ids)

    async def adelete(self, doc_ids: str | Iterable[str]) -> DeleteSummary:
        """Async twin of :meth:`delete`."""
        return await self.index.adelete(doc_ids)

    # -- retrieval and persistence -------------------------------------------------------------------

    def as_retriever(self, **params: Any) -> PathRAGRetriever:
        """A :class:`PathRAGRetriever` over this index; ``params`` are its fields (``k``, ``num_seeds``...).

        Keywords are extracted with the indexer's ``llm`` unless you pass ``llm=None`` (or another model).
        """
        return PathRAGRetriever(graph_store=self.index.graph, entity_index=self.index.entity_index,
                                **{"llm": self.llm, **params})

    def save(self, path: str | os.PathLike[str] | None = None) -> None:
        """Write the whole index to ``path`` (default: the indexer's own), for :meth:`load` to reopen.

        Stores and graph stores passed in by you are not copied: they persist themselves.
        """
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("this indexer has no path: call save(path)")
        for name, index in self.index.vector_indexes.items():
            if isinstance(index, _SavedStoreIndex):
                index.save(target / STORE_FILES[name])
        self.index.save(target)

    def close(self) -> None:
        """Close the index's journal files."""
        self.index.close()

    def __repr__(self) -> str:
        return f"PathRAGIndexer(path={str(self.path) if self.path else None!r}, {self.index.stats()})"
