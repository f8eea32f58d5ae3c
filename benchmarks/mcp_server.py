"""How fast ``pathrag mcp`` answers an MCP client over stdio (issue 37): the time from spawning the server to
its list of tools, then the median time of each read-only tool on the demo store.

The client is the ``mcp`` SDK's own (the one an agent framework uses); each call opens the store, reads one
committed state and closes it, so a call's time includes opening the store. No model is configured and none
is called.

    python benchmarks/mcp_server.py [--calls 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

QUESTION = "How is Odric Pelham connected to the Lantern Night Flood?"
CALLS = {"stats": {}, "retrieve": {"question": QUESTION}, "paths": {"question": QUESTION}}


def server_env() -> dict[str, str]:
    """This environment without model keys (no `query` tool), counting tokens offline."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "PATHRAG_"))}
    return keep | {"PATHRAG_TOKENIZER": "approximate"}


async def measure(store: Path, calls: int) -> dict[str, float]:
    """Seconds from spawn to the tool list, then each tool's median seconds over ``calls`` calls."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "langchain_pathrag.cli", "mcp", "--store", str(store)]
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env())
    timings: dict[str, float] = {}
    async with Client(params) as client:
        await client.list_tools()
        timings["spawn + list_tools"] = time.perf_counter() - started
        for name, arguments in CALLS.items():
            seconds = []
            for _ in range(calls):
                begun = time.perf_counter()
                result = await client.call_tool(name, arguments)
                seconds.append(time.perf_counter() - begun)
                if result.is_error:
                    raise SystemExit(f"{name} failed: {result.content}")
            timings[name] = statistics.median(seconds)
    return timings


def main() -> None:
    """Build the demo store (or reuse ``--keep``), then print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10, help="calls per tool (default 10)")
    parser.add_argument("--keep", type=Path, help="build (or reuse) the demo store here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = args.keep or Path(tmp) / "demo-store"
        if not store.exists():
            subprocess.run(
                [sys.executable, "-m", "langchain_pathrag.cli", "demo", "--store", str(store), "--no-prompts"],
                env=server_env(),
                check=True,
                capture_output=True,
            )
        timings = asyncio.run(measure(store, args.calls))
    print(f"pathrag mcp on the demo store ({platform.python_version()}, {os.cpu_count()} cores)")
    print("| what | seconds |\n|---|---:|")
    for name, seconds in timings.items():
        print(f"| {name} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
