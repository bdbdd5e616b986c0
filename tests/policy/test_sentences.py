"""The guardrail sentence compiler, the planner text cap and its token count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.policy.helpers import REFUND_TOOLS, gate_from, line_of, skill_from, with_required
from typer.testing import CliRunner

from skillwire.cli_app import app
from skillwire.core import Severity
from skillwire.policy import RuleKind, compile_policy
from skillwire.policy.rules import (
    MAX_TEXT_RULES,
    PLANNER_TOKEN_BUDGET,
    CompiledPolicy,
    estimate_tokens,
)
from skillwire.policy.sentences import read_sentence, tokenize
from skillwire.skills import Skill, load_skill

TOOLS = (
    REFUND_TOOLS
    + """
  - name: deleteFile
    inputs: [{name: path, type: string, required: true}]
  - name: send_email
    inputs:
      - {name: to, type: string, required: true}
      - {name: cc_count, type: integer}
"""
)


@pytest.fixture
def skill(tmp_path: Path) -> Skill:
    return skill_from(tmp_path, TOOLS)


def meaning(skill: Skill, text: str, polarity: str = "never") -> tuple[object, ...] | None:
    found = read_sentence(text, skill, polarity=polarity)  # type: ignore[arg-type]
    if found is None:
        return None
    return (found.kind, found.tools, found.expression, found.approver)


def test_tokenize_reads_money_and_operators() -> None:
    assert tokenize("Refunds over $1,500.50 need >= 2 approvals") == [
        "Refunds",
        "over",
        "1500.50",
        "need",
        ">=",
        "2",
        "approvals",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Never use deleteFile", ("tool_deny", ("deleteFile",), None, None)),
        ("Do not call send_email", ("tool_deny", ("send_email",), None, None)),
        ("Never use the deleteFile tool", ("tool_deny", ("deleteFile",), None, None)),
        ("You must not invoke deleteFile", ("tool_deny", ("deleteFile",), None, None)),
        (
            "amount > 500 needs approval",
            ("approval", ("check_eligibility", "process_refund"), "amount > 500", None),
        ),
        ("process_refund requires approval", ("approval", ("process_refund",), None, None)),
        (
            "Never process refunds over $500 without supervisor approval",
            ("approval", ("process_refund",), "amount > 500", "supervisor"),
        ),
        (
            "process_refund must be approved by a manager",
            ("approval", ("process_refund",), None, "manager"),
        ),
        (
            "send_email with cc_count over 3 requires the lead's sign-off",
            ("approval", ("send_email",), "cc_count > 3", "lead"),
        ),
        (
            "Never call check_eligibility with amount above 2000",
            ("threshold", ("check_eligibility",), "amount > 2000", None),
        ),
    ],
)
def test_sentences_that_compile(skill: Skill, text: str, expected: tuple[object, ...]) -> None:
    found = meaning(skill, text)
    assert found is not None
    kind, tools, expression, approver = expected
    assert found[0] == kind
    assert sorted(found[1]) == sorted(tools)  # type: ignore[call-overload]
    assert found[2:] == (expression, approver)


@pytest.mark.parametrize(
    "text",
    [
        "Never share payment info",
        "Never be dismissive to frustrated customers",
        "Always verify identity first",
        "Never send emails to more than 5 people",  # the number is not the tool's number
        "Never exceed 3 retries",  # no tool, no field
        "Always get approval before making changes",  # approval of nothing in particular
        "Refunds need approval from the finance team",  # no tool named
    ],
)
def test_sentences_that_stay_text(skill: Skill, text: str) -> None:
    assert meaning(skill, text) is None


def test_an_always_threshold_blocks_when_it_fails(skill: Skill) -> None:
    found = read_sentence(
        "Always keep check_eligibility amount under 10000", skill, polarity="always"
    )
    assert found is not None
    assert (found.kind, found.expression) == ("threshold", "!(amount < 10000)")


def test_approval_wording_never_blocks(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        TOOLS,
        """
        policy:
          guardrails:
            never: ["Never process refunds over $500 without supervisor approval"]
        """,
    )
    decision = gate.check("process_refund", {"order_id": "A", "amount": 750})
    assert decision.kind == "need_approval"
    assert gate.check("process_refund", {"order_id": "A", "amount": 500}).kind == "allow"


def test_sentence_threshold_is_scoped_to_its_tool(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        TOOLS,
        """
        policy:
          guardrails:
            never: ["Never call check_eligibility with amount above 2000"]
        """,
    )
    assert gate.check("check_eligibility", {"order_id": "A", "amount": 2500}).kind == "block"
    assert gate.check("process_refund", {"order_id": "A", "amount": 2500}).kind == "allow"


def _rules(n: int) -> str:
    lines = "\n".join(f"      - Never forget courtesy rule number {i}" for i in range(n))
    return f"policy:\n  guardrails:\n    never:\n{lines}\n"


def test_planner_text_is_capped_at_ten_rules(tmp_path: Path) -> None:
    policy = compile_policy(skill_from(tmp_path, TOOLS, _rules(12)))
    assert len(policy.text_rules) == 12
    assert sum(r.to_planner for r in policy.text_rules) == MAX_TEXT_RULES == 10
    assert policy.planner_text.count("\n- ") == 10
    assert "rule number 9" in policy.planner_text
    assert "rule number 10" not in policy.planner_text


def test_structured_rules_kept_as_text_count_against_the_cap(tmp_path: Path) -> None:
    structured = "\n".join(
        f'      - {{rule: "Be kind, structured {i}", action: block}}' for i in range(3)
    )
    text = _rules(9) + structured + "\n"
    policy = compile_policy(skill_from(tmp_path, TOOLS, text))
    assert len(policy.text_rules) == 12
    assert sum(r.to_planner for r in policy.text_rules) == 10


def test_refund_example_planner_text_fits_the_token_budget(refund_yaml: Path) -> None:
    policy = compile_policy(load_skill(refund_yaml))
    assert policy.planner_text.splitlines() == [
        "SKILL GUARDRAILS:",
        "- Never share customer payment information",
        "- Never be dismissive to frustrated customers",
        "- Always verify customer identity before account access",
        "- Always confirm before making changes",
    ]
    assert policy.planner_tokens == estimate_tokens(policy.planner_text)
    assert 30 <= policy.planner_tokens <= 150


def test_the_planner_text_stays_within_the_token_budget(tmp_path: Path) -> None:
    policy = compile_policy(skill_from(tmp_path, TOOLS, _rules(25)))
    assert policy.planner_tokens <= PLANNER_TOKEN_BUDGET == 100


def test_token_estimate() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a b c d e") == 5  # at least one token a word
    assert estimate_tokens("x" * 400) == 100  # about four characters a token
    assert CompiledPolicy("s").planner_text == ""


def test_a_sentence_rule_carries_its_source_line(tmp_path: Path) -> None:
    skill = skill_from(
        tmp_path,
        TOOLS,
        """
        policy:
          guardrails:
            never:
              - "Never use deleteFile"
        """,
    )
    rule = next(r for r in compile_policy(skill).rules if r.kind is RuleKind.TOOL_DENY)
    lines = (tmp_path / "domain.yaml").read_text().splitlines()
    assert "Never use deleteFile" in lines[rule.source.line - 1]
    assert rule.origin == "policy.guardrails.never[0]"


# ------------------------------------------- sentences understood only in part (item 7)

QUALIFIED_TOOLS = (
    TOOLS
    + """
  - name: reset_password
    inputs:
      - {name: employee_id, type: string, required: true}
      - {name: employee_status, type: string}
"""
)


def guardrail_rules(policy: CompiledPolicy, text: str) -> list[tuple[object, ...]]:
    """(kind, tools, condition, approver) of the rules compiled from the sentence ``text``."""
    return [
        (r.kind, r.tools, r.condition, r.approver)
        for r in policy.rules
        if r.text == text and r.origin.startswith("policy.guardrails")
    ]


def test_a_qualifier_never_turns_into_a_total_deny(tmp_path: Path) -> None:
    sentence = "Never call reset_password for inactive employees"
    skill = skill_from(
        tmp_path, QUALIFIED_TOOLS, f'policy:\n  guardrails:\n    never: ["{sentence}"]\n'
    )
    policy = compile_policy(skill)
    assert guardrail_rules(policy, sentence) == [
        (RuleKind.APPROVAL, ("reset_password",), None, "supervisor")
    ]
    assert not [r for r in policy.rules if r.kind is RuleKind.TOOL_DENY]
    gate = gate_from(
        tmp_path, QUALIFIED_TOOLS, f'policy:\n  guardrails:\n    never: ["{sentence}"]\n'
    )
    decision = gate.check("reset_password", {"employee_id": "E1", "employee_status": "active"})
    assert decision.kind == "need_approval"
    assert sentence in [r.message for r in decision.reasons]
    (finding,) = policy.findings
    assert finding.severity is Severity.WARNING and finding.code == "sentence-partly-understood"
    assert (finding.location.line, finding.path) == (
        line_of(tmp_path / "domain.yaml", sentence),
        ("policy", "guardrails", "never", 0),
    )
    assert "'for inactive employees'" in finding.message
    for part in (
        f'rule: "{sentence}"',
        "tool: reset_password",
        'when: "<for inactive employees: a condition over employee_id, employee_status>"',
        "action: block",
    ):
        assert part in finding.hint


@pytest.mark.parametrize(
    ("sentence", "tools", "approver"),
    [
        ("Never use deleteFile unless the user asks twice", ("deleteFile",), "supervisor"),
        ("Never call send_email when the customer opted out", ("send_email",), "supervisor"),
        ("Do not call send_email if it is a weekend", ("send_email",), "supervisor"),
        (
            "Never process refunds over $500 for VIP customers",
            ("process_refund",),
            "supervisor",
        ),
        (
            "Never call check_eligibility with amount above 2000 for new customers",
            ("check_eligibility",),
            "supervisor",
        ),
        (
            "process_refund needs manager approval unless the customer is a VIP",
            ("process_refund",),
            "manager",
        ),
        ("Never use deleteFile or send_email", ("deleteFile", "send_email"), "supervisor"),
        (
            "amount > 500 needs approval except on weekends",
            ("check_eligibility", "process_refund"),
            "supervisor",
        ),
    ],
)
def test_a_sentence_understood_in_part_asks_for_approval_always(
    tmp_path: Path, sentence: str, tools: tuple[str, ...], approver: str
) -> None:
    skill = skill_from(tmp_path, TOOLS, f'policy:\n  guardrails:\n    never: ["{sentence}"]\n')
    policy = compile_policy(skill)
    assert [
        (kind, tuple(sorted(found)), cond, who)
        for kind, found, cond, who in guardrail_rules(policy, sentence)  # type: ignore[misc]
    ] == [(RuleKind.APPROVAL, tools, None, approver)]
    assert [f.code for f in policy.findings] == ["sentence-partly-understood"]
    assert all(f"tool: {tool}" in policy.findings[0].hint for tool in tools)


def test_sentences_understood_in_full_leave_no_finding(tmp_path: Path) -> None:
    sentences = [
        "Never use deleteFile",
        "Do not call send_email",
        "Never use the deleteFile tool",
        "You must not invoke deleteFile",
        "amount > 500 needs approval",
        "process_refund requires approval",
        "Never process refunds over $500 without supervisor approval",
        "process_refund must be approved by a manager",
        "send_email with cc_count over 3 requires the lead's sign-off",
        "Never call check_eligibility with amount above 2000",
        "Never process refunds over 900 dollars",
        "Never share payment info",  # text for the planner: nothing to understand mechanically
    ]
    never = "\n".join(f'    - "{s}"' for s in sentences)
    policy = compile_policy(
        skill_from(tmp_path, TOOLS, f"policy:\n  guardrails:\n    never:\n{never}\n")
    )
    assert policy.findings == []
    kinds = [k for s in sentences for k, *_ in guardrail_rules(policy, s)]
    assert RuleKind.TOOL_DENY in kinds and RuleKind.THRESHOLD in kinds


def test_the_check_command_shows_the_condition_to_write(tmp_path: Path) -> None:
    sentence = "Never call reset_password for inactive employees"
    path = tmp_path / "domain.yaml"
    path.write_text(
        with_required(QUALIFIED_TOOLS + f'policy:\n  guardrails:\n    never: ["{sentence}"]\n')
    )
    result = CliRunner().invoke(app, ["check", "--json", str(path)])
    assert result.exit_code == 0, result.output
    issues = [i for f in json.loads(result.stdout)["skills"][0]["files"] for i in f["issues"]]
    assert [i["code"] for i in issues] == ["sentence-partly-understood"]
    assert issues[0]["line"] == line_of(path, sentence)
    assert "tool: reset_password" in issues[0]["hint"]
    assert CliRunner().invoke(app, ["check", "--strict", str(path)]).exit_code == 1
    explained = CliRunner().invoke(app, ["check", "--explain", "--json", str(path)])
    rules = json.loads(explained.stdout)["explain"][0]["rules"]
    (rule,) = [r for r in rules if r["text"] == sentence]
    assert rule["kind"] == "approval"
    assert "not fully understood" in rule["note"]
    shown = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["check", "--explain", str(path)])
    assert "not fully understood" in shown.stdout and "tool: reset_password" in shown.stdout
