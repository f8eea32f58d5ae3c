"""``PathRAGIndexer``: build and maintain a PathRAG index from LangChain ``Document``s.

A thin layer over :class:`pathrag.PathRAGIndex`, which extracts, merges, caches and deletes: this
module splits LangChain documents into chunks and adapts the chat model, embeddings, vector stores and
graph store. With a ``path``, the index is the core's store (``pathrag.sqlite``, vectors included), so
the ``pathrag`` command line and ``PathRAGIndex`` open it too.

>>> from langchain_core.documents import Document
>>> from langchain_core.language_models import FakeListChatModel
>>> from pathrag import HashingEmbedder
>>> from langchain_pathrag import PathRAGEmbeddings
>>> llm = FakeListChatModel(responses=[  # the compact prompt's answer: one record per line
...     "E|Mara|person|A harbour pilot.\\nR|Mara|Saltmere|home|Mara lives in Saltmere.\\nEND"])
>>> indexer = PathRAGIndexer(llm, PathRAGEmbeddings(HashingEmbedder()))
>>> summary = indexer.add_documents([Document(page_content="Mara, a pilot, lives in Saltmere.", id="mara")])
>>> summary.documents, summary.entities, summary.relations
(1, 2, 1)
>>> [(doc.metadata["kind"], doc.metadata["nodes"]) for doc in indexer.as_retriever(llm=None).invoke("Mara")]
[('path', ['MARA', 'SALTMERE']), ('passage', [])]
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.indexing import DeleteResponse, DocumentIndex, UpsertResponse
from langchain_core.indexing.api import IndexingException
from langchain_core.language_models import BaseLanguageModel
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter, TextSplitter
from pydantic import ConfigDict, Field

import pathrag
from pathrag import GraphStore, IndexConfig, InsertSummary, PathRAGIndex, VectorItem
from pathrag.errors import MissingEmbedderError
from pathrag.index.extractors import Extractor
from pathrag.index.front import STATE_FILE
from pathrag.index.values import DeleteSummary
from pathrag.llm.tokens import count_tokens
from pathrag.sqlite import SQLiteVectorIndex, read_store_info, store_exists
from pathrag.sqlite.legacy import legacy_files
from pathrag.vectors.embedders import LazyEmbedder, ask_for_embedder_as, embedder_name_of

from .adapters import LangChainEmbedder, LangChainLanguageModel, LangChainVectorIndex, PathRAGEmbeddings
from .retrievers import PathRAGRetriever

__all__ = [
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_CHUNK_SIZE",
    "EXTRACTION_TAG",
    "PathRAGDocumentIndex",
    "PathRAGIndexer",
    "document_id",
    "embeddings_name",
    "recorded_embedder",
]

logger = logging.getLogger(__name__)

DEFAULT_CHUNK_SIZE = 1200  # tokens, as in the paper's setup
DEFAULT_CHUNK_OVERLAP = 100
#: Tag of the extraction and summary calls of the indexer's model.
EXTRACTION_TAG = "pathrag:extraction"
#: Files in which earlier versions kept the default vector stores under the index directory (moved into
#: ``pathrag.sqlite`` when such a directory is opened; the files go to :data:`LEGACY_BACKUP`).
STORE_FILES = {
    "entities": "entities.vectorstore.json",
    "relations": "relations.vectorstore.json",
    "chunks": "chunks.vectorstore.json",
}
LEGACY_BACKUP = "vectorstore-backup"


def embeddings_name(embeddings: Embeddings) -> str:
    """The name a store records for LangChain ``embeddings`` (it then refuses others).

    The command line's names where they exist (``hashing-<dim>`` for a wrapped :class:`pathrag.HashingEmbedder`,
    ``openai:<model>`` for ``OpenAIEmbeddings``), so that it opens the store; else the class and model.

    >>> from pathrag import HashingEmbedder
    >>> embeddings_name(PathRAGEmbeddings(HashingEmbedder(256)))
    'hashing-256'
    """
    if isinstance(embeddings, PathRAGEmbeddings) and (name := embedder_name_of(embeddings.embedder)):
        return name
    model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
    model = model if isinstance(model, str) and model.strip() else None
    if type(embeddings).__name__ == "OpenAIEmbeddings" and model:
        return f"openai:{model}"
    return f"langchain:{type(embeddings).__name__}" + (f":{model}" if model else "")


def _core_embedder(embeddings: Embeddings) -> pathrag.Embedder:
    # a wrapped core embedder is used as it is: the same vectors, without the round trip
    return embeddings.embedder if isinstance(embeddings, PathRAGEmbeddings) else LangChainEmbedder(embeddings)


def recorded_embedder(path: str | os.PathLike[str]) -> pathrag.Embedder | None:
    """The embedder of the store at ``path`` opened without embeddings, for a ``provider:model`` it records
    (``openai:text-embedding-3-small``...): LangChain's ``init_embeddings``, made on first use, so that the
    store opens without the provider's key and only embedding (a query, an add) needs it. ``None``: left to
    the core (``hashing-<dim>``, or a placeholder that refuses to embed; see ``pathrag.PathRAGIndex``).

    >>> recorded_embedder("no-store-here") is None
    True
    """
    info = read_store_info(path) if store_exists(path) else None
    spec = (info or {}).get("embedder") or ""
    provider, _, model = spec.partition(":")
    if not provider or not model or spec.startswith(("hashing-", "langchain:")):
        return None

    def make() -> pathrag.Embedder:
        try:
            from langchain.embeddings import init_embeddings

            # OpenAI: raw text, as the command line sends it (the same vectors)
            options: dict[str, Any] = {"check_embedding_ctx_length": False} if provider == "openai" else {}
            return LangChainEmbedder(init_embeddings(model, provider=provider, **options))
        except Exception as exc:  # a missing key or package, an unknown provider: say so where it matters
            reason = " ".join(str(exc).split())[:300]
            raise MissingEmbedderError(
                f"the store {path} was built with the embeddings {spec!r}, which cannot be made here ({reason}): "
                "set up the provider, or pass embeddings= the same embeddings",
                directory=path,
                recorded=spec,
            ) from exc

    return LazyEmbedder(make, spec)


def document_id(doc: Document) -> str:
    """The id a document is indexed under: ``doc.id`` when set, else a hash of its ``page_content``.

    >>> document_id(Document(page_content="x", id="a")), document_id(Document(page_content="x"))[:8]
    ('a', 'doc-2d71')
    """
    if doc.id:
        return doc.id
    return "doc-" + hashlib.sha256(doc.page_content.encode("utf-8")).hexdigest()[:32]


class _SavedStoreIndex(LangChainVectorIndex):
    """A default ``InMemoryVectorStore`` of an indexer without a path: :meth:`PathRAGIndexer.save` copies
    its vectors into the saved store."""

    store: InMemoryVectorStore


def _check_embeddings_given(
    embeddings: Embeddings | None, given: Mapping[str, VectorStore | None], path: str | os.PathLike[str] | None
) -> None:
    """Refuse an indexer that could embed nothing: no ``embeddings``, a vector store missing, and no store at
    ``path`` (an existing store opens without embeddings: with the ones it records, see recorded_embedder)."""
    stored = path is not None and (store_exists(path) or bool(legacy_files(path)))
    if embeddings is None and any(store is None for store in given.values()) and not stored:
        raise ValueError("pass embeddings, or all three of entity_store, relation_store and chunk_store")


def _default_splitter(config: IndexConfig) -> TextSplitter:
    """The default splitter: :data:`DEFAULT_CHUNK_SIZE` tokens with :data:`DEFAULT_CHUNK_OVERLAP` overlap,
    measured with the core's token counter (works offline)."""
    return RecursiveCharacterTextSplitter(
        chunk_size=DEFAULT_CHUNK_SIZE,
        chunk_overlap=DEFAULT_CHUNK_OVERLAP,
        length_function=functools.partial(count_tokens, token_counter=config.token_counter),
    )


def _extraction_model(llm: BaseLanguageModel[Any] | None, max_tokens: int | None) -> LangChainLanguageModel | None:
    """``llm`` for the core's extraction and summaries, its calls tagged :data:`EXTRACTION_TAG` and their
    answers capped at ``max_tokens``."""
    if llm is None:
        return None
    tagged = {"tags": [EXTRACTION_TAG], "run_name": "pathrag_extraction"}
    return LangChainLanguageModel(llm, config=tagged, max_tokens=max_tokens)  # type: ignore[arg-type]


def _index_embedder(embeddings: Embeddings | None, path: Path | None) -> pathrag.Embedder | None:
    """The core embedder of the index's own vector indexes: ``embeddings``, else the one the store at
    ``path`` records (see :func:`recorded_embedder`)."""
    if embeddings is not None:
        return _core_embedder(embeddings)
    return recorded_embedder(path) if path is not None else None


class PathRAGIndexer:
    """Builds and maintains a PathRAG index (knowledge graph + entity, relation and chunk vectors).

    * ``llm``: any chat model or text LLM, used for extraction and description summaries (calls tagged
      :data:`EXTRACTION_TAG`). Only needed to add documents.
    * ``embeddings``: feeds the default vector stores (``InMemoryVectorStore``); not needed when all of
      ``entity_store``, ``relation_store`` and ``chunk_store`` are given (one store or collection each), nor
      to reopen an existing store at ``path`` (see :meth:`load`).
    * ``graph_store``: any :class:`pathrag.GraphStore`; default the embedded networkx store.
    * ``text_splitter``: default ``RecursiveCharacterTextSplitter`` of :data:`DEFAULT_CHUNK_SIZE` tokens with
      :data:`DEFAULT_CHUNK_OVERLAP` overlap, measured with the core's token counter (works offline).
    * ``path``: a directory that holds the index, the core's store (``pathrag.sqlite``): every change is
      saved there as it happens, and an existing index there, whoever made it, is reopened (see
      :meth:`load`). The default vector indexes are then the store's own. Stores you pass in persist
      themselves. A directory of earlier versions (vectors in ``*.vectorstore.json``) is migrated on open.
    * ``config``: the core's :class:`pathrag.IndexConfig` (concurrency, retries, cache, gleaning...).
    * ``extractor``: ``"compact"`` (``llm`` extracts with a short prompt; ``config=IndexConfig(extraction=
      ExtractionConfig(pack_tokens=1200))`` packs small chunks into one call),
      ``"llm"`` (the paper's prompt and a gleaning round: about five times the tokens), or ``"lexical"``: no
      model at all (see :mod:`pathrag.index.extractors`); ``PathRAGIndexer(None, embeddings,
      extractor="lexical")`` indexes offline.

    Documents are indexed under :func:`document_id`; re-adding an unchanged one costs nothing, a
    changed one replaces its previous version. ``index`` is the underlying :class:`pathrag.PathRAGIndex`
    (``stats()``, ``documents``...).

    The default vector indexes search by brute force (``InMemoryVectorStore`` without a path, the store's
    exact numpy search with one). For large corpora pass real vector stores (Chroma, PGVector...).
    """

    def __init__(
        self,
        llm: BaseLanguageModel[Any] | None = None,
        embeddings: Embeddings | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        entity_store: VectorStore | None = None,
        relation_store: VectorStore | None = None,
        chunk_store: VectorStore | None = None,
        graph_store: GraphStore | None = None,
        text_splitter: TextSplitter | None = None,
        config: IndexConfig | None = None,
        extractor: str | Extractor = "compact",
    ) -> None:
        given = {"entities": entity_store, "relations": relation_store, "chunks": chunk_store}
        _check_embeddings_given(embeddings, given, path)
        config = config or IndexConfig()
        self.llm = llm
        self.embeddings = embeddings
        self.path = Path(path) if path is not None else None
        self.text_splitter = text_splitter or _default_splitter(config)
        # with a path, the store's own vector indexes (None here); without, InMemoryVectorStores
        indexes = {
            name: LangChainVectorIndex(store) if store is not None else self._default_index()
            for name, store in given.items()
        }
        # an earlier version's vector files are moved into the store after it opens: checked after that
        moving = self.path is not None and any((self.path / file).exists() for file in STORE_FILES.values())
        self.index = PathRAGIndex(
            self.path,
            check_on_open=not moving,
            graph=graph_store,
            config=config,
            llm=_extraction_model(llm, config.extraction.max_answer_tokens),
            embedder=_index_embedder(embeddings, self.path),
            embedder_name=embeddings_name(embeddings) if embeddings is not None else None,
            entity_index=indexes["entities"],
            relation_index=indexes["relations"],
            chunk_index=indexes["chunks"],
            extractor=extractor,
        )
        ask_for_embedder_as(self.index.embedder, "embeddings")  # the error of a store opened without them says so
        if self.path is not None:
            self._finish_opening(self.path, moving)

    def _finish_opening(self, directory: Path, moving: bool) -> None:
        """Move an earlier version's vector files into the store, then check it (``moving``: there are some);
        the index is closed if either fails."""
        try:
            self._migrate_vector_files(directory)
            if moving:
                self.index.quick_check()
        except BaseException:
            self.index.close()
            raise

    def _default_index(self) -> _SavedStoreIndex | None:
        if self.path is not None:
            return None
        assert self.embeddings is not None
        return _SavedStoreIndex(InMemoryVectorStore(self.embeddings))

    def _migrate_vector_files(self, directory: Path) -> None:
        """Move the vectors of an earlier version's ``*.vectorstore.json`` files into the store, unchanged."""
        found = {
            name: directory / file
            for name, file in STORE_FILES.items()
            if (directory / file).exists() and isinstance(self.index.vector_indexes[name], SQLiteVectorIndex)
        }
        if not found:
            return
        entries = {}
        for name, file in found.items():
            try:  # InMemoryVectorStore's entries: {id: {"id", "vector", "text", "metadata"}}
                entries[name] = list(json.loads(file.read_text(encoding="utf-8")).values())
            except (OSError, ValueError, AttributeError) as exc:
                raise ValueError(f"cannot read vector store {file}: {exc}") from exc
        _store_vectors(self.index, entries)
        backup = directory / LEGACY_BACKUP
        backup.mkdir(exist_ok=True)
        for file in found.values():
            shutil.move(str(file), backup / file.name)
        logger.warning(
            "pathrag: moved the vectors of %s into %s; the old files are kept in %s",
            ", ".join(f.name for f in found.values()),
            STATE_FILE,
            backup,
        )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        llm: BaseLanguageModel[Any] | None = None,
        embeddings: Embeddings | None = None,
        **kwargs: Any,
    ) -> PathRAGIndexer:
        """Reopen an index saved at ``path`` (``kwargs`` as for the constructor, e.g. the stores it used).

        Without ``embeddings``, the store's own vector indexes use the embeddings it records (see
        :func:`recorded_embedder`): a store made by ``pathrag index`` opens as it is, and one whose
        embeddings cannot be made here still answers what needs no embedding (``index.stats()``, documents,
        deletes), raising ``pathrag.errors.MissingEmbedderError`` when something must be embedded.
        """
        if not (Path(path) / STATE_FILE).exists():
            raise FileNotFoundError(f"no PathRAG index at {path}")
        return cls(llm, embeddings, path=path, **kwargs)

    # -- the stores ----------------------------------------------------------------------------------

    @property
    def graph_store(self) -> GraphStore:
        """The knowledge graph: the one given, else the store's own with a path, a networkx graph without."""
        return self.index.graph

    def _vector_store(self, name: str) -> VectorStore:
        index = self.index.vector_indexes[name]
        if not isinstance(index, LangChainVectorIndex):
            raise AttributeError(
                f"the {name} vectors of an indexer with a path live in its store ({STATE_FILE}), "
                f"not in a LangChain VectorStore: use indexer.index.vector_indexes[{name!r}]"
            )
        return index.store

    @property
    def entity_store(self) -> VectorStore:
        """The entities' vector store (the one given, or the default ``InMemoryVectorStore`` without a path)."""
        return self._vector_store("entities")

    @property
    def relation_store(self) -> VectorStore:
        """The relations' vector store (the one given, or the default ``InMemoryVectorStore`` without a path)."""
        return self._vector_store("relations")

    @property
    def chunk_store(self) -> VectorStore:
        """The chunks' vector store (page_content = chunk text, metadata ``chunk_id``)."""
        return self._vector_store("chunks")

    # -- documents -----------------------------------------------------------------------------------

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        llm: BaseLanguageModel[Any] | None = None,
        embeddings: Embeddings | None = None,
        *,
        ids: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> PathRAGIndexer:
        """A new indexer (``kwargs`` as for the constructor) holding ``documents``, as ``VectorStore.from_documents``.

        ``ids`` override the documents' ids (see :func:`document_id`).
        """
        indexer = cls(llm, embeddings, **kwargs)
        indexer.add_documents(documents, ids=ids)
        return indexer

    @classmethod
    async def afrom_documents(
        cls,
        documents: Sequence[Document],
        llm: BaseLanguageModel[Any] | None = None,
        embeddings: Embeddings | None = None,
        *,
        ids: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> PathRAGIndexer:
        """Async twin of :meth:`from_documents`."""
        indexer = cls(llm, embeddings, **kwargs)
        await indexer.aadd_documents(documents, ids=ids)
        return indexer

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        llm: BaseLanguageModel[Any] | None = None,
        embeddings: Embeddings | None = None,
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        *,
        ids: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> PathRAGIndexer:
        """A new indexer holding ``texts`` (see :meth:`add_texts`), as ``VectorStore.from_texts``."""
        return cls.from_documents(_text_documents(texts, metadatas, ids), llm, embeddings, **kwargs)

    @classmethod
    async def afrom_texts(
        cls,
        texts: Iterable[str],
        llm: BaseLanguageModel[Any] | None = None,
        embeddings: Embeddings | None = None,
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        *,
        ids: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> PathRAGIndexer:
        """Async twin of :meth:`from_texts`."""
        return await cls.afrom_documents(_text_documents(texts, metadatas, ids), llm, embeddings, **kwargs)

    def _split(self, documents: Sequence[Document], ids: Sequence[str] | None = None) -> list[pathrag.Document]:
        if isinstance(documents, Document):
            documents = [documents]
        documents = list(documents)
        for doc in documents:
            if not isinstance(doc, Document):
                raise TypeError(f"expected LangChain Documents, got {type(doc).__name__}")
        if ids is not None:
            documents = [doc.model_copy(update={"id": doc_id}) for doc, doc_id in _with_ids(documents, ids)]
        out = []
        for doc in documents:
            out.append(
                pathrag.Document(
                    id=document_id(doc),
                    chunks=tuple(self.text_splitter.split_text(doc.page_content)),
                    # loaders may put dates and the like in metadata: the index keeps it as JSON
                    metadata=json.loads(json.dumps(doc.metadata, default=str)),
                )
            )
        return out

    def add_documents(self, documents: Sequence[Document], *, ids: Sequence[str] | None = None) -> InsertSummary:
        """Index new or changed documents and return what it did and cost (``pathrag.InsertSummary``).

        ``ids``, one per document, override their ids (see :func:`document_id`).
        """
        return self.index.insert(self._split(documents, ids))

    async def aadd_documents(self, documents: Sequence[Document], *, ids: Sequence[str] | None = None) -> InsertSummary:
        """Async twin of :meth:`add_documents`."""
        return await self.index.ainsert(self._split(documents, ids))

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Index texts as documents, as ``VectorStore.add_texts``: return their ids, in order.

        Without ``ids`` a text's id is a hash of it, so adding the same text again changes nothing.
        Use :meth:`add_documents` for the cost report.

        Raises:
            TypeError: ``texts`` is one string, or holds something else than strings.
            ValueError: ``metadatas`` or ``ids`` do not have one entry per text.
        """
        docs = _text_documents(texts, metadatas, ids)
        self.add_documents(docs)
        return [document_id(doc) for doc in docs]

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Async twin of :meth:`add_texts`."""
        docs = _text_documents(texts, metadatas, ids)
        await self.aadd_documents(docs)
        return [document_id(doc) for doc in docs]

    def delete(self, doc_ids: str | Iterable[str]) -> DeleteSummary:
        """Remove documents by id (see :func:`document_id`): what only they supported disappears."""
        return self.index.delete(doc_ids)

    async def adelete(self, doc_ids: str | Iterable[str]) -> DeleteSummary:
        """Async twin of :meth:`delete`."""
        return await self.index.adelete(doc_ids)

    def get_by_ids(self, ids: Sequence[str]) -> list[Document]:
        """The indexed documents and chunks among ``ids`` (unknown ids are left out), as
        ``VectorStore.get_by_ids``: the ids a retrieval hands out (``metadata["document_ids"]``,
        ``metadata["source_ids"]``, a passage's ``id``) all work.

        A document: ``page_content`` is its chunks as indexed, joined by blank lines (the splitter's
        overlap, if any, repeats); ``metadata`` is as given (kept as JSON). A chunk: ``page_content`` is its
        text, ``metadata`` its first document's with ``chunk_id`` and ``document_ids`` (every document that
        holds it).
        """
        if isinstance(ids, str):
            ids = [ids]
        out = []
        chunk_ids = []
        for doc_id in dict.fromkeys(ids):
            record = self.index.documents.get(doc_id)
            if record is not None:
                texts = [self.index.chunks[cid].text for cid in record.chunks if cid in self.index.chunks]
                out.append(Document(id=doc_id, page_content="\n\n".join(texts), metadata=dict(record.metadata)))
            else:
                chunk_ids.append(doc_id)
        return out + (self.index.read_committed(lambda *_: self._chunk_documents(chunk_ids)) if chunk_ids else [])

    def _chunk_documents(self, chunk_ids: list[str]) -> list[Document]:
        """The live chunks among ``chunk_ids`` as documents (see :meth:`get_by_ids`), read in one committed state."""
        documents = self.index.committed_documents()
        texts = self.index.chunk_texts(chunk_ids)
        claims = documents.claims(texts)
        metadata = documents.metadata({doc_ids[0] for doc_ids in claims.values() if doc_ids})
        out = []
        for cid, text in texts.items():
            holders = claims.get(cid, [])
            first = metadata.get(holders[0], {}) if holders else {}
            out.append(
                Document(id=cid, page_content=text, metadata={**first, "chunk_id": cid, "document_ids": holders})
            )
        return out

    # -- retrieval and persistence -------------------------------------------------------------------

    def as_retriever(self, search_kwargs: Mapping[str, Any] | None = None, **params: Any) -> PathRAGRetriever:
        """A :class:`PathRAGRetriever` over this index; ``params`` are its fields (``k``, ``num_seeds``...).

        ``search_kwargs`` holds retrieval parameters the LangChain way (``{"k": 3}`` is ``k=3``), as for
        ``VectorStore.as_retriever``. A retrieval makes no model call by default: the indexer's ``llm``
        (or the one you pass as ``llm=``) extracts the query's keywords only with ``context="paths"`` (the
        paper's mode) or ``keyword_llm=True``.

        Raises:
            ValueError: an unknown parameter, or one given twice with different values.
        """
        return PathRAGRetriever(index=self.index, **{"llm": self.llm, **_retriever_params(search_kwargs, params)})

    def as_document_index(self, search_kwargs: Mapping[str, Any] | None = None, **params: Any) -> PathRAGDocumentIndex:
        """This index as a LangChain ``DocumentIndex``: the destination for ``langchain_core.indexing.index``.

        ``search_kwargs`` and ``params`` configure its retrieval, as for :meth:`as_retriever`.

        >>> from langchain_core.indexing import InMemoryRecordManager, index
        >>> from langchain_pathrag import PathRAGEmbeddings
        >>> from pathrag import HashingEmbedder
        >>> records = InMemoryRecordManager("pathrag/demo")
        >>> records.create_schema()
        >>> destination = PathRAGIndexer(embeddings=PathRAGEmbeddings(HashingEmbedder())).as_document_index()
        >>> index([], records, destination, cleanup="full", key_encoder="sha256")
        {'num_added': 0, 'num_updated': 0, 'num_skipped': 0, 'num_deleted': 0}
        """
        return PathRAGDocumentIndex(indexer=self, retriever=self.as_retriever(search_kwargs, **params))

    def save(self, path: str | os.PathLike[str] | None = None) -> None:
        """Write the whole index to ``path`` (default: the indexer's own), for :meth:`load` to reopen.

        Stores and graph stores passed in by you are not copied: they persist themselves.
        """
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("this indexer has no path: call save(path)")
        self.index.save(target)
        saved = {
            name: list(index.store.store.values())
            for name, index in self.index.vector_indexes.items()
            if isinstance(index, _SavedStoreIndex)
        }
        if saved and self.embeddings is not None:  # the default stores' vectors go into the copy's store
            copy = PathRAGIndex(  # not checked: its vectors are what this fills in
                target,
                embedder=_core_embedder(self.embeddings),
                embedder_name=embeddings_name(self.embeddings),
                check_on_open=False,
            )
            try:
                _store_vectors(copy, saved)
            finally:
                copy.close()

    def close(self) -> None:
        """Close the index's journal files."""
        self.index.close()

    def __repr__(self) -> str:
        return f"PathRAGIndexer(path={str(self.path) if self.path else None!r}, {self.index.stats()})"


def _store_vectors(index: PathRAGIndex, entries: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    """Write ``InMemoryVectorStore`` entries into the index's own vector indexes, vectors as they are."""
    for name, rows in entries.items():
        target = index.vector_indexes[name]
        items = [VectorItem(str(r["id"]), str(r.get("text", "")), dict(r.get("metadata") or {})) for r in rows]
        if items:
            target.upsert_vectors(items, [r["vector"] for r in rows])  # type: ignore[attr-defined]


def _with_ids(items: Sequence[Any], ids: Sequence[str] | None) -> list[tuple[Any, str | None]]:
    if ids is None:
        return [(item, None) for item in items]
    if isinstance(ids, str):
        raise TypeError("ids must be a sequence of strings, not one string")
    ids = list(ids)
    if len(ids) != len(items):
        raise ValueError(f"got {len(ids)} ids for {len(items)} documents: pass one id per document")
    bad = [i for i in ids if not isinstance(i, str) or not i.strip()]
    if bad:
        raise ValueError(f"ids must be non-empty strings, got {bad[0]!r}")
    return list(zip(items, ids, strict=True))


def _text_documents(
    texts: Iterable[str], metadatas: Sequence[Mapping[str, Any]] | None, ids: Sequence[str] | None
) -> list[Document]:
    """LangChain ``Document``s for ``add_texts``-style arguments, with clear errors for the usual slips."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, not one string (wrap it: [text])")
    texts = list(texts)
    bad = [t for t in texts if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts must be strings, got {type(bad[0]).__name__}")
    if metadatas is not None:
        metadatas = list(metadatas)
        if len(metadatas) != len(texts):
            raise ValueError(f"got {len(metadatas)} metadatas for {len(texts)} texts: pass one per text")
        if not all(isinstance(m, Mapping) for m in metadatas):
            raise TypeError("metadatas must be dicts, one per text")
    return [
        Document(page_content=text, metadata=dict(metadatas[i]) if metadatas is not None else {}, id=doc_id)
        for i, (text, doc_id) in enumerate(_with_ids(texts, ids))
    ]


# Parameters as_retriever fills in itself: a caller passing them is a mistake, not an override.
_FIXED_RETRIEVER_FIELDS = frozenset({"graph_store", "entity_index", "passage_index", "relation_index", "index"})


def _retriever_params(search_kwargs: Mapping[str, Any] | None, params: Mapping[str, Any]) -> dict[str, Any]:
    """``search_kwargs`` and ``params`` as one set of the retriever's arguments (``k``: documents returned,
    settings by name, folded into its ``params`` by the retriever itself)."""
    if search_kwargs is not None and not isinstance(search_kwargs, Mapping):
        raise TypeError(f"search_kwargs must be a dict, got {type(search_kwargs).__name__}")
    return PathRAGRetriever.merge_arguments(search_kwargs or {}, params, fixed=_FIXED_RETRIEVER_FIELDS)


class PathRAGDocumentIndex(DocumentIndex):
    """A :class:`PathRAGIndexer` as a LangChain ``DocumentIndex``, made by :meth:`PathRAGIndexer.as_document_index`.

    It is the destination LangChain's Indexing API (``langchain_core.indexing.index`` / ``aindex``)
    needs to keep the index in sync with changing sources through a ``RecordManager``:

    * ``upsert(documents)`` indexes them under their ids (``index()`` sets each id to a hash of the
      content and metadata); chunks already extracted cost nothing. If a chunk's extraction still fails
      after the retries, it raises ``IndexingException`` after saving the rest, so that the record manager
      does not mark the batch as done and the next run retries just those chunks.
    * ``delete(ids)`` removes documents: what only they supported disappears and what they shared is
      rebuilt, without LLM calls (``cleanup="incremental"`` / ``"full"``).
    * ``get(ids)`` returns the indexed documents (see :meth:`PathRAGIndexer.get_by_ids`).
    * As a retriever it returns the key paths (its ``retriever``'s documents).
    """

    model_config = ConfigDict(extra="forbid")

    indexer: PathRAGIndexer = Field(exclude=True)
    retriever: PathRAGRetriever = Field(exclude=True)

    @staticmethod
    def _no_options(kwargs: Mapping[str, Any], method: str) -> None:
        if kwargs:
            raise TypeError(f"PathRAGDocumentIndex.{method} takes no options, got {', '.join(sorted(kwargs))}")

    @staticmethod
    def _upserted(items: Sequence[Document], summary: InsertSummary) -> UpsertResponse:
        ids = [document_id(doc) for doc in items]
        if summary.failures:
            failed = sorted({doc_id for failure in summary.failures for doc_id in failure.document_ids})
            first = summary.failures[0]
            raise IndexingException(
                f"{len(summary.failures)} chunk(s) of documents {', '.join(failed)} failed extraction "
                f"(first: {first.error}); everything else is saved: run the indexing again to retry them"
            )
        return {"succeeded": list(dict.fromkeys(ids)), "failed": []}

    def upsert(self, items: Sequence[Document], /, **kwargs: Any) -> UpsertResponse:
        """Index new or changed documents under their ids (see :func:`document_id`)."""
        self._no_options(kwargs, "upsert")
        return self._upserted(items, self.indexer.add_documents(items))

    async def aupsert(self, items: Sequence[Document], /, **kwargs: Any) -> UpsertResponse:
        """Async twin of :meth:`upsert`."""
        self._no_options(kwargs, "aupsert")
        return self._upserted(items, await self.indexer.aadd_documents(items))

    @staticmethod
    def _deleted(ids: list[str], summary: DeleteSummary) -> DeleteResponse:
        missing = set(summary.missing)
        done = [i for i in dict.fromkeys(ids) if i not in missing]
        return {"num_deleted": summary.documents, "succeeded": done, "failed": [], "num_failed": 0}

    @staticmethod
    def _ids(ids: Sequence[str] | None) -> list[str]:
        if ids is None:
            raise ValueError("delete needs the ids of the documents to delete")
        return [ids] if isinstance(ids, str) else list(ids)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> DeleteResponse:
        """Remove documents by id; unknown ids are not failures."""
        self._no_options(kwargs, "delete")
        ids = self._ids(ids)
        return self._deleted(ids, self.indexer.delete(ids))

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> DeleteResponse:
        """Async twin of :meth:`delete`."""
        self._no_options(kwargs, "adelete")
        ids = self._ids(ids)
        return self._deleted(ids, await self.indexer.adelete(ids))

    def get(self, ids: Sequence[str], /, **kwargs: Any) -> list[Document]:
        """The indexed documents among ``ids``."""
        self._no_options(kwargs, "get")
        return self.indexer.get_by_ids(ids)

    async def aget(self, ids: Sequence[str], /, **kwargs: Any) -> list[Document]:
        """Async twin of :meth:`get` (it reads memory only)."""
        return self.get(ids, **kwargs)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        return self.retriever.invoke(
            query, {"callbacks": run_manager.get_child()}, **({"k": k} if k is not None else {}), **kwargs
        )

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        return await self.retriever.ainvoke(
            query, {"callbacks": run_manager.get_child()}, **({"k": k} if k is not None else {}), **kwargs
        )
