"""Fixtures of the integration tests: one FalkorDB server per test session, a fresh graph per test."""

from .falkordb_server import falkordb_graph, falkordb_server

__all__ = ["falkordb_graph", "falkordb_server"]
