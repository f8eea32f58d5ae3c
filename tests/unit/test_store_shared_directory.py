"""A store in a directory others can write, and readers beside writers (issue 39 rows 1 and 5, items 1 and 4):
the lock file is never followed through a symbolic link nor written through a hard link, the store's files
follow the user's umask, a reader takes no lock (so it never refuses a writer), and the WAL check never
calls a store damaged because a writer committed while it read."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pathrag.errors import StoreError
from pathrag.sqlite import LOCK_FILE, STORE_FILE, SQLiteStore, WriterLock, read_store_info
from pathrag.sqlite import wal as wal_module

from .test_store import DOCS
from .test_store_damage_on_open import open_index

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="a POSIX file system"),
]

VICTIM = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA someone@host\n"


@pytest.fixture(autouse=True)
def no_tokenizer_download(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATHRAG_TOKENIZER", "approximate")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    directory = tmp_path / "kb"
    index = open_index(directory)
    index.insert(DOCS[:1])
    index.close()
    return directory


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_lock_file_made_a_link_to_someone_elses_file_is_refused_and_the_file_left_as_it_was(
    store: Path, tmp_path: Path, link: str
) -> None:
    victim = tmp_path / "authorized_keys"
    victim.write_text(VICTIM)
    (store / LOCK_FILE).unlink()
    if link == "symbolic":
        (store / LOCK_FILE).symlink_to(victim)
    else:
        os.link(victim, store / LOCK_FILE)
    index = open_index(store)
    with pytest.raises(StoreError) as caught:
        index.insert(DOCS[1:2])
    index.close()
    message = str(caught.value)
    assert "\n" not in message and str(store / LOCK_FILE) in message, message
    assert ("symbolic link" if link == "symbolic" else "hard link") in message, message
    assert victim.read_text() == VICTIM
    assert WriterLock(store).holder() != str(os.getpid())  # and nothing named this process through it


def test_the_lock_file_is_written_over_never_truncated_and_names_the_last_writer(store: Path) -> None:
    lock = store / LOCK_FILE
    lock.write_text("1\n" + "#" * 100)  # longer than what a writer writes
    before = os.stat(lock).st_ino
    writer = WriterLock(store)
    writer.acquire()
    try:
        assert writer.holder() == str(os.getpid())
        assert os.stat(lock).st_ino == before  # the same file, written in place
    finally:
        writer.release()
    assert lock.read_text().startswith(f"{os.getpid()} ") and lock.stat().st_size == 102


def test_a_fifo_behind_a_symbolic_lock_file_never_blocks_a_holder_lookup(store: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (store / LOCK_FILE).unlink()
    (store / LOCK_FILE).symlink_to(fifo)
    found: list[str] = []
    lookup = threading.Thread(target=lambda: found.append(WriterLock(store).holder()), daemon=True)
    lookup.start()
    lookup.join(10)  # opening the FIFO to read it would block forever
    assert found == ["?"]


def test_a_stores_files_follow_the_users_umask(tmp_path: Path) -> None:
    old = os.umask(0o002)  # a group that shares its stores
    try:
        index = open_index(tmp_path / "kb")
        index.insert(DOCS[:2])
        index.close()
        index = open_index(tmp_path / "kb")  # left open: its -wal and -shm files stay
        index.insert(DOCS[2:3])
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "kb").iterdir()}
        index.close()
    finally:
        os.umask(old)
    assert {STORE_FILE, LOCK_FILE} <= set(modes)
    assert all(mode & 0o060 == 0o060 for mode in modes.values()), modes  # SQLite alone makes 0644


def test_a_reader_opening_a_store_takes_no_lock_so_it_never_refuses_a_writer(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fcntl = pytest.importorskip("fcntl")
    writer = SQLiteStore(store)  # left open: the store keeps its WAL, which a reader's open then checks
    with writer.transaction():
        writer.set_meta({"probe": "1"})
    assert (store / f"{STORE_FILE}-wal").exists()
    taken: list[object] = []
    real = fcntl.flock
    monkeypatch.setattr(fcntl, "flock", lambda fd, op: (taken.append(op), real(fd, op))[1])
    reader = SQLiteStore(store)
    assert reader.meta()["probe"] == "1"
    assert (read_store_info(store) or {})["probe"] == "1"
    reader.close()
    writer.close()
    assert taken == []  # a lock for an instant is enough to refuse a writer that does not wait


def test_a_commit_landing_while_the_wal_is_checked_is_never_called_damage(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of issue 39 row 1, made certain: a writer commits between the check's read of the WAL's
    frames and its read of the ``-shm`` count, every time it looks."""
    writer = SQLiteStore(store)
    with writer.transaction():
        writer.set_meta({"commit": "0"})
    commits = iter(range(1, 100))
    real = wal_module._chain

    def chain_then_commit(*args: object, **kwargs: object) -> tuple[int, int]:
        found = real(*args, **kwargs)  # type: ignore[arg-type]
        with writer.transaction():
            writer.set_meta({"commit": str(next(commits))})
        return found

    monkeypatch.setattr(wal_module, "_chain", chain_then_commit)
    for _ in range(5):
        reader = SQLiteStore(store)  # refused as "damaged" before the fix
        reader.close()
        read_store_info(store)
    writer.close()
    assert int(SQLiteStore(store).meta()["commit"]) >= 5  # the commits happened, and none was lost


def test_damage_seen_while_nothing_changes_is_still_reported(store: Path) -> None:
    """The check still finds a damaged WAL on a quiet store (the rest of its cases: test_store_hostile.py)."""
    writer = SQLiteStore(store)
    for n in range(3):
        with writer.transaction():
            writer.set_meta({"commit": str(n)})
    wal = store / f"{STORE_FILE}-wal"
    data = bytearray(wal.read_bytes())
    data[32 + 24 + 100 : 32 + 24 + 164] = os.urandom(64)  # the first frame: every commit after it is lost
    wal.write_bytes(data)
    try:
        with pytest.raises(StoreError, match="would be dropped"):
            read_store_info(store)
    finally:
        writer.close()


def test_frames_committed_after_a_check_are_checked_at_the_next_open(store: Path) -> None:
    """A process checks again only what was added since the last commit it found whole: damage there is
    still found (the check of the earlier frames is not repeated)."""
    writer = SQLiteStore(store)
    with writer.transaction():
        writer.set_meta({"commit": "0"})
    read_store_info(store)  # checked whole, up to this commit
    wal = store / f"{STORE_FILE}-wal"
    checked = len(wal.read_bytes())
    for n in range(1, 4):
        with writer.transaction():
            writer.set_meta({"commit": str(n), "pad": "x" * 40000})
    data = bytearray(wal.read_bytes())
    assert len(data) > checked + 32768
    data[checked + 24 + 100 : checked + 24 + 164] = os.urandom(64)  # the first frame after the check
    wal.write_bytes(data)
    try:
        with pytest.raises(StoreError, match="would be dropped"):
            read_store_info(store)
    finally:
        writer.close()


def test_the_hostile_files_benchmark_runs_and_reports_the_lock_file_left_as_it_was() -> None:
    script = Path(__file__).parents[2] / "benchmarks" / "hostile_files.py"
    out = subprocess.run(
        [sys.executable, str(script), "--probes", "symlink"], capture_output=True, text=True, check=True
    ).stdout
    rows = [line for line in out.splitlines() if line.startswith("| pathrag.lock")]
    assert len(rows) == 1 and rows[0].endswith("| 1 | refused: StoreError; the file left as it was |"), out
