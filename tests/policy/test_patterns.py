"""Patterns in the gate: whole values as JSON Schema users expect, and never a hang.

A pattern written ``^...$`` matches only the whole value: ``$`` does not match before a
final newline (ECMA-262), so ``"ORD-12345\\n"`` cannot pass as ``ORD-12345`` and slip
past a per-key rule. Every pattern runs on a linear-time engine: a catastrophic one
answers at once (these tests would time the suite out otherwise; they assert results,
never times).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.policy.helpers import codes, gate_from, runs

from skillwire.policy import Gate, ReasonCode, schema_validator
from skillwire.policy.arguments import ArgumentChecker, FieldCheck

ORDER = "^ORD-[0-9]{5}$"
CATASTROPHIC = "^(a+)+$"
HOSTILE = "a" * 40 + "!"
"""Python's `re` takes 1.2 s on 26 a's and doubles with each one more: hours here."""

INPUTS = f"""
tools:
  - name: process_refund
    inputs:
      - {{name: order_id, type: string, required: true, pattern: "{ORDER}"}}
      - {{name: amount, type: number, required: true}}
    policy: {{once_only: {{per: order_id}}}}
"""


def schema_tool(order_id: str = "", schema: str = "") -> str:
    """``process_refund`` described by an ``inputSchema`` whose ``order_id`` bears the
    ORDER pattern; ``order_id`` adds keywords to that property (``, key: value``),
    ``schema`` to the schema (``\\n      key: value``)."""
    return f"""
tools:
  - name: process_refund
    inputSchema:
      type: object
      required: [order_id, amount]
      properties:
        order_id: {{type: string, pattern: "{ORDER}"{order_id}}}
        amount: {{type: number}}{schema}
    policy: {{once_only: {{per: order_id}}}}
"""


SCHEMA = schema_tool()
COMPLEX = schema_tool(
    order_id=', not: {const: "ORD-00000"}',
    schema="\n      allOf: [{properties: {amount: {exclusiveMinimum: 0}}}]",
)
"""A schema the fast checker does not take: ``jsonschema`` validates it whole."""


@pytest.fixture(params=[INPUTS, SCHEMA, COMPLEX], ids=["inputs", "inputSchema", "jsonschema"])
def gate(request: pytest.FixtureRequest, tmp_path: Path) -> Gate:
    return gate_from(tmp_path, request.param)


@pytest.mark.parametrize("suffix", ["\n", "\r\n", "\n\n", " ", "\nX"])
def test_a_value_with_more_after_it_does_not_pass_an_anchored_pattern(
    gate: Gate, suffix: str
) -> None:
    decision = gate.check("process_refund", {"order_id": "ORD-12345" + suffix, "amount": 5})
    assert codes(decision) == [ReasonCode.ARGUMENT_INVALID], decision
    assert "order_id" in decision.reasons[0].message


def test_a_trailing_newline_does_not_defeat_a_per_key_rule(gate: Gate) -> None:
    done = runs("process_refund", order_id="ORD-12345", amount=5)
    assert gate.check("process_refund", {"order_id": "ORD-12345", "amount": 5}).kind == "allow"
    again = gate.check("process_refund", {"order_id": "ORD-12345\n", "amount": 5}, history=done)
    assert not again.allowed, again
    assert ReasonCode.ARGUMENT_INVALID in codes(again)


def test_a_catastrophic_pattern_answers_at_once_in_the_gate(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        f"""
        tools:
          - name: note
            inputs:
              - {{name: text, type: string, required: true, pattern: "{CATASTROPHIC}"}}
        """,
    )
    assert codes(gate.check("note", {"text": HOSTILE})) == [ReasonCode.ARGUMENT_INVALID]
    assert gate.check("note", {"text": "a" * 40}).kind == "allow"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": CATASTROPHIC},
        {"type": "string", "pattern": CATASTROPHIC, "not": {"const": "x"}},
        {"type": "array", "items": {"type": "string", "pattern": CATASTROPHIC}},
    ],
)
def test_a_catastrophic_pattern_answers_at_once_in_a_field(schema: dict[str, Any]) -> None:
    check = FieldCheck("f", schema)
    value = [HOSTILE] if schema["type"] == "array" else HOSTILE
    assert check.problem(value) is not None
    assert check.problem(["a" * 40] if schema["type"] == "array" else "a" * 40) is None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "patternProperties": {CATASTROPHIC: {"type": "integer"}}},
        {
            "type": "object",
            "patternProperties": {CATASTROPHIC: {"type": "integer"}},
            "additionalProperties": False,
        },
        {"type": "object", "propertyNames": {"pattern": CATASTROPHIC}},
    ],
)
def test_a_catastrophic_property_pattern_answers_at_once(schema: dict[str, Any]) -> None:
    checker = ArgumentChecker("t", {"type": "object", "properties": {"data": schema}})
    errors = checker.errors({"data": {HOSTILE: "x"}})
    if "patternProperties" in schema and "additionalProperties" not in schema:
        assert errors == []  # the name does not match: the property is not checked
    else:
        assert errors and errors[0].startswith("data"), errors


def test_pattern_properties_match_names_as_patterns_do() -> None:
    schema = {"type": "object", "patternProperties": {"^x$": {"type": "integer"}}}
    validator = schema_validator({**schema, "additionalProperties": False})
    assert not list(validator.iter_errors({"x": 1}))
    assert list(validator.iter_errors({"x": "1"}))  # the pattern applies
    assert list(validator.iter_errors({"x\n": 1}))  # `$` is the end: this name is extra


def test_a_nested_dialect_does_not_escape_the_engine() -> None:
    """A ``$schema`` below the root would make ``jsonschema`` validate that part with a
    validator of that dialect, which runs patterns with Python's ``re``."""
    schema = {
        "type": "object",
        "properties": {
            "x": {"$schema": "http://json-schema.org/draft-07/schema#", "pattern": ORDER}
        },
    }
    assert list(schema_validator(schema).iter_errors({"x": "ORD-12345\n"}))
    assert list(schema_validator(schema).iter_errors({"x": "ORD-12345"}))  # refused whole


def test_a_lone_surrogate_does_not_pass_a_pattern() -> None:
    check = FieldCheck("f", {"type": "string", "pattern": "^ORD-[0-9]{5}"})
    assert check.problem("ORD-12345\ud800") is not None
    assert check.problem("ORD-12345") is None
    assert list(schema_validator({"pattern": "."}).iter_errors("\udc00"))
