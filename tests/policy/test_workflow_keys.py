"""Workflow order and feasibility bound by an argument (``same: order_id``).

A job that verified and checked order A must not refund order B, nor refund A past its
total by checking B, nor refund a negative amount (issue 16, item 4).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.policy.helpers import REFUND_TOOLS, FreshStore, codes, gate_from, line_of, skill_from

from skillwire.core.errors import SkillError
from skillwire.policy import ApprovalGrant, Gate, ReasonCode, ToolRun
from skillwire.policy.explain import explain_skill
from skillwire.skills import load_skill

A, B = "ORD-77777", "ORD-12345"
"""In the example's order book A's total is 60 and B's is 900."""


def _verified(order: str) -> ToolRun:
    return ToolRun("verify_identity", {"order_id": order}, {"verified": True})


def _checked(order: str, amount: float, total: float, *, ok: bool = True) -> ToolRun:
    result = {"eligible": amount <= total, "order_total": total} if ok else None
    return ToolRun("check_eligibility", {"order_id": order, "amount": amount}, result, ok)


@pytest.fixture
def refund_gate(refund_yaml: Path) -> Gate:  # a FreshStore, checked as a Gate
    """The gate of the refund example."""
    return FreshStore(Gate.for_skill(load_skill(refund_yaml)))  # type: ignore[return-value]


def test_refund_of_another_order_than_the_verified_one_is_blocked(refund_gate: Gate) -> None:
    history = [_verified(A), _checked(A, 50, 60)]
    decision = refund_gate.check("process_refund", {"order_id": B, "amount": 50}, history=history)
    assert decision.kind == "block"
    assert codes(decision) == [ReasonCode.WORKFLOW_ORDER]
    message = decision.reasons[0].message
    assert "order_id" in message and B in message
    assert "verify_identity" in message and "check_eligibility" in message


def test_refund_past_the_total_of_its_own_order_via_another_check_is_blocked(
    refund_gate: Gate,
) -> None:
    # B was verified and checked (total 900); A (total 60) was only verified.
    history = [_verified(A), _verified(B), _checked(B, 400, 900)]
    decision = refund_gate.check("process_refund", {"order_id": A, "amount": 400}, history=history)
    assert decision.kind == "block"
    assert ReasonCode.WORKFLOW_ORDER in codes(decision)
    assert "check_eligibility" in decision.reasons[0].message


def test_the_total_is_read_from_the_check_of_the_same_order(refund_gate: Gate) -> None:
    history = [_verified(A), _checked(A, 50, 60), _verified(B), _checked(B, 400, 900)]
    past_a = refund_gate.check("process_refund", {"order_id": A, "amount": 400}, history=history)
    assert codes(past_a) == [ReasonCode.GUARDRAIL_BLOCKED]
    # A's small total says nothing about B: B's own check allows 400.
    within_b = refund_gate.check("process_refund", {"order_id": B, "amount": 400}, history=history)
    assert within_b.kind == "allow", within_b.reasons


def test_a_failed_check_of_the_same_order_neither_counts_nor_blocks(refund_gate: Gate) -> None:
    failed = [_verified(B), _checked(B, 400, 900, ok=False)]
    blocked = refund_gate.check("process_refund", {"order_id": B, "amount": 400}, history=failed)
    assert codes(blocked) == [ReasonCode.WORKFLOW_ORDER]
    retried = [*failed, _checked(B, 400, 900)]
    allowed = refund_gate.check("process_refund", {"order_id": B, "amount": 400}, history=retried)
    assert allowed.kind == "allow", allowed.reasons


@pytest.mark.parametrize("amount", [-50, 0, -0.01, 0.0])
def test_a_refund_of_zero_or_less_is_refused(refund_gate: Gate, amount: float) -> None:
    history = [_verified(B), _checked(B, 50, 900)]
    decision = refund_gate.check(
        "process_refund", {"order_id": B, "amount": amount}, history=history
    )
    assert decision.kind == "block"
    assert codes(decision) == [ReasonCode.ARGUMENT_INVALID]
    assert "amount" in decision.reasons[0].message


def test_the_happy_path_still_asks_then_runs(refund_gate: Gate) -> None:
    history = [_verified(B), _checked(B, 750, 900)]
    args = {"order_id": B, "amount": 750}
    asked = refund_gate.check("process_refund", args, history=history)
    assert (asked.kind, set(codes(asked))) == ("need_approval", {ReasonCode.APPROVAL_REQUIRED})
    grant = ApprovalGrant("process_refund", dict(args), "supervisor")
    assert refund_gate.check("process_refund", args, history=history, approvals=[grant]).allowed
    small = refund_gate.check("process_refund", {"order_id": B, "amount": 0.01}, history=history)
    assert small.kind == "allow", small.reasons


KEYED = """
policy:
  workflows:
    - name: refund
      required: true
      same: order_id
      steps: [verify_identity, check_eligibility, process_refund]
"""


def test_a_required_key_that_is_missing_is_asked_for_not_blocked(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, REFUND_TOOLS, KEYED)
    history = [ToolRun("verify_identity", {"order_id": A}), _checked(A, 5, 60)]
    decision = gate.check("process_refund", {"amount": 5}, history=history)
    assert (decision.kind, decision.requested_fields) == ("need_input", ("order_id",))
    # ... unless no run of an earlier step exists at all: then it cannot follow anything.
    alone = gate.check("process_refund", {"amount": 5}, history=[ToolRun("verify_identity", {})])
    assert codes(alone) == [ReasonCode.WORKFLOW_ORDER]


def test_keys_compare_as_json_values(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        """
        policy:
          workflows:
            - {name: w, required: true, same: [order_id, amount],
               steps: [check_eligibility, process_refund]}
        """,
    )
    history = [ToolRun("check_eligibility", {"order_id": A, "amount": 5.0})]
    assert gate.check("process_refund", {"order_id": A, "amount": 5}, history=history).allowed
    other = gate.check("process_refund", {"order_id": A, "amount": 6}, history=history)
    assert codes(other) == [ReasonCode.WORKFLOW_ORDER]
    assert "amount=6" in other.reasons[0].message


LOOKUP_TOOLS = (
    REFUND_TOOLS
    + """
  - name: lookup_customer
    inputs: [{name: customer_id, type: string, required: true}]
"""
)


def lookup_first(step: str) -> str:
    """A required workflow bound by ``order_id``: ``step`` (one of lookup_customer, which
    takes no order_id), then verify_identity and process_refund."""
    return f"""
policy:
  workflows:
    - name: w
      required: true
      same: order_id
      steps: [{step}, verify_identity, process_refund]
"""


def test_a_step_may_bind_by_its_own_key_and_leave_others_unbound(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, LOOKUP_TOOLS, lookup_first("{tool: lookup_customer, same: []}"))
    history = [ToolRun("lookup_customer", {"customer_id": "C-1"}), _verified(A)]
    assert gate.check("process_refund", {"order_id": A, "amount": 5}, history=history).allowed
    other = gate.check("process_refund", {"order_id": B, "amount": 5}, history=history)
    assert codes(other) == [ReasonCode.WORKFLOW_ORDER]
    assert "lookup_customer" not in other.reasons[0].message
    assert "verify_identity" in other.reasons[0].message
    unlooked = gate.check("process_refund", {"order_id": A, "amount": 5}, history=[_verified(A)])
    assert "lookup_customer" in unlooked.reasons[0].message


def test_a_key_the_steps_tool_does_not_take_is_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(SkillError) as caught:
        skill_from(tmp_path, LOOKUP_TOOLS, lookup_first("lookup_customer"))
    issue = next(i for i in caught.value.issues if "same" in i.message)
    assert "lookup_customer" in issue.message and "order_id" in issue.message
    assert issue.location.line == line_of(tmp_path / "domain.yaml", "same: order_id")


def test_a_misspelt_key_is_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(SkillError) as caught:
        skill_from(tmp_path, REFUND_TOOLS, KEYED.replace("same: order_id", "same: orderid"))
    assert any("orderid" in i.message for i in caught.value.issues)


def test_explain_shows_the_key(refund_yaml: Path) -> None:
    entry = explain_skill(load_skill(refund_yaml))
    order = [r for r in entry["rules"] if r["kind"] == "workflow_order"]
    assert [r["same"] for r in order] == [["order_id"], ["order_id"]]
    assert order[-1]["text"] == (
        "Refund Processing: process_refund runs after verify_identity, check_eligibility"
        " with the same order_id"
    )


def test_the_example_declares_what_the_issue_asks(refund_yaml: Path) -> None:
    skill = load_skill(refund_yaml)
    (workflow,) = skill.policy.workflows
    assert workflow.keys() == ("order_id",)
    refund = skill.tool("process_refund")
    assert refund is not None
    assert refund.input_schema()["properties"]["amount"]["exclusiveMinimum"] == 0


def test_a_package_binds_its_workflow_by_the_same_key(refund_pkg: Path) -> None:
    path = refund_pkg / "skill.json"
    data = json.loads(path.read_text())
    data["policy"]["workflows"][0]["same"] = "order_id"
    path.write_text(json.dumps(data))
    gate = Gate.for_skill(load_skill(refund_pkg))
    history = [_verified(A), _checked(A, 50, 60)]
    decision = gate.check("process_refund", {"order_id": B, "amount": 50}, history=history)
    assert codes(decision) == [ReasonCode.WORKFLOW_ORDER]
