"""Fixtures of the integration tests: one FalkorDB and one Milvus (milvus-lite) server per test session,
a fresh graph and fresh vector collections per test."""

from .falkordb_server import falkordb_graph, falkordb_server
from .milvus_server import milvus_server, milvus_stores

__all__ = ["falkordb_graph", "falkordb_server", "milvus_server", "milvus_stores"]
