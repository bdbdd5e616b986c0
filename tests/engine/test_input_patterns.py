"""Input given on resume is checked with the gate's pattern engine.

``^ORD-[0-9]{5}$`` matches only the whole value, as JSON Schema users expect: an order
number with a trailing newline is rejected and the job keeps waiting, instead of being
accepted and reaching the tools as a different key than the one the rules saw.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.engine.helpers import ORDER, events_of, input_script, run, runtime_for

from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.skills import load_skill


@pytest.mark.parametrize("given", [ORDER + "\n", ORDER + "\r\n", "x" + ORDER, ORDER + "\udc80"])
def test_input_with_more_than_the_pattern_allows_is_rejected(
    tmp_path: Path, refund_yaml: Path, given: str
) -> None:
    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", input_script()) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), "I want a refund of $750")
            job = await rt.resume(job.id, input={"order_id": given})
            assert job.status is JobStatus.PAUSED
            assert job.record.outcome_class is OutcomeClass.USER_ACTION_REQUIRED
            waiting = job.record.waiting
            assert waiting is not None and waiting.error is not None
            assert waiting.error.startswith("order_id:") and "does not match" in waiting.error
            assert len(events_of(job, "input_rejected")) == 1
            job = await rt.resume(job.id, input={"order_id": ORDER})
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED

    run(main())
