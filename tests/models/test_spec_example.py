"""Spec 000 section 3.1, unchanged, runs to a completed job on the offline model.

Its only tool has no executor and an undescribed output, so it runs simulated and stands
in for the output contract (order_id from its argument, status and next_steps made up
and marked); "order 12345" and "$750" are found with no pattern declared.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from skillwire.cli_app import app
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import JobView, Runtime
from skillwire.models.offline import OfflineModel
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore
from skillwire.tools import Executors

SPEC = Path(__file__).resolve().parent.parent / "fixtures" / "spec_000_domain.yaml"


def test_the_fixture_is_the_spec_verbatim() -> None:
    """The spec is ``../shared/spec`` of the repository (of any folder above it)."""
    above = Path(__file__).resolve().parents[3:]
    specs = [s for folder in above for s in sorted((folder / "shared/spec").glob("000_*.txt"))]
    if not specs:
        pytest.skip("the spec folder is not beside the repository")
    text = specs[0].read_text()
    block = text.split("### 3.1", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    assert SPEC.read_text().strip() == block.strip()


def assert_completed(job: dict[str, Any]) -> None:
    assert (job["status"], job["outcome_class"]) == ("completed", "SUCCESS")
    assert job["reply"] and "12345" in job["reply"]
    fields = job["fields"]
    assert fields["order_id"] == "12345"
    assert fields["status"] and fields["next_steps"]
    assert all(isinstance(v, str) and v.strip() for v in fields.values())


def test_skillwire_run_completes_the_spec_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no skillwire.toml: the embedded offline model
    monkeypatch.delenv("SKILLWIRE_DB", raising=False)
    result = CliRunner().invoke(
        app,
        ["run", str(SPEC), "-m", "Refund $120 for order 12345", "--db", "jobs.db", "--json"],
    )
    assert result.exit_code == 0, result.output
    job = json.loads(result.stdout)
    assert_completed(job)
    finished = [e for e in job["events"] if e["kind"] == "tool_finished"]
    assert len(finished) == 1
    made_up = finished[0]["data"]["result"]["_simulated"]
    assert made_up == {"tool": "process_refund", "invented": ["status", "next_steps"]}
    assert finished[0]["data"]["result"]["order_id"] == "12345"


def run_spec(tmp_path: Path, message: str, approve: bool = False) -> JobView:
    async def flow() -> JobView:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        runtime = Runtime(store, OfflineModel(), executors=Executors())
        try:
            job = await runtime.start(load_skill(SPEC), message)
            if approve:
                assert job.status is JobStatus.PAUSED
                waiting = job.record.waiting
                assert waiting is not None and waiting.reason_code == "APPROVAL_REQUIRED"
                job = await runtime.resume(
                    job.id,
                    approval="approve",
                    role="supervisor",
                    decided_by="sup",
                    correlation_id=waiting.correlation_id,
                )
            return job
        finally:
            await store.close()

    return asyncio.run(flow())


def test_a_refund_over_the_limit_is_approved_then_completes(tmp_path: Path) -> None:
    job = run_spec(tmp_path, "I want a refund for order 12345, it was $750", approve=True)
    record = job.record
    assert (record.status, record.outcome_class) == (JobStatus.COMPLETED, OutcomeClass.SUCCESS)
    assert record.reply and record.fields["order_id"] == "12345"
    started = [e.data for e in job.events if e.kind == "tool_started"]
    assert started[-1]["args"] == {"order_id": "12345", "amount": 750}


def test_an_unrelated_message_is_out_of_domain(tmp_path: Path) -> None:
    job = run_spec(tmp_path, "What's the capital of Australia?")
    assert job.record.outcome_class is OutcomeClass.OUT_OF_DOMAIN
    assert job.record.reply == "I can only help with orders and refunds"


def test_without_an_order_number_the_user_is_asked(tmp_path: Path) -> None:
    job = run_spec(tmp_path, "I want my money back")
    waiting = job.record.waiting
    assert job.status is JobStatus.PAUSED and waiting is not None
    assert waiting.requested_fields == ["order_id", "amount"]
