"""``policy.escalation.conditions[]`` written as sentences: semantic triggers judged by
the model (with a warning), while anything that tries to be a condition and fails stays
an error with its line and a suggested spelling (FORMATS.md section 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.policy.helpers import REFUND_TOOLS, line_of, skill_from

from skillwire.core import Severity, SkillError
from skillwire.engine.prompts import gate_request, planner_system
from skillwire.policy import Gate, RuleKind, compile_policy
from skillwire.skills import load_paths, semantic_escalations
from skillwire.skills.prose import reads_as_prose

ESCALATION = """
policy:
  escalation:
    enabled: true
    target: supervisor
    conditions:
      - Critical safety alert detected
      - "Customer's account is locked"
      - "amount > 5000"
      - {when: "Customer mentions a lawyer or legal action"}
"""


@pytest.mark.parametrize(
    "text",
    [
        "Critical safety alert detected",
        "Customer's account is locked",
        "Customer mentions a lawyer or legal action",
        "Is the customer angry?",
        "Payment over $500 was disputed",
        "Der Kunde ist wütend",
        "amount exceeds 500",
    ],
)
def test_sentences_read_as_prose(text: str) -> None:
    assert reads_as_prose(text)


@pytest.mark.parametrize(
    "text",
    [
        "amount >",
        "x == ",
        " > ",
        "!urgent",
        "customer => angry",
        "a & b",
        "a | b",
        "status = open now",
        "is_vip",
        "file_path contains",
        "args.amount large",
        "urgent",
        "",
    ],
)
def test_attempted_conditions_do_not_read_as_prose(text: str) -> None:
    assert not reads_as_prose(text)


def test_sentences_load_with_a_warning_each_and_conditions_stay_enforced(
    tmp_path: Path,
) -> None:
    skill = skill_from(tmp_path, REFUND_TOOLS, ESCALATION)
    report = load_paths([tmp_path / "domain.yaml"]).report.skills[0]
    warned = [i for i in report.warnings if i.code == "semantic-escalation"]
    assert [w.path for w in warned] == [
        ("policy", "escalation", "conditions", 0),
        ("policy", "escalation", "conditions", 1),
        ("policy", "escalation", "conditions", 3, "when"),
    ]
    assert all("judged by the model and not enforced" in w.message for w in warned)
    assert warned[0].location.line == line_of(tmp_path / "domain.yaml", "Critical safety")
    policy = compile_policy(skill)
    (rule,) = [r for r in policy.rules if r.kind is RuleKind.ESCALATION]
    assert rule.condition is not None and rule.condition.expression == "amount > 5000"
    texts = [t for t in policy.text_rules if t.polarity == "escalate"]
    assert len(texts) == 3 and all(t.text.startswith("Escalate to supervisor when:") for t in texts)
    assert "Critical safety alert detected" in policy.planner_text
    assert semantic_escalations(skill) == [
        "Critical safety alert detected",
        "Customer's account is locked",
        "Customer mentions a lawyer or legal action",
    ]


def test_a_sentence_enforces_nothing_on_tools_and_a_condition_still_asks(
    tmp_path: Path,
) -> None:
    """A sentence is not an escalation of every call (it has no condition), and the
    enforced condition beside it still holds its calls."""
    gate = Gate.for_skill(skill_from(tmp_path, REFUND_TOOLS, ESCALATION))
    small = gate.check("check_eligibility", {"order_id": "ORD-12345", "amount": 10})
    assert small.kind == "allow", small
    big = gate.check("check_eligibility", {"order_id": "ORD-12345", "amount": 9000})
    assert big.kind == "need_approval"


def test_the_finalization_gate_and_the_planner_are_given_the_sentences(tmp_path: Path) -> None:
    skill = skill_from(tmp_path, REFUND_TOOLS, ESCALATION)
    prompt = gate_request(skill, "draft").messages[0].content
    section = prompt.split("ESCALATE WHEN", 1)[1].split("\n\n", 1)[0]
    assert "suggested_action ESCALATE" in section
    for sentence in ("Critical safety alert detected", "Customer mentions a lawyer"):
        assert sentence in section
    assert "amount > 5000" not in section  # enforced by the gate, not judged
    assert "Customer's account is locked" in planner_system(skill, compile_policy(skill))


def test_no_section_without_sentences_or_with_escalation_disabled(tmp_path: Path) -> None:
    plain = skill_from(tmp_path, REFUND_TOOLS)
    assert "ESCALATE WHEN" not in gate_request(plain, "d").messages[0].content
    off = tmp_path / "off"
    off.mkdir()
    disabled = skill_from(off, REFUND_TOOLS, ESCALATION.replace("enabled: true", "enabled: false"))
    assert semantic_escalations(disabled) == []
    assert "ESCALATE WHEN" not in gate_request(disabled, "d").messages[0].content


@pytest.mark.parametrize(
    ("condition", "hint"),
    [
        ('"amount >"', "sentence"),
        ('"x == "', "sentence"),
        ('" > "', "sentence"),
        ("is_vip", "sentence"),
        ('"customer => angry"', ">="),
        ('"!urgent"', "sentence"),
    ],
)
def test_an_attempted_condition_stays_an_error_with_line_and_spelling(
    tmp_path: Path, condition: str, hint: str
) -> None:
    text = f"""
    policy:
      escalation:
        enabled: true
        target: supervisor
        conditions:
          - {condition}
    """
    with pytest.raises(SkillError) as caught:
        skill_from(tmp_path, REFUND_TOOLS, text)
    (error,) = caught.value.issues
    assert error.severity is Severity.ERROR and error.code == "invalid-condition"
    assert error.location.line == line_of(tmp_path / "domain.yaml", condition.strip('"'))
    assert hint in error.hint


@pytest.mark.parametrize(
    "where",
    [
        "policy:\n  approvals:\n    - {tool_id: process_refund, when: Amount is very large}\n",
        "tools:\n  - name: t\n    policy:\n      conditions:\n"
        "        - {when: Customer is angry, action: deny}\n",
        "policy:\n  guardrails:\n    never:\n"
        "      - {rule: no angry refunds, tool: process_refund, when: Customer is angry}\n",
    ],
)
def test_a_sentence_anywhere_else_is_still_an_error(tmp_path: Path, where: str) -> None:
    """Only escalation conditions may be sentences: a sentence where a rule must hold
    (an approval, a deny, a guardrail) would weaken it, so it stays a load error."""
    parts = (where,) if where.startswith("tools") else (REFUND_TOOLS, where)
    with pytest.raises(SkillError) as caught:
        skill_from(tmp_path, *parts)
    assert [e.code for e in caught.value.issues] == ["invalid-condition"]
