"""Conditions in the gate: what they read, failing closed, numbers, tool conditions[]."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.policy.helpers import REFUND_TOOLS, codes, gate_from, runs

from skillwire.policy import Gate, ReasonCode, ToolRun

REFUND = {"order_id": "ORD-1", "amount": 120}


def with_policy(policy: str) -> str:
    """The refund tools, with ``policy`` (one YAML line) on process_refund."""
    return REFUND_TOOLS.replace(
        "      - {name: note, type: string}",
        "      - {name: note, type: string}\n    policy: " + policy,
    )


def rule_gate(tmp_path: Path, when: str, action: str = "block", tool: str = "") -> Gate:
    scoped = f", tool: {tool}" if tool else ""
    return gate_from(
        tmp_path,
        REFUND_TOOLS,
        f"""
        policy:
          guardrails:
            never:
              - {{rule: "the rule", when: {json.dumps(when)}, action: {action}{scoped}}}
        """,
    )


@pytest.mark.parametrize(
    ("when", "kwargs", "blocked"),
    [
        ("amount > 100", {}, True),  # an argument by name
        ("args.amount > 100", {}, True),  # ... and through args
        ("entities.tier == 'gold'", {"entities": {"tier": "gold"}}, True),
        ("context.channel == 'web'", {"context": {"channel": "web"}}, True),
        ("context.channel == 'web'", {"context": {"channel": "phone"}}, False),
        ("size(history) >= 2", {"history": runs("verify_identity", "check_eligibility")}, True),
        (
            "history.exists(h, h.tool == 'check_eligibility' && h.result.ok)",
            {"history": runs("check_eligibility")},
            True,
        ),
        ("counts.verify_identity >= 2", {"history": runs("verify_identity")}, False),
        ("counts.verify_identity >= 2", {"history": runs("verify_identity") * 2}, True),
        ("counts.process_refund == 0", {}, True),  # a tool named in counts reads 0
    ],
)
def test_what_conditions_read(
    tmp_path: Path, when: str, kwargs: dict[str, object], blocked: bool
) -> None:
    gate = rule_gate(tmp_path, when, tool="process_refund")
    decision = gate.check("process_refund", REFUND, **kwargs)  # type: ignore[arg-type]
    assert (decision.kind == "block") is blocked, decision


def test_counts_include_failed_runs(tmp_path: Path) -> None:
    gate = rule_gate(tmp_path, "counts.verify_identity >= 1", tool="process_refund")
    failed = [ToolRun("verify_identity", {"order_id": "ORD-1"}, None, ok=False)]
    assert gate.check("process_refund", REFUND, history=failed).kind == "block"


@pytest.mark.parametrize(
    ("when", "amount", "holds"),
    [
        ("amount > 500", 500.5, True),
        ("amount > 500", 500.0, False),
        ("amount >= 500", 500.0, True),
        ("amount == 500", 500.0, True),
        ("amount > 500.5", 501, True),
        ("amount > 500.5", 500, False),
        ("amount < 0.5", 0, True),
        ("amount * 2 > 1000", 500.5, True),
        ("amount * 2 > 1000", 500, False),
        ("amount + 0.5 > 500", 500, True),
    ],
)
def test_mixed_int_and_float(tmp_path: Path, when: str, amount: float, holds: bool) -> None:
    gate = rule_gate(tmp_path, when, tool="process_refund")
    decision = gate.check("process_refund", {"order_id": "ORD-1", "amount": amount})
    assert (decision.kind == "block") is holds


def test_deny_reading_a_missing_optional_argument_blocks(tmp_path: Path) -> None:
    gate = rule_gate(tmp_path, "note.contains('urgent')", tool="process_refund")
    decision = gate.check("process_refund", REFUND)
    assert codes(decision) == [ReasonCode.CONDITION_UNEVALUABLE]
    assert "note" in decision.reasons[0].message
    assert gate.check("process_refund", {**REFUND, "note": "calm"}).kind == "allow"


def test_deny_reading_a_missing_required_argument_asks_for_it(tmp_path: Path) -> None:
    gate = rule_gate(tmp_path, "amount > 5000", tool="process_refund")
    decision = gate.check("process_refund", {"order_id": "ORD-1"})
    assert decision.kind == "need_input"
    assert decision.requested_fields == ("amount",)  # type: ignore[union-attr]
    # with the value given, the rule is checked again
    assert gate.check("process_refund", {"order_id": "ORD-1", "amount": 6000}).kind == "block"


def test_deny_reading_args_with_a_required_argument_missing_asks_for_it(
    tmp_path: Path,
) -> None:
    gate = rule_gate(tmp_path, "args.amount > 5000", tool="process_refund")
    assert gate.check("process_refund", {"order_id": "ORD-1"}).kind == "need_input"


def test_deny_with_a_type_mismatch_blocks(tmp_path: Path) -> None:
    gate = rule_gate(tmp_path, "context.limit < amount", tool="process_refund")
    decision = gate.check("process_refund", REFUND, context={"limit": "100"})
    assert codes(decision) == [ReasonCode.CONDITION_UNEVALUABLE]


def test_approval_with_a_type_mismatch_asks(tmp_path: Path) -> None:
    gate = rule_gate(tmp_path, "context.limit < amount", "require_approval", "process_refund")
    decision = gate.check("process_refund", REFUND, context={"limit": "100"})
    assert decision.kind == "need_approval"
    assert "fail closed" in decision.reasons[0].message
    assert gate.check("process_refund", REFUND, context={"limit": 1000}).kind == "allow"


def test_approval_reading_a_missing_optional_argument_asks(tmp_path: Path) -> None:
    gate = rule_gate(tmp_path, "note == 'vip'", "require_approval", "process_refund")
    assert gate.check("process_refund", REFUND).kind == "need_approval"


def test_nan_never_slips_past_a_threshold(tmp_path: Path) -> None:
    gate = rule_gate(tmp_path, "amount > 500", "require_approval", "process_refund")
    decision = gate.check("process_refund", {"order_id": "ORD-1", "amount": float("nan")})
    assert decision.kind == "block"
    assert ReasonCode.ARGUMENT_INVALID in codes(decision)


def test_tool_conditions_deny_approve_escalate(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        with_policy(
            """
      approver: finance
      conditions:
        - {when: "amount > 10000", action: deny, message: "too large"}
        - {when: "amount > 1000", action: require_approval}
        - {when: "amount > 500", action: require_approval, approver: manager}
        - {when: "note == 'angry'", action: escalate}"""
        ),
        "policy: {escalation: {enabled: true, target: team_lead}}",
    )
    assert codes(gate.check("process_refund", {**REFUND, "amount": 20000})) == [
        ReasonCode.TOOL_DENIED
    ]
    finance = gate.check("process_refund", {**REFUND, "amount": 2000})
    assert (finance.kind, finance.approver) == ("need_approval", "finance")  # type: ignore[union-attr]
    manager = gate.check("process_refund", {**REFUND, "amount": 700})
    assert manager.approver == "manager"  # type: ignore[union-attr]
    angry = gate.check("process_refund", {**REFUND, "note": "angry"})
    assert angry.approver == "team_lead"  # type: ignore[union-attr]
    assert codes(angry) == [ReasonCode.ESCALATION_REQUIRED]


def test_allow_exception_narrows_the_tools_own_conditions(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        with_policy(
            """
      requires_approval: conditional
      condition: "amount > 900"
      conditions:
        - {when: "amount > 100", action: deny}
        - {when: "amount > 50", action: require_approval}
        - {when: "context.tier == 'vip'", action: allow}"""
        ),
    )
    assert gate.check("process_refund", {**REFUND, "amount": 200}).kind == "block"
    vip = {"context": {"tier": "vip"}}
    assert gate.check("process_refund", {**REFUND, "amount": 200}, **vip).kind == "allow"  # type: ignore[arg-type]
    assert gate.check("process_refund", {**REFUND, "amount": 60}, **vip).kind == "allow"  # type: ignore[arg-type]
    # the exception narrows only conditions[]; policy.condition still asks
    big = gate.check("process_refund", {**REFUND, "amount": 1000}, **vip)  # type: ignore[arg-type]
    assert big.kind == "need_approval"
    # an exception that cannot be evaluated does not apply (fail closed)
    assert gate.check("process_refund", {**REFUND, "amount": 200}).kind == "block"


def test_allow_exception_cannot_waive_other_rules(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        with_policy('{conditions: [{when: "true", action: allow}]}'),
        """
        policy:
          guardrails:
            never: ["Never use process_refund"]
          approvals: [{tool_id: process_refund, approver: finance}]
        """,
    )
    assert codes(gate.check("process_refund", REFUND)) == [ReasonCode.TOOL_DENIED]


def test_allowed_conditional_with_allow_conditions_asks_when_none_holds(
    tmp_path: Path,
) -> None:
    gate = gate_from(
        tmp_path,
        with_policy(
            """
      allowed: conditional
      conditions:
        - {when: "amount <= 100", action: allow}"""
        ),
    )
    assert gate.check("process_refund", {**REFUND, "amount": 80}).kind == "allow"
    assert gate.check("process_refund", {**REFUND, "amount": 120}).kind == "need_approval"


def test_allowed_conditional_with_only_deny_conditions_allows_otherwise(
    tmp_path: Path,
) -> None:
    gate = gate_from(
        tmp_path,
        with_policy(
            """
      allowed: conditional
      conditions: [{when: "amount > 100", action: deny}]"""
        ),
    )
    assert gate.check("process_refund", {**REFUND, "amount": 80}).kind == "allow"
    assert gate.check("process_refund", {**REFUND, "amount": 120}).kind == "block"


@pytest.mark.parametrize(
    "policy",
    ["{allowed: conditional}", "{requires_approval: conditional}"],
)
def test_conditional_without_a_condition_fails_closed(tmp_path: Path, policy: str) -> None:
    gate = gate_from(tmp_path, with_policy(policy))
    decision = gate.check("process_refund", REFUND)
    assert decision.kind == "need_approval"
    assert "fail closed" in decision.reasons[0].rule


def test_both_conditional_modes_apply_together(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        with_policy(
            '{allowed: conditional, requires_approval: conditional, condition: "amount > 500"}'
        ),
    )
    assert gate.check("process_refund", REFUND).kind == "need_approval"


def test_a_null_argument_is_an_argument_not_given(tmp_path: Path) -> None:
    gate = rule_gate(tmp_path, "note == 'vip'", "require_approval", "process_refund")
    assert gate.check("process_refund", {**REFUND, "note": None}).kind == "need_approval"
    (tmp_path / "deny").mkdir()
    deny = rule_gate(tmp_path / "deny", "has(args.note)", tool="process_refund")
    assert deny.check("process_refund", {**REFUND, "note": None}).kind == "allow"
    assert deny.check("process_refund", {**REFUND, "note": "x"}).kind == "block"
