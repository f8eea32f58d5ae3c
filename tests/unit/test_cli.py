"""The ``pathrag`` command through its real entry point (typer's runner, and the console script in a subprocess).

Indexing uses the hidden ``--replay`` option: the replay model answers from the demo's recorded extractions,
so the whole pipeline runs for real without a key. OPENAI_API_KEY is always unset.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from langchain_pathrag.cli import app, to_html, to_mermaid
from pathrag import Entity, Keywords, Relation, RetrievalResult, RetrievedItem, ScoredPath
from pathrag.demo import demo_data, load_questions
from pathrag.llm.prompts import CITATION_INSTRUCTIONS, EVIDENCE_INSTRUCTIONS
from pathrag.llm.tokens import approximate_token_count, count_tokens

DATA = Path(str(demo_data()))
QUESTIONS = load_questions()
Q1 = QUESTIONS[0]  # Odric Pelham → North Channel Dredging → Lantern Night Flood
DEMO_KNOBS = ["--num-seeds", "2", "--theta", "0.001"]


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATHRAG_MODEL", "PATHRAG_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)


def run(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def assert_error(result, code: int, *fragments: str) -> None:
    """One ``error:`` line on stderr, nothing else (but the progress line ``index`` shows first: ``Reading N
    files…``), no traceback, the given exit code."""
    assert result.exit_code == code, result.output
    stderr = re.sub(r"\AReading [\d,]+ files?…\n", "", result.stderr)
    assert stderr.count("\n") == 1 and stderr.startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr


def arrows(nodes) -> tuple[str, str]:
    return " → ".join(nodes), " → ".join(reversed(nodes))


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """Two demo documents as Markdown and plain text in nested folders, and a third as HTML."""
    folder = tmp_path / "docs"
    (folder / "inquiry").mkdir(parents=True)
    shutil.copy(DATA / "corpus" / "02-greyfen-expansion-plan.md", folder / "plan.md")
    shutil.copy(DATA / "corpus" / "06-morrow-inquiry-findings.md", folder / "inquiry" / "findings.txt")
    text = (DATA / "corpus" / "03-tarn-point-field-notes.md").read_text(encoding="utf-8")
    paragraphs = "".join(f"<p>{html.escape(p)}</p>\n" for p in text.split("\n\n"))
    (folder / "notes.html").write_text(
        f"<html><head><style>p{{}}</style></head><body>{paragraphs}</body></html>", encoding="utf-8"
    )
    (folder / "README.rst").write_text("not indexed: unsupported type", encoding="utf-8")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "skip.md").write_text("hidden folders are skipped", encoding="utf-8")
    return folder


@pytest.fixture
def store(tmp_path: Path, docs: Path) -> Path:
    result = run("index", docs, "--store", tmp_path / "store", "--replay", DATA)
    assert result.exit_code == 0, result.output
    return tmp_path / "store"


def paths_json(store: Path, question: str = Q1.question, *extra: str) -> dict:
    result = run("paths", question, "--store", store, "--format", "json", "--replay", DATA, *DEMO_KNOBS, *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- demo ------------------------------------------------------------------------------------------


def test_demo_prints_seeds_key_paths_hops_tokens_and_prompts() -> None:
    result = run("demo")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Indexed 6 documents (6 chunks): 37 entities, 104 relations from 12 replayed LLM calls" in out
    assert out.count("━━ Question") == 3
    for q in QUESTIONS:
        section = out.split("━━ Question")[QUESTIONS.index(q) + 1]
        assert q.question in section
        assert (
            f"Seed entities: {q.expected_path[0]}, {q.expected_path[-1]}" in section
            or f"Seed entities: {q.expected_path[-1]}, {q.expected_path[0]}" in section
        )
        listed = re.findall(r"^  \d+\. score (\d\.\d{4})  (\d) hops?  (.+)$", section, re.M)
        assert listed and any(path in arrows(q.expected_path) for _, _, path in listed), section
        assert re.search(r"^Hops: \d+ paths: ", section, re.M)
        context = re.search(r"^Context: ([\d,]+) tokens, \d+ paths .*, within the 4,000-token budget$", section, re.M)
        assert context and int(context[1].replace(",", "")) <= 4000, section  # the default budget, said
        prompt = section.split(" tokens) ──", 1)[1].split("\n── end of prompt ─", 1)[0].split("\n", 1)[1]
        # the printed prompt is a context within that budget, then the instructions
        instructions = f"\n\n{EVIDENCE_INSTRUCTIONS} {CITATION_INSTRUCTIONS}"
        assert prompt.endswith(instructions)
        assert count_tokens(prompt.removesuffix(instructions)) <= 4000
        assert prompt.startswith(f"Question: {q.question}\n\nPassages, least to most relevant:")
        # the best key path, and as many paths as the budget holds after it (the further paths included)
        assert 1 <= len(re.findall(r"^Path \d+:$", prompt, re.M))
    assert "the reference path of 3 of 3 questions is among the key paths" in out
    assert "set OPENAI_API_KEY to have a model answer" in out
    assert "Answer:" not in out


def test_demo_without_prompts_and_kept_in_a_store(tmp_path: Path) -> None:
    result = run("demo", "--no-prompts", "--store", tmp_path / "demo")
    assert result.exit_code == 0, result.output
    assert "exact prompt" not in result.stdout and "Question: " not in result.stdout
    # the kept index answers later commands, without any model
    data = json.loads(run("paths", Q1.question, "--store", tmp_path / "demo", "-f", "json", *DEMO_KNOBS).stdout)
    assert data["keywords"]["low_level"] == [Q1.question]  # no model: the question is the keyword
    assert "entities                          37" in run("stats", "--store", tmp_path / "demo").stdout


# -- index → paths → delete → paths ----------------------------------------------------------------


def test_index_reports_the_insert_summary(tmp_path: Path, docs: Path) -> None:
    result = run("index", docs, "--store", tmp_path / "s", "--replay", DATA)
    assert result.exit_code == 0, result.output
    rows = dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", result.stdout, re.M))
    assert rows["documents indexed"] == "3"
    assert rows["chunks"] == rows["chunks extracted"] == "3"
    assert rows["LLM calls"] == "3"  # one compact call each: the demo's documents are too long to pack
    assert int(rows["entities touched"]) > 30 and int(rows["relations touched"]) > 60
    assert int(rows["tokens (prompt + completion)"].split()[0].replace(",", "")) > 3_000
    assert "extracting" in result.stderr  # the progress bar


def test_index_again_skips_unchanged_files(store: Path, docs: Path) -> None:
    result = run("index", docs, "--store", store, "--replay", DATA)
    assert result.exit_code == 0, result.output
    rows = dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", result.stdout, re.M))
    assert (rows["documents indexed"], rows["documents unchanged"], rows["LLM calls"]) == ("0", "3", "0")


def test_round_trip_index_paths_delete_paths(store: Path) -> None:
    before = paths_json(store)
    assert sorted(before["seeds"]) == ["LANTERN NIGHT FLOOD", "ODRIC PELHAM"]
    found = [item["nodes"] for item in before["items"]]  # a path joining two named entities reads either way
    assert list(Q1.expected_path) in found or list(reversed(Q1.expected_path)) in found
    for item in before["items"]:
        assert item["kind"] == "path" and item["hops"] == len(item["nodes"]) - 1 and item["score"] > 0

    stats = run("stats", "--store", store).stdout
    assert re.search(r"^  docs/inquiry/findings.txt +1$", stats, re.M)  # the folder's name, the relative path
    assert re.search(r"^  docs/notes.html +1$", stats, re.M) and re.search(r"^  docs/plan.md +1$", stats, re.M)

    deleted = run("delete", "docs/inquiry/findings.txt", "--store", store)
    assert deleted.exit_code == 0, deleted.output
    assert re.search(r"^  documents deleted +1$", deleted.stdout, re.M)

    after = paths_json(store)
    # the flood was only known from the deleted inquiry findings: no path reaches it any more
    assert all("LANTERN NIGHT FLOOD" not in item["nodes"] for item in after["items"])
    assert "LANTERN NIGHT FLOOD" not in after["seeds"]
    assert "docs/inquiry/findings.txt" not in run("stats", "--store", store).stdout


def test_paths_table(store: Path) -> None:
    # the paper's paths: seeds in the order the keywords found them, paths from the first seed
    result = run("paths", Q1.question, "--store", store, "--replay", DATA, *DEMO_KNOBS, "--context", "paths")
    assert result.exit_code == 0, result.output
    assert "Seeds (2): ODRIC PELHAM, LANTERN NIGHT FLOOD" in result.stdout
    assert re.search(r"Key paths \(\d+ paths: .* hops?; mean [\d.]+ hops\)", result.stdout)
    assert re.search(r"│ 1 │ 0\.\d{4} │ \d +│ ODRIC PELHAM →", result.stdout)


def test_paths_shows_the_paths_query_puts_in_the_prompt(store: Path) -> None:
    shown = paths_json(store)
    prompt = run("query", Q1.question, "--store", store, "--replay", DATA, *DEMO_KNOBS, "--context-only", "--json")
    assert prompt.exit_code == 0, prompt.output
    sent = [item["nodes"] for item in json.loads(prompt.stdout)["sent"] if item["kind"] == "path"]
    listed = [item["nodes"] for item in shown["items"]]
    # `paths` lists the key paths; the prompt shows them (the best first) and further paths where room allows
    assert listed[0] in sent and len(listed) <= 15
    assert all(item["kind"] == "path" for item in shown["items"])  # the passages are `query`'s sources only
    paper = paths_json(store, Q1.question, "--context", "paths")
    assert [item["nodes"] for item in paper["items"]] != listed  # --context paths: the paper's paths


def test_paths_without_a_model_search_with_the_question(store: Path) -> None:
    result = run("paths", "Greyfen Marine Company and the Saltgate Barrier", "--store", store, "-f", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["keywords"] == {"high_level": [], "low_level": ["Greyfen Marine Company and the Saltgate Barrier"]}
    assert data["items"]


def test_mermaid_output_is_well_formed(store: Path) -> None:
    data = paths_json(store)
    result = run("paths", Q1.question, "--store", store, "-f", "mermaid", "--replay", DATA, *DEMO_KNOBS)
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "graph LR"
    nodes, edges, other = {}, [], []
    for line in lines[1:]:
        if m := re.fullmatch(r'    (n\d+)\["([^"]+)"\]', line):
            nodes[m[1]] = m[2]
        elif m := re.fullmatch(r'    (n\d+) -- "([^"]+)" --> (n\d+)', line):
            edges.append((m[1], m[3]))
        else:
            other.append(line)
    names = {n for item in data["items"] for n in item["nodes"]}
    assert set(nodes.values()) == names and len(nodes) == len(names)
    walked = {frozenset(p) for item in data["items"] for p in pairwise(item["nodes"])}
    assert {frozenset((nodes[a], nodes[b])) for a, b in edges} == walked and len(edges) == len(walked)
    seeds = {i for i, n in nodes.items() if n in data["seeds"]}
    assert other[0] == "    classDef seed stroke-width:3px" and len(other) == 2
    assert re.fullmatch(r"    class (\S+) seed", other[1]) and set(other[1].split()[1].split(",")) == seeds


def test_mermaid_escapes_labels() -> None:
    text = to_mermaid({'THE "GULL"': None, "#1 PIER": None}, {('THE "GULL"', "#1 PIER"): None}, [])
    assert text.splitlines() == [
        "graph LR",
        '    n1["THE #quot;GULL#quot;"]',
        '    n2["#35;1 PIER"]',
        '    n1 -- "related" --> n2',
    ]


HOSTILE_NAMES = [
    '%%{init: {"theme": "forest", "securityLevel": "loose"}}%%',
    "%% a comment",
    "A <img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">click</a>',
    "<b>bold</b> <script>alert(1)</script>",
    'x"]; click n1 call alert(1); n9["y',
    "#quot; &amp; &lt; #35;",
    "`markdown` **bold** $$x^2$$",
    "a|b;c [x]{y}(z) \\ :::cls",
    "style n1 fill:#f00;",
]


@pytest.mark.reliability
def test_mermaid_escapes_directives_markup_and_syntax_in_names_and_keywords() -> None:
    """Only letters, digits, spaces, ``-_.,/()'!?+@`` and entity codes reach a label (issue 24): no ``%`` of a
    directive, no ``<>&`` of markup, no quote, bracket, brace, ``;``, ``:``, ``|``, backtick, ``$`` or ``\\``.
    scripts/check_mermaid.py renders the same names with Mermaid itself."""
    names = [*HOSTILE_NAMES, "Zoë → 😀"]
    relations = {
        (a, b): SimpleNamespace(source=a, target=b, keywords=[b, "<b>x</b> %%{init: {}}%%"]) for a, b in pairwise(names)
    }
    text = to_mermaid(dict.fromkeys(names), relations, [names[0]])
    labels = []
    for line in text.splitlines()[1:]:
        node = re.fullmatch(r'    n\d+\["([^"]*)"\]', line)
        edge = re.fullmatch(r'    n\d+ -- "([^"]*)" --> n\d+', line)
        assert node or edge or line.startswith(("    classDef seed ", "    class n1 seed")), line
        if node or edge:
            labels.append((node or edge)[1])  # type: ignore[index]
    assert len(labels) == len(names) + len(relations)
    for label in labels:
        plain = re.sub(r"#(?:quot|\d+);", "", label)
        assert all(ch.isalnum() or ch in " -_.,/()'!?+@" for ch in plain), label
    decoded = [re.sub(r"#(quot|\d+);", lambda m: '"' if m[1] == "quot" else chr(int(m[1])), x) for x in labels]
    assert decoded[: len(names)] == [" ".join(n.split()) for n in names]
    assert labels[0] == (
        "#37;#37;#123;init#58; #123;#quot;theme#quot;#58; #quot;forest#quot;, #quot;securityLevel#quot;#58; "
        "#quot;loose#quot;#125;#125;#37;#37;"
    )
    assert labels[2] == "A #60;img src#61;x onerror#61;alert(1)#62;"


class _Checker(HTMLParser):
    """Fails on unbalanced tags; records tags, attributes and text."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "source", "wbr"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def test_html_output_is_a_well_formed_self_contained_picture(store: Path) -> None:
    data = paths_json(store)
    result = run("paths", Q1.question, "--store", store, "-f", "html", "--replay", DATA, *DEMO_KNOBS)
    assert result.exit_code == 0, result.output
    page = result.stdout
    assert page.startswith("<!DOCTYPE html>")
    checker = _Checker()
    checker.feed(page)
    checker.close()
    assert checker.stack == []
    tags = [tag for tag, _ in checker.tags]
    assert "script" not in tags and "link" not in tags and "iframe" not in tags
    assert re.findall(r"(?:src|href)=", page) == [] and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    names = {n for item in data["items"] for n in item["nodes"]}
    walked = {frozenset(p) for item in data["items"] for p in pairwise(item["nodes"])}
    assert tags.count("circle") == len(names) and tags.count("line") == len(walked)
    seeds = [a for tag, a in checker.tags if tag == "g" and {"node", "seed"} <= set(a.get("class", "").split())]
    assert len(seeds) == len(data["seeds"])
    best = " → ".join(data["items"][0]["nodes"])  # the best path, as text, before the picture
    assert page.index("Best path") < page.index(html.escape(best)) < page.index("<svg")
    text = "".join(checker.text)
    for name in names:
        assert name in text
    assert text.count("→") >= sum(len(item["nodes"]) - 1 for item in data["items"])  # the path list
    _, _, width, height = map(float, dict(checker.tags)["svg"]["viewbox"].split())
    for _, attrs in checker.tags:  # every drawn point lies inside the picture
        for x, y in (("cx", "cy"), ("x1", "y1"), ("x2", "y2")):
            if x in attrs:
                assert 0 <= float(attrs[x]) <= width and 0 <= float(attrs[y]) <= height


def test_html_escapes_names_and_lays_out_separate_parts() -> None:
    path = ScoredPath(nodes=("A<B", 'C & "D"'), score=0.5)
    result = RetrievalResult(
        query="<script>alert(1)</script>",
        keywords=Keywords(),
        seeds=["A<B", "LONE"],
        items=[
            RetrievedItem("path", "p1", "text", 0.5, path.nodes, (), path),
            RetrievedItem("entity", "e1", "LONE", 0.0, ("LONE",), ()),
        ],
    )
    entities = {"A<B": None, 'C & "D"': None, "LONE": Entity(name="LONE", type="thing", description="x < y")}
    page = to_html(result, entities, {("A<B", 'C & "D"'): None}, ["A<B", "LONE"])
    checker = _Checker()
    checker.feed(page)
    checker.close()
    assert checker.stack == [] and "script" not in [tag for tag, _ in checker.tags]
    assert "A&lt;B" in page and "C &amp; &quot;D&quot;" in page and "x &lt; y" in page
    circles = [(float(a["cx"]), float(a["cy"])) for tag, a in checker.tags if tag == "circle"]
    assert len(circles) == len(set(circles)) == 3  # the lone entity gets a place of its own


def _path_item(rank: int, nodes: tuple[str, ...], score: float) -> RetrievedItem:
    return RetrievedItem("path", f"p{rank}", "text", score, nodes, (), ScoredPath(nodes=nodes, score=score))


HOSTILE = '<script>&"'
LONG = "THE VERY LONG AND WINDING NAME OF THE SALTGATE HARBOUR REDEVELOPMENT AUTHORITY"


def _picture() -> tuple[RetrievalResult, dict, dict]:
    """Two key paths between two seeds, one entity with a hostile name and one with a very long name."""
    best, other = ("ALPHA", LONG, "OMEGA"), ("ALPHA", HOSTILE, "OMEGA")
    result = RetrievalResult(
        query="How is ALPHA connected to OMEGA?",
        keywords=Keywords(low_level=("ALPHA", "OMEGA")),
        seeds=["ALPHA", "OMEGA"],
        items=[_path_item(1, best, 0.9), _path_item(2, other, 0.4)],
    )
    entities = {name: Entity(name=name, type="thing", description=f"about {name}") for name in (*best, HOSTILE)}
    relations = {
        (min(a, b), max(a, b)): Relation(source=a, target=b, keywords=(f"{a[:5].lower()} link", "more"))
        for path in (best, other)
        for a, b in pairwise(path)
    }
    return result, entities, relations


def _parsed(page: str) -> _Checker:
    checker = _Checker()
    checker.feed(page)
    checker.close()
    assert checker.stack == []
    return checker


def test_html_shows_the_best_path_first_and_highlights_it() -> None:
    result, entities, relations = _picture()
    page = to_html(result, entities, relations, result.seeds)
    body = page.split("<body>", 1)[1]
    chain = html.escape(f"ALPHA → {LONG} → OMEGA")
    assert body.index("Best path") < body.index(chain) < body.index("<svg")  # before the picture
    assert body.index('<b>ALPHA</b> — <span class="rel">alpha link, more</span>') < body.index("<svg")
    checker = _parsed(page)
    best_lines = [a for tag, a in checker.tags if tag == "line" and "best" in a["class"].split()]
    best_nodes = [a for tag, a in checker.tags if tag == "g" and {"node", "best"} <= set(a["class"].split())]
    assert len(best_lines) == 2 and len(best_nodes) == 3
    assert [a for tag, a in checker.tags if tag == "tr" and a.get("class") == "best"] == [{"class": "best"}]


def test_html_labels_every_path_edge_and_keeps_every_name_whole() -> None:
    result, entities, relations = _picture()
    page = to_html(result, entities, relations, result.seeds)
    checker = _parsed(page)
    captions = re.findall(r'<g class="caption( best)?"><title>([^<]*)</title>.*?<text [^>]*>([^<]*)</text></g>', page)
    assert len(captions) == len(relations) == 4  # every edge of every path has its caption
    assert sum(best == " best" for best, _, _ in captions) == 2
    for relation in relations.values():
        caption = html.escape(f"{relation.keywords[0]}, more")
        assert any(c == caption and tip.startswith(html.escape(relation.source)) for _, tip, c in captions)
    text = "".join(checker.text)  # what a reader sees, tooltips included
    for name in entities:
        assert f"<title>{html.escape(name)} (thing): about" in page and name in text  # whole in its tooltip
    # the long name is wrapped on short lines under its node, none wider than the picture allows
    tspans = re.findall(r"<tspan [^>]*>([^<]*)</tspan>", page)
    assert all(len(html.unescape(t)) <= 16 for t in tspans) and "THE VERY LONG" in tspans
    # the picture is fitted around everything drawn: every point inside the viewBox
    _, _, width, height = map(float, dict(checker.tags)["svg"]["viewbox"].split())
    for tag, attrs in checker.tags:
        if tag == "rect":  # a caption's background
            assert 0 <= float(attrs["x"]) and float(attrs["x"]) + float(attrs["width"]) <= width
            assert 0 <= float(attrs["y"]) and float(attrs["y"]) + float(attrs["height"]) <= height
        elif tag in ("text", "tspan") and "x" in attrs:
            assert 0 <= float(attrs["x"]) <= width


def test_html_without_any_path_or_entity_says_so() -> None:
    empty = RetrievalResult(query="Who?", keywords=Keywords(), seeds=[])
    page = to_html(empty, {}, {}, [])
    assert "No entity of the store matches the question." in page
    checker = _parsed(page)
    assert [tag for tag, _ in checker.tags].count("circle") == 0


def test_html_escapes_a_hostile_name_and_stays_self_contained() -> None:
    result, entities, relations = _picture()
    page = to_html(result, entities, relations, result.seeds)
    assert "<script" not in page.lower() and HOSTILE not in page
    assert "&lt;script&gt;&amp;&quot;" in page
    assert re.findall(r"https?:", page) == ["http:"]  # only the SVG namespace, no link anywhere
    assert re.findall(r"(?:src|href)=", page) == []
    _parsed(page)


def test_query_context_only_prints_the_exact_prompt(store: Path) -> None:
    result = run(
        "query",
        Q1.question,
        "--store",
        store,
        "--context-only",
        "--replay",
        DATA,
        "--max-tokens",
        "100000",
        *DEMO_KNOBS,
    )
    assert result.exit_code == 0, result.output
    prompt = result.stdout
    assert prompt.startswith(f"Question: {Q1.question}\n\nPassages, least to most relevant:")
    assert prompt.rstrip().endswith(f"say so rather than guessing. {CITATION_INSTRUCTIONS}")
    # passages, then paths (most reliable last), numbered once through the whole context
    assert prompt.index("\nPassage 1:\n") < prompt.index("\nPassage 3:\n") < prompt.index("\nPath 4:\n")
    blocks = re.findall(r"^Path (\d+):\n(.+)$", prompt, re.M)
    assert len(blocks) >= 1  # the key paths, then further paths: one line of relation statements each
    assert all("→ " in line or "— " in line for _, line in blocks)
    # the question names both ends: the best path (shown last) joins them
    assert "ODRIC PELHAM" in blocks[-1][1] and "LANTERN NIGHT FLOOD" in blocks[-1][1], blocks
    sources = json.loads(
        run(
            "query",
            Q1.question,
            "--store",
            store,
            "--context-only",
            "--json",
            "--replay",
            DATA,
            "--max-tokens",
            "100000",
            *DEMO_KNOBS,
        ).stdout
    )
    assert sources["prompt"] == prompt.rstrip("\n")
    kinds = [s["kind"] for s in sources["sent"]]
    assert kinds.count("path") == len(blocks) and kinds.count("passage") == 3  # the test store's three documents
    assert sorted(s["number"] for s in sources["sent"]) == list(range(1, len(kinds) + 1))  # the prompt's numbers
    documents = {d for s in sources["sent"] for d in s["documents"]}
    assert documents == {"docs/plan.md", "docs/notes.html", "docs/inquiry/findings.txt"}


def test_query_context_budget_drops_the_least_reliable_paths(store: Path) -> None:
    args = ("query", Q1.question, "--store", store, "--context-only", "--replay", DATA, "--context", "paths")
    full = run(*args, *DEMO_KNOBS).stdout
    small = run(*args, "--max-tokens", "900", *DEMO_KNOBS).stdout
    assert full.startswith(f"Question: {Q1.question}\n\nRelational paths from the knowledge graph")
    assert 0 < small.count("\nPath ") < full.count("\nPath ")


def test_query_default_context_keeps_its_budget_with_passages_and_paths(store: Path) -> None:
    out = run(
        "query", Q1.question, "--store", store, "--context-only", "--replay", DATA, "--max-tokens", "2500", *DEMO_KNOBS
    ).stdout
    context = out[: out.rindex("\n\nAnswer the question above")]
    assert "\nPassage 1:\n" in context and re.search(r"\nPath \d+:\n", context)
    assert approximate_token_count(context) <= 2500


# -- errors: one line, non-zero exit, no traceback -----------------------------------------------------


def test_error_missing_store(tmp_path: Path) -> None:
    for args in (["paths", "q"], ["query", "q", "--context-only"], ["delete", "x"], ["stats"]):
        assert_error(run(*args, "--store", tmp_path / "nope"), 1, f"no pathrag store at {tmp_path / 'nope'}")


def test_error_store_is_not_a_store(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    assert_error(run("stats", "--store", tmp_path / "file"), 1, "is a file")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "something.txt").write_text("x")
    assert_error(run("stats", "--store", tmp_path / "dir"), 1, "not a store made by the pathrag command")


def test_error_unreadable_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"caf\xe9 au lait")
    assert_error(
        run("index", bad, "--store", tmp_path / "s", "--replay", DATA), 1, f"cannot read {bad}: not UTF-8 text"
    )
    assert not (tmp_path / "s").exists()  # nothing was indexed


def test_error_missing_and_unsupported_paths(tmp_path: Path) -> None:
    assert_error(
        run("index", tmp_path / "nope.md", "--store", tmp_path / "s", "--replay", DATA), 1, "no such file or folder"
    )
    (tmp_path / "doc.docx").write_text("x")
    assert_error(
        run("index", tmp_path / "doc.docx", "--store", tmp_path / "s", "--replay", DATA), 1, "unsupported file type"
    )


def test_error_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert_error(
        run("index", tmp_path / "empty", "--store", tmp_path / "s", "--replay", DATA),
        1,
        "no text, Markdown, HTML or PDF files under",
    )
    (tmp_path / "blank").mkdir()
    (tmp_path / "blank" / "a.md").write_text("  \n\n ")
    assert_error(
        run("index", tmp_path / "blank", "--store", tmp_path / "s", "--replay", DATA),
        1,
        f"nothing to index: {tmp_path / 'blank' / 'a.md'}: no text",
    )


def test_pdf_without_pypdf_is_skipped_with_a_note(tmp_path: Path, docs: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)  # import pypdf -> ImportError
    (docs / "scan.pdf").write_bytes(b"%PDF-1.4\n")
    result = run("index", docs, "--store", tmp_path / "s", "--replay", DATA)
    assert result.exit_code == 0, result.output
    assert f"skipped {docs / 'scan.pdf'}: install pypdf to index PDF files" in result.stderr


def test_error_no_key_for_generation(tmp_path: Path, docs: Path, store: Path) -> None:
    assert_error(
        run("index", docs, "--store", tmp_path / "new"),
        1,
        "indexing extracts entities with a language model: set OPENAI_API_KEY",
    )
    assert_error(run("query", Q1.question, "--store", store), 1, "set OPENAI_API_KEY", "--context-only")


def test_error_bad_options(store: Path) -> None:
    assert_error(
        run("paths", "q", "--store", store, "--format", "xml"), 2, "'xml' is not one of", "(see: pathrag paths --help)"
    )
    assert_error(run("paths", "q", "--store", store, "--bogus"), 2, "No such option: --bogus")
    assert_error(run("paths", "q", "--store", store, "--top-k", "0"), 2, "--top-k")
    assert_error(run("index", "--store", store), 2, "Missing argument")
    assert_error(run("frobnicate"), 2, "No such command")


def test_error_embeddings_mismatch(store: Path) -> None:
    assert_error(
        run("paths", "q", "--store", store, "--embedding-model", "text-embedding-3-small"),
        1,
        "was built with the embeddings hashing",
        "use another --store",
    )


def test_error_unknown_document(store: Path) -> None:
    deleted = run("delete", "docs/plan.md", "missing.md", "--store", store)
    assert_error(deleted, 1, "no document 'missing.md'", "docs/plan.md")
    assert "docs/plan.md" in run("stats", "--store", store).stdout  # nothing was deleted


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    result = run("stats", "--store", tmp_path / "nope", "--debug")
    assert result.exit_code == 1
    assert "Traceback (most recent call last)" in result.stderr and "CliError" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("error: no pathrag store")


def test_no_arguments_prints_help() -> None:
    result = run()
    assert result.exit_code == 0
    for command in ("index", "query", "paths", "delete", "stats", "demo"):
        assert command in result.stdout


# -- the installed console script ------------------------------------------------------------------------


def _script() -> list[str]:
    found = shutil.which("pathrag", path=os.path.dirname(sys.executable)) or shutil.which("pathrag")
    return [found] if found else [sys.executable, "-m", "langchain_pathrag.cli"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}


def test_console_script_runs_the_demo() -> None:
    done = subprocess.run(
        [*_script(), "demo", "--no-prompts"], capture_output=True, text=True, env=_env(), timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    for q in QUESTIONS:
        assert any(path in done.stdout for path in arrows(q.expected_path)), q.question
    assert "Traceback" not in done.stderr


def test_console_script_errors_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [*_script(), "query", "q", "--store", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr == (
        "error: answering needs a language model: set OPENAI_API_KEY (and OPENAI_BASE_URL for "
        "another OpenAI-compatible endpoint), or add --context-only to print the prompt that "
        "would be sent\n"
    )


def test_query_without_max_tokens_keeps_the_default_budget(store: Path) -> None:
    from pathrag.query.context import DEFAULT_CONTEXT_TOKENS

    out = run("query", Q1.question, "--store", store, "--context-only", "--replay", DATA, *DEMO_KNOBS).stdout
    context = out[: out.rindex("\n\nAnswer the question above")]
    assert "\nPassage 1:\n" in context
    assert DEFAULT_CONTEXT_TOKENS // 2 < approximate_token_count(context) <= DEFAULT_CONTEXT_TOKENS
