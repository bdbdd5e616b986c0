"""The gate's API refuses Python values that are not plain JSON (issue 16, item 8).

What the caller keeps about the job (``history``, ``approvals``, ``context``,
``entities``, ``inputs``, ``intent``) must be plain JSON: anything else raises
:class:`GateInputError` naming the path. The proposal itself (``tool``, ``args``,
``stated_tool``, ``stated_args``, ``effects``) is never a reason to raise: a value in it
that is not plain JSON blocks the call.
"""

from __future__ import annotations

import enum
import functools
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.policy.helpers import REFUND_TOOLS, codes, gate_from, skill_from

from skillwire.policy import ApprovalGrant, Gate, GateInputError, ReasonCode, ToolRun
from skillwire.policy.gate_input import (
    MAX_DEPTH,
    checked_correlations,
    checked_intents,
    checked_texts,
)

ORDER = "ORD-12345"
ONE: Any = 1


class Anything(int):
    """An int that says it equals everything."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = int.__hash__


class Agreeable(str):
    """Text that says it equals everything."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


class Tier(enum.IntEnum):
    GOLD = 1


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    return gate_from(
        tmp_path,
        REFUND_TOOLS,
        """
        policy:
          guardrails:
            never:
              - rule: "Never refund more than the order total"
                tool: process_refund
                when: >-
                  history.exists(h, h.tool == 'check_eligibility' && h.ok
                  && h.args.order_id == order_id && amount > h.result.order_total)
          workflows:
            - {name: refund, required: true, same: order_id,
               steps: [verify_identity, check_eligibility, process_refund]}
          approvals:
            - {tool_id: process_refund, when: "amount > 500", approver: supervisor}
        """,
    )


def _history(total: Any = 900.0, order: Any = ORDER) -> list[ToolRun]:
    return [
        ToolRun("verify_identity", {"order_id": order}, {"verified": True}),
        ToolRun("check_eligibility", {"order_id": order, "amount": 1}, {"order_total": total}),
    ]


def test_a_grant_whose_amount_equals_anything_is_refused(gate: Gate) -> None:
    grant = ApprovalGrant(
        "process_refund", {"order_id": ORDER, "amount": Anything(600)}, "supervisor"
    )
    with pytest.raises(GateInputError) as caught:
        gate.check(
            "process_refund",
            {"order_id": ORDER, "amount": 800},
            history=_history(),
            approvals=[grant],
        )
    assert caught.value.path == "approvals[0].args.amount"
    assert "Anything" in str(caught.value) and "approvals[0].args.amount" in str(caught.value)
    assert isinstance(caught.value, TypeError)


def test_an_infinite_total_in_history_is_refused(gate: Gate) -> None:
    with pytest.raises(GateInputError) as caught:
        gate.check(
            "process_refund",
            {"order_id": ORDER, "amount": 400},
            history=_history(total=float("inf")),
        )
    assert caught.value.path == "history[1].result.order_total"
    assert "inf" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_a_history_key_that_equals_anything_is_refused(gate: Gate) -> None:
    with pytest.raises(GateInputError) as caught:
        gate.check(
            "process_refund",
            {"order_id": "ORD-55555", "amount": 40},
            history=_history(order=Agreeable(ORDER)),
        )
    assert caught.value.path == "history[0].args.order_id"


def test_a_proposal_with_a_value_that_equals_anything_is_blocked(gate: Gate) -> None:
    grant = ApprovalGrant("process_refund", {"order_id": ORDER, "amount": 600}, "supervisor")
    decision = gate.check(
        "process_refund",
        {"order_id": ORDER, "amount": Anything(800)},
        history=_history(),
        approvals=[grant],
    )
    assert codes(decision) == [ReasonCode.ARGUMENT_INVALID]
    assert "amount" in decision.reasons[0].message
    stated = gate.check(
        "process_refund",
        {"order_id": ORDER, "amount": 600},
        history=_history(),
        approvals=[grant],
        stated_args={"amount": Anything(1)},
    )
    assert stated.kind == "block"
    effects = gate.check("verify_identity", {"order_id": ORDER}, effects=[Agreeable("x")])
    assert effects.kind == "block"


NOT_PLAIN: list[tuple[str, Any, str]] = [
    ("an int subclass", {"tier": Tier.GOLD}, "context.tier"),
    ("a tuple", {"ids": (1, 2)}, "context.ids"),
    ("a set", {"ids": {1}}, "context.ids"),
    ("an object", {"who": object()}, "context.who"),
    ("a key that is not text", {1: "x"}, "context"),
    ("nan in a list", {"scores": [1.0, float("nan")]}, "context.scores[1]"),
    ("a lone surrogate", {"name": "caf\udce9"}, "context.name"),
    ("a lone surrogate in a key", {"caf\udce9": 1}, "context"),
    ("a number past 64 bits", {"n": 2**70}, "context.n"),
    ("a key with a dot", {"a.b": {"c": float("inf")}}, 'context["a.b"].c'),
]


@pytest.mark.parametrize(("what", "context", "path"), NOT_PLAIN, ids=[n[0] for n in NOT_PLAIN])
def test_context_that_is_not_plain_json_is_refused(
    gate: Gate, what: str, context: dict[Any, Any], path: str
) -> None:
    with pytest.raises(GateInputError) as caught:
        gate.check("verify_identity", {"order_id": ORDER}, context=context)
    assert caught.value.path == path, what


def test_entities_inputs_and_intent_are_checked_too(gate: Gate) -> None:
    with pytest.raises(GateInputError, match=r"entities\.amount"):
        gate.check("verify_identity", {"order_id": ORDER}, entities={"amount": float("-inf")})
    with pytest.raises(GateInputError, match=r"inputs\.identity\.email"):
        gate.check("verify_identity", {"order_id": ORDER}, inputs={"identity": {"email": b"x"}})
    with pytest.raises(GateInputError, match="intent"):
        gate.check("verify_identity", {"order_id": ORDER}, intent=Agreeable("refund"))


def test_history_and_approvals_must_hold_the_gates_own_types(gate: Gate) -> None:
    run: Any = {"tool": "verify_identity", "args": {"order_id": ORDER}}
    with pytest.raises(GateInputError, match=r"history\[0\]"):
        gate.check("verify_identity", {"order_id": ORDER}, history=[run])
    with pytest.raises(GateInputError, match=r"history\[0\]\.ok"):
        gate.check(
            "verify_identity",
            {"order_id": ORDER},
            history=[ToolRun("verify_identity", {}, None, ONE)],
        )
    with pytest.raises(GateInputError, match=r"approvals\[0\]\.role"):
        gate.check(
            "verify_identity",
            {"order_id": ORDER},
            approvals=[ApprovalGrant("verify_identity", {}, Agreeable("supervisor"))],
        )


def test_deep_nesting_is_refused(gate: Gate) -> None:
    deep: Any = "bottom"
    for _ in range(300):
        deep = [deep]
    with pytest.raises(GateInputError, match="deeper than") as caught:
        gate.check("verify_identity", {"order_id": ORDER}, context={"deep": deep})
    assert caught.value.path.startswith("context.deep[0][0]")
    decision = gate.check("verify_identity", {"order_id": ORDER, "note": deep})
    assert codes(decision) == [ReasonCode.ARGUMENT_INVALID]


def test_plain_values_pass_and_a_refused_run_stays_refused(gate: Gate) -> None:
    history = _history()
    context = {"tier": "gold", "limits": [1, 2.5, None, True], "nested": {"a": {"b": []}}}
    args = {"order_id": ORDER, "amount": 400}
    assert gate.check("process_refund", args, history=history, context=context).allowed
    fresh = _history(total=float("inf"))
    with pytest.raises(GateInputError):
        gate.check("process_refund", args, history=fresh)
    with pytest.raises(GateInputError):  # a run that failed the check is checked again
        gate.check("process_refund", args, history=fresh)


@functools.cache
def _plain_gate() -> Gate:
    """A gate of the refund tools with no rules, shared by the property's examples."""
    with tempfile.TemporaryDirectory() as tmp:
        return Gate.for_skill(skill_from(Path(tmp), REFUND_TOOLS))


def _nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


def test_the_depth_limit_is_the_documented_one(gate: Gate) -> None:
    assert MAX_DEPTH == 254
    # context is one level; the lists inside it make up the rest
    ok = gate.check("verify_identity", {"order_id": ORDER}, context={"d": _nested(253)})
    assert ok.allowed
    with pytest.raises(GateInputError, match="deeper than 254"):
        gate.check("verify_identity", {"order_id": ORDER}, context={"d": _nested(254)})


BAD_LEAVES = st.sampled_from(
    [
        (Anything(3), "subclass of int"),
        (Agreeable("x"), "subclass of str"),
        (Tier.GOLD, "subclass of int"),
        (float("inf"), "not a finite number"),
        (float("nan"), "not a finite number"),
        ((1, 2), "tuple"),
        (frozenset(), "frozenset"),
        (b"x", "bytes"),
        ("\ud800", "lone surrogate"),
        (-(2**63) - 1, "64 bits"),
    ]
)
STEPS = st.lists(st.one_of(st.sampled_from(["a", "total", "x_1"]), st.integers(0, 2)), max_size=5)
PLAIN_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text("ab", max_size=3))


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    bad=BAD_LEAVES,
    steps=STEPS,
    where=st.sampled_from(["context", "entities", "inputs", "result", "args", "grant"]),
)
def test_a_value_that_is_not_plain_anywhere_is_found_and_named(
    data: st.DataObject, bad: tuple[Any, str], steps: list[str | int], where: str
) -> None:
    """Wrapped in random lists and objects (with plain siblings), placed in any part of
    the caller's state, a value that is not plain JSON raises with its exact path."""
    value, problem = bad
    path = ""
    for step in reversed(steps):
        if isinstance(step, int):
            siblings = data.draw(st.lists(PLAIN_LEAVES, min_size=step, max_size=step))
            value = [*siblings, value]
            path = f"[{step}]{path}"
        else:
            value = {
                **data.draw(st.dictionaries(st.sampled_from("bcd"), PLAIN_LEAVES)),
                step: value,
            }
            path = f".{step}{path}"
    gate = _plain_gate()
    kwargs: dict[str, Any] = {}
    if where in ("context", "entities", "inputs"):
        kwargs[where] = {"v": value}
        expected = f"{where}.v{path}"
    elif where == "result":
        kwargs["history"] = [ToolRun("verify_identity", {"order_id": ORDER}, value)]
        expected = f"history[0].result{path}"
    elif where == "args":
        kwargs["history"] = [ToolRun("verify_identity", {"order_id": ORDER, "v": value})]
        expected = f"history[0].args.v{path}"
    else:
        kwargs["approvals"] = [ApprovalGrant("verify_identity", {"v": value}, "supervisor")]
        expected = f"approvals[0].args.v{path}"
    with pytest.raises(GateInputError) as caught:
        gate.check("verify_identity", {"order_id": ORDER}, **kwargs)
    assert caught.value.path == expected
    assert problem in caught.value.problem


def test_huge_numbers_are_named_not_printed(gate: Gate) -> None:
    """Python refuses to print an integer past 4,300 digits (a ValueError): a message
    about one must not try to."""
    big = 10**5000
    for tool, args in (
        (big, {}),
        ("process_refund", {big: 1}),
        ("process_refund", {"order_id": ORDER, "amount": big}),
    ):
        decision = gate.check(tool, args)  # type: ignore[arg-type]
        assert decision.kind == "block", decision
    stated = gate.check("verify_identity", {"order_id": ORDER}, stated_args={"x": [big]})
    assert "16610 bits" in stated.reasons[0].message
    for context in ({"n": big}, {big: 1}):
        with pytest.raises(GateInputError) as caught:
            gate.check("verify_identity", {"order_id": ORDER}, context=context)
        assert len(str(caught.value)) < 200


class _Texts(Sequence[object]):
    """A sequence that is neither a list nor a tuple: looked at one item at a time."""

    def __init__(self, items: list[object]) -> None:
        self._items = items

    def __getitem__(self, index: Any) -> Any:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)


TEXTS = st.lists(
    st.one_of(
        st.text(max_size=4),
        st.sampled_from(["", "a", "é", "\ud800", "x\udfff", "refund"]),
        st.builds(Agreeable, st.sampled_from(["refund", "a", ""])),  # equals everything
        st.integers(0, 2),
        st.none(),
    ),
    max_size=4,
)
"""Items a caller may pass as intents, user texts or correlation ids (some wrong: a
str subclass that says it equals everything must never take the fast path)."""


def _outcome(check: Any, given: object) -> object:
    """What ``check`` gives, or the path and message of the error it raises."""
    try:
        return check(given)
    except GateInputError as exc:
        return ("GateInputError", str(exc))


@settings(max_examples=300, deadline=None)
@given(items=TEXTS, kind=st.sampled_from([list, tuple]))
def test_the_fast_paths_for_lists_of_text_agree_with_the_item_by_item_checks(
    items: list[object], kind: type
) -> None:
    """Intents, user texts and correlation ids given as a list or a tuple of ASCII text
    take a fast path: it must answer as the checks of each item do."""
    given, slow = kind(items), _Texts(items)
    intents = functools.partial(checked_intents, None)
    assert _outcome(intents, given) == _outcome(intents, slow)
    assert _outcome(checked_texts, given) == _outcome(checked_texts, slow)
    assert _outcome(checked_correlations, given) == _outcome(checked_correlations, slow)
