"""What the evaluator computes (arithmetic, conversions, maps, ``map`` and ``filter``,
timestamps and durations) is what the CEL package computes on the same values.

Each property draws expressions and values, evaluates them with the evaluator and with
the package (:mod:`tests.conditions.oracle`), and requires the same value of the same
type, or an error on both sides.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conditions.oracle import ERROR, by_cel, outcome, same
from tests.conditions.test_evaluator import check

from skillwire.conditions import (
    ConditionSyntaxError,
    compile_condition,
    compile_expression,
)

UTC = datetime.UTC


def value_of(source: str, variables: dict[str, Any], *, we_refuse: bool = False) -> Any:
    """Our value and the package's for one expression; asserts they are the same (or,
    ``we_refuse``, that ours is an error: a case the evaluator fails closed on)."""
    try:
        expression = compile_expression(source)
    except ConditionSyntaxError:
        return ERROR
    ours, theirs = outcome(expression, variables), by_cel(expression, variables)
    if we_refuse:
        assert ours == ERROR
        return ours
    assert same(ours, theirs), f"{expression.expression} {variables!r}: {ours!r}, CEL {theirs!r}"
    return ours


# -- known values ----------------------------------------------------------------------

NOW = datetime.datetime(2026, 11, 25, 12, 30, 15, 123000, tzinfo=UTC)

KNOWN: list[tuple[str, dict[str, Any], Any]] = [
    # a condition that computes reads its numbers as doubles
    ("a + b", {"a": 1, "b": 2}, 3.0),
    ("a / b", {"a": 7, "b": 2}, 3.5),
    ("a / 0", {"a": 7}, float("inf")),
    ("a * 2 > b", {"a": 3, "b": 5.5}, True),
    ("int(a) % 3", {"a": 7.9}, 1),
    ("int(a) % 0", {"a": 7}, ERROR),
    ("a % 2", {"a": 8}, ERROR),  # % of doubles
    ("-a", {"a": 3}, -3),
    ("-a - 1", {"a": 3}, -4.0),
    ("size(xs) + 1", {"xs": [1]}, ERROR),  # size() is whole: double(size(xs)) + 1
    ("double(size(xs)) + 1", {"xs": [1]}, 2.0),
    ("s + '!'", {"s": "hi"}, "hi!"),
    ("xs + [3]", {"xs": [1]}, [1, 3.0]),  # a list read whole keeps its numbers
    ("s + 1", {"s": "1"}, ERROR),
    ("a + b", {"a": 2**62, "b": 2**62}, ERROR),  # beyond 2**53 stays whole: overflow
    # conversions
    ("int(s)", {"s": "+12"}, 12),
    ("int(s)", {"s": " 12"}, ERROR),
    ("int(a)", {"a": -3.9}, -3),
    ("int(a)", {"a": 1e19}, ERROR),
    ("double(s)", {"s": "1e5"}, 100000.0),
    ("double(s)", {"s": "1_0"}, ERROR),
    ("string(a)", {"a": 1e20}, "100000000000000000000"),
    ("string(a)", {"a": 1.0}, "1"),
    ("string(a)", {"a": 1e-7}, "0.0000001"),
    ("string(a)", {"a": True}, ERROR),
    ("type(a) == double", {"a": 1.5}, True),
    ("dyn(a)", {"a": [1]}, [1]),
    # maps
    ("{'a': a, 'b': [a]}", {"a": "x"}, {"a": "x", "b": ["x"]}),
    ("{'a': a}['a']", {"a": 1}, 1),
    ("{1: a}[1]", {"a": "one"}, "one"),
    ("'b' in {'a': a}", {"a": 1}, False),
    ("{'a': 1} == m", {"m": {"a": 1.0}}, True),
    ("size({'a': a, 'b': 2})", {"a": 1}, 2),
    # map and filter
    ("xs.map(x, x > 1)", {"xs": [1, 2]}, [False, True]),
    ("xs.filter(x, x > 1)", {"xs": [1, 2, 3]}, [2, 3]),
    ("xs.map(x, x > 1, x + 1)", {"xs": [1, 2]}, [3.0]),
    ("xs.filter(x, x)", {"xs": [1]}, ERROR),
    ("m.map(k, k)", {"m": {"a": 1}}, ["a"]),
    ("xs.map(x, x.k).exists(v, v == 'b')", {"xs": [{"k": "a"}, {"k": "b"}]}, True),
    # timestamps and durations
    ("now.getFullYear()", {"now": NOW}, 2026),
    ("now.getMonth()", {"now": NOW}, 10),
    ("now.getDate()", {"now": NOW}, 25),
    ("now.getDayOfMonth()", {"now": NOW}, 24),
    ("now.getDayOfWeek()", {"now": NOW}, 3),
    ("now.getDayOfYear()", {"now": NOW}, 328),
    ("now.getMilliseconds()", {"now": NOW}, 123),
    ("now - timestamp('2026-11-24T12:30:15Z') > duration('24h')", {"now": NOW}, True),
    ("now + duration('1h30m')", {"now": NOW}, NOW + datetime.timedelta(minutes=90)),
    ("duration('90m').getHours()", {}, 1),
    ("duration('1500ms').getMilliseconds()", {}, 1500),
    ("string(duration('1.5s'))", {}, "1.5s"),
    ("string(now - timestamp('2026-11-24T12:30:15Z'))", {"now": NOW}, "24h0m0.123s"),
    ("string(now)", {"now": NOW}, "2026-11-25T12:30:15.123+00:00"),
    ("timestamp('2026-11-24')", {}, ERROR),
    ("duration('1d')", {}, ERROR),
    ("duration('1h') + now", {"now": NOW}, ERROR),
    ("type(now) == type(timestamp('2026-01-01T00:00:00Z'))", {"now": NOW}, True),
]


def test_negating_the_least_int_is_an_overflow_not_the_same_int() -> None:
    """The one answer the evaluator does not share: the package gives -(2**63) for
    -(-(2**63)) (it wraps around); here it is an overflow, as for every other int."""
    expression = compile_expression("-(a + int(0))")
    assert by_cel(expression, {"a": -(2**63)}) == -(2**63)
    assert outcome(expression, {"a": -(2**63)}) == ERROR


@pytest.mark.parametrize(("source", "variables", "expected"), KNOWN)
def test_known_values_are_those_of_the_package(
    source: str, variables: dict[str, Any], expected: Any
) -> None:
    assert same(value_of(source, variables), expected)


def test_no_whole_history_is_converted_to_read_one_field() -> None:
    """A value is read only as far as the answer needs: a history of runs that are not
    JSON values at all is never looked at by a condition that reads one argument."""
    condition = compile_condition("amount * 2 > 100 || history.exists(h, h.ok)")
    assert condition.evaluate({"amount": 60, "history": [object()] * 3}) is True


# -- arithmetic and conversions, drawn -------------------------------------------------

_NUMBERS = st.one_of(
    st.integers(-20, 20),
    st.sampled_from([0, 1, -1, 2**53, 2**53 + 1, 2**62, 2**63 - 1, -(2**63) + 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.5, 1.5, 1e20, 1e-7, 2.5e300]),
)
_SCALARS = st.one_of(
    _NUMBERS,
    _NUMBERS,
    st.sampled_from(["", "1", "+12", "-3", "1.5", "1e3", "inf", "x", " 1", "12a"]),
    st.booleans(),
    st.none(),
)
_VALUES = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=3))
_LITERALS = ["0", "1", "2", "-1", "3.5", "0.0", "1e3", "'a'", "[1, 2]", "[]", "true", "null"]
_FUNCTIONS = ["int", "double", "string", "size", "type", "dyn"]


def _arithmetic() -> st.SearchStrategy[str]:
    atoms = st.one_of(st.sampled_from(["a", "b", "c", "xs"]), st.sampled_from(_LITERALS))
    return st.recursive(
        atoms,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "%"]), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            inner.map(lambda e: f"-(c + {e})"),  # not of a bool: the package gives -false
            st.tuples(st.sampled_from(_FUNCTIONS), inner).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"[{t[0]}, {t[1]}]"),
        ),
        max_leaves=5,
    )


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    source=_arithmetic(),
    a=_VALUES,
    b=_VALUES,
    c=_NUMBERS,
    xs=st.lists(_NUMBERS, max_size=3),
)
def test_arithmetic_and_conversions_give_what_cel_gives(
    source: str, a: Any, b: Any, c: Any, xs: list[Any]
) -> None:
    value_of(source, {"a": a, "b": b, "c": c, "xs": xs})


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    left=_arithmetic(),
    op=st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
    right=_arithmetic(),
    a=_VALUES,
    b=_VALUES,
    c=_NUMBERS,
)
def test_conditions_that_compute_answer_as_cel_does(
    left: str, op: str, right: str, a: Any, b: Any, c: Any
) -> None:
    try:
        condition = compile_condition(f"{left} {op} {right}")
    except ConditionSyntaxError:
        return  # reads no names and cannot be evaluated: refused at load
    check(condition, {"a": a, "b": b, "c": c, "xs": [1, 2.5]})


# -- maps, map and filter, drawn -------------------------------------------------------

_ELEMENTS = st.one_of(
    st.integers(-3, 3),
    st.floats(-3, 3),
    st.sampled_from(["a", "b", ""]),
    st.booleans(),
    st.none(),
    st.fixed_dictionaries({}, optional={"k": st.sampled_from(["a", "b", 1])}),
)
_BODIES = ["x > 1", "x == 'a'", "x", "x.k", "x.k == 'a'", "x * 2", "string(x)", "[x]", "size(x)"]
_COLLECTION_EXPRESSIONS = st.one_of(
    st.tuples(st.sampled_from(["map", "filter"]), st.sampled_from(_BODIES)).map(
        lambda t: f"xs.{t[0]}(x, {t[1]})"
    ),
    st.tuples(st.sampled_from(_BODIES), st.sampled_from(_BODIES)).map(
        lambda t: f"xs.map(x, {t[0]}, {t[1]})"
    ),
    st.sampled_from(
        [
            "{'a': y, 'b': xs}",
            "{'a': y}.a",
            "{'a': y}['b']",
            "{y: 1}",
            "{'a': y} == {'a': 1}",
            "'a' in {'a': y}",
            "y in {'a': 1, 'b': 2}",
            "m.map(k, k)",
            "m.filter(k, m[k] == y)",
            "m.exists(k, k == y)",
            "size(xs.filter(x, x == y))",
            "xs.map(x, {'v': x})",
            "m[y]",
            "xs[y]",
        ]
    ),
)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    source=_COLLECTION_EXPRESSIONS,
    xs=st.one_of(st.lists(_ELEMENTS, max_size=4), _ELEMENTS),
    y=_ELEMENTS,
    m=st.one_of(st.dictionaries(st.sampled_from(["a", "b"]), _ELEMENTS, max_size=2), _ELEMENTS),
)
def test_maps_and_list_macros_give_what_cel_gives(source: str, xs: Any, y: Any, m: Any) -> None:
    bool_key = source == "{y: 1}" and type(y) is bool  # a map key here: text or a number
    if source.startswith(("m.map", "m.filter")) and type(m) is dict:
        # the package ranges over a map's keys in no fixed order; here in the map's order
        ours = outcome(compile_expression(source), {"m": m, "y": y})
        theirs = by_cel(compile_expression(source), {"m": m, "y": y})
        assert (sorted(ours) if type(ours) is list else ours) == (
            sorted(theirs) if type(theirs) is list else theirs
        )
        assert ours == ERROR or ours == [k for k in m if ours.count(k)]
        return
    value_of(source, {"xs": xs, "y": y, "m": m}, we_refuse=bool_key)


# -- timestamps and durations, drawn ---------------------------------------------------

_MOMENTS = st.datetimes(
    min_value=datetime.datetime(1970, 1, 1),
    max_value=datetime.datetime(2100, 1, 1),
    timezones=st.sampled_from([UTC, datetime.timezone(datetime.timedelta(hours=5, minutes=30))]),
)
_STAMPS = st.one_of(
    _MOMENTS.map(lambda t: t.isoformat()),
    _MOMENTS.map(lambda t: t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")),
    st.sampled_from(["2026-11-24", "bad", "2026-11-24T12:30:15.5Z", "2026-02-30T00:00:00Z"]),
)
_SPANS = st.one_of(
    st.tuples(st.integers(0, 200), st.sampled_from(["h", "m", "s", "ms", "us"])).map(
        lambda t: f"{t[0]}{t[1]}"
    ),
    st.sampled_from(["1h30m", "1.5h", "90s", "0", "2h45m10.5s", "1d", "", "h", "3"]),
)
_TIME_EXPRESSIONS = [
    "t > timestamp(s)",
    "t - timestamp(s)",
    "timestamp(s) + duration(d)",
    "t - duration(d) < t",
    "duration(d) > duration('1h')",
    "duration(d) + duration(d)",
    "string(timestamp(s))",
    "string(duration(d))",
    "string(t)",
    "duration(d).getHours()",
    "duration(d).getMinutes()",
    "duration(d).getSeconds()",
    "duration(d).getMilliseconds()",
    "timestamp(s) == t",
    "t.getFullYear()",
    "t.getMonth()",
    "t.getDate()",
    "t.getDayOfMonth()",
    "t.getDayOfWeek()",
    "t.getDayOfYear()",
    "t.getHours()",
    "t.getMinutes()",
    "t.getSeconds()",
    "t.getMilliseconds()",
    "timestamp(s).getHours()",
]


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.sampled_from(_TIME_EXPRESSIONS), t=_MOMENTS, s=_STAMPS, d=_SPANS)
def test_timestamps_and_durations_give_what_cel_gives(
    source: str, t: datetime.datetime, s: str, d: str
) -> None:
    value_of(source, {"t": t, "s": s, "d": d})
