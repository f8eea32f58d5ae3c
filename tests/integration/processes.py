"""What the integration tests' server fixtures share: stopping a server process politely, then firmly."""

from __future__ import annotations

import subprocess


def stop_process(process: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if ``process`` has not ended within ``timeout`` seconds; waits for it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
