"""No model reply wedges its job (issue 16 item 10): deeply nested JSON and lone
surrogates are bad replies, told to the planner like any other; an unexpected error in
a stage is an ``engine_error`` event, retried a bounded number of times (counted in the
saved state, so recovery counts too), then the job fails with INTERNAL_ERROR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import (
    ORDER,
    POLISHED,
    approval_script,
    call,
    events_of,
    final,
    gate,
    input_script,
    intent,
    kinds,
    polish,
    run,
    runtime_for,
)

from skillwire.core.chat import ChatRequest, ChatResponse, ToolCall
from skillwire.core.errors import UsageError
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import MAX_ENGINE_ERRORS, Runtime
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import FunctionModel
from skillwire.tools import Executors

DEEP = "[" * 100_000 + "]" * 100_000
MESSAGE = "Refund 40 for ORD-12345"


def _deep_object(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


def test_deeply_nested_json_from_the_intent_stage_ends_the_job(
    tmp_path: Path, refund_yaml: Path
) -> None:
    async def main() -> None:
        replies = [{"stage": "intent", "text": '{"intent": "intent_refund", "x": ' + DEEP + "}"}]
        async with runtime_for(tmp_path / "jobs.db", replies) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), MESSAGE)
            assert job.status is JobStatus.COMPLETED
            assert job.record.outcome_class is OutcomeClass.OUT_OF_DOMAIN
            stored = await rt.store.get(job.id)
            assert stored is not None and stored.status is JobStatus.COMPLETED

    run(main())


def test_deeply_nested_arguments_are_a_parse_error_told_to_the_planner(
    tmp_path: Path, refund_yaml: Path
) -> None:
    deep = ToolCall("verify_identity", _deep_object(100_000), "", "d")
    answer = ToolCall("final_answer", {"answer": "x", "fields": {}})
    planner = iter([ChatResponse(tool_calls=(deep,))])

    def model(request: ChatRequest) -> ChatResponse:
        if request.stage == "intent":
            return ChatResponse(text='{"intent": "intent_refund", "entities": {}}')
        if request.stage == "planner":
            return next(planner, ChatResponse(tool_calls=(answer,)))
        if request.stage == "gate":
            return ChatResponse(text='{"passed": true, "reasons": []}')
        return ChatResponse(text="x")

    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            rt = Runtime(store, FunctionModel(model), executors=Executors())
            job = await rt.start(load_skill(refund_yaml), MESSAGE)
            errors = events_of(job, "parse_error")
            assert errors and "nested" in errors[0].message
            assert "engine_error" not in kinds(job)
            assert job.status is not JobStatus.RUNNING
        finally:
            await store.close()

    run(main())


def test_a_lone_surrogate_in_a_final_answer_is_a_parse_error(
    tmp_path: Path, refund_yaml: Path
) -> None:
    async def main() -> None:
        replies = [
            intent(order_id=ORDER, amount=40),
            call("verify_identity", "c1", order_id=ORDER),
            final(answer="Done \ud800 for you"),
            call("check_eligibility", "c2", order_id=ORDER, amount=40),
            call("process_refund", "c3", order_id=ORDER, amount=40),
            final(),
            gate(),
            polish(),
        ]
        async with runtime_for(tmp_path / "jobs.db", replies) as (rt, model):
            job = await rt.start(load_skill(refund_yaml), MESSAGE)
            errors = events_of(job, "parse_error")
            assert errors and "surrogate" in errors[0].message
            assert job.status is JobStatus.COMPLETED
            assert job.record.reply is not None and "\ud800" not in job.record.reply
            model.assert_complete()

    run(main())


def test_a_polished_reply_with_a_lone_surrogate_is_not_used(
    tmp_path: Path, refund_yaml: Path
) -> None:
    async def main() -> None:
        script = [*approval_script()[:-1], polish(POLISHED + " \udc00")]
        script[0] = intent(order_id=ORDER, amount=40)
        script[2:4] = [
            call("check_eligibility", "c2", order_id=ORDER, amount=40),
            call("process_refund", "c3", order_id=ORDER, amount=40),
        ]
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, _):
            job = await rt.start(load_skill(refund_yaml), MESSAGE)
            assert job.status is JobStatus.COMPLETED
            rejected = events_of(job, "polish_rejected")
            assert rejected and "surrogate" in rejected[0].message
            assert job.record.reply is not None and "\udc00" not in job.record.reply

    run(main())


class _BugError(Exception):
    """An engine bug, acted out."""


def _buggy_planner(request: ChatRequest) -> ChatResponse:
    if request.stage == "intent":
        return ChatResponse(text='{"intent": "intent_refund", "entities": {}}')
    raise _BugError("internal detail: secret=s3cr3t")


def test_an_unexpected_error_is_retried_then_fails_the_job(
    tmp_path: Path, refund_yaml: Path
) -> None:
    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            rt = Runtime(store, FunctionModel(_buggy_planner), executors=Executors())
            job = await rt.start(load_skill(refund_yaml), MESSAGE)
            assert job.status is JobStatus.FAILED
            assert job.record.outcome_class is OutcomeClass.INTERNAL_ERROR
            errors = events_of(job, "engine_error")
            assert len(errors) == MAX_ENGINE_ERRORS
            assert errors[0].data["error_type"] == "_BugError"
            assert errors[0].reason_code == "INTERNAL_ERROR"
            assert job.record.reply is not None and "s3cr3t" not in job.record.reply
            # every call made is recorded and counted, the failed runs' included
            stages = [c.stage for c in job.model_calls]
            assert stages == ["intent", "planner", "intent", "planner", "intent", "planner"]
            assert [c.seq for c in job.model_calls] == [1, 2, 3, 4, 5, 6]
            assert job.record.state["model_calls"] == 6
            stored = await store.get(job.id)
            assert stored is not None and stored.status is JobStatus.FAILED
        finally:
            await store.close()

    run(main())


def test_recovery_counts_the_errors_of_earlier_runs(tmp_path: Path, refund_yaml: Path) -> None:
    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            rt = Runtime(store, FunctionModel(_buggy_planner), executors=Executors())
            job = await rt.start(load_skill(refund_yaml), MESSAGE)
            record = await store.get(job.id)
            assert record is not None
            # as if a worker had died after two failed tries: the job is left running
            record.state["engine_errors"] = MAX_ENGINE_ERRORS - 1
            record.state["phase"] = "planning"
            record.status, record.outcome_class = JobStatus.RUNNING, None
            await store.save(record, expected_version=record.version)
            again = await rt.recover(job.id)
            assert again.status is JobStatus.FAILED
            assert again.record.outcome_class is OutcomeClass.INTERNAL_ERROR
            assert len(events_of(again, "engine_error")) == MAX_ENGINE_ERRORS + 1
        finally:
            await store.close()

    run(main())


def test_a_context_or_input_that_is_not_json_is_refused_at_the_door(
    tmp_path: Path, refund_yaml: Path
) -> None:
    """A library caller's context or input that JSON cannot hold (NaN, a tuple) is a
    ``UsageError`` naming it before any job is stored, not an engine error later in the
    gate; a lone surrogate in the message or the context is mended, not refused."""

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", input_script()) as (rt, _):
            skill = load_skill(refund_yaml)
            for context in ({"limit": float("nan")}, {"ids": (1, 2)}):
                with pytest.raises(UsageError, match="context"):
                    await rt.start(skill, MESSAGE, context=context)
            assert await rt.store.list() == []
            job = await rt.start(skill, "Refund \ud800 750", context={"note": "\udc00"})
            assert job.record.state["message"] == "Refund \ufffd 750"
            assert job.record.state["context"]["note"] == "\ufffd"
            with pytest.raises(UsageError, match="input"):
                await rt.resume(job.id, input={"order_id": float("inf")})
            assert "engine_error" not in kinds(job)

    run(main())
