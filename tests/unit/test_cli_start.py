"""The ``pathrag`` command loads only what it needs (issue 23): ``--help`` imports neither a model provider nor
the core's heavy modules, and ``stats`` and ``delete`` make no chat model even with a key set. Checked on
``sys.modules`` in a fresh interpreter, not timed (benchmarks/cli_start.py times them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from langchain_pathrag.cli import app

PROVIDERS = ("langchain_openai", "langchain_core")
CORE = ("pathrag.eval", "pathrag.index.front", "pathrag.sqlite", "numpy", "networkx")


def modules_after(commands: list[list[str]], *, key: bool) -> set[str]:
    """The modules a fresh interpreter holds after running ``pathrag`` with each argument list in turn."""
    script = (
        "import json, sys\n"
        "from langchain_pathrag.cli import app\n"
        f"for args in {commands!r}:\n"
        "    app(args, standalone_mode=False)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PATHRAG_"))}
    if key:
        env["OPENAI_API_KEY"] = "sk-test"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_help_loads_no_provider_and_not_the_core() -> None:
    loaded = modules_after([["--help"]], key=True)
    assert "langchain_pathrag.cli.commands" in loaded
    assert [m for m in (*PROVIDERS, *CORE) if m in loaded] == []


def test_a_commands_help_loads_no_provider() -> None:
    loaded = modules_after([["paths", "--help"], ["import", "openie", "--help"]], key=True)
    assert [m for m in (*PROVIDERS, *CORE) if m in loaded] == []


def test_eval_is_made_when_it_runs() -> None:
    loaded = modules_after([["eval", "--help"]], key=False)
    assert "pathrag.eval" in loaded  # its options name the evaluation's configurations
    assert "langchain_openai" not in loaded


def test_stats_and_delete_make_no_chat_model_with_a_key(tmp_path: Path) -> None:
    store = tmp_path / "kb"
    assert (
        CliRunner().invoke(app, ["demo", "--store", str(store), "--no-prompts"], env={"OPENAI_API_KEY": ""}).exit_code
        == 0
    )
    loaded = modules_after(
        [["stats", "--store", str(store)], ["delete", "04-lantern-night", "--store", str(store)]], key=True
    )
    assert "pathrag.index.front" in loaded  # the commands did run
    assert [m for m in PROVIDERS if m in loaded] == []
