"""The reliability suite of issue 12, long form: load, kill -9 trials, damaged files, two writers.

    python benchmarks/reliability.py                  # load 60 s, 100 kill trials (a few minutes on 2 cores)
    python benchmarks/reliability.py --seconds 5 --trials 20   # about the short form the tests run

Prints one table row per check (queries, writes, errors, trials, losses) and the machine. Nothing is
timed against a limit; the figures are what the run observed. The checks themselves live in
``tests/reliability_kit.py`` (shared with ``tests/unit/test_reliability.py``).
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "shared")]  # run from a checkout without installing

from tests import reliability_kit as kit  # noqa: E402

COLUMNS = ("check", "queries", "writes", "errors", "trials", "losses")


def _table(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append(
            "| " + " | ".join(f"{row[c]:,}" if isinstance(row[c], int) else str(row[c]) for c in COLUMNS) + " |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="duration of the load test (default 60)")
    parser.add_argument(
        "--memory-seconds",
        type=float,
        default=10.0,
        help="duration of the load test on an index without a directory (default 10)",
    )
    parser.add_argument("--readers", type=int, default=4, help="reader threads (default 4)")
    parser.add_argument("--tasks", type=int, default=4, help="asyncio reader tasks (default 4)")
    parser.add_argument("--trials", type=int, default=100, help="kill -9 trials (default 100)")
    parser.add_argument("--documents", type=int, default=30, help="documents per writer process (default 30)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        load = kit.run_load(work / "load", args.seconds, readers=args.readers, tasks=args.tasks, seed=args.seed)
        rows.append(load.row())
        print(f"load: {load}", flush=True)
        memory = kit.run_load(None, args.memory_seconds, readers=args.readers, tasks=args.tasks, seed=args.seed)
        row = memory.row()
        row["check"] = row["check"].replace("load:", "load, index without a directory (in memory):")
        rows.append(row)
        print(f"in memory: {memory}", flush=True)
        kills = kit.run_kill_trials(work / "kill", args.trials, seed=args.seed)
        rows.append(kills.row())
        print(f"kill -9: {kills}", flush=True)
        damaged = kit.run_corruption(work / "damage", ROOT / "tests" / "fixtures" / "legacy_json_store")
        outcomes = {o: sum(d.outcome == o for d in damaged) for o in ("error", "recovered", "rolled back")}
        kinds = len({d.file.split(" ")[0] for d in damaged})
        rows.append(
            {
                "check": f"damaged files ({kinds} kinds of file, each truncated and garbled, a WAL also in a frame): "
                f"{outcomes['error']} one-line errors, {outcomes['recovered']} recovered, "
                f"{outcomes['rolled back']} rolled back to the last whole commit",
                "queries": "-",
                "writes": "-",
                "errors": sum(d.outcome in ("unclear error", "traceback") for d in damaged),
                "trials": len(damaged),
                "losses": sum(d.outcome == "silent loss" for d in damaged),
            }
        )
        for d in damaged:
            print(f"  {d.file:45} {d.damage:9} {d.outcome:11} {d.message[:110]}")
        two = kit.run_two_writers(work / "two", args.documents)
        rows.append(two.row())
        print(f"two writers: {two}", flush=True)
    print()
    print(_table(rows))
    print(
        f"\n{platform.machine()}, {platform.system()}, Python {platform.python_version()}, "
        f"total {time.monotonic() - started:.0f} s"
    )


if __name__ == "__main__":  # the kill trials' fork server imports this module again: keep the guard
    main()
