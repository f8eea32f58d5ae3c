"""The multi-hop QA benchmark on a small shipped sample (hashing embedder, no network), and the OpenIE importer."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
import pytest_socket

from pathrag import HashingEmbedder, NetworkXGraphStore, PathRAGIndex, find_key_paths
from pathrag.importers import import_openie
from pathrag.index.packing import prompt_texts
from pathrag.query.context import result_context

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = Path(__file__).parents[1] / "fixtures" / "musique_small"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))  # the benchmark imports its peers module beside it
    spec = importlib.util.spec_from_file_location("multihop_qa", ROOT / "benchmarks" / "multihop_qa.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_benchmark_table_has_every_method_and_budget_with_rates_in_range(bench, tmp_path):
    report = bench.run(SAMPLE, embedder="hashing", budgets=[300, 900], cache_dir=tmp_path, progress=False)
    assert report["questions"] == 4 and report["embedder"] == "hashing" and report["yes_no"] == 0
    rows = {(r["method"], r["budget"]): r for r in report["rows"]}
    assert set(rows) == {(m, b) for m in bench.METHODS for b in (300, 900)}
    for (_method, budget), row in rows.items():
        assert 0 <= row["answer_in_context"] <= 1 and 0 <= row["gold_recall"] <= 1
        assert row["tokens"] <= budget  # every context keeps its budget
        assert 0 <= row["p50_ms"] <= row["p95_ms"]
        assert row["answer_in_context"] * 4 == int(row["answer_in_context"] * 4)  # a share of 4 questions
    for method in ("paper", "paths-alone", "facts"):
        assert rows[method, 900]["gold_recall"] == 0  # paths and facts carry no passage text
        assert report["passages"][method] == {"recall_at_2": None, "recall_at_5": None}  # nor rank passages
    for method in ("dense", "ppr", "proprag", "default", "lightrag-local"):
        assert rows[method, 900]["gold_recall"] > 0
        ranked = report["passages"][method]
        assert 0 <= ranked["recall_at_2"] <= ranked["recall_at_5"] <= 1 and ranked["recall_at_5"] > 0
    for budget in (300, 900):  # the default shows a path whenever it found one, as paths-alone shows
        assert rows["default", budget]["with_path"] == rows["paths-alone", budget]["with_path"] > 0
        assert rows["dense", budget]["with_path"] == 0
    table = bench.format_table(report)
    assert table.count("\n| ") == len(rows) + 1 + len(bench.METHODS) + 1 and "| default | 900 |" in table
    assert (tmp_path / "embeddings-hashing.npz").exists()  # the cache is written and reused
    again = bench.run(SAMPLE, embedder="hashing", budgets=[300, 900], cache_dir=tmp_path, progress=False)
    assert again["rows"] == [
        {**r, "p50_ms": a["p50_ms"], "p95_ms": a["p95_ms"]} for r, a in zip(report["rows"], again["rows"], strict=True)
    ]
    assert again["passages"] == report["passages"]


def test_answers_match_whole_words_and_yes_no_questions_are_left_out(bench):
    norway = bench.Question("What country?", ["Norway", "NO"], [])
    assert bench.answer_in(norway, "It was written in Norway.")
    assert not bench.answer_in(norway, "nothing is known")  # "no" inside other words is no answer
    assert bench.answer_in(norway, "There is no doubt.")  # the alias as a word still counts
    assert bench.yes_no(bench.Question("Same country?", ["yes"], [])) and not bench.yes_no(norway)
    gold = [{"c1"}, {"c2", "c3"}]
    assert bench.recall_at(gold, ["c9", "c3", "c1"], 2) == 0.5 and bench.recall_at(gold, ["c9", "c3", "c1"], 5) == 1


def test_main_prints_the_table_and_writes_json(bench, tmp_path, capsys):
    out = tmp_path / "report.json"
    bench.main(
        [
            "--data",
            str(SAMPLE),
            "--budgets",
            "600",
            "--methods",
            "dense,default",
            "--limit",
            "2",
            "--cache-dir",
            str(tmp_path),
            "--json",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert printed.startswith("2 questions, embedder hashing") and "| dense | 600 |" in printed
    assert [r["method"] for r in json.loads(out.read_text())["rows"]] == ["dense", "default"]


def test_openie_passages_become_chunks_that_every_record_cites():
    index = PathRAGIndex(embedder=HashingEmbedder())
    summary = import_openie(SAMPLE / "openie_sample.json", index)
    docs = json.loads((SAMPLE / "openie_sample.json").read_text())["docs"]
    assert summary.documents == summary.chunks == len(docs) == 80
    graph = index.graph.graph
    chunk_ids = set(index.chunk_index._items)  # noqa: SLF001 - the in-memory index's own table
    assert all(set(data["source_ids"]) <= chunk_ids for _, data in graph.nodes(data=True))
    assert all(set(data["source_ids"]) <= chunk_ids for *_, data in graph.edges(data=True))
    first = docs[0]
    subject, predicate, obj = first["extracted_triples"][0]
    relation = index.graph.get_relations([(subject.upper(), obj.upper())])
    assert [r.description for r in relation.values()] == [f"{subject} {predicate} {obj}"]
    hit = index.chunk_index.query(first["passage"], 1)[0]
    assert hit.text == first["passage"] and subject.upper() in hit.metadata["entities"]


@pytest.mark.parametrize(
    "row",
    [
        ["A", "B"],
        ["A", "rel", "B", "extra"],
        [],
        ["A", "", "B"],
        ["A", 3, "B"],
        [None, "rel", "B"],
        "A rel B",
        {"s": "A"},
        7,
    ],
)
def test_malformed_triples_are_skipped_and_counted(row):
    docs = [
        {
            "passage": "Ada met Bo.",
            "extracted_entities": ["Ada", "Bo"],
            "extracted_triples": [row, ["Ada", "met", "Bo"]],
        }
    ]
    store = NetworkXGraphStore()
    summary = import_openie(docs, store)
    assert (summary.skipped, summary.relations, summary.entities) == (1, 1, 2)


def test_malformed_passages_and_files_never_raise_deep(tmp_path):
    docs = [
        None,
        {"passage": "   "},
        {"title": "T", "text": "Body."},
        {"passage": "X.", "extracted_entities": [3, ""], "extracted_triples": "nope"},
    ]
    summary = import_openie({"docs": docs}, NetworkXGraphStore())
    assert (summary.documents, summary.skipped, summary.entities) == (2, 4, 0)  # 2 bad passages, 2 bad names
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read"):
        import_openie(bad, NetworkXGraphStore())
    with pytest.raises(ValueError, match="list of passages"):
        import_openie({"docs": "text"}, NetworkXGraphStore())


def test_default_context_holds_passages_and_paths_mode_matches_the_paper_layout():
    index = PathRAGIndex(embedder=HashingEmbedder())
    import_openie(SAMPLE / "openie_sample.json", index)
    question = json.loads((SAMPLE / "questions.json").read_text())[0]["question"]
    evidence = index.retrieve(question, keyword_llm=False)
    paths = index.retrieve(question, keyword_llm=False, context="paths")
    assert evidence.passages and not paths.passages
    assert evidence.paths and paths.paths
    assert [i.path for i in paths.paths] == find_key_paths(index.graph, paths.seeds)  # the paper, unchanged
    assert all("—" in i.text and "\n  relation" not in i.text for i in evidence.paths)  # chains of statements
    assert all("\n  relation" in i.text for i in paths.paths)  # the paper's walks
    scores = [p.score for p in evidence.passages]
    assert scores == sorted(scores, reverse=True)
    text = result_context(evidence, max_tokens=800).text
    assert text.startswith(f"Question: {question}\n\nPassages, least to most relevant:")
    assert result_context(paths).text.startswith(f"Question: {question}\n\nRelational paths from the knowledge graph")


class _Reader(BaseHTTPRequestHandler):
    """A stand-in OpenAI-compatible endpoint: answers right exactly when the prompt's context holds the answer."""

    questions: list = []
    bench = None
    prompts: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        self.prompts.append((body["model"], prompt, body["max_tokens"], body["temperature"]))
        answer = None
        for q in self.questions:
            if prompt.startswith(f"Question: {q.text}\n"):
                context = prompt.split("\n", 1)[1]
                answer = f"Answer: {q.answers[0]}" if self.bench.answer_in(q, context) else "I do not know"
        reply = {
            "id": "stub",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
        }
        data = json.dumps(reply).encode()
        self.send_response(200 if answer is not None else 400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def reader_url(bench):
    pytest_socket.enable_socket()  # the suite blocks TCP; this stand-in endpoint listens on loopback
    _Reader.questions, _Reader.bench, _Reader.prompts = bench.load_questions(SAMPLE), bench, []
    server = HTTPServer(("127.0.0.1", 0), _Reader)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    pytest_socket.disable_socket(allow_unix_socket=True)


def test_a_reader_on_an_openai_compatible_endpoint_is_scored_by_exact_match_and_f1(bench, tmp_path, reader_url):
    questions = bench.load_questions(SAMPLE)
    reader = bench.make_reader(reader_url, "stub-reader", api_key="sk-test")
    report = bench.run(
        SAMPLE,
        budgets=[900],
        methods=["dense", "default"],
        cache_dir=tmp_path,
        reader=reader,
        reader_budget=900,
        progress=False,
    )
    for row in report["rows"]:  # the stand-in answers right exactly when the context holds the answer
        passages = report["passages"][row["method"]]
        assert passages["em"] == row["answer_in_context"] and passages["f1"] == pytest.approx(passages["em"])
        assert passages["reader_budget"] == 900
    assert len(_Reader.prompts) == 2 * len(questions) == len(report["answers"])
    assert {a["answer"] for a in report["answers"]} <= {"I do not know", *(q.answers[0] for q in questions)}
    model, prompt, max_tokens, temperature = _Reader.prompts[0]
    assert (model, max_tokens, temperature) == ("stub-reader", bench.READER_MAX_TOKENS, 0)
    assert prompt.endswith(bench.READER_PROMPT.format(context="").lstrip())  # the same instructions for every method
    assert "reader EM / F1 at 900" in bench.format_table(report)
    assert bench.token_f1(questions[0], "the " + questions[0].answers[0]) == 1.0
    assert 0 < bench.token_f1(questions[0], questions[0].answers[0] + " and more words") < 1


def test_reader_flags_go_together(bench, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--data", str(SAMPLE), "--reader-url", "http://127.0.0.1:1/v1"])
    assert "--reader-url and --reader-model go together" in capsys.readouterr().err


def test_the_graph_can_be_built_by_extraction_with_a_model(bench, tmp_path):
    """--extract-with: pathrag's own extraction over the passages instead of the OpenIE import."""

    class TitleExtractor:  # a stand-in model: each passage's title becomes its one entity
        name = "title-extractor"

        def __init__(self) -> None:
            self.calls = 0

        def complete(self, prompt: str) -> str:
            raise AssertionError("indexing is async")

        async def acomplete(self, prompt: str) -> str:  # the compact prompt
            self.calls += 1
            title = prompt_texts(prompt)[0].split("\n", 1)[0]
            return f"E|{title}|concept|{title}\nEND"

    model = TitleExtractor()
    report = bench.run(
        SAMPLE, budgets=[900], methods=["dense", "default"], cache_dir=tmp_path, progress=False, extract_with=model
    )
    assert model.calls == len(bench.corpus_passages(SAMPLE)) == 80  # one compact call each, no gleaning
    rows = {r["method"]: r for r in report["rows"]}
    assert rows["default"]["gold_recall"] > 0 and 0 <= rows["default"]["answer_in_context"] <= 1


def test_the_lexical_graph_is_built_by_the_benchmark_itself(bench, tmp_path):
    report = bench.run(
        SAMPLE, budgets=[900], methods=["dense", "default"], cache_dir=tmp_path, progress=False, graph="lexical"
    )
    rows = {r["method"]: r for r in report["rows"]}
    assert rows["default"]["with_path"] > 0  # paths over the lexical graph
    assert report["passages"]["default"]["recall_at_5"] > 0
    with pytest.raises(SystemExit):  # two ways of building the graph at once
        bench.main(["--data", str(SAMPLE), "--graph", "lexical", "--extract-with", "openai:gpt-4o-mini"])


def test_the_indexing_cost_benchmark_counts_calls_and_tokens_per_setting(tmp_path):
    spec = importlib.util.spec_from_file_location("indexing_cost", ROOT / "benchmarks" / "indexing_cost.py")
    cost = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = cost  # its dataclass looks its module up
    spec.loader.exec_module(cost)
    pytest_socket.enable_socket()  # the stand-in endpoint listens on loopback
    try:
        cost.main(["--data", str(SAMPLE), "--limit", "5", "--json", str(tmp_path / "cost.json")])
    finally:
        pytest_socket.disable_socket(allow_unix_socket=True)
    rows = {r["setting"]: r for r in json.loads((tmp_path / "cost.json").read_text())}
    assert set(rows) == set(cost.SETTINGS)
    # five ~100-token passages: one each; one packed call; extraction and a gleaning each; one each; none
    assert [rows[s]["calls"] for s in cost.SETTINGS] == [5, 1, 10, 5, 0]
    assert rows["compact"]["prompt_tokens"] < rows["paper-no-gleaning"]["prompt_tokens"] / 3
    assert rows["compact-packed"]["prompt_tokens"] < rows["compact"]["prompt_tokens"] / 2
    assert rows["compact-packed"]["completion_tokens"] >= rows["compact"]["completion_tokens"] > 0
    assert rows["paper"]["prompt_tokens"] > 2 * rows["paper-no-gleaning"]["prompt_tokens"] > 0
    assert rows["paper"]["completion_tokens"] > 0 and rows["lexical"]["prompt_tokens"] == 0
