"""The saved files of a big vector space: HNSW graphs in segments, listed by a checksummed manifest.

A space's graphs are saved beside the store as ``pathrag-<space>.<seq>.<n>.usearch`` (segment ``n``), listed
by ``pathrag-<space>.<seq>.usearch.json``, where ``seq`` is the last vector-log entry they reflect (see
:mod:`pathrag.sqlite.ann`). usearch trusts what it maps (8 garbled bytes in a graph's links crash the
process), so nothing is mapped unchecked: a manifest lists every segment with its size and CRC-32 and carries
a CRC-32 of its own; a segment is read through once and the very bytes checked are mapped; only regular
files, never through a link, of the sizes listed (a manifest of at most :data:`MANIFEST_BYTES`) are read.
:func:`check_saved` reports what fails those checks.
"""

from __future__ import annotations

import functools
import json
import logging
import mmap
import os
import re
import threading
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .keyed import int8_scale
from .lock import open_safely

__all__ = [
    "MANIFEST_BYTES",
    "MANIFEST_FORMAT",
    "Segment",
    "check_saved",
    "crc32_of",
    "file_crc",
    "manifest_bytes",
    "manifest_path",
    "read_manifest",
    "saved_cosines",
    "saved_files",
    "saved_indexes",
    "usearch_module",
    "write_aside",
]

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20  # bytes read at a time to check a saved file
MANIFEST_BYTES = 1 << 22
"""The largest manifest read (4 MiB): one lists a segment in under 100 bytes, and a space of 10^9 vectors has
7,630 of them; anything bigger (a device, a runaway file) is not a manifest."""
MANIFEST_FORMAT = 2
"""The manifests this version writes and reads: every segment with its size and CRC-32, and a CRC-32 of the
manifest itself. Those of earlier versions (no checksums) are rebuilt from the rows once."""


@functools.cache  # asked on every search of a big space: tried, and logged, once per process
def usearch_module() -> Any | None:
    """The usearch index module, or ``None`` where it cannot load (every space is then searched exactly)."""
    try:
        from usearch import index
    except ImportError as exc:  # a platform without its wheel, say
        logger.info("usearch cannot be imported (%s): every vector space is searched exactly", exc)
        return None
    return index


class Segment:
    """One saved HNSW graph: memory-mapped from ``path`` (of ``size`` bytes and CRC-32 ``crc``, as its
    manifest lists it), or ``held`` in memory (written by this process and not yet saved, or taking the
    next additions)."""

    __slots__ = ("crc", "held", "index", "path", "size")

    def __init__(self, index: Any, path: Path | None, *, held: bool, size: int = 0, crc: int = 0) -> None:
        self.index, self.path, self.held, self.size, self.crc = index, path, held, size, crc

    @classmethod
    def mapped(cls, path: Path, size: int, crc: int) -> Segment:
        """The segment saved at ``path``, memory-mapped once its bytes are checked (usearch must be
        importable): a regular file, not a link, of ``size`` bytes whose CRC-32 is ``crc``. usearch trusts
        the graph it maps (8 bytes garbled in its links crash the process), so nothing unchecked is mapped;
        the bytes checked are those mapped (one descriptor: a file renamed over it meanwhile changes
        nothing). Raises ``ValueError`` (or ``OSError``) for anything else."""
        usearch = usearch_module()
        assert usearch is not None
        fd = open_safely(path, os.O_RDONLY)
        try:
            found = os.fstat(fd).st_size
            if found != size:
                raise ValueError(f"{path.name} holds {found:,} bytes where its manifest says {size:,}")
            if crc32_of(fd, size) != crc:
                raise ValueError(f"{path.name} fails its checksum")
            mapping = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        index = usearch.Index.restore(mapping, view=True)
        if index is None:
            raise ValueError(f"{path.name} is not a usearch index")
        # usearch reads the mapping without holding it: it must live exactly as long as the index
        index._pathrag_mapping = mapping
        return cls(index, path, held=False, size=size, crc=crc)

    def copied(self, expansion_add: int) -> Segment:
        """An in-memory copy of this segment to change (searches may be walking this one meanwhile), adding
        with a search ``expansion_add`` wide."""
        copy = self.index.copy()
        copy.expansion_add = expansion_add  # a build setting, not saved in the file
        return Segment(copy, self.path, held=True, size=self.size, crc=self.crc)

    def holding(self, keys: np.ndarray) -> np.ndarray:
        """Those of ``keys`` (uint64) this segment holds."""
        found: np.ndarray = keys[np.asarray(self.index.contains(keys), dtype=bool)]
        return found


def crc32_of(fd: int, size: int) -> int:
    """The CRC-32 of the first ``size`` bytes of the open file ``fd``, read a mebibyte at a time."""
    crc, done, view = 0, 0, memoryview(bytearray(_CHUNK))
    with open(fd, "rb", buffering=0, closefd=False) as handle:  # the caller's descriptor, from the start
        handle.seek(0)
        while done < size:
            got = handle.readinto(view[: min(_CHUNK, size - done)])
            if not got:
                raise ValueError("the file is shorter than it says")
            crc = zlib.crc32(view[:got], crc)
            done += got
    return crc


def saved_cosines(index: Any, keys: Sequence[int], vectors: np.ndarray) -> np.ndarray:
    """The cosine of each of ``vectors`` with the saved graph's copy of the vector under the same-place key."""
    saved = np.asarray(index.get(np.asarray(keys, dtype=np.uint64), dtype="f32"), dtype="<f4")
    saved = saved.reshape(len(keys), -1)
    norms = np.linalg.norm(saved, axis=1) * np.linalg.norm(vectors, axis=1)
    cosines: np.ndarray = np.einsum("ij,ij->i", saved, vectors) / np.maximum(norms, 1e-12)
    return cosines


def write_aside(path: Path, write: Callable[[Path], object]) -> None:
    """``write(tmp)`` to a temporary file beside ``path``, then rename it into place (never a half file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def manifest_path(directory: Path, space: str, seq: int) -> Path:
    """The manifest of ``space``'s files written at log position ``seq``."""
    return directory / f"pathrag-{space}.{seq}.usearch.json"


def manifest_bytes(scale: float, entries: list[list[Any]]) -> bytes:
    """A manifest: the segments' ``[name, size, crc]``, the int8 scale, and a CRC-32 of those."""
    body = {"format": MANIFEST_FORMAT, "scale": scale, "segments": entries}
    return json.dumps({**body, "crc32": zlib.crc32(_canonical(body))}).encode()


def _canonical(body: Any) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (not a link, not a FIFO or device), refused beyond ``limit``."""
    fd = open_safely(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise ValueError(f"{size:,} bytes, more than a manifest ever holds")
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError("more bytes than a manifest ever holds")
    return data


def read_manifest(manifest: Path, space: str, seq: int, ndim: int) -> tuple[list[tuple[str, int, int]], float]:
    """The segment files a manifest (written at log position ``seq``) lists, each with its size and CRC-32,
    and the scale of their int8 copies. It is read, not trusted: a regular file of sane size, its own
    checksum right, the scale the store's rule gives ``ndim`` (:func:`int8_scale`), and the segments this
    space's files named in order (the n-th named ``.n.``, none written after the manifest): a name twice or
    a name of another space's is refused. ``ValueError`` (or ``OSError``) for anything else."""
    content: Any = json.loads(_read_bounded(manifest, MANIFEST_BYTES))
    if not isinstance(content, dict) or "crc32" not in content:
        raise ValueError("written by an earlier version, without checksums")
    body = {key: value for key, value in content.items() if key != "crc32"}
    if set(body) != {"format", "scale", "segments"} or body["format"] != MANIFEST_FORMAT:
        raise ValueError(f"not a manifest of format {MANIFEST_FORMAT}")
    if content["crc32"] != zlib.crc32(_canonical(body)):
        raise ValueError("the manifest fails its checksum")
    if body["scale"] != int8_scale(ndim):
        raise ValueError(f"an int8 scale of {body['scale']!r} where the store's rule gives {int8_scale(ndim)!r}")
    segments = body["segments"]
    name = re.compile(rf"pathrag-{re.escape(space)}\.(\d+)\.(\d+)\.usearch")
    entries: list[tuple[str, int, int]] = []
    for n, entry in enumerate(segments if isinstance(segments, list) else [None]):
        found = name.fullmatch(entry[0]) if _is_entry(entry) else None
        if found is None or int(found.group(1)) > seq or int(found.group(2)) != n:
            raise ValueError(f"segment {n} is not this space's segment {n}: {entry!r}")
        entries.append((entry[0], entry[1], entry[2]))
    if not entries:
        raise ValueError("no segment listed")
    return entries, body["scale"]


def _is_entry(entry: Any) -> bool:
    """Whether a manifest's ``entry`` is ``[name, size, crc]`` with a positive size and a 32-bit crc."""
    if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
        return False
    size, crc = entry[1], entry[2]
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (size, crc))
    return ints and size > 0 and 0 <= crc < 1 << 32


def file_crc(path: Path) -> tuple[int, int]:
    """The size and CRC-32 of the regular file ``path``."""
    fd = open_safely(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        return size, crc32_of(fd, size)
    finally:
        os.close(fd)


def saved_files(directory: Path, space: str) -> list[tuple[int, Path]]:
    """Every saved file of ``space`` (manifests, segments, the single files of earlier versions, and the
    temporary files of writes that never finished), with the log position each was written at."""
    pattern = re.compile(rf"\.?pathrag-{re.escape(space)}\.(\d+)(?:\.\d+)?\.usearch(?:\.json)?(?:\.[\w-]+\.tmp)?")
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [(int(m.group(1)), directory / name) for name in names if (m := pattern.fullmatch(name))]


def saved_indexes(directory: Path, space: str) -> list[tuple[int, Path]]:
    """The saved indexes (manifests) of ``space`` in ``directory``, newest first, with the log position of
    each."""
    found = [(seq, path) for seq, path in saved_files(directory, space) if path.name.endswith(".json")]
    return sorted(found, reverse=True)


def check_saved(directory: Path, space: str, ndim: int) -> list[str]:
    """What is wrong with the saved files of ``space`` in ``directory``: every manifest and every segment
    it lists, read in full (their checksums, sizes and kinds), one line per manifest that fails. A search
    never uses such files: it rebuilds them from the rows."""
    problems = []
    for seq, manifest in saved_indexes(directory, space):
        try:
            entries, _ = read_manifest(manifest, space, seq, ndim)
            for name, size, crc in entries:
                if usearch_module() is not None:
                    Segment.mapped(directory / name, size, crc)
                elif file_crc(directory / name) != (size, crc):
                    raise ValueError(f"{name} fails its checksum")
        except Exception as exc:
            problems.append(
                f"{manifest.name}: {exc} (the {space} search index is rebuilt from the rows at its next use)"
            )
    return problems
