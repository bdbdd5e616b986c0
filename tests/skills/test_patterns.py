"""Skill patterns the safe engine cannot take are load errors, with file and line.

Every pattern runs on the linear-time engine (:mod:`skillwire.core.patterns`). It cannot
run look-around or backreferences, and there is no other engine that may run them safely
at run time, so ``skillwire check`` refuses them at load instead of warning and letting
the pattern fail (or hang) later.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.policy.helpers import with_required

from skillwire.core.issues import SkillIssue
from skillwire.skills import load_paths


def errors_of(path: Path) -> list[SkillIssue]:
    return [i for rep in load_paths([path]).report.skills for i in rep.errors]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "domain.yaml"
    path.write_text(with_required(text.lstrip("\n")))
    return path


def line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(needle)


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(?<=#)[0-9]{5}", "look-behind"),
        ("(?<!x)[0-9]{5}", "look-behind"),
        ("ORD(?=-)", "look-ahead"),
        ("ORD(?!-)", "look-ahead"),
        ("(a)\\\\1", "backreference"),
        ("(?P<n>a)(?P=n)", "backreference"),
        ("a\\\\Z", "\\\\z"),
        ("[0-9]{1001}", "1000"),
    ],
)
@pytest.mark.parametrize("where", ["entity", "required_input", "tool_input", "schema"])
def test_a_pattern_the_engine_cannot_take_is_a_load_error(
    tmp_path: Path, pattern: str, reason: str, where: str
) -> None:
    entity = f'        - {{name: order_id, pattern: "{pattern}"}}' if where == "entity" else ""
    required = (
        f'required_inputs:\n  - {{path: order_id, pattern: "{pattern}"}}\n'
        if where == "required_input"
        else ""
    )
    tool_input = f', pattern: "{pattern}"' if where == "tool_input" else ""
    schema = (
        "\n    inputSchema:\n      type: object\n      properties:\n"
        f'        code: {{type: string, pattern: "{pattern}"}}'
        if where == "schema"
        else ""
    )
    path = write(
        tmp_path,
        f"""
intents:
  supported:
    - id: refund
      entities:
        - {{name: amount}}
{entity}
{required}tools:
  - name: refund
    inputs:
      - {{name: order_id, type: string{tool_input}}}{schema}
""",
    )
    errors = errors_of(path)
    assert len(errors) == 1, errors
    (error,) = errors
    assert error.code in ("invalid-pattern", "invalid-schema"), error
    shown = str(error)
    assert reason.replace("\\\\", "\\") in shown, shown
    assert error.location.file.endswith("domain.yaml")
    assert error.location.line == line_of(path, "pattern:"), (error, path.read_text())


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"patternProperties": {"(?<=a)b": {}}}, "patternProperties"),
        ({"properties": {"x": {"$schema": "http://json-schema.org/draft-07/schema#"}}}, "x"),
        ({"patternProperties": {"^a": {}}, "unevaluatedProperties": False}, "unevaluated"),
    ],
)
def test_a_schema_whose_patterns_could_escape_the_engine_is_an_error(
    refund_pkg: Path, schema: dict[str, Any], where: str
) -> None:
    tools = refund_pkg / "tools.json"
    data = json.loads(tools.read_text())
    data["tools"][0]["inputSchema"] = {"type": "object", **schema}
    tools.write_text(json.dumps(data, indent=1))
    (error,) = errors_of(refund_pkg)
    assert error.code == "invalid-schema" and where in str(error), error
    assert error.location.file.endswith("tools.json") and error.location.line > 1


def test_patterns_the_engine_takes_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        r"""
intents:
  supported:
    - id: refund
      entities:
        - {name: order_id, pattern: '^ORD-[0-9]{5}$'}
        - {name: name, pattern: '^\pL+$'}
        - {name: code, pattern: '^\u00e9[$]\$$'}
tools:
  - name: refund
    inputSchema:
      type: object
      properties:
        order_id: {type: string, pattern: '(?i)^ord-\d{5}$'}
      patternProperties:
        '^x-[a-z]+$': {type: string}
""",
    )
    assert errors_of(path) == []


@pytest.mark.parametrize("where", ["shell", "plan"])
def test_a_deny_pattern_the_engine_cannot_take_is_a_load_error(
    refund_pkg: Path, where: str
) -> None:
    guardrails = refund_pkg / "guardrails.json"
    data = json.loads(guardrails.read_text())
    if where == "shell":
        data["shell"]["denyPatterns"] = ["rm\\s+-rf", "(?<!safe-)delete"]
    else:
        data["toolAccessPlan"]["operations"].append(
            {
                "op": "append_unique_guardrail_list",
                "path": "guardrails.shell.denyPatterns",
                "values": ["(?<!safe-)delete"],
            }
        )
    guardrails.write_text(json.dumps(data, indent=1))
    (error,) = errors_of(refund_pkg)
    assert error.code == "invalid-pattern" and "look-behind" in str(error), error
    assert error.location.file.endswith("guardrails.json")
    assert "(?<!safe-)delete" in guardrails.read_text().splitlines()[error.location.line - 1]
