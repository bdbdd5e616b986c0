"""Compiling conditions to CEL and evaluating them, failing closed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillwire import conditions
from skillwire.conditions import (
    RUNTIME_NAMES,
    CelCondition,
    Condition,
    ConditionEvaluationError,
    ConditionSyntaxError,
    compile_condition,
)


def evaluate(source: str, **variables: Any) -> bool:
    return compile_condition(source).evaluate(variables)


def syntax_error(source: str, known_names: set[str] | None = None) -> ConditionSyntaxError:
    with pytest.raises(ConditionSyntaxError) as caught:
        compile_condition(source, known_names=known_names)
    return caught.value


def evaluation_error(source: str, **variables: Any) -> ConditionEvaluationError:
    condition = compile_condition(source)
    with pytest.raises(ConditionEvaluationError) as caught:
        condition.evaluate(variables)
    return caught.value


def test_the_package_exports_what_it_documents() -> None:
    assert sorted(conditions.__all__) == sorted(
        [
            "FUNCTIONS",
            "OPERATOR",
            "PROVENANCE_FUNCTIONS",
            "PROVENANCE_KEY",
            "Provenance",
            "RUNTIME_NAMES",
            "Source",
            "ToolOutputs",
            "Trace",
            "USER",
            "tool_origin",
            "HELPERS",
            "History",
            "Normalised",
            "normalised",
            "RUNS_KEY",
            "CelExpression",
            "Runs",
            "compile_expression",
            "CelCondition",
            "Condition",
            "ConditionEvaluationError",
            "ConditionSyntaxError",
            "Rewrite",
            "Token",
            "compile_condition",
            "rewrite",
            "tokenize",
        ]
    )
    for name in conditions.__all__:
        assert getattr(conditions, name) is not None


def test_a_compiled_condition_is_a_condition() -> None:
    condition = compile_condition("file_path ends with '.lock'")
    assert isinstance(condition, Condition)
    assert isinstance(condition, CelCondition)
    assert condition.source == "file_path ends with '.lock'"
    assert condition.expression == "file_path.endsWith('.lock')"
    assert condition.names == frozenset({"file_path"})
    assert repr(condition) == "CelCondition(\"file_path ends with '.lock'\")"


@pytest.mark.parametrize(
    ("source", "variables", "expected"),
    [
        ("file_path contains '.env' or file_path contains 'secret'", {"file_path": "a/.env"}, 1),
        ("file_path contains '.env' or file_path contains 'secret'", {"file_path": "src/a.py"}, 0),
        ("file_path ends with '.lock'", {"file_path": "poetry.lock"}, 1),
        ("file_path ends with '.lock'", {"file_path": "lock.py"}, 0),
        ("action == 'delete' and branch == 'main'", {"action": "delete", "branch": "main"}, 1),
        ("action == 'delete' and branch == 'main'", {"action": "delete", "branch": "dev"}, 0),
        ("force == true", {"force": True}, 1),
        ("force == true", {"force": False}, 0),
        ("always", {}, 1),
        ("never", {}, 0),
        ('amount > 500 && currency == "USD"', {"amount": 750, "currency": "USD"}, 1),
        ('amount > 500 && currency == "USD"', {"amount": 750, "currency": "EUR"}, 0),
        ("not force", {"force": False}, 1),
        ("role not in ['admin']", {"role": "guest"}, 1),
    ],
)  # fmt: skip
def test_conditions_from_real_files(source: str, variables: dict[str, Any], expected: int) -> None:
    assert compile_condition(source).evaluate(variables) is bool(expected)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("config/.env.local", True),
        ("config/app.yaml", False),
        ([".env", "x"], True),
        (["x.env"], False),
        ({".env": 1}, True),
        ({}, False),
    ],
)
def test_contains_tests_substrings_of_strings_and_members_of_lists(
    value: object, expected: bool
) -> None:
    assert evaluate("paths contains '.env'", paths=value) is expected
    assert evaluate("paths not contains '.env'", paths=value) is not expected


def test_contains_on_a_value_that_holds_nothing_fails_closed() -> None:
    evaluation_error("paths contains '.env'", paths=42)


@pytest.mark.parametrize(
    ("source", "variables", "expected"),
    [
        ("amount > 500", {"amount": 750.5}, True),
        ("amount > 500", {"amount": 500}, False),
        ("amount >= 500.0", {"amount": 500}, True),
        ("1 == 1.0", {}, True),
        ("amount == 5", {"amount": 5.0}, True),
        ("amount * 2 > order_total", {"amount": 3, "order_total": 5.5}, True),
        ("amount * 2 > order_total", {"amount": 2.5, "order_total": 6}, False),
        ("amount + fee <= limit", {"amount": 1, "fee": 0.5, "limit": 2}, True),
        ("amount / 2 == 3.5", {"amount": 7}, True),
        ("args.amount * 2 > 10", {"args": {"amount": 6}}, True),
        ("history[0].args.amount * 2 > 10", {"history": [{"args": {"amount": 6}}]}, True),
        ("history[size(history) - 1].ok && n * 2 > 1", {"history": [{"ok": True}], "n": 1}, True),
        ("counts['process_refund'] < 1", {"counts": {"process_refund": 0}}, True),
        ("counts['process_refund'] + 1 > 1", {"counts": {"process_refund": 1}}, True),
        ("force && amount * 2 > 10", {"force": True, "amount": 6}, True),
        ("flags == [true, false] && n + 1 > 1", {"flags": [True, False], "n": 1}, True),
        ("int(amount) % 2 == 0", {"amount": 8.0}, True),
        ("big == 9007199254740993", {"big": 9007199254740993}, True),
        ("big + 0.0 > 0.0", {"big": 2**40}, True),
    ],
)
def test_whole_numbers_and_decimals_mix(
    source: str, variables: dict[str, Any], expected: bool
) -> None:
    assert compile_condition(source).evaluate(variables) is expected


def test_a_string_is_never_coerced_to_a_number() -> None:
    error = evaluation_error("amount > 500", amount="750")
    assert "amount > 500" in str(error)
    assert "amount: str" in str(error)


@pytest.mark.parametrize(
    ("source", "variables", "message_part"),
    [
        ("amount > 500", {}, "`amount` has no value"),
        ("args.amount > 500", {"args": {}}, "args.amount > 500"),
        ("amount > 500", {"amount": None}, "amount: NoneType"),
        ("amount", {"amount": 1}, "not true or false"),
        ("name + 'x'", {"name": "a"}, "gives str"),
        ("a / b > 1", {"a": 1, "b": "x"}, "cannot evaluate"),
        ("amount % 2 == 0", {"amount": 8}, "cannot evaluate"),
        ("ts > 0", {"ts": object()}, "ts: object"),
        ("x.contains('a')", {"x": ["a"]}, "cannot evaluate"),
    ],
)
def test_evaluation_never_guesses(
    source: str, variables: dict[str, Any], message_part: str
) -> None:
    assert message_part in str(evaluation_error(source, **variables))


class RecordingMapping(Mapping[str, Any]):
    """A mapping that remembers which keys were read."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.read: list[str] = []

    def __getitem__(self, key: str) -> Any:
        self.read.append(key)
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("evaluate must not walk every variable")

    def __len__(self) -> int:
        return len(self.data)


def test_evaluate_passes_only_the_names_the_expression_reads() -> None:
    history: list[dict[str, Any]] = [{"tool": "x", "args": {}, "result": None, "ok": True}] * 10_000
    variables = RecordingMapping({"amount": 750, "history": history, "counts": {}})
    assert compile_condition("amount > 500").evaluate(variables) is True
    assert variables.read == ["amount"]


def test_a_type_name_is_a_cel_type_unless_the_skill_defines_it() -> None:
    condition = compile_condition("type(x) == list", known_names={"x"})
    assert condition.names == frozenset({"x"})
    assert condition.evaluate({"x": [1]}) is True
    assert condition.evaluate({"x": [1], "list": "shadow"}) is False
    defined = compile_condition("type == 'refund'", known_names={"type"})
    assert defined.names == frozenset({"type"})
    assert defined.evaluate({"type": "refund"}) is True


@pytest.mark.parametrize(
    ("source", "hint_part"),
    [
        ("amout > 500", "did you mean `amount`?"),
        ("force == True", "`true`"),
        ("amount == None", "`null`"),
        ("zzz_qqq > 1", "can read: amount"),
    ],
)
def test_an_unknown_name_is_a_load_error(source: str, hint_part: str) -> None:
    known = {"amount", "force", *RUNTIME_NAMES}
    error = syntax_error(source, known)
    assert "is not a name this skill defines" in error.message
    assert hint_part in error.hint


def test_an_unknown_name_error_points_at_its_first_use() -> None:
    error = syntax_error("amount > 1 and curency == 'USD'", {"amount", "currency"})
    assert "`curency`" in error.message
    assert error.column == 16


def test_names_bound_by_macros_and_runtime_names_are_known() -> None:
    condition = compile_condition(
        "history.exists(h, h.tool == 'refund') && counts['refund'] < 1 && args.amount > 5",
        known_names=RUNTIME_NAMES,
    )
    assert condition.names == frozenset({"history", "counts", "args"})


@pytest.mark.parametrize(
    ("source", "column", "hint_part"),
    [
        ("x.startswith('a')", 3, "`startsWith`"),
        ("tally(xs) > 1", 1, ""),
        ("lower(name) == 'x'", 1, ""),
    ],
)
def test_an_unknown_function_is_a_load_error(source: str, column: int, hint_part: str) -> None:
    error = syntax_error(source)
    assert "unknown function" in error.message
    assert error.column == column
    assert hint_part in error.hint


@pytest.mark.parametrize(
    ("source", "column", "message_part", "hint_part"),
    [
        ("", 1, "empty", "amount > 500"),
        ("   ", 1, "empty", ""),
        ("amount >> 500", 8, "`>>`", "`>=`"),
        (" > ", 2, "operand is missing", ""),
        ("a & b", 3, "`&`", "`&&`"),
        ("a | b", 3, "`|`", "`||`"),
        ("a === b", 3, "`===`", "`==`"),
        ("path contains 'x' and n > 99999999999999999999", 27, "int literal", "64 bits"),
    ],
)
def test_syntax_errors_have_a_column_and_a_hint(
    source: str, column: int, message_part: str, hint_part: str
) -> None:
    error = syntax_error(source)
    assert message_part in error.message
    assert error.column == column
    assert hint_part in error.hint


def test_a_condition_that_reads_no_names_is_evaluated_at_load() -> None:
    assert compile_condition("1 == 1.0").evaluate({}) is True
    assert compile_condition("NEVER").evaluate({"anything": 1}) is False
    assert "cannot be evaluated" in syntax_error('"abc"').message
    assert "by zero" in syntax_error("1 % 0 == 0").message


def test_single_equals_is_read_as_equality() -> None:
    condition = compile_condition("action = 'delete'")
    assert condition.expression == "action == 'delete'"
    assert condition.evaluate({"action": "delete"}) is True


# properties --------------------------------------------------------------------------

WORDS = (
    *("amount", "args.amount", "history[0]", "counts['x']", "xs", "500", "1.5", "0x1F", "2u"),
    *("'a b'", '"and"', "true", "null", "and", "or", "not", "in", "contains", "starts"),
    *("ends", "with", "always", "(", ")", "[", "]", "{", "}", ",", ":", "?", ".", "==", "="),
    *("!=", ">", ">=", "<", ">>", "&", "&&", "||", "+", "-", "*", "/", "%", "!", "size("),
    *(".exists(x,", "x", "type(", "int(", "r'\\d'", "'''t'''", "b'z'", "//c\n", "'open"),
)
spoken = st.lists(st.sampled_from(WORDS), max_size=14).map(" ".join)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=10,
)
SAMPLES = (
    "amount > 500",
    "amount * 2 > order_total",
    "paths contains '.env'",
    "name ends with 'x' or name starts with 'y'",
    "history[0].ok",
    "counts['a'] < 1",
    "args.amount >= 10 and not force",
    "size(items) > 2 ? a : b",
    "a / b > 1",
    "a % 2 == 0",
    "xs.exists(x, x > 1)",
    "a == b",
    "a - b",
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60) | spoken)
def test_any_text_compiles_or_is_a_syntax_error(source: str) -> None:
    try:
        condition = compile_condition(source)
    except ConditionSyntaxError as error:
        assert error.message
        assert 0 <= error.column <= len(source) + 1
    else:
        assert isinstance(condition.expression, str)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_evaluate_returns_a_bool_or_raises_an_evaluation_error(data: st.DataObject) -> None:
    source = data.draw(st.sampled_from(SAMPLES) | spoken)
    try:
        condition = compile_condition(source)
    except ConditionSyntaxError:
        return
    names = sorted(condition.names)
    variables = data.draw(st.fixed_dictionaries({}, optional=dict.fromkeys(names, json_values)))
    try:
        result = condition.evaluate(variables)
    except ConditionEvaluationError:
        return
    assert result is True or result is False
