"""Argument validation: no coercion, unknown arguments, patterns, enums, both schema forms.

The fast checker must agree with ``jsonschema`` (given the skill pattern engine) on the
keywords it handles; a property test compares them on random values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.policy.helpers import codes, gate_from

from skillwire.policy import Gate, ReasonCode, schema_validator
from skillwire.policy.arguments import ArgumentChecker, FieldCheck, json_problem, same_value

INPUTS = """
tools:
  - name: book
    inputs:
      - {name: code, type: string, required: true, pattern: "^[A-Z]{3}$"}
      - {name: seats, type: integer, minimum: 1, maximum: 9}
      - {name: price, type: number}
      - {name: cabin, type: string, enum: [economy, business]}
      - {name: flexible, type: boolean}
      - {name: tags, type: array, items: {type: string}}
"""

SCHEMA = """
tools:
  - name: book
    inputSchema:
      type: object
      required: [code]
      properties:
        code: {type: string, pattern: "^[A-Z]{3}$"}
        seats: {type: integer, minimum: 1, maximum: 9}
        price: {type: number}
        cabin: {type: string, enum: [economy, business]}
        flexible: {type: boolean}
        tags: {type: array, items: {type: string}}
"""


@pytest.fixture(params=[INPUTS, SCHEMA], ids=["inputs", "inputSchema"])
def gate(request: pytest.FixtureRequest, tmp_path: Path) -> Gate:
    return gate_from(tmp_path, request.param)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"seats": "2"}, "seats"),  # "2" is not coerced to 2
        ({"price": "750"}, "price"),
        ({"flexible": "true"}, "flexible"),
        ({"flexible": 1}, "flexible"),
        ({"seats": True}, "seats"),  # a boolean is not a number
        ({"seats": 2.5}, "seats"),
        ({"seats": 0}, "seats"),
        ({"seats": 10}, "seats"),
        ({"code": "abc"}, "code"),  # pattern
        ({"cabin": "first"}, "cabin"),  # enum
        ({"tags": ["a", 1]}, "tags"),  # array items
        ({"tags": "a"}, "tags"),
        ({"surprise": 1}, "surprise: unknown argument of book"),
        ({"price": float("inf")}, "price"),
    ],
)
def test_invalid_arguments_block(gate: Gate, args: dict[str, Any], message: str) -> None:
    decision = gate.check("book", {"code": "LHR", **args})
    assert codes(decision) == [ReasonCode.ARGUMENT_INVALID], decision
    assert message in decision.reasons[0].message


@pytest.mark.parametrize(
    "args",
    [
        {"seats": 2, "price": 10, "cabin": "economy", "flexible": False, "tags": ["x"]},
        {"seats": 2.0},  # a whole float is an integer (as in JSON Schema)
        {"price": 10.5},
        {"cabin": None},  # null is "not given"
    ],
)
def test_valid_arguments_pass(gate: Gate, args: dict[str, Any]) -> None:
    assert gate.check("book", {"code": "LHR", **args}).kind == "allow"


def test_schema_that_allows_more_properties(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        """
        tools:
          - name: book
            inputSchema:
              type: object
              additionalProperties: true
              properties: {code: {type: string}}
        """,
    )
    assert gate.check("book", {"code": "X", "extra": 1}).kind == "allow"


def test_complex_schema_falls_back_to_jsonschema(tmp_path: Path) -> None:
    gate = gate_from(
        tmp_path,
        """
        tools:
          - name: pay
            inputSchema:
              type: object
              required: [amount]
              properties:
                amount: {type: number}
                card: {oneOf: [{type: string, minLength: 4}, {type: integer}]}
              allOf: [{properties: {amount: {exclusiveMinimum: 0}}}]
        """,
    )
    assert gate.check("pay", {"amount": 5, "card": "1234"}).kind == "allow"
    assert codes(gate.check("pay", {"amount": -1})) == [ReasonCode.ARGUMENT_INVALID]
    assert codes(gate.check("pay", {"amount": 5, "card": "12"})) == [ReasonCode.ARGUMENT_INVALID]
    unknown = gate.check("pay", {"amount": 5, "pin": 1})
    assert unknown.reasons[0].message == "pin: unknown argument of pay"
    assert codes(gate.check("pay", {"amount": "5"})) == [ReasonCode.ARGUMENT_INVALID]


def test_json_problem() -> None:
    assert json_problem({"a": [1, 2.5, "x", None, True, {"b": []}]}) is None
    assert json_problem(float("nan"), "x") == "x: nan is not a number"
    assert json_problem([1, float("-inf")], "v") == "v[1]: -inf is not a number"
    assert json_problem({1: "a"}) == "value: key 1 is not a string"
    assert json_problem(b"x", "raw") == "raw: a bytes is not a JSON value"


def test_unknown_arguments_are_listed_each(tmp_path: Path) -> None:
    checker = ArgumentChecker("t", {"type": "object", "properties": {"a": {"type": "string"}}})
    assert checker.errors({"a": "x", "b": 1, "c": 2}) == [
        "b: unknown argument of t",
        "c: unknown argument of t",
    ]


_SIMPLE_SCHEMAS = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "number", "integer", "boolean", "array", "object"])},
        optional={
            "minimum": st.integers(-5, 5),
            "maximum": st.integers(-5, 5),
            "exclusiveMinimum": st.floats(-5, 5, allow_nan=False),
            "exclusiveMaximum": st.floats(-5, 5, allow_nan=False),
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 3),
            "pattern": st.sampled_from(["^a", "b$", "[0-9]", "^$", "^\\d$"]),
        },
    ),
    st.fixed_dictionaries(
        {"enum": st.lists(st.one_of(st.integers(-2, 2), st.booleans(), st.text(max_size=2)))}
    ),
    st.fixed_dictionaries({"const": st.one_of(st.integers(-2, 2), st.booleans(), st.none())}),
)
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10, 10),
    st.floats(-10, 10, allow_nan=False),
    st.text(max_size=4),
    st.sampled_from(["b\n", "a", "5", "٥", "\n"]),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.text(max_size=1), st.integers(0, 2), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(schema=_SIMPLE_SCHEMAS, value=_VALUES)
def test_fast_checks_agree_with_jsonschema(schema: dict[str, Any], value: Any) -> None:
    check = FieldCheck("f", schema)
    assert check.validator is None  # these are all fast-path schemas
    expected = not any(True for _ in schema_validator(schema).iter_errors(value))
    assert (check.problem(value) is None) is expected, (schema, value, check.problem(value))


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("ORD-1", "ORD-1", True),
        ("ORD-1", "ORD-2", False),
        (1, 1.0, True),
        (750, 750, True),
        (0.5, 0.5, True),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (True, True, True),
        (None, None, True),
        (None, 0, False),
        (float("nan"), float("nan"), False),
        ("1", 1, False),
        ([1, "a"], (1, "a"), True),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": True}, {"a": 1}, False),
    ],
)
def test_same_value_is_json_equality(a: Any, b: Any, same: bool) -> None:
    """Its fast path (two values of one exact scalar type) must not read ``true`` as
    ``1``; a subclass never takes it (the gate refuses one before comparing: see
    test_plain_state)."""
    assert same_value(a, b) is same


def test_bounds_and_lengths_are_checked_only_where_declared_and_always_there() -> None:
    plain = FieldCheck("note", {"type": "string"})
    assert plain.problem("x" * 10_000) is None
    short = FieldCheck("code", {"type": "string", "minLength": 3, "maxLength": 4})
    assert short.problem("ab") == "'ab' is shorter than 3 characters"
    assert short.problem("abcde") == "'abcde' is longer than 4 characters"
    assert short.problem("abc") is None
    anything = FieldCheck("n", {"type": "number"})
    assert anything.problem(-1e300) is None
    for key, bad in (
        ("minimum", -1),
        ("maximum", 11),
        ("exclusiveMinimum", 0),
        ("exclusiveMaximum", 10),
    ):
        limit = 0 if "inimum" in key else 10
        check = FieldCheck("n", {"type": "number", key: limit})
        assert check.problem(bad), key
        assert check.problem(5) is None, key
    assert FieldCheck("n", {"minimum": 0}).problem(-0.5), "a bound without a type"
