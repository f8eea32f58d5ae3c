"""``pathrag import``: bring a knowledge graph built by another tool into a store, without an LLM call.

Registered on the ``pathrag`` app by :mod:`langchain_pathrag.cli` with :func:`register`. Three sources,
each handed to an importer of :mod:`pathrag.importers`:

* ``pathrag import lightrag DIR --store KB [--reuse-vectors]``: a LightRAG or PathRAG working directory.
* ``pathrag import openie FILE --store KB``: HippoRAG's OpenIE JSON (passages, entities, triples).
* ``pathrag import graph-documents FILE.jsonl --store KB``: LangChain graph documents, one JSON object a
  line (see :func:`read_graph_documents` for the line format).

A new store gets pathrag's offline hashing embeddings unless ``--embedding-model`` names other embeddings
(as for ``pathrag index``); an existing store keeps its own. The import is one
document of the store (``--id``, default ``import:<kind>:<name>``): importing again replaces it, and
``pathrag delete ID`` removes it.

>>> from typer.testing import CliRunner
>>> from langchain_pathrag.cli import app
>>> result = CliRunner().invoke(app, ["import", "openie", "/nonexistent.json", "--store", "/tmp/kb"])
>>> result.exit_code, result.stderr.strip()
(1, 'error: no such file: /nonexistent.json')
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .errors import CliError, one_line
from .options import IMPORT_EMBEDDING_MODEL, IMPORT_STORE, WAIT
from .providers import HASHING, embedding_spec
from .readers import regular_file

if TYPE_CHECKING:  # the core and the store are imported when an import runs, not for ``pathrag --help``
    from pathrag import Embedder, PathRAGIndex
    from pathrag.importers import ImportSummary

__all__ = ["GraphDocumentLine", "read_graph_documents", "register"]


# -- LangChain graph documents as JSON lines ----------------------------------------------------------


@dataclass
class _Node:
    id: str
    type: str = "Node"
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Relationship:
    source: _Node
    target: _Node
    type: str
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Source:
    page_content: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class GraphDocumentLine:
    """One line of a graph-documents file, shaped like LangChain's ``GraphDocument`` (what
    :func:`pathrag.importers.import_graph_documents` reads by duck typing)."""

    nodes: list[_Node]
    relationships: list[_Relationship]
    source: _Source | None = None


def _node(value: Any) -> _Node | None:
    """A node object (``{"id", "type"?, "properties"?}``) or a bare id; ``None`` when it has no usable id."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        value = {"id": value}
    if not isinstance(value, dict):
        return None
    node_id = value.get("id")
    if isinstance(node_id, bool) or not isinstance(node_id, (str, int)) or not str(node_id).strip():
        return None
    kind = value.get("type")
    properties = value.get("properties")
    return _Node(
        str(node_id),
        kind if isinstance(kind, str) and kind.strip() else "Node",
        properties if isinstance(properties, dict) else {},
    )


def _relationship(value: Any) -> _Relationship | None:
    if not isinstance(value, dict):
        return None
    source, target, kind = _node(value.get("source")), _node(value.get("target")), value.get("type")
    if source is None or target is None or not (isinstance(kind, str) and kind.strip()):
        return None
    properties = value.get("properties")
    return _Relationship(source, target, kind, properties if isinstance(properties, dict) else {})


def _source(value: Any) -> _Source | None:
    if isinstance(value, str):
        return _Source(value)
    if isinstance(value, dict) and isinstance(value.get("page_content"), str):
        metadata = value.get("metadata")
        return _Source(value["page_content"], metadata if isinstance(metadata, dict) else {})
    return None


def read_graph_documents(path: Path) -> tuple[list[GraphDocumentLine], int]:
    """Read a JSON-lines file of graph documents; return them and the number of records skipped.

    Each non-blank line is one object, the JSON of a LangChain ``GraphDocument``
    (``graph_document.model_dump_json()`` writes exactly this)::

        {"nodes": [{"id": "Ada", "type": "Person", "properties": {"description": "..."}}],
         "relationships": [{"source": {"id": "Ada", "type": "Person"}, "target": "Lab", "type": "WORKS_AT",
                            "properties": {"description": "...", "weight": 2}}],
         "source": {"page_content": "Ada works at the Lab.", "metadata": {}}}

    ``nodes`` and ``relationships`` are lists (either may be left out, not both); a relationship's
    ``source`` / ``target`` is a node object or a bare id; ``type`` and ``properties`` are optional for
    nodes; ``source`` (a document object or its text) is optional. A node without an id or a
    relationship without both ends and a type is skipped and counted; a line that is not such an object
    is an error naming the line.

    Raises:
        ValueError: the file cannot be read, a line is malformed, or there is no graph document.
    """
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    documents: list[GraphDocumentLine] = []
    skipped = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{where} is not JSON ({exc.msg} at column {exc.colno}): expected one graph document per line"
            ) from exc
        if not isinstance(data, dict) or not ({"nodes", "relationships"} & data.keys()):
            raise ValueError(
                f'{where} is not a graph document: expected an object with "nodes" and "relationships" lists'
            )
        raw_nodes, raw_relationships = data.get("nodes", []), data.get("relationships", [])
        if not isinstance(raw_nodes, list) or not isinstance(raw_relationships, list):
            raise ValueError(f'{where}: "nodes" and "relationships" must be lists')
        nodes = [n for n in map(_node, raw_nodes) if n is not None]
        relationships = [r for r in map(_relationship, raw_relationships) if r is not None]
        skipped += len(raw_nodes) - len(nodes) + len(raw_relationships) - len(relationships)
        documents.append(GraphDocumentLine(nodes, relationships, _source(data.get("source"))))
    if not documents:
        raise ValueError(f"{path} holds no graph document (one JSON object per line)")
    return documents, skipped


# -- progress ----------------------------------------------------------------------------------------


class _CountedEmbedder:
    """An embedder that reports how many texts it embedded (the slow part of an import)."""

    def __init__(self, inner: Embedder, advance: Callable[[int], None]) -> None:
        self.inner = inner
        self.advance = advance

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self.inner.embed(texts)
        self.advance(len(texts))
        return vectors

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await self.inner.aembed(texts)
        self.advance(len(texts))
        return vectors

    def __getattr__(self, name: str) -> Any:  # dimensions, name...: as the wrapped embedder
        if name == "inner":  # not set yet (a copy being built): no endless recursion
            raise AttributeError(name)
        return getattr(self.inner, name)


@contextmanager
def _progress(index: PathRAGIndex, label: str) -> Iterator[None]:
    """A bar on stderr while the import runs (only on a terminal: piped output stays clean)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("texts embedded"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    task = progress.add_task(label, total=None)
    wrapped = {name: vi for name, vi in index.vector_indexes.items() if hasattr(vi, "embedder")}
    originals = {name: vi.embedder for name, vi in wrapped.items()}
    for name, vi in wrapped.items():
        vi.embedder = _CountedEmbedder(originals[name], lambda n: progress.advance(task, n))
    try:
        with progress:
            yield
    finally:
        for name, vi in wrapped.items():
            vi.embedder = originals[name]


# -- the commands ------------------------------------------------------------------------------------


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else plural or word + 's'}"


_GROUP = typer.Typer(
    help="Bring a knowledge graph built by another tool into a store (no LLM call, no key).", no_args_is_help=True
)
_ID = typer.Option(
    None,
    "--id",
    show_default=False,
    help="Document id of the import (default import:<kind>:<name>); importing "
    "again under it replaces the previous import.",
)


def register(app: typer.Typer) -> None:
    """Add ``pathrag import lightrag | openie | graph-documents`` to ``app`` (the ``pathrag`` command line)."""
    app.add_typer(_GROUP, name="import")


def _prepare_store(store: Path, embedding_model: str | None) -> bool:
    """Check the embeddings asked for against the store's, and record them in a new store; ``True``: the
    store is new (a failed import leaves nothing of it behind)."""
    from .store import check_embeddings, read_meta, write_meta

    meta = read_meta(store)
    spec = HASHING if embedding_model is None else embedding_spec(embedding_model)
    check_embeddings(store, meta, spec if embedding_model is not None else None)
    if meta is None:  # a new store: record its embeddings, as `pathrag index` does
        write_meta(store, spec)
    return meta is None


def _remove_new_store(store: Path, new_dir: bool) -> None:
    """Leave no empty store behind a failed first import (its directory too, when the import made it)."""
    from pathrag.sqlite import LOCK_FILE, STORE_FILE
    from pathrag.sqlite.lock import FOLD_LOCK_FILE

    for name in (STORE_FILE, f"{STORE_FILE}-wal", f"{STORE_FILE}-shm", LOCK_FILE, FOLD_LOCK_FILE):
        (store / name).unlink(missing_ok=True)
    if new_dir:
        shutil.rmtree(store, ignore_errors=True)


def _run_import(
    kind: str,
    source: Path,
    store: Path,
    embedding_model: str | None,
    work: Callable[[PathRAGIndex], ImportSummary],
    wait: float = 0.0,
) -> None:
    """Open or create the store, run ``work`` under a progress bar, print the summary line."""
    from pathrag import IndexConfig
    from pathrag.errors import StoreError, StoreLocked

    from .store import damaged_error, locked_error, open_store

    new_dir = not store.exists()
    new_store = _prepare_store(store, embedding_model)
    done = False
    index = open_store(store, config=IndexConfig(lock_timeout=wait))
    try:
        with _progress(index, f"Importing {kind}"):
            summary = work(index)
        counts = index.stats()
        done = True
    except StoreLocked as exc:  # another process is writing this store: its files are not ours to remove
        done = True
        raise locked_error(exc) from exc
    except (ValueError, TypeError, KeyError, StoreError) as exc:  # bad input, named by the importer
        raise CliError(one_line(str(exc))) from exc
    except sqlite3.DatabaseError as exc:  # a damaged store file: SQLite's message names no file
        raise damaged_error(store, exc) or CliError(f"{store}: {one_line(str(exc))}") from exc
    finally:
        index.close()
        if not done and new_store:
            _remove_new_store(store, new_dir)
    _print_summary(kind, source, store, summary, counts)


def _print_summary(kind: str, source: Path, store: Path, summary: ImportSummary, counts: dict[str, int]) -> None:
    typer.echo(
        f"Imported {kind} {source} into {store}: {_plural(summary.entities, 'entity', 'entities')}, "
        f"{_plural(summary.relations, 'relation')}, {_plural(summary.chunks, 'chunk')} "
        f"({_plural(summary.documents, 'source document')}); "
        f"{_plural(summary.merged, 'merged name')}, {_plural(summary.skipped, 'skipped record')}, "
        f"{_plural(summary.vectors_reused, 'vector')} reused; no LLM call."
    )
    typer.echo(
        f"The store now holds {_plural(counts['documents'], 'document')} "
        f"({_plural(counts.get('imports', 0), 'import')}), {_plural(counts['chunks'], 'chunk')}, "
        f"{_plural(counts['entities'], 'entity', 'entities')}, {_plural(counts['relations'], 'relation')}. Next: "
        f'pathrag paths "How is A connected to B?" --store {store}'
    )


def _existing(path: Path, directory: bool = False) -> Path:
    from pathrag.files import file_kind

    if not path.exists():
        raise CliError(f"no such {'folder' if directory else 'file'}: {path}")
    if directory and not path.is_dir():
        raise CliError(f"{path} is {file_kind(path) or 'a file'}, not a folder")
    if not directory and path.is_dir():
        raise CliError(f"{path} is a folder, not a file")
    return path if directory else regular_file(path)


@_GROUP.command("lightrag")
def _lightrag(
    directory: Path = typer.Argument(
        ...,
        help="A LightRAG or PathRAG working directory "
        "(graph_chunk_entity_relation.graphml, kv_store_*.json, vdb_*.json).",
        show_default=False,
    ),
    store: Path = IMPORT_STORE,
    reuse_vectors: bool = typer.Option(
        False,
        "--reuse-vectors",
        help="Take the vectors of the directory's vdb_*.json instead of embedding again (same embedding model needed).",
    ),
    embedding_model: str | None = IMPORT_EMBEDDING_MODEL,
    document_id: str | None = _ID,
    wait: float = WAIT,
) -> None:
    """Import a LightRAG / PathRAG working directory: its graph, chunks and (optionally) vectors."""
    from pathrag.importers import import_lightrag

    _existing(directory, directory=True)
    _run_import(
        "LightRAG",
        directory,
        store,
        embedding_model,
        lambda index: import_lightrag(directory, index, reuse_vectors=reuse_vectors, document_id=document_id),
        wait,
    )


@_GROUP.command("openie")
def _openie(
    file: Path = typer.Argument(
        ...,
        help='HippoRAG OpenIE results: {"docs": [{"passage", "extracted_entities", "extracted_triples"}, ...]}.',
        show_default=False,
    ),
    store: Path = IMPORT_STORE,
    embedding_model: str | None = IMPORT_EMBEDDING_MODEL,
    document_id: str | None = _ID,
    wait: float = WAIT,
) -> None:
    """Import HippoRAG OpenIE triples: each passage becomes a chunk its entities and relations cite."""
    from pathrag.importers import import_openie

    _existing(file)
    try:  # read before the store is touched: a broken file changes nothing
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CliError(one_line(f"cannot read {file}: {exc}")) from exc
    docs = data.get("docs") if isinstance(data, dict) else data
    if not isinstance(docs, list):
        raise CliError(f'{file} is not OpenIE output: expected a list of passages or an object with a "docs" list')
    _run_import(
        "OpenIE",
        file,
        store,
        embedding_model,
        lambda index: import_openie(docs, index, document_id=document_id or f"import:openie:{file.stem}"),
        wait,
    )


@_GROUP.command("graph-documents")
def _graph_documents(
    file: Path = typer.Argument(
        ...,
        help='JSON lines, one LangChain graph document each: {"nodes": [...], '
        '"relationships": [...], "source": {"page_content": ...}}.',
        show_default=False,
    ),
    store: Path = IMPORT_STORE,
    embedding_model: str | None = IMPORT_EMBEDDING_MODEL,
    document_id: str | None = _ID,
    wait: float = WAIT,
) -> None:
    """Import LangChain graph documents written as JSON lines (GraphDocument.model_dump_json())."""
    from pathrag.importers import import_graph_documents

    _existing(file)
    try:
        documents, skipped = read_graph_documents(file)
    except ValueError as exc:
        raise CliError(one_line(str(exc))) from exc

    def work(index: PathRAGIndex) -> ImportSummary:
        summary = import_graph_documents(
            documents, index, document_id=document_id or f"import:graph-documents:{file.stem}"
        )
        summary.skipped += skipped  # records the line reader could not use
        return summary

    _run_import("graph documents", file, store, embedding_model, work, wait)
