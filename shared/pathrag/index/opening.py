"""How an index is opened: where it is kept, with which embedder, over which graph and vector indexes.

:func:`open_parts` resolves what :class:`~pathrag.PathRAGIndex` is given: the SQLite store of a directory
(migrated from the older JSON format first) or memory without one, unless a backend is passed; the embedder,
given or, for an existing store opened without one, the one the store records; and the graph and vector
indexes, given or the backend's own.

>>> from pathrag import HashingEmbedder
>>> from pathrag.index.values import IndexConfig
>>> parts = open_parts(None, embedder=HashingEmbedder(8), given={}, config=IndexConfig())
>>> type(parts.backend).__name__, sorted(parts.vector_indexes), parts.owns_graph
('MemoryBackend', ['chunks', 'entities', 'relations'], True)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..graphs.base import GraphStore
from ..sqlite import store_exists
from ..sqlite.legacy import legacy_files
from ..vectors.base import Embedder, VectorIndex
from ..vectors.embedders import MissingEmbedder, embedder_from_name, embedder_name_of
from .backend import IndexBackend, MemoryBackend, SQLiteBackend
from .values import IndexConfig

__all__ = ["OpenedParts", "open_parts"]

_SPACES = ("entities", "relations", "chunks")
_NO_EMBEDDER = "pass an embedder, or all three of entity_index, relation_index and chunk_index"


@dataclass
class OpenedParts:
    """What an index works with once open."""

    backend: IndexBackend
    embedder: Embedder | None
    """The embedder of the index's own vector indexes (``None``: all three were given)."""
    vector_indexes: dict[str, VectorIndex]
    graph: GraphStore
    owns_graph: bool


def open_parts(
    directory: str | os.PathLike[str] | None,
    *,
    embedder: Embedder | None,
    given: Mapping[str, VectorIndex | None],
    config: IndexConfig,
    graph: GraphStore | None = None,
    embedder_name: str | None = None,
    backend: IndexBackend | None = None,
) -> OpenedParts:
    """Open the parts of an index (see the module docstring); ``given``: the vector indexes passed in by
    name (``entities``, ``relations``, ``chunks``), ``None`` where the index makes its own."""
    if backend is not None and directory is not None:
        raise ValueError("pass a directory (the built-in SQLite store) or a backend, not both")
    recorded = embedder is None and any(given.get(name) is None for name in _SPACES)  # the store's own embedder
    if backend is None:
        backend = _builtin_backend(directory, recorded, embedder_name or embedder_name_of(embedder), given, config)
    elif recorded and not (embedder_name or backend.meta().get("embedder")):
        raise ValueError(_NO_EMBEDDER)
    if recorded:  # an existing store opened without an embedder: the one it records
        embedder = _recorded_embedder(backend, embedder_name)
    vector_indexes = {space: _vectors(backend, space, given.get(space), embedder) for space in _SPACES}
    owns_graph = graph is None
    if graph is None:
        graph = backend.own_graph(directed_relations=config.directed_relations)
    return OpenedParts(backend, embedder, vector_indexes, graph, owns_graph)


def _recorded_embedder(backend: IndexBackend, embedder_name: str | None) -> Embedder:
    """The embedder a store records (``embedder_name`` if given): made by the core when it can, else a
    stand-in that raises when something must be embedded."""
    name = embedder_name or backend.meta().get("embedder")
    return embedder_from_name(name) or MissingEmbedder(name, backend.directory or "(the backend)")


def _vectors(backend: IndexBackend, space: str, given: VectorIndex | None, embedder: Embedder | None) -> VectorIndex:
    """The vector index ``given`` for ``space``, else the backend's own (an empty given index is still used)."""
    if given is not None:
        return given
    assert embedder is not None  # checked before: an index is missing only when an embedder is given
    return backend.own_vectors(space, embedder)


def _builtin_backend(
    directory: str | os.PathLike[str] | None,
    recorded: bool,
    embedder_name: str | None,
    given: Mapping[str, VectorIndex | None],
    config: IndexConfig,
) -> IndexBackend:
    """The SQLite store of ``directory``, or memory without one (``recorded``: no embedder was given,
    so the store must exist to say which embeddings it holds)."""
    path = Path(directory) if directory is not None else None
    if recorded and (path is None or not (store_exists(path) or legacy_files(path))):
        raise ValueError(_NO_EMBEDDER + (f" (no store in {path} yet to take the embedder from)" if path else ""))
    if path is None:
        return MemoryBackend()
    return SQLiteBackend.open(
        path,
        embedder=embedder_name,
        vector_kind="external" if any(v is not None for v in given.values()) else "sqlite-exact",
        directed_relations=config.directed_relations,
    )
