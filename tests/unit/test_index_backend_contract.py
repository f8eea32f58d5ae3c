"""The IndexBackend contract (:mod:`pathrag.testing`) on both backends pathrag ships: an index without a
directory (:class:`~pathrag.index.backend.MemoryBackend`) and an index in a store directory
(:class:`~pathrag.index.backend.SQLiteBackend`)."""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite("pathrag.testing")  # before the import: detailed assertion messages

from pathrag import HashingEmbedder, PathRAGIndex  # noqa: E402
from pathrag.index.backend import MemoryBackend, SQLiteBackend  # noqa: E402
from pathrag.testing import IndexBackendContract, backend_of  # noqa: E402


class TestMemoryBackend(IndexBackendContract):
    persistent = False

    @pytest.fixture
    def make_index(self):
        def make(name, **kwargs):
            backend = MemoryBackend()  # given as a backend of one's own would be
            index = PathRAGIndex(backend=backend, **kwargs)
            assert backend_of(index) is backend
            return index

        return make


class TestSQLiteBackend(IndexBackendContract):
    @pytest.fixture
    def make_index(self, tmp_path):
        def make(name, **kwargs):
            index = PathRAGIndex(tmp_path / name, **kwargs)
            assert isinstance(backend_of(index), SQLiteBackend)
            return index

        return make

    def commit_count(self, index):
        return backend_of(index).store.commit_count()


def test_a_backend_is_given_instead_of_a_directory(tmp_path) -> None:
    with pytest.raises(ValueError, match="a directory .* or a backend, not both"):
        PathRAGIndex(tmp_path, backend=MemoryBackend(), embedder=HashingEmbedder(64))
    with pytest.raises(ValueError, match="pass an embedder"):  # a memory backend records no embeddings
        PathRAGIndex(backend=MemoryBackend())
    assert not any(tmp_path.iterdir())  # refused before anything was written
