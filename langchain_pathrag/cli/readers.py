"""Reading the files given to ``pathrag index``: text, Markdown, HTML (as its visible text) and PDF (with
pypdf); FIFOs, sockets and devices are skipped with a note (reading a FIFO would block forever)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from pathrag.llm.tokens import count_tokens

from .errors import CliError, one_line

if TYPE_CHECKING:  # the core is imported when documents are read, not for ``pathrag --help``
    from pathrag import Document

__all__ = [
    "CHUNK_OVERLAP",
    "CHUNK_SIZE",
    "HTML_SUFFIXES",
    "SUFFIXES",
    "TEXT_SUFFIXES",
    "UnreadableFile",
    "collect_files",
    "html_to_text",
    "id_prefix_of",
    "read_documents",
    "read_file",
    "regular_file",
    "unsupported_note",
]

CHUNK_SIZE = 1200
"""Tokens per chunk by default: ``langchain_pathrag.indexer.DEFAULT_CHUNK_SIZE``, written again here so that the
command does not load LangChain before its first line (a test keeps the two equal)."""
CHUNK_OVERLAP = 100
"""Tokens shared by consecutive chunks by default: ``langchain_pathrag.indexer.DEFAULT_CHUNK_OVERLAP``."""

TEXT_SUFFIXES = {".txt", ".text", ".md", ".markdown"}
HTML_SUFFIXES = {".html", ".htm"}
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".pdf"}


class _HTMLText(HTMLParser):
    """Visible text of an HTML page, one line per block element; scripts and styles dropped."""

    BLOCKS = {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "header",
        "footer",
        "blockquote",
        "pre",
        "table",
        "ul",
        "ol",
        "title",
    }

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "noscript", "template"):
            self._skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "noscript", "template"):
            self._skip = max(0, self._skip - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)

    def text(self) -> str:
        lines = (" ".join(line.split()) for line in "".join(self.parts).splitlines())
        return "\n".join(line for line in lines if line)


def html_to_text(markup: str) -> str:
    """The visible text of an HTML document.

    >>> html_to_text("<h1>Lowmarrow</h1><script>x()</script><p>A harbour&nbsp;town.</p>")
    'Lowmarrow\\nA harbour town.'
    """
    parser = _HTMLText()
    parser.feed(markup)
    parser.close()
    return parser.text()


def unsupported_note(unsupported: Mapping[str, int]) -> str:
    """How many files of which unsupported types were left out, e.g. ``3 files of unsupported types (.csv 2,
    .json 1)``.

    >>> unsupported_note({".json": 1, ".csv": 2})
    '3 files of unsupported types (.csv 2, .json 1)'
    """
    total = sum(unsupported.values())
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(unsupported.items(), key=lambda item: (-item[1], item[0])))
    return f"{total} file{'s' * (total != 1)} of unsupported types ({kinds})"


def id_prefix_of(folder: Path, id_prefix: str | None) -> str:
    """What the ids of the files under ``folder`` start with: ``id_prefix`` if given, else the folder's name
    as given (``.`` is the current folder's name; the root has none).

    >>> id_prefix_of(Path("notes/2024"), None), id_prefix_of(Path("notes"), "work/"), id_prefix_of(Path("/"), None)
    ('2024', 'work', '')
    """
    prefix = Path(os.path.abspath(folder)).name if id_prefix is None else id_prefix
    return prefix.strip("/")


def collect_files(
    paths: Sequence[Path],
    skipped: list[str] | None = None,
    *,
    id_prefix: str | None = None,
    unsupported: dict[str, int] | None = None,
    earlier_ids: dict[str, str] | None = None,
) -> list[tuple[str, Path]]:
    """``(document id, file)`` for every supported regular file.

    The id of a file under a folder argument is ``FOLDER/relative path``, ``FOLDER`` being the folder's name
    (so two folders' ``notes.md`` do not collide) or ``id_prefix`` when given; ``""`` gives the bare
    relative paths, the ids of earlier versions. A file argument's id is its name (``id_prefix/name`` with a
    prefix). When the id differs from the bare relative path, ``earlier_ids`` (if given) maps it to that.

    A FIFO, socket or device with a supported name is skipped with a note (reading a FIFO would block
    forever); notes go to ``skipped`` if given, else to stderr. Files of other types under a folder are
    counted by suffix in ``unsupported`` if given, else summed up in one note; hidden files and folders
    (``.name``) are left out silently.
    """
    found: dict[str, Path] = {}
    notes: list[str] = [] if skipped is None else skipped
    others: dict[str, int] = {} if unsupported is None else unsupported
    for arg in paths:
        if not arg.exists():
            raise CliError(f"no such file or folder: {arg}")
        if arg.is_dir():
            files = _folder_files(arg, id_prefix_of(arg, id_prefix), notes, others, earlier_ids)
        else:
            files = _file_argument(arg, id_prefix, notes)
        _add_files(found, files)
    if skipped is None:
        for note in notes:
            typer.echo(f"skipped {note}", err=True)
    if unsupported is None and others:
        typer.echo(f"skipped {unsupported_note(others)}", err=True)
    return list(found.items())


def _folder_files(
    folder: Path, prefix: str, notes: list[str], others: dict[str, int], earlier_ids: dict[str, str] | None
) -> list[tuple[str, Path]]:
    """``(document id, file)`` for the supported regular files under ``folder`` (see :func:`collect_files`);
    other types counted by suffix in ``others``, special files noted in ``notes``."""
    files = []
    left_out: dict[str, int] = {}
    for p in sorted(folder.rglob("*")):
        relative = p.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if p.suffix.lower() not in SUFFIXES:
            if p.is_file():
                kind = p.suffix.lower() or "(no suffix)"
                left_out[kind] = left_out.get(kind, 0) + 1
        elif p.is_file():  # follows symbolic links; true only for a regular file
            doc_id = f"{prefix}/{relative.as_posix()}" if prefix else relative.as_posix()
            files.append((doc_id, p))
            if earlier_ids is not None and doc_id != relative.as_posix():
                earlier_ids[doc_id] = relative.as_posix()
        elif not p.is_dir():
            notes.append(f"{p}: not a regular file")
    if not files:
        also = f" ({unsupported_note(left_out)})" if left_out else ""
        raise CliError(f"no text, Markdown, HTML or PDF files under {folder}{also}")
    for kind, n in left_out.items():
        others[kind] = others.get(kind, 0) + n
    return files


def _file_argument(path: Path, id_prefix: str | None, notes: list[str]) -> list[tuple[str, Path]]:
    """A file given by name, with its id; none for a special file with a supported name (noted in ``notes``)."""
    if path.suffix.lower() not in SUFFIXES:
        raise CliError(f"unsupported file type: {path} (supported: {', '.join(sorted(SUFFIXES))})")
    if not path.is_file():
        notes.append(f"{path}: not a regular file")
        return []
    prefix = (id_prefix or "").strip("/")
    return [(f"{prefix}/{path.name}" if prefix else path.name, path)]


def _add_files(found: dict[str, Path], files: list[tuple[str, Path]]) -> None:
    """Add ``files`` to ``found`` by id, refusing two different files under one id."""
    for doc_id, path in files:
        if doc_id in found and found[doc_id].resolve() != path.resolve():
            raise CliError(
                f"{found[doc_id]} and {path} would both get the document id {doc_id!r}; index them in separate "
                "runs or with different --id-prefix"
            )
        found[doc_id] = path


def regular_file(path: Path) -> Path:
    """``path``, after refusing a FIFO, socket or device given where a file is read (reading a FIFO would block
    forever): ``PATH is not a regular file (a FIFO): give a file``. Every command that reads a named file
    calls this first; a missing path passes (the read names it)."""
    from pathrag.files import NotARegularFile, check_regular_file

    try:
        return check_regular_file(path)
    except NotARegularFile as exc:
        raise CliError(str(exc)) from None


class UnreadableFile(CliError):
    """A file that cannot be read: ``cannot read PATH: REASON``."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"cannot read {path}: {reason}")
        self.path = path
        self.reason = reason


def read_file(path: Path) -> str:
    """The text of one file. Raises :class:`ImportError` for a PDF when pypdf is missing, and
    :class:`UnreadableFile` for a file that is not UTF-8, not readable (permissions) or a broken PDF."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        from pypdf import PdfReader  # optional: the caller skips PDFs without it
    try:
        if suffix == ".pdf":
            return "\n\n".join(page.extract_text() or "" for page in PdfReader(path).pages)
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except Exception as exc:  # permissions, broken PDFs: name the file, not the parser's internals
        raise UnreadableFile(path, one_line(getattr(exc, "strerror", None) or str(exc))) from exc
    return html_to_text(text) if suffix in HTML_SUFFIXES else text


def file_metadata(path: Path, text: str) -> tuple[dict[str, Any], str | None]:
    """A file's metadata: ``source`` (its path) and the keys of its front matter (see
    :mod:`~langchain_pathrag.cli.front_matter`; ``source`` is always the path), and why the front matter was
    left out, if it was.

    >>> file_metadata(Path("notes/log.md"), "---\\ntitle: Log\\n---\\nText.")
    ({'title': 'Log', 'source': 'notes/log.md'}, None)
    """
    from pathrag.index.values import json_metadata

    from .front_matter import FrontMatterError, front_matter

    base = {"source": str(path)}
    try:
        found = front_matter(text)
        # YAML reads dates as dates: kept as their ISO text, as JSON holds them
        return (json_metadata(json.loads(json.dumps({**found, **base}, default=str))), None) if found else (base, None)
    except (FrontMatterError, ValueError) as exc:
        return base, f"its front matter is not kept: {exc}"


def read_documents(
    files: Sequence[tuple[str, Path]], chunk_size: int = CHUNK_SIZE, chunk_overlap: int = CHUNK_OVERLAP
) -> list[Document]:
    """Read and split every file of :func:`collect_files` into chunks of ``chunk_size`` tokens overlapping by
    ``chunk_overlap``. A file without text, or that cannot be read, is skipped with one line on stderr;
    nothing left to index is an error."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from pathrag import Document

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, length_function=count_tokens
    )
    docs: list[Document] = []
    skipped: list[str] = []
    for doc_id, path in files:
        try:
            text = read_file(path)
            chunks = splitter.split_text(text)
        except ImportError:
            skipped.append(f"{path}: install pypdf to index PDF files")
            continue
        except UnreadableFile as exc:
            if len(files) == 1:
                raise  # the only file: its own error
            skipped.append(f"{path}: cannot read it: {exc.reason}")
            continue
        if chunks:
            metadata, note = file_metadata(path, text)
            if note:
                typer.echo(f"note: {path}: {note}; indexed without it", err=True)
            docs.append(Document(id=doc_id, chunks=tuple(chunks), metadata=metadata))
        else:
            skipped.append(f"{path}: no text")
    if not docs:
        raise CliError(one_line("nothing to index: " + "; ".join(skipped)))
    for note in skipped:
        typer.echo(f"skipped {note}", err=True)
    return docs
