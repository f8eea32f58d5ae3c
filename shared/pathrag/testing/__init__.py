"""The :class:`~pathrag.GraphStore`, :class:`~pathrag.VectorIndex` and index backend
(:class:`~pathrag.index.backend.IndexBackend`) contracts as test suites: subclass one once per store.

``GraphStoreContract`` holds pytest test methods that check what the core relies on: batched reads
that leave unknown names out, relations found either way round and keyed as asked, missing endpoints
created bare, upserts that replace (or merge through the hook) and are idempotent, neighbourhoods and
degrees both directed and undirected with limits and ``keep``, deletes (an entity's relations go with
it; a relation's endpoints stay), names beyond ASCII, refused names writing nothing, and async twins
answering as the sync methods. It needs pytest (the ``dev`` extra); ``import pathrag`` never imports it.

Subclass it in a test module (the name must start with ``Test``) and override the ``store`` fixture
to return a fresh, empty store; as a fixture it may use other fixtures (a database, ``tmp_path``)::

    from pathrag.testing import GraphStoreContract

    class TestMyStore(GraphStoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            return MyStore(tmp_path)

``VectorIndexContract`` does the same for a vector index: ranking best first with higher scores closer
(cosines known exactly, from :class:`CompassEmbedder`), ``k`` bounds, upserts that replace (text and
metadata) and are idempotent, the last of duplicate ids winning, deletes ignoring unknown ids, metadata
and odd ids kept verbatim, zero vectors scored finitely, vectors of another dimension or an embedder's
short answer refused, and async twins answering as the sync methods without the blocking ``embed``. Its
fixture is ``index(self, embedder)``: a fresh, empty index embedding with the contract's ``embedder``::

    class TestMyIndex(VectorIndexContract):
        @pytest.fixture
        def index(self, embedder):
            return MyVectorIndex(embedder)

``IndexBackendContract`` runs a :class:`~pathrag.PathRAGIndex` over a backend, with a
:class:`ScriptedModel` (extraction records written into the chunks as ``ENTITY``/``LINK`` lines) and a
:class:`FaultyEmbedder` (hashing vectors, made to fail on the n-th call): an insert seen all at once by
committed reads (from the plan and from another thread while the change set is applied), one committed
read seeing one state throughout, ``stats()`` agreeing with what was inserted and never counting half a
commit, a write failing while it plans or while its change set is applied leaving documents, graph,
vectors and stats as they were, insert then delete restoring them, unchanged documents inserted again
committing nothing, two writers of one index taking turns with neither lost, and a saved copy (and, for a
backend that keeps what it commits, the storage opened again) giving the same stats and retrieval. Its
fixture is ``make_index``: a factory ``make_index(name, *, llm, embedder, config)`` of indexes over the
backend's storage ``name``; set ``persistent = False`` for a backend that keeps nothing, and override
``commit_count(index)`` if it counts commits::

    class TestMyBackend(IndexBackendContract):
        @pytest.fixture
        def make_index(self):
            return lambda name, **kwargs: PathRAGIndex(backend=MyBackend(name), **kwargs)

The async checks run with ``asyncio.run`` inside sync tests, so no asyncio pytest plugin is needed.
For pytest's detailed assertion messages, call ``pytest.register_assert_rewrite("pathrag.testing")``
(in ``conftest.py``, or before the import).
"""

from __future__ import annotations

from .backend import (
    FaultyEmbedder,
    IndexBackendContract,
    ScriptedModel,
    backend_of,
    committed_state,
)
from .graph import GraphStoreContract
from .vectors import CompassEmbedder, VectorIndexContract

__all__ = [
    "CompassEmbedder",
    "FaultyEmbedder",
    "GraphStoreContract",
    "IndexBackendContract",
    "ScriptedModel",
    "VectorIndexContract",
    "backend_of",
    "committed_state",
]
