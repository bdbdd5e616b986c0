"""Spec 000 section 6.2, the integration table, row by row, on the scripted model.

| Scenario                                       | Expected                       |
| Skill with ``finalization_gate.enabled: false`` | Gate skipped                   |
| Skill with guardrail "never use deleteFile"    | Tool blocked at pre-tool       |
| Skill with approval rule                       | Job pauses for approval        |
| Finalization Gate fails 3 times                | Escalate or return with warning|
"""

from __future__ import annotations

from pathlib import Path

from tests.engine.helpers import (
    FILES_SKILL,
    ORDER,
    approval_script,
    call,
    decide,
    events_of,
    final,
    gate,
    gate_fail,
    intent,
    kinds,
    polish,
    refund_variant,
    run,
    runtime_for,
    skill_from,
)

from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.skills import load_skill

STATUS_FIELDS = {"order_id": ORDER, "status": "shipped", "next_steps": "Arrives in 2 days."}


def test_gate_disabled_skips_the_gate_and_its_model_call(tmp_path: Path) -> None:
    skill = refund_variant(tmp_path / "skill", gate="    enabled: false\n    max_retries: 2\n")
    script = [r for r in approval_script() if r["stage"] != "gate"]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, "Refund 750 for ORD-12345")
            job = await decide(rt, job.id, "approve", role="supervisor")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert "gate" not in [c.stage for c in job.model_calls]
            skipped = events_of(job, "gate_skipped")
            assert len(skipped) == 1 and skipped[0].data["missing_fields"] == []
            assert "gate_passed" not in kinds(job)

    run(main())


def test_gate_disabled_still_checks_the_output_contract(tmp_path: Path) -> None:
    skill = refund_variant(tmp_path / "skill", gate="    enabled: false\n    max_retries: 0\n")
    script = [
        intent("intent_order_status", order_id=ORDER),
        final("ORD-12345 has shipped.", fields={"order_id": ORDER, "status": "shipped"}),
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, "Where is ORD-12345?")
            model.assert_complete()
            assert job.status is JobStatus.ESCALATED
            failed = events_of(job, "gate_failed")
            assert failed[0].reason_code == "MISSING_REQUIRED_FIELD"
            assert "next_steps" in failed[0].message

    run(main())


def test_never_use_deletefile_blocks_the_tool_at_the_pre_tool_gate(tmp_path: Path) -> None:
    skill = skill_from(tmp_path / "files", FILES_SKILL)
    script = [
        intent("intent_tidy"),
        call("deleteFile", "d1", path="/home/u/a.txt"),
        call("listFiles", "l1", folder="/home/u"),
        final("Listed your files; nothing was deleted.", {"summary": "2 files"}),
    ]  # the request was not done (deleteFile blocked): no gate call

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, "tidy my files, delete a.txt")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert job.record.outcome_class is OutcomeClass.BLOCKED
            decision = events_of(job, "gate_decision")[0]
            assert decision.data["decision"] == "block"
            assert decision.data["tool"] == "deleteFile"
            assert any("Never use deleteFile" in r["rule"] for r in decision.data["reasons"])
            started = [e.data["tool"] for e in events_of(job, "tool_started")]
            assert started == ["listFiles"]
            # the planner is told, in the answer to its own call, and never offered it
            second = model.calls[2]
            answer = next(m for m in second.messages if m.role == "tool")
            assert answer.tool_call_id == "d1" and answer.content.startswith("BLOCKED")
            assert "deleteFile" not in {t.name for t in second.tools}

    run(main())


def test_approval_rule_pauses_the_job_before_the_tool_runs(
    tmp_path: Path, refund_yaml: Path
) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", approval_script()) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Refund 750 for ORD-12345")
            assert job.status is JobStatus.PAUSED
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            waiting = job.record.waiting
            assert waiting is not None
            assert (waiting.tool, waiting.approver) == ("process_refund", "supervisor")
            assert waiting.arguments == {"order_id": ORDER, "amount": 750}
            assert "amount > 500" in (waiting.reason or "")
            started = [e.data["tool"] for e in events_of(job, "tool_started")]
            assert "process_refund" not in started
            assert len(model.remaining) == 3  # final answer, gate, polisher: not yet

    run(main())


def test_gate_failing_three_times_escalates_with_a_warning(
    tmp_path: Path, refund_yaml: Path
) -> None:
    script = [intent("intent_order_status", order_id=ORDER)]
    for attempt in range(3):
        script += [
            call("check_order_status", f"s{attempt}", order_id=ORDER),
            final("It ships soon.", STATUS_FIELDS, call_id=f"f{attempt}"),
            gate_fail("GOAL_NOT_MET"),
        ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Where is ORD-12345?")
            model.assert_complete()
            assert job.status is JobStatus.ESCALATED
            assert job.record.outcome_class is OutcomeClass.FINALIZATION_FAILED
            assert [e.data["attempt"] for e in events_of(job, "gate_failed")] == [1, 2, 3]
            escalated = events_of(job, "escalated")
            assert len(escalated) == 1
            assert escalated[0].message == "Finalization Gate failed after max retries"
            assert escalated[0].data["draft"]["answer"] == "It ships soon."
            assert job.record.fields == STATUS_FIELDS
            assert [c.stage for c in job.model_calls].count("gate") == 3
            assert "polished" not in kinds(job)

    run(main())


def test_gate_passing_after_a_replan_completes(tmp_path: Path, refund_yaml: Path) -> None:
    script = [
        intent("intent_order_status", order_id=ORDER),
        final("It ships soon.", STATUS_FIELDS, call_id="f0"),
        gate_fail("OUTPUT_INCOMPLETE"),
        call("check_order_status", "s1", order_id=ORDER),
        final("ORD-12345 is shipped and arrives in 2 days.", STATUS_FIELDS, call_id="f1"),
        gate(),
        polish("Great news: ORD-12345 is shipped (status: shipped). Arrives in 2 days."),
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Where is ORD-12345?")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert job.record.reply is not None and "shipped" in job.record.reply
            rejected = [m for m in model.calls[3].messages if m.role == "tool"]
            assert rejected[-1].tool_call_id == "f0"
            assert rejected[-1].content.startswith("REJECTED by the finalization gate")

    run(main())
