"""The README and the guides in docs/ run as written: every ```python block, and the `pathrag ...` commands of every
```bash block, run offline in an empty folder, each in its own process (with sockets other than unix ones refused).
A block that cannot run here is listed in SKIPPED by the start of its first line, with the reason."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# the README first, then every guide: name (as the tests' ids show it) -> text
DOCS = {
    path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8")
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
}
FIXTURES = REPO / "tests" / "fixtures"

# first line of a block -> why it does not run here as written
SKIPPED = {
    'python3 -m venv .venv && .venv/bin/pip install -e ".[langchain]" && .venv/bin/pathrag demo': (
        "installs from the package index (test_wheel.py installs a built wheel offline and runs the demo)"
    ),
    'python3 -m venv .venv && .venv/bin/pip install -q -e ".[all,dev]" && .venv/bin/ruff check': (
        "installs from the package index and runs the whole test suite"
    ),
    "python3 -m pip install build && python3 -m build": "installs from the package index (see test_wheel.py)",
    "export OPENAI_API_KEY=sk-...": "indexes with an OpenAI model: needs OPENAI_API_KEY",
    "from langchain_openai import ChatOpenAI, OpenAIEmbeddings": (
        "needs OPENAI_API_KEY and the reader's `docs` (offline: examples/langchain_quickstart.py, tested)"
    ),
    "from langchain.agents import create_agent": "continues the LangChain block (its `retriever` and `llm`)",
    "from langchain_core.indexing import InMemoryRecordManager, index": "continues the LangChain block (`indexer`)",
    "from llama_index.core import PropertyGraphIndex, SimpleDirectoryReader": (
        "needs llama-index-llms-openai, llama-index-embeddings-openai and OPENAI_API_KEY "
        "(offline: examples/llama_index_quickstart.py, tested)"
    ),
    "from llama_index_pathrag import PATHRAG_QA_TEMPLATE, PathRAGContextPostprocessor, PathRAGRetriever": (
        "continues the LlamaIndex block (its `index`, `embed_model` and `llm`)"
    ),
    'index.delete_ref_doc("report-1", delete_from_docstore=True)  # gone: what only it supported': (
        "continues the LlamaIndex block (its `index`)"
    ),
    "from falkordb import FalkorDB": "needs a FalkorDB server on localhost:6379 (tests/integration starts one)",
    "from pathrag.importers import import_graph_documents, import_lightrag, import_property_graph": (
        "the reader's `index`, LangChain graph documents and LlamaIndex store"
    ),
}
# commands of a run block that do not run here as written
SKIPPED_COMMANDS = {
    "pathrag import lightrag ./lightrag_workdir --store ./kb --reuse-vectors": (
        "needs vectors of the store's embedding model; the fixture's are 8-dimensional"
    ),
}
# a run block's lines that are not `pathrag` commands: left to the reader
NOT_RUN = ("xdg-open ",)

NO_NETWORK = """\
import socket, sys

class _UnixOnly(socket.socket):
    def __init__(self, family=-1, type=-1, proto=-1, fileno=None):
        if fileno is None and family != socket.AF_UNIX:
            raise OSError("a README block tried to use the network")
        super().__init__(family, type, proto, fileno)

socket.socket = _UnixOnly
name, path = sys.argv[1], sys.argv[2]
exec(compile(open(path, encoding="utf-8").read(), name, "exec"), {"__name__": "__main__"})
"""


def blocks(language: str) -> list[tuple[str, str]]:
    """(where, code) of each fenced block of ``language`` in the README and docs/, ``where`` being ``FILE:LINE``,
    dedented (blocks inside list items are indented)."""
    found = []
    for name, text in DOCS.items():
        for match in re.finditer(r"^( *)```(\w*)\n(.*?)^\1```", text, re.M | re.S):
            if match[2] == language:
                found.append((f"{name}:{text.count(chr(10), 0, match.start()) + 1}", textwrap.dedent(match[3])))
    return found


def skip_reason(code: str) -> str | None:
    """Why a block is skipped: its first line starts with a key of SKIPPED."""
    first = next(line.strip() for line in code.splitlines() if line.strip())
    return next((why for start, why in SKIPPED.items() if first.startswith(start)), None)


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "PYTHONPATH"))}
    return env | {"PATHRAG_TOKENIZER": "approximate"}


def run(args: list[str], cwd: Path, what: str) -> str:
    done = subprocess.run(args, cwd=cwd, env=offline_env(), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{what} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def ids(found: list[tuple[str, str]]) -> list[str]:
    return [where for where, _ in found]


PYTHON, BASH = blocks("python"), blocks("bash")


def test_the_skip_lists_name_blocks_and_commands_the_readme_has() -> None:
    used = {skip_reason(code) for _, code in PYTHON + BASH}
    assert set(SKIPPED.values()) <= used, set(SKIPPED.values()) - used
    assert all(any(command in text for text in DOCS.values()) for command in SKIPPED_COMMANDS)
    assert len(PYTHON) >= 10 and len(BASH) >= 6


@pytest.mark.parametrize(("where", "code"), PYTHON, ids=ids(PYTHON))
def test_python_block_runs_as_written(where: str, code: str, tmp_path: Path) -> None:
    if skip_reason(code):
        pytest.skip(skip_reason(code))
    (tmp_path / "block.py").write_text(code, encoding="utf-8")
    out = run([sys.executable, "-c", NO_NETWORK, where, "block.py"], tmp_path, where)
    # comment lines closing a block that prints are the output it shows
    lines = code.rstrip().splitlines()
    shown = []
    while lines and lines[-1].startswith("# "):
        shown.insert(0, lines.pop()[2:])
    if shown and "print(" in code:
        assert out.splitlines() == shown


@pytest.mark.parametrize(("where", "code"), BASH, ids=ids(BASH))
def test_bash_block_pathrag_commands_run_as_written(where: str, code: str, tmp_path: Path) -> None:
    if skip_reason(code):
        pytest.skip(skip_reason(code))
    # what the import examples read: a LightRAG folder, a HippoRAG OpenIE file and the docs' graph.jsonl
    shutil.copytree(FIXTURES / "lightrag", tmp_path / "lightrag_workdir")
    shutil.copy(FIXTURES / "musique_small" / "openie_sample.json", tmp_path / "openie_results.json")
    (tmp_path / "graph.jsonl").write_text(graph_jsonl(), encoding="utf-8")
    commands = []
    for text in code.splitlines():
        if not text.strip() or text.lstrip().startswith("#") or text.startswith(NOT_RUN):
            continue
        words = shlex.split(text, comments=True)
        while words:
            end = words.index("&&") if "&&" in words else len(words)
            command, words = words[:end], words[end + 1 :]
            assert command[0] == "pathrag" and not {"|", ">", "<", ";"} & set(command), text
            if shlex.join(command) not in {shlex.join(shlex.split(c)) for c in SKIPPED_COMMANDS}:
                commands.append(command)
    assert commands, f"{where} has no pathrag command to run"
    for command in commands:
        run([sys.executable, "-m", "langchain_pathrag.cli", *command[1:]], tmp_path, shlex.join(command))


def graph_jsonl() -> str:
    """The graph.jsonl example of docs/cli.md."""
    match = re.search(r"`graph\.jsonl` holds .*?```json\n(.*?)```", DOCS["docs/cli.md"], re.S)
    assert match, "the graph.jsonl example is gone"
    return match[1]


def test_the_graph_documents_example_is_one_json_object_per_line() -> None:
    lines = graph_jsonl().splitlines()
    assert len(lines) >= 2
    assert all(isinstance(json.loads(line), dict) for line in lines)


# -- the docs' shape: a short README that links every guide, contents lists, links that lead somewhere ----------

README_MAX_LINES = 250  # what a newcomer reads in ten minutes (issue 37)
LONG_DOC_LINES = 150  # a guide longer than this opens with a list of its sections


def headings(text: str) -> list[str]:
    """The `##` and `###` headings of a Markdown text, outside code blocks."""
    prose = re.sub(r"^( *)```.*?^\1```", "", text, flags=re.M | re.S)
    return [match[2] for match in re.finditer(r"^(##|###) (.+)$", prose, re.M)]


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_is_short_and_links_every_guide() -> None:
    readme = DOCS["README.md"]
    assert readme.count("\n") <= README_MAX_LINES
    assert [name for name in DOCS if name.startswith("docs/") and f"]({name}" not in readme] == []


@pytest.mark.parametrize("name", [n for n in DOCS if n.startswith("docs/") and DOCS[n].count("\n") > LONG_DOC_LINES])
def test_a_long_guide_opens_with_the_list_of_its_sections(name: str) -> None:
    text = DOCS[name]
    top = text[: text.index("\n## ")]  # what comes before the first section
    sections = [h for h in headings(text) if f"\n## {h}\n" in text]
    assert sections and [f"(#{anchor(h)})" for h in sections if f"(#{anchor(h)})" not in top] == []


@pytest.mark.parametrize("name", list(DOCS))
def test_relative_links_lead_to_a_file_and_a_heading_it_has(name: str) -> None:
    here = (REPO / name).parent
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", DOCS[name]):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, fragment = target.partition("#")
        file = (here / path).resolve() if path else REPO / name
        if not file.exists():
            broken.append(target)
        elif fragment and file.suffix == ".md":
            if fragment not in {anchor(h) for h in headings(file.read_text(encoding="utf-8"))}:
                broken.append(target)
    assert broken == []
