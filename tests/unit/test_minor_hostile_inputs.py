"""The minor items of issue 39 (row 9): vectors holding NaN or infinities are never stored (imported ones are
embedded anew instead), ``pathrag eval`` fails when it answered nothing, and a huge question line is never
echoed whole."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from pathrag import HashingEmbedder, InMemoryVectorIndex, NetworkXGraphStore, PathRAGIndex
from pathrag.importers import import_lightrag
from pathrag.vectors.base import VectorItem

from ..fakes import ScriptedLLM
from .test_importers import LIGHTRAG, AxisEmbedder

pytestmark = pytest.mark.reliability


def poisoned_copy(tmp_path: Path, value: float) -> Path:
    """The LightRAG fixture with its first entity vector made ``value`` in one component."""
    root = tmp_path / "lightrag"
    shutil.copytree(LIGHTRAG, root)
    path = root / "vdb_entities.json"
    data = json.loads(path.read_text())
    matrix = np.frombuffer(base64.b64decode(data["matrix"]), dtype="<f4").reshape(-1, int(data["embedding_dim"])).copy()
    matrix[0, 3] = value
    data["matrix"] = base64.b64encode(matrix.astype("<f4").tobytes()).decode()
    path.write_text(json.dumps(data))
    return root


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_reused_vectors_holding_nan_or_inf_are_embedded_anew_and_their_items_found(
    tmp_path: Path, value: float
) -> None:
    embedder = AxisEmbedder()
    entities = InMemoryVectorIndex(embedder)
    summary = import_lightrag(
        poisoned_copy(tmp_path, value), NetworkXGraphStore(), entity_index=entities, reuse_vectors=True
    )
    assert summary.vectors_reused == 3  # the fixture's 4 rows, less the poisoned one
    assert any(text.startswith("GULL\n") for text in embedder.texts)  # the poisoned row's: embedded anew
    assert all(np.isfinite(v).all() for v in entities._vectors.values())


@pytest.mark.parametrize("where", ["sqlite", "memory"])
def test_vectors_holding_nan_are_refused_in_one_line_and_nothing_is_stored(tmp_path: Path, where: str) -> None:
    index = PathRAGIndex(tmp_path if where == "sqlite" else None, llm=ScriptedLLM(), embedder=HashingEmbedder(8))
    vectors = index.entity_index
    items = [VectorItem("a", "harbour"), VectorItem("b", "pilot")]
    with pytest.raises(ValueError, match=r"1 of 2 vectors hold NaN or infinite numbers \(the first for 'b'\)"):
        vectors.upsert_vectors(items, [[1.0] * 8, [float("nan")] * 8])  # type: ignore[attr-defined]
    assert len(vectors) == 0
    index.close()


# -- pathrag eval -------------------------------------------------------------------------------------


def cli(*args: object) -> tuple[int, str]:
    from typer.testing import CliRunner

    from langchain_pathrag.cli import app

    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("eval") / "demo"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATHRAG_TOKENIZER", "approximate")
        assert cli("demo", "--store", store, "--no-prompts")[0] == 0
    return store


def test_a_question_line_too_long_to_ask_is_one_error_line_that_does_not_echo_it(
    demo_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 50 MB question line was echoed to stderr three times (once a configuration), and eval exited 0."""
    monkeypatch.setenv("PATHRAG_TOKENIZER", "approximate")
    questions = tmp_path / "questions.txt"
    questions.write_text("How is Mara connected to the Gull?\n" + "x" * 2_000_000 + "\n")
    code, stderr = cli("eval", "--store", demo_store, "--run-dir", tmp_path / "run", "--offline", "-q", questions)
    assert code == 1 and len(stderr) < 400, stderr[:400]
    assert f"{questions} line 2 holds a question of 2,000,000 characters; at most 10,000 are accepted" in stderr


def test_eval_fails_when_no_answer_could_be_judged_and_logs_questions_briefly(
    demo_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import pathrag.eval.answers as answers

    async def refused(config, text):
        raise ValueError("refused")

    monkeypatch.setenv("PATHRAG_TOKENIZER", "approximate")
    monkeypatch.setattr(answers, "_context", refused)
    questions = tmp_path / "questions.txt"
    questions.write_text("How is " + "Mara " * 1500 + "connected to the Gull?\n")
    code, stderr = cli("eval", "--store", demo_store, "--run-dir", tmp_path / "run", "--offline", "-q", questions)
    assert code == 1, stderr
    assert "error: nothing was compared: 4 of 4 answers failed (the first: retrieval: ValueError: refused)" in stderr
    warned = [r.getMessage() for r in caplog.records if "retrieval failed" in r.getMessage()]
    assert len(warned) == 4 and all(len(m) < 250 and "(7,529 characters)" in m for m in warned), warned
