"""Reading the files given to ``pathrag index``: text, Markdown, HTML (as its visible text) and PDF (with
pypdf); FIFOs, sockets and devices are skipped with a note (reading a FIFO would block forever)."""

from __future__ import annotations

from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path

import typer

from pathrag import Document
from pathrag.tokens import count_tokens

from .errors import CliError, one_line

__all__ = ["HTML_SUFFIXES", "SUFFIXES", "TEXT_SUFFIXES", "collect_files", "html_to_text", "read_documents", "read_file"]

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


def collect_files(paths: Sequence[Path], skipped: list[str] | None = None) -> list[tuple[str, Path]]:
    """``(document id, file)`` for every supported regular file; ids are paths relative to the argument given.

    A FIFO, socket or device with a supported name is skipped with a note (reading a FIFO would block
    forever); notes go to ``skipped`` if given, else to stderr.
    """
    found: dict[str, Path] = {}
    notes: list[str] = [] if skipped is None else skipped
    for arg in paths:
        if not arg.exists():
            raise CliError(f"no such file or folder: {arg}")
        if arg.is_dir():
            files = []
            for p in sorted(arg.rglob("*")):
                if p.suffix.lower() not in SUFFIXES or any(part.startswith(".") for part in p.relative_to(arg).parts):
                    continue
                if p.is_file():  # follows symbolic links; true only for a regular file
                    files.append((p.relative_to(arg).as_posix(), p))
                elif not p.is_dir():
                    notes.append(f"{p}: not a regular file")
            if not files:
                raise CliError(f"no text, Markdown, HTML or PDF files under {arg}")
        elif not arg.is_file() and arg.suffix.lower() in SUFFIXES:
            notes.append(f"{arg}: not a regular file")
            continue
        elif arg.suffix.lower() in SUFFIXES:
            files = [(arg.name, arg)]
        else:
            raise CliError(f"unsupported file type: {arg} (supported: {', '.join(sorted(SUFFIXES))})")
        for doc_id, path in files:
            if doc_id in found and found[doc_id].resolve() != path.resolve():
                raise CliError(
                    f"{found[doc_id]} and {path} would both get the document id {doc_id!r}; index them in separate runs"
                )
            found[doc_id] = path
    if skipped is None:
        for note in notes:
            typer.echo(f"skipped {note}", err=True)
    return list(found.items())


def read_file(path: Path) -> str:
    """The text of one file. Raises :class:`ImportError` for a PDF when pypdf is missing."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        from pypdf import PdfReader  # optional: the caller skips PDFs without it
    try:
        if suffix == ".pdf":
            return "\n\n".join(page.extract_text() or "" for page in PdfReader(path).pages)
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CliError(f"cannot read {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except Exception as exc:  # permissions, broken PDFs: name the file, not the parser's internals
        raise CliError(f"cannot read {path}: {one_line(getattr(exc, 'strerror', None) or str(exc))}") from exc
    return html_to_text(text) if suffix in HTML_SUFFIXES else text


def read_documents(paths: Sequence[Path]) -> list[Document]:
    """Read and split every file; files without text are skipped (an error if nothing is left)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from langchain_pathrag.indexer import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=DEFAULT_CHUNK_SIZE, chunk_overlap=DEFAULT_CHUNK_OVERLAP, length_function=count_tokens
    )
    docs: list[Document] = []
    skipped: list[str] = []
    for doc_id, path in collect_files(paths, skipped):
        try:
            chunks = splitter.split_text(read_file(path))
        except ImportError:
            skipped.append(f"{path}: install pypdf to index PDF files")
            continue
        if chunks:
            docs.append(Document(id=doc_id, chunks=tuple(chunks), metadata={"source": str(path)}))
        else:
            skipped.append(f"{path}: no text")
    if not docs:
        raise CliError(one_line("nothing to index: " + "; ".join(skipped)))
    for note in skipped:
        typer.echo(f"skipped {note}", err=True)
    return docs
