"""An approver role every caller holds is a load error (issue 16 item 5): with
``approver: user`` a job's owner could approve their own call. Each place that names an
approving role is checked, with file and line; ``self_approval`` is read where approval
rules are written."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from skillwire.core.errors import SkillError
from skillwire.policy import BasePolicy, Gate, compile_policy
from skillwire.skills import load_paths, load_skill
from skillwire.skills.base_policy import BaseApproval, load_base_policy
from skillwire.skills.semantics import EVERY_CALLER_ROLES

HEAD = """
id: pay
name: Pay
problem: {statement: "Pay people"}
role: {name: Clerk}
intents:
  supported:
    - {id: intent_pay, description: Pay, examples: ["pay bob"]}
"""

TOOL = """
tools:
  - name: pay
    inputs: [{name: amount, type: number, required: true}]
"""

PLACES: dict[str, tuple[str, str]] = {
    "approvals": ("", "policy:\n  approvals:\n    - {tool_id: pay, approver: user}\n"),
    "default_approver": (
        "",
        "policy:\n  default_approver: user\n  approvals:\n    - {tool_id: pay}\n",
    ),
    "tool_policy": ("    policy: {requires_approval: always, approver: user}\n", ""),
    "tool_condition": (
        "    policy:\n      conditions:\n"
        "        - {when: 'amount > 5', action: require_approval, approver: user}\n",
        "",
    ),
    "structured_rule": (
        "",
        "policy:\n  guardrails:\n    never:\n"
        "      - {rule: 'Big pays', tool: pay, action: require_approval, approver: user}\n",
    ),
    "escalation": (
        "    policy:\n      conditions:\n        - {when: 'amount > 5', action: escalate}\n",
        "policy:\n  escalation: {enabled: true, target: user}\n",
    ),
}
"""Each place a skill names an approving role: (lines of the tool's policy, the rest)."""


def write(tmp_path: Path, tool_lines: str, rest: str) -> Path:
    """A skill with the ``pay`` tool, ``tool_lines`` under it, then ``rest``."""
    path = tmp_path / "domain.yaml"
    path.write_text(textwrap.dedent(HEAD).strip() + "\n" + TOOL.strip() + "\n" + tool_lines + rest)
    return path


@pytest.mark.parametrize("place", sorted(PLACES))
def test_approver_user_is_a_load_error_with_file_and_line(tmp_path: Path, place: str) -> None:
    path = write(tmp_path, *PLACES[place])
    report = load_paths([path]).report.skills[0]
    found = [i for i in report.issues if i.code == "approver-every-caller"]
    assert len(found) == 1, [str(i) for i in report.issues]
    issue = found[0]
    assert issue.severity.name == "ERROR"
    assert "user" in issue.message and "owner" in issue.message
    assert issue.location.file.endswith("domain.yaml")
    lines = path.read_text().splitlines()
    assert "user" in lines[issue.location.line - 1], (issue.location, lines)
    with pytest.raises(SkillError):
        load_skill(path)


def test_an_approver_role_of_its_own_loads(tmp_path: Path) -> None:
    rest = PLACES["approvals"][1].replace("approver: user", "approver: users")
    assert load_skill(write(tmp_path, "", rest)).policy.approvals[0].approver == "users"


def test_self_approval_is_read_where_approvals_are_written(tmp_path: Path) -> None:
    tool_lines = (
        "    policy:\n      requires_approval: always\n      self_approval: allowed\n"
        "      conditions:\n"
        "        - {when: 'amount > 5', action: require_approval, self_approval: refused}\n"
    )
    rest = "policy:\n  approvals:\n    - {tool_id: pay, self_approval: allowed}\n"
    skill = load_skill(write(tmp_path, tool_lines, rest))
    assert skill.tools[0].policy.self_approval == "allowed"
    assert skill.tools[0].policy.conditions[0].self_approval == "refused"
    assert skill.policy.approvals[0].self_approval == "allowed"
    bad = rest.replace("self_approval: allowed}", "self_approval: yes}")
    with pytest.raises(SkillError):
        load_skill(write(tmp_path, tool_lines, bad))


def test_a_base_policy_approver_user_is_a_load_error(tmp_path: Path) -> None:
    path = tmp_path / "base.yaml"
    path.write_text(
        "schemaVersion: skillwire-base-policy/v1\napprovals:\n  - tool: pay\n    approver: user\n"
    )
    with pytest.raises(SkillError) as caught:
        load_base_policy(path)
    issue = caught.value.issues[0]
    assert issue.code == "approver-every-caller" and issue.location.line == 4


def test_a_sentence_asking_user_approval_is_an_error_and_no_gate_is_built(
    tmp_path: Path,
) -> None:
    rest = "policy:\n  guardrails:\n    never:\n      - 'Never pay over 5 without user approval'\n"
    path = write(tmp_path, "", rest)
    skill = load_skill(path)  # sentences are read when rules compile
    findings = compile_policy(skill).findings
    found = [f for f in findings if f.code == "approver-every-caller"]
    assert len(found) == 1 and found[0].severity.name == "ERROR"
    line = found[0].location.line
    assert "user approval" in path.read_text().splitlines()[line - 1]
    with pytest.raises(SkillError, match="every caller holds"):
        Gate.for_skill(skill)


def test_a_base_policy_built_in_code_cannot_ask_user(tmp_path: Path) -> None:
    skill = load_skill(write(tmp_path, "", ""))
    base = BasePolicy(approvals=[BaseApproval(tool="pay", approver="user")])
    with pytest.raises(SkillError, match="every caller holds"):
        Gate.for_skill(skill, base=base)
    assert Gate.for_skill(skill, base=BasePolicy(approvals=[BaseApproval(tool="pay")]))


def test_the_servers_user_role_is_one_every_caller_holds() -> None:
    from skillwire.server.auth import USER

    assert USER in EVERY_CALLER_ROLES
