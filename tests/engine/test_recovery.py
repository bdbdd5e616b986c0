"""Crash safety, in process: the engine saves where it must, and a crash at any save
(before it is written or just after) leaves a job that recovery takes to its end, with
no non-idempotent tool run twice and no event or model call lost from the record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import (
    ORDER,
    CountingStore,
    Crash,
    SwitchModel,
    approval_script,
    continue_script,
    decide,
    drive,
    events_of,
    fresh_script,
    input_script,
    ledger_runs,
    ledger_skill,
    run,
)

from skillwire.core.errors import NotFoundError, UsageError
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import JobView, Runtime
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore
from skillwire.tools import Executors

FLOWS = {
    "approval": (approval_script, "Refund 750 for ORD-12345", 5),
    "input": (input_script, "I want a refund of $750", 7),
}
"""Each flow: its script, its message, and how many writes it takes without a crash."""


async def first_pass(store: SQLiteJobStore, skill: Skill, flow: str) -> str | None:
    """Run the flow as a user would (start, give input, approve); the job id, or None
    when a crash came before the job was created."""
    script, message, _ = FLOWS[flow]
    model = SwitchModel()
    runtime = Runtime(store, model, executors=Executors())
    job_id = None
    try:
        fresh_script(model, script())
        job = await runtime.start(skill, message, detail=False)
        job_id = job.id
        while job.status is JobStatus.PAUSED:
            if job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED:
                job = await decide(runtime, job.id, "approve", role="supervisor", detail=False)
            else:
                job = await runtime.resume(job.id, input={"order_id": ORDER}, detail=False)
    except Crash:
        listed = await store.list()
        return listed[0].id if listed else None
    return job_id


async def crashed_pass(
    db: Path, skill_file: Path, flow: str, crash_at: int, after_write: bool = True
) -> str | None:
    """:func:`first_pass` on a store that dies at write ``crash_at`` (before or after it
    lands); the job id, or None when the crash came before the job was created."""
    crashing = CountingStore(db, crash_at=crash_at, after_write=after_write)
    try:
        return await first_pass(crashing, load_skill(skill_file), flow)
    finally:
        await crashing.close()


def check_record(job: JobView) -> None:
    """Events and model calls are numbered 1..n with no gap: nothing was lost."""
    assert [e.seq for e in job.events] == list(range(1, len(job.events) + 1))
    assert [c.seq for c in job.model_calls] == list(range(1, len(job.model_calls) + 1))
    assert job.record.state["event_seq"] == len(job.events)


@pytest.mark.parametrize("flow", list(FLOWS))
def test_the_engine_saves_only_where_crash_safety_needs_it(tmp_path: Path, flow: str) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")

    async def main() -> None:
        store = CountingStore(tmp_path / "jobs.db")
        try:
            job_id = await first_pass(store, load_skill(skill_file), flow)
            assert job_id is not None
            job = await Runtime(store, SwitchModel(), executors=Executors()).view(job_id)
        finally:
            await store.close()
        assert job.status is JobStatus.COMPLETED
        # create, each pause, the claim of each resume that starts with an idempotent
        # tool, before and after the refund, the end
        assert store.writes == FLOWS[flow][2]
        check_record(job)
        assert ledger_runs(ledger)[("process_refund", f"{job_id}:2")] == 1

    run(main())


CASES = [
    (flow, k, after)
    for flow, (_, _, writes) in FLOWS.items()
    for k in range(1, writes + 1)
    for after in (False, True)
]


@pytest.mark.parametrize(("flow", "crash_at", "after_write"), CASES)
def test_a_crash_at_any_save_is_recovered(
    tmp_path: Path, flow: str, crash_at: int, after_write: bool
) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    script = FLOWS[flow][0]()

    async def main() -> None:
        job_id = await crashed_pass(tmp_path / "jobs.db", skill_file, flow, crash_at, after_write)
        if job_id is None:  # the crash came before the job existed
            assert crash_at == 1 and not after_write
            return
        store = SQLiteJobStore(tmp_path / "jobs.db")  # a new process, in effect
        try:
            model = SwitchModel()
            job = await drive(
                Runtime(store, model, executors=Executors()), model, job_id, script, ledger
            )
        finally:
            await store.close()
        assert job.status is JobStatus.COMPLETED, [e.kind for e in job.events]
        check_record(job)
        runs = ledger_runs(ledger)
        refunds = {key: n for (tool, key), n in runs.items() if tool == "process_refund"}
        assert refunds == {f"{job_id}:2": 1}
        operator = events_of(job, "operator_decided")
        writes = FLOWS[flow][2]
        in_flight_saved = (crash_at, after_write) in ((writes - 2, True), (writes - 1, False))
        assert bool(operator) == in_flight_saved
        if operator:
            # marked in flight, then died: the refund did not run; died before its
            # result was saved: it did
            before_it = crash_at == FLOWS[flow][2] - 2 and after_write
            assert [e.data["outcome"] for e in operator] == ["not_run" if before_it else "ran"]

    run(main())


def test_an_interrupted_idempotent_tool_runs_again(tmp_path: Path) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    script = input_script()

    async def main() -> None:
        # write 3 is the resume's claim, made with verify_identity in flight
        job_id = await crashed_pass(tmp_path / "jobs.db", skill_file, "input", 3)
        assert job_id is not None
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            model = SwitchModel()
            runtime = Runtime(store, model, executors=Executors())
            stored = await store.get(job_id)
            assert stored is not None and stored.state["in_flight"]["tool"] == "verify_identity"
            continue_script(model, stored, script)
            job = await runtime.recover(job_id)
            rerun = events_of(job, "tool_rerun")
            assert [e.data["idempotency_key"] for e in rerun] == [f"{job_id}:0"]
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
        finally:
            await store.close()
        # the claim was saved before the tool ran, so this is its only run
        assert ledger_runs(ledger)[("verify_identity", f"{job_id}:0")] == 1

    run(main())


async def _interrupted_refund(tmp_path: Path) -> tuple[SQLiteJobStore, str, Path]:
    """A job whose refund was marked in flight when the process died."""
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    job_id = await crashed_pass(tmp_path / "jobs.db", skill_file, "approval", 3)
    assert job_id is not None
    return SQLiteJobStore(tmp_path / "jobs.db"), job_id, ledger


async def _recovered(
    store: SQLiteJobStore, job_id: str, script: list[dict[str, Any]]
) -> tuple[Runtime, SwitchModel, JobView]:
    """A new runtime recovers the interrupted job ``job_id``, its model going on with
    ``script`` where the job's stored calls left it."""
    model = SwitchModel()
    runtime = Runtime(store, model, executors=Executors())
    stored = await store.get(job_id)
    assert stored is not None
    continue_script(model, stored, script)
    return runtime, model, await runtime.recover(job_id)


@pytest.mark.parametrize("outcome", ["ran", "not_run"])
def test_an_interrupted_non_idempotent_tool_waits_for_an_operator(
    tmp_path: Path, outcome: str
) -> None:
    script = approval_script()

    async def main() -> None:
        store, job_id, ledger = await _interrupted_refund(tmp_path)
        try:
            runtime, _, job = await _recovered(store, job_id, script)
            assert job.status is JobStatus.PAUSED
            assert job.record.outcome_class is OutcomeClass.OPERATOR_ACTION_REQUIRED
            waiting = job.record.waiting
            assert waiting is not None
            assert (waiting.reason_code, waiting.requested_fields) == (
                "TOOL_INTERRUPTED",
                ["outcome"],
            )
            assert waiting.tool == "process_refund"
            assert waiting.arguments == {"order_id": ORDER, "amount": 750}
            assert "not idempotent" in waiting.prompt_message
            with pytest.raises(UsageError, match="outcome=ran"):
                await runtime.resume(job_id, input={"outcome": "maybe"})
            job = await runtime.resume(job_id, input={"outcome": outcome})
        finally:
            await store.close()
        assert job.status is JobStatus.COMPLETED
        runs = ledger_runs(ledger)[("process_refund", f"{job_id}:2")]
        assert runs == (0 if outcome == "ran" else 1)
        results = [h["result"] for h in job.record.state["history"]]
        assert (results[-1] == {"recovered": True}) == (outcome == "ran")

    run(main())


def test_recover_leaves_paused_and_finished_jobs_alone(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        model = SwitchModel()
        runtime = Runtime(store, model, executors=Executors())
        try:
            fresh_script(model, approval_script())
            paused = await runtime.start(load_skill(refund_yaml), "Refund 750 for ORD-12345")
            again = await runtime.recover(paused.id)
            assert again.record.version == paused.record.version
            assert await runtime.recover_all() == []
            with pytest.raises(NotFoundError):
                await runtime.recover("nope")
        finally:
            await store.close()

    run(main())


def test_recover_all_continues_every_stranded_job(tmp_path: Path) -> None:
    skill_file, _ = ledger_skill(tmp_path / "skill")

    async def main() -> None:
        ids = []
        for n in range(3):  # each dies right after its creation
            found = await crashed_pass(tmp_path / "jobs.db", skill_file, "approval", 1)
            assert found is not None
            ids.append(found)
            assert len(set(ids)) == n + 1
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            model = _FreshScripts(approval_script())
            recovered = await Runtime(store, model, executors=Executors()).recover_all()
            assert sorted(recovered) == sorted(ids)
            for job_id in ids:
                record = await store.get(job_id)
                assert record is not None
                assert record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
        finally:
            await store.close()

    run(main())


class _FreshScripts(SwitchModel):
    """A fresh script for every job: a new one starts at each intent call."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        super().__init__()
        self.replies = replies

    async def complete(self, request: Any) -> Any:
        """Start the script over at each job's first call."""
        if request.stage == "intent":
            fresh_script(self, self.replies)
        return await super().complete(request)


def test_an_operator_who_says_ran_gives_the_result_the_job_finishes_on(tmp_path: Path) -> None:
    script = approval_script()
    result = {"order_id": ORDER, "status": "refunded", "refund_id": "RF-12345-75000"}

    async def main() -> None:
        store, job_id, ledger = await _interrupted_refund(tmp_path)
        try:
            runtime, model, job = await _recovered(store, job_id, script)
            assert job.record.waiting is not None
            assert "result" in job.record.waiting.prompt_message
            with pytest.raises(UsageError, match="result"):
                await runtime.resume(job_id, input={"outcome": "not_run", "result": result})
            with pytest.raises(UsageError, match="result"):
                await runtime.resume(job_id, input={"outcome": "ran", "result": float("nan")})
            job = await runtime.resume(job_id, input={"outcome": "ran", "result": result})
            assert model.current is not None
            planner = model.current.calls[-3]  # then the gate and the polisher
            told = [m for m in planner.messages if m.role == "tool"][-1]
        finally:
            await store.close()
        assert job.status is JobStatus.COMPLETED
        assert job.record.state["history"][-1]["result"] == result
        assert told.tool_call_id == "c3" and "RF-12345-75000" in told.content
        decided = events_of(job, "operator_decided")[-1]
        assert decided.data["result_given"] is True
        assert ledger_runs(ledger)[("process_refund", f"{job_id}:2")] == 0

    run(main())
