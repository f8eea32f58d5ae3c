"""The core must never import LangChain or LlamaIndex, directly or through a dependency."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pathrag

FORBIDDEN = ("langchain", "langchain_core", "llama_index", "langchain_pathrag", "llama_index_pathrag")


def test_no_framework_import_statements_in_core_sources():
    offenders = []
    for path in Path(pathrag.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert offenders == []


def test_importing_every_core_module_loads_no_framework():
    modules = [m.name for m in pkgutil.walk_packages(pathrag.__path__, "pathrag.")]
    assert "pathrag.query.pruning" in modules
    script = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_public_name_of_the_core_resolves():
    # pathrag/__init__ imports its names on first use: each must be found where _EXPORTS says, and be public
    script = (
        "import pathrag\n"
        "missing = [n for n in pathrag.__all__ if getattr(pathrag, n, None) is None]\n"
        "print(missing, sorted(set(pathrag._EXPORTS) ^ set(pathrag.__all__)), pathrag.__version__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split()[:2] == ["[]", "[]"]
    assert done.stdout.split()[2] == pathrag.__version__
