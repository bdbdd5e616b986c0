"""Missing input: one ask for everything missing, with the skill's own prompt text."""

from __future__ import annotations

from pathlib import Path

from tests.policy.helpers import REFUND_TOOLS, codes, gate_from, runs

from skillwire.policy import NeedInput, ReasonCode

REQUIRED_INPUTS = """
required_inputs:
  - {path: identity.email_or_phone, prompt: "What is the email or phone number on the account?"}
  - {path: order_id, prompt: "Which order is it about? (ORD-12345)", pattern: "^ORD-[0-9]{5}$"}
  - {path: reason, input_type: choice, options: [damaged, late], prompt: "Why the refund?"}
"""


def test_all_missing_required_arguments_in_one_ask(tmp_path: Path) -> None:
    decision = gate_from(tmp_path, REFUND_TOOLS).check("process_refund", {"note": "x"})
    assert isinstance(decision, NeedInput)
    assert decision.requested_fields == ("order_id", "amount")
    assert decision.prompt == "Please provide order id (The order number). Please provide amount."
    assert decision.field_schemas == {
        "order_id": {"type": "string", "description": "The order number"},
        "amount": {"type": "number"},
    }
    assert codes(decision) == [ReasonCode.MISSING_REQUIRED_INPUT]


def test_null_and_absent_values_count_as_missing(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, REFUND_TOOLS)
    decision = gate.check("process_refund", {"amount": None})
    assert decision.requested_fields == ("order_id", "amount")  # type: ignore[union-attr]


def test_an_empty_string_is_a_value_that_the_schema_judges(tmp_path: Path) -> None:
    """``""`` is given, not missing: with no ``minLength`` it is a value like any other;
    with ``minLength: 1`` (or a pattern) the schema refuses it, and nothing is asked."""
    gate = gate_from(tmp_path, REFUND_TOOLS)
    decision = gate.check("process_refund", {"order_id": "", "amount": 10})
    assert decision.kind == "allow", decision
    strict = gate_from(
        tmp_path,
        """
        tools:
          - name: process_refund
            inputs:
              - {name: order_id, type: string, required: true, minLength: 1}
              - {name: amount, type: number, required: true}
        """,
    )
    refused = strict.check("process_refund", {"order_id": "", "amount": 10})
    assert refused.kind == "block"
    assert codes(refused) == [ReasonCode.ARGUMENT_INVALID]
    assert "shorter than 1" in refused.reasons[0].message
    patterned = gate.check("verify_identity", {"order_id": ""})
    assert patterned.kind == "block" and codes(patterned) == [ReasonCode.ARGUMENT_INVALID]


def test_required_inputs_are_asked_before_the_first_tool_call(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, REQUIRED_INPUTS, REFUND_TOOLS)
    decision = gate.check("verify_identity", {})
    assert isinstance(decision, NeedInput)
    assert decision.requested_fields == ("order_id", "identity.email_or_phone", "reason")
    assert decision.prompt == (
        "Which order is it about? (ORD-12345) "
        "What is the email or phone number on the account? Why the refund?"
    )
    assert decision.field_schemas["reason"] == {"type": "string", "enum": ["damaged", "late"]}
    assert decision.field_schemas["identity.email_or_phone"] == {"type": "string"}


def test_required_inputs_given_as_inputs_entities_or_arguments(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, REQUIRED_INPUTS, REFUND_TOOLS)
    decision = gate.check(
        "verify_identity",
        {"order_id": "ORD-12345"},
        inputs={"identity": {"email_or_phone": "a@b.c"}},
        entities={"reason": "late"},
    )
    assert decision.kind == "allow"
    flat = gate.check(
        "verify_identity",
        {"order_id": "ORD-12345"},
        inputs={"identity.email_or_phone": "a@b.c", "reason": "late"},
    )
    assert flat.kind == "allow"


def test_required_inputs_are_not_asked_after_a_tool_ran(tmp_path: Path) -> None:
    gate = gate_from(tmp_path, REQUIRED_INPUTS, REFUND_TOOLS)
    done = runs("verify_identity", order_id="ORD-12345")
    decision = gate.check("check_eligibility", {"order_id": "ORD-12345", "amount": 1}, history=done)
    assert decision.kind == "allow"


def test_require_input_rule_asks_with_its_message(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        """
        policy:
          guardrails:
            always:
              - rule: "Large refunds need the customer's reason"
                tool: process_refund
                when: "amount > 100"
                action: require_input
                fields: [reason]
                message: "Please tell us why you want this refund."
        """,
    )
    decision = gate.check("process_refund", {"order_id": "ORD-1", "amount": 150})
    assert isinstance(decision, NeedInput)
    assert decision.requested_fields == ("reason",)
    assert decision.prompt == "Please tell us why you want this refund."
    assert decision.reasons[0].rule == "Please tell us why you want this refund."
    assert decision.reasons[0].source is not None
    given = gate.check(
        "process_refund", {"order_id": "ORD-1", "amount": 150}, inputs={"reason": "broken"}
    )
    assert given.kind == "allow"
    assert gate.check("process_refund", {"order_id": "ORD-1", "amount": 50}).kind == "allow"


def test_require_input_rule_that_cannot_be_evaluated_asks(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        """
        policy:
          guardrails:
            always:
              - {rule: "Ask first", tool: process_refund, when: "context.risky",
                 action: require_input, fields: [reason]}
        """,
    )
    decision = gate.check("process_refund", {"order_id": "ORD-1", "amount": 1}, context={})
    assert decision.requested_fields == ("reason",)  # type: ignore[union-attr]


def test_missing_arguments_and_rule_inputs_are_asked_together(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        REQUIRED_INPUTS,
        REFUND_TOOLS,
        """
        policy:
          guardrails:
            always:
              - {rule: "Always note why", tool: process_refund, action: require_input,
                 fields: [reason]}
        """,
    )
    decision = gate.check("process_refund", {})
    assert isinstance(decision, NeedInput)
    assert decision.requested_fields == (
        "order_id",
        "amount",
        "identity.email_or_phone",
        "reason",
    )
    assert decision.prompt.count("Which order is it about?") == 1
    assert len(decision.reasons) == 3


def test_require_input_reads_an_empty_argument_as_given_but_not_an_empty_input(
    tmp_path: Path,
) -> None:
    """An argument ``""`` is a value (its schema judges it); an input or entity ``""``
    is something the user did not say, and is asked for."""
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        """
        policy:
          guardrails:
            always:
              - rule: "Refunds carry a note"
                tool: process_refund
                action: require_input
                fields: [note]
        """,
    )
    args = {"order_id": "ORD-1", "amount": 5}
    assert gate.check("process_refund", {**args, "note": ""}).kind == "allow"
    assert gate.check("process_refund", args).kind == "need_input"
    assert gate.check("process_refund", args, inputs={"note": ""}).kind == "need_input"
    assert gate.check("process_refund", args, inputs={"note": "late"}).kind == "allow"
