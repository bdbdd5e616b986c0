"""Pauses for input and for approval: the waiting object, invalid input, roles, the
approved arguments, denials, what a paused job spends, and the re-check on resume."""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path

import pytest
from tests.engine.helpers import (
    ORDER,
    approval_script,
    call,
    decide,
    events_of,
    final,
    gate,
    input_script,
    intent,
    kinds,
    polish,
    refund_variant,
    run,
    runtime_for,
)

from skillwire.core.errors import ConflictError, ForbiddenError, NotFoundError, UsageError
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.skills import load_skill

CONTRACT = (
    "reason_code",
    "requested_fields",
    "prompt_message",
    "correlation_id",
    "created_at",
    "last_prompt_at",
)


def test_the_waiting_object_field_for_field(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", input_script()) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), "I want a refund of $750")
            as_dict = job.to_dict()
            assert (as_dict["status"], as_dict["outcome_class"]) == (
                "paused",
                "USER_ACTION_REQUIRED",
            )
            waiting = as_dict["waiting"]
            assert set(CONTRACT) <= set(waiting)
            assert waiting["reason_code"] == "MISSING_REQUIRED_INPUT"
            assert waiting["requested_fields"] == ["order_id"]
            assert "order id" in waiting["prompt_message"].lower()
            assert uuid.UUID(waiting["correlation_id"]).version == 4
            created = datetime.fromisoformat(waiting["created_at"])
            assert created.tzinfo is not None
            assert waiting["last_prompt_at"] == waiting["created_at"]
            assert waiting["field_schemas"]["order_id"]["pattern"] == "^ORD-[0-9]{5}$"
            stored = await rt.store.get(job.id)
            assert stored is not None and stored.waiting is not None
            assert stored.waiting.to_dict() == waiting
            paused = events_of(job, "paused")
            assert len(paused) == 1 and paused[0].data["waiting"] == waiting

    run(main())


def test_invalid_input_keeps_the_job_paused_under_the_same_correlation_id(
    tmp_path: Path, refund_yaml: Path
) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", input_script()) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "I want a refund of $750")
            first = job.record.waiting
            assert first is not None
            calls, state = len(model.calls), dict(job.record.state)
            job = await rt.resume(job.id, input={"order_id": "12345"})
            again = job.record.waiting
            assert again is not None
            assert job.status is JobStatus.PAUSED
            assert job.record.outcome_class is OutcomeClass.USER_ACTION_REQUIRED
            assert again.correlation_id == first.correlation_id
            assert again.created_at == first.created_at
            assert again.last_prompt_at > first.last_prompt_at
            assert again.error is not None and again.error.startswith("order_id:")
            assert "does not match" in again.error
            assert (again.reason_code, again.requested_fields) == (
                first.reason_code,
                first.requested_fields,
            )
            rejected = events_of(job, "input_rejected")
            assert len(rejected) == 1 and rejected[0].message == again.error
            assert len(events_of(job, "paused")) == 1  # never a second ask
            assert len(model.calls) == calls
            for counter in ("iterations", "model_calls"):
                assert job.record.state[counter] == state[counter]
            job = await rt.resume(job.id, input={"other": 1})
            assert job.record.waiting is not None
            assert job.record.waiting.error == "order_id is missing"
            job = await rt.resume(job.id, input={"order_id": ORDER})
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED

    run(main())


def test_an_input_pause_rechecks_the_same_call_without_the_planner(
    tmp_path: Path, refund_yaml: Path
) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", input_script()) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "I want a refund of $750")
            iterations = job.record.state["iterations"]
            before = len(job.events)
            job = await rt.resume(job.id, input={"order_id": ORDER})
            after = [e.kind for e in job.events[before:]]
            # resumed, re-checked and ran before the planner's next proposal
            first_proposal = after.index("proposal")
            assert after[:first_proposal] == [
                "input_received",
                "status",
                "gate_decision",
                "tool_started",
                "tool_finished",
            ]
            decision = job.events[before + 2]
            assert decision.data["decision"] == "allow"
            assert decision.data["args"] == {"order_id": ORDER}
            assert model.calls[2].stage == "planner"  # the next call is for the next step
            planner_turns = [c for c in model.calls if c.stage == "planner"]
            assert len(planner_turns) == 3  # verify (once), check, refund
            assert job.record.state["iterations"] == iterations + 2

    run(main())


def test_input_given_once_is_not_asked_for_again(tmp_path: Path, refund_yaml: Path) -> None:
    script = input_script()
    script[2] = call("check_eligibility", "c2", amount=750)  # the planner omits order_id

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), "I want a refund of $750")
            job = await rt.resume(job.id, input={"order_id": ORDER})
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            applied = events_of(job, "inputs_applied")
            assert [(e.data["tool"], e.data["inputs"]) for e in applied] == [
                ("check_eligibility", {"order_id": ORDER})
            ]
            assert (
                len(
                    [
                        e
                        for e in events_of(job, "paused")
                        if e.reason_code == "MISSING_REQUIRED_INPUT"
                    ]
                )
                == 1
            )

    run(main())


def test_only_the_named_role_may_approve(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", approval_script()) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Refund 750 for ORD-12345")
            for role in ("clerk", None, "Supervisor"):
                with pytest.raises(ForbiddenError, match="only the role 'supervisor'"):
                    await decide(rt, job.id, "approve", role=role)
            with pytest.raises(ForbiddenError):
                await decide(rt, job.id, "deny", role="clerk")
            with pytest.raises(UsageError, match="approve or deny"):
                await rt.resume(job.id, input={"order_id": ORDER}, role="supervisor")
            still = await rt.view(job.id)
            assert still.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            assert still.record.version == job.record.version  # nothing was written
            assert len(model.calls) == 4
            job = await decide(rt, job.id, "approve", role="supervisor")
            assert job.status is JobStatus.COMPLETED
            granted = events_of(job, "approval_granted")
            assert [(e.data["role"], e.data["args"]) for e in granted] == [
                ("supervisor", {"order_id": ORDER, "amount": 750})
            ]

    run(main())


def test_an_approval_binds_the_approved_arguments(tmp_path: Path) -> None:
    skill = refund_variant(tmp_path / "skill", once_only="")
    script = [
        *approval_script()[:4],
        call("process_refund", "c4", order_id=ORDER, amount=600),
        final(),
        gate(),
        polish(),
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, "Refund 750 for ORD-12345")
            first = job.record.waiting
            assert first is not None and first.arguments == {"order_id": ORDER, "amount": 750}
            job = await decide(rt, job.id, "approve", role="supervisor")
            ran = [
                e.data["args"]
                for e in events_of(job, "tool_started")
                if e.data["tool"] == "process_refund"
            ]
            assert ran == [{"order_id": ORDER, "amount": 750}]
            second = job.record.waiting
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            assert second is not None and second.arguments == {"order_id": ORDER, "amount": 600}
            assert second.correlation_id != first.correlation_id
            job = await decide(rt, job.id, "deny", role="supervisor")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert len(ran) == 1

    run(main())


def test_a_denial_tells_the_planner_and_the_tool_never_runs(
    tmp_path: Path, refund_yaml: Path
) -> None:
    script = approval_script()[:4]  # a denied request asks no gate and no polisher
    script.append(
        final(
            "The refund was not approved.",
            {"order_id": ORDER, "status": "denied", "next_steps": "none"},
        )
    )

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Refund 750 for ORD-12345")
            job = await decide(rt, job.id, "deny", role="supervisor")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert job.record.outcome_class is OutcomeClass.DENIED
            assert "process_refund" not in [e.data["tool"] for e in events_of(job, "tool_started")]
            denied = events_of(job, "approval_denied")
            assert len(denied) == 1 and denied[0].reason_code == "APPROVAL_DENIED"
            told = [m for m in model.calls[4].messages if m.role == "tool"][-1]
            assert told.tool_call_id == "c3"
            assert told.content.startswith("DENIED by supervisor: process_refund did not run")
            assert job.record.state["pending"] is None

    run(main())


def test_a_paused_job_spends_no_iteration_and_no_model_call(
    tmp_path: Path, refund_yaml: Path
) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", input_script()) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "I want a refund of $750")
            counters = {k: job.record.state[k] for k in ("iterations", "model_calls")}
            for _ in range(3):
                await rt.resume(job.id, input={"order_id": "bad"})
                with pytest.raises(UsageError):
                    await decide(rt, job.id, "approve", role="supervisor")
            stored = await rt.view(job.id)
            assert {k: stored.record.state[k] for k in counters} == counters
            assert len(model.calls) == counters["model_calls"] == 2
            assert len(stored.model_calls) == 2
            assert stored.record.status is JobStatus.PAUSED

    run(main())


def test_resume_refuses_what_it_cannot_apply(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", input_script()) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), "I want a refund of $750")
            with pytest.raises(NotFoundError):
                await rt.resume("no-such-job", input={"order_id": ORDER})
            with pytest.raises(ConflictError, match="another correlation id"):
                await rt.resume(job.id, input={"order_id": ORDER}, correlation_id="stale")
            with pytest.raises(UsageError, match="waits for input: order_id"):
                await rt.resume(job.id)
            waiting = job.record.waiting
            assert waiting is not None
            job = await rt.resume(
                job.id, input={"order_id": ORDER}, correlation_id=waiting.correlation_id
            )
            with pytest.raises(ConflictError, match="another correlation id"):
                await decide(
                    rt,
                    job.id,
                    "approve",
                    role="supervisor",
                    correlation_id=waiting.correlation_id,
                )
            job = await decide(rt, job.id, "approve", role="supervisor")
            with pytest.raises(ConflictError, match="is completed, not paused"):
                await decide(rt, job.id, "approve", role="supervisor")

    run(main())


def test_an_empty_message_is_refused(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", []) as (rt, _):
            with pytest.raises(UsageError, match="empty"):
                await rt.start(load_skill(refund_yaml), "   ")
            assert await rt.store.list() == []

    run(main())


def test_out_of_domain_ends_without_planning(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", [intent(None)]) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "What's the weather?")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert job.record.outcome_class is OutcomeClass.OUT_OF_DOMAIN
            assert job.record.reply == "I can only help with orders and refunds"
            assert kinds(job)[-2:] == ["out_of_domain", "status"]

    run(main())


def test_a_denied_call_proposed_again_is_not_asked_again(tmp_path: Path, refund_yaml: Path) -> None:
    script = approval_script()
    refused = {"order_id": ORDER, "status": "denied", "next_steps": "none"}
    script[4:] = [
        call("process_refund", "c4", order_id=ORDER, amount=750.0),  # the same call again
        final("The refund was not approved.", refused),
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Refund 750 for ORD-12345")
            job = await decide(rt, job.id, "deny", role="supervisor")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert len(events_of(job, "paused")) == 1
            again = events_of(job, "denied_before")
            assert len(again) == 1 and again[0].reason_code == "APPROVAL_DENIED"
            told = [m for m in model.calls[5].messages if m.role == "tool"][-1]
            assert told.tool_call_id == "c4" and told.content.startswith("DENIED earlier")

    run(main())


def test_a_summary_is_the_stored_job_without_its_events(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", approval_script()) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), "Refund 750 for ORD-12345", detail=False)
            assert not job.detailed and job.events == [] and job.model_calls == []
            as_dict = job.to_dict()
            assert "events" not in as_dict and "model_calls" not in as_dict
            full = await rt.view(job.id)
            assert full.detailed and full.events
            assert full.to_dict() == {
                **as_dict,
                "events": full.to_dict()["events"],
                "model_calls": full.to_dict()["model_calls"],
            }
            assert full.record.state == job.record.state
            summary = await rt.view(job.id, detail=False)
            assert summary.record.version == job.record.version and not summary.detailed

    run(main())
