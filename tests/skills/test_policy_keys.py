"""Typos fail closed (issue 16 item 6): an unknown key inside a policy block is an error
with file, line and a "did you mean"; a workflow step that nearly names a tool is an
error. Keys FORMATS.md names as real extras and aliases still load, and unknown keys
elsewhere stay warnings."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import EXAMPLES, FIXTURES, PackageEdit
from tests.policy.helpers import with_required

from skillwire.core import Severity, SkillIssue
from skillwire.skills import load_paths
from skillwire.skills.report import SkillReport

TOOLS = """
tools:
  - name: verify_identity
    inputs: [{name: order_id, type: string, required: true}]
  - name: process_refund
    inputs:
      - {name: order_id, type: string, required: true}
      - {name: amount, type: number, required: true}
"""


def report_of(tmp_path: Path, *parts: str, name: str = "domain.yaml") -> SkillReport:
    """The load report of the YAML ``parts`` written to ``tmp_path/name``."""
    path = tmp_path / name
    text = "\n".join(textwrap.dedent(p).strip("\n") for p in parts) + "\n"
    path.write_text(with_required(text))
    return load_paths([path]).report.skills[0]


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of ``path`` holding ``needle``."""
    lines = path.read_text().splitlines()
    return next(n for n, line in enumerate(lines, start=1) if needle in line)


def v1_manifest(**fields: Any) -> Callable[[Any], None]:
    """An edit of ``skill.json`` for ``edit_package``: ``fields`` set, and the schema
    ``skillwire-skill/v1`` (the one whose manifest may carry the single-file fields)."""

    def edit(data: Any) -> None:
        data.update(schemaVersion="skillwire-skill/v1", **fields)

    return edit


def only(issues: list[SkillIssue], code: str) -> SkillIssue:
    found = [i for i in issues if i.code == code]
    assert len(found) == 1, [str(i) for i in issues]
    return found[0]


def test_a_misspelled_approval_key_is_an_error_not_a_tool_without_approval(
    tmp_path: Path,
) -> None:
    rep = report_of(
        tmp_path,
        """
        tools:
          - name: pay
            inputs: [{name: amount, type: number}]
            policy:
              requires_aproval: conditional
              condition: "amount > 500"
        """,
    )
    assert not rep.loaded
    error = only(rep.errors, "unknown-key")
    assert error.severity is Severity.ERROR
    assert error.path == ("tools", 0, "policy", "requires_aproval")
    assert (error.location.line, error.location.column) == (5, 7)
    assert error.hint == "did you mean 'requires_approval'?"
    assert "weaken" in error.message


# Each case: the YAML parts, the needle on the line of the unknown key, its path, the hint.
POLICY_TYPOS: list[tuple[tuple[str, ...], str, tuple[Any, ...], str]] = [
    (
        (
            """
            tools:
              - name: pay
                inputs: [{name: amount, type: number}]
                policy:
                  conditions:
                    - {when: "amount > 5", acton: deny}
            """,
        ),
        "acton",
        ("tools", 0, "policy", "conditions", 0, "acton"),
        "did you mean 'action'?",
    ),
    (
        (
            """
            tools:
              - name: pay
                inputs: [{name: order_id, type: string}]
                policy:
                  once_only: {by: order_id}
            """,
        ),
        "by:",
        ("tools", 0, "policy", "once_only", "by"),
        "known keys: per",
    ),
    (
        (TOOLS, "policy:\n  aprovals: []"),
        "aprovals",
        ("policy", "aprovals"),
        "did you mean 'approvals'?",
    ),
    (
        (TOOLS, "policy:\n  guardrails:\n    nevr: [Never use process_refund]"),
        "nevr",
        ("policy", "guardrails", "nevr"),
        "did you mean 'never'?",
    ),
    (
        (
            TOOLS,
            """
            policy:
              guardrails:
                never:
                  - {rule: "No big refunds", tool: process_refund, when: "amount > 9", acion: block}
            """,
        ),
        "acion",
        ("policy", "guardrails", "never", 0, "acion"),
        "did you mean 'action'?",
    ),
    (
        (
            TOOLS,
            """
            policy:
              workflows:
                - name: refund
                  steps: [verify_identity, process_refund]
                  requird: true
            """,
        ),
        "requird",
        ("policy", "workflows", 0, "requird"),
        "did you mean 'required'?",
    ),
    (
        (
            TOOLS,
            "policy:\n  workflows:\n    - {name: r, steps: [{id: check, tol: verify_identity}]}",
        ),
        "tol:",
        ("policy", "workflows", 0, "steps", 0, "tol"),
        "did you mean 'tool'?",
    ),
    (
        (TOOLS, 'policy:\n  approvals:\n    - tool_id: process_refund\n      wen: "amount > 500"'),
        "wen:",
        ("policy", "approvals", 0, "wen"),
        "did you mean 'when'?",
    ),
    (
        (
            TOOLS,
            """
            policy:
              approvals:
                - tool_id: process_refund
                  conditions: [{when: "amount > 500", mesage: big}]
            """,
        ),
        "mesage",
        ("policy", "approvals", 0, "conditions", 0, "mesage"),
        "did you mean 'message'?",
    ),
    (
        (
            TOOLS,
            'policy:\n  escalation: {enabled: true, target: lead, conditons: ["amount > 5"]}',
        ),
        "conditons",
        ("policy", "escalation", "conditons"),
        "did you mean 'conditions'?",
    ),
    (
        (TOOLS, "required_inputs:\n  - {path: email, input_tpye: text}"),
        "input_tpye",
        ("required_inputs", 0, "input_tpye"),
        "did you mean 'input_type'?",
    ),
    (
        (TOOLS, "output_contract:\n  required_field: [order_id]"),
        "required_field",
        ("output_contract", "required_field"),
        "did you mean 'required_fields'?",
    ),
]


@pytest.mark.parametrize(("parts", "needle", "path", "hint"), POLICY_TYPOS)
def test_unknown_keys_in_policy_blocks_are_errors(
    tmp_path: Path, parts: tuple[str, ...], needle: str, path: tuple[Any, ...], hint: str
) -> None:
    rep = report_of(tmp_path, *parts)
    assert not rep.loaded
    error = only(rep.errors, "unknown-key")
    assert error.path == path
    assert error.location.line == line_of(tmp_path / "domain.yaml", needle)
    assert error.location.column >= 1
    assert error.hint.startswith(hint)


def test_keys_starting_with_an_underscore_stay_silent_in_policy_blocks(tmp_path: Path) -> None:
    rep = report_of(
        tmp_path,
        TOOLS,
        """
        policy:
          _note: reviewed by legal
          approvals:
            - {tool_id: process_refund, _comment: keep}
        """,
    )
    assert rep.status == "ok", [str(i) for i in rep.issues]


def test_unknown_keys_elsewhere_stay_warnings(tmp_path: Path) -> None:
    rep = report_of(
        tmp_path,
        """
        colour: blue
        tools:
          - name: pay
            tags: [x]
        """,
    )
    assert rep.loaded and rep.status == "warnings"
    assert {i.path for i in rep.warnings} == {("colour",), ("tools", 0, "tags")}


def test_extras_formats_md_names_still_load(tmp_path: Path) -> None:
    rep = report_of(
        tmp_path,
        """
        tools:
          - name: lookup
            id: tool_lookup
            inputSchema: {type: object, properties: {q: {type: string}}}
            policy:
              allowed: conditional
              conditions:
                - {when: "q == 'all'", action: require_approval, message: "every record"}
                - {when: "q == 'me'", action: allow}
              rate_limit: {per_minute: 5}
            security: {classification: pii, risk: high}
            mock: {q: x}
            mock_status: ready
        policy:
          escalation: {enabled: true, conditions: ["q == 'urgent'"], target: lead}
          access: {requires_roles: [agent]}
          workflows:
            - id: wf_lookup
              description: Look things up
              trigger: on_request
              on_deviation: warn
              steps: [tool_lookup, confirm_with_customer]
          approvals:
            - {id: ap1, tool_id: tool_lookup, conditions: ["q == 'everything'"]}
        output_contract:
          required_fields: [answer]
          format_hint: a short paragraph
        required_inputs:
          - {path: identity.email_or_phone, prompt: "Your email?", input_type: text}
        """,
    )
    assert rep.loaded, [str(i) for i in rep.errors]
    assert not [i for i in rep.warnings if i.code == "unknown-key"]


def test_the_examples_and_fixtures_still_load() -> None:
    result = load_paths([EXAMPLES, FIXTURES / "spec_000_domain.yaml"])
    assert result.report.ok, [str(i) for r in result.report.skills for i in r.errors]
    assert sorted(result.skills) == [
        "booking",
        "household",
        "inbox-assistant",
        "refund-support",
        "refund-support-pkg",
        "spec-000-domain",
        "tools-demo",
    ]


def test_a_typo_in_a_package_tool_policy_is_an_error_in_tools_json(
    refund_pkg: Path, edit_package: PackageEdit
) -> None:
    edit_package("tools.json", lambda d: d["tools"][2]["policy"].update(requires_aproval=True))
    rep = load_paths([refund_pkg]).report.skills[0]
    error = only(rep.errors, "unknown-key")
    assert error.location.file.endswith("tools.json")
    assert error.location.line == line_of(refund_pkg / "tools.json", "requires_aproval")
    assert error.hint == "did you mean 'requires_approval'?"


def test_a_typo_in_a_package_manifest_policy_is_an_error(
    refund_pkg: Path, edit_package: PackageEdit
) -> None:
    edit_package("skill.json", v1_manifest(output_contract={"required_feilds": ["order_id"]}))
    rep = load_paths([refund_pkg]).report.skills[0]
    error = only(rep.errors, "unknown-key")
    assert error.location.file.endswith("skill.json")
    assert error.hint == "did you mean 'required_fields'?"


# ---------------------------------------------------------------- workflow steps


def required_refund(*steps: str) -> str:
    """A required workflow ``refund`` of ``steps``, one a line."""
    lines = "".join(f"\n        - {step}" for step in steps)
    return f"""
policy:
  workflows:
    - name: refund
      required: true
      steps:{lines}
"""


def test_a_step_that_nearly_names_a_tool_is_an_error(tmp_path: Path) -> None:
    rep = report_of(tmp_path, TOOLS, required_refund("verify_identiy", "process_refund"))
    assert not rep.loaded
    error = only(rep.errors, "step-near-tool")
    assert error.path == ("policy", "workflows", 0, "steps", 0)
    assert error.location.line == line_of(tmp_path / "domain.yaml", "verify_identiy")
    assert "verify_identity" in error.hint


@pytest.mark.parametrize(
    "step",
    [
        "Verify_Identity",  # another case
        "verify-identity",  # another separator
        "verify identity",
        "proces_refund",
        "{id: check, tool: verify_identiy}",  # an object naming an unknown tool
        "{id: process_refund}",  # a tool's exact name, but no tool: key
    ],
)
def test_near_misses_of_every_shape_are_errors(tmp_path: Path, step: str) -> None:
    rep = report_of(
        tmp_path,
        TOOLS,
        f"""
        policy:
          workflows:
            - name: refund
              steps: [{step}]
        """,
    )
    assert not rep.loaded
    assert [i.code for i in rep.errors] in (["step-near-tool"], ["unknown-tool"])


def test_a_step_far_from_every_tool_is_said_not_to_be_enforced(tmp_path: Path) -> None:
    steps = ("confirm_with_customer", "sys.askUser", "verify_identity", "process_refund")
    rep = report_of(tmp_path, TOOLS, required_refund(*steps))
    assert rep.loaded
    warning = only(rep.warnings, "step-not-enforced")
    assert "'confirm_with_customer', 'sys.askUser'" in warning.message
    assert "not enforced" in warning.message


def test_a_package_step_near_a_local_tool_name_is_an_error(
    refund_pkg: Path, edit_package: PackageEdit
) -> None:
    steps = ["verify_identiy", "process_refund"]
    edit_package("skill.json", v1_manifest(policy={"workflows": [{"name": "r", "steps": steps}]}))
    rep = load_paths([refund_pkg]).report.skills[0]
    error = only(rep.errors, "step-near-tool")
    assert error.location.file.endswith("skill.json")
    assert "verify_identity" in error.hint
