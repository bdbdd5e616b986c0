"""The inbox example end to end on the scripted model (issue 20, provenance): a payment
to an IBAN found only in an e-mail pauses for approval and tells the approver where it
came from; a payment to the IBAN the user typed runs."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.engine.helpers import call, decide, events_of, intent, run, runtime_for

from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.skills import Skill, load_skill

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "inbox_assistant"
INJECTED = "DE44 5001 0517 5407 3249 31"  # in the second message of the fixed inbox
TYPED = "GB29 NWBK 6016 1331 9268 19"


def _skill(tmp_path: Path) -> Skill:
    folder = tmp_path / "inbox_assistant"
    shutil.copytree(EXAMPLE, folder)
    return load_skill(folder / "domain.yaml")


def _done(answer: str) -> dict[str, object]:
    return call("final_answer", "f1", answer=answer, fields={"status": "paid"})


def test_a_payment_to_an_iban_found_only_in_mail_waits_for_approval(tmp_path: Path) -> None:
    script = [
        intent("pay_bill", amount=950),
        call("read_inbox", "c1", folder="inbox"),
        call("pay_bill", "c2", iban=INJECTED.replace(" ", "").lower(), amount=950),
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, _):
            job = await rt.start(_skill(tmp_path), "Please pay this month's rent, 950 euros")
            assert job.status is JobStatus.PAUSED
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            waiting = job.record.waiting
            assert waiting is not None and waiting.tool == "pay_bill"
            assert waiting.approver == "supervisor"
            reason = waiting.reason or ""
            assert "tool:read_inbox" in reason and "untrusted" in reason, reason
            assert "de4450010517540732493" in reason.replace(" ", "").lower()
            assert "tool:read_inbox" in waiting.prompt_message
            decisions = [e.data["decision"] for e in events_of(job, "gate_decision")]
            assert decisions == ["allow", "need_approval"]

    run(main())


def test_a_payment_to_the_iban_the_user_typed_runs(tmp_path: Path) -> None:
    script = [
        intent("pay_bill", amount=950),
        call("read_inbox", "c1", folder="inbox"),
        call("pay_bill", "c2", iban=TYPED, amount=950, reference="Rent December"),
        _done("Paid 950 to your landlord."),
        {"stage": "polisher", "text": "Paid 950 to your landlord."},
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, _):
            job = await rt.start(
                _skill(tmp_path), f"Pay the rent, 950 euros, to {TYPED.lower()} please"
            )
            assert job.status is JobStatus.COMPLETED, job.record.outcome_class
            decisions = [e.data["decision"] for e in events_of(job, "gate_decision")]
            assert decisions == ["allow", "allow"]

    run(main())


def test_the_approver_can_let_the_injected_payment_run(tmp_path: Path) -> None:
    """Approval is the answer, not a dead end: the same call runs once approved."""
    script = [
        intent("pay_bill", amount=950),
        call("read_inbox", "c1", folder="inbox"),
        call("pay_bill", "c2", iban=INJECTED, amount=950),
        _done("Paid."),
        {"stage": "polisher", "text": "Paid."},
    ]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, _):
            job = await rt.start(_skill(tmp_path), "Pay the rent")
            assert job.status is JobStatus.PAUSED
            done = await decide(rt, job.id)
            assert done.status is JobStatus.COMPLETED, done.record.outcome_class

    run(main())
