"""The finalization gate (output contract first, enabled, max_retries, new evidence,
escalation) and the reply polisher (persona only; a dropped contract value keeps the
unpolished text)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import (
    FILES_SKILL,
    ORDER,
    call,
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
from skillwire.engine.finalization import ACTION_CODES, REASON_CODES, dropped_values
from skillwire.skills import Skill, load_skill

STATUS = {"order_id": ORDER, "status": "shipped", "next_steps": "Arrives in 2 days."}
ANSWER = "ORD-12345 is shipped (status: shipped). Arrives in 2 days."


def status_job(*after_intent: dict[str, Any]) -> list[dict[str, Any]]:
    """An order-status job: the intent, then ``after_intent``."""
    return [intent("intent_order_status", order_id=ORDER), *after_intent]


def check(call_id: str) -> dict[str, Any]:
    """A planner turn that gathers evidence."""
    return call("check_order_status", call_id, order_id=ORDER)


def test_the_codes_are_the_specs() -> None:
    assert REASON_CODES == (
        "GOAL_NOT_MET",
        "GUARDRAIL_VIOLATED",
        "MISSING_REQUIRED_FIELD",
        "OUTPUT_INCOMPLETE",
        "TONE_MISMATCH",
    )
    assert ACTION_CODES == ("TOOL_CALL", "CLARIFY_USER", "REWRITE", "ESCALATE")


def test_the_output_contract_is_checked_before_any_model_judges(
    tmp_path: Path, refund_yaml: Path
) -> None:
    script = status_job(
        check("s1"),
        final(ANSWER, {"order_id": ORDER, "status": "", "next_steps": "x"}, "f1"),
        check("s2"),
        final(ANSWER, STATUS, "f2"),
        gate(),
        polish(ANSWER),
    )

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Where is ORD-12345?")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            failed = events_of(job, "gate_failed")
            assert [(e.reason_code, e.data["reasons"]) for e in failed] == [
                (
                    "MISSING_REQUIRED_FIELD",
                    [{"code": "MISSING_REQUIRED_FIELD", "detail": "missing field 'status'"}],
                )
            ]
            stages = [c.stage for c in job.model_calls]
            assert stages.count("gate") == 1  # only the complete answer reached the model

    run(main())


def test_a_retry_without_new_evidence_escalates(tmp_path: Path, refund_yaml: Path) -> None:
    script = status_job(
        check("s1"),
        final(ANSWER, STATUS, "f1"),
        gate_fail("GOAL_NOT_MET"),
        final(ANSWER + " Really.", STATUS, "f2"),
    )

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Where is ORD-12345?")
            model.assert_complete()
            assert job.status is JobStatus.ESCALATED
            assert job.record.outcome_class is OutcomeClass.FINALIZATION_FAILED
            assert events_of(job, "escalated")[0].message == "Replan did not gather new evidence"
            assert [c.stage for c in job.model_calls].count("gate") == 1

    run(main())


def test_max_retries_zero_escalates_on_the_first_failure(tmp_path: Path) -> None:
    skill = refund_variant(tmp_path / "skill", gate="    enabled: true\n    max_retries: 0\n")
    script = status_job(check("s1"), final(ANSWER, STATUS, "f1"), gate_fail("TONE_MISMATCH"))

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, "Where is ORD-12345?")
            model.assert_complete()
            assert job.status is JobStatus.ESCALATED
            assert events_of(job, "gate_failed")[0].reason_code == "TONE_MISMATCH"
            assert events_of(job, "escalated")[0].message == (
                "Finalization Gate failed after max retries"
            )

    run(main())


def test_the_gate_may_ask_to_escalate_at_once(tmp_path: Path, refund_yaml: Path) -> None:
    script = status_job(
        check("s1"), final(ANSWER, STATUS, "f1"), gate_fail("GUARDRAIL_VIOLATED", "ESCALATE")
    )

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Where is ORD-12345?")
            model.assert_complete()
            assert job.status is JobStatus.ESCALATED
            escalated = events_of(job, "escalated")[0]
            assert escalated.message == "the finalization gate asked to escalate"
            assert escalated.reason_code == "FINALIZATION_FAILED"

    run(main())


def test_clarify_user_pauses_and_the_answer_counts_as_evidence(
    tmp_path: Path, refund_yaml: Path
) -> None:
    script = status_job(
        check("s1"),
        final(ANSWER, STATUS, "f1"),
        gate_fail("OUTPUT_INCOMPLETE", "CLARIFY_USER", ["delivery_address"]),
        final(ANSWER + " To 1 Main St.", STATUS, "f2"),
        gate(),
        polish(ANSWER + " To 1 Main St."),
    )

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Where is ORD-12345?")
            assert job.record.outcome_class is OutcomeClass.USER_ACTION_REQUIRED
            waiting = job.record.waiting
            assert waiting is not None
            assert (waiting.reason_code, waiting.requested_fields) == (
                "CLARIFICATION_REQUIRED",
                ["delivery_address"],
            )
            assert waiting.prompt_message == "Please provide: delivery address."
            job = await rt.resume(job.id, input={"delivery_address": "1 Main St"})
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert job.record.state["inputs"] == {"delivery_address": "1 Main St"}
            given = [m for m in model.calls[4].messages if "1 Main St" in m.content]
            assert given, "the planner sees the input in its job state"

    run(main())


def test_an_unreadable_gate_verdict_fails_closed(tmp_path: Path, refund_yaml: Path) -> None:
    skill = refund_variant(tmp_path / "skill", gate="    enabled: true\n    max_retries: 0\n")
    script = status_job(
        check("s1"), final(ANSWER, STATUS, "f1"), {"stage": "gate", "text": "Looks good to me!"}
    )

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, "Where is ORD-12345?")
            model.assert_complete()
            assert "gate_unparsed" in kinds(job)
            assert job.status is JobStatus.ESCALATED

    run(main())


def polished(tmp_path: Path, text: str) -> tuple[Skill, list[dict[str, Any]]]:
    """The refund skill and a status job whose polisher says ``text``."""
    script = status_job(check("s1"), final(ANSWER, STATUS, "f1"), gate(), polish(text))
    return load_skill(tmp_path / "skill" / "domain.yaml"), script


@pytest.mark.parametrize(
    ("text", "kept", "why"),
    [
        ("Great news! ORD-12345 is shipped (status: shipped). Arrives in 2 days.", False, ""),
        ("Great news! Your order is shipped and arrives soon.", True, "dropped order_id"),
        ("Great news! ORD-12345 is on its way. Arrives in 2 days.", True, "dropped status"),
        ("   ", True, "returned nothing"),
    ],
)
def test_the_polisher_may_not_drop_a_contract_value(
    tmp_path: Path, text: str, kept: bool, why: str
) -> None:
    refund_variant(tmp_path / "skill")
    skill, script = polished(tmp_path, text)

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, "Where is ORD-12345?")
            model.assert_complete()
            assert job.status is JobStatus.COMPLETED
            assert job.record.reply == (ANSWER if kept else text)
            assert job.record.fields == STATUS
            if kept:
                rejected = events_of(job, "polish_rejected")
                assert len(rejected) == 1 and why in rejected[0].message
                assert "unpolished reply is kept" in rejected[0].message
            else:
                assert "polished" in kinds(job)

    run(main())


def test_no_persona_means_no_polisher_call(tmp_path: Path) -> None:
    skill = skill_from(tmp_path / "files", FILES_SKILL)
    script = [intent("intent_tidy"), final("Nothing to tidy.", {"summary": "none"}), gate()]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, "tidy my files")
            model.assert_complete()
            assert job.record.reply == "Nothing to tidy."
            assert "polish_skipped" in kinds(job)
            assert "polisher" not in [c.stage for c in job.model_calls]

    run(main())


def test_dropped_values_knows_number_renderings() -> None:
    fields = {"amount": 750, "order_id": ORDER, "ok": True}
    assert dropped_values("750 for ORD-12345", "750.00 for ORD-12345", fields) == []
    assert dropped_values("750 for ORD-12345", "$750.00 for your order", fields) == ["order_id"]
    assert dropped_values("refund", "a refund", fields) == []  # only values the draft had
