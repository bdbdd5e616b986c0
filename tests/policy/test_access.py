"""The base policy, the restrictive merge, the tool-access plan, shell access, packages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import PackageEdit
from tests.policy.helpers import REFUND_TOOLS, codes, gate_from, line_of, runs

from skillwire.core import SkillError
from skillwire.policy import BasePolicy, Gate, ReasonCode, ToolRun, apply_plan, load_base_policy
from skillwire.policy.access import AccessState, merge_access
from skillwire.skills import Skill, load_skill
from skillwire.skills.model_package import ToolAccessPlan

REFUND = {"order_id": "ORD-12345", "amount": 120}


def write_base(tmp_path: Path, data: dict[str, Any]) -> BasePolicy:
    path = tmp_path / "base.json"
    path.write_text(json.dumps({"schemaVersion": "skillwire-base-policy/v1", **data}, indent=2))
    return load_base_policy(path)


def shell_package(tmp_path: Path, guardrails: dict[str, Any] | None = None) -> Skill:
    """A package with a shell tool ``git-helper.git`` (program ``git``)."""
    folder = tmp_path / "git-helper"
    folder.mkdir()
    files: dict[str, Any] = {
        "skill.json": {"schemaVersion": "ayati-skill/v1", "id": "git-helper", "version": "1"},
        "tools.json": {
            "schemaVersion": "ayati-tools/v1",
            "skillId": "git-helper",
            "tools": [
                {
                    "name": "git-helper.git",
                    "inputSchema": {
                        "type": "object",
                        "required": ["action"],
                        "properties": {
                            "action": {"type": "string"},
                            "args": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                    "executor": {
                        "type": "shell_command",
                        "command": "git",
                        "argsTemplate": ["{{action}}", "{{...args}}"],
                        "allowedActions": ["status", "log"],
                    },
                }
            ],
        },
        "guardrails.json": {
            "schemaVersion": "ayati-guardrails/v1",
            "skillId": "git-helper",
            "shell": {"allowedPrefixes": ["git"], "denyOperators": [";"]},
            **(guardrails or {}),
        },
    }
    for name, data in files.items():
        (folder / name).write_text(json.dumps(data))
    (folder / "skill.md").write_text("# git helper\n")
    return load_skill(folder)


def test_shell_tool_needs_the_operators_consent(tmp_path: Path) -> None:
    skill = shell_package(tmp_path)
    default = Gate.for_skill(skill).check("git", {"action": "status"})
    assert codes(default) == [ReasonCode.SHELL_NOT_ALLOWED]
    assert "allowed shell prefixes (none)" in default.reasons[0].message
    assert Gate.for_skill(skill).access.dropped == ("guardrails.shell.allowedPrefixes: git",)


def test_shell_tool_under_a_base_that_allows_it(tmp_path: Path) -> None:
    skill = shell_package(tmp_path)
    base = write_base(tmp_path, {"shell": {"allowedPrefixes": ["git", "ls"]}})
    gate = Gate.for_skill(skill, base=base)
    assert gate.access.shell_allowed == ("git",)  # intersected with the skill's own list
    assert gate.check("git", {"action": "status"}).kind == "allow"
    assert codes(gate.check("git", {"action": "push"})) == [ReasonCode.SHELL_NOT_ALLOWED]
    assert codes(gate.check("git", {"action": "log", "args": ["a;rm"]})) == [
        ReasonCode.SHELL_NOT_ALLOWED
    ]


def test_base_deny_lists_are_unioned(tmp_path: Path) -> None:
    skill = shell_package(tmp_path)
    base = write_base(
        tmp_path,
        {
            "shell": {
                "allowedPrefixes": ["git"],
                "denyPrefixes": ["git"],
                "denyPatterns": ["--force"],
            }
        },
    )
    gate = Gate.for_skill(skill, base=base)
    assert codes(gate.check("git", {"action": "log", "args": ["--force"]})) == [
        ReasonCode.SHELL_NOT_ALLOWED,
        ReasonCode.SHELL_NOT_ALLOWED,
    ]
    assert gate.access.shell_deny_operators == (";",)


def test_a_plan_cannot_widen_the_base_and_reports_what_it_dropped(tmp_path: Path) -> None:
    plan = {
        "toolAccessPlan": {
            "idempotent": True,
            "operations": [
                {
                    "op": "append_unique_guardrail_list",
                    "path": "guardrails.shell.allowedPrefixes",
                    "values": ["git", "curl"],
                },
                {
                    "op": "append_unique_guardrail_list",
                    "path": "guardrails.filesystem.allowedWriteRoots",
                    "values": ["/etc"],
                },
                {
                    "op": "append_unique_guardrail_list",
                    "path": "guardrails.shell.denyOperators",
                    "values": ["&&"],
                },
            ],
        },
        "filesystem": {"allowedReadRoots": ["/home", "/srv"]},
    }
    skill = shell_package(tmp_path, plan)
    base = write_base(
        tmp_path,
        {"shell": {"allowedPrefixes": ["git"]}, "filesystem": {"allowedReadRoots": ["/srv"]}},
    )
    access = merge_access(skill, base)
    assert access.shell_allowed == ("git",)
    assert access.shell_deny_operators == (";", "&&")
    assert access.read_roots == ("/srv",)
    assert access.write_roots == ()
    assert set(access.dropped) == {
        "guardrails.shell.allowedPrefixes: curl",
        "guardrails.filesystem.allowedWriteRoots: /etc",
        "guardrails.filesystem.allowedReadRoots: /home",
    }


def test_apply_plan_is_idempotent() -> None:
    plan = ToolAccessPlan.model_validate(
        {
            "operations": [
                {"op": "upsert_tool", "toolName": "s.a", "config": {"enabled": True}},
                {"op": "add_global_allowlist_tool", "toolName": "s.a"},
                {
                    "op": "append_unique_guardrail_list",
                    "path": "guardrails.shell.denyPrefixes",
                    "values": ["rm", "rm"],
                },
                {
                    "op": "append_unique_guardrail_list",
                    "path": "guardrails.shell.allowedPrefixes",
                    "values": ["ls"],
                },
            ]
        }
    )
    once, dropped = apply_plan(AccessState(), plan, BasePolicy())
    twice, _ = apply_plan(once, plan, BasePolicy())
    assert once == twice
    assert once.lists == {
        "guardrails.shell.denyPrefixes": ["rm"],
        "guardrails.shell.allowedPrefixes": [],
    }
    assert once.global_allowlist == ["s.a"]
    assert dropped == ["guardrails.shell.allowedPrefixes: ls"]


def test_base_deny_approvals_and_limits_always_apply(tmp_path: Path) -> None:
    base = write_base(
        tmp_path,
        {
            "deny_tools": ["check_eligibility"],
            "approvals": [{"tool": "process_refund", "when": "amount > 100", "approver": "cfo"}],
            "max_calls": {"verify_identity": 1},
        },
    )
    gate = gate_from(tmp_path, REFUND_TOOLS, base=base)
    assert codes(gate.check("check_eligibility", REFUND)) == [ReasonCode.TOOL_DENIED]
    approval = gate.check("process_refund", REFUND)
    assert approval.kind == "need_approval"
    assert approval.approver == "cfo"  # type: ignore[union-attr]
    assert gate.check("process_refund", {**REFUND, "amount": 50}).kind == "allow"
    ran = runs("verify_identity", order_id="ORD-12345")
    assert codes(gate.check("verify_identity", {"order_id": "ORD-12345"}, history=ran)) == [
        ReasonCode.MAX_CALLS
    ]
    rule = next(r for r in gate.policy.rules if r.origin == "base.approvals[0]")
    assert rule.source.file.endswith("base.json")
    assert rule.source.line == line_of(tmp_path / "base.json", '"approvals"') + 1


def test_a_skill_cannot_loosen_the_base(tmp_path: Path) -> None:
    base = write_base(
        tmp_path,
        {
            "deny_tools": ["check_eligibility"],
            "approvals": [{"tool": "process_refund"}],
            "max_calls": {"process_refund": 1},
        },
    )
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS.replace(
            "      - {name: note, type: string}",
            """      - {name: note, type: string}
    policy:
      allowed: always
      requires_approval: never
      max_calls: 5
      conditions: [{when: "true", action: allow}]""",
        ),
        base=base,
    )
    assert gate.check("check_eligibility", REFUND).kind == "block"
    assert gate.check("process_refund", REFUND).kind == "need_approval"
    assert codes(gate.check("process_refund", REFUND, history=runs("process_refund"))) == [
        ReasonCode.MAX_CALLS
    ]


def test_base_names_a_package_tool_by_its_local_name(refund_pkg: Path, tmp_path: Path) -> None:
    base = write_base(
        tmp_path, {"deny_tools": ["check_order_status"], "max_calls": {"verify_identity": 0}}
    )
    gate = Gate.for_skill(load_skill(refund_pkg), base=base)
    assert codes(gate.check("check_order_status", {"order_id": "ORD-12345"})) == [
        ReasonCode.TOOL_DENIED
    ]
    assert codes(gate.check("verify_identity", {"order_id": "ORD-12345"})) == [ReasonCode.MAX_CALLS]


def test_package_limits_and_history_under_local_names(refund_pkg: Path) -> None:
    gate = Gate.for_skill(load_skill(refund_pkg))
    args = {"order_id": "ORD-12345", "amount": 120}
    history = [
        ToolRun("verify_identity", {"order_id": "ORD-12345"}, {"verified": True}),
        ToolRun("check_eligibility", args, {"eligible": True}),
    ]
    assert gate.check("process_refund", args, history=history).kind == "allow"
    again = [*history, ToolRun("refund-support-pkg.process_refund", {**args, "order_id": "ORD-1"})]
    # maxCallsPerRun: 1 from guardrails.json toolPolicies
    assert codes(gate.check("process_refund", args, history=again)) == [ReasonCode.MAX_CALLS]


def test_tool_policies_keyed_by_local_name(edit_package: PackageEdit, refund_pkg: Path) -> None:
    def local_key(data: dict[str, Any]) -> None:
        data["toolPolicies"] = {"process_refund": {"maxCallsPerRun": 0}}

    edit_package("guardrails.json", local_key)
    gate = Gate.for_skill(load_skill(refund_pkg))
    rule = next(r for r in gate.policy.rules if r.code is ReasonCode.MAX_CALLS)
    assert rule.limit == 0
    assert rule.tools == ("refund-support-pkg.process_refund",)


def test_a_plan_that_disables_a_tool_denies_it(edit_package: PackageEdit, refund_pkg: Path) -> None:
    def disable(data: dict[str, Any]) -> None:
        data["toolAccessPlan"]["operations"][0]["config"] = {"enabled": False}

    edit_package("guardrails.json", disable)
    gate = Gate.for_skill(load_skill(refund_pkg))
    decision = gate.check("process_refund", REFUND)
    assert ReasonCode.TOOL_DENIED in codes(decision)


def test_base_policy_file_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "base.yaml"
    path.write_text("schemaVersion: skillwire-base-policy/v1\ndeny_tool: [rm]\n")
    with pytest.raises(SkillError) as err:
        load_base_policy(path)
    assert "deny_tool" in str(err.value) and ":2:" in str(err.value)
    path.write_text("schemaVersion: skillwire-base-policy/v2\n")
    with pytest.raises(SkillError):
        load_base_policy(path)
    path.write_text("schemaVersion: skillwire-base-policy/v1\nmax_calls: {a: -1}\n")
    with pytest.raises(SkillError):
        load_base_policy(path)


def test_base_approval_with_a_bad_condition(tmp_path: Path) -> None:
    base = write_base(tmp_path, {"approvals": [{"tool": "process_refund", "when": "amout > 1"}]})
    with pytest.raises(SkillError, match="amout"):
        gate_from(tmp_path, REFUND_TOOLS, base=base)


def test_the_default_base_policy() -> None:
    base = BasePolicy()
    assert base.deny_tools == [] and base.shell.allowedPrefixes == []
    assert str(base.locate(("deny_tools",))) == "base policy"


def test_a_plan_that_removes_a_core_protection_is_rejected_at_load(
    edit_package: PackageEdit, refund_pkg: Path
) -> None:
    def reach_out(data: dict[str, Any]) -> None:
        data["toolAccessPlan"]["operations"].append(
            {"op": "upsert_tool", "toolName": "core.shell", "config": {"enabled": True}}
        )

    edit_package("guardrails.json", reach_out)
    with pytest.raises(SkillError, match="namespace"):
        load_skill(refund_pkg)
