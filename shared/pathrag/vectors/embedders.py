"""How an index gets its embedder: the name a store records for it, the embedder a recorded name stands
for, and the stand-ins used until (or instead of) making it: :class:`LazyEmbedder` (made on first use, so
a store whose embeddings need credentials opens without them) and :class:`MissingEmbedder` (one the core
cannot make: every embed call raises :class:`~pathrag.errors.MissingEmbedderError`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import MissingEmbedderError
from .base import Embedder

__all__ = ["LazyEmbedder", "MissingEmbedder", "embedder_from_name", "embedder_name_of"]


def embedder_name_of(embedder: Embedder | None) -> str | None:
    """The name a store records for its embedder: ``hashing-<dim>`` for :class:`HashingEmbedder`,
    else the embedder's ``name`` attribute if it has one (``None``: not recorded, not checked)."""
    from .hashing import HashingEmbedder

    if isinstance(embedder, HashingEmbedder):
        return f"hashing-{embedder.dimensions}"
    name = getattr(embedder, "name", None)
    return name if isinstance(name, str) and name else None


def embedder_from_name(name: str | None) -> Embedder | None:
    """The embedder a recorded name stands for, when the core can make it (``hashing-<dim>``), else ``None``.

    >>> embedder_from_name("hashing-64").dimensions, embedder_from_name("openai:text-embedding-3-small")
    (64, None)
    """
    from .hashing import HashingEmbedder

    dimensions = (name or "").removeprefix("hashing-")
    if name and name.startswith("hashing-") and dimensions.isdigit() and int(dimensions) >= 8:
        return HashingEmbedder(int(dimensions))
    return None


class LazyEmbedder(Embedder):
    """The embedder ``make()`` returns, made on first use (``name``: what the store records for it).

    A store whose embeddings need credentials then opens without them: only a query or a write that embeds
    makes the embedder, and ``make``'s error (a missing key, say) is raised there, before a write changes
    anything (see :meth:`PathRAGIndex.insert`).

    >>> from pathrag import HashingEmbedder
    >>> lazy = LazyEmbedder(lambda: HashingEmbedder(8), "hashing-8")
    >>> len(lazy.embed(["a harbour"])[0]), embedder_name_of(lazy)
    (8, 'hashing-8')
    """

    def __init__(self, make: Callable[[], Embedder], name: str | None = None) -> None:
        self.name = name
        self._make = make
        self._made: Embedder | None = None
        self._making = threading.Lock()

    def ready(self) -> Embedder:
        """The embedder, made now if it was not yet (raises what ``make()`` raises)."""
        with self._making:
            if self._made is None:
                self._made = self._make()
            return self._made

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The made embedder's vectors."""
        return self.ready().embed(texts)

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed`."""
        return await self.ready().aembed(texts)


class MissingEmbedder(LazyEmbedder):
    """Stands in for the embedder a store records but the core cannot make (an endpoint's, say): reads that
    embed nothing work (stats, check, documents, a delete that re-embeds nothing); every embed call raises
    :class:`MissingEmbedderError` naming the recorded embedder.

    >>> try:
    ...     MissingEmbedder("openai:text-embedding-3-small", "kb").embed(["x"])
    ... except MissingEmbedderError as exc:
    ...     print(str(exc).split(": ")[0])
    the store kb was built with the embeddings 'openai:text-embedding-3-small', which pathrag cannot make
    """

    def __init__(self, name: str | None, directory: str | os.PathLike[str], *, parameter: str = "embedder") -> None:
        super().__init__(self._fail, name)
        self.directory = Path(directory)
        self.parameter = parameter
        """The name the error asks for: the opening API's own parameter (``embeddings`` for LangChain's
        ``PathRAGIndexer.load``, ``embed_model`` for LlamaIndex's ``from_store``)."""

    def _fail(self) -> Embedder:
        if self.name is None:
            said = f"the store {self.directory} does not record which embeddings built it"
        else:
            said = f"the store {self.directory} was built with the embeddings {self.name!r}, which pathrag cannot make"
        raise MissingEmbedderError(
            f"{said}: to embed (query or add), open it with {self.parameter}= the same embeddings",
            directory=self.directory,
            recorded=self.name,
        )


def ask_for_embedder_as(embedder: Embedder | None, parameter: str) -> None:
    """Make the error of a store opened without its embeddings ask for ``parameter``, the opening API's own
    name for them (an adapter's ``embeddings`` or ``embed_model``; the core's is ``embedder``); any other
    embedder is left alone.

    >>> missing = MissingEmbedder("hashing-8", "kb")
    >>> ask_for_embedder_as(missing, "embeddings")
    >>> missing.parameter
    'embeddings'
    """
    if isinstance(embedder, MissingEmbedder):
        embedder.parameter = parameter
