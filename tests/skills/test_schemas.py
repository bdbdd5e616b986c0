"""The JSON Schemas in ``schemas/``: current, valid, matched by the examples; rule 1.

The schemas are generated from the skill model (``make schemas``); editors use them to
complete and check skill files. A model change that is not followed by ``make schemas``
fails here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from tests.conftest import EXAMPLES, FIXTURES, ROOT

from skillwire.skills import load_paths
from skillwire.skills.model_package import SCHEMA_VERSIONS
from skillwire.skills.schemas import SCHEMA_FILES, generate, render
from skillwire.skills.source import read_document

SCHEMAS = ROOT / "schemas"
PACKAGE = EXAMPLES / "refund_support_pkg"
PACKAGE_FILES = {
    "skill.json": "skill",
    "tools.json": "tools",
    "guardrails.json": "guardrails",
    "credentials.json": "credentials",
    "prerequisites.json": "prerequisites",
    "tests.json": "tests",
}
"""Each JSON file of a package, and its kind (the key of ``SCHEMA_VERSIONS``)."""


def committed(name: str) -> dict[str, Any]:
    """A committed schema, parsed."""
    data: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return data


def violations(schema: dict[str, Any], data: Any) -> list[str]:
    """Every way ``data`` fails ``schema``, as ``path: message`` lines."""
    validator = Draft202012Validator(schema)
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
        for error in validator.iter_errors(data)
    ]


# ---------------------------------------------------------------- drift


def test_committed_schemas_match_the_model() -> None:
    stale = [
        name
        for name, schema in generate().items()
        if not (SCHEMAS / name).is_file()
        or (SCHEMAS / name).read_text(encoding="utf-8") != render(schema)
    ]
    assert not stale, f"schemas/ is stale for {', '.join(stale)}: run `make schemas`"


def test_no_schema_is_committed_that_the_model_does_not_produce() -> None:
    extra = {p.name for p in SCHEMAS.glob("*.json")} - set(SCHEMA_FILES)
    assert not extra, f"schemas/ holds files the model does not generate: {sorted(extra)}"


# ---------------------------------------------------------------- valid schemas


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_committed_schema_is_valid_draft_2020_12(name: str) -> None:
    schema = committed(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("/" + name)
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("file", sorted(PACKAGE_FILES))
def test_package_schema_names_exactly_the_accepted_versions(file: str) -> None:
    kind = PACKAGE_FILES[file]
    version = committed(f"{kind}.schema.json")["properties"]["schemaVersion"]
    assert sorted(version["enum"]) == sorted(SCHEMA_VERSIONS[kind])
    assert "schemaVersion" in committed(f"{kind}.schema.json")["required"]


# ---------------------------------------------------------------- examples validate


@pytest.mark.parametrize(
    "path",
    [EXAMPLES / "refund_support" / "domain.yaml", FIXTURES / "spec_000_domain.yaml"],
    ids=lambda p: p.name if isinstance(p, Path) else str(p),
)
def test_single_file_examples_match_domain_schema(path: Path) -> None:
    data = read_document(path).data
    assert violations(committed("domain.schema.json"), data) == []


@pytest.mark.parametrize("file", sorted(PACKAGE_FILES))
def test_package_example_files_match_their_schema(file: str) -> None:
    data = json.loads((PACKAGE / file).read_text(encoding="utf-8"))
    schema = committed(f"{PACKAGE_FILES[file]}.schema.json")
    assert violations(schema, data) == []


@pytest.mark.parametrize("file", sorted(PACKAGE_FILES))
def test_package_schema_rejects_an_unknown_version(file: str) -> None:
    data = json.loads((PACKAGE / file).read_text(encoding="utf-8"))
    data["schemaVersion"] = "ayati-other/v9"
    schema = committed(f"{PACKAGE_FILES[file]}.schema.json")
    found = violations(schema, data)
    assert len(found) == 1 and found[0].startswith("schemaVersion:"), found


# ---------------------------------------------------------------- rule 1 in the loader


def schema_version_line(text: str) -> int:
    """The 1-based line that holds the ``schemaVersion`` key."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if '"schemaVersion"' in line)


@pytest.mark.parametrize("version", ["ayati-other/v9", "skillwire-skill/v2", "", 1])
@pytest.mark.parametrize("file", sorted(PACKAGE_FILES))
def test_loader_rejects_an_unknown_schema_version(tmp_path: Path, file: str, version: Any) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(PACKAGE, pkg)
    text = (pkg / file).read_text(encoding="utf-8")
    data = json.loads(text)
    data["schemaVersion"] = version
    changed = json.dumps(data, indent=2)
    (pkg / file).write_text(changed, encoding="utf-8")

    result = load_paths([pkg])

    assert result.skills == {}
    (error,) = result.report.skills[0].errors
    line = schema_version_line(changed)
    assert error.code == "unknown-schema-version"
    assert error.path == ("schemaVersion",)
    assert str(error).startswith(f"{pkg}/{file}:{line}:"), str(error)
    assert "rule 1" in error.message and repr(version) in error.message
    assert all(v in error.hint for v in SCHEMA_VERSIONS[PACKAGE_FILES[file]])


@pytest.mark.parametrize("file", sorted(PACKAGE_FILES))
def test_loader_rejects_a_missing_schema_version(tmp_path: Path, file: str) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(PACKAGE, pkg)
    data = json.loads((pkg / file).read_text(encoding="utf-8"))
    del data["schemaVersion"]
    (pkg / file).write_text(json.dumps(data, indent=2), encoding="utf-8")

    result = load_paths([pkg])

    (error,) = result.report.skills[0].errors
    assert error.code == "unknown-schema-version" and error.message.startswith("missing")
    assert error.location.file == f"{pkg}/{file}" and error.location.line == 1
