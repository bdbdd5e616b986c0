"""Outcomes that do not misreport (issue 16 item 13): a request the gate blocked, an
approver denied or a tool failed does not end SUCCESS, and the reply says what was not
done and why; an answer claiming an action no tool performed is caught mechanically;
the polisher may rephrase but not add claims."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.engine.helpers import (
    ANSWER,
    FILES_SKILL,
    ORDER,
    approval_script,
    call,
    decide,
    events_of,
    final,
    gate,
    intent,
    kinds,
    polish,
    run,
    runtime_for,
    skill_from,
)

from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.skills import load_skill

CLAIM = f"I have refunded your order {ORDER}."


def test_a_denied_refund_ends_denied_and_says_why(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        script = [*approval_script()[:4], final(answer=CLAIM)]
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Refund 750 for ORD-12345")
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            job = await decide(rt, job.id, "deny")
            assert job.status is JobStatus.COMPLETED
            assert job.record.outcome_class is OutcomeClass.DENIED
            reply = job.record.reply or ""
            assert "process_refund" in reply and "denied" in reply and "supervisor" in reply
            assert "I have refunded" not in reply
            assert job.record.fields.get("status") != "refunded"
            model.assert_complete()  # no gate and no polisher call for what was not done

    run(main())


def test_a_blocked_call_ends_blocked_and_says_why(tmp_path: Path) -> None:
    skill = skill_from(tmp_path / "files", FILES_SKILL)
    script = [
        intent("intent_tidy", folder="docs"),
        call("deleteFile", "c1", path="docs/a.txt"),
        call("final_answer", "f", answer="I deleted docs/a.txt.", fields={"summary": "deleted"}),
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(skill, "tidy my files")
            assert job.status is JobStatus.COMPLETED
            assert job.record.outcome_class is OutcomeClass.BLOCKED
            reply = job.record.reply or ""
            blocked = events_of(job, "gate_decision")[0].data["reasons"][0]["message"]
            assert "deleteFile was not done" in reply and blocked in reply
            assert "I deleted" not in reply
            model.assert_complete()

    run(main())


FAILING_SKILL = """
    id: lookup
    name: Lookup
    problem:
      statement: "Look up orders"
    role:
      name: "Clerk"
    intents:
      supported:
        - id: intent_lookup
          description: "Look up an order"
          examples: ["look up my order"]
    tools:
      - name: lookup_order
        description: "Look up an order"
        inputs:
          - {name: order_id, type: string, required: true}
        idempotent: true
        executor:
          type: python
          callable: "lookup_tools:lookup_order"
    output_contract:
      required_fields: [summary]
    engine:
      finalization_gate:
        enabled: false
"""


def test_a_failed_tool_is_not_success_and_its_error_text_stays_internal(tmp_path: Path) -> None:
    folder = tmp_path / "lookup"
    folder.mkdir()
    (folder / "lookup_tools.py").write_text(
        "def lookup_order(order_id):\n    raise RuntimeError('db password=hunter2 refused')\n"
    )
    skill = skill_from(folder, FAILING_SKILL)
    script = [
        intent("intent_lookup"),
        call("lookup_order", "c1", order_id=ORDER),
        call("final_answer", "f", answer="Your order is on its way.", fields={"summary": "ok"}),
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, _):
            job = await rt.start(skill, "look up my order")
            assert "tool_failed" in kinds(job)
            assert job.status is JobStatus.COMPLETED
            assert job.record.outcome_class is OutcomeClass.TOOL_FAILED
            reply = job.record.reply or ""
            assert "lookup_order" in reply and "failed" in reply
            assert "hunter2" not in reply and "RuntimeError" not in reply

    run(main())


def test_an_answer_claiming_an_action_no_tool_performed_is_not_success(
    tmp_path: Path, refund_yaml: Path
) -> None:
    async def main() -> None:
        script = [
            intent(order_id=ORDER, amount=40),
            call("verify_identity", "c1", order_id=ORDER),
            final(answer=CLAIM),
            final(answer=CLAIM, call_id="final2"),
        ]
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Refund 40 for ORD-12345")
            failed = events_of(job, "gate_failed")
            assert failed and failed[0].reason_code == "GOAL_NOT_MET"
            assert "process_refund" in failed[0].message
            assert job.record.outcome_class is not OutcomeClass.SUCCESS
            assert job.status is JobStatus.ESCALATED
            model.assert_complete()  # caught mechanically: no gate model call

    run(main())


def test_a_negated_action_word_is_no_claim(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        answer = f"Your order {ORDER} has not been refunded yet: it is verified."
        script = [
            intent(order_id=ORDER, amount=40),
            call("verify_identity", "c1", order_id=ORDER),
            final(
                answer=answer, fields={"order_id": ORDER, "status": "verified", "next_steps": "x"}
            ),
            gate(),
            polish(answer),
        ]
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Refund 40 for ORD-12345")
            assert job.record.outcome_class is OutcomeClass.SUCCESS
            model.assert_complete()

    run(main())


def refund_of_40(*, polished: str) -> list[dict[str, Any]]:
    """A refund of 40 (no approval) whose polisher answers ``polished``."""
    script = [*approval_script()[:-1], polish(polished)]
    script[0] = intent(order_id=ORDER, amount=40)
    script[2:4] = [
        call("check_eligibility", "c2", order_id=ORDER, amount=40),
        call("process_refund", "c3", order_id=ORDER, amount=40),
    ]
    return script


def test_the_polisher_may_not_add_a_claim(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        script = refund_of_40(polished=ANSWER + " Your refund id is RF-99999-1.")
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), "Refund 40 for ORD-12345")
            assert job.record.outcome_class is OutcomeClass.SUCCESS
            rejected = events_of(job, "polish_rejected")
            assert rejected and rejected[0].data["added"] == ["RF-99999-1"]
            assert job.record.reply == ANSWER

    run(main())


def test_the_polisher_may_rephrase_with_the_evidence(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        script = refund_of_40(polished=ANSWER + " Your refund id is RF-12345-4000.")
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), "Refund 40 for ORD-12345")
            assert "polished" in kinds(job), [e.message for e in job.events]
            assert job.record.reply is not None and "RF-12345-4000" in job.record.reply

    run(main())
