"""``pathrag index`` as a user expects it (issue 23): document ids that name their folder, every replacement
and every skipped file reported, chunk sizes from the command line, progress that matches the summary, and
an interrupt that says what was kept.

Indexing uses the hidden ``--replay`` option (the demo's recorded extractions), so the whole pipeline runs
for real without a key; OPENAI_API_KEY is always unset.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest

from langchain_pathrag.cli.readers import CHUNK_OVERLAP, CHUNK_SIZE
from pathrag import Document, HashingEmbedder, PathRAGIndex
from pathrag.demo import ReplayLLM, demo_data

from .test_cli import no_key, run  # noqa: F401 (no_key: an autouse fixture)

DATA = Path(str(demo_data()))
CORPUS = DATA / "corpus"
PLAN, NOTES, FINDINGS = "02-greyfen-expansion-plan.md", "03-tarn-point-field-notes.md", "06-morrow-inquiry-findings.md"


def index(*args: object, store: Path):
    return run("index", *args, "--store", store, "--replay", DATA)


def rows(result) -> dict[str, str]:
    """The summary's ``key  value`` rows."""
    assert result.exit_code == 0, result.output
    return dict(re.findall(r"^  (\S.*?\S)  +(\S.*)$", result.stdout, re.M))


def document_ids(store: Path) -> list[str]:
    stats = run("stats", "--store", store)
    assert stats.exit_code == 0, stats.output
    _, _, listed = stats.stdout.partition("Documents (id: chunks):")
    return re.findall(r"^  (\S+)  +\d+$", listed, re.M)


def folder(root: Path, name: str, *files: tuple[str, str]) -> Path:
    """A folder ``root/name`` holding demo documents under new names: ``(name, demo file)`` pairs."""
    made = root / name
    made.mkdir(parents=True)
    for target, source in files:
        (made / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CORPUS / source, made / target)
    return made


def error_line(result) -> str:
    """The last stderr line, which must be the only ``error:`` line."""
    lines = result.stderr.splitlines()
    assert [line for line in lines if line.startswith("error: ")] == lines[-1:], result.stderr
    assert "Traceback" not in result.output
    return lines[-1]


# -- ids -----------------------------------------------------------------------------------------------


def test_same_named_files_of_two_folders_are_two_documents(tmp_path: Path) -> None:
    a = folder(tmp_path, "a", ("notes.md", PLAN))
    b = folder(tmp_path, "b", ("notes.md", FINDINGS))
    kb = tmp_path / "kb"
    assert rows(index(a, store=kb))["documents indexed"] == "1"
    second = rows(index(b, store=kb))
    assert (second["documents indexed"], second["documents replaced"]) == ("1", "0")
    assert document_ids(kb) == ["a/notes.md", "b/notes.md"]
    # both at once: their ids differ too
    assert rows(index(a, b, store=tmp_path / "both"))["documents indexed"] == "2"
    assert document_ids(tmp_path / "both") == ["a/notes.md", "b/notes.md"]


def test_id_prefix_sets_the_start_of_the_ids(tmp_path: Path) -> None:
    a = folder(tmp_path, "a", ("notes.md", PLAN), ("sub/more.md", NOTES))
    index(a, "--id-prefix", "work/", store=tmp_path / "kb")
    assert document_ids(tmp_path / "kb") == ["work/notes.md", "work/sub/more.md"]
    index(a, "--id-prefix", "", store=tmp_path / "bare")  # the ids of earlier versions
    assert document_ids(tmp_path / "bare") == ["notes.md", "sub/more.md"]
    index(a / "notes.md", store=tmp_path / "file")  # a file given by name: its name, as before
    index(a / "notes.md", "--id-prefix", "work", store=tmp_path / "file")
    assert document_ids(tmp_path / "file") == ["notes.md", "work/notes.md"]


def test_two_folders_of_one_name_are_refused_in_one_run(tmp_path: Path) -> None:
    x = folder(tmp_path / "x", "docs", ("notes.md", PLAN))
    y = folder(tmp_path / "y", "docs", ("notes.md", FINDINGS))
    result = index(x, y, store=tmp_path / "kb")
    assert result.exit_code == 1
    assert "would both get the document id 'docs/notes.md'" in error_line(result)
    assert "--id-prefix" in result.stderr


def test_a_store_of_earlier_ids_keeps_them_when_the_folder_is_indexed_again(tmp_path: Path) -> None:
    a = folder(tmp_path, "a", ("notes.md", PLAN), ("more.md", NOTES))
    kb = tmp_path / "kb"
    index(a, "--id-prefix", "", store=kb)  # as earlier versions named them
    again = index(a, store=kb)
    assert (rows(again)["documents indexed"], rows(again)["documents unchanged"]) == ("0", "2")
    assert "note: 2 documents already in" in again.stderr and "(more.md, notes.md)" in again.stderr
    assert document_ids(kb) == ["more.md", "notes.md"]  # no copies under the new ids
    shutil.copy(CORPUS / FINDINGS, a / "notes.md")
    changed = rows(index(a, store=kb))
    assert changed["documents replaced"] == "1 (notes.md)"
    assert document_ids(kb) == ["more.md", "notes.md"]


# -- replacements ----------------------------------------------------------------------------------------


def test_every_replacement_is_reported_by_name(tmp_path: Path) -> None:
    a = folder(tmp_path, "a", ("one.md", PLAN), ("two.md", NOTES), ("three.md", FINDINGS), ("four.md", PLAN))
    kb = tmp_path / "kb"
    assert rows(index(a, store=kb))["documents replaced"] == "0"
    for name, source in (("one.md", NOTES), ("two.md", FINDINGS), ("three.md", PLAN), ("four.md", NOTES)):
        shutil.copy(CORPUS / source, a / name)
    again = rows(index(a, store=kb))
    assert again["documents indexed"] == "4"
    assert again["documents replaced"] == "4 (a/four.md, a/one.md, a/three.md and 1 more)"
    assert again["LLM calls"] == "0"  # the same texts as before, elsewhere: all from the store


def test_insert_summary_lists_replaced_documents() -> None:
    async def llm(prompt: str) -> str:
        return '("entity"<|>Alice<|>person<|>A pilot.)<|COMPLETE|>'

    index = PathRAGIndex(llm=llm, embedder=HashingEmbedder(16))
    first = index.insert([Document(id="a", text="Alice flies."), Document(id="b", text="Bob sails.")])
    assert first.replaced == []
    second = index.insert([Document(id="a", text="Alice flies far."), Document(id="b", text="Bob sails.")])
    assert (second.documents, second.unchanged, second.replaced) == (1, 1, ["a"])


# -- skipped files ---------------------------------------------------------------------------------------


def test_skipped_types_are_counted_and_named(tmp_path: Path) -> None:
    a = folder(tmp_path, "a", ("notes.md", PLAN))
    for name in ("x.csv", "y.csv", "z.json", "Makefile"):
        (a / name).write_text("data", encoding="utf-8")
    (a / ".git").mkdir()
    (a / ".git" / "config").write_text("hidden: not counted", encoding="utf-8")
    result = index(a, store=tmp_path / "kb")
    assert rows(result)["documents indexed"] == "1"
    assert "skipped 4 files of unsupported types (.csv 2, (no suffix) 1, .json 1)" in result.stderr
    only = folder(tmp_path, "only")
    (only / "x.csv").write_text("data", encoding="utf-8")
    refused = index(only, store=tmp_path / "kb")
    assert refused.exit_code == 1
    assert "no text, Markdown, HTML or PDF files under" in error_line(refused)
    assert "(1 file of unsupported types (.csv 1))" in refused.stderr


def test_unreadable_files_are_named_and_the_others_indexed(tmp_path: Path, monkeypatch) -> None:
    a = folder(tmp_path, "a", ("notes.md", PLAN))
    (a / "latin1.txt").write_bytes(b"caf\xe9 au lait")
    (a / "locked.md").write_text("secret", encoding="utf-8")
    read_text = Path.read_text

    def refuse(self: Path, *args, **kwargs) -> str:  # as chmod 000 would (the tests may run as root)
        if self.name == "locked.md":
            raise PermissionError(13, "Permission denied", str(self))
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", refuse)
    result = index(a, store=tmp_path / "kb")
    assert rows(result)["documents indexed"] == "1"
    assert f"skipped {a / 'latin1.txt'}: cannot read it: not UTF-8 text" in result.stderr
    assert f"skipped {a / 'locked.md'}: cannot read it: Permission denied" in result.stderr
    assert document_ids(tmp_path / "kb") == ["a/notes.md"]
    nothing = index(a / "locked.md", a / "latin1.txt", store=tmp_path / "kb2")  # nothing done: an error
    assert nothing.exit_code == 1
    assert "nothing to index" in error_line(nothing) and "Permission denied" in nothing.stderr


# -- chunk sizes -------------------------------------------------------------------------------------------


@pytest.fixture
def any_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay model answers chunks it has no recording for (chunks of other sizes) with one entity."""
    replayed = ReplayLLM.acomplete

    async def answer(self: ReplayLLM, prompt: str) -> str:
        try:
            return await replayed(self, prompt)
        except Exception:
            return '("entity"<|>Greyfen<|>organization<|>A company.)<|COMPLETE|>'

    monkeypatch.setattr(ReplayLLM, "acomplete", answer)


def test_chunk_options_reach_the_splitter(tmp_path: Path, any_answer: None) -> None:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from pathrag.llm.tokens import count_tokens

    a = folder(tmp_path, "a", ("plan.md", PLAN))
    text = (a / "plan.md").read_text(encoding="utf-8")
    counts = []
    for size, overlap in ((None, None), (60, 0), (60, 30)):
        options = [] if size is None else ["--chunk-size", size, "--chunk-overlap", overlap]
        chunks = int(rows(index(a, *options, store=tmp_path / f"kb-{size}-{overlap}"))["chunks"])
        splitter = RecursiveCharacterTextSplitter(
            chunk_size=size or CHUNK_SIZE,
            chunk_overlap=CHUNK_OVERLAP if overlap is None else overlap,
            length_function=count_tokens,
        )
        assert chunks == len(splitter.split_text(text))
        counts.append(chunks)
    assert counts[0] == 1 < counts[1] < counts[2]  # smaller chunks, then overlapping ones: more of them


def test_the_default_chunk_sizes_are_the_indexers() -> None:
    from langchain_pathrag.indexer import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE

    assert (CHUNK_SIZE, CHUNK_OVERLAP) == (DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--chunk-size", "0"], "--chunk-size must be at least 1 token, not 0"),
        (["--chunk-overlap", "-1"], "--chunk-overlap must be at least 0 and less than --chunk-size (1200), not -1"),
        (["--chunk-size", "100", "--chunk-overlap", "100"], "less than --chunk-size (100), not 100"),
        (["--chunk-overlap", "1500"], "less than --chunk-size (1200), not 1500"),
    ],
)
def test_bad_chunk_options_are_refused_in_one_line(tmp_path: Path, options: list[str], says: str) -> None:
    a = folder(tmp_path, "a", ("plan.md", PLAN))
    result = index(a, *options, store=tmp_path / "kb")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --") and result.stderr.endswith(f"{says}\n")
    assert result.stderr.count("\n") == 1
    assert not (tmp_path / "kb").exists()


# -- progress ------------------------------------------------------------------------------------------------


def test_progress_shows_each_phase_with_the_summarys_counts(tmp_path: Path) -> None:
    a = folder(tmp_path, "a", ("plan.md", PLAN), ("notes.md", NOTES), ("findings.md", FINDINGS))
    result = index(a, store=tmp_path / "kb")
    summary = rows(result)
    merged = f"{summary['entities touched']} entities and {summary['relations touched']} relations"
    phases = [
        "Reading 3 files…",
        "3 new or changed documents: 3 of 3 chunks to extract",
        "extracting",
        "before merging",
        f"merging into {merged}",
        f"embedding {merged}",
        "embedding 3 chunks",
        "committing…",
    ]
    at = [result.stderr.find(phase) for phase in phases]
    assert -1 not in at and at == sorted(at), result.stderr
    again = index(a, store=tmp_path / "kb")  # nothing to do: no phases, no bar
    assert again.stderr == "Reading 3 files…\n"


# -- interrupts ------------------------------------------------------------------------------------------------


def test_an_interrupt_says_what_is_kept_and_the_rerun_pays_only_the_rest(tmp_path: Path, monkeypatch) -> None:
    a = folder(tmp_path, "a", ("plan.md", PLAN), ("notes.md", NOTES), ("findings.md", FINDINGS))
    findings = (CORPUS / FINDINGS).read_text(encoding="utf-8").split("\n\n")[1][:60]
    replayed = ReplayLLM.acomplete

    async def ctrl_c(self: ReplayLLM, prompt: str) -> str:
        if findings in prompt:  # the other chunks finish (and are saved) meanwhile
            await asyncio.sleep(0.5)
            raise KeyboardInterrupt
        return await replayed(self, prompt)

    monkeypatch.setattr(ReplayLLM, "acomplete", ctrl_c)
    kb = tmp_path / "kb"
    result = index(a, store=kb)
    assert result.exit_code == 130
    said = error_line(result)
    assert said.startswith("error: interrupted: nothing new is in the index;")
    assert "the extractions of 2 of 3 chunks are saved in" in said
    assert "run the same command again to resume, it sends only the other 1 chunk to the model" in said
    assert document_ids(kb) == []

    monkeypatch.setattr(ReplayLLM, "acomplete", replayed)
    again = index(a, store=kb)
    assert "3 new or changed documents: 1 of 3 chunks to extract, 2 saved already" in again.stderr
    summary = rows(again)
    assert (summary["documents indexed"], summary["chunks extracted"], summary["LLM calls"]) == ("3", "1", "1")
