"""Conditions over a job's history and context answer as CEL does on the whole values;
what a condition reads of a name is known at load."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conditions.test_evaluator import check

from skillwire.conditions import History, compile_condition
from skillwire.policy import ToolRun


@pytest.mark.parametrize(
    ("source", "fields"),
    [
        ("context.tier == 'vip' && !has(context.banned)", {"tier", "banned"}),
        ("facts.total > 1 && facts.items.exists(i, i > 2)", {"total", "items"}),
        ("amount > 1", set()),
        ("size(context) > 2", None),
        ("context == {'tier': 'vip'}", None),
        ("'tier' in context", None),
        ("context.exists(k, k == 'tier')", None),
        ("context['tier'] == 'vip'", None),
    ],
)
def test_the_fields_a_condition_reads_are_known_at_load(
    source: str, fields: set[str] | None
) -> None:
    found = compile_condition(source).fields_read("context" if "context" in source else "facts")
    assert found == (None if fields is None else frozenset(fields))


def test_a_history_condition_makes_only_the_maps_of_the_runs_it_reaches() -> None:
    runs = [ToolRun("check", {"order": f"A-{i}"}, {"total": i}) for i in range(50)]
    history = History(runs)
    condition = compile_condition("history.exists(h, h.tool == 'check' && h.result.total > 47)")
    assert condition.evaluate({"history": history}) is True
    assert len(history._maps) == 49  # the 50th run never became a map
    first = History(runs)
    assert compile_condition("history[0].args.order == 'A-0'").evaluate({"history": first})
    assert len(first._maps) == 1


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("size(history) == 3", True),
        ("history == history.map(h, h)", True),
        ("count(history) == 3", True),
        ("history[2].result.total == 2", True),
        ("history.filter(h, h.result.total > 0).size() == 2", True),
        ("'check' in history.map(h, h.tool)", True),
        ("type(history) == list", True),
        ("(history + [1]).size() == 4", True),
    ],
)
def test_the_history_view_reads_as_the_list_of_its_runs(source: str, expected: bool) -> None:
    runs = [ToolRun("check", {"order": f"A-{i}"}, {"total": i}) for i in range(3)]
    condition = compile_condition(source)
    assert condition.evaluate({"history": History(runs)}) is expected
    check(condition, {"history": [run.as_dict() for run in runs]})


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
def test_history_conditions_answer_as_cel_does(
    source: str, history: Any, context: Any, amount: float, counts: dict[str, int]
) -> None:
    condition = compile_condition(source)
    variables = {"history": history, "context": context, "amount": amount, "counts": counts}
    check(condition, variables)


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
    check(compile_condition(f"amount {op} {literal}"), {"amount": value})
