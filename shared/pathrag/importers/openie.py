"""Import HippoRAG-style OpenIE results: passages with their entities and ``[s, p, o]`` triples.

HippoRAG OpenIE JSON (``{"docs": [...]}`` or the list itself; one item per passage): ``passage`` (else
``title`` + newline + ``text``, else ``text``) → one chunk whose id is :func:`pathrag.ids.chunk_id` of
the text, cited by everything extracted from it; ``extracted_entities`` → entities (no type, no
description); each ``extracted_triples`` row ``[subject, predicate, object]`` → a relation subject → object
with keyword ``predicate`` and description ``"subject predicate object"`` (the triple read as a
sentence). Rows that are not three non-empty strings are skipped and counted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..files import check_regular_file
from ..graphs.base import GraphStore
from ..ids import chunk_id
from ..index.front import PathRAGIndex
from ..vectors.base import VectorIndex
from .collector import Collector, ImportSummary, ImportTarget

__all__ = ["import_openie"]


def import_openie(
    source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any],
    store: GraphStore | PathRAGIndex,
    *,
    entity_index: VectorIndex | None = None,
    relation_index: VectorIndex | None = None,
    chunk_index: VectorIndex | None = None,
    document_id: str | None = None,
) -> ImportSummary:
    """Import HippoRAG-style OpenIE results: passages with their entities and ``[s, p, o]`` triples.

    ``source`` is a JSON file or its parsed content. Each passage becomes a chunk with its real text,
    so every entity and relation cites the passage it came from (see the module docstring for the
    mapping). Malformed rows are skipped and counted in ``summary.skipped``, never raised.

    Args:
        source: path of the OpenIE JSON file, or the loaded ``{"docs": [...]}`` object or docs list.
        store: a graph store or a :class:`~pathrag.PathRAGIndex` to import into.
        document_id: the import's document id in an index (default ``import:openie:<file name>``).

    Raises:
        ValueError: the file cannot be read or holds no list of passages.

    >>> from pathrag import NetworkXGraphStore
    >>> docs = [{"passage": "Ada works at the Lab.", "extracted_entities": ["Ada", "Lab"],
    ...          "extracted_triples": [["Ada", "works at", "Lab"], ["Ada", "only two"]]}]
    >>> store = NetworkXGraphStore()
    >>> summary = import_openie(docs, store)
    >>> (summary.entities, summary.relations, summary.chunks, summary.skipped)
    (2, 1, 1, 1)
    >>> store.get_relations([("ADA", "LAB")])[("ADA", "LAB")].description
    'Ada works at Lab'
    """
    docs, name = _openie_docs(source)
    target = ImportTarget.of(store, entity_index, relation_index, chunk_index)
    collector = Collector()
    summary = ImportSummary()
    for doc in docs:
        text = _openie_passage(doc)
        if text is None or not isinstance(doc, Mapping):  # only a mapping has a passage
            collector.skipped += 1
            continue
        summary.documents += 1
        _collect_passage(collector, doc, text)
    return collector.write(target, summary, document_id or f"import:openie:{name}")


def _openie_docs(source: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any]) -> tuple[Sequence[Any], str]:
    """The passages of ``source`` (read from the file it names, if it names one), and the name of the import."""
    name = "openie"
    if isinstance(source, (str, os.PathLike)):
        path = check_regular_file(source)
        name = path.stem
        try:
            source = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read {path}: {exc}") from exc
    docs = source.get("docs") if isinstance(source, Mapping) else source
    if isinstance(docs, (str, bytes)) or not isinstance(docs, Sequence):
        raise ValueError("OpenIE data should be a list of passages or an object with a 'docs' list")
    return docs, name


def _collect_passage(collector: Collector, doc: Mapping[str, Any], text: str) -> None:
    """One passage's chunk, entities and triples into ``collector`` (rows it cannot read skipped and counted)."""
    sources = (chunk_id(text),)
    collector.chunks[sources[0]] = text
    entities = doc.get("extracted_entities")
    for entity in entities if isinstance(entities, list) else ():
        if isinstance(entity, str) and entity.strip():
            collector.entity(entity, "", [], sources)
        else:
            collector.skipped += 1
    triples = doc.get("extracted_triples")
    for row in triples if isinstance(triples, list) else ():
        if not _is_triple(row):
            collector.skipped += 1
            continue
        subject, predicate, obj = (" ".join(part.split()) for part in row)
        collector.relation(subject, obj, [f"{subject} {predicate} {obj}"], [predicate], 1.0, sources)


def _is_triple(row: Any) -> bool:
    """Whether ``row`` is ``[subject, predicate, object]``: three non-empty strings."""
    return isinstance(row, (list, tuple)) and len(row) == 3 and all(isinstance(p, str) and p.strip() for p in row)


def _openie_passage(doc: Any) -> str | None:
    """The passage text of one OpenIE item (``None`` when it has none)."""
    if not isinstance(doc, Mapping):
        return None
    text = doc.get("passage")
    if not (isinstance(text, str) and text.strip()):
        title, body = doc.get("title"), doc.get("text")
        if isinstance(body, str) and body.strip():
            text = f"{title}\n{body}" if isinstance(title, str) and title.strip() else body
    return text.strip() if isinstance(text, str) and text.strip() else None
