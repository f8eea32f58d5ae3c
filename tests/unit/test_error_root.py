"""Every error class of the three packages derives from ``PathRAGError`` and keeps the base users catch."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import langchain_pathrag
import llama_index_pathrag
import pathrag
from pathrag import PathRAGError
from pathrag.errors import StoreError

PACKAGES = (pathrag, langchain_pathrag, llama_index_pathrag)

# The standard base each public error keeps, so that code catching it before there was a root still does.
KEPT_BASES = {
    "pathrag.errors.StoreError": ValueError,
    "pathrag.errors.MissingEmbedderError": ValueError,
    "pathrag.names.EntityNameError": ValueError,
    "pathrag.files.NotARegularFile": ValueError,
    "pathrag.demo.ReplayMiss": LookupError,
    "pathrag.eval.questions.EvaluationError": RuntimeError,
}


def _modules() -> list[ModuleType]:
    """Every module of the three packages, imported (a module whose optional dependency is missing is left out)."""
    found = []
    for package in PACKAGES:
        found.append(package)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            try:
                found.append(importlib.import_module(info.name))
            except ImportError as exc:  # an optional extra this environment lacks; never one of ours
                if (exc.name or "").split(".")[0] in {p.__name__ for p in PACKAGES}:
                    raise
    return found


def _error_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in one of the packages' modules, by its qualified name."""
    classes: dict[str, type[BaseException]] = {}
    for module in _modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == module.__name__:
                classes[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return classes


def test_every_error_class_of_the_packages_derives_from_the_root() -> None:
    classes = _error_classes()
    # the walk does find them: the store errors, the CLI's, and the private ones that steer control flow
    assert {
        "pathrag.errors.StoreLocked",
        "langchain_pathrag.cli.errors.CliError",
        "pathrag.index.backend._Overtaken",
    } <= set(classes)
    strays = sorted(name for name, cls in classes.items() if not issubclass(cls, PathRAGError))
    assert strays == []


@pytest.mark.parametrize("name", sorted(KEPT_BASES))
def test_a_public_error_keeps_the_standard_base_users_catch(name: str) -> None:
    cls = _error_classes()[name]
    assert issubclass(cls, KEPT_BASES[name]) and issubclass(cls, PathRAGError)


def test_a_store_error_is_caught_as_the_root_and_as_a_value_error(tmp_path) -> None:
    (tmp_path / "pathrag.sqlite").mkdir()  # a folder where the store file should be
    for caught in (PathRAGError, ValueError, StoreError):
        with pytest.raises(caught, match="not a regular file"):
            pathrag.PathRAGIndex(tmp_path, embedder=pathrag.HashingEmbedder(8))
