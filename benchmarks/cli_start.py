"""How fast the ``pathrag`` command starts (issue 23): ``--help``, ``stats``, ``paths`` and ``delete`` on the
demo store.

Each command runs in a fresh process, several times; the table gives the median wall time. Every command
is run without a key and with one (``OPENAI_API_KEY`` set). With a key, ``paths`` asks the chat model for the
question's keywords, so the key runs point ``OPENAI_BASE_URL`` at a stub OpenAI-compatible endpoint started
here, which answers at once: the figure is then the command's own cost (importing the provider, making the
client, one local HTTP call), not a real model's latency. ``stats`` calls no model and must not pay for one;
nor must ``delete``, which asks one only to summarise a merged description never summarised before (deleting
a demo document needs none). ``delete`` runs on a fresh copy of the store each time (the copy is not timed).

    python benchmarks/cli_start.py [--runs 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

QUESTION = "How is Odric Pelham connected to the Lantern Night Flood?"
KEYWORDS = {"high_level_keywords": ["flood", "connection"], "low_level_keywords": ["Odric Pelham", "Lantern Night"]}


class StubEndpoint(http.server.BaseHTTPRequestHandler):
    """Answers every chat completion with the question's keywords, at once (and counts them)."""

    calls = 0

    def do_POST(self) -> None:  # noqa: N802 (the handler's method name)
        StubEndpoint.calls += 1
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps(
            {
                "id": "chatcmpl-stub",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": json.dumps(KEYWORDS)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        """Quiet."""


def command() -> list[str]:
    """The ``pathrag`` console script of this interpreter's environment (else ``python -m``)."""
    script = Path(sys.executable).with_name("pathrag")
    return [str(script)] if script.exists() else [sys.executable, "-m", "langchain_pathrag.cli"]


def median_seconds(args: list[str], env: dict[str, str], runs: int, before: Callable[[], None] | None = None) -> float:
    """Median wall time of ``args`` in a fresh process (which must succeed) over ``runs`` runs, each after an
    untimed ``before()``."""
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        started = time.perf_counter()
        subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="Runs per command and setting (median reported).")
    parser.add_argument("--keep", type=Path, help="Build the demo store here and keep it (default: a temp dir).")
    args = parser.parse_args()

    plain = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PATHRAG_"))}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StubEndpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    keyed = {
        **plain,
        "OPENAI_API_KEY": "sk-benchmark",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
        "NO_PROXY": "127.0.0.1,localhost",  # a proxy set in the environment must not take the stub's calls
    }
    work = args.keep or Path(tempfile.mkdtemp(prefix="pathrag-cli-start-"))
    store = work / "demo-store"
    try:
        pathrag = command()
        if not store.exists():
            subprocess.run(
                [*pathrag, "demo", "--store", str(store), "--no-prompts"],
                env=plain,
                check=True,
                stdout=subprocess.DEVNULL,
            )
        copy = work / "copy"

        def fresh_copy() -> None:
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(store, copy)

        rows: list[tuple[str, list[str], Callable[[], None] | None]] = [
            ("python -c pass (the interpreter alone)", [sys.executable, "-c", "pass"], None),
            ("pathrag --help", [*pathrag, "--help"], None),
            ("pathrag stats --store S", [*pathrag, "stats", "--store", str(store)], None),
            ("pathrag paths Q --store S", [*pathrag, "paths", QUESTION, "--store", str(store)], None),
            (
                "pathrag delete DOC --store S",
                [*pathrag, "delete", "04-lantern-night", "--store", str(copy)],
                fresh_copy,
            ),
        ]
        print(
            f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()}; "
            f"median of {args.runs} runs, seconds.\n"
        )
        print("| command | no key | with a key |")
        print("|---|---:|---:|")
        for label, argv, before in rows:
            print(
                f"| `{label}` | {median_seconds(argv, plain, args.runs, before):.2f} | "
                f"{median_seconds(argv, keyed, args.runs, before):.2f} |",
                flush=True,
            )
        print(f"\nThe stub endpoint answered {StubEndpoint.calls} chat calls (paths with a key: one per run).")
    finally:
        server.shutdown()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
