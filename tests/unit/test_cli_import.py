"""``pathrag import`` and one store format: imported, library-made and command-line stores open everywhere.

Everything runs without a key (OPENAI_API_KEY is always unset) and without a model: imports make no LLM
call, and ``paths`` / ``query --context-only`` need none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from langchain_pathrag import PathRAGEmbeddings, PathRAGIndexer
from langchain_pathrag.cli import app
from langchain_pathrag.cli.imports import read_graph_documents
from pathrag import HashingEmbedder
from pathrag.demo import demo_data
from pathrag.sqlite import STORE_FILE, read_store_info

from ..langchain_fakes import HARBOUR, QUESTION, WALL, ScriptedChatModel, embeddings

FIXTURES = Path(__file__).parents[1] / "fixtures"
LIGHTRAG = FIXTURES / "lightrag"
OPENIE = FIXTURES / "musique_small" / "openie_sample.json"


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PATHRAG_MODEL", "PATHRAG_EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def ok(*args: object) -> str:
    result = run(*args)
    assert result.exit_code == 0, result.output
    return result.stdout


def assert_error(result, *fragments: str) -> None:
    """One ``error:`` line on stderr, no traceback, a non-zero exit code."""
    assert result.exit_code != 0, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def stats(store: Path, *extra: str) -> dict[str, str]:
    """The top block of ``pathrag stats``: row name -> value (commas dropped)."""
    rows = {}
    for line in ok("stats", "--store", store, *extra).split("Documents (id")[0].splitlines()[1:]:
        match = re.match(r"^  (\S.*?)  +(\S.*)$", line)
        if match:
            rows[match[1]] = match[2].replace(",", "")
    return rows


def figures(rows: dict[str, str]) -> tuple[str, ...]:
    return tuple(
        rows.get(k, "-") for k in ("documents", "imports", "imported records", "chunks", "entities", "relations")
    )


def summary_line(stdout: str) -> str:
    return stdout.splitlines()[0]


# -- pathrag import lightrag -------------------------------------------------------------------------


def test_lightrag_import_then_stats_paths_and_query_without_a_key(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    out = ok("import", "lightrag", LIGHTRAG, "--store", kb)
    # "MARA" and Mara are one name; the quotes-only node and the MARA-Mara self-loop are skipped
    assert summary_line(out).endswith(
        ": 5 entities, 4 relations, 2 chunks (2 source documents); 1 merged name, "
        "2 skipped records, 0 vectors reused; no LLM call."
    )
    assert read_store_info(kb)["embedder"] == "hashing-256"
    rows = stats(kb, "--check")
    assert figures(rows) == ("1", "1", "11", "2", "5", "4")
    assert rows["embeddings"].startswith("hashing")

    found = json.loads(ok("paths", "How is Ida connected to the Tide Board?", "--store", kb, "--format", "json"))
    walks = {tuple(item["nodes"]) for item in found["items"] if item["kind"] == "path"}
    assert ("IDA", "GULL", "MARA", "TIDE BOARD") in walks or ("TIDE BOARD", "MARA", "GULL", "IDA") in walks

    prompt = ok("query", "Who owns the Gull?", "--store", kb, "--context-only")
    assert prompt.startswith("Question: Who owns the Gull?")
    assert "Mara sails at night and owns the Gull, a small boat that Ida built." in prompt  # an imported chunk
    paths_only = ok("query", "Who owns the Gull?", "--store", kb, "--context-only", "--context", "paths")
    assert "relation MARA -> GULL [ownership, maintenance, repair]: Mara owns the Gull." in paths_only

    again = ok("import", "lightrag", LIGHTRAG, "--store", kb)  # same document id: replaced, not doubled
    assert "The store now holds 1 document (1 import), 2 chunks, 5 entities, 4 relations." in again
    assert figures(stats(kb)) == ("1", "1", "11", "2", "5", "4")


def test_lightrag_vectors_of_another_dimension_are_refused_and_no_store_is_left(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    # the fixture's vdb_*.json hold 8-dimensional vectors; the default hashing embeddings have 256
    assert_error(
        run("import", "lightrag", LIGHTRAG, "--store", kb, "--reuse-vectors"),
        "8-dimensional vectors",
        "needs the embedding model that made them",
    )
    assert not kb.exists()


def test_an_existing_store_keeps_its_embeddings(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    ok("import", "lightrag", LIGHTRAG, "--store", kb)
    assert_error(
        run("import", "openie", OPENIE, "--store", kb, "--embedding-model", "text-embedding-3-small"),
        "built with the embeddings hashing",
        "use another --store",
    )
    assert figures(stats(kb)) == ("1", "1", "11", "2", "5", "4")  # untouched


# -- pathrag import openie ---------------------------------------------------------------------------


def test_openie_import_then_stats_paths_and_query_without_a_key(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    out = ok("import", "openie", OPENIE, "--store", kb)
    assert summary_line(out).endswith(
        ": 911 entities, 712 relations, 80 chunks (80 source documents); "
        "3 merged names, 4 skipped records, 0 vectors reused; no LLM call."
    )
    assert figures(stats(kb, "--check")) == ("1", "1", "1739", "80", "911", "712")
    assert "import:openie:openie_sample" in ok("stats", "--store", kb)

    question = "Who publishes the Journal of Mathematical Physics?"
    found = json.loads(ok("paths", question, "--store", kb, "--format", "json"))
    assert "JOURNAL OF MATHEMATICAL PHYSICS" in found["seeds"]
    assert any("AMERICAN INSTITUTE OF PHYSICS" in item["nodes"] for item in found["items"])
    prompt = ok("query", question, "--store", kb, "--context-only")
    assert "published monthly by the American Institute of Physics" in prompt  # the passage itself

    ok("delete", "import:openie:openie_sample", "--store", kb)  # an import is one document of the store
    assert figures(stats(kb, "--check")) == ("0", "-", "-", "0", "0", "0")  # its passages went with it


# -- pathrag import graph-documents ------------------------------------------------------------------

LINES = [
    {
        "nodes": [
            {"id": "Ada Lovelace", "type": "Person", "properties": {"description": "Mathematician."}},
            {"id": "Analytical Engine", "type": "Machine"},
            {"type": "Person"},
        ],  # the last has no id
        "relationships": [
            {
                "source": {"id": "Ada Lovelace", "type": "Person"},
                "target": {"id": "Analytical Engine"},
                "type": "WROTE_ABOUT",
                "properties": {"description": "Ada wrote notes on the Engine."},
            },
            {"source": "Ada Lovelace", "target": "Charles Babbage", "type": "WORKED_WITH"},
        ],
        "source": {
            "id": None,
            "metadata": {"source": "ada.txt"},
            "type": "Document",
            "page_content": "Ada Lovelace wrote notes on the Analytical Engine with Charles Babbage.",
        },
    },
    {
        "nodes": [{"id": "ada lovelace", "type": "Person"}, {"id": "Charles Babbage", "type": "Person"}],
        "relationships": [
            {"source": "Charles Babbage", "target": "Analytical Engine", "type": "DESIGNED"},
            {"source": "Charles Babbage", "type": "KNEW"},
        ],  # no target: skipped
        "source": "Charles Babbage designed the Analytical Engine.",
    },
]


def write_lines(path: Path, lines: list) -> Path:
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n", encoding="utf-8")
    return path


def test_graph_documents_import_then_stats_paths_and_query(tmp_path: Path) -> None:
    kb, file = tmp_path / "kb", write_lines(tmp_path / "graph.jsonl", LINES)
    out = ok("import", "graph-documents", file, "--store", kb)
    assert summary_line(out).endswith(
        ": 3 entities, 3 relations, 2 chunks (2 source documents); 1 merged name, "
        "2 skipped records, 0 vectors reused; no LLM call."
    )
    assert figures(stats(kb, "--check")) == ("1", "1", "9", "2", "3", "3")
    found = json.loads(ok("paths", "Ada Lovelace and Charles Babbage", "--store", kb, "--format", "json"))
    assert any(set(item["nodes"]) == {"ADA LOVELACE", "CHARLES BABBAGE"} for item in found["items"])
    prompt = ok("query", "What did Charles Babbage design?", "--store", kb, "--context-only")
    assert "Charles Babbage designed the Analytical Engine." in prompt


def test_graph_document_lines_are_what_a_langchain_graph_document_dumps(tmp_path: Path) -> None:
    documents, skipped = read_graph_documents(write_lines(tmp_path / "g.jsonl", LINES))
    assert skipped == 2 and len(documents) == 2
    first = documents[0]
    assert [n.id for n in first.nodes] == ["Ada Lovelace", "Analytical Engine"]
    assert first.relationships[1].target.id == "Charles Babbage" and first.relationships[1].target.type == "Node"
    assert first.source is not None and first.source.metadata == {"source": "ada.txt"}
    assert documents[1].source is not None and documents[1].source.page_content.startswith("Charles Babbage")


# -- malformed input: one line, non-zero exit, nothing written -----------------------------------------


@pytest.mark.parametrize(
    ("kind", "content", "fragments"),
    [
        ("openie", "{not json", ["cannot read", "Expecting property name"]),
        ("openie", "42", ["is not OpenIE output"]),
        ("graph-documents", json.dumps(LINES[0]) + "\n[1, 2]\n", ["line 2 is not a graph document"]),
        ("graph-documents", json.dumps(LINES[0]) + "\n{torn\n", ["line 2 is not JSON"]),
        ("graph-documents", '{"nodes": {"id": "A"}, "relationships": []}\n', ["line 1", "must be lists"]),
        ("graph-documents", "\n\n", ["holds no graph document"]),
    ],
)
def test_malformed_files_give_one_line_errors(tmp_path: Path, kind: str, content: str, fragments: list[str]) -> None:
    file = tmp_path / "input.json"
    file.write_text(content, encoding="utf-8")
    assert_error(run("import", kind, file, "--store", tmp_path / "kb"), *fragments)
    assert not (tmp_path / "kb").exists()


def test_malformed_lightrag_directories_and_missing_paths(tmp_path: Path) -> None:
    assert_error(
        run("import", "lightrag", tmp_path, "--store", tmp_path / "kb"), "no graph_chunk_entity_relation.graphml"
    )
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "graph_chunk_entity_relation.graphml").write_text("<graphml><node", encoding="utf-8")
    assert_error(run("import", "lightrag", broken, "--store", tmp_path / "kb"), "cannot read")
    assert not (tmp_path / "kb").exists()
    assert_error(run("import", "lightrag", tmp_path / "nope", "--store", tmp_path / "kb"), "no such folder")
    assert_error(run("import", "openie", LIGHTRAG, "--store", tmp_path / "kb"), "a folder, not a file")
    assert_error(run("import", "graph-documents", tmp_path / "nope.jsonl", "--store", tmp_path / "kb"), "no such file")


def test_a_failed_import_into_an_existing_store_leaves_it_as_it_was(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    ok("import", "lightrag", LIGHTRAG, "--store", kb)
    bad = write_lines(tmp_path / "bad.jsonl", [LINES[0]])
    bad.write_text(bad.read_text() + "{torn\n")
    assert_error(run("import", "graph-documents", bad, "--store", kb), "line 3 is not JSON")  # after a blank line
    assert (kb / STORE_FILE).exists() and figures(stats(kb)) == ("1", "1", "11", "2", "5", "4")


# -- one store format: PathRAGIndexer <-> the command line ---------------------------------------------


def test_a_store_written_by_path_rag_indexer_opens_in_the_command_line(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    indexer = PathRAGIndexer(ScriptedChatModel(), embeddings(), path=kb)
    indexer.add_documents([HARBOUR, WALL])
    indexer.close()
    assert read_store_info(kb)["embedder"] == "hashing-128"  # the command line can make these embeddings
    rows = stats(kb, "--check")
    assert figures(rows) == ("2", "-", "-", "2", "6", "8")
    assert rows["embeddings"].startswith("hashing-128 (pathrag.HashingEmbedder")
    found = json.loads(ok("paths", QUESTION, "--store", kb, "--format", "json"))
    assert {"MARA", "SEA WALL"} <= {n for item in found["items"] for n in item["nodes"]}
    prompt = ok("query", QUESTION, "--store", kb, "--context-only", "--context", "paths")
    assert "relation IDA -> SEA WALL [design]: Ida designed the Sea Wall." in prompt
    assert "LINK Ida | Sea Wall" in ok("query", QUESTION, "--store", kb, "--context-only")  # a chunk as passage
    # and the command line can add to it: an import merges with what the indexer extracted
    ok("import", "graph-documents", write_lines(tmp_path / "g.jsonl", [LINES[1]]), "--store", kb)
    assert figures(stats(kb, "--check")) == ("3", "1", "4", "3", "9", "9")


def test_stores_made_by_the_command_line_open_in_path_rag_indexer(tmp_path: Path) -> None:
    imported, indexed = tmp_path / "imported", tmp_path / "indexed"
    ok("import", "lightrag", LIGHTRAG, "--store", imported)
    data = Path(str(demo_data()))
    ok("index", data / "corpus", "--store", indexed, "--replay", data)
    hashing = PathRAGEmbeddings(HashingEmbedder(256))

    indexer = PathRAGIndexer.load(imported, ScriptedChatModel(), hashing)
    assert indexer.index.stats() == {
        "documents": 1,
        "chunks": 2,
        "imports": 1,
        "records": 11,
        "entities": 5,
        "relations": 4,
    }
    docs = indexer.as_retriever(llm=None, k=5).invoke("Who owns the Gull?")
    assert any(d.metadata["kind"] == "passage" and "owns the Gull" in d.page_content for d in docs)
    indexer.add_documents([WALL])  # the indexer writes to it; the command line sees that
    indexer.close()
    assert figures(stats(imported, "--check")) == ("2", "1", "11", "3", "6", "7")

    indexer = PathRAGIndexer.load(indexed, embeddings=hashing)
    counts = indexer.index.stats()
    indexer.close()
    assert (counts["documents"], counts["chunks"], counts["entities"], counts["relations"]) == (6, 6, 37, 104)
    assert figures(stats(indexed)) == ("6", "-", "-", "6", "37", "104")
    with pytest.raises(ValueError, match="built with the embeddings 'hashing-256', not 'hashing-128'"):
        PathRAGIndexer.load(indexed, embeddings=embeddings())


def test_importing_again_under_one_id_keeps_only_the_passages_the_new_import_cites(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    ok("import", "graph-documents", write_lines(tmp_path / "both.jsonl", LINES), "--store", kb, "--id", "people")
    assert figures(stats(kb)) == ("1", "1", "9", "2", "3", "3")
    ok("import", "graph-documents", write_lines(tmp_path / "one.jsonl", [LINES[1]]), "--store", kb, "--id", "people")
    rows = stats(kb, "--check")  # the first line's passage went with the records that cited it
    assert figures(rows) == ("1", "1", "4", "1", "3", "1")
    assert "Ada Lovelace wrote notes" not in ok("query", "Ada Lovelace", "--store", kb, "--context-only")
