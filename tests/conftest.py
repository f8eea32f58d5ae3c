"""Shared fixtures: one FalkorDB server per test session (see falkordb_server.py)."""

pytest_plugins = ["tests.falkordb_server"]
