"""A real Milvus for the tests: PyPI's ``milvus-lite`` (a pure-Python engine behind Milvus's own gRPC
protocol) run as a child process on a free port of 127.0.0.1, its data in a temporary directory.

The client side is exactly what reaches a production cluster: ``langchain_milvus.Milvus`` with
``connection_args={"uri": "http://127.0.0.1:<port>"}`` (a cluster adds a ``token``). The suite blocks
TCP only for Python sockets (pytest-socket); gRPC opens its own, so no test has to enable sockets.

The child is always stopped: teardown runs in ``finally`` (SIGTERM, which the child turns into a
clean shutdown of the gRPC server and the engine, then SIGKILL after a timeout); on Linux it also gets
SIGTERM if the test process itself dies (``PR_SET_PDEATHSIG``); and its PID is written to
``milvus.pid`` in its directory so that anything else can be cleaned up by hand.

Use it from a test module with ``from .milvus_server import milvus_server, milvus_stores``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PID_FILE = "milvus.pid"
READY = "pathrag-milvus-port "


@dataclass
class MilvusServer:
    process: subprocess.Popen[str]
    directory: Path
    port: int

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _die_with_parent() -> None:  # runs in the child between fork and exec (Linux only)
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def start_server(directory: str | os.PathLike[str] | None = None, *, timeout: float = 30.0) -> MilvusServer:
    """Start milvus-lite with its data in ``directory`` (default: a fresh temporary one); return once it
    listens. Raises (after stopping it) if it does not announce its port within ``timeout`` seconds."""
    path = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="pathrag-milvus-"))
    log = open(path / "milvus.log", "w")  # noqa: SIM115 - the child's stderr, closed below
    try:
        process = subprocess.Popen(
            [sys.executable, __file__, str(path / "data")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
    finally:
        log.close()
    (path / PID_FILE).write_text(str(process.pid))
    server = MilvusServer(process, path, 0)
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        if not line or not line[0].startswith(READY):
            errors = (path / "milvus.log").read_text(errors="replace")
            state = f"exited with {process.poll()}" if process.poll() is not None else f"is silent after {timeout} s"
            raise RuntimeError(f"milvus-lite server {state}:\n{errors[-2000:]}")
        server.port = int(line[0][len(READY) :])
        return server
    except BaseException:
        stop_server(server)
        raise


def stop_server(server: MilvusServer, *, timeout: float = 10.0) -> None:
    """Stop the server (SIGTERM, SIGKILL after ``timeout``) and remove its directory."""
    from .processes import stop_process  # here: this file also runs as the server's own script

    process = server.process
    try:
        stop_process(process, timeout)
    finally:
        if process.stdout is not None:
            process.stdout.close()
        shutil.rmtree(server.directory, ignore_errors=True)


def _serve(data_dir: str) -> None:
    """The child: milvus-lite's gRPC server on a port the OS picks, announced on stdout, until SIGTERM."""
    from milvus_lite.adapter.grpc.server import start_server_in_thread

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server, db, port = start_server_in_thread(data_dir, host="127.0.0.1", port=0)
    try:
        print(f"{READY}{port}", flush=True)
        stop.wait()
    finally:
        server.stop(grace=2).wait()
        db.close()


@pytest.fixture(scope="session")
def milvus_server() -> Iterator[MilvusServer]:
    pytest.importorskip("milvus_lite", reason="milvus-lite (dev extra) is not installed")
    pytest.importorskip("langchain_milvus", reason="langchain-milvus (dev extra) is not installed")
    server = start_server()
    try:
        yield server
    finally:
        stop_server(server)


def milvus_store(server: MilvusServer, embeddings: Any, collection: str) -> Any:
    """A ``langchain_milvus.Milvus`` collection on ``server``, set up as the README advises for pathrag:
    string ids given by the caller, metadata in the dynamic field (its keys differ between the entity,
    relation and chunk stores, and lists must survive), cosine similarity, strong consistency (a write is
    visible to the next read)."""
    from langchain_milvus import Milvus

    return Milvus(
        embeddings,
        collection_name=collection,
        connection_args={"uri": server.uri},
        index_params={"index_type": "FLAT", "metric_type": "COSINE"},
        consistency_level="Strong",
        auto_id=False,
        enable_dynamic_field=True,
    )


@pytest.fixture
def milvus_stores(milvus_server: MilvusServer) -> Iterator[Any]:
    """A factory ``make(embeddings) -> {"entities", "relations", "chunks"}``: one fresh collection per store
    and test, the same names on every call within the test (a reopen finds the same collections);
    dropped after the test."""
    from pymilvus import MilvusClient

    prefix = f"t{uuid.uuid4().hex[:12]}"

    def make(embeddings: Any) -> dict[str, Any]:
        return {name: milvus_store(milvus_server, embeddings, f"{prefix}_{name}") for name in STORES}

    try:
        yield make
    finally:
        client = MilvusClient(uri=milvus_server.uri)
        try:
            for name in client.list_collections():
                if name.startswith(prefix):
                    client.drop_collection(name)
        finally:
            client.close()


STORES = ("entities", "relations", "chunks")


if __name__ == "__main__":
    _serve(sys.argv[1])
