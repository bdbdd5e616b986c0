"""Facts: named expressions a skill declares once, computed once per gate check, read
by every condition; the helpers they use; inputs and the job's clock in conditions."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conditions.test_evaluator import check
from tests.policy.helpers import gate_from, skill_from

from skillwire.conditions import RUNS_KEY, Runs, compile_condition, compile_expression
from skillwire.core.errors import SkillError
from skillwire.policy import Allow, Block, Gate, NeedApproval, ReasonCode, ToolRun
from skillwire.policy.explain import explain_skill
from skillwire.policy.gate_input import GateInputError

NOW = datetime.datetime(2026, 11, 25, 12, 0, tzinfo=datetime.UTC)

BOOKING = """
facts:
  reservation: "latest('get_reservation', {'reservation_id': args.reservation_id}).result"
  hours_left: "days_between(now, facts.reservation.departure) * 24"
  total_paid: "sum(history.filter(h, h.tool == 'pay').map(h, h.args.amount))"
tools:
  - name: get_reservation
    inputs: [{name: reservation_id, type: string, required: true}]
  - name: pay
    inputs: [{name: amount, type: number, required: true}]
  - name: cancel
    inputs: [{name: reservation_id, type: string, required: true}]
    policy:
      conditions:
        - when: >-
            facts.reservation.fare == 'basic'
            and not (normalize(inputs.reason) contains 'medical')
          action: deny
          message: basic fares need a medical reason
        - when: "facts.hours_left < 24"
          action: require_approval
          approver: supervisor
        - when: "facts.total_paid > 1000"
          action: require_approval
          approver: cfo
"""


def _look_up(rid: str, fare: str, hours: float) -> ToolRun:
    departure = (NOW + datetime.timedelta(hours=hours)).isoformat()
    return ToolRun(
        "get_reservation", {"reservation_id": rid}, {"fare": fare, "departure": departure}
    )


def _cancel(
    gate: Gate,
    rid: str,
    history: list[ToolRun],
    reason: str,
    now: datetime.datetime | None = NOW,
) -> Any:
    return gate.check(
        "cancel", {"reservation_id": rid}, history=history, inputs={"reason": reason}, now=now
    )


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    return gate_from(tmp_path, BOOKING)


def test_a_rule_reads_a_fact_and_the_users_reason(gate: Gate) -> None:
    history = [_look_up("R1", "basic", 100), _look_up("R2", "flex", 100)]
    blocked = gate.check(
        "cancel",
        {"reservation_id": "R1"},
        history=history,
        inputs={"reason": "Change of plans"},
        now=NOW,
    )
    assert isinstance(blocked, Block)
    (reason,) = blocked.reasons
    assert reason.code is not ReasonCode.CONDITION_UNEVALUABLE and "medical" in reason.message
    assert 'reservation = {"departure"' in reason.message and '"fare": "basic"' in reason.message
    allowed = gate.check(
        "cancel",
        {"reservation_id": "R1"},
        history=history,
        inputs={"reason": " MEDICAL  leave"},
        now=NOW,
    )
    assert isinstance(allowed, Allow)
    other = gate.check(
        "cancel", {"reservation_id": "R2"}, history=history, inputs={"reason": "plans"}, now=NOW
    )
    assert isinstance(other, Allow)  # the flex reservation, not the last one looked up


def test_the_latest_look_up_of_that_reservation_counts(gate: Gate) -> None:
    history = [_look_up("R1", "flex", 100), _look_up("R1", "basic", 100)]
    decision = gate.check(
        "cancel", {"reservation_id": "R1"}, history=history, inputs={"reason": "plans"}, now=NOW
    )
    assert isinstance(decision, Block)


def test_a_fact_against_the_jobs_clock(gate: Gate) -> None:
    history = [_look_up("R1", "flex", 5)]
    decision = gate.check(
        "cancel", {"reservation_id": "R1"}, history=history, inputs={"reason": "x"}, now=NOW
    )
    assert isinstance(decision, NeedApproval)
    assert "hours_left = 5.0" in decision.reasons[0].message
    later = gate.check(
        "cancel",
        {"reservation_id": "R1"},
        history=[_look_up("R1", "flex", 500)],
        inputs={"reason": "x"},
        now=NOW,
    )
    assert isinstance(later, Allow)


def test_without_a_clock_or_a_look_up_the_rules_fail_closed(gate: Gate) -> None:
    no_clock = gate.check(
        "cancel",
        {"reservation_id": "R1"},
        history=[_look_up("R1", "flex", 500)],
        inputs={"reason": "x"},
    )
    assert isinstance(no_clock, NeedApproval)  # the approval cannot be evaluated: asked
    assert "hours_left has no value" in no_clock.reasons[0].message
    no_look_up = gate.check("cancel", {"reservation_id": "R9"}, inputs={"reason": "x"}, now=NOW)
    assert isinstance(no_look_up, Block)  # the deny rule cannot be evaluated: blocked


def test_an_aggregate_fact(gate: Gate) -> None:
    history = [_look_up("R1", "flex", 500)]
    history += [ToolRun("pay", {"amount": a}, {"ok": True}) for a in (400, 400.5, 300)]
    decision = gate.check(
        "cancel", {"reservation_id": "R1"}, history=history, inputs={"reason": "x"}, now=NOW
    )
    assert isinstance(decision, NeedApproval) and decision.approver == "cfo"
    assert "total_paid = 1100.5" in decision.reasons[0].message


def test_facts_are_computed_once_per_check_and_only_when_read(gate: Gate, monkeypatch: Any) -> None:
    calls: list[str] = []
    original = Runs.latest

    def counted(self: Runs, tool: Any, match: Any = None) -> Any:
        calls.append(tool)
        return original(self, tool, match)

    monkeypatch.setattr(Runs, "latest", counted)
    gate.check("pay", {"amount": 5}, history=[_look_up("R1", "flex", 500)], now=NOW)
    assert calls == []  # no rule of pay reads a fact
    gate.check(
        "cancel", {"reservation_id": "R1"}, history=[_look_up("R1", "flex", 500)],
        inputs={"reason": "x"}, now=NOW,
    )  # fmt: skip
    assert calls == ["get_reservation"]  # three rules, two facts reading it: once


def test_now_must_be_a_timezone_aware_datetime(gate: Gate) -> None:
    with pytest.raises(GateInputError, match="now"):
        gate.check("pay", {"amount": 1}, now=datetime.datetime(2026, 1, 1))  # naive
    with pytest.raises(GateInputError, match="now"):
        gate.check("pay", {"amount": 1}, now="2026-01-01")  # type: ignore[arg-type]


def test_explain_shows_each_fact_and_the_rules_reading_it(tmp_path: Path) -> None:
    facts = {f["name"]: f for f in explain_skill(skill_from(tmp_path, BOOKING))["facts"]}
    assert list(facts) == ["reservation", "hours_left", "total_paid"]
    assert any("basic fares" in r for r in facts["reservation"]["read_by"])
    assert len(facts["hours_left"]["read_by"]) == 1
    assert facts["reservation"]["source"].endswith(":2:3")


@pytest.mark.parametrize(
    ("facts", "condition", "message"),
    [
        ({"1bad": "1"}, "true", "is not a name"),
        ({"a": "args.x +"}, "true", "fact 'a' is invalid"),
        ({"a": "facts.b", "b": "1"}, "true", "not declared before it"),
        ({"a": "facts.a"}, "true", "not declared before it"),
        ({"a": "size(facts) > 0"}, "true", "reads `facts` whole"),
        ({"a": "1"}, "facts.b > 0", "is not a fact of this skill"),
        ({"a": "1"}, "size(facts) > 0", "reads `facts` whole"),
        ({"a": "amount"}, "true", "not a name this skill defines"),
    ],
)
def test_bad_facts_are_load_errors(
    tmp_path: Path, facts: dict[str, str], condition: str, message: str
) -> None:
    lines = "\n".join(f"  {json_key(k)}: {json_key(v)}" for k, v in facts.items())
    with pytest.raises(SkillError, match=message):
        skill_from(
            tmp_path,
            f"facts:\n{lines}\n",
            f"""
            tools:
              - name: pay
                inputs: [{{name: amount, type: number, required: true}}]
                policy:
                  conditions: [{{when: {json_key(condition)}, action: deny}}]
            """,
        )


def json_key(text: str) -> str:
    import json

    return json.dumps(text)


# -- the helpers: the fast path and CEL give the same ------------------------------------

HELPER_CONDITIONS = [
    "sum(xs) > 3",
    "min(xs) < 2",
    "max(xs) == 4",
    "count(xs) == 3",
    "normalize(t) == 'a b'",
    "days_between(a, b) > 1",
    "latest('get', {'id': k}) == null",
    "latest('get').result.v > 1",
    "latest('get', {'id': k}).result.v == 2",
]
_NUMBER = st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False))
_ANY = st.one_of(_NUMBER, st.text(max_size=3), st.none(), st.booleans())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    source=st.sampled_from(HELPER_CONDITIONS),
    xs=st.one_of(st.lists(_NUMBER, max_size=4), st.lists(_ANY, max_size=3), _ANY),
    t=st.one_of(st.text(" aAbB\t", max_size=6), _ANY),
    a=st.sampled_from(["2026-01-01", "2026-01-03T00:00:00Z", "bad", 3]),
    b=st.sampled_from(["2026-01-05", "2026-01-01T12:00:00+02:00"]),
    k=st.sampled_from(["A", "B", 1]),
    runs=st.lists(
        st.builds(
            lambda tool, key, v: ToolRun(tool, {"id": key}, {"v": v}),
            st.sampled_from(["get", "other"]),
            st.sampled_from(["A", "B"]),
            _ANY,
        ),
        max_size=4,
    ),
)
def test_the_helpers_answer_alike_on_both_paths(
    source: str, xs: Any, t: Any, a: Any, b: Any, k: Any, runs: list[ToolRun]
) -> None:
    condition = compile_condition(source)
    variables = {"xs": xs, "t": t, "a": a, "b": b, "k": k, RUNS_KEY: Runs(runs)}
    check(condition, variables)


def test_a_value_expression_gives_its_value() -> None:
    runs = Runs([ToolRun("get", {"id": "A"}, {"v": [1, 2]}), ToolRun("get", {"id": "B"}, {})])
    found = compile_expression("latest('get', {'id': 'A'}).result.v")
    assert found.evaluate({RUNS_KEY: runs}) == [1, 2]
    assert compile_expression("latest('get')").evaluate({RUNS_KEY: runs})["args"] == {"id": "B"}
    assert compile_expression("latest('none')").evaluate({RUNS_KEY: runs}) is None
    assert compile_expression("sum([1, 2]) * 2").evaluate({}) == 6
