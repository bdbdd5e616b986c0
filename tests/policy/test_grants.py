"""Grants through the gate's API alone: a grant allows one execution of exactly its call
(issue 16 item 1). A consumed grant never allows; a caller that names the proposal's
pauses (``correlation_ids``) lets only the grants answering them allow it; an ``Allow``
says which grants it used."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.policy.helpers import APPROVALS, BIG, REFUND_TOOLS, gate_from

from skillwire.policy import Allow, ApprovalGrant, Gate, GateInputError, NeedApproval


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    """The refund tools, needing a supervisor over 500 and finance over 700."""
    return gate_from(tmp_path, REFUND_TOOLS, APPROVALS)


def grant(role: str, correlation: str = "", *, consumed: bool = False) -> ApprovalGrant:
    """A grant of the 750 refund."""
    return ApprovalGrant("process_refund", dict(BIG), role, correlation, consumed)


def test_a_consumed_grant_does_not_allow(gate: Gate) -> None:
    fresh = [grant("supervisor", "p1"), grant("finance", "p2")]
    assert gate.check("process_refund", BIG, approvals=fresh).kind == "allow"
    used = [grant("supervisor", "p1"), grant("finance", "p2", consumed=True)]
    decision = gate.check("process_refund", BIG, approvals=used)
    assert isinstance(decision, NeedApproval) and decision.approver == "finance"
    every = [grant("supervisor", "p1", consumed=True), grant("finance", "p2", consumed=True)]
    decision = gate.check("process_refund", BIG, approvals=every)
    assert isinstance(decision, NeedApproval) and decision.approver == "supervisor"


def test_an_allow_names_the_grants_it_used(gate: Gate) -> None:
    spare = grant("supervisor", "p0")
    grants = [grant("intern", "x"), spare, grant("supervisor", "p1"), grant("finance", "p2")]
    decision = gate.check("process_refund", BIG, approvals=grants)
    assert isinstance(decision, Allow)
    assert [g.correlation_id for g in decision.grants] == ["p0", "p2"]  # one per role
    small = gate.check("process_refund", {**BIG, "amount": 100}, approvals=grants)
    assert isinstance(small, Allow) and small.grants == ()  # no approval needed, none used


def test_rules_asking_one_role_are_answered_by_one_grant(tmp_path: Path) -> None:
    """Each rule asking a role looks for that role's grant (the search is done once per
    role): one grant answers them all and is named once; a role without a grant is
    asked, whichever of its rules comes first."""
    gate = gate_from(
        tmp_path,
        REFUND_TOOLS,
        APPROVALS + "    - {tool_id: process_refund, when: 'amount > 600', approver: supervisor}\n"
        "    - {tool_id: process_refund, when: 'amount > 740', approver: finance}\n",
    )
    both = [grant("supervisor", "p1"), grant("finance", "p2"), grant("supervisor", "p3")]
    decision = gate.check("process_refund", BIG, approvals=both)
    assert isinstance(decision, Allow)
    assert [g.correlation_id for g in decision.grants] == ["p1", "p2"]
    asked = gate.check("process_refund", BIG, approvals=both[:1])
    assert isinstance(asked, NeedApproval) and asked.approver == "finance"
    assert [r.message for r in asked.reasons] == [
        "process_refund needs finance approval when amount > 700",
        "process_refund needs finance approval when amount > 740",
    ]
    other = {**BIG, "amount": 760}
    stale = gate.check("process_refund", other, approvals=both)  # grants of another call
    assert isinstance(stale, NeedApproval) and stale.approver == "supervisor"


def test_only_grants_of_the_named_pauses_allow(gate: Gate) -> None:
    grants = [grant("supervisor", "p1"), grant("finance", "p2")]
    named = gate.check("process_refund", BIG, approvals=grants, correlation_ids=["p1", "p2"])
    assert named.kind == "allow"
    other = gate.check("process_refund", BIG, approvals=grants, correlation_ids=["p1", "p9"])
    assert isinstance(other, NeedApproval) and other.approver == "finance"
    fresh = gate.check("process_refund", BIG, approvals=grants, correlation_ids=())
    assert isinstance(fresh, NeedApproval) and fresh.approver == "supervisor"


def test_a_text_is_one_correlation_id_not_its_letters(gate: Gate) -> None:
    grants = [grant("supervisor", "p"), grant("finance", "1")]
    decision = gate.check("process_refund", BIG, approvals=grants, correlation_ids="p1")
    assert decision.kind == "need_approval"
    both = [grant("supervisor", "p1"), grant("finance", "p1")]
    assert gate.check("process_refund", BIG, approvals=both, correlation_ids="p1").allowed


def test_a_grant_with_no_correlation_id_answers_no_named_pause(gate: Gate) -> None:
    grants = [grant("supervisor"), grant("finance")]
    assert gate.check("process_refund", BIG, approvals=grants).allowed  # nothing named
    decision = gate.check("process_refund", BIG, approvals=grants, correlation_ids=[""])
    assert decision.kind == "need_approval"


def test_what_is_not_a_grant_or_an_id_is_the_callers_bug(gate: Gate) -> None:
    bad = ApprovalGrant("process_refund", dict(BIG), "supervisor", "p1", "yes")  # type: ignore[arg-type]
    with pytest.raises(GateInputError, match=r"approvals\[0\]\.consumed"):
        gate.check("process_refund", BIG, approvals=[bad])
    odd = ApprovalGrant("process_refund", dict(BIG), "supervisor", "\ud800")
    with pytest.raises(GateInputError, match=r"approvals\[0\]\.correlation_id"):
        gate.check("process_refund", BIG, approvals=[odd])
    with pytest.raises(GateInputError, match=r"correlation_ids\[1\]"):
        gate.check("process_refund", BIG, correlation_ids=["p1", 2])  # type: ignore[list-item]
    with pytest.raises(GateInputError, match="correlation_ids"):
        gate.check("process_refund", BIG, correlation_ids={"p1"})  # type: ignore[arg-type]


@pytest.mark.parametrize("ids", [("p1", 2), ["p1", None], [b"p1"], {"p1": True}, 7])
def test_correlation_ids_of_any_kind_are_checked(gate: Gate, ids: object) -> None:
    """A tuple or list of ids skips the sequence check by its exact type; every id in
    it, and any other kind of value, is still checked."""
    with pytest.raises(GateInputError, match="correlation_ids"):
        gate.check("process_refund", BIG, correlation_ids=ids)  # type: ignore[arg-type]


class _Id(str):
    """An id that says it equals every other."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


@pytest.mark.parametrize("given", ["p1\udc80", "\ud800p1", _Id("p1"), 1, None])
def test_a_grants_correlation_id_must_be_utf8_text(gate: Gate, given: object) -> None:
    odd = ApprovalGrant("process_refund", dict(BIG), "supervisor", given)  # type: ignore[arg-type]
    with pytest.raises(GateInputError, match=r"approvals\[0\]\.correlation_id"):
        gate.check("process_refund", BIG, approvals=[odd], correlation_ids=["p1"])
