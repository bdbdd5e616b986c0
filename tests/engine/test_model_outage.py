"""A model that cannot be reached pauses the job (issue 17 item 4): ``MODEL_UNAVAILABLE``,
saved with everything done so far, and a retry runs the stage that failed again (intent,
planner, finalization gate or polisher) with no tool run twice. Other model errors fail
the job; a retry of a job no outage paused is refused and changes nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import (
    ORDER,
    POLISHED,
    CountingStore,
    Crash,
    approval_script,
    decide,
    events_of,
    kinds,
    ledger_runs,
    ledger_skill,
    run,
)

from skillwire.core.chat import ChatRequest, ChatResponse
from skillwire.core.errors import (
    ConflictError,
    ModelConfigError,
    ModelError,
    ModelRequestError,
    ModelUnavailableError,
    UsageError,
)
from skillwire.core.job import JobRecord, JobStatus, OutcomeClass
from skillwire.engine import JobView, Runtime
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import Executors

MESSAGE = "Please refund 750 for order ORD-12345"
DOWN = "openai:gpt-test: HTTP 503: upstream down; gave up after 3 attempt(s)"
TOOLS = ("verify_identity", "check_eligibility", "process_refund")


class FlakyModel:
    """The approval script's replies, except that the calls numbered in ``fail_at``
    (1-based, failed calls counted) raise ``error`` and use no reply."""

    def __init__(
        self,
        replies: Sequence[Mapping[str, Any]],
        fail_at: Sequence[int],
        error: ModelError | None = None,
    ) -> None:
        self.script = ScriptedModel(list(replies))
        self.fail_at = set(fail_at)
        self.error = error or ModelUnavailableError(DOWN)
        self.calls = 0
        self.stages: list[str] = []

    @property
    def name(self) -> str:
        """The name model calls record."""
        return "openai:gpt-test"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """The next reply, or the error."""
        self.calls += 1
        self.stages.append(request.stage)
        if self.calls in self.fail_at:
            raise self.error
        return await self.script.complete(request)

    async def aclose(self) -> None:
        """Nothing to release."""


STAGE_CALLS = {"intent": 1, "planner": 3, "gate": 6, "polisher": 7}
"""For each stage, the call of the approval script that stage makes: 1 intent; 2, 3, 4
the planner's tool calls (the third pauses for approval); 5 the final answer; 6 the
gate; 7 the polisher. Call 3 comes after a tool ran; 6 and 7 after all three did."""


async def _drive(rt: Runtime, job: JobView, *, max_steps: int = 10) -> JobView:
    """Approve as the supervisor and retry outages until the job ends."""
    for _ in range(max_steps):
        record = job.record
        if record.status is not JobStatus.PAUSED:
            return job
        if record.outcome_class is OutcomeClass.APPROVAL_REQUIRED:
            job = await decide(rt, job.id)
        else:
            assert record.outcome_class is OutcomeClass.MODEL_UNAVAILABLE
            job = await rt.resume(job.id, retry=True, decided_by="ops")
    raise AssertionError("the job did not end")


@pytest.mark.parametrize("stage", list(STAGE_CALLS))
def test_an_outage_at_each_stage_pauses_and_a_retry_completes_with_no_tool_run_twice(
    tmp_path: Path, stage: str
) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    at = STAGE_CALLS[stage]
    model = FlakyModel(approval_script(), [at, at + 1])  # down twice: a second outage

    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            rt = Runtime(store, model, executors=Executors())
            job = await rt.start(load_skill(skill_file), MESSAGE, context={"user_id": "u1"})
            while job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED:
                job = await decide(rt, job.id)
            # the outage: paused, saved, spec 001's waiting object, nothing asked of the user
            assert job.status is JobStatus.PAUSED
            assert job.record.outcome_class is OutcomeClass.MODEL_UNAVAILABLE
            stored = await store.get(job.id)
            assert stored is not None and stored.status is JobStatus.PAUSED
            waiting = stored.waiting
            assert waiting is not None
            assert waiting.reason_code == "MODEL_UNAVAILABLE"
            assert waiting.requested_fields == []
            assert waiting.correlation_id and waiting.created_at and waiting.last_prompt_at
            assert (waiting.model, waiting.stage) == ("openai:gpt-test", stage)
            assert waiting.reason is not None and "HTTP 503" in waiting.reason
            assert "openai:gpt-test" in waiting.prompt_message
            ran_before = ledger_runs(ledger)
            outage = events_of(job, "model_unavailable")[0]
            assert outage.reason_code == "MODEL_UNAVAILABLE" and outage.data["stage"] == stage
            # still down: the retry pauses again, under a new correlation id
            again = await rt.resume(job.id, retry=True, decided_by="ops")
            assert again.record.outcome_class is OutcomeClass.MODEL_UNAVAILABLE
            assert again.record.waiting is not None
            assert again.record.waiting.correlation_id != waiting.correlation_id
            assert ledger_runs(ledger) == ran_before  # nothing ran while the model was down
            # the model is back: the retry runs the stage again and the job ends
            done = await _drive(rt, again)
        finally:
            await store.close()
        assert done.status is JobStatus.COMPLETED
        assert done.record.outcome_class is OutcomeClass.SUCCESS
        assert done.record.reply == POLISHED
        runs = ledger_runs(ledger)
        assert sorted(tool for tool, _ in runs) == sorted(TOOLS)
        assert all(count == 1 for count in runs.values()), runs
        model.script.assert_complete()  # each reply used once: no stage asked twice
        assert [e.seq for e in done.events] == list(range(1, len(done.events) + 1))
        assert kinds(done).count("model_unavailable") == 2
        assert kinds(done).count("retry_requested") == 2
        retried = events_of(done, "retry_requested")[0]
        assert retried.data["stage"] == stage and retried.data["requested_by"] == "ops"
        failed = [c for c in done.model_calls if not c.ok]
        assert [c.stage for c in failed] == [stage, stage]
        assert all("HTTP 503" in c.error for c in failed)
        # failed calls are recorded, not counted; the planner's iterations neither
        assert done.record.state["model_calls"] == 7
        assert done.record.state["iterations"] == 4
        assert "retry" not in done.record.state

    run(main())


def test_an_outage_before_any_save_loses_nothing_the_job_was_given(tmp_path: Path) -> None:
    skill_file, _ = ledger_skill(tmp_path / "skill")
    model = FlakyModel(approval_script(), [1])

    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            rt = Runtime(store, model, executors=Executors())
            job = await rt.start(load_skill(skill_file), MESSAGE, context={"user_id": "u1"})
            assert job.record.outcome_class is OutcomeClass.MODEL_UNAVAILABLE
            assert kinds(job)[:2] == ["created", "status"]
            assert job.record.state["message"] == MESSAGE
            assert job.record.state["context"] == {"user_id": "u1"}
        finally:
            await store.close()

    run(main())


@pytest.mark.parametrize(
    "error",
    [
        ModelConfigError("openai:gpt-test: the server refused the credentials (HTTP 401)"),
        ModelRequestError("openai:gpt-test: unknown model 'gpt-test' (HTTP 404)"),
        ModelError("openai:gpt-test: the server's reply is not a chat completion"),
    ],
    ids=type,
)
def test_a_model_error_that_is_not_an_outage_fails_the_job_and_cannot_be_retried(
    tmp_path: Path, error: ModelError
) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    model = FlakyModel(approval_script(), [3], error)

    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            rt = Runtime(store, model, executors=Executors())
            job = await rt.start(load_skill(skill_file), MESSAGE)
            assert job.status is JobStatus.FAILED
            assert job.record.outcome_class is OutcomeClass.INTERNAL_ERROR
            event = events_of(job, "model_error")[0]
            assert event.data == {
                "error_type": type(error).__name__,
                "model": "openai:gpt-test",
                "stage": "planner",
            }
            with pytest.raises(ConflictError, match="not paused"):
                await rt.resume(job.id, retry=True)
            assert ledger_runs(ledger)[("verify_identity", f"{job.id}:0")] == 1
        finally:
            await store.close()

    run(main())


async def _unchanged(store: SQLiteJobStore, before: JobRecord) -> None:
    after = await store.get(before.id)
    assert after is not None
    assert (after.version, after.status, after.outcome_class) == (
        before.version,
        before.status,
        before.outcome_class,
    )
    assert after.state == before.state
    assert after.waiting == before.waiting


def test_a_retry_of_a_job_no_outage_paused_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    model = FlakyModel(approval_script(), [])

    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            rt = Runtime(store, model, executors=Executors())
            job = await rt.start(load_skill(skill_file), MESSAGE, context={"user_id": "u1"})
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            before = await store.get(job.id)
            assert before is not None and before.waiting is not None
            calls = model.calls
            with pytest.raises(ConflictError, match="nothing to retry"):
                await rt.resume(job.id, retry=True)
            with pytest.raises(ConflictError, match="nothing to retry"):
                await rt.resume(job.id, retry=True, correlation_id=before.waiting.correlation_id)
            with pytest.raises(UsageError, match="a retry gives nothing"):
                await rt.resume(job.id, retry=True, approval="approve", role="supervisor")
            await _unchanged(store, before)
            assert model.calls == calls
            done = await _drive(rt, job)
            assert done.record.outcome_class is OutcomeClass.SUCCESS
            with pytest.raises(ConflictError, match="not paused"):
                await rt.resume(job.id, retry=True)
            assert all(count == 1 for count in ledger_runs(ledger).values())
        finally:
            await store.close()

    run(main())


def test_an_outage_pause_takes_no_input_and_no_decision(tmp_path: Path) -> None:
    skill_file, _ = ledger_skill(tmp_path / "skill")
    model = FlakyModel(approval_script(), [3])

    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            rt = Runtime(store, model, executors=Executors())
            job = await rt.start(load_skill(skill_file), MESSAGE, context={"user_id": "u1"})
            assert job.record.outcome_class is OutcomeClass.MODEL_UNAVAILABLE
            before = await store.get(job.id)
            assert before is not None and before.waiting is not None
            with pytest.raises(ConflictError, match="retry it"):
                await rt.resume(job.id, input={"order_id": ORDER})
            with pytest.raises(ConflictError, match="retry it"):
                await rt.resume(job.id, input={})
            with pytest.raises(UsageError, match="a retry gives nothing"):
                await rt.resume(job.id, retry=True, input={"order_id": ORDER})
            with pytest.raises(ConflictError, match="another correlation id"):
                await rt.resume(job.id, retry=True, correlation_id="not-the-pause")
            await _unchanged(store, before)
            done = await rt.resume(job.id, retry=True, correlation_id=before.waiting.correlation_id)
            assert done.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
        finally:
            await store.close()

    run(main())


@pytest.mark.parametrize("stage", ["gate", "polisher"])
def test_a_crash_during_a_retry_is_recovered_into_the_same_stage(
    tmp_path: Path, stage: str
) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    model = FlakyModel(approval_script(), [STAGE_CALLS[stage]])
    db = tmp_path / "jobs.db"

    async def main() -> None:
        store = SQLiteJobStore(db)
        try:
            rt = Runtime(store, model, executors=Executors())
            job = await rt.start(load_skill(skill_file), MESSAGE, context={"user_id": "u1"})
            job = await decide(rt, job.id)
            assert job.record.outcome_class is OutcomeClass.MODEL_UNAVAILABLE
        finally:
            await store.close()
        ran = ledger_runs(ledger)
        crashing = CountingStore(db, crash_at=1, after_write=True)  # the retry's first save
        try:
            rt = Runtime(crashing, model, executors=Executors())
            with pytest.raises(Crash):
                await rt.resume(job.id, retry=True, decided_by="ops")
        finally:
            await crashing.close()
        store = SQLiteJobStore(db)
        try:
            rt = Runtime(store, model, executors=Executors())
            stored = await store.get(job.id)
            assert stored is not None and stored.status is JobStatus.RUNNING
            assert stored.state["retry"]["stage"] == stage
            done = await rt.recover(job.id)
        finally:
            await store.close()
        assert done.record.outcome_class is OutcomeClass.SUCCESS
        assert done.record.reply == POLISHED
        assert ledger_runs(ledger) == ran  # no tool ran again
        model.script.assert_complete()  # the planner was not asked again

    run(main())
