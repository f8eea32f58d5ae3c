"""``pathrag index`` skips what is not a regular file (issue 16): a FIFO named ``*.md`` would block the read
forever. Run as a real process, so that a hang is killed by the guard timeout instead of stopping the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pathrag.demo import demo_data

DATA = Path(str(demo_data()))

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


def pathrag(*args: object) -> subprocess.CompletedProcess[str]:
    found = shutil.which("pathrag", path=os.path.dirname(sys.executable))
    command = [found] if found else [sys.executable, "-m", "langchain_pathrag.cli"]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PATHRAG_TOKENIZER"] = "approximate"
    # the timeout only guards against the hang this test is about: a run that blocks fails instead of stalling
    return subprocess.run(
        [*command, *map(str, args)], capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    shutil.copy(DATA / "corpus" / "02-greyfen-expansion-plan.md", docs / "plan.md")
    os.mkfifo(docs / "pipe.md")
    os.mkfifo(docs / "sub" / "notes.txt")
    return docs


def test_index_skips_fifos_in_a_folder_with_a_warning(tmp_path: Path, folder: Path) -> None:
    done = pathrag("index", folder, "--store", tmp_path / "kb", "--replay", DATA)
    assert done.returncode == 0, done.stderr
    assert f"skipped {folder / 'pipe.md'}: not a regular file" in done.stderr
    assert f"skipped {folder / 'sub' / 'notes.txt'}: not a regular file" in done.stderr
    stats = pathrag("stats", "--store", tmp_path / "kb")
    assert stats.returncode == 0, stats.stderr
    assert any(line.split()[:2] == ["documents", "1"] for line in stats.stdout.splitlines()), stats.stdout


def test_a_fifo_given_by_name_is_skipped_too(tmp_path: Path, folder: Path) -> None:
    done = pathrag("index", folder / "plan.md", folder / "pipe.md", "--store", tmp_path / "kb", "--replay", DATA)
    assert done.returncode == 0, done.stderr
    assert f"skipped {folder / 'pipe.md'}: not a regular file" in done.stderr
    alone = pathrag("index", folder / "pipe.md", "--store", tmp_path / "kb2", "--replay", DATA)
    assert alone.returncode != 0 and "nothing to index" in alone.stderr and "not a regular file" in alone.stderr
    assert "Traceback" not in alone.stderr
