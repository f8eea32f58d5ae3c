"""The write side: :class:`~pathrag.PathRAGIndex` and the phases of a write, from a document to a commit.

A write runs its phases in one order, each in a module of its own; what it is given and answers is
:mod:`~pathrag.index.values` (:class:`~pathrag.Document`, :class:`~pathrag.IndexConfig`, the summaries):

- :mod:`~pathrag.index.front`: :class:`~pathrag.PathRAGIndex`, the public API over the phases, opened by
  :mod:`~pathrag.index.opening`;
- :mod:`~pathrag.index.writes`: a write from start to commit, in the order it runs, over the phases:
  :mod:`~pathrag.index.extract` (what is new, and its extraction: :mod:`~pathrag.index.extraction` holds the
  prompts' use and their parser), :mod:`~pathrag.index.plan` (the change, planned against the committed
  state) and :mod:`~pathrag.index.commit` (the change set applied at once);
- :mod:`~pathrag.index.merging` and :mod:`~pathrag.index.rebuild`: how records become entities and
  relations, and how the graph and vectors follow the chunk records;
- :mod:`~pathrag.index.staging`: a commit's change set, applied at once;
- :mod:`~pathrag.index.records`: the document and chunk records and their tables' commit logic, kept in
  :mod:`~pathrag.index.tables` (over the lazily fetched rows of :mod:`~pathrag.index.rows`);
- :mod:`~pathrag.index.backend`: where an index keeps what it commits (memory or a SQLite store), and
  :mod:`~pathrag.index.kinds`: which graph and vector stores are an index's own kinds;
- :mod:`~pathrag.index.inspection`: the check, counts and export of a whole index.

What it may import: the top-level value modules and every package below it (:mod:`pathrag.graphs`,
:mod:`pathrag.vectors`, :mod:`pathrag.llm`, :mod:`pathrag.query`, :mod:`pathrag.sqlite`); never
:mod:`pathrag.importers`, :mod:`pathrag.eval` or :mod:`pathrag.testing`, which import it. This file
imports nothing.
"""
