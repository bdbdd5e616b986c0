"""Robustness: no input makes a loader raise; every outcome is a report.

Random text, truncations and character-level mutations of the examples, random data
shaped like the skill model (keys drawn from its real field names, values from the words
it understands), and the examples with one value replaced all go through
:func:`load_paths`, and a few through ``skillwire check``. The result must always be a
report (ok, warnings or errors) and never a traceback; every error names its file, and a
syntax error also its line. The crashes these tests found are kept as plain regression
tests, and the fast input-schema check is compared with jsonschema's own.

``SKILLWIRE_FUZZ_SCALE=10 pytest tests/skills/test_fuzz.py`` runs ten times the examples.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, SchemaError
from pydantic import BaseModel
from ruamel.yaml import YAML
from tests.conftest import EXAMPLES
from tests.policy.helpers import with_required
from typer.testing import CliRunner

from skillwire.cli_app import app
from skillwire.core.issues import Severity, SkillIssue
from skillwire.skills import LoadResult, load_paths
from skillwire.skills._schema_check import schema_problem
from skillwire.skills.model import DomainFile, SkillManifest
from skillwire.skills.model_package import (
    SCHEMA_VERSIONS,
    CredentialsFile,
    GuardrailsFile,
    PrerequisitesFile,
    TestsFile,
    ToolsFile,
)

_SCALE = max(1, int(os.environ.get("SKILLWIRE_FUZZ_SCALE", "1")))


def examples(count: int) -> settings:
    """Hypothesis settings: ``count`` examples (times the scale), no deadline (a loaded
    machine must not turn into a failure), and no too-slow health check for the same
    reason."""
    return settings(
        max_examples=count * _SCALE,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


REFUND_YAML = (EXAMPLES / "refund_support" / "domain.yaml").read_text(encoding="utf-8")
PACKAGE = EXAMPLES / "refund_support_pkg"
PACKAGE_FILES = {path.name: path.read_text(encoding="utf-8") for path in PACKAGE.iterdir()}
SYNTAX_CODES = frozenset({"yaml-syntax", "json-syntax"})


# ---------------------------------------------------------------- checking a result


def check_result(result: LoadResult, root: Path) -> None:
    """The invariants every load must keep, whatever it was given."""
    assert result.report.skills, "a load always reports something"
    for rep in result.report.skills:
        assert rep.status in ("ok", "warnings", "errors")
        if rep.loaded:
            assert rep.status != "errors" and rep.skill_id in result.skills
        for issue in rep.issues:
            check_issue(issue, root)
        json.dumps(rep.to_dict())  # what `skillwire check --json` prints
    for skill_id, skill in result.skills.items():
        assert skill.id == skill_id
    json.dumps(result.report.to_dict())


def check_issue(issue: SkillIssue, root: Path) -> None:
    """An issue names a file under ``root``; a syntax error also names its line."""
    assert isinstance(issue, SkillIssue)
    assert issue.location.file.startswith(str(root)), issue
    if issue.severity is Severity.ERROR:
        assert issue.code, issue
        assert issue.message, issue
    if issue.code in SYNTAX_CODES:
        assert issue.location.line >= 1, issue
    str(issue)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FolderMaker]:
    """A fresh folder per hypothesis example (function-scoped ``tmp_path`` would be shared
    by every example of a test)."""
    base = tmp_path_factory.mktemp("fuzz")
    yield FolderMaker(base)


class FolderMaker:
    """Hands out new, empty folders under one base folder."""

    def __init__(self, base: Path) -> None:
        self._base = base
        self._count = itertools.count()

    def new(self) -> Path:
        """A new empty folder."""
        folder = self._base / f"case{next(self._count)}"
        folder.mkdir()
        return folder


def load_file(folder: Path, name: str, content: str | bytes) -> Path:
    """Write ``content`` as ``folder/name``, load it, check the result; return its path."""
    path = folder / name
    if isinstance(content, str):  # a lone surrogate is written as bytes that are not UTF-8
        path.write_text(content, encoding="utf-8", errors="surrogatepass", newline="")
    else:
        path.write_bytes(content)
    check_result(load_paths([path]), folder)
    return path


def write_package(folder: Path, **changed: str | bytes | None) -> Path:
    """A copy of the refund package in ``folder/pkg``; ``None`` drops a file."""
    pkg = folder / "pkg"
    pkg.mkdir()
    for name, text in {**PACKAGE_FILES, **changed}.items():
        if isinstance(text, bytes):
            (pkg / name).write_bytes(text)
        elif text is not None:
            (pkg / name).write_text(text, encoding="utf-8", errors="surrogatepass", newline="")
    return pkg


# ---------------------------------------------------------------- strategies


def mutate(text: str, edits: list[tuple[str, int, str]]) -> str:
    """Apply character edits: ``("delete" | "insert" | "replace", position, char)``."""
    for kind, position, char in edits:
        at = position % (len(text) + 1)
        if kind == "delete":
            text = text[:at] + text[at + 1 :]
        elif kind == "insert":
            text = text[:at] + char + text[at:]
        else:
            text = text[:at] + char + text[at + 1 :]
    return text


SIGNIFICANT = st.sampled_from(
    [*":-[]{}*&!|>'\"#,?%@`~ \n\t\r\\/.0123456789eE+ab_xyz", "\x00", "\x85", "\ufeff", "é"]
)
EDITS = st.lists(
    st.tuples(
        st.sampled_from(["delete", "insert", "replace"]),
        st.integers(0, 1 << 16),
        st.one_of(SIGNIFICANT, st.characters()),
    ),
    min_size=1,
    max_size=8,
)


def model_names(*roots: type[BaseModel]) -> list[str]:
    """Every field name and alias of ``roots`` and of the models they contain."""
    names: set[str] = set()
    seen: set[type[BaseModel]] = set()
    todo = list(roots)
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, field in model.model_fields.items():
            names.add(field.alias or name)
            todo.extend(_models_in(field.annotation))
    return sorted(names)


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


FIELD_NAMES = model_names(
    DomainFile,
    SkillManifest,
    ToolsFile,
    GuardrailsFile,
    CredentialsFile,
    PrerequisitesFile,
    TestsFile,
)
WORDS = [
    # literal values and references the model and the checks understand
    *("always", "never", "conditional", "deny", "allow", "escalate", "require_approval"),
    *("block", "require_input", "redirect", "reject", "python", "simulate", "shell_command"),
    *("http_request", "mcp", "object", "string", "number", "integer", "array", "boolean"),
    *("env", "command", "manual", "fail_fast", "restrictive", "upsert_tool", "text"),
    *("add_global_allowlist_tool", "append_unique_guardrail_list", "choice", "standard"),
    *("guardrails.shell.allowedPrefixes", "guardrails.filesystem.allowedWriteRoots"),
    *("refund-support-pkg", "refund-support-pkg.process_refund", "process_refund"),
    *("check_eligibility", "order_id", "amount", "supervisor", "mod:func", "#/x"),
    *("https://example.com/s.json", "^[a-z]+$", "([", "refund_issued", "ORD-12345"),
    # conditions, well and badly formed
    *("amount > 500", "order_id == 'x'", " > ", "amount >> 1", "nope > 1", "always"),
    *("file_path ends with '.lock'", "size(history) > 0", "foo(amount)", "amount >"),
    *sorted({v for versions in SCHEMA_VERSIONS.values() for v in versions}),
    "ayati-tools/v9",
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.sampled_from(WORDS)
    | st.text(max_size=12)
)
SCHEMA_WORDS = ["properties", "additionalProperties", "patternProperties", "allOf", "$ref"]
KEYS = st.sampled_from(FIELD_NAMES) | st.sampled_from(
    ["_note", "requires_aproval", "x", *SCHEMA_WORDS]
)
DATA = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=6),
    max_leaves=40,
)
MODEL_SHAPED = st.dictionaries(KEYS, DATA, min_size=1, max_size=8)


def paths_in(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``data`` (not the root), outermost first."""
    found: list[tuple[Any, ...]] = []
    if isinstance(data, dict | list):
        for key, value in data.items() if isinstance(data, dict) else enumerate(data):
            found.append((*prefix, key))
            found.extend(paths_in(value, (*prefix, key)))
    return found


_DROP = object()


def replaced(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of ``data`` with the value at ``path`` replaced (or dropped: ``_DROP``)."""
    copy = json.loads(json.dumps(data))
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    if value is _DROP:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return copy


REPLACEMENTS = st.one_of(st.just(_DROP), DATA)


def to_yaml(data: Any) -> str:
    """``data`` as block-style YAML."""
    out = io.StringIO()
    dumper = YAML(typ="safe", pure=True)
    dumper.default_flow_style = False
    dumper.dump(data, out)
    return out.getvalue()


# ---------------------------------------------------------------- (a) random text


@examples(40)
@given(st.one_of(st.text(), st.text(SIGNIFICANT, max_size=80), st.binary(max_size=80)))
def test_random_text_as_yaml_never_raises(workdir: FolderMaker, content: str | bytes) -> None:
    load_file(workdir.new(), "domain.yaml", content)


@examples(40)
@given(st.one_of(st.text(), st.text(SIGNIFICANT, max_size=80), st.binary(max_size=80)))
def test_random_text_as_json_never_raises(workdir: FolderMaker, content: str | bytes) -> None:
    load_file(workdir.new(), "skill.json", content)


# ---------------------------------------------------------------- (b, c) the YAML example


@examples(40)
@given(st.integers(0, len(REFUND_YAML)))
def test_truncated_yaml_example_never_raises(workdir: FolderMaker, cut: int) -> None:
    load_file(workdir.new(), "domain.yaml", REFUND_YAML[:cut])


@examples(20)
@given(st.integers(0, len(REFUND_YAML.encode())))
def test_byte_truncated_yaml_example_never_raises(workdir: FolderMaker, cut: int) -> None:
    load_file(workdir.new(), "domain.yaml", REFUND_YAML.encode()[:cut])


@examples(60)
@given(EDITS)
def test_mutated_yaml_example_never_raises(
    workdir: FolderMaker, edits: list[tuple[str, int, str]]
) -> None:
    load_file(workdir.new(), "domain.yaml", mutate(REFUND_YAML, edits))


# ---------------------------------------------------------------- (d) model-shaped data


@examples(60)
@given(MODEL_SHAPED, st.sampled_from(["domain.yaml", "skill.json"]))
def test_model_shaped_data_never_raises(
    workdir: FolderMaker, data: dict[str, Any], name: str
) -> None:
    text = json.dumps(data, indent=1) if name.endswith(".json") else to_yaml(data)
    load_file(workdir.new(), name, text)


@examples(60)
@given(st.sampled_from(sorted(SCHEMA_VERSIONS)), MODEL_SHAPED, st.booleans())
def test_model_shaped_package_file_never_raises(
    workdir: FolderMaker, kind: str, data: dict[str, Any], keep_ids: bool
) -> None:
    if keep_ids:  # get past rule 1 and the skillId check, so validation goes deep
        data["schemaVersion"] = SCHEMA_VERSIONS[kind][-1]
        data["id" if kind == "skill" else "skillId"] = "refund-support-pkg"
    name = "skill.json" if kind == "skill" else f"{kind}.json"
    folder = workdir.new()
    pkg = write_package(folder, **{name: json.dumps(data, indent=1)})
    check_result(load_paths([pkg]), folder)


REFUND_DATA = YAML(typ="safe", pure=True).load(REFUND_YAML)
REFUND_PATHS = paths_in(REFUND_DATA)
PACKAGE_DATA = {
    name: json.loads(text) for name, text in PACKAGE_FILES.items() if name.endswith(".json")
}
PACKAGE_PATHS = [(name, path) for name, data in PACKAGE_DATA.items() for path in paths_in(data)]


@examples(60)
@given(st.sampled_from(REFUND_PATHS), REPLACEMENTS)
def test_yaml_example_with_a_value_replaced_never_raises(
    workdir: FolderMaker, path: tuple[Any, ...], value: Any
) -> None:
    load_file(workdir.new(), "domain.yaml", to_yaml(replaced(REFUND_DATA, path, value)))


@examples(100)
@given(st.sampled_from(PACKAGE_PATHS), REPLACEMENTS)
def test_package_with_a_value_replaced_never_raises(
    workdir: FolderMaker, where: tuple[str, tuple[Any, ...]], value: Any
) -> None:
    name, path = where
    folder = workdir.new()
    text = json.dumps(replaced(PACKAGE_DATA[name], path, value), indent=1)
    pkg = write_package(folder, **{name: text})
    check_result(load_paths([pkg]), folder)


# ---------------------------------------------------------------- (e) the package example


@examples(60)
@given(st.sampled_from(sorted(PACKAGE_FILES)), st.integers(0, 1 << 16))
def test_truncated_package_file_never_raises(workdir: FolderMaker, name: str, cut: int) -> None:
    text = PACKAGE_FILES[name]
    folder = workdir.new()
    pkg = write_package(folder, **{name: text[: cut % (len(text) + 1)]})
    check_result(load_paths([pkg]), folder)


@examples(80)
@given(st.sampled_from(sorted(PACKAGE_FILES)), EDITS)
def test_mutated_package_file_never_raises(
    workdir: FolderMaker, name: str, edits: list[tuple[str, int, str]]
) -> None:
    folder = workdir.new()
    pkg = write_package(folder, **{name: mutate(PACKAGE_FILES[name], edits)})
    check_result(load_paths([pkg]), folder)


@examples(20)
@given(st.sampled_from(sorted(PACKAGE_FILES)), st.binary(max_size=40))
def test_package_file_replaced_by_bytes_never_raises(
    workdir: FolderMaker, name: str, content: bytes
) -> None:
    folder = workdir.new()
    pkg = write_package(folder, **{name: content})
    check_result(load_paths([pkg]), folder)


@pytest.mark.parametrize("name", sorted(PACKAGE_FILES))
def test_package_without_one_file_never_raises(tmp_path: Path, name: str) -> None:
    pkg = write_package(tmp_path, **{name: None})
    check_result(load_paths([pkg]), tmp_path)


def test_package_file_that_is_a_folder_never_raises(tmp_path: Path) -> None:
    pkg = write_package(tmp_path, **{"tests.json": None, "skill.md": None})
    (pkg / "tests.json").mkdir()
    (pkg / "skill.md").mkdir()
    check_result(load_paths([pkg]), tmp_path)


# ---------------------------------------------------------------- the input-schema check


def metaschema_verdict(schema: Any) -> tuple[str, tuple[str, ...]] | None:
    """What jsonschema itself says about ``schema`` (the reference for rule 4)."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return exc.message, tuple(str(part) for part in exc.path)
    return None


KEYWORDS = [
    *("type", "properties", "required", "items", "prefixItems", "additionalProperties"),
    *("enum", "const", "default", "examples", "pattern", "patternProperties", "format"),
    *("minimum", "maximum", "exclusiveMinimum", "multipleOf", "minLength", "maxItems"),
    *("minContains", "uniqueItems", "allOf", "anyOf", "oneOf", "not", "if", "then", "else"),
    *("$ref", "$defs", "$id", "$anchor", "$comment", "description", "title", "deprecated"),
    *("dependentRequired", "dependentSchemas", "definitions", "unevaluatedProperties"),
    *("contentSchema", "propertyNames", "x-extension"),
]
SCHEMA_SCALARS = (
    st.sampled_from(["object", "string", "integer", "array", "nope", "^a+$", "([", "#/$defs/a"])
    | st.integers(-3, 3)
    | st.sampled_from([0.0, 1.0, 2.5, -1.5, 10**30])
    | st.booleans()
    | st.none()
)
TYPE_NAMES = ["array", "boolean", "integer", "null", "number", "object", "string"]
NAMES = st.sampled_from(["a", "b", "order_id", "^x$", "(["])


def keyword_value(keyword: str) -> st.SearchStrategy[Any]:
    """A value for ``keyword``: mostly one the metaschema accepts, sometimes a near miss."""
    schema = st.deferred(lambda: SCHEMAS)
    names = st.lists(NAMES, max_size=3)
    right: dict[str, st.SearchStrategy[Any]] = {
        "type": st.sampled_from(TYPE_NAMES) | st.lists(st.sampled_from([*TYPE_NAMES, "x"])),
        "properties": st.dictionaries(NAMES, schema, max_size=3),
        "patternProperties": st.dictionaries(NAMES, schema, max_size=2),
        "$defs": st.dictionaries(NAMES, schema, max_size=2),
        "dependentSchemas": st.dictionaries(NAMES, schema, max_size=2),
        "definitions": st.dictionaries(NAMES, schema, max_size=2),
        "required": names,
        "dependentRequired": st.dictionaries(NAMES, names, max_size=2),
        "allOf": st.lists(schema, max_size=2),
        "anyOf": st.lists(schema, max_size=2),
        "oneOf": st.lists(schema, max_size=2),
        "prefixItems": st.lists(schema, max_size=2),
        "enum": st.lists(SCHEMA_SCALARS, max_size=3),
        "examples": st.lists(SCHEMA_SCALARS, max_size=2),
        "pattern": st.sampled_from(["^a$", "[0-9]{5}", "(", "a{2,1}", "\\d+"]),
        "minimum": st.integers(-5, 5) | st.floats(-5, 5),
        "maximum": st.integers(-5, 5) | st.floats(-5, 5),
        "exclusiveMinimum": st.integers(-5, 5) | st.floats(-5, 5),
        "multipleOf": st.sampled_from([0, 1, 2, 0.5, -1, 0.0]),
        "minLength": st.integers(-1, 5) | st.just(2.0),
        "maxItems": st.integers(-1, 5) | st.just(1.5),
        "minContains": st.integers(-1, 3),
        "uniqueItems": st.booleans(),
        "deprecated": st.booleans(),
        "$ref": st.sampled_from(["#/$defs/a", "#", "other.json", ""]),
        "$id": st.sampled_from(["https://x.test/s", "#frag", "a b"]),
        "$anchor": st.sampled_from(["a", "1a", "a-b"]),
        "format": st.sampled_from(["email", "uri", "x"]),
        "$comment": st.text(max_size=3),
        "description": st.text(max_size=3),
        "title": st.text(max_size=3),
        "const": SCHEMA_SCALARS,
        "default": SCHEMA_SCALARS,
        "x-extension": SCHEMA_SCALARS,
    }
    if keyword not in right:
        return schema
    return st.one_of(*[right[keyword]] * 6, SCHEMA_SCALARS)  # a near miss one time in seven


SCHEMAS: st.SearchStrategy[Any] = st.booleans() | st.lists(
    st.sampled_from(KEYWORDS), unique=True, max_size=4
).flatmap(lambda keys: st.fixed_dictionaries({k: keyword_value(k) for k in keys}))


@examples(300)
@given(SCHEMAS)
def test_fast_schema_check_agrees_with_jsonschema(schema: Any) -> None:
    assert schema_problem(schema) == metaschema_verdict(schema)


# ---------------------------------------------------------------- crashes found, kept fixed


def error_codes(result: LoadResult) -> list[str]:
    """The codes of every error of the load."""
    return [i.code for rep in result.report.skills for i in rep.errors]


def load_package_with(folder: Path, name: str, change: Callable[[Any], None]) -> LoadResult:
    """Load a copy of the refund package with one JSON file changed by ``change``."""
    data = json.loads(PACKAGE_FILES[name])
    change(data)
    pkg = write_package(folder, **{name: json.dumps(data, indent=1)})
    result = load_paths([pkg])
    check_result(result, folder)
    return result


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "object", "properties": {"x": {"pattern": "(" * 3000}}}, "x.pattern"),
        ({"type": "object", "properties": {"x": {"pattern": "(" * 2000 + ")" * 1999}}}, "pattern"),
        ({"type": "object", "patternProperties": {"(" * 2000 + ")" * 1999: {}}}, "(((("),
        ({"type": "object", "properties": {"x": {"pattern": "a{99999999999}"}}}, "pattern"),
        ({"type": "object", "properties": {"x": {"pattern": "a" * 5000}}}, "at most 4096"),
        ({"type": "object", "properties": {"x": {"pattern": "\\pL{1000}"}}}, "too large"),
    ],
)
def test_regex_the_engine_cannot_compile_is_an_invalid_schema(
    tmp_path: Path, schema: dict[str, Any], where: str
) -> None:
    result = load_package_with(
        tmp_path, "tools.json", lambda d: d["tools"][0].update(inputSchema=schema)
    )
    (error,) = result.report.skills[0].errors
    assert error.code == "invalid-schema" and where in str(error), error
    assert error.location.file.endswith("tools.json") and error.location.line >= 1


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"x": {"pattern": "(" * 2000 + ")" * 2000}}},
        {"type": "object", "patternProperties": {"(" * 2000 + ")" * 2000: {}}},
    ],
)
def test_regex_nested_deep_is_fine_for_the_engine(tmp_path: Path, schema: dict[str, Any]) -> None:
    """Python's ``re`` recursed past its limit on these; RE2 parses without recursion."""
    result = load_package_with(
        tmp_path, "tools.json", lambda d: d["tools"][0].update(inputSchema=schema)
    )
    assert error_codes(result) == []


def test_regex_of_a_yaml_tool_input_is_checked_too(tmp_path: Path) -> None:
    head, tools = REFUND_YAML.split("\ntools:", 1)
    deep = "pattern: '" + "(" * 3000 + "'"
    text = head + "\ntools:" + tools.replace('pattern: "^ORD-[0-9]{5}$"', deep, 1)
    result = load_paths([load_file(tmp_path, "domain.yaml", text)])
    assert error_codes(result) == ["invalid-schema"]


def test_large_numbers_in_a_schema_are_fine(tmp_path: Path) -> None:
    schema = {"type": "object", "minLength": 10**40, "multipleOf": 1e-300}
    result = load_package_with(
        tmp_path, "tools.json", lambda d: d["tools"][0].update(inputSchema=schema)
    )
    assert error_codes(result) == []


@pytest.mark.parametrize("properties", [[1, 2], "order_id", 5, True])
def test_schema_properties_that_are_not_a_mapping(tmp_path: Path, properties: Any) -> None:
    def change(data: Any) -> None:
        data["tools"][2]["inputSchema"]["properties"] = properties  # process_refund

    result = load_package_with(tmp_path, "tools.json", change)
    assert error_codes(result) == ["invalid-schema"], error_codes(result)


def test_deep_condition_is_an_invalid_condition(tmp_path: Path) -> None:
    deep = "(" * 5000 + "amount" + ")" * 5000 + " > 500"
    path = load_file(tmp_path, "domain.yaml", REFUND_YAML.replace("amount > 500", deep, 1))
    assert "invalid-condition" in error_codes(load_paths([path]))


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("skillDoc", "/etc/hostname"),
        ("skillDoc", "../refund_support/domain.yaml"),
        ("skillDoc", "doc\u0000.md"),
        ("skillDoc", ""),
        ("tools", "a/../../tools.json"),
        ("tests", "C:/tests.json"),
        ("guardrails", "."),
    ],
)
def test_package_file_names_stay_inside_the_package(tmp_path: Path, kind: str, name: str) -> None:
    result = load_package_with(tmp_path, "skill.json", lambda d: d["files"].update({kind: name}))
    (error,) = result.report.skills[0].errors
    assert error.code == "file-outside-package" and error.path == ("files", kind)
    assert error.location.file.endswith("skill.json") and error.location.line >= 1


def test_package_files_in_a_subfolder_load(tmp_path: Path) -> None:
    pkg = write_package(tmp_path)
    (pkg / "docs").mkdir()
    (pkg / "skill.md").rename(pkg / "docs" / "skill.md")
    manifest = json.loads(PACKAGE_FILES["skill.json"])
    manifest["files"]["skillDoc"] = "docs/skill.md"
    (pkg / "skill.json").write_text(json.dumps(manifest))
    result = load_paths([pkg])
    assert result.report.ok and result.skills["refund-support-pkg"].prompt.startswith("#")


@pytest.mark.parametrize("kind", ["skillDoc", "tools", "credentials"])
def test_package_file_name_too_long_for_the_system(tmp_path: Path, kind: str) -> None:
    result = load_package_with(
        tmp_path, "skill.json", lambda d: d["files"].update({kind: "x" * 5000 + ".json"})
    )
    codes = error_codes(result)
    assert codes in ([], ["missing-file"], ["unreadable"]), codes


@pytest.mark.parametrize("root", ["x" * 5000, "nul\u0000byte"])
def test_unusable_path_on_the_command_line(root: str) -> None:
    result = load_paths([root])
    assert [i.code for i in result.report.skills[0].issues] == ["missing-file"]


def test_deeply_nested_manifest_found_while_walking(tmp_path: Path) -> None:
    folder = tmp_path / "skill"
    folder.mkdir()
    (folder / "skill.json").write_text("[" * 100_000 + "]" * 100_000)
    for target in (tmp_path, folder / "skill.json"):
        result = load_paths([target])
        check_result(result, tmp_path)
        assert error_codes(result) == ["too-deep"]


def test_folders_linked_into_themselves_are_walked_once(tmp_path: Path) -> None:
    (tmp_path / "domain.yaml").write_text(with_required("id: looped\ntools: [{name: t}]\n"))
    (tmp_path / "a").symlink_to(tmp_path)
    (tmp_path / "b").symlink_to(tmp_path)
    result = load_paths([tmp_path])
    assert list(result.skills) == ["looped"] and len(result.report.skills) == 1


def test_very_deep_folders_are_walked(tmp_path: Path) -> None:
    folders = [tmp_path / "d"]
    for _ in range(1200):  # deeper than Python's recursion limit
        folders.append(folders[-1] / "d")
    try:
        for folder in folders:
            folder.mkdir()
        (folders[-1] / "domain.yaml").write_text(with_required("id: deep\ntools: [{name: t}]\n"))
        assert list(load_paths([tmp_path]).skills) == ["deep"]
    finally:  # shutil.rmtree (pytest's cleanup) recurses: remove bottom-up here
        (folders[-1] / "domain.yaml").unlink(missing_ok=True)
        for folder in reversed(folders):
            if folder.is_dir():
                folder.rmdir()


# ---------------------------------------------------------------- the command line


@examples(15)
@given(
    st.one_of(
        st.builds(mutate, st.just(REFUND_YAML), EDITS),
        st.builds(to_yaml, MODEL_SHAPED),
        st.text(SIGNIFICANT, max_size=60),
    ),
    st.sampled_from([[], ["--json"], ["--strict", "--verbose"]]),
)
def test_check_command_never_raises(workdir: FolderMaker, text: str, flags: list[str]) -> None:
    folder = workdir.new()
    path = folder / "domain.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass", newline="")
    result = CliRunner().invoke(app, ["check", *flags, str(path)])
    assert result.exit_code in (0, 1), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if "--json" in flags:
        report = json.loads(result.output)
        assert report["ok"] == (result.exit_code == 0)


@pytest.mark.parametrize(
    "name",
    ["tools.json", "skill.json", "guardrails.json", "credentials.json", "tests.json"],
)
def test_check_command_on_a_truncated_package(tmp_path: Path, name: str) -> None:
    text = PACKAGE_FILES[name]
    pkg = write_package(tmp_path, **{name: text[: len(text) // 2]})
    result = CliRunner().invoke(app, ["check", "--json", str(pkg)])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    issues = [i for s in report["skills"] for f in s["files"] for i in f["issues"]]
    errors = [i for i in issues if i["severity"] == "error"]
    assert errors and all(i["file"].endswith(name) and i["line"] >= 1 for i in errors), errors
