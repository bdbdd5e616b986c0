"""A job's trace through the queue (issue 22, item 5): the enqueuer's W3C trace context
travels in the task's arguments, the worker's span of the start is its child, and a
resume queued hours later from another request is a child of the job's first span (one
trace per job), linked to the request that asked for it. procrastinate's in-memory
connector stands in for PostgreSQL; the store is SQLite."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from procrastinate.testing import InMemoryConnector
from tests.engine.helpers import ORDER, approval_script

from skillwire.config import SkillwireConfig
from skillwire.core import tracing
from skillwire.core.job import JobStatus
from skillwire.jobqueue import JobQueue
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    yield exporter
    tracing.disable()
    provider.shutdown()


def test_a_queued_job_is_one_trace_across_its_tasks(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(approval_script()))
    skill = load_skill(ROOT / "examples" / "refund_support" / "domain.yaml")
    store = SQLiteJobStore(tmp_path / "jobs.db")
    queue = JobQueue(
        "postgresql://unused", SkillwireConfig(), store=store, model_spec=f"scripted:{script}"
    )
    connector = InMemoryConnector()
    server = TracerProvider().get_tracer("server")  # the requests' spans (not skillwire's)

    def task_args() -> list[dict[str, Any]]:
        return [dict(row["args"]) for row in connector.jobs.values()]

    async def main() -> tuple[str, Any, Any]:
        with queue.app.replace_connector(connector) as app:
            async with app.open_async():
                with server.start_as_current_span("POST /v1/jobs") as started:
                    job_id = await queue.enqueue_start(skill, f"Refund 750 for {ORDER}", owner="u")
                await app.run_worker_async(wait=False, install_signal_handlers=False)
                record = await store.get(job_id)
                assert record is not None and record.status is JobStatus.PAUSED
                assert record.waiting is not None
                with server.start_as_current_span("POST /v1/jobs/{id}/approve") as approved:
                    await queue.enqueue_resume(
                        skill.id,
                        job_id,
                        approval="approve",
                        role="supervisor",
                        decided_by="sup",
                        correlation_id=record.waiting.correlation_id,
                    )
                await app.run_worker_async(wait=False, install_signal_handlers=False)
        await store.close()
        return job_id, started.get_span_context(), approved.get_span_context()

    job_id, started, approved = asyncio.run(main())
    # the tasks carried the enqueuers' contexts
    carried = [args["trace"]["traceparent"] for args in task_args()]
    assert carried == [
        f"00-{c.trace_id:032x}-{c.span_id:016x}-{c.trace_flags:02x}" for c in (started, approved)
    ]
    units = [s for s in spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert [u.attributes["skillwire.job.operation"] for u in units] == ["start", "resume"]
    start, resume = units
    assert all(u.attributes["skillwire.job.id"] == job_id for u in units)
    assert start.parent is not None and start.parent.span_id == started.span_id
    assert start.context.trace_id == started.trace_id
    assert resume.parent is not None and resume.parent.span_id == start.context.span_id
    assert resume.context.trace_id == started.trace_id  # the job's trace, not the approval's
    assert [link.context.span_id for link in resume.links] == [approved.span_id]
    assert resume.attributes["skillwire.job.status"] == "completed"
    tools = [s.name for s in spans.get_finished_spans() if s.name.startswith("execute_tool")]
    assert tools[-1] == "execute_tool process_refund"


def test_tasks_queued_without_tracing_carry_no_context(tmp_path: Path) -> None:
    skill = load_skill(ROOT / "examples" / "refund_support" / "domain.yaml")
    queue = JobQueue("postgresql://unused", SkillwireConfig(), store=None)
    connector = InMemoryConnector()

    async def main() -> None:
        with queue.app.replace_connector(connector) as app:
            async with app.open_async():
                await queue.enqueue_start(skill, "Refund 750", owner="u")

    asyncio.run(main())
    (row,) = connector.jobs.values()
    assert "trace" not in row["args"]
