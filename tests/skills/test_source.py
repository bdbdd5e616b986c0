"""The document layer: YAML and JSON text to plain data, with the position of every field."""

from __future__ import annotations

import codecs
import io
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from skillwire.core.errors import SkillError
from skillwire.core.issues import SkillIssue
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.skills import source
from skillwire.skills.source import (
    MAX_DEPTH,
    MAX_NODES,
    Document,
    load_json,
    load_yaml,
    read_document,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

YAML_TEXT = """\
name: demo            # line 1
tools: [lookup, refund]
limits: {max: 3, names: [a, b]}
role:
  goals:
    - first
    - title: second
      weight: 2
  persona:
  nested:
    deep: x
steps:
-   one
- two
base: &base {k: 1}
merged:
  <<: *base
  own: 2
"""

JSON_TEXT = """\
{
  "name": "demo",
  "tools": [
    {"name": "a", "inputs": [1, 2]},
    {
      "name": "b\\u00e9",
      "empty": {}
    }
  ],
  "q\\"uote": null
}
"""


def issues_of(exc: pytest.ExceptionInfo[SkillError]) -> list[SkillIssue]:
    return exc.value.issues


def only_issue(exc: pytest.ExceptionInfo[SkillError]) -> SkillIssue:
    assert len(exc.value.issues) == 1, exc.value.issues
    return exc.value.issues[0]


def where(issue: SkillIssue) -> tuple[int, int]:
    return issue.location.line, issue.location.column


# ---------------------------------------------------------------- YAML positions


def test_yaml_data_is_plain_python() -> None:
    doc = load_yaml(YAML_TEXT, "domain.yaml")
    assert doc.format == "yaml"
    assert doc.file == "domain.yaml"
    assert doc.data["role"]["goals"] == ["first", {"title": "second", "weight": 2}]
    assert doc.data["merged"] == {"own": 2, "k": 1}

    def types(value: Any) -> Iterator[type]:
        yield type(value)
        children = value.values() if isinstance(value, dict) else value
        if isinstance(value, dict | list):
            for child in children:
                yield from types(child)

    assert set(types(doc.data)) <= {dict, list, str, int, float, bool, type(None)}
    assert all(type(k) is str for k in doc.data)


@pytest.mark.parametrize(
    ("path", "key_at", "value_at"),
    [
        ((), (1, 1), (1, 1)),
        (("name",), (1, 1), (1, 7)),
        (("tools",), (2, 1), (2, 8)),
        (("tools", 1), (2, 17), (2, 17)),  # flow sequence item
        (("limits", "max"), (3, 10), (3, 15)),  # flow mapping key
        (("limits", "names", 1), (3, 29), (3, 29)),
        (("role", "goals"), (5, 3), (6, 5)),
        (("role", "goals", 0), (6, 7), (6, 7)),  # block item: the item, after "- "
        (("role", "goals", 1, "weight"), (8, 7), (8, 15)),
        (("role", "persona"), (9, 3), (9, 3)),  # "persona:" with no value
        (("steps", 0), (13, 5), (13, 5)),
        (("merged", "own"), (18, 3), (18, 8)),
        (("merged", "k"), (15, 14), (15, 17)),  # merged: found in the anchored mapping
    ],
)
def test_yaml_positions(
    path: FieldPath, key_at: tuple[int, int], value_at: tuple[int, int]
) -> None:
    doc = load_yaml(YAML_TEXT, "domain.yaml")
    assert doc.locate(path) == SourceLocation("domain.yaml", *key_at)
    assert doc.locate_value(path) == SourceLocation("domain.yaml", *value_at)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("role", "missing"), (4, 1)),  # missing key: the key of its mapping
        (("role", "goals", 9), (5, 3)),  # index out of range: the list's key
        (("role", "goals", 1, "x", "y"), (7, 7)),  # nearest existing ancestor
        (("nope",), (1, 1)),  # missing at top level: the document
        (("name", "sub"), (1, 1)),  # cannot index into a scalar
        (("tools", "x"), (2, 1)),  # a key into a list
    ],
)
def test_missing_path_points_at_nearest_ancestor(
    path: FieldPath, expected: tuple[int, int]
) -> None:
    doc = load_yaml(YAML_TEXT, "domain.yaml")
    assert (doc.locate(path).line, doc.locate(path).column) == expected
    assert doc.locate_value(path) == doc.locate(path)


def test_yaml_spec_fixture_positions() -> None:
    doc = read_document(FIXTURES / "spec_000_domain.yaml")
    lines = (FIXTURES / "spec_000_domain.yaml").read_text().splitlines()
    for path in all_paths(doc.data):
        loc = doc.locate(path)
        line = lines[loc.line - 1]
        if isinstance(path[-1], str):
            assert line[loc.column - 1 :].startswith(path[-1]), (path, line)
        else:
            assert line[loc.column - 1 :].strip(), (path, line)


def test_yaml_non_string_keys_become_strings() -> None:
    doc = load_yaml("200: ok\ntrue: yes\nnull: nothing\n1.5: x\n2024-01-02: d\n", "f.yaml")
    assert doc.data == {
        "200": "ok",
        "true": "yes",
        "null": "nothing",
        "1.5": "x",
        "2024-01-02": "d",
    }
    assert doc.locate(("1.5",)) == SourceLocation("f.yaml", 4, 1)


def test_yaml_scalars() -> None:
    doc = load_yaml(
        "i: 0x10\nf: 1.5\nb: true\nn: ~\ns: 'q'\nd: 2024-01-15\n"
        "t: 2024-01-15T10:30:00Z\nlit: |\n  two\n  lines\nno: no\n",
        "f.yaml",
    )
    assert doc.data == {
        "i": 16,
        "f": 1.5,
        "b": True,
        "n": None,
        "s": "q",
        "d": "2024-01-15",
        "t": "2024-01-15T10:30:00+00:00",
        "lit": "two\nlines\n",
        "no": "no",
    }
    assert [type(v) for v in doc.data.values()][:3] == [int, float, bool]


def test_yaml_explicit_standard_tags_give_plain_values() -> None:
    doc = load_yaml('e: !!str 12\nf: !!int "7"\n!!str 5: five\nd: !!omap [{p: 1}]\n', "f.yaml")
    assert doc.data == {"e": "12", "f": 7, "5": "five", "d": {"p": 1}}


def test_yaml_reused_anchor_is_valid_and_silent() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        doc = load_yaml("a: &x 1\nb: &x 2\nc: *x\n", "f.yaml")
    assert doc.data == {"a": 1, "b": 2, "c": 2}


def test_strict_constructor_does_not_leak_into_other_yaml_loaders() -> None:
    with pytest.raises(SkillError):
        load_yaml("a: !foo x\n", "f.yaml")
    assert YAML(typ="rt", pure=True).load("a: !foo x\n")["a"].value == "x"


def test_empty_text_is_none() -> None:
    assert load_yaml("", "f.yaml").data is None
    assert load_yaml("# only a comment\n\n", "f.yaml").data is None
    assert load_json("  \n", "f.json").data is None
    assert load_yaml("", "f.yaml").locate(("x",)) == SourceLocation("f.yaml", 1, 1)


def test_hand_built_document_has_no_positions() -> None:
    doc = Document("made.yaml", {"a": 1}, "yaml")
    assert doc.locate(("a",)) == SourceLocation("made.yaml")
    assert doc == Document("made.yaml", {"a": 1}, "yaml")
    assert doc == load_yaml("a: 1\n", "made.yaml")  # positions do not take part in ==


# ---------------------------------------------------------------- JSON positions


@pytest.mark.parametrize(
    ("path", "key_at", "value_at"),
    [
        ((), (1, 1), (1, 1)),
        (("name",), (2, 3), (2, 11)),
        (("tools",), (3, 3), (3, 12)),
        (("tools", 0), (4, 5), (4, 5)),
        (("tools", 0, "inputs", 1), (4, 33), (4, 33)),
        (("tools", 1, "name"), (6, 7), (6, 15)),  # key decoded from an escape
        (("tools", 1, "empty"), (7, 7), (7, 16)),
        (('q"uote',), (10, 3), (10, 14)),
        (("tools", 1, "missing"), (5, 5), (5, 5)),  # missing: its object's item
        (("nope", "deeper"), (1, 1), (1, 1)),
    ],
)
def test_json_positions(
    path: FieldPath, key_at: tuple[int, int], value_at: tuple[int, int]
) -> None:
    doc = load_json(JSON_TEXT, "tools.json")
    assert doc.data["tools"][1]["name"] == "bé"
    assert doc.locate(path) == SourceLocation("tools.json", *key_at)
    assert doc.locate_value(path) == SourceLocation("tools.json", *value_at)


def test_json_equals_yaml_for_same_content() -> None:
    assert load_json(JSON_TEXT, "a").data == load_yaml(JSON_TEXT, "a").data


# ---------------------------------------------------------------- duplicates


def test_yaml_every_duplicate_key_is_reported() -> None:
    text = "a: 1\nb:\n  c: 1\n  c: 2\na: 3\n"
    with pytest.raises(SkillError) as exc:
        load_yaml(text, "f.yaml")
    found = [(i.code, i.path, where(i)) for i in issues_of(exc)]
    assert found == [("duplicate-key", ("b", "c"), (4, 3)), ("duplicate-key", ("a",), (5, 1))]
    assert "line 3" in issues_of(exc)[0].hint


def test_yaml_keys_that_read_the_same_are_duplicates() -> None:
    with pytest.raises(SkillError) as exc:
        load_yaml("1: a\n'1': b\n", "f.yaml")
    assert (only_issue(exc).code, where(only_issue(exc))) == ("duplicate-key", (2, 1))


def test_json_every_duplicate_key_is_reported() -> None:
    text = '{"a": 1,\n "b": {"c": 1, "c": 2, "c": 3},\n "a": 2}'
    with pytest.raises(SkillError) as exc:
        load_json(text, "f.json")
    found = [(i.code, i.path, where(i)) for i in issues_of(exc)]
    assert found == [
        ("duplicate-key", ("b", "c"), (2, 16)),
        ("duplicate-key", ("b", "c"), (2, 24)),
        ("duplicate-key", ("a",), (3, 2)),
    ]


# ---------------------------------------------------------------- YAML errors and hints


@pytest.mark.parametrize(
    ("text", "code", "at", "hint"),
    [
        ("tools: [*]\n", "yaml-syntax", (1, 9), "quote it: '*'"),
        ("tools:\n  - *\n", "yaml-syntax", (2, 5), "quote it: '*'"),
        ("pattern: *.lock\n", "yaml-syntax", (1, 10), "quote it: '*.lock'"),
        ("x: [&]\n", "yaml-syntax", (1, 5), "quote it: '&'"),
        ("a:\n\tb: 1\n", "yaml-syntax", (2, 1), "spaces"),
        (
            "description: Note: this is it\n",
            "yaml-syntax",
            (1, 18),
            'quote the value: description: "Note: this is it"',
        ),
        ("a:\n  b: 1\n    c: 2\n", "yaml-syntax", (3, 6), "indentation"),
        ('a: "hello\nb: 2\n', "yaml-syntax", (1, 4), 'add the closing "'),
        ("a: 'hello\nb: 2\n", "yaml-syntax", (1, 4), "add the closing '"),
        ("a: [1, 2\nb: 3\n", "yaml-syntax", (1, 4), "close it with ']'"),
        ("a: {x: 1\nb: 3\n", "yaml-syntax", (1, 4), "close it with '}'"),
        ("a: @user\n", "yaml-syntax", (1, 4), "quote it: '@user'"),
        ("a:\n  b: 1\n c: 2\n", "yaml-syntax", (3, 2), "same column"),
        ("a: 1\nb\nc: 2\n", "yaml-syntax", (2, 1), "':'"),
        ('a: "\\q"\n', "yaml-syntax", (1, 6), "backslash"),
        ("a: \x01\n", "yaml-syntax", (1, 4), "remove it"),
        ("a: 1\n---\nb: 2\n", "yaml-multiple-documents", (2, 1), "one document"),
        ("a: !foo bar\n", "yaml-tag", (1, 4), "remove the tag"),
        ("a: !Ref {x: 1}\n", "yaml-tag", (1, 4), "remove the tag"),
        ("a: !!python/object:os.system {}\n", "yaml-tag", (1, 4), ""),
        ("a: !!set {x, y}\n", "yaml-tag", (1, 4), ""),
        ("a: !!binary aGVsbG8=\n", "yaml-tag", (1, 4), ""),
        ("? [a, b]\n: e\n", "key-type", (1, 3), ""),
        ("a:\n  b: .nan\n", "invalid-number", (2, 6), "quote"),
        ("- &x [*x]\n", "recursive-alias", (1, 3), ""),
        ("a: 1\nb: " + "9" * 5000 + "\n", "yaml-syntax", (2, 4), "as a string"),
    ],
)
def test_yaml_errors(text: str, code: str, at: tuple[int, int], hint: str) -> None:
    with pytest.raises(SkillError) as exc:
        load_yaml(text, "f.yaml")
    issue = only_issue(exc)
    assert (issue.code, where(issue)) == (code, at), issue
    assert hint in issue.hint
    assert issue.location.file == "f.yaml"


def test_yaml_alias_bomb_is_refused() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    with pytest.raises(SkillError) as exc:
        load_yaml("\n".join(lines) + "\n", "bomb.yaml")
    issue = only_issue(exc)
    assert issue.code == "too-large"
    assert f"{MAX_NODES:,}" in issue.message
    assert issue.location.line >= 1


def test_yaml_moderate_aliases_are_expanded() -> None:
    doc = load_yaml("defaults: &d {retries: 2}\na: *d\nb: {<<: *d, extra: 1}\n", "f.yaml")
    assert doc.data["a"] == {"retries": 2}
    assert doc.data["b"] == {"extra": 1, "retries": 2}
    assert doc.data["a"] is not doc.data["defaults"]


def nested_block_yaml(levels: int) -> str:
    return "".join("  " * i + "k:\n" for i in range(levels - 1)) + "  " * (levels - 1) + "k: 1\n"


@pytest.mark.parametrize(
    "text",
    [
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        "[" * 2_000,
        nested_block_yaml(MAX_DEPTH + 1),
        nested_block_yaml(5_000),
        "a: &a " + "[" * 60 + "1" + "]" * 60 + "\nb: " + "[" * 60 + "*a" + "]" * 60 + "\n",
    ],
    ids=["flow-101", "flow-2000-unclosed", "block-101", "block-5000", "through-alias"],
)
def test_yaml_too_deep(text: str) -> None:
    with pytest.raises(SkillError) as exc:
        load_yaml(text, "deep.yaml")
    assert only_issue(exc).code == "too-deep"


def test_yaml_at_depth_limit_loads() -> None:
    assert load_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH, "f.yaml").data is not None
    data = load_yaml(nested_block_yaml(MAX_DEPTH), "f.yaml").data
    for _ in range(MAX_DEPTH - 1):
        data = data["k"]
    assert data == {"k": 1}


# ---------------------------------------------------------------- JSON errors and hints


@pytest.mark.parametrize(
    ("text", "at", "hint"),
    [
        ('{"a": 1,}', (1, 9), "remove the ',' at line 1, column 8"),
        ("[1, 2,\n]", (2, 1), "remove the ',' at line 1, column 6"),
        ("{'a': 1}", (1, 2), "double quotes"),
        ("{\"a\": 'x'}", (1, 7), "double quotes"),
        ('{\n  // note\n  "a": 1\n}', (2, 3), "no comments"),
        ('{"a": 1 /* note */}', (1, 9), "no comments"),
        ('{"a": 1\n "b": 2}', (2, 2), "add ','"),
        ("[1 2]", (1, 4), "add ','"),
        ('{"a" 1}', (1, 6), "add ':'"),
        ("{a: 1}", (1, 2), "double quotes"),
        ('{"a": "x}', (1, 7), "closing"),
        ('{"a": "x\ny"}', (1, 9), "\\n"),
        ('{"a": 1} {"b": 2}', (1, 10), "one value"),
        ('{"a": True}', (1, 7), "write true"),
        ('{"a": hello}', (1, 7), '"hello"'),
        ('{"a": [1, 2', (1, 12), "missing at the end"),
        ('{"a": "\\q"}', (1, 8), "backslash"),
        ('{"a":\n ' + "1" * 5000 + "}", (2, 2), "as a string"),
    ],
)
def test_json_syntax_errors(text: str, at: tuple[int, int], hint: str) -> None:
    with pytest.raises(SkillError) as exc:
        load_json(text, "f.json")
    issue = only_issue(exc)
    assert (issue.code, where(issue)) == ("json-syntax", at), issue
    assert hint in issue.hint


def test_json_nan_and_infinity_are_refused_with_positions() -> None:
    with pytest.raises(SkillError) as exc:
        load_json('{"a": NaN,\n "b": [Infinity, -Infinity]}', "f.json")
    found = [(i.code, i.path, where(i)) for i in issues_of(exc)]
    assert found == [
        ("invalid-number", ("a",), (1, 7)),
        ("invalid-number", ("b", 0), (2, 8)),
        ("invalid-number", ("b", 1), (2, 18)),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        '{"a": ' * 3_000 + "1" + "}" * 3_000,  # deeper than json's own recursion guard
        "[" * 100_000,
    ],
    ids=["101", "3000", "100000-unclosed"],
)
def test_json_too_deep(text: str) -> None:
    with pytest.raises(SkillError) as exc:
        load_json(text, "deep.json")
    assert only_issue(exc).code in ("too-deep", "json-syntax")
    if text.count("[") == text.count("]") and text.count("{") == text.count("}"):
        assert only_issue(exc).code == "too-deep"
        assert where(only_issue(exc)) == (1, 1 + MAX_DEPTH * (6 if "{" in text else 1))


def test_json_at_depth_limit_loads() -> None:
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "f.json").data is not None


# ---------------------------------------------------------------- reading files


def test_read_document_by_suffix(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("a: 1\n")
    (tmp_path / "b.YML").write_text("b: 2\n")
    (tmp_path / "c.json").write_text('{"c": 3}')
    assert read_document(tmp_path / "a.yaml").data == {"a": 1}
    assert read_document(tmp_path / "b.YML").format == "yaml"
    doc = read_document(tmp_path / "c.json", display="pkg/c.json")
    assert (doc.data, doc.format, doc.file) == ({"c": 3}, "json", "pkg/c.json")
    assert read_document(tmp_path / "a.yaml").file == str(tmp_path / "a.yaml")


@pytest.mark.parametrize(
    ("name", "content", "code", "message"),
    [
        ("skill.toml", b"a = 1", "file-type", "unsupported file type '.toml'"),
        ("missing.yaml", None, "file-read", "not found"),
        ("utf16.json", codecs.BOM_UTF16_LE + '{"a": 1}'.encode("utf-16-le"), "encoding", "UTF-16"),
    ],
)
def test_read_document_failures(
    tmp_path: Path, name: str, content: bytes | None, code: str, message: str
) -> None:
    if content is not None:
        (tmp_path / name).write_bytes(content)
    with pytest.raises(SkillError) as exc:
        read_document(tmp_path / name, display=name)
    issue = only_issue(exc)
    assert (issue.code, issue.location.file) == (code, name)
    assert message in issue.message


def test_read_document_directory(tmp_path: Path) -> None:
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(SkillError) as exc:
        read_document(tmp_path / "dir.yaml")
    assert "directory" in only_issue(exc).message


def test_read_document_accepts_utf8_bom(tmp_path: Path) -> None:
    for name, text in (("a.yaml", "a: 1\nb: [x]\n"), ("a.json", '{"a": 1,\n "b": ["x"]}')):
        (tmp_path / name).write_bytes(codecs.BOM_UTF8 + text.encode())
        doc = read_document(tmp_path / name)
        assert doc.data == {"a": 1, "b": ["x"]}
        assert doc.locate(("a",)).column == 1 + (name.endswith(".json"))
        assert doc.locate(("b", 0)).line == 2


def test_read_document_not_utf8_names_the_byte_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_bytes("a: 1\nname: caf\xe9\n".encode("latin-1"))
    with pytest.raises(SkillError) as exc:
        read_document(tmp_path / "bad.yaml", display="bad.yaml")
    issue = only_issue(exc)
    assert issue.code == "encoding"
    assert where(issue) == (2, 10)
    assert "0xe9" in issue.message
    assert "byte offset 14" in issue.message


def test_windows_line_endings() -> None:
    yaml_doc = load_yaml("a: 1\r\nb:\r\n  - x\r\n", "f.yaml")
    assert yaml_doc.locate(("b", 0)) == SourceLocation("f.yaml", 3, 5)
    json_doc = load_json('{\r\n  "a": 1,\r\n  "b": ["x"]\r\n}', "f.json")
    assert json_doc.locate(("b", 0)) == SourceLocation("f.json", 3, 9)


def test_tabs_and_bom_in_text() -> None:
    assert load_yaml("\ufeffa: 1\n", "f.yaml").locate(("a",)).column == 1
    assert load_json('\ufeff{"a": 1}', "f.json").data == {"a": 1}
    assert load_yaml("a: 'x\ty'\n", "f.yaml").data == {"a": "x\ty"}  # a tab inside a value


# ---------------------------------------------------------------- properties


def all_paths(data: Any, prefix: FieldPath = ()) -> Iterator[FieldPath]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*prefix, key)
            yield from all_paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield (*prefix, index)
            yield from all_paths(value, (*prefix, index))


def value_at(data: Any, path: FieldPath) -> Any:
    for part in path:
        data = data[part]
    return data


YAML_CHARS = st.sampled_from(list(":-[]{}*&!|>'\"#,?%@` \n\tab1.~"))
SAMPLE_YAML = YAML_TEXT + 'extra: "q"\nlist:\n  - {a: [1, 2]}\n'


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.text(YAML_CHARS, max_size=60)))
def test_yaml_random_text_never_crashes(text: str) -> None:
    try:
        load_yaml(text, "f.yaml")
    except SkillError as exc:
        assert exc.issues


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(SAMPLE_YAML)))
def test_yaml_truncations_never_crash(cut: int) -> None:
    try:
        load_yaml(SAMPLE_YAML[:cut], "f.yaml")
    except SkillError as exc:
        assert exc.issues


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.text(st.sampled_from(list("{}[]:,\"\\ \n0-1eE.tfnNI/'")))))
def test_json_random_text_never_crashes(text: str) -> None:
    try:
        load_json(text, "f.json")
    except SkillError as exc:
        assert exc.issues


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(JSON_TEXT)))
def test_json_truncations_never_crash(cut: int) -> None:
    try:
        load_json(JSON_TEXT[:cut], "f.json")
    except SkillError as exc:
        assert exc.issues


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_DATA = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(JSON_DATA)
def test_json_roundtrip_positions(data: Any) -> None:
    text = json.dumps(data, indent=2)
    doc = load_json(text, "f.json")
    assert doc.data == data
    lines = text.splitlines()
    for path in all_paths(data):
        loc = doc.locate(path)
        here = lines[loc.line - 1][loc.column - 1 :]
        if isinstance(path[-1], str):
            assert here.startswith(json.dumps(path[-1]) + ":"), (path, here)
        else:
            item = value_at(data, path)
            start = "[" if isinstance(item, list) else "{" if isinstance(item, dict) else None
            assert here.startswith(start or json.dumps(item)), (path, here)
            value = doc.locate_value(path)
            assert (value.line, value.column) == (loc.line, loc.column)


YAML_KEYS = st.text(st.sampled_from(list("abcxyz_019")), min_size=1, max_size=6)
YAML_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(st.sampled_from(list("ab c1")), max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(YAML_KEYS, inner, max_size=3),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(YAML_DATA)
def test_yaml_roundtrip_positions(data: Any) -> None:
    out = io.StringIO()
    dumper = YAML(typ="safe", pure=True)
    dumper.default_flow_style = False
    dumper.dump(data, out)
    doc = load_yaml(out.getvalue(), "f.yaml")
    assert doc.data == data
    lines = out.getvalue().splitlines()
    for path in all_paths(data):
        loc = doc.locate(path)
        here = lines[loc.line - 1][loc.column - 1 :]
        if isinstance(path[-1], str):
            assert here.lstrip("'\"").startswith(path[-1]), (path, here)
        else:
            assert here.strip(), (path, here)


def test_limits_are_module_constants() -> None:
    assert (source.MAX_DEPTH, source.MAX_NODES) == (100, 1_000_000)
