"""Vectors: the :class:`~pathrag.Embedder` and :class:`~pathrag.VectorIndex` protocols, the core's index
and embedders, and what the index embeds.

- :mod:`~pathrag.vectors.base`: the protocols, :class:`~pathrag.VectorItem`, :class:`~pathrag.VectorHit`
  and the checks every index applies to an embedder's answer;
- :mod:`~pathrag.vectors.memory`: :class:`~pathrag.InMemoryVectorIndex`, exact search in memory;
- :mod:`~pathrag.vectors.hashing`: :class:`~pathrag.HashingEmbedder`, no model, for tests and demos;
- :mod:`~pathrag.vectors.embedders`: the name a store records for its embedder, and the stand-ins until
  (or instead of) making it;
- :mod:`~pathrag.vectors.items`: what the index embeds for each entity, relation and chunk, under which id.

The index of a store directory is :class:`pathrag.sqlite.SQLiteVectorIndex`, beside the rest of that store.

What it may import: the top-level value modules (``errors``, ``ids``, ``models``, ``files``), nothing else of
``pathrag``; every other package may import it. This file imports nothing.
"""
