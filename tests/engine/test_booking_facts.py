"""The booking example end to end on the scripted model (issue 20, facts): its
cancellation rule reads a fact (the reservation as the last look-up of it returned it)
and the reason the user gave when asked."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.engine.helpers import call, events_of, intent, run, runtime_for

from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.skills import Skill, load_skill

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "booking"


def _skill(tmp_path: Path) -> Skill:
    folder = tmp_path / "booking"
    shutil.copytree(EXAMPLE, folder)
    return load_skill(folder / "domain.yaml")


def _script(reservation: str, *, cancelled: bool) -> list[dict[str, object]]:
    script: list[dict[str, object]] = [
        intent("cancel_booking", reservation_id=reservation),
        call("get_reservation", "c1", reservation_id=reservation),
        call("cancel_reservation", "c2", reservation_id=reservation),
    ]
    status = "cancelled" if cancelled else "not cancelled"
    script.append(
        call("final_answer", "f1", answer=f"Booking {status}.", fields={"status": status})
    )
    script.append({"stage": "polisher", "text": f"Booking {status}."})
    return script


def test_a_basic_fare_is_cancelled_for_the_medical_reason_the_user_gave(tmp_path: Path) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", _script("BK-1001", cancelled=True)) as (
            rt,
            _,
        ):
            job = await rt.start(_skill(tmp_path), "Please cancel my booking BK-1001")
            assert job.record.outcome_class is OutcomeClass.USER_ACTION_REQUIRED
            assert job.record.waiting is not None
            assert job.record.waiting.requested_fields == ["reason"]
            job = await rt.resume(job.id, input={"reason": "A medical emergency"})
            assert job.status is JobStatus.COMPLETED, job.record.outcome_class
            decisions = [e.data["decision"] for e in events_of(job, "gate_decision")]
            assert decisions[-2:] == ["allow", "allow"]

    run(main())


def test_a_basic_fare_is_not_cancelled_for_a_change_of_plans(tmp_path: Path) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", _script("BK-1001", cancelled=False)) as (
            rt,
            _,
        ):
            job = await rt.start(_skill(tmp_path), "Please cancel my booking BK-1001")
            job = await rt.resume(job.id, input={"reason": "change of plans"})
            assert job.status is JobStatus.COMPLETED, job.record.outcome_class
            blocked = [e for e in events_of(job, "gate_decision") if e.data["decision"] == "block"]
            assert len(blocked) == 1
            text = str(blocked[0].data) + blocked[0].message
            assert "medical reason" in text and '"fare": "basic"' in text, text

    run(main())
