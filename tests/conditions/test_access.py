"""Narrowing variables to what a condition reads never changes its answer."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillwire.conditions import CelCondition, ConditionEvaluationError, compile_condition
from skillwire.conditions.access import Access


def outcome(condition: CelCondition, variables: dict[str, Any]) -> object:
    try:
        return condition.evaluate(variables)
    except ConditionEvaluationError:
        return "error"


def cel_only(condition: CelCondition) -> CelCondition:
    """The same condition, always evaluated by CEL (no fast path)."""
    slow = compile_condition(condition.source)
    object.__setattr__(slow, "_fast", None)  # slots: a plain attribute, set for the test
    return slow


def unnarrowed(condition: CelCondition) -> CelCondition:
    """The same condition, evaluated by CEL on whole values."""
    whole = cel_only(condition)
    object.__setattr__(whole, "_narrowed", ())
    return whole


def narrowed(source: str, name: str) -> Access:
    return dict(compile_condition(source)._narrowed)[name]


RUNS = [
    {"tool": "verify", "args": {"order": "A-1"}, "result": {"ok": True}, "ok": True},
    {"tool": "check", "args": {"order": "A-1"}, "result": {"total": 900.0}, "ok": True},
    {"tool": "refund", "args": {"order": "A-2", "amount": 5}, "result": "done", "ok": False},
]


def test_a_history_condition_sees_only_the_runs_and_fields_it_can_read() -> None:
    access = narrowed("history.exists(h, h.tool == 'check' && amount > h.result.total)", "history")
    assert access.narrow(RUNS) == [{"tool": "check", "result": {"total": 900.0}}]


def test_size_keeps_every_element_but_still_projects_fields() -> None:
    source = "size(history) > 0 && history.exists(h, h.tool == 'check' && h.result.total > 1)"
    assert narrowed(source, "history").narrow(RUNS) == [
        {"tool": "verify", "result": {}},
        {"tool": "check", "result": {"total": 900.0}},
        {"tool": "refund", "result": "done"},  # not a map: passed as it is, CEL says why
    ]


def test_all_drops_the_elements_its_disjunct_makes_true() -> None:
    access = narrowed("history.all(h, h.tool != 'refund' || h.ok)", "history")
    assert access.narrow(RUNS) == [{"tool": "refund", "ok": False}]


def test_a_map_keeps_the_fields_selected_and_has_sees_absence() -> None:
    access = narrowed("context.tier == 'vip' && !has(context.banned)", "context")
    assert access.narrow({"tier": "vip", "user": "u1", "roles": ["a"]}) == {"tier": "vip"}
    assert access.narrow({"tier": "vip", "banned": True}) == {"tier": "vip", "banned": True}


@pytest.mark.parametrize(
    "source",
    [
        "history[0].tool == 'check'",
        "history.map(h, h.tool).size() > 1",
        "history.filter(h, h.ok).size() > 1",
        "size(context) > 2",
        "context == {'tier': 'vip'}",
        "'tier' in context",
        "history.exists(h, h == {'tool': 'x'})",
    ],
)
def test_a_value_used_whole_is_passed_whole(source: str) -> None:
    name = "history" if "history" in source else "context"
    assert name not in dict(compile_condition(source)._narrowed)


@pytest.mark.parametrize(
    ("source", "kept"),
    [
        ("history.exists(h, h.tool == 'check' && h.result.total > 1)", 1),
        ("history.all(h, h.result.total > 1)", 1),
        ("history.exists_one(h, h.result.total > 1)", 2),  # counts duplicates
        ("size(history) > 2 && history.exists(h, h.result.total > 1)", 2),
    ],
)
def test_identical_narrowed_elements_count_once_where_that_cannot_matter(
    source: str, kept: int
) -> None:
    runs = [{**RUNS[1], "args": {"order": f"A-{i}"}} for i in range(2)]  # differ elsewhere
    assert len(narrowed(source, "history").narrow(runs)) == kept
    condition = compile_condition(source)
    variables = {"history": runs, "amount": 1}
    assert outcome(condition, variables) == outcome(unnarrowed(condition), variables)


def test_two_macros_over_one_list_keep_every_element() -> None:
    source = "history.exists(h, h.tool == 'a') || history.exists(h, h.tool == 'b')"
    assert narrowed(source, "history").keep is None


# -- the property: answers and errors are those of CEL on the whole values ---------------

_ATOMS = [
    "h.tool == 'A'",
    "'B' == h.tool",
    "h.tool != 'A'",
    "h.ok",
    "h.result.total > amount",
    "amount >= h.result.total",
    "has(h.result.total)",
    "h.args.order == 'X'",
    "size(h.args) > 1",
    "h.result == {'total': 5}",
    "'total' in h.result",
    "h.args.items.exists(i, i == 'A')",
    "h.result.status.startsWith('ok')",
    "h.tool in ['A', 'C']",
    "h.args.items.all(i, i != 'A')",
    'h.tool == "C"',
    "h.tool == 'A\\'s'",
]
_TOPS = [
    "size(history) > 1",
    "history.size() == 0",
    "history[0].tool == 'A'",
    "context.tier == 'vip'",
    "has(context.tier)",
    "context.tier.startsWith('v')",
    "size(context) > 2",
    "history.map(h, h.tool).size() > 0",
    "history.filter(h, h.ok).size() > 0",
    "counts.A > 1",
]


def _bodies() -> st.SearchStrategy[str]:
    atoms = st.one_of(st.sampled_from(_ATOMS[:3]), st.sampled_from(_ATOMS))  # tools: often
    return st.recursive(
        atoms,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["&&", "||"]), inner).map(
                lambda t: f"{t[0]} {t[1]} {t[2]}"
            ),
            inner.map(lambda b: f"({b})"),
            inner.map(lambda b: f"!({b})"),
        ),
        max_leaves=4,
    )


def _conditions() -> st.SearchStrategy[str]:
    macro = st.tuples(st.sampled_from(["exists", "all", "exists_one"]), _bodies()).map(
        lambda t: f"history.{t[0]}(h, {t[1]})"
    )
    top = st.one_of(macro, macro, st.sampled_from(_TOPS))
    return st.recursive(
        top,
        lambda inner: st.tuples(inner, st.sampled_from(["&&", "||"]), inner).map(
            lambda t: f"{t[0]} {t[1]} {t[2]}"
        ),
        max_leaves=3,
    )


_SCALARS = st.one_of(
    st.sampled_from(["A", "B", "C", "ok-1", "X", "A's"]),
    st.integers(-3, 1000),
    st.floats(-5, 1000, allow_nan=False),
    st.booleans(),
    st.none(),
)


def _maybe(key: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(st.just({}), values.map(lambda v: {key: v}))


def _runs() -> st.SearchStrategy[Any]:
    args = st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "order": st.sampled_from(["X", "Y"]),
                "items": st.lists(st.sampled_from(["A", "B", 3]), max_size=3),
                "extra": _SCALARS,
            },
        ),
        _SCALARS,
    )
    result = st.one_of(
        st.fixed_dictionaries(
            {}, optional={"total": _SCALARS, "status": st.sampled_from(["ok", "no", 1])}
        ),
        st.lists(_SCALARS, max_size=2),
        _SCALARS,
    )
    run = st.fixed_dictionaries(
        {},
        optional={
            "tool": st.one_of(st.sampled_from(["A", "B", "C"]), _SCALARS),
            "ok": st.one_of(st.booleans(), _SCALARS),
            "args": args,
            "result": result,
        },
    )
    repeated = st.lists(run, min_size=1, max_size=3).flatmap(
        lambda pool: st.lists(st.sampled_from(pool), max_size=6)
    )  # the same runs again: duplicates after narrowing
    return st.one_of(st.lists(run, max_size=5), repeated, st.just({"tool": "A"}), _SCALARS)


def _contexts() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {}, optional={"tier": st.sampled_from(["vip", "basic", 3]), "user": _SCALARS}
        ),
        _SCALARS,
    )


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    source=_conditions(),
    history=_runs(),
    context=_contexts(),
    amount=st.one_of(st.integers(0, 1000), st.floats(0, 1000)),
    counts=st.one_of(st.just({}), st.just({"A": 2, "B": 0})),
)
def test_narrowing_never_changes_an_answer_or_an_error(
    source: str, history: Any, context: Any, amount: float, counts: dict[str, int]
) -> None:
    condition = compile_condition(source)
    variables = {"history": history, "context": context, "amount": amount, "counts": counts}
    expected = outcome(unnarrowed(condition), variables)
    assert outcome(cel_only(condition), variables) == expected, source
    assert outcome(condition, variables) == expected, source  # with the fast path


# -- `name op literal` is answered in Python: the same answers as CEL ----------------------

_LITERALS = ["500", "500.0", "-3", "0.5", "1e3", "9007199254740992", "'b'", '"x"', "''", "'é'"]
_VALUES = st.one_of(
    st.integers(-(2**60), 2**60),
    st.integers(-600, 1100),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([500, 500.0, -3, 0.5, 1000, 9007199254740992, 9007199254740993.0]),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), -0.0, 2**53 + 1, -(2**63)]),
    st.text(max_size=3),
    st.sampled_from(["b", "x", "", "é", "a", "bb"]),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=1),
)


@settings(max_examples=800, deadline=None)
@given(
    op=st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "="]),
    literal=st.sampled_from(_LITERALS),
    value=_VALUES,
)
def test_simple_comparisons_answer_as_cel_does(op: str, literal: str, value: Any) -> None:
    condition = compile_condition(f"amount {op} {literal}")
    assert condition._fast is not None
    variables = {"amount": value}
    assert outcome(condition, variables) == outcome(cel_only(condition), variables)
