"""The server half of test_importers.py: what needs a running FalkorDB (or Neo4j) server."""

from __future__ import annotations

from pathrag import NetworkXGraphStore
from pathrag.graphs.cypher import CypherGraphStore
from pathrag.importers import import_lightrag

from ..unit.test_importers import LIGHTRAG, contents


def test_lightrag_import_into_falkordb_matches_the_embedded_import(falkordb_graph):
    cypher, embedded = CypherGraphStore.from_falkordb(falkordb_graph), NetworkXGraphStore()
    assert import_lightrag(LIGHTRAG, cypher) == import_lightrag(LIGHTRAG, embedded)
    assert contents(cypher) == contents(embedded)
