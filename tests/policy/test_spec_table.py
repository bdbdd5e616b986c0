"""Spec 000 section 6.1: compileGuardrails, the pre-tool gate, workflow -> sub-goals.

Run against the spec's own YAML (``tests/fixtures/spec_000_domain.yaml``) and the
refund example, with DESIGN.md's corrections: approval wording compiles to an approval,
rules are scoped to tools, nothing fails open.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES
from tests.policy.helpers import REFUND_TOOLS, FreshStore, codes, gate_from, skill_from

from skillwire.policy import (
    Block,
    Gate,
    NeedApproval,
    ReasonCode,
    RuleKind,
    ToolRun,
    compile_policy,
    workflows_to_subgoals,
)
from skillwire.skills import load_skill

SPEC = FIXTURES / "spec_000_domain.yaml"


def test_spec_guardrails_compile_only_what_is_mechanical() -> None:
    policy = compile_policy(load_skill(SPEC))
    compiled = {r.text: r for r in policy.rules if r.origin.startswith("policy.guardrails")}
    assert list(compiled) == ["Never process refunds over $500 without supervisor approval"]
    rule = compiled["Never process refunds over $500 without supervisor approval"]
    assert rule.kind is RuleKind.APPROVAL
    assert rule.tools == ("process_refund",)
    assert rule.approver == "supervisor"
    assert rule.condition is not None and rule.condition.expression == "amount > 500"
    assert [t.text for t in policy.text_rules] == [
        "Never share customer payment information",
        "Never be dismissive to frustrated customers",
        "Always verify customer identity before account access",
        "Always confirm before making changes",
    ]


def test_spec_table_of_section_4_1(tmp_path: Path) -> None:
    """The table "What compiles vs stays as text", with the approval row corrected."""
    skill = skill_from(
        tmp_path,
        REFUND_TOOLS,
        """
          - name: deleteFile
            inputs: [{name: path, type: string, required: true}]
        policy:
          guardrails:
            never:
              - "Never use deleteFile"
              - "amount > 500 needs approval"
              - "process_refund requires approval"
              - "Never share payment info"
              - "Never be dismissive"
            always:
              - "Always verify identity first"
        """,
    )
    policy = compile_policy(skill)
    kinds = {r.text: r.kind for r in policy.rules}
    assert kinds == {
        "Never use deleteFile": RuleKind.TOOL_DENY,
        "amount > 500 needs approval": RuleKind.APPROVAL,
        "process_refund requires approval": RuleKind.APPROVAL,
    }
    assert [t.text for t in policy.text_rules] == [
        "Never share payment info",
        "Never be dismissive",
        "Always verify identity first",
    ]


def test_gate_blocks_a_denied_tool(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        """
          - name: deleteFile
            inputs: [{name: path, type: string, required: true}]
        policy:
          guardrails:
            never: ["Never use deleteFile"]
        """,
    )
    decision = gate.check("deleteFile", {"path": "/etc/passwd"})
    assert isinstance(decision, Block)
    assert codes(decision) == [ReasonCode.TOOL_DENIED]
    assert decision.reasons[0].rule == "Never use deleteFile"


def test_gate_on_the_spec_yaml_triggers_the_supervisor_approval() -> None:
    gate = Gate.for_skill(load_skill(SPEC))
    big = gate.check("process_refund", {"order_id": "A1", "amount": 750})
    assert isinstance(big, NeedApproval)
    assert big.approver == "supervisor"
    assert set(codes(big)) == {ReasonCode.APPROVAL_REQUIRED}
    assert gate.check("process_refund", {"order_id": "A1", "amount": 120}).kind == "allow"


def test_gate_on_the_refund_example_follows_the_workflow(refund_yaml: Path) -> None:
    gate = FreshStore(Gate.for_skill(load_skill(refund_yaml)))
    args = {"order_id": "ORD-12345", "amount": 750}
    assert codes(gate.check("process_refund", args)) == [ReasonCode.WORKFLOW_ORDER]
    done = [
        ToolRun("verify_identity", {"order_id": "ORD-12345"}, {"verified": True}),
        ToolRun("check_eligibility", args, {"eligible": True, "order_total": 900.0}),
    ]
    decision = gate.check("process_refund", args, history=done)
    assert isinstance(decision, NeedApproval)
    assert decision.approver == "supervisor"
    over_total = gate.check("process_refund", {**args, "amount": 950}, history=done)
    assert codes(over_total) == [ReasonCode.GUARDRAIL_BLOCKED]
    assert gate.check("delete_customer_record", {"customer_id": "C1"}).kind == "block"


def test_workflow_becomes_subgoals_with_depends_on() -> None:
    goals = workflows_to_subgoals(load_skill(SPEC))
    assert [g.to_dict() for g in goals] == [
        {
            "id": "sg_Refund Processing_1",
            "intent": "verify_identity",
            "depends_on": [],
            "status": "todo",
            "from_workflow": "Refund Processing",
            "workflow_required": True,
            "tool": None,
        },
        {
            "id": "sg_Refund Processing_2",
            "intent": "check_eligibility",
            "depends_on": ["sg_Refund Processing_1"],
            "status": "todo",
            "from_workflow": "Refund Processing",
            "workflow_required": True,
            "tool": None,
        },
        {
            "id": "sg_Refund Processing_3",
            "intent": "process_refund",
            "depends_on": ["sg_Refund Processing_2"],
            "status": "todo",
            "from_workflow": "Refund Processing",
            "workflow_required": True,
            "tool": "process_refund",
        },
    ]


def test_subgoals_of_object_steps_and_optional_workflows(tmp_path: Path) -> None:
    skill = skill_from(
        tmp_path,
        REFUND_TOOLS,
        """
        policy:
          workflows:
            - id: wf
              steps:
                - {id: ask, description: "Ask for the order number"}
                - {tool: verify_identity}
            - name: later
              steps: [confirm_with_customer]
        """,
    )
    goals = workflows_to_subgoals(skill)
    assert [(g.id, g.intent, g.depends_on, g.tool, g.workflow_required) for g in goals] == [
        ("sg_wf_1", "ask: Ask for the order number", (), None, False),
        ("sg_wf_2", "verify_identity", ("sg_wf_1",), "verify_identity", False),
        ("sg_later_1", "confirm_with_customer", (), None, False),
    ]
