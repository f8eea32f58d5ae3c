"""The package as users get it: build the sdist, build the wheel from it, install the wheel in a fresh venv, run
the demo from there. Offline: ``--no-isolation`` builds with this venv's setuptools, the wheel is installed with
``--no-deps --no-index``, and its dependencies come from this venv's site-packages, added as a plain path so
that the editable install of the working tree (a ``.pth`` import hook there) does not leak in. About 15 s."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import pathrag

pytestmark = pytest.mark.packaging

REPO = Path(__file__).resolve().parents[2]
VERSION = pathrag.__version__
# what a copy of the working tree leaves out: environments, caches and earlier builds
LEFT_OUT = (
    ".git",
    ".venv",
    "venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
    ".benchmarks",
)


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{args} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def offline_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTHON", "PIP_", "VIRTUAL_ENV"))}
    return env | {"PATHRAG_TOKENIZER": "approximate", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"} | extra


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist, and the wheel built from it, of a copy of the working tree (the tree itself is left alone)."""
    tmp = tmp_path_factory.mktemp("dist")
    source = tmp / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*LEFT_OUT))
    # without --sdist or --wheel, build makes the sdist and then the wheel from the unpacked sdist: so the sdist
    # holds all that the wheel needs
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", tmp / "out", source, cwd=tmp, env=offline_env())
    return tmp / "out"


def test_the_sdist_holds_the_sources_the_tests_and_the_demo_data(dists: Path) -> None:
    with tarfile.open(dists / f"pathrag-{VERSION}.tar.gz") as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    for needed in (
        "pyproject.toml",
        "README.md",
        "MANIFEST.in",
        "shared/pathrag/_version.py",
        "shared/pathrag/py.typed",
        "shared/pathrag/demo_data/questions.json",
        "langchain_pathrag/cli/commands.py",
        "llama_index_pathrag/retriever.py",
        "tests/unit/test_wheel.py",
        "tests/fixtures/README.md",
        "examples/key_paths.py",
    ):
        assert needed in names, needed
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_wheel_holds_every_package_and_the_demo_data(dists: Path) -> None:
    with zipfile.ZipFile(dists / f"pathrag-{VERSION}-py3-none-any.whl") as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"pathrag-{VERSION}.dist-info/METADATA").decode()
        entry_points = wheel.read(f"pathrag-{VERSION}.dist-info/entry_points.txt").decode()
    assert f"Version: {VERSION}\n" in metadata
    assert "pathrag = langchain_pathrag.cli:main" in entry_points
    for package in ("pathrag", "langchain_pathrag", "langchain_pathrag/cli", "llama_index_pathrag"):
        assert f"{package}/__init__.py" in names, package
    # every module of the working tree, so a new subpackage missing from pyproject's `packages` fails here
    roots = {"pathrag": REPO / "shared" / "pathrag", "langchain_pathrag": REPO / "langchain_pathrag"}
    roots["llama_index_pathrag"] = REPO / "llama_index_pathrag"
    modules = {f"{name}/{p.relative_to(root).as_posix()}" for name, root in roots.items() for p in root.rglob("*.py")}
    assert modules - names == set()
    assert "pathrag/py.typed" in names
    data = REPO / "shared" / "pathrag" / "demo_data"
    shipped = sorted(p.relative_to(REPO / "shared") for p in data.rglob("*") if p.is_file())
    assert len(shipped) == 15
    assert {p.as_posix() for p in shipped} <= names
    assert not [n for n in names if n.startswith(("tests/", "shared/", "examples/")) or n.endswith(".pyc")]


def test_the_installed_wheel_runs_the_demo(dists: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)  # with the pip that Python bundles (no download)
    python = venv / "bin" / "python"
    wheel = dists / f"pathrag-{VERSION}-py3-none-any.whl"
    run(python, "-m", "pip", "install", "--no-deps", "--no-index", wheel, cwd=tmp_path, env=offline_env())
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    fresh_site = Path(run(python, "-c", purelib, cwd=tmp_path).strip())
    # a plain path line: added to sys.path without running the .pth files there (the editable install's hook)
    (fresh_site / "zz_dev_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")

    env = offline_env()
    where = run(
        python,
        "-c",
        "import pathrag, langchain_pathrag.cli, llama_index_pathrag as li; "
        "print(pathrag.__file__, langchain_pathrag.cli.__file__, li.__file__, pathrag.__version__)",
        cwd=tmp_path,
        env=env,
    ).split()
    assert [Path(p).is_relative_to(fresh_site) for p in where[:3]] == [True, True, True], where
    assert where[3] == VERSION

    out = run(venv / "bin" / "pathrag", "demo", "--no-prompts", cwd=tmp_path, env=env)
    assert "Indexed 6 documents (6 chunks)" in out
    assert "the reference path of 3 of 3 questions is among the key paths" in out
    assert out.count("Reference path: ") == 3 and "not among the key paths" not in out
