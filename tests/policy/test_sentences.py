"""The guardrail sentence compiler, the planner text cap and its token count."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.policy.helpers import REFUND_TOOLS, gate_from, skill_from

from skillwire.policy import RuleKind, compile_policy
from skillwire.policy.compiler import MAX_TEXT_RULES, CompiledPolicy, estimate_tokens
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


def test_ten_rules_stay_within_about_150_tokens(tmp_path: Path) -> None:
    policy = compile_policy(skill_from(tmp_path, TOOLS, _rules(25)))
    assert policy.planner_tokens <= 150


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
