"""``matches()`` runs on the skill pattern engine: compiled once, linear, one semantics.

A condition's ``matches`` and a tool input's ``pattern`` answer alike for every value
(:mod:`skillwire.core.patterns`): a search, ``^`` and ``$`` at the ends of the whole
value, RE2 syntax with ASCII ``\\d`` and ``\\w``. A pattern written in the condition is
compiled at load, so one the engine cannot take is a load error at its column.
"""

from __future__ import annotations

from typing import Any

import pytest

from skillwire.conditions import (
    ConditionEvaluationError,
    ConditionSyntaxError,
    compile_condition,
)
from skillwire.core.patterns import cache_info, compile_pattern

CASES = [
    ("^ORD-[0-9]{5}$", "ORD-12345", True),
    ("^ORD-[0-9]{5}$", "ORD-12345\n", False),
    ("^ORD-[0-9]{5}$", "xORD-12345", False),
    ("[0-9]+", "a1", True),  # a search, not a whole match
    ("^\\d+$", "٣", False),  # `\d` is ASCII, as in JSON Schema
    ("^\\w+$", "é", False),
    ("^\\pL+$", "é", True),
    ("^a.c$", "a\nc", False),
    ("^(a+)+$", "a" * 40 + "!", False),
    ("^\\u00e9$", "é", True),  # an ECMA-262 escape
    ("[$]", "cost: $5", True),
    ("\\$$", "5$", True),
]


def ask(source: str, **variables: Any) -> bool:
    return compile_condition(source).evaluate(variables)


@pytest.mark.parametrize(("pattern", "value", "expected"), CASES)
def test_matches_answers_as_the_pattern_engine(pattern: str, value: str, expected: bool) -> None:
    literal = pattern.replace("\\", "\\\\")
    assert (compile_pattern(pattern).search(value) is not None) is expected
    assert ask(f"v.matches('{literal}')", v=value) is expected  # the fast path
    assert ask(f"v.matches('{literal}') && n + 1 > 0", v=value, n=1) is expected  # CEL
    assert ask("v.matches(p)", v=value, p=pattern) is expected  # a pattern from the data


def test_the_spoken_dialect_reaches_matches_too() -> None:
    assert ask("not v.matches('^a$') and v != ''", v="a\n") is True


@pytest.mark.parametrize(
    ("source", "column", "reason"),
    [
        ("v.matches('(?<=#)[0-9]+')", 11, "look-behind"),
        ("v.matches('(a)\\\\1')", 11, "backreference"),
        ("ok && v.matches('[')", 17, "missing ]"),
        ("v.matches(r'a(?=b)')", 11, "look-ahead"),
    ],
)
def test_a_pattern_the_engine_cannot_take_is_a_load_error(
    source: str, column: int, reason: str
) -> None:
    with pytest.raises(ConditionSyntaxError) as caught:
        compile_condition(source)
    assert reason in str(caught.value)
    assert caught.value.column == column


def test_a_bad_pattern_from_the_data_fails_closed() -> None:
    condition = compile_condition("v.matches(p)")
    with pytest.raises(ConditionEvaluationError, match="look-behind"):
        condition.evaluate({"v": "x", "p": "(?<=a)b"})
    with pytest.raises(ConditionEvaluationError):
        condition.evaluate({"v": 5, "p": "5"})  # not a string: CEL's error, not false


def test_a_value_with_a_lone_surrogate_fails_closed() -> None:
    with pytest.raises(ConditionEvaluationError):
        ask("v.matches('^a')", v="a\ud800")


def test_a_pattern_written_in_the_condition_is_compiled_at_load_only() -> None:
    fast = compile_condition("v.matches('^[A-Z]{3}-[0-9]{4}$')")
    slow = compile_condition("v.matches('^[A-Z]{2}-[0-9]{4}$') && n * 2 > 0")
    before = cache_info()
    for i in range(50):
        assert fast.evaluate({"v": f"ABC-{1000 + i}"})
    assert cache_info() == before  # the fast path holds the compiled pattern
    for i in range(50):
        assert slow.evaluate({"v": f"AB-{1000 + i}", "n": i + 1})
    assert cache_info().misses == before.misses  # CEL finds it cached


def test_a_pattern_from_the_data_is_compiled_once() -> None:
    data = compile_condition("v.matches(p)")
    data.evaluate({"v": "x", "p": "^x+y?$"})
    before = cache_info()
    for i in range(50):
        assert data.evaluate({"v": "x" * (i + 1), "p": "^x+y?$"})
    assert cache_info().misses == before.misses
