"""Tests for pathrag.index.extraction and pathrag.llm.prompts: parsing sloppy answers, prompts, gleaning."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pathrag.index.extraction import (
    DEFAULT_FORMAT,
    ExtractionConfig,
    ExtractionFormat,
    ExtractionResult,
    build_extraction_prompt,
    build_gleaning_prompt,
    extract_records,
    parse_answers,
    parse_extraction,
)
from pathrag.llm.prompts import (
    DEFAULT_ENTITY_TYPES,
    EXTRACTION_EXAMPLES,
    EXTRACTION_PROMPT,
    GLEANING_PROMPT,
    SUMMARY_PROMPT,
    build_summary_prompt,
)
from pathrag.models import Entity, Relation
from pathrag.names import normalize_name, normalize_type


def summary(result: ExtractionResult) -> tuple[list, list, list, int]:
    """A compact, comparable view of a result."""
    return (
        [(e.name, e.type, e.description) for e in result.entities],
        [(r.source, r.target, r.description, r.keywords, r.weight) for r in result.relations],
        result.content_keywords,
        result.skipped,
    )


EA = '("entity"<|>Alice<|>person<|>A navigator.)'
EB = '("entity"<|>Bob<|>person<|>A cook.)'
RAB = '("relationship"<|>Alice<|>Bob<|>Alice trusts Bob.<|>trust<|>7)'
A = ("ALICE", "person", "A navigator.")
B = ("BOB", "person", "A cook.")
AB = ("ALICE", "BOB", "Alice trusts Bob.", ("trust",), 7.0)

# (id, answer, entities, relations, content keywords, skipped)
CORPUS = [
    ("fence-with-language", f"```text\n{EA}##\n{EB}##\n{RAB}<|COMPLETE|>\n```", [A, B], [AB], [], 0),
    ("fence-without-language", f"```\n{EA}##\n{RAB}\n```\n<|COMPLETE|>", [A], [AB], [], 0),
    ("fence-inline", f"```{EA}##{EB}```", [A, B], [], [], 0),
    ("fence-json-doubled", f"```json\n```\n{EA}\n```", [A], [], [], 0),
    ("no-completion-marker", f"{EA}##\n{EB}", [A, B], [], [], 0),
    ("text-after-marker", f'{EA}<|COMPLETE|>\nExample 3:\n("entity"<|>Ghost<|>person<|>Invented.)', [A], [], [], 0),
    ("marker-after-delimiter", f'{EA}##<|COMPLETE|> ("entity"<|>Ghost<|>person<|>Invented.)', [A], [], [], 0),
    (
        "stray-whitespace",
        '\n\n  (  "entity"  <|>  Alice  <|>  person <|>   A   navigator.  )  ##  \n\n'
        '\t(\t"entity"\t<|>Bob<|>person<|>A cook.)\n',
        [A, B],
        [],
        [],
        0,
    ),
    ("crlf", f"{EA}##\r\n{EB}\r\n{RAB}\r\n<|COMPLETE|>\r\n", [A, B], [AB], [], 0),
    (
        "split-over-lines",
        '("entity"<|>Alice<|>person<|>A navigator\nwho charts\n   the northern sea.)##\n'
        '("relationship"<|>Alice<|>\nBob<|>Alice trusts Bob.<|>trust<|>\n7)',
        [("ALICE", "person", "A navigator who charts the northern sea.")],
        [AB],
        [],
        0,
    ),
    (
        "missing-parentheses",
        '"entity"<|>Alice<|>person<|>A navigator.##"entity"<|>Bob<|>person<|>A cook.##'
        '"relationship"<|>Alice<|>Bob<|>Alice trusts Bob.<|>trust<|>7',
        [A, B],
        [AB],
        [],
        0,
    ),
    (
        "extra-parentheses",
        '(("entity"<|>Alice<|>person<|>A navigator.))##'
        '(("relationship"<|>Alice<|>Bob<|>Alice trusts Bob.<|>trust<|>7))',
        [A],
        [AB],
        [],
        0,
    ),
    (
        "single-quoted-tags",
        "('entity'<|>Alice<|>person<|>A navigator.)##('relationship'<|>Alice<|>Bob<|>Alice trusts Bob.<|>trust<|>7)",
        [A],
        [AB],
        [],
        0,
    ),
    (
        "bare-tags-newline-separated",
        "entity<|>Alice<|>person<|>A navigator.\nentity<|>Bob<|>person<|>A cook.\n"
        "relationship<|>Alice<|>Bob<|>Alice trusts Bob.<|>trust<|>7\n<|COMPLETE|>",
        [A, B],
        [AB],
        [],
        0,
    ),
    (
        "tag-case",
        '("Entity"<|>Alice<|>person<|>A navigator.)##("RELATIONSHIP"<|>Alice<|>Bob<|>Alice trusts Bob.<|>trust<|>7)'
        '##("Content_Keywords"<|>sea)',
        [A],
        [AB],
        ["sea"],
        0,
    ),
    ("curly-quotes", "(“entity”<|>“Alice”<|>‘person’<|>“A navigator.”)", [A], [], [], 0),
    ("quoted-fields", '("entity" <|> "Alice" <|> "person" <|> "A navigator.")', [A], [], [], 0),
    ("entity-too-few-fields", f'("entity"<|>Alice<|>person)##{EB}', [B], [], [], 1),
    ("relation-too-few-fields", f'{EA}##("relationship"<|>Alice<|>Bob<|>Alice trusts Bob.<|>7)', [A], [], [], 1),
    ("tag-without-fields", f'("entity")##("relationship"<|>)##{EB}', [B], [], [], 1),
    (
        "non-numeric-strength",
        '("relationship"<|>Alice<|>Bob<|>Alice trusts Bob.<|>trust<|>strong)',
        [],
        [("ALICE", "BOB", "Alice trusts Bob.", ("trust",), 1.0)],
        [],
        0,
    ),
    (
        "strength-range",
        '("relationship"<|>Alice<|>Bob<|>d<|>k<|>42)##("relationship"<|>Alice<|>Carol<|>d<|>k<|>-3)##'
        '("relationship"<|>Alice<|>Dan<|>d<|>k<|>0.5)##("relationship"<|>Bob<|>Carol<|>d<|>k<|>8/10)##'
        '("relationship"<|>Bob<|>Dan<|>d<|>k<|>7.5)##("relationship"<|>Carol<|>Dan<|>d<|>k<|>strength: 3)',
        [],
        [
            ("ALICE", "BOB", "d", ("k",), 10.0),
            ("ALICE", "CAROL", "d", ("k",), 1.0),
            ("ALICE", "DAN", "d", ("k",), 1.0),
            ("BOB", "CAROL", "d", ("k",), 8.0),
            ("BOB", "DAN", "d", ("k",), 7.5),
            ("CAROL", "DAN", "d", ("k",), 3.0),
        ],
        [],
        0,
    ),
    (
        "empty-names",
        '("entity"<|><|>person<|>No name.)##("entity"<|>"  "<|>person<|>Blank.)##'
        f'("relationship"<|>Alice<|>**<|>To nobody.<|>none<|>2)##{EA}',
        [A],
        [],
        [],
        3,
    ),
    ("self-relation", f'{EA}##("relationship"<|>Alice<|> "alice" <|>Talks to herself.<|>self<|>3)', [A], [], [], 1),
    (
        "undeclared-endpoints",
        '("relationship"<|>Carol<|>Dave<|>Carol hired Dave.<|>hiring<|>6)',
        [],
        [("CAROL", "DAVE", "Carol hired Dave.", ("hiring",), 6.0)],
        [],
        0,
    ),
    (
        "identical-duplicates",
        f'{EA}##{EA}##{RAB}##{RAB}##("entity"<|>ALICE<|>Person<|>A navigator.)',
        [A],
        [AB],
        [],
        0,
    ),
    (
        "same-name-different-description",
        f'{EA}##("entity"<|>Alice<|>person<|>Owns a boat.)',
        [A, ("ALICE", "person", "Owns a boat.")],
        [],
        [],
        0,
    ),
    (
        "record-delimiter-inside-description",
        f'("entity"<|>Alice<|>person<|>Writes C## code ## daily.)##{EB}',
        [("ALICE", "person", "Writes C## code ## daily."), B],
        [],
        [],
        0,
    ),
    (
        "tuple-delimiter-inside-entity-description",
        f'("entity"<|>Alice<|>person<|>A navigator<|>and a cartographer.)##{EB}',
        [("ALICE", "person", "A navigator<|>and a cartographer."), B],
        [],
        [],
        0,
    ),
    (
        "tuple-delimiter-inside-relation-description",
        f'("relationship"<|>Alice<|>Bob<|>Alice trusts<|>Bob.<|>trust<|>7)##{EB}',
        [B],
        [("ALICE", "BOB", "Alice trusts<|>Bob.", ("trust",), 7.0)],
        [],
        0,
    ),
    (
        "marker-inside-description",
        f'("entity"<|>Alice<|>person<|>Types <|COMPLETE|> when done.)##{EB}<|COMPLETE|>',
        [("ALICE", "person", "Types <|COMPLETE|> when done."), B],
        [],
        [],
        0,
    ),
    ("trailing-chatter", f"{EA}##\n{EB}\n\nI hope this helps! Ask again (if needed).", [A, B], [], [], 0),
    ("preamble", f"Sure! Here are the records you asked for:\n\n{EA}##\n{RAB}", [A], [AB], [], 0),
    (
        "parentheses-in-description",
        '("entity"<|>Alice<|>person<|>A navigator (born 1890) of note.)##("entity"<|>Bob<|>person<|>A cook (retired))',
        [("ALICE", "person", "A navigator (born 1890) of note."), ("BOB", "person", "A cook (retired)")],
        [],
        [],
        0,
    ),
    ("junk-after-strength", f"{RAB[:-1]}) (strong)\n{EB}", [B], [AB], [], 0),
    (
        "numbered-bare-records",
        "1. entity<|>Alice<|>person<|>A navigator.\n2) entity<|>Bob<|>person<|>A cook.",
        [A, B],
        [],
        [],
        0,
    ),
    ("bulleted-records", f"- {EA}\n* {EB}\n• {RAB}", [A, B], [AB], [], 0),
    (
        "markdown-names",
        '("entity"<|>**Alice**<|>**Person**<|>A navigator.)##'
        '("relationship"<|>`Alice`<|>[Bob]<|>Alice trusts Bob.<|>trust<|>7)',
        [A],
        [AB],
        [],
        0,
    ),
    (
        "keyword-variants",
        '("relationship"<|>Alice<|>Bob<|>Alice trusts Bob.<|> "trust ",  loyalty; trust <|>7)##'
        '("content_keywords"<|>"sea, ships; navigation")##("content_keywords"<|>ships<|>maps)',
        [],
        [("ALICE", "BOB", "Alice trusts Bob.", ("trust", "loyalty"), 7.0)],
        ["sea", "ships", "navigation", "maps"],
        0,
    ),
    ("empty-content-keywords", f'{EA}##("content_keywords"<|> )', [A], [], [], 1),
    ("missing-type", '("entity"<|>Alice<|><|>A navigator.)', [("ALICE", "", "A navigator.")], [], [], 0),
    (
        "unicode-names",
        '("entity"<|> straße <|>location<|>A street.)##("entity"<|>Élodie<|>person<|>A pilot.)',
        [("STRASSE", "location", "A street."), ("ÉLODIE", "person", "A pilot.")],
        [],
        [],
        0,
    ),
    ("records-on-one-line", EA + EB + RAB, [A, B], [AB], [], 0),
    ("relation-tag-synonym", '("relation"<|>Alice<|>Bob<|>Alice trusts Bob.<|>trust<|>7)', [], [AB], [], 0),
    ("unknown-tag-ignored", f'("event"<|>Storm<|>A storm.)##{EA}', [A], [], [], 0),
    (
        "good-and-bad-mixed",
        f'{EA}##("entity"<|>Bob)##("relationship"<|>Alice<|>Alice<|>x<|>y<|>1)##{RAB}',
        [A],
        [AB],
        [],
        2,
    ),
    ("only-marker", "<|COMPLETE|>", [], [], [], 0),
    ("empty-answer", "", [], [], [], 0),
    ("prose-only", "I could not find any entities in this text.", [], [], [], 0),
]


def test_corpus_is_large_and_distinct() -> None:
    assert len(CORPUS) >= 30
    assert len({case[0] for case in CORPUS}) == len({case[1] for case in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize(
    ("answer", "entities", "relations", "keywords", "skipped"), [c[1:] for c in CORPUS], ids=[c[0] for c in CORPUS]
)
def test_malformed_corpus(answer: str, entities: list, relations: list, keywords: list, skipped: int) -> None:
    assert summary(parse_extraction(answer)) == (entities, relations, keywords, skipped)


def test_chunk_id_becomes_source_ids() -> None:
    with_id = parse_extraction(f"{EA}##{RAB}", chunk_id="chunk-7")
    assert with_id.entities[0].source_ids == ("chunk-7",)
    assert with_id.relations[0].source_ids == ("chunk-7",)
    without = parse_extraction(f"{EA}##{RAB}")
    assert without.entities[0].source_ids == () and without.relations[0].source_ids == ()


# --- fuzzing -----------------------------------------------------------------------------


def assert_well_formed(result: ExtractionResult) -> None:
    assert isinstance(result, ExtractionResult)
    assert isinstance(result.skipped, int) and result.skipped >= 0
    for entity in result.entities:
        assert isinstance(entity, Entity)
        assert entity.name and normalize_name(entity.name) == entity.name
        assert normalize_type(entity.type) == entity.type
    for relation in result.relations:
        assert isinstance(relation, Relation)
        for name in relation.pair:
            assert name and normalize_name(name) == name
        assert relation.source != relation.target
        assert 1.0 <= relation.weight <= 10.0
    assert all(isinstance(k, str) and k for k in result.content_keywords)


@settings(max_examples=300)
@given(st.text())
def test_any_text_parses(text: str) -> None:
    assert_well_formed(parse_extraction(text))


FRAGMENTS = [
    "<|>",
    "<|",
    "|>",
    "|",
    "<",
    ">",
    "##",
    "#",
    "<|COMPLETE|>",
    "<|COMPLETE",
    "COMPLETE|>",
    "(",
    ")",
    "((",
    "))",
    '"',
    "'",
    "“",
    "”",
    "`",
    "```",
    "```json",
    "entity",
    "Entity",
    "relationship",
    "relation",
    "content_keywords",
    "Alice",
    "bob",
    "**",
    "[",
    "]",
    "{",
    "}",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "1",
    "7.5",
    "-3",
    "1.",
    "-",
    "•",
    ",",
    ";",
]


@settings(max_examples=500)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join))
def test_delimiter_fragments_parse(text: str) -> None:
    assert_well_formed(parse_extraction(text))


@settings(max_examples=300)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join))
def test_delimiter_fragments_parse_with_custom_format(text: str) -> None:
    fmt = ExtractionFormat(tuple_delimiter="|", record_delimiter="\n", completion_delimiter="COMPLETE")
    assert_well_formed(parse_extraction(text, fmt))


WORD = st.text(alphabet=string.ascii_letters, min_size=1, max_size=8)
SENTENCE = st.lists(
    st.text(alphabet=string.ascii_letters + string.digits + ".,;:!?-", min_size=1, max_size=8), min_size=1, max_size=6
).map(" ".join)


@st.composite
def valid_records(draw: st.DrawFn) -> tuple[str, Entity | Relation]:
    """A well-formed record and the model it must parse to."""
    if draw(st.booleans()):
        name, kind, description = draw(WORD), draw(st.sampled_from(DEFAULT_ENTITY_TYPES)), draw(SENTENCE)
        record = f'("entity"<|>{name}<|>{kind}<|>{description})'
        return record, Entity(name=name.upper(), type=kind, description=description)
    source, target = draw(st.lists(WORD, min_size=2, max_size=2, unique_by=str.upper))
    description, strength = draw(SENTENCE), draw(st.integers(1, 10))
    keywords = draw(st.lists(WORD, min_size=1, max_size=3))
    record = f'("relationship"<|>{source}<|>{target}<|>{description}<|>{", ".join(keywords)}<|>{strength})'
    relation = Relation(
        source=source.upper(), target=target.upper(), description=description, keywords=keywords, weight=strength
    )
    return record, relation


JUNK = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join),
    st.text(max_size=20),
).filter(lambda junk: "<|COMPLETE|>" not in junk)  # a real completion marker legitimately ends the answer


@settings(max_examples=400)
@given(
    st.lists(st.tuples(JUNK, valid_records()), min_size=1, max_size=6),
    JUNK,
    st.sampled_from(["##", "\n", "##\n", "\n##\n", " ## "]),
)
def test_valid_records_survive_interleaved_junk(
    pairs: list[tuple[str, tuple[str, Entity | Relation]]], tail: str, sep: str
) -> None:
    pieces = [piece for junk, (record, _) in pairs for piece in (junk, record)] + [tail]
    result = parse_extraction(sep.join(pieces))
    assert_well_formed(result)
    for _, (_, expected) in pairs:
        assert expected in (result.entities if isinstance(expected, Entity) else result.relations)


# --- normalisation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "Alice",
        "ALICE",
        " alice ",
        '"Alice"',
        "'alice'",
        "“Alice”",
        "‘Alice’",
        "«Alice»",
        "`Alice`",
        "**Alice**",
        "[Alice]",
        "(Alice)",
        "<Alice>",
        "Alice)",
        "(Alice",
        " \n\tAlice\n",
        '("Alice")',
        "[**Alice**]",
    ],
)
def test_name_variants_share_a_key(raw: str) -> None:
    assert normalize_name(raw) == "ALICE"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Hedda   \n Voss ", "HEDDA VOSS"),
        ("straße", "STRASSE"),
        ("élodie", "ÉLODIE"),
        ("(ISC)²", "(ISC)²"),
        ("Foo (band)", "FOO (BAND)"),
        ("Ossely Ferrymen's Guild", "OSSELY FERRYMEN'S GUILD"),
        ("C++", "C++"),
    ],
)
def test_name_normalisation_keeps_inner_text(raw: str, expected: str) -> None:
    assert normalize_name(raw) == expected


@pytest.mark.parametrize("raw", ["", "   ", '""', "**", "()", "[ ]", "“ ”", "`*`"])
def test_names_empty_after_cleaning(raw: str) -> None:
    assert normalize_name(raw) == ""


@pytest.mark.parametrize("raw", ["person", " Person ", "PERSON", '"person"', "**Person**"])
def test_type_normalisation(raw: str) -> None:
    assert normalize_type(raw) == "person"


@given(st.text())
def test_normalisation_is_idempotent(text: str) -> None:
    assert normalize_name(normalize_name(text)) == normalize_name(text)
    assert normalize_type(normalize_type(text)) == normalize_type(text)


@given(st.text(alphabet="()[]{}<>\"'`*“” \naß", max_size=30))
def test_bracket_and_quote_cleaning_is_idempotent(text: str) -> None:
    once = normalize_name(text)
    assert normalize_name(once) == once
    assert once == "" or (once[0] not in " *\"'`“”" and once[-1] not in " *\"'`“”")


@pytest.mark.parametrize(
    "junk",
    [
        " " * 100_000,
        "(" * 100_000,
        ")" * 100_000 + "x",
        "[(" * 50_000,
        "x<|COMPLETE|>x" * 10_000,
        ("\n" + " " * 100) * 1_000,
        "(entity<|>" * 10_000,
        "1." * 50_000,
    ],
    ids=["spaces", "openers", "closers", "mixed-brackets", "markers", "indented-lines", "openings", "bullets"],
)
def test_pathological_inputs_are_parsed(junk: str) -> None:
    # These once took minutes (quadratic scans); the parser is linear now. No timing is asserted here.
    assert summary(parse_extraction(f"{junk}\n{EA}"))[0][-1] == A
    for text in (f'("entity"<|>{junk}<|>person<|>d)', f'("relationship"<|>a<|>b<|>c<|>d<|>{junk}'):
        result = parse_extraction(text)
        assert all(e.name for e in result.entities) and all(r.source != r.target for r in result.relations)
    assert normalize_name(junk) == normalize_name(normalize_name(junk))


def test_same_entity_from_two_chunks_has_one_key() -> None:
    first = parse_extraction('("entity"<|>Alice<|>person<|>A navigator.)', chunk_id="c1")
    second = parse_extraction('("relationship"<|> alice <|>"Bob"<|>d<|>k<|>3)', chunk_id="c2")
    third = parse_extraction('("entity"<|>ALICE<|>Person<|>Captain.)', chunk_id="c3")
    assert first.entities[0].name == second.relations[0].source == third.entities[0].name == "ALICE"


# --- formats, config and prompts -------------------------------------------------------------


CUSTOM = ExtractionFormat(tuple_delimiter="|~|", record_delimiter="%%", completion_delimiter="[[END]]")


@pytest.mark.parametrize("example", EXTRACTION_EXAMPLES, ids=["example-1", "example-2"])
def test_examples_round_trip_with_custom_delimiters(example) -> None:
    default = parse_extraction(example.output.format(**DEFAULT_FORMAT.placeholders()))
    custom_text = example.output.format(**CUSTOM.placeholders())
    assert "<|>" not in custom_text and "|~|" in custom_text
    custom = parse_extraction(custom_text, CUSTOM)
    assert summary(custom) == summary(default)
    assert default.entities and default.relations and default.content_keywords and default.skipped == 0
    assert parse_extraction(custom_text).entities == []  # the default format does not see those records


@pytest.mark.parametrize("example", EXTRACTION_EXAMPLES, ids=["example-1", "example-2"])
def test_examples_are_self_consistent(example) -> None:
    result = parse_extraction(example.output.format(**DEFAULT_FORMAT.placeholders()))
    names = {e.name for e in result.entities}
    assert {e.type for e in result.entities} <= set(DEFAULT_ENTITY_TYPES)
    assert all(r.source in names and r.target in names for r in result.relations)
    assert all(name.lower() in example.text.lower() for name in names - {"LANTERN FAIR OF 1911", "SEED LIBRARY"})


def test_template_placeholders() -> None:
    def fields(template: str) -> set[str]:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}

    assert fields(EXTRACTION_PROMPT) == {
        "tuple_delimiter",
        "record_delimiter",
        "completion_delimiter",
        "entity_types",
        "language",
        "examples",
        "input_text",
    }
    assert fields(GLEANING_PROMPT) == {"extraction_prompt", "previous_answers", "completion_delimiter"}
    assert fields(SUMMARY_PROMPT) == {"name", "descriptions", "language", "max_words"}
    for example in EXTRACTION_EXAMPLES:
        assert fields(example.output) == {"tuple_delimiter", "record_delimiter", "completion_delimiter"}
        assert "{" not in example.text and "}" not in example.text


def test_extraction_prompt_uses_config() -> None:
    config = ExtractionConfig(format=CUSTOM, entity_types=["ship", "crew member"], language="Français")
    chunk = "A chunk with {braces}, {0}, }{ and {input_text} in it."
    prompt = build_extraction_prompt(chunk, config)
    assert config.entity_types == ("ship", "crew member")
    assert "one of: ship, crew member." in prompt
    assert "in Français" in prompt
    assert prompt.endswith(f"Text:\n{chunk}\nOutput:\n")
    assert "|~|" in prompt and "%%" in prompt and "[[END]]" in prompt
    assert "<|>" not in prompt and "<|COMPLETE|>" not in prompt and "##" not in prompt
    assert all(example.text in prompt for example in EXTRACTION_EXAMPLES)


def test_default_prompt_lists_default_types_and_language() -> None:
    prompt = build_extraction_prompt("text", ExtractionConfig())
    assert "one of: person, organization, location, event, concept." in prompt and "in English" in prompt
    assert "{" not in prompt and "}" not in prompt  # every placeholder filled, none left behind


def test_gleaning_prompt_embeds_history() -> None:
    config = ExtractionConfig(format=CUSTOM)
    answers = ['("entity"|~|Alice|~|person|~|Likes {curly} braces.)[[END]]', "[[END]]"]
    prompt = build_gleaning_prompt("Alice {text}", config, answers)
    assert prompt.startswith(build_extraction_prompt("Alice {text}", config))
    assert answers[0] in prompt and prompt.index(answers[0]) < prompt.index("FOLLOW-UP")
    assert "reply with [[END]] alone" in prompt


def test_summary_prompt() -> None:
    descriptions = ["Sails  the\n{Meridian}.", "Trusts Bob."]
    prompt = build_summary_prompt("ALICE -> {BOB}", descriptions, language="Deutsch", max_words=60)
    assert '"ALICE -> {BOB}"' in prompt
    assert "- Sails the {Meridian}.\n- Trusts Bob." in prompt
    assert "in Deutsch" in prompt and "at most 60 words" in prompt


@pytest.mark.parametrize(
    "delimiters", [("", "##", "<|COMPLETE|>"), ("<|>", "<|>", "<|COMPLETE|>"), ("<|>", "##", "##")]
)
def test_invalid_formats_rejected(delimiters: tuple[str, str, str]) -> None:
    with pytest.raises(ValueError):
        ExtractionFormat(*delimiters)


def test_negative_gleaning_rejected() -> None:
    with pytest.raises(ValueError):
        ExtractionConfig(max_gleaning=-1)


# --- gleaning ------------------------------------------------------------------------------


class ScriptedModel:
    """An async ``ask`` that records prompts and returns scripted answers in order."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.answers[len(self.prompts) - 1]


FIRST = f"{EA}##{EB}##{RAB}<|COMPLETE|>"
SECOND = (
    '("entity"<|>Carol<|>person<|>A pilot.)##'
    '("relationship"<|>Carol<|>Alice<|>Carol flies Alice.<|>travel<|>4)<|COMPLETE|>'
)
THIRD = '("entity"<|>Dan<|>person<|>A mechanic.)<|COMPLETE|>'


async def test_no_gleaning_means_one_call() -> None:
    model = ScriptedModel(FIRST)
    config = ExtractionConfig(max_gleaning=0)
    done = await extract_records("Alice and Bob.", model, config, chunk_id="c1")
    assert model.prompts == [build_extraction_prompt("Alice and Bob.", config)]
    assert done.answers == [FIRST]
    assert summary(done.result) == ([A, B], [AB], [], 0)


STORY = "A story of Alice, Bob, Carol and Dan."  # names every record of the scripted answers


async def test_gleaning_runs_while_new_records_arrive() -> None:
    model = ScriptedModel(FIRST, SECOND, THIRD)
    config = ExtractionConfig(max_gleaning=2)
    done = await extract_records(STORY, model, config, chunk_id="c1")
    assert len(model.prompts) == 3 and done.answers == [FIRST, SECOND, THIRD]
    assert [e.name for e in done.result.entities] == ["ALICE", "BOB", "CAROL", "DAN"]
    assert [r.pair for r in done.result.relations] == [("ALICE", "BOB"), ("CAROL", "ALICE")]
    assert model.prompts[1] == build_gleaning_prompt(STORY, config, [FIRST])
    assert FIRST in model.prompts[2] and SECOND in model.prompts[2]
    assert parse_answers(done.answers, config.format, "c1") == done.result


@pytest.mark.parametrize(
    "second",
    ["<|COMPLETE|>", "Nothing was missed.", f'{EA}##("entity"<|>Bob<|>person<|>Also bakes.)<|COMPLETE|>'],
    ids=["marker-only", "prose", "known-names-only"],
)
async def test_gleaning_stops_when_nothing_new(second: str) -> None:
    model = ScriptedModel(FIRST, second, THIRD)
    done = await extract_records(STORY, model, ExtractionConfig(max_gleaning=3), chunk_id="c1")
    assert len(model.prompts) == 2 and done.answers == [FIRST, second]
    assert FIRST in model.prompts[1]
    assert "DAN" not in {e.name for e in done.result.entities}
    assert parse_answers(done.answers, chunk_id="c1") == done.result


async def test_gleaned_details_about_known_names_are_kept() -> None:
    second = '("entity"<|>Bob<|>person<|>Also bakes.)<|COMPLETE|>'
    done = await extract_records(STORY, ScriptedModel(FIRST, second), ExtractionConfig(max_gleaning=1))
    assert summary(done.result)[0] == [A, B, ("BOB", "person", "Also bakes.")]


async def test_custom_format_flows_through_gleaning() -> None:
    first = '("entity"|~|Alice|~|person|~|A navigator.)%%("entity"|~|Bob|~|person|~|A cook.)[[END]]'
    model = ScriptedModel(first, "[[END]]")
    config = ExtractionConfig(format=CUSTOM, max_gleaning=1)
    done = await extract_records("Alice and Bob", model, config, chunk_id="c9")
    assert len(model.prompts) == 2 and "[[END]] alone" in model.prompts[1]
    assert summary(done.result) == ([A, B], [], [], 0)
    assert done.result.entities[0].source_ids == ("c9",)
    assert parse_answers(done.answers, CUSTOM, "c9") == done.result


def test_parse_answers_combines_and_counts() -> None:
    answers = [f'{EA}##("entity"<|>Nobody)<|COMPLETE|>', f"{EA}##{EB}<|COMPLETE|>", "<|COMPLETE|>"]
    assert summary(parse_answers(answers)) == ([A, B], [], [], 1)
    assert parse_answers([]) == ExtractionResult()


@pytest.mark.parametrize(
    ("answer", "names"),
    [
        ('("entity"<|>J<|>person<|>d)##<|```COMPLETE|>##("entity"<|>A<|>person<|>d)##', ["A", "J"]),  # junk, no marker
        ('("entity"<|>J<|>person<|>d)```<|COMPLETE|>```\n("entity"<|>A<|>person<|>d)', ["J"]),  # fenced marker ends it
        ('```\n("entity"<|>J<|>person<|>d)<|COMPLETE|>\n```', ["J"]),
    ],
)
def test_inline_fences_never_make_or_hide_the_completion_marker(answer: str, names: list[str]) -> None:
    assert sorted(e.name for e in parse_extraction(answer).entities) == names


# -- hostile answers: records over the per-chunk cap, lone surrogates --------------------------


def _flood(count: int) -> str:
    half = count // 2
    records = [f'("entity"<|>E{i}<|>person<|>Person {i}.)' for i in range(half)]
    records += [f'("relationship"<|>E{i}<|>E{i + 1}<|>Knows.<|>knows<|>5)' for i in range(count - half)]
    return "##\n".join(records) + "<|COMPLETE|>"


@pytest.mark.reliability
async def test_records_over_the_per_chunk_cap_are_dropped_and_counted() -> None:
    import time

    from pathrag.index.extraction import MIN_RECORDS_PER_CHUNK, max_records_for

    chunk = " ".join(f"E{i}" for i in range(200))  # 889 characters naming the first 200: the floor applies
    assert max_records_for(chunk) == MIN_RECORDS_PER_CHUNK == 200
    model = ScriptedModel(_flood(100_000), _flood(10))
    started = time.perf_counter()
    config = ExtractionConfig(max_gleaning=1, max_answer_tokens=10**7)  # an output cap that lets it glean
    done = await extract_records(chunk, model, config, chunk_id="c")
    assert time.perf_counter() - started < 10  # 0.4 s here; every record accepted took 53 s before the cap
    kept = len(done.result.entities) + len(done.result.relations)
    assert kept == 200 and [e.name for e in done.result.entities[:2]] == ["E0", "E1"]  # the first ones, in order
    assert done.result.dropped == 100_000 - 200 + 5  # the gleaning repeats 5 entities and brings 5 new relations
    assert parse_answers(done.answers, chunk_id="c", max_records=200) == done.result  # a replay keeps the same records
    assert max_records_for("x" * 4_800) == 480  # longer chunks: one record per 10 characters


@pytest.mark.reliability
def test_identical_records_do_not_use_up_the_cap() -> None:
    answer = "##".join([EA] * 500 + [EB])
    result = parse_extraction(answer, max_records=2)
    assert summary(result)[0] == [A, B] and result.dropped == 0


@pytest.mark.reliability
async def test_a_lone_surrogate_keeps_the_chunks_valid_records() -> None:
    answer = '("entity"<|>Alice<|>person<|>A navi\udcc3gator.)##("entity"<|>Bob\ud800<|>person<|>A cook.)<|COMPLETE|>'
    text = "Alice met Bob\ud800 (a lone surrogate in the text too)."
    done = await extract_records(text, ScriptedModel(answer, "<|COMPLETE|>"), ExtractionConfig(), chunk_id="c")
    assert [(e.name, e.description) for e in done.result.entities] == [
        ("ALICE", "A navi\ufffdgator."),
        ("BOB\ufffd", "A cook."),
    ]
    for text in (*done.answers, *(e.model_dump_json() for e in done.result.entities)):
        text.encode("utf-8")  # storable: no lone surrogate left
    assert parse_extraction(answer, chunk_id="c").entities == done.result.entities
