"""An approval is consumed by exactly one execution of exactly the approved call (issue
16 item 1): the planner proposing the same call again asks again, and no sequence of
proposals and approvals runs a call more times than approvals were given for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import (
    ORDER,
    approval_script,
    call,
    events_of,
    final,
    gate,
    polish,
    refund_variant,
    run,
    runtime_for,
)
from tests.engine.test_state_versions import record_of

from skillwire.core.job import JobRecord, JobStatus, OutcomeClass
from skillwire.engine import JobView, Runtime
from skillwire.engine.state import JobState
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import Executors

FIXTURES = Path(__file__).parent / "fixtures"
REFUND = {"order_id": ORDER, "amount": 750}


async def approve(rt: Runtime, job: JobView, decision: str = "approve") -> JobView:
    """Decide the call ``job`` waits on as the supervisor ``sup``, naming its pause."""
    waiting = job.record.waiting
    assert waiting is not None
    return await rt.resume(
        job.id,
        approval=decision,  # type: ignore[arg-type]
        role="supervisor",
        decided_by="sup",
        correlation_id=waiting.correlation_id,
    )


def refunds(job: JobView) -> list[dict[str, Any]]:
    """The arguments of every process_refund run the job started."""
    return [
        e.data["args"] for e in events_of(job, "tool_started") if e.data["tool"] == "process_refund"
    ]


def test_the_same_call_proposed_again_asks_again(tmp_path: Path) -> None:
    skill = refund_variant(tmp_path / "skill", once_only="")
    script = [
        *approval_script()[:4],
        call("process_refund", "c4", **REFUND),  # the same call, a second time
        final(),
        gate(),
        polish(),
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, "Refund 750 for ORD-12345")
            first = job.record.waiting
            assert first is not None
            job = await approve(rt, job)
            assert refunds(job) == [REFUND]  # the approved call ran once
            assert job.status is JobStatus.PAUSED  # the second proposal waits
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            second = job.record.waiting
            assert second is not None and second.arguments == REFUND
            assert second.correlation_id != first.correlation_id
            job = await approve(rt, job)
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert refunds(job) == [REFUND, REFUND]  # two approvals, two runs
            assert len(events_of(job, "approval_granted")) == 2

    run(main())


class SavesSeen(SQLiteJobStore):
    """The SQLite store, keeping each saved state's grants and call in flight."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.seen: list[tuple[list[bool], str | None]] = []

    async def save(self, job: JobRecord, **kwargs: Any) -> JobRecord:
        """Note what the state holds, then save."""
        flight = job.state.get("in_flight")
        consumed = [bool(g["consumed"]) for g in job.state.get("grants") or ()]
        self.seen.append((consumed, flight["tool"] if flight else None))
        return await super().save(job, **kwargs)


@pytest.mark.parametrize("idempotent", [False, True])
def test_the_grant_is_consumed_in_the_save_that_marks_the_call_in_flight(
    tmp_path: Path, idempotent: bool
) -> None:
    """A crash after that save finds the grant consumed; before it, the call not begun.
    An idempotent tool is saved in flight too when a grant allows it."""
    edits = {"once_only": "    idempotent: true\n"} if idempotent else {}
    skill = refund_variant(tmp_path / "skill", **edits)

    async def main() -> None:
        store = SavesSeen(tmp_path / "jobs.db")
        try:
            rt = Runtime(store, ScriptedModel(approval_script()), executors=Executors())
            job = await approve(rt, await rt.start(skill, "Refund 750 for ORD-12345"))
            assert job.status is JobStatus.COMPLETED
        finally:
            await store.close()
        flights = [i for i, (_, tool) in enumerate(store.seen) if tool == "process_refund"]
        assert flights, store.seen  # the approved call was saved in flight
        assert store.seen[flights[0]][0] == [True]
        assert all(consumed == [False] for consumed, _ in store.seen[: flights[0]] if consumed)

    run(main())


def v2_state(**changes: Any) -> dict[str, Any]:
    """The stored version 2 state (paused for the 750 refund's approval), changed."""
    data: dict[str, Any] = json.loads((FIXTURES / "state_v2.json").read_text())["state"]
    return {**data, **changes}


GRANT_V2 = {"tool": "process_refund", "args": dict(REFUND), "role": "supervisor"}
RUN_V2 = {"tool": "process_refund", "args": dict(REFUND), "result": {}, "ok": True}


def test_a_version_2_grant_whose_call_ran_is_read_as_consumed() -> None:
    base = v2_state()
    ran = v2_state(history=[*base["history"], RUN_V2], grants=[GRANT_V2], pending=None)
    state = JobState.from_dict(ran, 2)
    assert [(g.consumed, g.correlation_id) for g in state.grants] == [(True, "")]
    twice = v2_state(history=[*base["history"], RUN_V2], grants=[GRANT_V2, GRANT_V2])
    state = JobState.from_dict(twice, 2)  # one run consumes one grant, the oldest
    assert [g.consumed for g in state.grants] == [True, False]
    assert state.pending_grants == [state.grants[1].correlation_id] != [""]


def test_a_version_2_grant_of_the_pending_call_allows_it_once(tmp_path: Path) -> None:
    """A version 2 job that crashed after its approval, before the refund ran: recovered,
    the refund runs on that grant, and the same call proposed again asks again."""
    data = json.loads((FIXTURES / "state_v2.json").read_text())
    state = {**data["state"], "grants": [GRANT_V2], "pause_kind": None}
    state = JobState.from_dict(state, 2)
    assert [g.consumed for g in state.grants] == [False]
    assert state.pending_grants == [state.grants[0].correlation_id]
    other = v2_state(grants=[{**GRANT_V2, "args": {**REFUND, "amount": 600}}])
    unbound = JobState.from_dict(other, 2)  # a grant of another call: bound to no pause
    assert unbound.pending_grants == [] and not unbound.grants[0].consumed

    record, events = record_of(data)
    record.status, record.outcome_class, record.waiting = JobStatus.RUNNING, None, None
    record.state = {**data["state"], "grants": [GRANT_V2], "pause_kind": None}
    script = [
        *approval_script()[:4],
        call("process_refund", "c4", **REFUND),  # the same call, a second time
    ]

    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            await store.create(record, events)
            model = ScriptedModel(script)
            model.skip(record.state["model_calls"])
            skill = refund_variant(tmp_path / "skill", once_only="")
            rt = Runtime(store, model, executors=Executors(), skills=lambda _record: skill)
            job = await rt.recover(record.id)
            model.assert_complete()
            assert refunds(job) == [REFUND]
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
        finally:
            await store.close()

    run(main())
