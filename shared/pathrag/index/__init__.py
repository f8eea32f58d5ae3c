"""The write side: :class:`~pathrag.PathRAGIndex` and the phases of a write, from a document to a commit.

A write runs its phases in one order, each in a module of its own; what it is given and answers is
:mod:`~pathrag.index.values` (:class:`~pathrag.Document`, :class:`~pathrag.IndexConfig`, the summaries):

- :mod:`~pathrag.index.front`: :class:`~pathrag.PathRAGIndex`, the public API over the phases;
- :mod:`~pathrag.index.extraction`: the extraction prompts' use and their parser;
- :mod:`~pathrag.index.merging` and :mod:`~pathrag.index.rebuild`: how records become entities and
  relations, and how the graph and vectors follow the chunk records;
- :mod:`~pathrag.index.staging`: a commit's change set, applied at once;
- :mod:`~pathrag.index.records`: the document and chunk records and their tables;
- :mod:`~pathrag.index.backend`: where an index keeps what it commits (memory or a SQLite store).

What it may import: the top-level value modules and every package below it (:mod:`pathrag.graphs`,
:mod:`pathrag.vectors`, :mod:`pathrag.llm`, :mod:`pathrag.query`, :mod:`pathrag.sqlite`); never
:mod:`pathrag.importers`, :mod:`pathrag.eval` or :mod:`pathrag.testing`, which import it. This file
imports nothing.
"""
