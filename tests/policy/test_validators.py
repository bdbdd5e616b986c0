"""One test per validator and per reason code the gate can give."""

from __future__ import annotations

from pathlib import Path

from tests.policy.helpers import REFUND_TOOLS, codes, gate_from, runs

from skillwire.policy import ApprovalGrant, Block, NeedApproval, ReasonCode, ToolRun
from skillwire.policy.call import GateCall
from skillwire.policy.validators import Findings

ORDER = {"order_id": "ORD-12345"}
REFUND = {"order_id": "ORD-12345", "amount": 120}


def test_the_chain_runs_in_spec_002_order(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, REFUND_TOOLS)
    assert [type(v).__name__ for v in gate.validators] == [
        "Admissibility",
        "Feasibility",
        "Institutional",
        "EffectSafety",
        "ProposalConsistency",
        "ArgumentValidation",
        "RequiredInputs",
        "Approvals",
    ]


def test_each_validator_adds_only_its_own_findings(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, REFUND_TOOLS)
    facts = gate.facts("process_refund")
    assert facts is not None
    call = GateCall("process_refund", {"order_id": 5}, {}, {}, (), {}, ())
    found = {}
    for validator in gate.validators:
        findings = Findings()
        validator.check(call, facts, findings)
        found[type(validator).__name__] = (
            [r.code for r in findings.blocks],
            findings.missing,
        )
    assert found.pop("ArgumentValidation") == ([ReasonCode.ARGUMENT_INVALID], [])
    assert found.pop("RequiredInputs") == ([], ["amount"])
    assert all(v == ([], []) for v in found.values())


def test_allowed(tmp_path: Path) -> None:
    decision = gate_from(tmp_path, REFUND_TOOLS).check("process_refund", REFUND)
    assert decision.kind == "allow" and decision.allowed
    assert codes(decision) == [ReasonCode.ALLOWED]


def test_admissibility_unknown_tool(tmp_path: Path) -> None:
    decision = gate_from(tmp_path, REFUND_TOOLS).check("wipe_disk", {"all": True})
    assert isinstance(decision, Block)
    assert codes(decision) == [ReasonCode.UNKNOWN_TOOL]
    assert "verify_identity" in decision.reasons[0].message


def test_admissibility_never_allowed(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, REFUND_TOOLS + "  - {name: erase, policy: {allowed: never}}\n")
    decision = gate.check("erase", {})
    assert codes(decision) == [ReasonCode.TOOL_NEVER_ALLOWED]
    assert decision.reasons[0].rule == "erase is never allowed (policy.allowed: never)"


def test_admissibility_denied_by_guardrail(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path, REFUND_TOOLS, 'policy: {guardrails: {never: ["Never use process_refund"]}}'
    )
    assert codes(gate.check("process_refund", REFUND)) == [ReasonCode.TOOL_DENIED]


def test_admissibility_tool_not_for_intent(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        """
        intents:
          supported:
            - {id: status, tools: [verify_identity]}
            - {id: refund}
        """,
        REFUND_TOOLS,
    )
    assert codes(gate.check("process_refund", REFUND, intent="status")) == [
        ReasonCode.TOOL_NOT_FOR_INTENT
    ]
    assert gate.check("verify_identity", ORDER, intent="status").kind == "allow"
    assert gate.check("process_refund", REFUND, intent="refund").kind == "allow"
    assert gate.check("process_refund", REFUND).kind == "allow"


def test_admissibility_guardrail_blocked_and_policy_deny(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS.replace(
            "      - {name: note, type: string}",
            """      - {name: note, type: string}
    policy:
      conditions:
        - {when: "amount > 5000", action: deny, message: "Refunds over 5000 are refused"}""",
        ),
        """
        policy:
          guardrails:
            never:
              - {rule: "No refunds to test orders", when: "order_id.startsWith('TEST')"}
        """,
    )
    denied = gate.check("process_refund", {"order_id": "ORD-1", "amount": 6000})
    assert codes(denied) == [ReasonCode.TOOL_DENIED]
    assert denied.reasons[0].rule == "Refunds over 5000 are refused"
    blocked = gate.check("process_refund", {"order_id": "TEST-1", "amount": 1})
    assert codes(blocked) == [ReasonCode.GUARDRAIL_BLOCKED]
    assert blocked.reasons[0].rule == "No refunds to test orders"
    # scoped to every tool with an order_id: all three refund tools
    assert codes(gate.check("check_eligibility", {"order_id": "TEST-1", "amount": 1})) == [
        ReasonCode.GUARDRAIL_BLOCKED
    ]


def test_admissibility_condition_unevaluable(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        """
        policy:
          guardrails:
            never:
              - {rule: "No refunds for blocked customers", tool: process_refund,
                 when: "context.customer.blocked == true"}
        """,
    )
    decision = gate.check("process_refund", REFUND, context={})
    assert codes(decision) == [ReasonCode.CONDITION_UNEVALUABLE]
    assert "fail closed" in decision.reasons[0].message
    ok = gate.check("process_refund", REFUND, context={"customer": {"blocked": False}})
    assert ok.kind == "allow"


def test_feasibility_workflow_order(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        """
        policy:
          workflows:
            - name: refund
              required: true
              steps: [verify_identity, confirm_with_customer, check_eligibility, process_refund]
        """,
    )
    decision = gate.check("process_refund", REFUND, history=runs("verify_identity"))
    assert codes(decision) == [ReasonCode.WORKFLOW_ORDER]
    assert "check_eligibility" in decision.reasons[0].message
    assert "verify_identity" not in decision.reasons[0].message
    failed = [*runs("verify_identity"), ToolRun("check_eligibility", REFUND, None, ok=False)]
    assert gate.check("process_refund", REFUND, history=failed).kind == "block"
    done = runs("verify_identity", "check_eligibility")
    assert gate.check("process_refund", REFUND, history=done).kind == "allow"
    assert gate.check("verify_identity", ORDER).kind == "allow"


def test_feasibility_optional_workflow_is_not_enforced(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        "policy: {workflows: [{name: w, steps: [verify_identity, process_refund]}]}",
    )
    assert gate.check("process_refund", REFUND).kind == "allow"


def test_feasibility_a_tool_repeated_in_a_workflow_does_not_deadlock(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        """
        policy:
          workflows:
            - name: w
              required: true
              steps: [verify_identity, check_eligibility, verify_identity, process_refund]
        """,
    )
    assert gate.check("verify_identity", ORDER).kind == "allow"
    assert codes(gate.check("check_eligibility", REFUND)) == [ReasonCode.WORKFLOW_ORDER]
    done = runs("verify_identity", "check_eligibility")
    assert gate.check("process_refund", REFUND, history=done).kind == "allow"


def test_feasibility_precondition(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS.replace(
            "      - {name: note, type: string}",
            """      - {name: note, type: string}
    preconditions: ["context.verified == true"]""",
        ),
    )
    assert codes(gate.check("process_refund", REFUND, context={"verified": False})) == [
        ReasonCode.PRECONDITION_FAILED
    ]
    unknown = gate.check("process_refund", REFUND, context={})
    assert codes(unknown) == [ReasonCode.PRECONDITION_FAILED]
    assert "fail closed" in unknown.reasons[0].message
    assert gate.check("process_refund", REFUND, context={"verified": True}).kind == "allow"


def _with_policy(policy: str) -> str:
    return REFUND_TOOLS.replace(
        "      - {name: note, type: string}",
        "      - {name: note, type: string}\n    " + policy,
    )


def test_institutional_once_only_per_job(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, _with_policy("policy: {once_only: true}"))
    assert gate.check("process_refund", REFUND).kind == "allow"
    assert codes(gate.check("process_refund", REFUND, history=runs("process_refund"))) == [
        ReasonCode.ONCE_ONLY
    ]
    failed = [ToolRun("process_refund", REFUND, None, ok=False)]
    assert gate.check("process_refund", REFUND, history=failed).kind == "allow"


def test_institutional_once_only_per_key(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, _with_policy("policy: {once_only: {per: order_id}}"))
    done = runs("process_refund", order_id="ORD-12345", amount=1)
    again = gate.check("process_refund", REFUND, history=done)
    assert codes(again) == [ReasonCode.ONCE_ONLY]
    assert "order_id='ORD-12345'" in again.reasons[0].message
    other = {"order_id": "ORD-99999", "amount": 120}
    assert gate.check("process_refund", other, history=done).kind == "allow"


def test_institutional_once_only_per_optional_key_counts_a_missing_key(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, _with_policy("policy: {once_only: {per: note}}"))
    done = runs("process_refund", order_id="ORD-1", amount=1)
    assert codes(gate.check("process_refund", REFUND, history=done)) == [ReasonCode.ONCE_ONLY]
    noted = {**REFUND, "note": "n"}
    assert gate.check("process_refund", noted, history=done).kind == "allow"


def test_institutional_permanent_counts_failed_runs_too(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, _with_policy("permanent: true"))
    failed = [ToolRun("process_refund", REFUND, None, ok=False)]
    decision = gate.check("process_refund", REFUND, history=failed)
    assert codes(decision) == [ReasonCode.PERMANENT_EFFECT]
    assert gate.check("process_refund", REFUND).kind == "allow"


def test_institutional_max_calls(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, _with_policy("policy: {max_calls: 2}"))
    one = runs("process_refund")
    two = [*one, ToolRun("process_refund", REFUND, None, ok=False)]
    assert gate.check("process_refund", REFUND, history=one).kind == "allow"
    decision = gate.check("process_refund", REFUND, history=two)
    assert codes(decision) == [ReasonCode.MAX_CALLS]
    assert "limit 2" in decision.reasons[0].message


def test_effect_safety_declared_effects(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        _with_policy("effects: [refund_issued, account_closed]"),
        "allowed_state_changes: [refund_issued]",
    )
    decision = gate.check("process_refund", REFUND)
    assert codes(decision) == [ReasonCode.EFFECT_NOT_ALLOWED]
    assert "account_closed" in decision.reasons[0].message


def test_effect_safety_stated_effects_of_the_proposal(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path, _with_policy("effects: [refund_issued]"), "allowed_state_changes: [refund_issued]"
    )
    assert gate.check("process_refund", REFUND, effects=["refund_issued"]).kind == "allow"
    decision = gate.check("process_refund", REFUND, effects=["has_insurance"])
    assert codes(decision) == [ReasonCode.EFFECT_NOT_ALLOWED]


def test_effects_without_allowed_state_changes_are_not_limited(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, _with_policy("effects: [anything]"))
    assert gate.check("process_refund", REFUND, effects=["else"]).kind == "allow"


def test_consistency_stated_tool(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, REFUND_TOOLS)
    decision = gate.check("process_refund", REFUND, stated_tool="verify_identity")
    assert codes(decision) == [ReasonCode.INCONSISTENT_PROPOSAL]
    assert gate.check("process_refund", REFUND, stated_tool="process_refund").kind == "allow"


def test_consistency_stated_args(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, REFUND_TOOLS)
    wrong = gate.check("process_refund", REFUND, stated_args={"amount": 1200})
    assert codes(wrong) == [ReasonCode.INCONSISTENT_PROPOSAL]
    assert "amount=1200" in wrong.reasons[0].message
    typed = gate.check("process_refund", REFUND, stated_args={"amount": "120"})
    assert codes(typed) == [ReasonCode.INCONSISTENT_PROPOSAL]
    absent = gate.check("process_refund", REFUND, stated_args={"note": "x"})
    assert codes(absent) == [ReasonCode.INCONSISTENT_PROPOSAL]
    same = gate.check("process_refund", REFUND, stated_args={"amount": 120.0})
    assert same.kind == "allow"


def test_argument_validation(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, REFUND_TOOLS)
    decision = gate.check("process_refund", {"order_id": "ORD-1", "amount": "750"})
    assert codes(decision) == [ReasonCode.ARGUMENT_INVALID]
    assert decision.reasons[0].message == "amount: expected number, got str '750'"


def test_required_inputs_missing(tmp_path: Path) -> None:
    decision = gate_from(tmp_path, REFUND_TOOLS).check("process_refund", {})
    assert decision.kind == "need_input"
    assert codes(decision) == [ReasonCode.MISSING_REQUIRED_INPUT]


def test_approval_required(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, _with_policy("policy: {requires_approval: always}"))
    decision = gate.check("process_refund", REFUND)
    assert decision.kind == "need_approval"
    assert codes(decision) == [ReasonCode.APPROVAL_REQUIRED]


def test_escalation_required(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        _with_policy('policy: {conditions: [{when: "amount > 1000", action: escalate}]}'),
        "policy: {escalation: {enabled: true, target: team_lead}}",
    )
    decision = gate.check("process_refund", {"order_id": "A", "amount": 2000})
    assert isinstance(decision, NeedApproval)
    assert decision.approver == "team_lead"
    assert codes(decision) == [ReasonCode.ESCALATION_REQUIRED]


def test_policy_escalation_conditions_scope_to_tools_reading_the_field(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        """
        policy:
          escalation:
            enabled: true
            target: team_lead
            conditions: ["amount > 1000"]
        """,
    )
    assert gate.check("process_refund", {"order_id": "A", "amount": 2000}).kind == ("need_approval")
    assert gate.check("verify_identity", {"order_id": "ORD-12345"}).kind == "allow"


def test_gate_error_fails_closed(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, _with_policy("policy: {once_only: {per: order_id}}"))

    class Broken:
        def check(self, call: GateCall, facts: object, found: Findings) -> None:
            raise RuntimeError("boom")

    gate.validators = (*gate.validators[:3], Broken(), *gate.validators[3:])
    decision = gate.check("process_refund", REFUND, history=runs("verify_identity"))
    assert codes(decision) == [ReasonCode.GATE_ERROR]
    assert "RuntimeError: boom" in decision.reasons[0].message


def test_findings_start_empty_and_share_nothing() -> None:
    first, second = Findings(), Findings()
    first.block(ReasonCode.GATE_ERROR, "x")
    first.need(["amount"], first.blocks[0], "How much?")
    first.grants.append(ApprovalGrant("t", {}, "r"))
    first.approvals.append((None, first.blocks[0]))  # type: ignore[arg-type]
    assert second == Findings() and first != second
    assert (second.blocks, second.missing, second.prompts, second.input_reasons) == ([], [], {}, [])
    assert (second.approvals, second.grants, second.waived) == ([], [], False)
