"""Render ``pathrag paths --format mermaid`` output of hostile names and keywords with Mermaid itself.

    python scripts/check_mermaid.py                                  # mermaid.min.js from MERMAID_JS or /tmp/mm
    python scripts/check_mermaid.py --mermaid node_modules/mermaid/dist/mermaid.min.js --browser chromium

Each case (a Mermaid directive, HTML tags, Mermaid syntax, entity codes, Markdown and math markers in an
entity name or a relation's keywords) goes through :func:`langchain_pathrag.cli.to_mermaid`, into a page that
runs ``mermaid.run()`` in a headless Chromium (offline: a local ``mermaid.min.js``, a fresh profile, no
network). A case passes when the diagram renders, every label reads exactly the name or keywords given (no
directive applied, no markup made), and the rendered SVG holds no element a label brought (``img``, ``a``,
``b``, ``script``...). A control renders the same names with quotes escaped only (the earlier escaping) to show
that the check sees the failures. Not part of the test suite: without a Chromium or a ``mermaid.min.js`` it
says so and exits 0. Exit code 1 when a case fails.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from headless import FLAGS, find_browser

from langchain_pathrag.cli import to_mermaid

MERMAID_JS = ("/tmp/mm/node_modules/mermaid/dist/mermaid.min.js", "node_modules/mermaid/dist/mermaid.min.js")

NAMES = [
    '%%{init: {"theme": "forest", "securityLevel": "loose"}}%%',
    "%% a comment",
    "A <img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">click</a>',
    "<b>bold</b> <script>alert(1)</script>",
    'x"]; click n1 call alert(1); n9["y',
    "#quot; &amp; &lt; #35; #60;",
    "`markdown` **bold** $$x^2$$",
    "a|b;c [x]{y}(z) \\ :::cls",
    "style n1 fill:#f00;",
    "end",
    "Zoë → 😀",
]
KEYWORDS = [
    ["%%{init: {'theme': 'dark'}}%%", "<img src=x>"],
    ["<a href=x>link</a>", "<b>b</b>"],
    ['-->|"x"| n1', "a;b"],
]
EXPECTED_THEME = "default"
MARKUP = "img, a, b, script, iframe, object, embed, i, u, em, strong"

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><pre class="mermaid">{diagram}</pre>
<div id="status">pending</div><pre id="labels"></pre><div id="markup"></div>
<script src="{mermaid}"></script>
<script>
mermaid.initialize({{startOnLoad: false}});
mermaid.run({{querySelector: '.mermaid'}}).then(() => {{
  const svg = document.querySelector('.mermaid svg');
  const labels = [...svg.querySelectorAll('.nodeLabel, .edgeLabel')].map(e => e.textContent);
  document.getElementById('labels').textContent = JSON.stringify(labels);
  document.getElementById('markup').textContent = 'markup ' + svg.querySelectorAll('{markup}').length
    + ' theme ' + (mermaid.mermaidAPI.getConfig().theme || '');
  document.getElementById('status').textContent = 'RENDERED OK';
}}).catch(e => {{ document.getElementById('status').textContent = 'ERROR ' + e; }});
</script></body></html>"""


def diagram(names: list[str], keywords: list[list[str]], escape: bool = True) -> tuple[str, list[str]]:
    """The Mermaid text for ``names`` in a chain whose relations carry ``keywords``, and the labels expected."""
    relations = {}
    for i, (a, b) in enumerate(zip(names, names[1:], strict=False)):
        words = keywords[i % len(keywords)] if keywords else []
        relations[(a, b)] = SimpleNamespace(source=a, target=b, keywords=words)
    text = to_mermaid(dict.fromkeys(names), relations, names[:1])
    if not escape:  # the control: what the earlier escaping (quotes and # only) wrote
        text = _unescaped(names, relations)
    expected = [" ".join(n.split()) for n in names]
    expected += [", ".join(r.keywords[:2]) for r in relations.values()]
    return text, expected


def _unescaped(names: list[str], relations: dict[tuple[str, str], SimpleNamespace]) -> str:
    def old(text: str) -> str:
        return " ".join(text.split()).replace("#", "#35;").replace('"', "#quot;")

    ids = {n: f"n{i}" for i, n in enumerate(names, 1)}
    lines = ["graph LR", *(f'    {ids[n]}["{old(n)}"]' for n in names)]
    lines += [f'    {ids[a]} -- "{old(", ".join(r.keywords[:2]))}" --> {ids[b]}' for (a, b), r in relations.items()]
    return "\n".join(lines)


def render(browser: str, mermaid_js: Path, text: str) -> tuple[str, list[str], str]:
    """Render ``text`` in a headless browser: (status line, label texts, markup/theme note)."""
    with tempfile.TemporaryDirectory() as work:
        page = Path(work) / "page.html"
        page.write_text(
            PAGE.format(diagram=html.escape(text), mermaid=mermaid_js.resolve().as_uri(), markup=MARKUP),
            encoding="utf-8",
        )
        profile = Path(work) / "profile"
        done = subprocess.run(
            [
                browser,
                *FLAGS,
                f"--user-data-dir={profile}",
                "--allow-file-access-from-files",
                "--virtual-time-budget=5000",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    dom = done.stdout
    status = _element(dom, "div", "status") or f"no page (exit {done.returncode}): {done.stderr[-300:]}"
    labels_json = _element(dom, "pre", "labels")
    labels = json.loads(labels_json) if labels_json else []
    return status, labels, _element(dom, "div", "markup")


def _element(dom: str, tag: str, element_id: str) -> str:
    found = re.search(rf'<{tag} id="{element_id}">(.*?)</{tag}>', dom, re.S)
    return html.unescape(found[1]) if found else ""


def check(browser: str, mermaid_js: Path, names: list[str], keywords: list[list[str]], escape: bool) -> list[str]:
    """What is wrong with the rendered diagram (empty: it rendered as it should)."""
    text, expected = diagram(names, keywords, escape)
    status, labels, markup = render(browser, mermaid_js, text)
    if status != "RENDERED OK":
        return [status]
    problems = []
    shown = {" ".join(label.split()) for label in labels}  # an edge label is nested in two .edgeLabel elements
    if shown != set(expected):
        problems.append(
            f"labels differ: shown {sorted(shown - set(expected))}, missing {sorted(set(expected) - shown)}"
        )
    if markup != f"markup 0 theme {EXPECTED_THEME}":
        problems.append(f"rendered {markup} (expected markup 0 theme {EXPECTED_THEME})")
    return problems


def main() -> int:
    """Render every case; 1 when one fails, 0 when all pass or nothing can render."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mermaid", type=Path, help="mermaid.min.js (default: $MERMAID_JS, then /tmp/mm/...)")
    parser.add_argument("--browser", help="a Chromium to run headless (default: the first found)")
    args = parser.parse_args()
    browser = args.browser or find_browser()
    candidates = [args.mermaid] if args.mermaid else [Path(p) for p in (os.environ.get("MERMAID_JS"), *MERMAID_JS) if p]
    mermaid_js = next((p for p in candidates if p.is_file()), None)
    if browser is None or mermaid_js is None:
        print(
            f"skipped: needs a Chromium ({browser or 'none found'}) and mermaid.min.js ({mermaid_js or 'none found'})"
        )
        return 0
    cases = [([name, "Plain"], KEYWORDS[:1]) for name in NAMES] + [(["Ada", "Lab", "Pier", "Gull"], KEYWORDS)]
    cases.append((NAMES, KEYWORDS))  # all at once
    failed = 0
    for names, keywords in cases:
        problems = check(browser, mermaid_js, names, keywords, escape=True)
        failed += bool(problems)
        label = names[0] if len(names) == 2 else f"{len(names)} names"
        print(f"{'FAIL' if problems else 'ok  '} {label!r}{': ' + '; '.join(problems) if problems else ''}")
    control = sum(bool(check(browser, mermaid_js, [n, "Plain"], KEYWORDS[:1], escape=False)) for n in NAMES)
    print(f"control (quotes and # escaped only): {control} of {len(NAMES)} cases fail, as expected without escaping")
    print(f"{len(cases) - failed} of {len(cases)} cases rendered as given with {mermaid_js}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
