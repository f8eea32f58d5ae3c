"""Opening stores from the command line.

A store is a :class:`~pathrag.PathRAGIndex` directory: its ``pathrag.sqlite`` records the embeddings it
was built with (and the pathrag version), so that any store, whoever made it, opens here and a later
command cannot query it with different embeddings. A store of the older JSON format (with ``cli.json``)
is migrated on first open. A store another process is writing is a one-line error unless ``--wait``.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pathrag
from pathrag import IndexConfig, PathRAGIndex
from pathrag.errors import EmbedderMismatch, StoreError, StoreLocked
from pathrag.sqlite import STORE_FILE, read_store_info, write_store_info
from pathrag.sqlite.legacy import CLI_FILE, LEGACY_FILES, cli_embedder

from .errors import CliError, one_line
from .providers import describe_embeddings, embedder, embedding_spec

__all__ = [
    "STORE_META",
    "check_embeddings",
    "damaged_error",
    "locked_error",
    "mismatch_error",
    "open_store",
    "opened",
    "read_meta",
    "write_meta",
]

STORE_META = CLI_FILE  # the JSON format's record of the embeddings (migrated into the store)


def read_meta(store: Path) -> dict[str, Any] | None:
    """``{"embeddings": spec}`` as the store records it; ``{}`` if it does not say; ``None``: no store yet."""
    if not store.exists():
        return None
    if not store.is_dir():
        raise CliError(f"{store} is a file, not a pathrag store directory")
    _refuse_special_files(store)
    try:
        info = read_store_info(store)
    except StoreError as exc:
        raise CliError(one_line(str(exc))) from exc
    if info is not None:
        return {"embeddings": info["embedder"]} if info.get("embedder") else {}
    meta = store / STORE_META  # a store of the JSON format, migrated when opened
    if not meta.exists():
        if any(p.name in LEGACY_FILES for p in store.iterdir()):
            return {}
        if any(store.iterdir()):
            raise CliError(f"{store} is not a store made by the pathrag command (no {STORE_FILE})")
        return None
    try:
        spec = cli_embedder(store)
    except ValueError as exc:  # names the file
        raise CliError(str(exc)) from exc
    return {} if spec is None else {"embeddings": spec}


def _refuse_special_files(store: Path) -> None:
    """A FIFO, socket or device in place of the store's file, its WAL or shared memory is one line: SQLite
    would block forever reading a FIFO."""
    from pathrag.files import file_kind

    for name in (STORE_FILE, f"{STORE_FILE}-wal", f"{STORE_FILE}-shm"):
        kind = file_kind(store / name)
        if kind is not None:
            raise CliError(
                f"{store / name} is not a regular file ({kind}): a store's files are regular files; move it "
                "aside, or restore the store from a backup"
            )


def open_store(
    store: Path,
    *,
    create: bool = False,
    embedding_model: str | None = None,
    llm: pathrag.LanguageModel | None = None,
    config: IndexConfig | None = None,
    check_on_open: bool = True,
    extractor: str = "compact",
) -> PathRAGIndex:
    """Open (or, with ``create``, start) a store, refusing embeddings other than the ones it was built with
    (``check_on_open=False``: open a damaged store as it is, see :class:`~pathrag.errors.StoreDamaged`).

    Without ``create`` the store's embeddings are made on first use: commands that embed nothing (``stats``,
    most deletes) need no key, and one that does embed fails in one line (a write before changing anything).
    """
    meta = read_meta(store)
    if meta is None and not create:
        raise CliError(f"no pathrag store at {store} (build one with: pathrag index PATH --store {store})")
    if meta == {}:
        unknown = CliError(
            f"the store {store} does not say which embeddings it uses (a store made by the library "
            "with an embedder of its own: open it from Python)"
        )
        if create or embedding_model is not None:
            raise unknown

        def refuse() -> pathrag.Embedder:  # a command that embeds fails here; stats and the like work
            raise unknown

        from pathrag.vectors.embedders import LazyEmbedder

        return _open(store, llm, LazyEmbedder(refuse), config, None, check_on_open, extractor)
    if meta:  # an existing store: its own embeddings, and no others
        spec = meta["embeddings"]
        check_embeddings(store, meta, None if embedding_model is None else embedding_spec(embedding_model))
    else:
        spec = embedding_spec(embedding_model)
    return _open(store, llm, embedder(spec, store, lazy=not create), config, spec, check_on_open, extractor)


def check_embeddings(store: Path, meta: dict[str, Any] | None, given: str | None) -> None:
    """Refuse embeddings ``given`` (a spec; ``None``: none asked for) other than the ones ``meta`` records."""
    recorded = (meta or {}).get("embeddings")
    if recorded and given is not None and given != recorded:
        error = EmbedderMismatch(store, recorded, given)
        raise mismatch_error(error) from error


def mismatch_error(exc: EmbedderMismatch) -> CliError:
    """The one-line error for embeddings other than the store's, in words, saying how to switch."""
    return CliError(
        f"the store {exc.directory} was built with the embeddings {describe_embeddings(exc.recorded)}, not "
        f"{describe_embeddings(exc.given)}; use another --store to switch"
    )


def _open(
    store: Path,
    llm: pathrag.LanguageModel | None,
    vectors: pathrag.Embedder,
    config: IndexConfig | None,
    spec: str | None,
    check_on_open: bool = True,
    extractor: str = "compact",
) -> PathRAGIndex:
    # the one-line note of a JSON-format store's migration goes to stderr, whatever logging is set up
    note = logging.StreamHandler(sys.stderr)
    note.setFormatter(logging.Formatter("%(message)s"))
    note.setLevel(logging.WARNING)
    store_log = logging.getLogger("pathrag.sqlite.legacy")
    store_log.addHandler(note)
    try:  # the store records the embeddings (and refuses others) itself
        return PathRAGIndex(
            store,
            llm=llm,
            embedder=vectors,
            config=config,
            embedder_name=spec,
            check_on_open=check_on_open,
            extractor=extractor,
        )
    except EmbedderMismatch as exc:  # another process recorded other embeddings since read_meta
        raise mismatch_error(exc) from exc
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot open the store {store}: {one_line(str(exc))}") from exc
    except sqlite3.DatabaseError as exc:
        error = damaged_error(store, exc)
        if error is None:
            raise
        raise error from exc
    finally:
        store_log.removeHandler(note)


def write_meta(store: Path, spec: str) -> None:
    """Create the store (if needed) recording its embeddings."""
    try:
        write_store_info(store, embedder=spec, pathrag_version=pathrag.__version__)
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot write the store {store}: {one_line(str(exc))}") from exc


def locked_error(exc: StoreLocked) -> CliError:
    """The one-line error for a store another process is writing, saying how to wait from the command line."""
    return CliError(str(StoreLocked(exc.directory, exc.holder, exc.waited, remedy="add --wait SECONDS")))


def damaged_error(store: Path, exc: sqlite3.DatabaseError) -> CliError | None:
    """The one-line error for a store file SQLite finds damaged in the middle of a command ("database disk image
    is malformed" names no file); ``None`` for other database errors (a lock, a full disk, a read-only file)."""
    name = getattr(exc, "sqlite_errorname", None)  # Python 3.11+
    damaged = name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") if name else "malformed" in str(exc)
    if not damaged:
        return None
    return CliError(
        f"the store file {store / STORE_FILE} is damaged ({one_line(str(exc))}): restore it from a backup, or "
        "rebuild the store in a new directory"
    )


@contextmanager
def opened(store: Path, **kwargs: Any) -> Iterator[PathRAGIndex]:
    """:func:`open_store` for the length of a ``with`` block, then closed."""
    index = open_store(store, **kwargs)
    try:
        yield index
    except StoreLocked as exc:  # another process is writing: say how to wait from the command line
        raise locked_error(exc) from exc
    except StoreError as exc:  # a read-only or damaged store: the store's own words are the error
        raise CliError(one_line(str(exc))) from exc
    except sqlite3.DatabaseError as exc:
        error = damaged_error(store, exc)
        if error is None:
            raise
        raise error from exc
    finally:
        index.close()
