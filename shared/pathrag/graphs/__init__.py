"""Graph stores: the :class:`~pathrag.GraphStore` protocol the core reads and writes through, and the stores.

- :mod:`~pathrag.graphs.base`: the protocol, :class:`~pathrag.BaseGraphStore` (async twins in a worker
  thread) and the attribute mapping the stores share;
- :mod:`~pathrag.graphs.memory`: :class:`~pathrag.NetworkXGraphStore`, a networkx graph in memory, saved as
  one JSON file, and :func:`~pathrag.as_graph_store`;
- :mod:`~pathrag.graphs.cypher`: :class:`~pathrag.CypherGraphStore`, FalkorDB or Neo4j through Cypher.

The store of an index directory is :class:`pathrag.sqlite.SQLiteGraphStore`, beside the rest of that store.

What it may import: the top-level value modules (``models``, ``names``, ``files``), nothing else of
``pathrag``; every other package may import it. This file imports nothing.
"""
