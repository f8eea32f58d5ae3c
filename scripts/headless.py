"""What the scripts that drive a headless Chromium share: where to find one, and how to start it offline."""

from __future__ import annotations

import shutil

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# a fresh profile (given by the caller), no network, no first-run UI; as root in a container the sandbox
# is refused, hence --no-sandbox
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def find_browser() -> str | None:
    """The first of :data:`BROWSERS` on ``PATH``, or ``None``."""
    return next(filter(None, map(shutil.which, BROWSERS)), None)
