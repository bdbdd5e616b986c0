"""Prompt characters and tokens per stage, as ``skillwire show`` and the job page show
them (issue 21): sums of the job's model calls, tokens only as the backends count them."""

from __future__ import annotations

from typing import Any

import pytest

from skillwire.cli_jobs import render_timeline
from skillwire.core.job import JobRecord, JobStatus, ModelCallRecord, OutcomeClass
from skillwire.engine import JobView
from skillwire.engine.usage import StageUsage, usage_by_stage


def call(seq: int, stage: str, chars: int, tokens: tuple[int, int] | None = None) -> Any:
    given = tokens or (None, None)
    return ModelCallRecord("j", seq, "t", stage, "m", chars, given[0], given[1], 1.0)


def test_calls_are_summed_per_stage_in_pipeline_order_then_for_the_job() -> None:
    calls = [
        call(1, "intent", 300, (80, 10)),
        call(2, "planner", 500, (120, 20)),
        call(3, "planner", 700),  # this backend call gave no token counts
        call(4, "gate", 400, (100, 5)),
    ]
    rows = usage_by_stage(calls)
    assert [r.stage for r in rows] == ["intent", "planner", "gate", "job"]
    assert rows[1] == StageUsage("planner", 2, 1200, 120, 20, 1)
    assert rows[1].tokens_text() == "120/20 (1 of 2 calls)"  # never passed off as all
    assert rows[0].tokens_text() == "80/10"
    assert rows[-1] == StageUsage("job", 4, 1900, 300, 35, 3)
    assert usage_by_stage([call(1, "gate", 9)])[0].tokens_text() == "-"
    assert usage_by_stage([]) == []


def test_skillwire_show_prints_the_stages(capsys: pytest.CaptureFixture[str]) -> None:
    calls = [call(1, "intent", 300, (80, 10)), call(2, "planner", 500)]
    record = JobRecord("j", "s", JobStatus.COMPLETED, OutcomeClass.SUCCESS, "u", "t", "t")
    render_timeline(JobView(record, [], calls))
    out = capsys.readouterr().out
    assert "by stage" in out
    lines = [line for line in out.splitlines() if "│" in line or "|" in line]
    job = next(line for line in lines if " job " in line)
    assert "800" in job and "80/10 (1 of 2 calls)" in job
