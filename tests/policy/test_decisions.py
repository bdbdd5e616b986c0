"""Decisions: one per proposal, precedence, every blocking reason, approvals bound to
exact arguments and roles, and what each decision carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.policy.helpers import APPROVALS, BIG, REFUND_TOOLS, codes, gate_from, line_of, runs

from skillwire.policy import (
    Allow,
    ApprovalGrant,
    Block,
    Gate,
    GateInputError,
    NeedApproval,
    NeedInput,
    Reason,
    ReasonCode,
)
from skillwire.policy.call import args_key, same_args


def approval_gate(tmp_path: Path) -> Gate:
    return gate_from(tmp_path, REFUND_TOOLS, APPROVALS)


def test_every_decision_kind(tmp_path: Path) -> None:
    gate = approval_gate(tmp_path)
    assert isinstance(gate.check("process_refund", {"order_id": "ORD-1", "amount": 5}), Allow)
    assert isinstance(gate.check("process_refund", {"order_id": "ORD-1"}), NeedInput)
    assert isinstance(gate.check("process_refund", BIG), NeedApproval)
    assert isinstance(gate.check("process_refund", {**BIG, "amount": "750"}), Block)
    kinds = {
        type(gate.check("process_refund", a)).__name__: gate.check("process_refund", a).kind
        for a in ({"order_id": "ORD-1", "amount": 5}, {}, BIG, {"amount": "x"})
    }
    assert kinds == {
        "Allow": "allow",
        "NeedInput": "need_input",
        "NeedApproval": "need_approval",
        "Block": "block",
    }


def test_only_allow_is_allowed(tmp_path: Path) -> None:
    gate = approval_gate(tmp_path)
    for args in ({"order_id": "ORD-1", "amount": 5}, {}, BIG, {"amount": "x"}):
        decision = gate.check("process_refund", args)
        assert decision.allowed is (decision.kind == "allow")


def test_block_beats_need_input_beats_need_approval(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        """
        policy:
          approvals: [{tool_id: process_refund, approver: supervisor}]
          workflows: [{name: w, required: true, steps: [verify_identity, process_refund]}]
        """,
    )
    # out of order AND missing amount AND approval-gated: Block
    assert gate.check("process_refund", {"order_id": "ORD-1"}).kind == "block"
    done = runs("verify_identity")
    # missing amount AND approval-gated: NeedInput (approval judged on complete args)
    need = gate.check("process_refund", {"order_id": "ORD-1"}, history=done)
    assert need.kind == "need_input"
    assert codes(need) == [ReasonCode.MISSING_REQUIRED_INPUT]
    # complete: NeedApproval
    assert gate.check("process_refund", BIG, history=done).kind == "need_approval"


def test_every_blocking_reason_is_reported(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS.replace(
            "      - {name: note, type: string}",
            "      - {name: note, type: string}\n    policy: {max_calls: 1}",
        ),
        """
        intents:
          supported: [{id: status, tools: [verify_identity]}]
        policy:
          guardrails:
            never: ["Never use process_refund"]
          workflows: [{name: w, required: true, steps: [verify_identity, process_refund]}]
        """,
    )
    decision = gate.check(
        "process_refund",
        {"order_id": 7, "amount": 5, "bogus": 1},
        history=[*runs("process_refund")],
        intent="status",
        stated_tool="verify_identity",
    )
    assert isinstance(decision, Block)
    assert codes(decision) == [
        ReasonCode.TOOL_DENIED,
        ReasonCode.TOOL_NOT_FOR_INTENT,
        ReasonCode.WORKFLOW_ORDER,
        ReasonCode.MAX_CALLS,
        ReasonCode.INCONSISTENT_PROPOSAL,
        ReasonCode.ARGUMENT_INVALID,
        ReasonCode.ARGUMENT_INVALID,
    ]


def test_a_reason_carries_code_rule_text_and_source_line(tmp_path: Path) -> None:
    gate = approval_gate(tmp_path)
    decision = gate.check("process_refund", BIG)
    reason = decision.reasons[0]
    assert reason.code is ReasonCode.APPROVAL_REQUIRED
    assert reason.rule == "process_refund needs supervisor approval when amount > 500"
    assert reason.source is not None
    assert reason.source.file.endswith("domain.yaml")
    assert reason.source.line == line_of(tmp_path / "domain.yaml", '"amount > 500"')
    data = reason.to_dict()
    assert data["code"] == "APPROVAL_REQUIRED"
    assert data["source"].endswith(f"domain.yaml:{reason.source.line}:{reason.source.column}")
    json.dumps(data)


def test_reason_without_a_source() -> None:
    assert Reason(ReasonCode.UNKNOWN_TOOL, "no").to_dict() == {
        "code": "UNKNOWN_TOOL",
        "message": "no",
        "rule": "",
        "source": "",
    }


def test_need_approval_carries_approver_args_and_reason(tmp_path: Path) -> None:
    decision = approval_gate(tmp_path).check("process_refund", BIG)
    assert isinstance(decision, NeedApproval)
    assert decision.tool == "process_refund"
    assert decision.args == BIG
    assert decision.approver == "supervisor"  # the first role; finance is asked next
    assert decision.reason_text == "process_refund needs supervisor approval when amount > 500"


def test_approval_binds_the_exact_arguments(tmp_path: Path) -> None:
    gate = approval_gate(tmp_path)
    both = [
        ApprovalGrant("process_refund", dict(BIG), "supervisor"),
        ApprovalGrant("process_refund", dict(BIG), "finance"),
    ]
    assert gate.check("process_refund", BIG, approvals=both).kind == "allow"
    other = {**BIG, "amount": 760}
    assert gate.check("process_refund", other, approvals=both).kind == "need_approval"
    noted = {**BIG, "note": "changed"}
    assert gate.check("process_refund", noted, approvals=both).kind == "need_approval"


def test_approval_by_the_wrong_role_does_not_satisfy(tmp_path: Path) -> None:
    gate = approval_gate(tmp_path)
    wrong = [ApprovalGrant("process_refund", dict(BIG), "intern")]
    assert gate.check("process_refund", BIG, approvals=wrong).approver == "supervisor"  # type: ignore[union-attr]


def test_approvals_are_asked_role_by_role(tmp_path: Path) -> None:
    gate = approval_gate(tmp_path)
    first = [ApprovalGrant("process_refund", dict(BIG), "supervisor")]
    decision = gate.check("process_refund", BIG, approvals=first)
    assert isinstance(decision, NeedApproval)
    assert decision.approver == "finance"


def test_approval_for_another_tool_does_not_satisfy(tmp_path: Path) -> None:
    gate = approval_gate(tmp_path)
    grants = [ApprovalGrant("check_eligibility", dict(BIG), r) for r in ("supervisor", "finance")]
    assert gate.check("process_refund", BIG, approvals=grants).kind == "need_approval"


def test_an_approved_number_is_the_same_number_as_int_or_float(tmp_path: Path) -> None:
    gate = approval_gate(tmp_path)
    grants = [ApprovalGrant("process_refund", dict(BIG), r) for r in ("supervisor", "finance")]
    assert gate.check("process_refund", {**BIG, "amount": 750.0}, approvals=grants).allowed
    assert args_key("t", {"a": 750}) == args_key("t", {"a": 750.0})
    assert args_key("t", {"a": 750}) != args_key("t", {"a": "750"})
    assert args_key("t", {"a": True}) != args_key("t", {"a": 1})
    assert args_key("t", {"a": 1, "b": 2}) == args_key("t", {"b": 2, "a": 1})


def test_approval_is_judged_on_complete_arguments_only(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        "policy: {approvals: [{tool_id: process_refund, when: 'note == \"x\"'}]}",
    )
    decision = gate.check("process_refund", {"order_id": "ORD-1"})
    assert decision.kind == "need_input"  # not an approval of an incomplete call


def test_decisions_name_the_tool_by_its_full_name(refund_pkg: Path) -> None:
    from skillwire.skills import load_skill

    gate = Gate.for_skill(load_skill(refund_pkg))
    decision = gate.check("check_order_status", {"order_id": "ORD-12345"})
    assert decision.tool == "refund-support-pkg.check_order_status"
    assert decision.kind == "allow"


def test_the_gate_never_raises_for_a_bad_proposal(tmp_path: Path) -> None:
    gate = approval_gate(tmp_path)
    not_a_map = gate.check("process_refund", ["order_id", "ORD-1"])  # type: ignore[arg-type]
    assert codes(not_a_map) == [ReasonCode.ARGUMENT_INVALID]
    for key in (1, None):
        bad_key = gate.check("process_refund", {key: "x"})  # type: ignore[dict-item]
        assert codes(bad_key) == [ReasonCode.ARGUMENT_INVALID]
    with pytest.raises(GateInputError):  # the caller's own state: its bug, raised
        gate.check("process_refund", BIG, history=[{"tool": "x"}])  # type: ignore[list-item]
    not_json = gate.check("process_refund", {"order_id": {"a", "b"}, "amount": 1})
    assert codes(not_json) == [ReasonCode.ARGUMENT_INVALID]
    assert gate.check(None, {}).kind == "block"  # type: ignore[arg-type]


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 2.5]),
    st.text(max_size=2),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=1), inner, max_size=2)
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(
    a=st.dictionaries(st.sampled_from("abc"), _JSON, max_size=3),
    b=st.dictionaries(st.sampled_from("abc"), _JSON, max_size=3),
)
def test_same_args_agrees_with_args_key(a: dict[str, object], b: dict[str, object]) -> None:
    assert same_args(a, b) == (args_key("t", a) == args_key("t", b))
    assert same_args(a, a)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ({"order_id": "O1", "amount": 750}, {"amount": 750.0, "order_id": "O1"}, True),
        ({"order_id": "O1", "amount": None}, {"order_id": "O1"}, True),
        ({"order_id": "O1"}, {"order_id": "O1", "amount": None}, True),
        ({"amount": None}, {"amount": None}, True),
        ({"amount": 0}, {"amount": None}, False),
        ({"amount": True}, {"amount": 1}, False),
        ({"order_id": "O1", "amount": 750}, {"order_id": "O2", "amount": 750}, False),
        ({"order_id": "O1"}, {"order_id": "O1", "amount": 1}, False),
    ],
)
def test_same_args_leaves_out_nulls_and_nothing_else(
    a: dict[str, object], b: dict[str, object], same: bool
) -> None:
    assert same_args(a, b) is same
    assert same_args(b, a) is same
