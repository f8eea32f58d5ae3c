"""Screenshot of ``pathrag paths --format html`` on the demo store, as shown in docs/cli.md (docs/paths-html.png).

    python scripts/screenshot_html.py                      # writes docs/paths-html.png
    python scripts/screenshot_html.py --out /tmp/shot.png --size 1280,900

Builds the demo store in a temporary folder (``pathrag demo``: offline, a few seconds), writes the page for
the demo's first question with the options the demo prints, and has a headless Chromium take the picture.
Not part of the test suite: without a Chromium it says so and exits 0 (Debian: ``apt-get install chromium``).
With Pillow installed the PNG is reduced to a 256-colour palette, which keeps it small for the repository.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from headless import BROWSERS, FLAGS, find_browser

from pathrag.demo import load_questions

ROOT = Path(__file__).resolve().parent.parent
# the demo's knobs, as `pathrag demo` prints them, with one more seed so the picture has more to show
DEMO_OPTIONS = ["--num-seeds", "3", "--theta", "0.001"]


def pathrag(*args: str) -> str:
    """Run the ``pathrag`` command of this checkout and return what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "langchain_pathrag.cli", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"pathrag {args[0]} failed:\n{done.stderr}")
    return done.stdout


def screenshot(browser: str, page: Path, out: Path, size: str) -> None:
    """Have a headless browser render ``page`` into ``out`` (a fresh profile, no network, no first-run UI)."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                browser,
                *FLAGS,
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--screenshot={out}",
                f"--window-size={size}",
                page.as_uri(),
            ],
            capture_output=True,
            check=True,
            timeout=120,
        )


def shrink(png: Path) -> None:
    """A 256-colour palette: the page is flat colours and text, so it looks the same at about half the size."""
    try:
        from PIL import Image
    except ImportError:  # optional: the full-colour PNG is fine, only larger
        return
    with Image.open(png) as image:
        small = image.convert("RGB").quantize(colors=256)
    small.save(png, optimize=True)


def main() -> None:
    """Build the demo store, write the HTML page and take its screenshot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "paths-html.png", help="the PNG to write")
    parser.add_argument("--size", default="1200,836", help="window WIDTH,HEIGHT (default: down to the picture's end)")
    parser.add_argument("--keep-html", type=Path, help="also keep the page at this path")
    args = parser.parse_args()

    browser = find_browser()
    if browser is None:
        print(f"skipped: no Chromium on PATH (looked for {', '.join(BROWSERS)}); e.g. apt-get install chromium")
        return
    question = load_questions()[0].question
    with tempfile.TemporaryDirectory() as work:
        store, page = Path(work) / "demo-store", Path(work) / "paths.html"
        pathrag("demo", "--store", str(store), "--no-prompts")
        page.write_text(pathrag("paths", question, "--store", str(store), *DEMO_OPTIONS, "--format", "html"))
        if args.keep_html:
            shutil.copyfile(page, args.keep_html)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        screenshot(browser, page, args.out.resolve(), args.size)
    shrink(args.out)
    print(f"{args.out}: {args.out.stat().st_size / 1024:.0f} KB, {question!r} with {' '.join(DEMO_OPTIONS)}")


if __name__ == "__main__":
    main()
