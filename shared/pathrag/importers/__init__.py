"""Bring knowledge graphs built by other tools into a pathrag store, without a single LLM call.

Four sources: a LightRAG or PathRAG working directory, HippoRAG's OpenIE triples, LangChain graph
documents, and a LlamaIndex property graph store (the last two by duck typing: neither framework is
imported). The target is a
:class:`~pathrag.GraphStore` (optionally with vector indexes) or a :class:`~pathrag.PathRAGIndex`,
whose graph and vector indexes are then used; call ``index.save()`` afterwards to persist it.

Every imported item goes through pathrag's own rules: names become merge keys
(:func:`pathrag.names.normalize_name`: quotes dropped, upper-cased), types are lower-cased,
records naming the same entity or relation are merged as :mod:`pathrag.index.merging` merges extractions
(type by majority, descriptions joined, weights summed, source ids united; relations undirected
unless the target's ``directed_relations``), and vector texts and ids are those
:class:`~pathrag.PathRAGIndex` writes.

Into a :class:`~pathrag.PathRAGIndex`, an import is stored as the records of one document,
``document_id`` (default ``import:<kind>:<name>``; see :meth:`~pathrag.PathRAGIndex.add_records`): the
imported records merge with extracted ones, survive later inserts, and ``index.delete([document_id])``
removes them. Importing again under the same id replaces the previous import. Into a bare
:class:`~pathrag.GraphStore`, merged items are written directly and replace stored ones of the same name.

One module per source format, each with its field mapping, over one shared :mod:`~pathrag.importers.collector`:

- :mod:`~pathrag.importers.lightrag`: :func:`import_lightrag`, a LightRAG or PathRAG working directory;
- :mod:`~pathrag.importers.openie`: :func:`import_openie`, HippoRAG's OpenIE triples;
- :mod:`~pathrag.importers.graph_documents`: :func:`import_graph_documents`, LangChain graph documents;
- :mod:`~pathrag.importers.property_graph`: :func:`import_property_graph`, a LlamaIndex property graph store.

What it may import: the top-level value modules, :mod:`pathrag.graphs`, :mod:`pathrag.vectors` and
:mod:`pathrag.index` (an import into an index goes through :meth:`~pathrag.PathRAGIndex.add_records`); no
other package imports it.
"""

from __future__ import annotations

from .collector import ImportSummary
from .graph_documents import import_graph_documents
from .lightrag import import_lightrag
from .openie import import_openie
from .property_graph import import_property_graph

__all__ = ["ImportSummary", "import_graph_documents", "import_lightrag", "import_openie", "import_property_graph"]
