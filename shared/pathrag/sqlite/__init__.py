"""The embedded store: one SQLite file per index directory, one transaction per commit.

Layout of ``pathrag.sqlite`` (see :data:`~pathrag.sqlite.schema.SCHEMA`): ``meta`` (format, pathrag
version, embedder name and dimension, vector-index kind), ``documents`` + ``doc_chunks`` (which document
claims which chunk, at which position: the provenance of everything else), ``chunks`` (each chunk's text
and extraction records, written as soon as its extraction finishes), ``entities`` and ``relations`` (the
merged graph, indexed both ways for neighbourhood queries), ``vectors`` (float32 BLOBs per space:
entities, relations, chunks), ``llm_cache`` and ``summaries``.

Why SQLite: a commit (insert, delete, import) is one ``BEGIN IMMEDIATE … COMMIT`` on one file, so it is
visible all at once or not at all whatever moment the process dies; WAL mode lets readers keep reading
the last committed state while the writer writes; a write touches only the rows it changes, and opening
reads nothing until a query needs it.

The package, one concept a module: :mod:`~pathrag.sqlite.schema` (the tables, the format version),
:mod:`~pathrag.sqlite.store` (:class:`SQLiteStore`: connections, transactions, meta, and the crash tests'
write-step hook), :mod:`~pathrag.sqlite.reads` (its reads and read snapshots), :mod:`~pathrag.sqlite.storefile`
(the store file: made whole or not at all, described), :mod:`~pathrag.sqlite.wal` (the damaged-WAL check),
:mod:`~pathrag.sqlite.lock` (:class:`WriterLock`, one writer per directory across processes),
:mod:`~pathrag.sqlite.codec` (how records, answers, entities and relations are written in rows),
:mod:`~pathrag.sqlite.graph` (:class:`SQLiteGraphStore`), :mod:`~pathrag.sqlite.vectors`
(:class:`SQLiteVectorIndex`) over :mod:`~pathrag.sqlite.ann` (the search structure of a space, kept in step
through the vector log), :mod:`~pathrag.sqlite.keyed` (exact search, int8 copies),
:mod:`~pathrag.sqlite.segments` (the saved HNSW files and their checks) and :mod:`~pathrag.sqlite.fold`
(folding changes into them), :mod:`~pathrag.sqlite.snapshot` (whole-index copies) and
:mod:`~pathrag.sqlite.legacy` (the older JSON format and its one-time migration into a store).
"""

from ..errors import StoreError, StoreLocked
from .codec import pack_records, pack_text, unpack_records, unpack_text
from .graph import SQLiteGraphStore
from .lock import LOCK_FILE, WriterLock
from .schema import FORMAT_VERSION, STORE_FILE
from .snapshot import write_snapshot
from .store import SQLiteStore, read_store_info, store_exists, write_store_info
from .vectors import SQLiteVectorIndex
from .wal import check_wal

__all__ = [
    "FORMAT_VERSION",
    "LOCK_FILE",
    "STORE_FILE",
    "SQLiteGraphStore",
    "SQLiteStore",
    "SQLiteVectorIndex",
    "StoreError",
    "StoreLocked",
    "WriterLock",
    "check_wal",
    "pack_records",
    "pack_text",
    "read_store_info",
    "store_exists",
    "unpack_records",
    "unpack_text",
    "write_snapshot",
    "write_store_info",
]
