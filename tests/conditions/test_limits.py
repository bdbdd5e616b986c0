"""What the evaluator refuses: constructs it does not evaluate (at load, with a column)
and values built to exhaust it (at run time, as an evaluation error)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from skillwire.conditions import (
    ConditionEvaluationError,
    ConditionSyntaxError,
    compile_condition,
)


@pytest.mark.parametrize(
    ("source", "column", "part"),
    [
        ("x == 2u", 6, "unsigned"),
        ("x == b'z'", 6, "bytes"),
        ("uint(x) > 1", 1, "unsigned"),
        ("bytes(x) == x", 1, "bytes"),
        ("now.getHours('Europe/Paris') > 1", 5, "time zone"),
    ],
)
def test_what_the_evaluator_does_not_cover_is_a_load_error_at_its_column(
    source: str, column: int, part: str
) -> None:
    with pytest.raises(ConditionSyntaxError, match=part) as caught:
        compile_condition(source)
    assert caught.value.column == column


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _cyclic() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["k"] = value
    return value


@pytest.mark.parametrize(
    ("source", "variables"),
    [
        ("x == y", {"x": _nested(100_000), "y": _nested(100_000)}),
        ("x == y", {"x": _cyclic(), "y": _cyclic()}),
        ("untrusted(x)", {"x": _nested(100_000)}),
        ("int(s) > 1", {"s": "9" * 5000}),
        ("int(s) > 1", {"s": "0" * 5000 + "1"}),
        ("duration(s) > duration('1h')", {"s": "9" * 400 + "h"}),
        ("timestamp(s) > now", {"s": "99999-01-01T00:00:00Z"}),
    ],
)
def test_hostile_values_fail_closed_or_answer_never_crash(
    source: str, variables: dict[str, Any]
) -> None:
    """A value built to exhaust the evaluator (nesting, a cycle, digits beyond what
    Python reads) gives an answer or an evaluation error, never another exception."""
    variables = {**variables, "now": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)}
    condition = compile_condition(source)
    try:
        answer = condition.evaluate(variables)
    except ConditionEvaluationError as exc:
        assert str(exc).startswith(f"cannot evaluate `{source}`")
        return
    assert answer is True or answer is False
