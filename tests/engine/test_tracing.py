"""OpenTelemetry spans of a job (issue 22, item 5), read from the SDK's in-memory
exporter: the span tree of a refund job on the scripted model, the gate's decisions as
attributes, no prompt or argument in any span, nothing at all when tracing is off, and
one trace for a job paused in one unit of work and resumed in another."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.engine.helpers import ORDER, approval_script, decide, events_of, run, runtime_for

from skillwire.core import tracing
from skillwire.core.job import JobStatus
from skillwire.skills import load_skill

SECRET = "sk-live-5EcReT"
"""Put in the message and the job's context: no span may show it (nor the order number
and amount, which are in the prompts and every tool's arguments)."""


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on, to an in-memory exporter (not the global provider); off after."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    yield exporter
    tracing.disable()
    provider.shutdown()


def secret_script() -> list[dict[str, Any]]:
    """The approval script with token counts on the intent reply."""
    script = approval_script()
    script[0] = {**script[0], "usage": {"input_tokens": 321, "output_tokens": 12}}
    return script


def everything_in(span: ReadableSpan) -> str:
    """All a span would export, as text."""
    return json.dumps(
        {
            "name": span.name,
            "attributes": dict(span.attributes or {}),
            "events": [(e.name, dict(e.attributes or {})) for e in span.events],
            "links": [dict(link.attributes or {}) for link in span.links],
            "status": str(span.status.description),
        },
        default=str,
    )


def test_a_refund_job_makes_the_expected_span_tree(
    tmp_path: Path, refund_yaml: Path, spans: InMemorySpanExporter
) -> None:
    async def main() -> Any:
        async with runtime_for(tmp_path / "jobs.db", secret_script()) as (rt, _):
            message = f"Refund 750 for {ORDER}, my key is {SECRET}"
            job = await rt.start(load_skill(refund_yaml), message, context={"token": SECRET})
            assert job.status is JobStatus.PAUSED
            return job, await decide(rt, job.id)

    paused, job = run(main())
    assert job.status is JobStatus.COMPLETED
    finished = spans.get_finished_spans()
    units = [s for s in finished if s.name.startswith("invoke_agent ")]
    assert [u.attributes["skillwire.job.operation"] for u in units] == ["start", "resume"]
    start, resume = units
    for unit in units:
        assert unit.name == "invoke_agent refund-support"
        assert unit.attributes["skillwire.job.id"] == job.id
        assert unit.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert start.attributes["skillwire.job.status"] == "paused"
    assert resume.attributes["skillwire.job.status"] == "completed"
    # one trace: the resume is a child of the start's span (which the job kept)
    assert start.parent is None
    kept = paused.record.state["trace"]  # saved with the job: any worker resumes its trace
    ctx = start.context
    assert kept == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}"
    assert resume.parent is not None and resume.parent.span_id == start.context.span_id
    assert {s.context.trace_id for s in finished} == {start.context.trace_id}

    def children(unit: ReadableSpan) -> list[ReadableSpan]:
        """The unit's own spans (the next unit of the job is a child too)."""
        return [
            s
            for s in finished
            if s.parent and s.parent.span_id == unit.context.span_id and s not in units
        ]

    assert [s.name for s in children(start)] == [
        "chat inline",  # intent
        "chat inline",  # planner: verify_identity
        "gate verify_identity",
        "execute_tool verify_identity",
        "chat inline",
        "gate check_eligibility",
        "execute_tool check_eligibility",
        "chat inline",
        "gate process_refund",  # needs approval: the job pauses
    ]
    assert [s.name for s in children(resume)] == [
        "gate process_refund",
        "execute_tool process_refund",
        "chat inline",  # planner: final_answer
        "chat inline",  # the finalization gate
        "chat inline",  # the polisher
    ]
    chats = [s for s in finished if s.name.startswith("chat ")]
    assert [c.attributes["skillwire.stage"] for c in chats] == [
        "intent",
        *["planner"] * 4,
        "gate",
        "polisher",
    ]
    first = chats[0].attributes
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "inline"  # the model "scripted:inline"
    assert first["gen_ai.provider.name"] == "scripted"
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (321, 12)
    # the gate's decisions, as the job's events record them
    gates = [s for s in finished if s.name.startswith("gate ")]
    decided = events_of(job, "gate_decision")
    assert [
        (g.attributes["skillwire.gate.decision"], g.attributes["skillwire.gate.reason_code"])
        for g in gates
    ] == [(e.data["decision"], e.reason_code) for e in decided]
    assert gates[2].attributes["skillwire.gate.decision"] == "need_approval"
    assert gates[2].attributes["skillwire.gate.reason_code"]
    tools = [s for s in finished if s.name.startswith("execute_tool ")]
    assert [t.attributes["gen_ai.tool.call.id"] for t in tools] == ["c1", "c2", "c3"]
    assert all(t.attributes["gen_ai.operation.name"] == "execute_tool" for t in tools)
    assert tools[2].attributes["skillwire.tool.idempotent"] is False
    # nothing of the prompt, the message or a tool's arguments is in any span
    for span in finished:
        text = everything_in(span)
        assert SECRET not in text and ORDER not in text and "750" not in text, text


def test_a_failed_tool_run_is_an_error_span_without_the_error_text(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    from tests.engine.helpers import lookup_script, lookup_yaml, skill_from

    skill = skill_from(
        tmp_path / "skill",
        lookup_yaml("lookup", lookup_order="failing:lookup"),
        failing=f"def lookup(order_id):\n    raise ValueError('no such thing: {SECRET}')\n",
    )

    async def main() -> Any:
        async with runtime_for(tmp_path / "jobs.db", lookup_script("done")) as (rt, _):
            return await rt.start(skill, "look it up")

    job = run(main())
    failed = events_of(job, "tool_failed")
    assert failed and SECRET in failed[0].message  # the job records it; the span does not
    tool = next(s for s in spans.get_finished_spans() if s.name.startswith("execute_tool"))
    assert tool.attributes["error.type"] == "tool_error"
    assert tool.status.status_code.name == "ERROR"
    assert SECRET not in everything_in(tool)


def test_tracing_off_makes_no_span(tmp_path: Path, refund_yaml: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    tracing.disable()  # the default: off

    async def main() -> Any:
        async with runtime_for(tmp_path / "jobs.db", approval_script()) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), f"Refund 750 for {ORDER}")
            return await decide(rt, job.id)

    job = run(main())
    assert job.status is JobStatus.COMPLETED
    assert exporter.get_finished_spans() == ()
    assert "trace" not in job.record.state  # nothing kept for a trace either
    assert tracing.carrier() == {}
    assert tracing.chat_span("planner", "m") is None


def test_the_trace_context_round_trips_through_task_arguments(
    spans: InMemorySpanExporter,
) -> None:
    from opentelemetry import context

    from skillwire.jobqueue import queueable

    tracer = TracerProvider().get_tracer("test")  # a span outside skillwire's tracer
    with tracer.start_as_current_span("POST /v1/jobs") as request:
        carried = tracing.carrier()
    assert set(carried) == {"traceparent"}
    args = json.loads(json.dumps(queueable({"job_id": "j", "trace": carried})))
    assert context.get_current() == context.Context()  # as a worker process starts
    with (
        tracing.restored(args["trace"]),
        tracing.job_span("j", "refund_support", "start") as kept,
    ):
        pass
    (unit,) = [s for s in spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert unit.context.trace_id == request.get_span_context().trace_id
    assert unit.parent is not None and unit.parent.span_id == request.get_span_context().span_id
    assert kept is not None and kept.split("-")[2] == format(unit.context.span_id, "016x")
    # a malformed or hostile carrier is ignored: the unit starts a trace of its own
    for bad in ({"traceparent": "00-zz-yy-01"}, {"traceparent": 5}, {}, None):
        with tracing.restored(bad), tracing.job_span("k", "s", "start"):
            pass
    assert all(
        s.parent is None
        for s in spans.get_finished_spans()
        if s.attributes["skillwire.job.id"] == "k"
    )
