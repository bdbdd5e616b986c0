"""Loading single-file definitions: the spec's YAML, the example, errors with lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import EXAMPLES, FIXTURES
from tests.policy.helpers import with_required

from skillwire.core import Severity, SkillError
from skillwire.skills import load_paths, load_skill


def write(tmp_path: Path, text: str, name: str = "domain.yaml") -> Path:
    """Write ``text`` with the required parts it lacks (problem, intents), appended."""
    path = tmp_path / name
    path.write_text(with_required(text))
    return path


def test_spec_yaml_loads_unchanged() -> None:
    result = load_paths([FIXTURES / "spec_000_domain.yaml"])
    assert result.report.ok, [str(i) for i in result.report.skills[0].errors]
    skill = next(iter(result.skills.values()))
    assert skill.tool("process_refund") is not None
    assert skill.policy.approvals[0].approver == "supervisor"
    assert skill.engine_config().finalization_gate.max_retries == 2
    assert skill.output_contract.required_fields == ["order_id", "status", "next_steps"]
    cond = skill.condition(("tools", 0, "policy", "condition"))
    assert cond.evaluate({"amount": 750}) is True


def test_spec_yaml_warns_about_steps_that_name_no_tool() -> None:
    report = load_paths([FIXTURES / "spec_000_domain.yaml"]).report
    codes = [i.code for i in report.skills[0].warnings]
    assert codes.count("step-not-enforced") == 1


def test_refund_example_loads_without_warnings(refund_yaml: Path) -> None:
    skill = load_skill(refund_yaml)
    assert skill.id == "refund-support"
    assert load_paths([refund_yaml]).report.skills[0].status == "ok"
    loc = skill.locate(("tools", 2, "policy", "condition"))
    assert loc.file.endswith("domain.yaml")
    assert "condition" in refund_yaml.read_text().splitlines()[loc.line - 1]


def test_bad_condition_names_file_and_line(tmp_path: Path, refund_yaml: Path) -> None:
    lines = refund_yaml.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if 'when: "amount > 500"' in line)
    lines[index] = lines[index].replace("amount > 500", "amount >> 500")
    path = write(tmp_path, "\n".join(lines) + "\n")
    report = load_paths([path]).report
    assert not report.ok
    errors = report.skills[0].errors
    assert any(e.code == "invalid-condition" and e.location.line == index + 1 for e in errors)
    assert str(path) in str(errors[0])


def test_all_errors_of_a_file_are_reported(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
tools:
  - name: a
    policy:
      allowed: sometimes
  - name: b
    inputs:
      - name: x
        type: text
policy:
  approvals:
    - tool_id: nope
""",
    )
    report = load_paths([path]).report
    errors = report.skills[0].errors
    lines = sorted(e.location.line for e in errors)
    assert len(errors) >= 2
    assert 5 in lines and 9 in lines
    assert all(e.location.file == str(path) for e in errors)


def test_unknown_key_warns_with_did_you_mean(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
tools:
  - name: pay
    idempotant: true
_private: ignored
""",
    )
    report = load_paths([path]).report
    assert report.ok
    warning = next(i for i in report.skills[0].warnings if i.code == "unknown-key")
    assert "idempotant" in warning.message
    assert warning.hint == "did you mean 'idempotent'?"
    assert warning.location.line == 4
    assert not any("_private" in i.message for i in report.skills[0].issues)


def test_strictness_is_the_callers_choice(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\nfoo: 1\ntools: [{name: t}]\n")
    report = load_paths([path]).report
    assert report.ok and report.warning_count == 1


def test_present_not_enforced_blocks_are_reported(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
access_policy:
  rules: [{role: admin}]
grant_mappings: [{a: b}]
policy:
  access:
    requires_roles: [agent]
""",
    )
    infos = [i for i in load_paths([path]).report.skills[0].issues if i.severity is Severity.INFO]
    paths = {i.path for i in infos}
    assert ("access_policy",) in paths and ("grant_mappings",) in paths
    assert ("policy", "access") in paths
    assert all("not enforced" in i.message for i in infos)


def test_aliases_of_real_exports(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
persona: Calm and precise
engine: careful
intents:
  supported: [{id: intent_lookup}]
  out_of_skill:
    action: reject
    message: Not my job
tools:
  - name: lookup
    id: tool_lookup
    inputSchema:
      type: object
      properties: {q: {type: string}}
      required: [q]
policy:
  approvals:
    - tool_id: tool_lookup
      conditions: ["q == 'all'"]
      approver: admin
""",
    )
    skill = load_skill(path)
    assert skill.persona_text() == "Calm and precise"
    assert skill.engine_config().preset == "careful"
    assert skill.intents.resolved_out_of_domain().action == "reject"
    assert skill.tool("tool_lookup") is skill.tool("lookup")
    assert skill.tools[0].input_fields()[0].required


def test_duplicate_keys_are_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "name: a\nname: b\n")
    errors = load_paths([path]).report.skills[0].errors
    assert errors and errors[0].location.line == 2


def test_invalid_yaml_names_line_and_fix(tmp_path: Path) -> None:
    path = write(tmp_path, "intents:\n  supported: []\ntools: [*]\n")
    errors = load_paths([path]).report.skills[0].errors
    assert errors[0].location.line == 3
    assert "'*'" in errors[0].hint or "quote" in (errors[0].hint + errors[0].message).lower()


def test_broken_condition_spelling(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
tools:
  - name: t
    inputs: [{name: amount, type: number}]
    policy:
      requires_approval: conditional
      condition: " > "
""",
    )
    errors = load_paths([path]).report.skills[0].errors
    assert errors[0].code == "invalid-condition" and errors[0].location.line == 7


def test_condition_with_unknown_name(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
tools:
  - name: t
    inputs: [{name: amount, type: number}]
    policy:
      requires_approval: conditional
      condition: "amout > 5"
""",
    )
    error = load_paths([path]).report.skills[0].errors[0]
    assert "amout" in error.message and "amount" in error.hint


def test_dialect_conditions_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
tools:
  - name: write_file
    inputs: [{name: file_path, type: string, required: true}]
    policy:
      conditions:
        - when: "file_path contains '.env' or file_path ends with '.lock'"
          action: deny
        - when: always
          action: require_approval
""",
    )
    skill = load_skill(path)
    cond = skill.condition(("tools", 0, "policy", "conditions", 0, "when"))
    assert cond.evaluate({"file_path": "a/.env"}) is True
    assert cond.evaluate({"file_path": "main.py"}) is False


def test_failure_isolation(tmp_path: Path, refund_yaml: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    write(bad, "tools: [{name: x, policy: {allowed: maybe}}]\n")
    good = tmp_path / "good"
    good.mkdir()
    (good / "domain.yaml").write_text(refund_yaml.read_text())
    result = load_paths([tmp_path])
    assert list(result.skills) == ["refund-support"]
    statuses = {r.source.split("/")[-2]: r.status for r in result.report.skills}
    assert statuses == {"bad": "errors", "good": "ok"}


def test_load_skill_raises_with_every_error(tmp_path: Path) -> None:
    path = write(tmp_path, "tools: [{name: x, policy: {allowed: maybe}}, {}]\n")
    with pytest.raises(SkillError) as info:
        load_skill(path)
    assert len(info.value.issues) == 2


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "just text\n"])
def test_not_a_mapping(tmp_path: Path, text: str) -> None:
    errors = load_paths([write(tmp_path, text)]).report.skills[0].errors
    assert errors[0].code == "not-a-mapping"


def test_json_single_file(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": "j", "tools": [{"name": "t"}]}', "skill.json")
    assert load_skill(path).format == "json"


def test_invalid_entity_and_input_patterns(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
intents:
  supported:
    - id: a
      entities:
        - {name: x, pattern: "([a-z"}
required_inputs:
  - {path: email, pattern: "*bad"}
tools:
  - name: t
    inputSchema: {type: object, properties: [1, 2]}
""",
    )
    errors = load_paths([path]).report.skills[0].errors
    assert {e.code for e in errors} >= {"invalid-pattern", "invalid-schema"}
    assert sorted(e.location.line for e in errors if e.code == "invalid-pattern") == [6, 8]


# ------------------------------------------------- the parts spec 000 section 3.2 requires


@pytest.mark.parametrize(
    ("drop", "path", "state"),
    [
        ("problem", ("problem", "statement"), "missing"),
        ("statement", ("problem", "statement"), "empty"),
        ("intents", ("intents", "supported"), "missing"),
        ("supported", ("intents", "supported"), "empty"),
        ("tools", ("tools",), "missing"),
        ("no tools", ("tools",), "empty"),
    ],
)
def test_a_required_part_missing_or_empty_is_an_error_naming_it(
    tmp_path: Path, drop: str, path: tuple[str, ...], state: str
) -> None:
    parts = {
        "problem": "problem:\n  statement: Refund orders\n",
        "statement": "problem:\n  statement: ''\n",
        "intents": "intents:\n  supported: [{id: intent_refund}]\n",
        "supported": "intents:\n  supported: []\n",
        "tools": "tools:\n  - name: refund\n",
        "no tools": "tools: []\n",
    }
    keep = {
        "problem": ["intents", "tools"],
        "statement": ["statement", "intents", "tools"],
        "intents": ["problem", "tools"],
        "supported": ["problem", "supported", "tools"],
        "tools": ["problem", "intents"],
        "no tools": ["problem", "intents", "no tools"],
    }[drop]
    file = tmp_path / "domain.yaml"
    file.write_text("id: partial\n" + "".join(parts[k] for k in keep))
    result = load_paths([file])
    assert result.skills == {}
    (error,) = result.report.skills[0].errors
    assert error.code == "required-part" and error.path == path
    assert f"required part {state}" in error.message and "spec 000 section 3.2" in error.message
    assert error.location.file == str(file) and error.location.line is not None
    shown = str(error)
    assert ".".join(path) in shown and error.hint


def test_every_required_part_missing_is_named_at_once(tmp_path: Path) -> None:
    file = tmp_path / "domain.yaml"
    file.write_text("id: bare\nname: Bare\n")
    errors = load_paths([file]).report.skills[0].errors
    assert [e.path for e in errors] == [
        ("problem", "statement"),
        ("intents", "supported"),
        ("tools",),
    ]


def test_required_parts_of_the_wrong_type_are_one_error_each(tmp_path: Path) -> None:
    """``problem: "text"`` or ``tools: {}``: the shape error, located, and no crash."""
    file = tmp_path / "domain.yaml"
    file.write_text("problem: Refund orders\nintents: {supported: [{id: a}]}\ntools: {}\n")
    errors = load_paths([file]).report.skills[0].errors
    assert errors and all(e.location.line for e in errors)
    assert {e.path[0] for e in errors} == {"problem", "tools"}


def test_the_spec_example_and_the_fixtures_carry_every_required_part() -> None:
    for path in (FIXTURES / "spec_000_domain.yaml", EXAMPLES / "refund_support" / "domain.yaml"):
        result = load_paths([path])
        assert result.report.ok, [str(e) for e in result.report.skills[0].errors]
