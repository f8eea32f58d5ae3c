"""Hostile conditions for the store file (issue 24, rows 1-3): a damaged WAL frame, a read-only store, a
first write that fails.

WAL stores are made the way a writer killed before a checkpoint leaves them (``kill -9`` in a forked
process: every commit still in ``pathrag.sqlite-wal``, its ``-shm`` index beside it).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pathrag.errors import StoreError
from pathrag.sqlite import STORE_FILE, SQLiteStore, read_store_info

from .. import reliability_kit as kit
from ..fakes import ScriptedLLM

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="writers run in forked processes"),
]

ROOT = Path(__file__).parents[2]
WAL = STORE_FILE + "-wal"


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A store whose every commit is in its WAL (a writer killed before a checkpoint), and its contents."""
    base = kit.sqlite_store_with_wal(tmp_path_factory.mktemp("wal") / "killed")
    expected = kit._library_open(kit._copy(base, base.parent / "expected"))[1]
    assert len(expected["documents"]) == 6
    return base, expected


def frames(wal: Path) -> tuple[int, int]:
    data = wal.read_bytes()
    size = 24 + int.from_bytes(data[8:12], "big")
    return size, (len(data) - 32) // size


def damaged(killed: tuple[Path, dict], tmp_path: Path, change) -> Path:
    trial = kit._copy(killed[0], tmp_path / "trial")
    wal = trial / WAL
    size, count = frames(wal)
    data = bytearray(wal.read_bytes())
    wal.write_bytes(change(data, size, count))
    return trial


def garble(at: int):
    def change(data: bytearray, size: int, count: int) -> bytes:
        start = 32 + (at % count) * size + 24 + 1000
        data[start : start + 64] = os.urandom(64)
        return bytes(data)

    return change


def flip(at: int):
    def change(data: bytearray, size: int, count: int) -> bytes:
        data[32 + (at % count) * size + 24 + 5000] ^= 0x10
        return bytes(data)

    return change


def cut(fraction: float):
    return lambda data, size, count: bytes(data[: int(len(data) * fraction)])


CASES = {
    "64 bytes garbled in the first frame (a store made inside the WAL)": garble(0),
    "64 bytes garbled in a middle frame": garble(7),
    "64 bytes garbled in the last frame (the last commit)": garble(-1),
    "one byte flipped in a middle frame": flip(5),
    "one byte flipped in the last frame": flip(-1),
    "WAL cut in half": cut(0.5),
    "WAL cut inside its last frame": lambda data, size, count: bytes(data[: len(data) - size // 2]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_wal_frame_is_a_one_line_error_naming_the_file_never_a_shorter_store(
    killed: tuple[Path, dict], tmp_path: Path, case: str
) -> None:
    trial = damaged(killed, tmp_path, CASES[case])
    with pytest.raises(StoreError) as caught:
        kit._library_open(trial)
    message = str(caught.value)
    assert "\n" not in message and str(trial / WAL) in message and "would be dropped" in message, message
    with pytest.raises(StoreError, match="would be dropped"):  # the CLI's metadata read says the same
        read_store_info(trial)


def test_the_error_says_what_would_be_lost(killed: tuple[Path, dict], tmp_path: Path) -> None:
    trial = damaged(killed, tmp_path, garble(0))
    with pytest.raises(StoreError, match=r"frame 1 of \d+ fails its checksum: the \d+ committed transactions after"):
        SQLiteStore(trial)


def test_an_undamaged_wal_and_a_killed_writers_torn_tail_open_with_every_commit(
    killed: tuple[Path, dict], tmp_path: Path
) -> None:
    base, expected = killed
    assert kit._library_open(kit._copy(base, tmp_path / "whole")) == ([], expected)

    def torn(data: bytearray, size: int, count: int) -> bytes:
        # an unfinished transaction after the last commit: a frame of this WAL (its salts) whose checksum
        # does not chain, then half a frame, as a writer killed while appending leaves them
        last = bytearray(data[32 + (count - 1) * size : 32 + count * size])
        last[4:8] = b"\0\0\0\0"  # not a commit frame
        last[5000] ^= 1
        return bytes(data) + bytes(last) + bytes(last[: size // 2])

    assert kit._library_open(damaged(killed, tmp_path, torn)) == ([], expected)


def test_a_wal_check_skips_old_frames_of_a_reused_wal(tmp_path: Path) -> None:
    """After a checkpoint the WAL is written again from its start with new salts: the old frames past the
    new ones are not damage (many small commits, checkpointed every few pages, then kill -9)."""
    code = textwrap.dedent(
        f"""
        import os, signal, sqlite3
        conn = sqlite3.connect({str(tmp_path / STORE_FILE)!r}, isolation_level=None)
        conn.execute("PRAGMA page_size = 32768"); conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 7")
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        for i in range(60):
            conn.execute("INSERT INTO meta VALUES (?, ?)", (str(i), "x" * (i * 997 % 70000)))
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    subprocess.run([sys.executable, "-c", code], check=False)
    assert (tmp_path / WAL).exists()
    assert len(read_store_info(tmp_path) or {}) == 60


# -- read-only stores --------------------------------------------------------------------------------


def _can_mount_read_only(directory: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = f"mount --bind {directory} {directory} && mount -o remount,ro,bind {directory}"
    return subprocess.run(["unshare", "-m", "sh", "-c", probe], capture_output=True, check=False).returncode == 0


READ_ONLY_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from pathlib import Path
from tests import reliability_kit as kit
index = kit.open_index(Path({store!r}))
print("documents", len(index.documents), "check", index.check(), "stats", index.stats()["documents"])
print("retrieved", len(index.retrieve(kit.QUERIES[0], keyword_llm=False).items))
try:
    index.insert([kit.doc(99)])
except Exception as exc:
    print("write:", type(exc).__name__, exc)
"""


@pytest.mark.parametrize("wal", [False, True], ids=["closed store", "writer killed before a checkpoint"])
def test_a_store_on_a_read_only_mount_answers_reads_and_refuses_writes_in_one_line(
    tmp_path: Path, killed: tuple[Path, dict], wal: bool
) -> None:
    """The real condition (a read-only bind mount in a mount namespace of its own: EROFS even for root),
    where ``unshare`` may mount; skipped elsewhere."""
    if not _can_mount_read_only(tmp_path):
        pytest.skip("no mount namespace here: cannot make a read-only mount")
    store = tmp_path / "kb"
    if wal:
        kit._copy(killed[0], store)
    else:
        index = kit.open_index(store)
        index.insert([kit.doc(i) for i in range(0, 12, 2)])
        index.close()
    before = sorted(p.name for p in store.iterdir())
    script = READ_ONLY_SCRIPT.format(root=str(ROOT), store=str(store))
    command = f"mount --bind {tmp_path} {tmp_path} && mount -o remount,ro,bind {tmp_path} && exec {sys.executable} -"
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", command], input=script, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "documents 6 check [] stats 6" in result.stdout, result.stdout + result.stderr
    assert "retrieved 0" not in result.stdout
    assert f"write: StoreError the store {store} is read-only: cannot write" in result.stdout
    assert sorted(p.name for p in store.iterdir()) == before


def test_a_store_seen_as_read_only_is_opened_read_only_and_makes_no_file(tmp_path: Path, monkeypatch) -> None:
    """The same code path reachable as root without a mount: ``os.access`` says the directory and file
    cannot be written (as on a read-only mount). This proves the open mode (``mode=ro&immutable=1``: no
    ``-wal``/``-shm`` made, SQLite itself refuses writes) and the messages, not the operating system's
    refusal: the test above does that."""
    store = tmp_path / "kb"
    index = kit.open_index(store)
    index.insert([kit.doc(i) for i in range(0, 8, 2)])
    expected = kit.contents(index)
    index.close()
    before = sorted(p.name for p in store.iterdir())
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if mode & os.W_OK else real_access(p, mode, **kw))
    llm = ScriptedLLM()
    index = kit.open_index(store, llm)
    assert index._backend.store.read_only  # type: ignore[union-attr]
    assert kit.contents(index) == expected and index.check() == []
    assert index.retrieve(kit.QUERIES[0], keyword_llm=False).items
    assert sorted(p.name for p in store.iterdir()) == before  # not even a -shm file
    with pytest.raises(StoreError, match=f"^the store {store} is read-only: cannot write$"):
        index.insert([kit.doc(99)])
    assert llm.calls == 0  # refused before any extraction
    with pytest.raises(StoreError, match="read-only: cannot write"):
        index.delete(["d0"])
    with pytest.raises(StoreError, match="read-only: cannot write"):  # SQLite refuses a write on it too
        index._backend.store.execute("DELETE FROM documents")  # type: ignore[union-attr]
    index.close()
    monkeypatch.setattr(os, "access", real_access)
    assert kit.contents(kit.open_index(store)) == expected


# -- a failed first write ----------------------------------------------------------------------------


def test_a_store_whose_creation_fails_leaves_nothing_and_the_next_attempt_works(tmp_path: Path, monkeypatch) -> None:
    from pathrag.sqlite import store as store_module

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    directory = tmp_path / "kb"
    monkeypatch.setattr(store_module.os, "link", full)
    with pytest.raises(StoreError, match="No space left on device") as caught:
        kit.open_index(directory)
    assert "\n" not in str(caught.value) and str(directory / STORE_FILE) in str(caught.value)
    assert list(directory.iterdir()) == []  # nothing half made: no store, no temporary file
    monkeypatch.undo()
    index = kit.open_index(directory)
    index.insert([kit.doc(1)])
    assert len(index.documents) == 1
    index.close()
    assert read_store_info(directory)["embedder"]  # type: ignore[index]


def _cli(*args: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    """``pathrag ARGS`` in a process of its own; with ``limit``, files it writes cannot grow past that many
    bytes (RLIMIT_FSIZE: every write beyond fails, as on a full disk)."""
    prelude = (
        f"import resource, signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
        if limit
        else ""
    )
    code = (
        prelude + f"import sys; sys.argv = ['pathrag', *{list(args)!r}]\nfrom langchain_pathrag.cli import app\napp()"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PATHRAG_"))}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env)


@pytest.mark.skipif(not hasattr(os, "setrlimit") and sys.platform == "win32", reason="POSIX limits")
def test_a_first_index_on_a_full_disk_fails_in_one_line_and_a_retry_works(tmp_path: Path) -> None:
    from pathrag.demo import demo_data

    data = Path(str(demo_data()))
    source, store = str(data / "corpus" / "02-greyfen-expansion-plan.md"), str(tmp_path / "kb")
    failed = _cli("index", source, "--store", store, "--replay", str(data), limit=65536)
    assert failed.returncode == 1 and failed.stderr.strip().splitlines()[-1].startswith("error: "), failed.stderr
    assert "cannot create the store" in failed.stderr and "Traceback" not in failed.stderr
    assert list((tmp_path / "kb").iterdir()) == []
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for suffix in ("", "-journal"):  # what a creation killed midway leaves: removed, never in the way
        (tmp_path / "kb" / f".{STORE_FILE}.new-{dead.pid}-1{suffix}").write_bytes(b"half")
    again = _cli("index", source, "--store", store, "--replay", str(data))
    assert again.returncode == 0, again.stderr
    assert "store now holds               1 documents" in again.stdout
    assert sorted(p.name for p in (tmp_path / "kb").iterdir()) == ["pathrag.lock", STORE_FILE]


def test_the_command_line_reads_a_read_only_store_and_refuses_a_write_in_one_line(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from langchain_pathrag.cli import app

    store = tmp_path / "demo"
    assert CliRunner().invoke(app, ["demo", "--no-prompts", "--store", str(store)]).exit_code == 0
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if mode & os.W_OK else real_access(p, mode, **kw))
    stats = CliRunner().invoke(app, ["stats", "--store", str(store)])
    assert stats.exit_code == 0, stats.output
    document = "01-lowmarrow-gazetteer"
    assert f"  {document}  " in stats.stdout
    deleted = CliRunner().invoke(app, ["delete", document, "--store", str(store)])
    assert deleted.exit_code == 1
    assert deleted.stderr == f"error: the store {store} is read-only: cannot write\n"
