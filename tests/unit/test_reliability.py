"""The reliability suite of issue 12, short form (``pytest -m reliability`` runs it alone, with the lock
tests of ``test_store_concurrency.py`` and the every-step crash trials of ``test_crash_every_step.py``).

Figures are printed, never timed. ``PATHRAG_RELIABILITY_SECONDS`` sets the load test's duration (default
3); ``benchmarks/reliability.py`` runs the long forms.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .. import reliability_kit as kit

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="writers run in forked processes"),
]

LEGACY = Path(__file__).parents[1] / "fixtures" / "legacy_json_store"


def show(capsys: pytest.CaptureFixture[str], text: str) -> None:
    with capsys.disabled():
        print(f"\n{text}")


@pytest.mark.parametrize("where", ["directory", "memory"])
def test_load_readers_and_asyncio_tasks_see_only_committed_states(tmp_path: Path, capsys, where: str) -> None:
    seconds = float(os.environ.get("PATHRAG_RELIABILITY_SECONDS", "3"))
    report = kit.run_load(tmp_path / "kb" if where == "directory" else None, seconds, readers=4, tasks=4, seed=12)
    assert report.errors == 0, report.first_error
    assert report.inconsistent == 0  # each result equals the answer of a state committed around the read
    assert report.writes >= 2 and report.queries > report.writes  # reads did overlap writes
    show(
        capsys,
        f"load ({where}), {seconds:g} s: 4 threads + 4 asyncio tasks: {report.queries} retrievals during "
        f"{report.writes} commits, {report.errors} errors, {report.inconsistent} results of no committed state",
    )


def test_kill_minus_nine_at_random_moments_loses_nothing_and_repays_nothing(tmp_path: Path, capsys) -> None:
    report = kit.run_kill_trials(tmp_path, trials=20, seed=12)
    assert report.problems == []
    assert (report.losses, report.rerun_wrong, report.repaid) == (0, 0, 0)
    assert report.killed >= 10 and len(report.states_seen) >= 2  # the kills landed, at different points
    show(
        capsys,
        f"kill -9: {report.trials} trials ({report.killed} killed mid-run), commits kept "
        f"{dict(sorted(report.states_seen.items()))}, 0 lost; re-runs paid {report.unpaid_calls} LLM "
        "calls, exactly the unfinished chunks",
    )


def test_every_damaged_file_is_a_one_line_error_naming_it_or_nothing_is_lost(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    results = kit.run_corruption(tmp_path, LEGACY)
    wrong = [
        f"{r.file} {r.damage}: {r.outcome}: {r.message}"
        for r in results
        if r.outcome not in ("error", "recovered")
        and (r.outcome, r.file) != ("rolled back", "pathrag.sqlite-wal (killed writer)")
    ]
    assert wrong == []  # a WAL cut short keeps the commits before the cut, as SQLite's journal allows
    files = {r.file.split(" ")[0] for r in results}
    assert {
        "pathrag.sqlite",
        "pathrag.sqlite-wal",
        "pathrag.sqlite-shm",
        "pathrag.lock",
        "documents.json",
        "graph.json",
        "chunks.jsonl",
    } <= files
    by = {(r.file, r.damage): r.outcome for r in results}
    # a garbled WAL header made SQLite drop every commit in it silently: now an error
    assert by["pathrag.sqlite-wal (killed writer)", "garbled"] == "error"
    # so did a damaged frame inside it (the header intact): every frame from it on, committed ones too
    for damage in kit.WAL_FRAME_DAMAGE:
        assert by["pathrag.sqlite-wal (killed writer)", damage] == "error"
    assert by["pathrag.sqlite (closed store)", "garbled"] == "error"
    from typer.testing import CliRunner

    from langchain_pathrag.cli import app

    for r in results:  # the command line says the same in one line
        if r.outcome == "error":
            name = r.file.split(" ")[0]
            result = CliRunner().invoke(app, ["stats", "--store", str(r.directory)])
            assert result.exit_code == 1 and "Traceback" not in result.output, (r.file, result.output)
            assert result.stderr.count("\n") == 1 and str(r.directory / name) in result.stderr, (r.file, result.stderr)
    count = {o: sum(r.outcome == o for r in results) for o in ("error", "recovered", "rolled back")}
    show(
        capsys,
        f"damaged files: {len(results)} cases over {len(files)} kinds of file: {count['error']} one-line "
        f"errors naming the file, {count['recovered']} recovered with nothing lost, {count['rolled back']} "
        "rolled back to the last whole commit (a WAL cut short)",
    )


def test_two_writer_processes_one_refused_naming_the_holder_none_lose_a_document(tmp_path: Path, capsys) -> None:
    report = kit.run_two_writers(tmp_path, count=8)
    assert report.refused_with_pid, report.refusal
    assert report.exit_codes == [0, 0, 0]
    assert (report.documents, report.lost) == (24, 0)
    show(
        capsys,
        f"two writers: the second refused at once ({report.refusal.split(':')[0]}), then three "
        f"writers waiting their turn: {report.documents} documents, 0 lost",
    )
