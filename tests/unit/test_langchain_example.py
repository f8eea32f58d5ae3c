"""examples/langchain_quickstart.py runs offline when no OpenAI key is set."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "langchain_quickstart.py"


def test_quickstart_runs_offline_and_finds_the_expected_path(monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = importlib.util.spec_from_file_location("langchain_quickstart", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # pydantic resolves the model's annotations there
    spec.loader.exec_module(module)
    answer = module.main()
    out = capsys.readouterr().out
    assert "model: offline-demo" in out and "indexed 6 documents" in out
    # the best path joins the two entities the question names, and passages follow it
    listed = [line.split() for line in out.splitlines() if line.startswith("  ")]
    assert listed[0][0] == "path" and " ".join(listed[0][2:]).startswith("ODRIC PELHAM ->")
    assert " ".join(listed[0][2:]).endswith("-> LANTERN NIGHT FLOOD")
    assert listed[1][0] == "passage"  # key paths and passages alternate by rank while they fit
    assert answer.startswith("(offline stand-in model) The most reliable path is Path ") and answer in out
