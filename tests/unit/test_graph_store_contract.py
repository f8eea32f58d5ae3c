"""The GraphStore contract (:mod:`pathrag.testing`) on every store pathrag ships: networkx, the embedded
SQLite store, CypherGraphStore on a real FalkorDB (and Neo4j when NEO4J_URI is set), and the LlamaIndex
adapter over SimplePropertyGraphStore and over LlamaIndex's FalkorDBPropertyGraphStore."""

from __future__ import annotations

import asyncio
import threading

import pytest

pytest.register_assert_rewrite("pathrag.testing")  # before the import: detailed assertion messages

from pathrag import BaseGraphStore, Entity, NetworkXGraphStore, Relation  # noqa: E402
from pathrag.sqlite import SQLiteGraphStore, SQLiteStore  # noqa: E402
from pathrag.testing import GraphStoreContract  # noqa: E402


class TestNetworkXGraphStore(GraphStoreContract):
    @pytest.fixture
    def store(self):
        return NetworkXGraphStore()


class TestSQLiteGraphStore(GraphStoreContract):
    @pytest.fixture
    def store(self, tmp_path):
        sqlite = SQLiteStore(tmp_path)
        yield SQLiteGraphStore(sqlite)
        sqlite.close()

    def test_async_reads_see_the_snapshot_of_the_calling_thread(self, store):
        """The async twins run on the caller's thread (``async_in_thread = False``): a read inside
        ``SQLiteStore.snapshot()`` must not see a commit another thread makes meanwhile."""
        assert SQLiteGraphStore.async_in_thread is False and issubclass(SQLiteGraphStore, BaseGraphStore)
        store.upsert_entities([Entity(name="A", description="before")])

        async def read() -> tuple:
            with store.store.snapshot():
                first = await store.aget_entities(["A", "B"])
                writer = threading.Thread(
                    target=store.upsert_entities, args=([Entity(name="A", description="after"), Entity(name="B")],)
                )
                writer.start()
                writer.join()
                return first, await store.aget_entities(["A", "B"]), await store.aneighborhoods({"B": None})

        first, second, hoods = asyncio.run(read())
        assert first == second == {"A": Entity(name="A", description="before")} and hoods == {}
        assert store.get_entities(["A", "B"])["A"].description == "after"  # committed, seen outside

    def test_async_writes_join_the_transaction_of_the_calling_thread(self, store):
        """Inside ``SQLiteStore.transaction()`` (whose writer lock this thread holds) the async writes
        join it: in a worker thread they would wait for that lock forever."""

        async def write(fail: bool) -> None:
            with store.store.transaction():
                await store.aupsert_relations([Relation(source="A", target="B")])
                await store.adelete_entities(["A"])
                if fail:
                    raise RuntimeError("roll back")

        outcomes: list[str] = []

        def main() -> None:
            try:
                asyncio.run(write(fail=True))
            except RuntimeError:
                outcomes.append("rolled back")
            outcomes.append(str(store.get_entities(["A", "B"])))
            asyncio.run(write(fail=False))
            outcomes.append(str(store.get_entities(["A", "B"])))

        thread = threading.Thread(target=main, daemon=True)  # a deadlock fails the test, not the run
        thread.start()
        thread.join(20)
        assert outcomes == ["rolled back", "{}", str({"B": Entity(name="B")})]


# -- CypherGraphStore --------------------------------------------------------------------------------


# -- the LlamaIndex adapter --------------------------------------------------------------------------


class TestPropertyGraphStoreAdapterOnSimplePropertyGraphStore(GraphStoreContract):
    @pytest.fixture
    def store(self):
        from llama_index.core.graph_stores import SimplePropertyGraphStore

        from llama_index_pathrag import PropertyGraphStoreAdapter

        return PropertyGraphStoreAdapter(SimplePropertyGraphStore())
