"""What differs between the index's own stores and those passed in is asked of the backend, never probed.

The core tells the graph and vector stores an index makes for itself from any others in one place,
``pathrag.index.kinds`` (a backend's ``kinds``), and a vector index that stores given vectors by the
``VectorUpserts`` protocol: no ``isinstance`` against a concrete store class elsewhere, no ``hasattr`` probe.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

import pathrag
from pathrag import HashingEmbedder, InMemoryVectorIndex, NetworkXGraphStore, PathRAGIndex, VectorHit, VectorItem
from pathrag.index.kinds import StoreKinds
from pathrag.vectors.base import VectorUpserts, vector_upserts

CORE = Path(pathrag.__file__).parent
CONCRETE = {"SQLiteVectorIndex", "InMemoryVectorIndex", "SQLiteGraphStore", "NetworkXGraphStore"}
# where the concrete classes are defined, and the one module that tells them apart for the index
ALLOWED = ("sqlite/", "graphs/", "vectors/", "index/kinds.py", "testing/")


def _calls(name: str) -> list[tuple[str, ast.Call]]:
    found = []
    for path in sorted(CORE.rglob("*.py")):
        where = path.relative_to(CORE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
                found.append((where, node))
    return found


def test_no_isinstance_against_a_concrete_store_class_outside_the_kinds() -> None:
    assert _calls("isinstance")  # the walk sees the core's calls
    offending = [
        f"{where}:{call.lineno}"
        for where, call in _calls("isinstance")
        if not where.startswith(ALLOWED)
        and len(call.args) == 2
        and {n.id for n in ast.walk(call.args[1]) if isinstance(n, ast.Name)} & CONCRETE
    ]
    assert offending == []


def test_no_hasattr_probe_for_vector_upserts() -> None:
    offending = [
        f"{where}:{call.lineno}"
        for where, call in _calls("hasattr")
        if len(call.args) == 2 and isinstance(call.args[1], ast.Constant) and call.args[1].value == "upsert_vectors"
    ]
    assert offending == []


class _EmbedOnly:
    """A vector index that can only embed what it stores (no ``upsert_vectors``)."""

    def __init__(self) -> None:
        self.inner = InMemoryVectorIndex(HashingEmbedder(8))

    def upsert(self, items: Sequence[VectorItem]) -> None:
        self.inner.upsert(items)

    async def aupsert(self, items: Sequence[VectorItem]) -> None:
        await self.inner.aupsert(items)

    def query(self, text: str, k: int) -> list[VectorHit]:
        return self.inner.query(text, k)

    async def aquery(self, text: str, k: int) -> list[VectorHit]:
        return await self.inner.aquery(text, k)

    def delete(self, ids: Iterable[str]) -> None:
        self.inner.delete(ids)

    async def adelete(self, ids: Iterable[str]) -> None:
        await self.inner.adelete(ids)


def test_the_kinds_stage_the_index_own_stores_only() -> None:
    kinds = StoreKinds()
    assert kinds.stages(NetworkXGraphStore()) and kinds.stages(InMemoryVectorIndex(HashingEmbedder(8)))
    assert not kinds.stages(_EmbedOnly())
    assert kinds.ids(_EmbedOnly()) is None  # not checked against the records


def test_reusing_vectors_needs_vector_upserts_and_names_the_index() -> None:
    assert isinstance(InMemoryVectorIndex(HashingEmbedder(8)), VectorUpserts)
    with pytest.raises(TypeError, match=r"reusing vectors needs .*upsert_vectors.*not _EmbedOnly"):
        vector_upserts(_EmbedOnly(), "reusing vectors")


def test_records_with_vectors_for_an_index_without_upserts_write_nothing() -> None:
    index = PathRAGIndex(embedder=HashingEmbedder(8), chunk_index=_EmbedOnly())
    with pytest.raises(TypeError, match="upsert_vectors"):
        index.add_records(
            "import",
            [pathrag.Entity(name="A")],
            [],
            vector_items={"chunks": [VectorItem("c1", "a passage")]},
            vectors={"chunks": {"c1": [1.0] * 8}},
        )
    assert index.stats()["documents"] == 0 and len(index.documents) == 0
