"""Budgets (iterations, model calls) and the record every model call leaves."""

from __future__ import annotations

import json
from pathlib import Path

from tests.engine.helpers import (
    FILES_SKILL,
    approval_script,
    call,
    decide,
    events_of,
    intent,
    refund_variant,
    run,
    runtime_for,
    skill_from,
)

from skillwire.core.chat import ChatRequest, ChatResponse, ToolCall, Usage
from skillwire.core.errors import ModelRequestError
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import EngineLimits, Runtime
from skillwire.engine.prompts import request_chars
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import FunctionModel
from skillwire.tools import Executors


def files(tmp_path: Path) -> Skill:
    """A skill that sets no budget of its own."""
    return skill_from(tmp_path / "files", FILES_SKILL)


def listing(n: int) -> list[dict[str, object]]:
    """An intent reply, then ``n`` planner turns listing files."""
    return [intent("intent_tidy")] + [call("listFiles", f"l{i}", folder="/") for i in range(n)]


def test_the_iteration_budget_ends_the_job_as_budget_exhausted(tmp_path: Path) -> None:
    async def main() -> None:
        limits = EngineLimits(max_iterations=3)
        async with runtime_for(tmp_path / "jobs.db", listing(3), limits=limits) as (rt, model):
            job = await rt.start(files(tmp_path), "tidy my files")
            model.assert_complete()
            assert job.status is JobStatus.FAILED
            assert job.record.outcome_class is OutcomeClass.ENGINE_BUDGET_EXHAUSTED
            assert job.record.state["iterations"] == 3
            exhausted = events_of(job, "budget_exhausted")
            assert len(exhausted) == 1
            assert exhausted[0].reason_code == "ENGINE_BUDGET_EXHAUSTED"
            assert "iteration budget of 3" in exhausted[0].message

    run(main())


def test_the_model_call_budget_ends_the_job_as_budget_exhausted(tmp_path: Path) -> None:
    async def main() -> None:
        limits = EngineLimits(max_model_calls=3)
        async with runtime_for(tmp_path / "jobs.db", listing(2), limits=limits) as (rt, model):
            job = await rt.start(files(tmp_path), "tidy my files")
            model.assert_complete()
            assert job.record.outcome_class is OutcomeClass.ENGINE_BUDGET_EXHAUSTED
            assert len(model.calls) == len(job.model_calls) == 3
            assert "model-call budget of 3" in events_of(job, "budget_exhausted")[0].message

    run(main())


def test_the_skill_budget_wins_over_the_runtime_default(tmp_path: Path) -> None:
    skill = refund_variant(tmp_path / "skill", engine="  max_iterations: 1\n")
    script = approval_script()[:2]

    async def main() -> None:
        limits = EngineLimits(max_iterations=50)
        async with runtime_for(tmp_path / "jobs.db", script, limits=limits) as (rt, model):
            job = await rt.start(skill, "Refund 750 for ORD-12345")
            model.assert_complete()
            assert job.record.outcome_class is OutcomeClass.ENGINE_BUDGET_EXHAUSTED
            assert job.record.state["iterations"] == 1

    run(main())


def test_every_model_call_is_recorded(tmp_path: Path, refund_yaml: Path) -> None:
    script = approval_script()
    script[1] = {**script[1], "usage": {"input_tokens": 812, "output_tokens": 31}}
    script[5] = {**script[5], "usage": {"input_tokens": 400}}

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), "Refund 750 for ORD-12345")
            job = await decide(rt, job.id, "approve", role="supervisor")
            records = job.model_calls
            assert [c.seq for c in records] == list(range(1, 8))
            assert [c.stage for c in records] == [r["stage"] for r in script]
            for record, request in zip(records, model.calls, strict=True):
                text = sum(len(m.content) for m in request.messages)
                assert record.prompt_chars == request_chars(request) > 0
                # the tools offered count too (their schemas are sent with the prompt)
                schemas = sum(
                    len(json.dumps(t.parameters, separators=(",", ":"))) for t in request.tools
                )
                assert record.prompt_chars >= text + schemas
                assert record.latency_ms >= 0
                assert record.model == "scripted:inline"
                assert record.ok and record.error == ""
            assert (records[1].input_tokens, records[1].output_tokens) == (812, 31)
            assert (records[5].input_tokens, records[5].output_tokens) == (400, None)
            assert (records[0].input_tokens, records[0].output_tokens) == (None, None)
            assert job.record.state["model_calls"] == 7

    run(main())


def test_a_failed_model_call_is_recorded_and_fails_the_job(
    tmp_path: Path, refund_yaml: Path
) -> None:
    def model(request: ChatRequest) -> ChatResponse:
        if request.stage == "intent":
            return ChatResponse(
                text='{"intent": "intent_order_status", "entities": {"order_id": "ORD-12345"}}',
                usage=Usage(10, 2),
            )
        raise ModelRequestError("planner refused the request (400)")

    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            rt = Runtime(store, FunctionModel(model), executors=Executors())
            job = await rt.start(load_skill(refund_yaml), "Where is ORD-12345?")
        finally:
            await store.close()
        assert job.status is JobStatus.FAILED
        assert job.record.outcome_class is OutcomeClass.INTERNAL_ERROR
        first, failed = job.model_calls
        assert (first.ok, first.input_tokens, first.model) == (True, 10, "function:model")
        assert (failed.stage, failed.ok) == ("planner", False)
        assert failed.error == "planner refused the request (400)"
        error = events_of(job, "model_error")[0]
        assert error.reason_code == "INTERNAL_ERROR" and "400" in error.message

    run(main())


def test_a_model_reply_names_the_model_it_came_from(tmp_path: Path, refund_yaml: Path) -> None:
    def model(request: ChatRequest) -> ChatResponse:
        if request.stage == "intent":
            return ChatResponse(text='{"intent": null}', model="provider-model-7")
        return ChatResponse(tool_calls=(ToolCall("x", {}),))

    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            job = await Runtime(store, FunctionModel(model), executors=Executors()).start(
                load_skill(refund_yaml), "hi"
            )
        finally:
            await store.close()
        assert [c.model for c in job.model_calls] == ["provider-model-7"]

    run(main())
