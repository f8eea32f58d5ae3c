"""The query side: a question to seed entities, key paths, ranked passages and the laid-out context.

In the order a retrieval runs them:

- :mod:`~pathrag.query.retrieval`: :func:`~pathrag.retrieve` and :func:`~pathrag.aretrieve`, query ->
  keywords -> seeds -> passages -> paths, written once for sync and async over the steps of
  :mod:`~pathrag.query.steps`;
- :mod:`~pathrag.query.linking`: which entities a question names (offline);
- :mod:`~pathrag.query.passage_rank`: the source passages ranked with the flow;
- :mod:`~pathrag.query.pruning`: resource propagation and the key-path search (the paper's pruning);
- :mod:`~pathrag.query.query_paths`: the evidence context's query-aware paths (relation weights, chains);
- :mod:`~pathrag.query.context`: paths and passages as text, laid out within a token budget, and the
  answer prompt.

What it may import: the top-level value modules, :mod:`pathrag.graphs`, :mod:`pathrag.vectors` and
:mod:`pathrag.llm`; never the write side (:mod:`pathrag.index`, :mod:`pathrag.sqlite`). This file imports
nothing.
"""
