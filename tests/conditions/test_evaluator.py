"""The one evaluator answers as the CEL package does.

For every condition and values, :meth:`CelCondition.evaluate` gives what the package
gives when it runs the same CEL on the same values (:mod:`tests.conditions.oracle`): the
same answer, or an error where the package raises. The only difference allowed: a value
the evaluator does not read (an int beyond 64 bits, which the package turns into a uint
or a double) is an error here when it is read; the gate never passes one.
"""

from __future__ import annotations

import datetime
import decimal
from collections import OrderedDict
from typing import Any

import cel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conditions.oracle import ERROR, by_cel, outcome, same

from skillwire.conditions import (
    CelCondition,
    ConditionEvaluationError,
    ConditionSyntaxError,
    compile_condition,
)


def _beyond_64_bits(value: Any) -> bool:
    if type(value) is int:
        return not -(2**63) <= value < 2**63
    if type(value) in (list, tuple):
        return any(_beyond_64_bits(item) for item in value)
    if type(value) is dict:
        return any(_beyond_64_bits(item) for item in value.values())
    return False


def check(condition: CelCondition, variables: dict[str, Any]) -> Any:
    """The property, for one condition and one set of values; returns our outcome."""
    ours, theirs = outcome(condition, variables), by_cel(condition, variables)
    if ours == ERROR and _beyond_64_bits(variables):
        return ours
    assert same(ours, theirs), f"{condition.expression} {variables!r}: {ours!r}, CEL {theirs!r}"
    return ours


def answer(source: str, variables: dict[str, Any]) -> Any:
    return outcome(compile_condition(source), variables)


# -- the package's semantics, as the evaluator applies them ----------------------------

BIG = 2**53
# (expression, variables, what the package gives); the evaluator gives the same
FACTS: list[tuple[str, dict[str, Any], object]] = [
    # int and double compare as doubles: exact within 2**53 only
    ("a == b", {"a": 1, "b": 1.0}, True),
    ("a == b", {"a": BIG + 1, "b": float(BIG)}, True),  # compared as doubles
    ("a > b", {"a": BIG + 1, "b": float(BIG)}, False),
    ("a == b", {"a": -0.0, "b": 0}, True),
    ("a < b", {"a": -0.0, "b": 0.0}, False),
    # ints beyond 64 bits are uints, then doubles
    ("a == 1", {"a": 2**63}, False),
    ("a > b", {"a": 2**63, "b": 2**63 - 1}, True),
    ("a == b", {"a": 2**64 + 1, "b": 2**64}, True),
    ("type(a) == type(1.0)", {"a": 2**64}, True),
    ("type(a) == type(1)", {"a": 2**63}, False),
    # bools are not numbers; kinds that differ are unequal, not an error
    ("a == 1", {"a": True}, False),
    ("a != 1", {"a": True}, True),
    ("a < 1", {"a": True}, "error"),
    ("a == b", {"a": "1", "b": 1}, False),
    ("a == null", {"a": 0}, False),
    ("a == null", {"a": None}, True),
    ("a < b", {"a": None, "b": None}, "error"),
    ("a == 'x'", {"a": [1]}, False),
    ("a == b", {"a": {}, "b": []}, False),
    ("type(a) == 'string'", {"a": "x"}, False),
    ("a < b", {"a": False, "b": True}, True),
    ("a < b", {"a": [1], "b": [2]}, "error"),
    # NaN equals nothing and is not ordered
    ("a == a", {"a": float("nan")}, False),
    ("a != a", {"a": float("nan")}, True),
    ("a < 1.0", {"a": float("nan")}, "error"),
    ("a in [a]", {"a": float("nan")}, False),
    # strings order by code point (not by UTF-16 unit)
    ("a < b", {"a": "\uffff", "b": "\U00010000"}, True),
    ("size(a) == 7", {"a": "h\U0001f600é"}, True),  # UTF-8 bytes, not characters
    ("a.size() == 2", {"a": "é"}, True),
    # && and || are commutative over errors; ! of a non-bool is an error
    ("a.b && false", {"a": {}}, False),
    ("false && a.b", {"a": {}}, False),
    ("a.b || true", {"a": {}}, True),
    ("a.b && true", {"a": {}}, "error"),
    ("a && false", {"a": "x"}, False),
    ("a || false", {"a": 1}, "error"),
    ("!a", {"a": None}, "error"),
    # selections and indexes: absent or on the wrong kind is an error
    ("a.b == 1", {"a": {"b": 1}}, True),
    ("a.b == 1", {"a": [1]}, "error"),
    ("a['b'] == 1", {"a": {"b": 1}}, True),
    ("a[1] == 1", {"a": [1]}, "error"),
    ("a[0.0] == 1", {"a": [1]}, "error"),
    ("a[b] == 2", {"a": [1, 2], "b": True}, "error"),
    ("has(a.b)", {"a": {"b": None}}, True),
    ("has(a.b)", {"a": {}}, False),
    ("has(a.b)", {"a": []}, "error"),
    ("has(a.b.c)", {"a": {}}, "error"),
    ("a.b.c != 1", {"a": {"b": {}}}, "error"),
    ("a.b.c == 1 || true", {"a": {"b": {}}}, True),
    # membership: heterogeneous equality in a list; string keys of a map
    ("1 in [1.0]", {}, True),
    ("true in [1]", {}, False),
    ("a in b", {"a": "k", "b": {"k": 1}}, True),
    ("a in b", {"a": "k", "b": "kk"}, "error"),
    ("a in b", {"a": None, "b": {"k": 1}}, "error"),
    # macros take the elements in order: an error before the deciding one is the answer
    ("a.exists(x, x > 1)", {"a": [2, "x"]}, True),
    ("a.exists(x, x > 1)", {"a": ["x", 2]}, "error"),
    ("a.all(x, x > 1)", {"a": [0, "x"]}, False),
    ("a.all(x, x > 1)", {"a": ["x", 0]}, "error"),
    ("a.exists_one(x, x > 1)", {"a": [2, "x"]}, "error"),
    ("a.exists_one(x, x > 1)", {"a": [0, 3]}, True),
    ("a.exists(x, x == 'k')", {"a": {"k": 1}}, True),  # a map ranges over its keys
    ("a.exists(x, x == 'k')", {"a": ("k",)}, True),
    ("a.all(x, x > 1)", {"a": []}, True),
    # string methods need strings
    ("a.startsWith('x')", {"a": ["x"]}, "error"),
    ("a.contains('')", {"a": ""}, True),
    # ternary: only the branch taken counts
    ("false ? a.b : true", {"a": {}}, True),
    ("a ? true : false", {"a": 1}, "error"),
]


@pytest.mark.parametrize(("source", "variables", "expected"), FACTS)
def test_the_package_gives_what_the_evaluator_gives(
    source: str, variables: dict[str, Any], expected: object
) -> None:
    condition = compile_condition(source)
    assert by_cel(condition, variables) == expected
    if _beyond_64_bits(variables):
        assert outcome(condition, variables) in (expected, ERROR)
    else:
        assert outcome(condition, variables) == expected


@pytest.mark.parametrize(
    "literal",
    [
        *("''", "'a'", '"b"', "'é'", "'\U0001f600'", "'''x'''", '"""y"""', "'''a\nb'''"),
        *("r'\\d'", "R'\\n'", "'a\\'b'", '"\\"q\\""', "'\\n\\t\\\\'", "'\\a\\b\\f\\v\\r'"),
        *("'\\?\\`'", "'a b'", "r'''\\x'''"),
        *("0", "7", "010", "0x1F", "9223372036854775807", "-9223372036854775808", "-3"),
        *("0.5", ".5", "1e3", "1E-3", "-0.0", "-2.5", "9007199254740993.0", "1.5e300"),
        *("true", "false", "null"),
    ],
)
def test_literals_have_the_value_the_package_gives_them(literal: str) -> None:
    value = cel.compile(literal).execute({})
    assert answer(f"x == {literal}", {"x": value}) is True
    assert answer(f"x == {literal}", {"x": "other"}) is False


def test_a_list_literal_is_a_list() -> None:
    assert answer("x == [1, 'a', null]", {"x": "a"}) is False
    assert answer("x in [1, 'a', null,]", {"x": None}) is True
    assert answer("size([x, 2]) == 2", {"x": 0}) is True
    assert answer("x in []", {"x": 0}) is False


# -- every pair of values at the edges, exhaustively -------------------------------------

EDGE_VALUES: list[Any] = [
    *(0, 1, 2, 3, 4, -1, 500, 500.0, 0.5, -0.0, 1.0, float("nan"), float("inf")),
    *(BIG, BIG + 1, float(BIG), float(BIG + 2), 2**63 - 1, 2**63, -(2**63), -(2**63) - 1),
    *(2**64, 2**70, True, False, None, "", "a", "b", "ab", "é", "\U0001f600", "\uffff"),
    *([], [1], [1.0], ["a"], ("a",), {}, {"k": 1}, {"k": {}}, {"k": {"j": 1}}, {"j": "a"}),
]
PAIRED = [
    *(f"a {op} b" for op in ("==", "!=", "<", "<=", ">", ">=")),
    *(f"size(a) {op} b" for op in ("==", "<", ">=")),
    *(f"a.k {op} b" for op in ("==", "!=", "<")),
    *("a.k.j == b", "a.k.j != b", "a in b", "a[0] == b", "type(a) == type(b)", "has(a.k)"),
    *("a.startsWith(b)", "a.contains(b)", "a && b", "a || b", "!a", "a ? b : false"),
    *("[a].exists(x, x == b)", "[b, a].all(x, x != a)", "a.exists_one(x, x == b)"),
]


@pytest.mark.parametrize("source", PAIRED)
def test_every_pair_of_edge_values_gives_what_cel_gives(source: str) -> None:
    """Exhaustively, where the rules for values live; quick, so every run checks them."""
    condition = compile_condition(source)
    for a in EDGE_VALUES:
        for b in EDGE_VALUES:
            check(condition, {"a": a, "b": b})


# -- the property, on random expressions of the subset ----------------------------------

NAMES = ("i", "s", "b", "m", "xs")
_INT_LITERALS = ["0", "1", "2", "-1", "500", "0x1F", "9007199254740992", "9007199254740993"]
_INT_LITERALS += ["9223372036854775807", "-9223372036854775808"]
_LITERALS = [
    *_INT_LITERALS,
    *("0.0", "-0.0", "0.5", "1e3", "500.0", "9007199254740992.0", "1.5e300"),
    *("''", "'a'", '"b"', "'é'", "'\U0001f600'", "'\uffff'", "'k'", "'''a'''", "r'\\d'"),
    *("true", "false", "null", "type('')", "type(1)", "type(null)", "[]", "[1, 'a']"),
]
_ATOMS = [
    *NAMES,
    *("m.k", "m.k.j", "m['k']", "m.tool", "xs[0]", "xs[1]", "size(xs)", "xs.size()"),
    *("size(s)", "type(s)", "type(i)", "[i, 1]", "(i)"),
]
_BOUND = ["x", "x.k", "x.tool", "x[0]", "size(x)", "x.k.j"]
_OPS = ["==", "!=", "<", "<=", ">", ">="]


def _expressions(atoms: st.SearchStrategy[str], *, macros: bool) -> st.SearchStrategy[str]:
    values = st.one_of(atoms, atoms, st.sampled_from(_LITERALS))
    tests = st.one_of(
        st.tuples(values, st.sampled_from(_OPS), values).map(" ".join),
        st.tuples(values, values).map(lambda t: f"{t[0]} in {t[1]}"),
        st.sampled_from(["has(m.k)", "has(m.tool)", "has(m.k.j)", "has(x.k)"]),
        st.tuples(values, st.sampled_from(["startsWith", "endsWith", "contains"]), values).map(
            lambda t: f"({t[0]}).{t[1]}({t[2]})"
        ),
        values,
    )
    if macros:
        bodies = _expressions(st.sampled_from([*_ATOMS, *_BOUND]), macros=False)
        receivers = st.sampled_from(["xs", "m.k", "m", "s", "[1, 'a', i]", "[]", "xs[0]"])
        macro = st.tuples(receivers, st.sampled_from(["exists", "all", "exists_one"]), bodies)
        tests = st.one_of(tests, macro.map(lambda t: f"{t[0]}.{t[1]}(x, {t[2]})"))
    return st.recursive(
        tests,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["&&", "||"]), inner).map(" ".join),
            inner.map(lambda e: f"!({e})"),
            inner.map(lambda e: f"({e})"),
            st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
            st.tuples(inner, st.sampled_from(["==", "!="]), inner).map(
                lambda t: f"({t[0]}) {t[1]} ({t[2]})"
            ),
        ),
        max_leaves=5,
    )


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 600),
    st.sampled_from([BIG, BIG + 1, -BIG - 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64]),
    st.sampled_from([2**70, 0x1F, 500]),
    st.floats(),
    st.sampled_from([-0.0, 0.5, 500.0, float(BIG), float(BIG + 2), float("nan"), 1.5e300]),
    st.sampled_from(["", "a", "b", "é", "k", "\U0001f600", "\uffff", "A", "ab", "tool"]),
    st.text(max_size=3),
)
_KEYS = st.sampled_from(["k", "j", "tool", "a"])
VALUES = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=2).map(tuple),
        st.dictionaries(_KEYS, children, max_size=3),
    ),
    max_leaves=8,
)


_EDGES = [BIG, BIG + 1, float(BIG), 2**63 - 1, 2**63, -(2**63), 2**64, float("nan"), -0.0]
_NUMBERS = st.one_of(st.sampled_from([0, 1, 2, 500, 500.0, 0.5, *_EDGES]), st.floats())
_TEXTS = st.one_of(st.sampled_from(["", "a", "b", "é", "k", "\U0001f600", "\uffff"]), st.text())
_MAPS = st.fixed_dictionaries(
    {},
    optional={
        "k": st.one_of(st.fixed_dictionaries({}, optional={"j": _SCALARS, "a": _SCALARS}), VALUES),
        "tool": st.one_of(_TEXTS, _SCALARS),
        "j": _SCALARS,
    },
)
_TYPED = {  # mostly of the kind the name suggests, so that many answers are given
    "i": st.one_of(_NUMBERS, _NUMBERS, VALUES),
    "s": st.one_of(_TEXTS, _TEXTS, VALUES),
    "b": st.one_of(st.booleans(), st.booleans(), VALUES),
    "m": st.one_of(_MAPS, _MAPS, VALUES),
    "xs": st.one_of(st.lists(st.one_of(_SCALARS, _MAPS), max_size=4), VALUES),
}


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    source=_expressions(st.sampled_from(_ATOMS), macros=True),
    variables=st.fixed_dictionaries(_TYPED),
)
def test_the_evaluator_answers_as_cel_does(source: str, variables: dict[str, Any]) -> None:
    try:
        condition = compile_condition(source)
    except ConditionSyntaxError:  # reads no names and gives no bool: CEL says so at load
        found = cel_value(source)
        assert found is not True and found is not False
        return
    check(condition, variables)


def cel_value(expression: str) -> Any:
    try:
        return cel.compile(expression).execute({})
    except Exception:
        return ERROR


# -- the property, on conditions as skills write them ------------------------------------

REALISTIC = [
    "amount > 500",
    "amount > 500 && currency == 'USD'",
    "history.exists(h, h.tool == 'check_eligibility' && amount > h.result.order_total)",
    "history.exists(h, h.tool == 'verify_identity' && h.ok)",
    "history.all(h, h.tool != 'process_refund' || h.ok)",
    "history.exists_one(h, h.tool == 'process_refund')",
    "file_path contains '.env' or file_path contains 'secret'",
    "file_path ends with '.lock'",
    "file_path not starts with 'src/'",
    "action == 'delete' and branch == 'main'",
    "force == true",
    "not force",
    "role not in ['admin', 'owner']",
    "'admin' in context.roles",
    "context.tier == 'vip' && amount >= 1000.0",
    "counts['process_refund'] < 1",
    "has(args.coupon) && args.coupon == 'X'",
    "size(history) > 3",
    "entities.order_id == args.order_id",
    "history[0].tool == 'verify_identity'",
    "amount > 500 ? context.tier != 'vip' : false",
    "amount = 750",
    "always",
]
_TOOLS = st.sampled_from(["verify_identity", "check_eligibility", "process_refund", "other"])
_RUN = st.fixed_dictionaries(
    {},
    optional={
        "tool": st.one_of(_TOOLS, _SCALARS),
        "args": st.one_of(st.fixed_dictionaries({"order_id": st.just("ORD-1")}), VALUES),
        "result": st.one_of(
            st.fixed_dictionaries({}, optional={"order_total": _SCALARS, "verified": _SCALARS}),
            VALUES,
        ),
        "ok": st.one_of(st.booleans(), _SCALARS),
    },
)
_REALISTIC_VALUES = {
    "amount": st.one_of(st.integers(0, 2000), st.floats(0, 2000), _SCALARS),
    "currency": st.one_of(st.sampled_from(["USD", "EUR"]), _SCALARS),
    "history": st.one_of(st.lists(_RUN, max_size=4), VALUES),
    "file_path": st.one_of(st.sampled_from(["a/.env", "src/x.py", "poetry.lock"]), VALUES),
    "action": st.one_of(st.sampled_from(["delete", "read"]), _SCALARS),
    "branch": st.one_of(st.sampled_from(["main", "dev"]), _SCALARS),
    "force": st.one_of(st.booleans(), _SCALARS),
    "role": st.one_of(st.sampled_from(["admin", "guest"]), VALUES),
    "context": st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "roles": st.one_of(st.lists(st.sampled_from(["admin", "x"])), VALUES),
                "tier": st.one_of(st.sampled_from(["vip", "basic"]), _SCALARS),
            },
        ),
        VALUES,
    ),
    "counts": st.one_of(st.fixed_dictionaries({"process_refund": st.integers(0, 2)}), VALUES),
    "args": st.one_of(
        st.fixed_dictionaries({}, optional={"coupon": _SCALARS, "order_id": _SCALARS}), VALUES
    ),
    "entities": st.one_of(st.fixed_dictionaries({"order_id": _SCALARS}), VALUES),
}


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.sampled_from(REALISTIC), data=st.data())
def test_realistic_conditions_answer_as_cel_does(source: str, data: st.DataObject) -> None:
    condition = compile_condition(source)
    names = sorted(condition.names)
    variables = data.draw(st.fixed_dictionaries({name: _REALISTIC_VALUES[name] for name in names}))
    check(condition, variables)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.sampled_from(REALISTIC[:-1]), data=st.data())
def test_a_missing_name_is_an_error(source: str, data: st.DataObject) -> None:
    condition = compile_condition(source)
    names = sorted(condition.names)
    given_values = data.draw(
        st.fixed_dictionaries({}, optional={name: _REALISTIC_VALUES[name] for name in names})
    )
    check(condition, given_values)
    if len(given_values) < len(names):
        assert outcome(condition, given_values) == "error"


# -- what the evaluator answers -----------------------------------------------------------

RUNS = [
    {
        "tool": "verify_identity",
        "args": {"order_id": "ORD-12345"},
        "result": {"verified": True, "customer_id": "CUST-1"},
        "ok": True,
    },
    {
        "tool": "check_eligibility",
        "args": {"order_id": "ORD-12345", "amount": 750},
        "result": {"eligible": True, "order_total": 900.0, "reason": "within policy"},
        "ok": True,
    },
]
ELIGIBLE = "history.exists(h, h.tool == 'check_eligibility' && amount > h.result.order_total)"


@pytest.mark.parametrize(
    ("source", "variables", "expected"),
    [
        ("amount > 500", {"amount": 750}, True),
        ("amount > 500", {"amount": 500.0}, False),
        ("amount > 500 && currency == 'USD'", {"amount": 750, "currency": "EUR"}, False),
        (ELIGIBLE, {"history": RUNS, "amount": 750}, False),
        (ELIGIBLE, {"history": RUNS, "amount": 950}, True),
        (ELIGIBLE, {"history": [], "amount": 950}, False),
        ("history.exists(h, h.tool == 'verify_identity' && h.ok)", {"history": RUNS}, True),
        ("history.all(h, h.ok)", {"history": RUNS}, True),
        ("file_path contains '.env' or file_path contains 'secret'", {"file_path": "a"}, False),
        ("file_path contains '.env'", {"file_path": ["x", ".env"]}, True),
        ("file_path contains '.env'", {"file_path": {".env": 1}}, True),
        ("file_path ends with '.lock'", {"file_path": "poetry.lock"}, True),
        ("role not in ['admin', 'owner']", {"role": "guest"}, True),
        ("'admin' in context.roles", {"context": {"roles": ["admin"], "x": 1}}, True),
        ("counts['process_refund'] < 1", {"counts": {"process_refund": 0}}, True),
        ("has(args.coupon) && args.coupon == 'X'", {"args": {}}, False),
        ("size(history) > 1", {"history": RUNS}, True),
        ("history[0].ok", {"history": RUNS}, True),
        ("not force", {"force": False}, True),
        ("force == 1", {"force": True}, False),
        ("a.missing == 1 && false", {"a": {}}, False),
        ("code.matches('^ORD-[0-9]{5}$')", {"code": "ORD-12345"}, True),
        ("code.matches(p)", {"code": "ORD-1", "p": "[0-9]$"}, True),
    ],
)
def test_the_evaluator_answers_the_common_shapes(
    source: str, variables: dict[str, Any], expected: bool
) -> None:
    assert answer(source, variables) is expected
    assert by_cel(compile_condition(source), variables) is expected


@pytest.mark.parametrize(
    ("source", "variables"),
    [
        ("amount * 2 > total", {"amount": 3, "total": 5.5}),
        ("amount / 2 == 3.5", {"amount": 7}),
        ("name.matches('^' + prefix)", {"name": "abc", "prefix": "a"}),
        ("int(amount) > 5", {"amount": 7.9}),
        ("context == {'tier': 'vip'}", {"context": {"tier": "vip"}}),
        ("type(x) == list", {"x": [1]}),
        ("history.map(h, h.tool).size() > 1", {"history": [{"tool": "a"}, {"tool": "b"}]}),
        ("history.filter(h, h.ok).size() > 0", {"history": [{"ok": False}, {"ok": True}]}),
        ("-amount < 0", {"amount": 3}),
        ("x == '\\x41'", {"x": "A"}),
        ("x == '\\u00e9'", {"x": "\u00e9"}),
        ("timestamp(x) > timestamp('2025-01-01T00:00:00Z')", {"x": "2025-06-01T00:00:00Z"}),
    ],
)
def test_what_the_fast_path_left_to_cel_is_evaluated_here(
    source: str, variables: dict[str, Any]
) -> None:
    assert check(compile_condition(source), variables) is True


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("x == 'a'", "\ud800"),  # a lone surrogate: the package cannot convert it
        ("x == 'a' || true", "\ud800"),
        ("x > 1", 2**2000),
        ("x && false", object()),
        ("x.k == 1", {"k": {1, 2}}),
        ("x.k == 1", OrderedDict(k=1)),
        ("x == 1", decimal.Decimal(1)),
        ("x > 1", datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)),  # a type mismatch
        ("x.exists(y, y == 1)", {1}),
        ("size(x) > 0", b"abc"),
    ],
)
def test_a_value_not_plainly_json_fails_closed(source: str, value: object) -> None:
    assert answer(source, {"x": value}) == ERROR


@pytest.mark.parametrize(
    ("source", "variables"),
    [
        ("flag || amount > 1", {"flag": True}),
        ("flag && amount > 1", {"flag": False}),
        ("xs.exists(x, x > amount)", {"xs": []}),
        ("flag ? true : amount > 1", {"flag": True}),
    ],
)
def test_a_name_skipped_by_the_evaluation_still_needs_a_value(
    source: str, variables: dict[str, Any]
) -> None:
    with pytest.raises(ConditionEvaluationError, match="`amount` has no value"):
        compile_condition(source).evaluate(variables)
