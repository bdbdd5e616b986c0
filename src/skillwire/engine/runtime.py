"""The job runtime: start a job, resume it with input or an approval, recover it.

    runtime = Runtime(SQLiteJobStore("jobs.db"), OfflineModel(), executors=Executors())
    job = await runtime.start(skill, "Refund 750 for ORD-12345", context={"user_id": "u1"})
    if job.status == "paused":
        job = await runtime.resume(
            job.id, approval="approve", role="supervisor", decided_by="sam",
            correlation_id=job.record.waiting.correlation_id,
        )

Pauses own nothing: a paused job is a stored record, and any runtime with the same
store can resume it. A resume is applied exactly once (the save is checked against
the version read), and a crashed job is continued by :meth:`Runtime.recover`.

``start``, ``resume`` and ``recover`` return the job with its events and model calls
(two more reads of the store); pass ``detail=False`` for the record alone, as the
engine holds it, with no read at all. Each holds a turn at engine work
(:mod:`skillwire.engine.turns`) for its whole run; what a resume gives a paused job is
in :mod:`skillwire.engine.resume`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from skillwire.core.chat import ChatModel
from skillwire.core.errors import (
    ConflictError,
    NotFoundError,
    ScriptError,
    UsageError,
    VersionConflict,
)
from skillwire.core.executor import ExecutorRegistry
from skillwire.core.job import (
    Event,
    EventKind,
    JobRecord,
    JobStatus,
    ModelCallRecord,
    OutcomeClass,
)
from skillwire.core.plainjson import mended, mended_text
from skillwire.core.store import JobStore
from skillwire.core.tracing import end_job, job_span
from skillwire.engine.compiled import CompiledSkill, CompiledSkills, SkillResolver
from skillwire.engine.pipeline import Pipeline
from skillwire.engine.resume import apply_resume, recover_in_flight
from skillwire.engine.run import EngineLimits, JobRun, new_job_id, now
from skillwire.engine.state import JobState, Phase
from skillwire.engine.turns import Turn, Turns
from skillwire.policy.access import BasePolicy
from skillwire.policy.gate import Gate
from skillwire.policy.gate_input import checked_mapping
from skillwire.skills.model import Skill
from skillwire.skills.model_tools import Tool

__all__ = ["MAX_ENGINE_ERRORS", "JobView", "Runtime", "SkillResolver"]

MAX_ENGINE_ERRORS = 3
"""Unexpected errors a job may meet (counted in its saved state, across runs and
recoveries) before it fails with ``INTERNAL_ERROR``: a bug that repeats on every try
ends the job instead of wedging it."""

INTERNAL_ERROR_REPLY = (
    "Sorry, something went wrong on our side and your request could not be completed. "
    "Nothing more will be done for it; please try again later."
)
"""The reply of a job an engine error failed (the error itself stays in the events)."""

Step = Callable[[JobRun], Awaitable[None]]


@dataclass
class JobView:
    """A job as callers see it: the record with its events and model calls.

    ``detailed`` is False for a summary (``detail=False``): then ``events`` and
    ``model_calls`` are empty because they were not read, and :meth:`to_dict` leaves
    them out.
    """

    record: JobRecord
    events: list[Event]
    model_calls: list[ModelCallRecord]
    detailed: bool = True

    @property
    def id(self) -> str:
        """The job id."""
        return self.record.id

    @property
    def status(self) -> JobStatus:
        """The job's status."""
        return self.record.status

    def to_dict(self) -> dict[str, Any]:
        """``id, status, outcome_class, waiting, reply, fields, events, model_calls``
        (the last two only when ``detailed``)."""
        r = self.record
        out: dict[str, Any] = {
            "id": r.id,
            "skill_id": r.skill_id,
            "owner": r.owner,
            "status": str(r.status),
            "outcome_class": str(r.outcome_class) if r.outcome_class else None,
            "waiting": r.waiting.to_dict() if r.waiting else None,
            "reply": r.reply,
            "fields": r.fields,
            "created_at": r.created_at,
            "updated_at": r.updated_at,
            "version": r.version,
        }
        if self.detailed:
            out["events"] = [e.to_dict() for e in self.events]
            out["model_calls"] = [c.to_dict() for c in self.model_calls]
        return out


class Runtime:
    """Runs jobs of any skill against one store, one model and one set of executors.

    ``executors`` runs the tools the gate allows (the program passes
    ``skillwire.tools.Executors()``); ``skills`` finds the skill of a stored job when
    this runtime did not start it (by default: loaded from the source the job recorded).
    ``classifier`` (the program passes ``skillwire.models.offline.OfflineModel()``)
    decides a job's intent without asking ``model`` when a skill lets it
    (``intents.thresholds.accept``; :mod:`skillwire.engine.intent`).
    """

    def __init__(
        self,
        store: JobStore,
        model: ChatModel,
        *,
        executors: ExecutorRegistry[Tool],
        gate_model: ChatModel | None = None,
        base_policy: BasePolicy | None = None,
        skills: SkillResolver | None = None,
        limits: EngineLimits | None = None,
        turns: int | None = 64,
        classifier: ChatModel | None = None,
    ) -> None:
        self.store = store
        self.turns = Turns(turns)
        self.base_policy = base_policy or BasePolicy()
        self.limits = limits or EngineLimits()
        self.pipeline = Pipeline(model, gate_model or model, executors, classifier)
        self.skills = CompiledSkills(self.base_policy, skills, executors)

    async def aclose(self) -> None:
        """Close the models this runtime calls, each once. The store stays open: it is
        the caller's, and several runtimes may share it."""
        models = (self.pipeline.model, self.pipeline.finalizer.model)
        for model in {id(m): m for m in models}.values():
            await model.aclose()

    def gate_for(self, skill: Skill) -> Gate:
        """The compiled gate of ``skill`` (compiled once per skill object)."""
        return self.skills.of(skill).gate

    def _turn(self) -> Turn:
        """The scope of one unit of work: ``async with self._turn() as turn`` takes a
        turn at engine work and gives it back however the work ends."""
        return self.turns.turn()

    def _run(self, record: JobRecord, compiled: CompiledSkill, turn: Turn) -> JobRun:
        """A run of a stored job: it must save before its first effect (``claimed``)."""
        return JobRun(
            record,
            JobState.from_dict(record.state, record.state_version),
            compiled,
            self.store,
            self.limits,
            claimed=False,
            turn=turn,
        )

    async def start(
        self,
        skill: Skill,
        message: str,
        *,
        context: Mapping[str, Any] | None = None,
        owner: str | None = None,
        detail: bool = True,
        job_id: str | None = None,
    ) -> JobView:
        """Create a job for ``message`` and run it until it pauses or ends.

        The job is stored before any model is called, so a crash never loses it.
        ``job_id`` is the new job's id when the caller chose it already (a queue that
        told the user the id before a worker took the start); a job with that id
        existing raises ``VersionConflict`` before anything runs.
        """
        if not message.strip():
            raise UsageError("the message is empty")
        # what a caller gives is mended (lone surrogates) and must be plain JSON here, at
        # the door, not later in the gate, where it would be an engine error
        message = mended_text(message)
        ctx = dict(checked_mapping(mended(dict(context or {})), "context"))
        async with self._turn() as turn:
            compiled = await self.skills.starting(skill)
            at = now()
            record = JobRecord(
                job_id or new_job_id(),
                skill.id,
                JobStatus.QUEUED,
                None,
                owner or str(ctx.get("user_id", "")),
                at,
                at,
            )
            state = JobState(
                message=message,
                skill_source=skill.origin,
                skill_version=skill.version_hash,
                context=ctx,
            )
            run = JobRun(record, state, compiled, self.store, self.limits, turn=turn)
            run.event(EventKind.CREATED, message, skill=skill.id, context=ctx)
            run.record.status = JobStatus.RUNNING
            run.event(EventKind.STATUS, "running", status="running")
            with job_span(run.id, skill.id, "start") as traceparent:
                run.state.trace = traceparent or ""  # kept: the job's later spans' parent
                run.record.state = run.state.to_dict()
                run.record = await self.store.create(run.record, run.new_events)
                run.new_events = []
                run = await self._guarded(run, turn, self.pipeline.advance)
                end_job(run.record.status, run.record.outcome_class)
            return await self._outcome(run, detail)

    async def view(self, job_id: str, *, detail: bool = True) -> JobView:
        """The job, with its events and model calls unless ``detail`` is False."""
        record = await self.store.get(job_id)
        if record is None:
            raise NotFoundError(f"no job '{job_id}'")
        if not detail:
            return JobView(record, [], [], detailed=False)
        return JobView(
            record, await self.store.events(job_id), await self.store.model_calls(job_id)
        )

    async def _outcome(self, run: JobRun, detail: bool) -> JobView:
        """The job as this run left it: the record in hand, events read only if asked."""
        if run.new_events or run.new_calls:
            await run.persist()  # every way out saves; this only guards against a slip
        if not detail:
            return JobView(run.record, [], [], detailed=False)
        return JobView(
            run.record, await self.store.events(run.id), await self.store.model_calls(run.id)
        )

    async def resume(
        self,
        job_id: str,
        *,
        input: Mapping[str, Any] | None = None,
        approval: Literal["approve", "deny"] | None = None,
        role: str | None = None,
        decided_by: str | None = None,
        correlation_id: str | None = None,
        retry: bool = False,
        detail: bool = True,
    ) -> JobView:
        """Give a paused job what it waits for, and run it on.

        Input that does not satisfy a field's schema keeps the job paused under the
        same correlation id and says what was wrong. An approval or a denial names the
        pause it answers (``correlation_id``, required) and who decides (``decided_by``,
        required: a principal's name, recorded in the event); it is accepted only from
        the role the rule names, and an approval not from the job's owner unless the
        rule says ``self_approval: allowed``. A job a model outage paused
        (``MODEL_UNAVAILABLE``) takes only ``retry=True`` (``decided_by`` recorded as who
        asked): the stage that failed runs again from the saved state, and a model still
        unreachable pauses it again. Raises NotFoundError, ConflictError (not paused,
        stale correlation id, resumed meanwhile, a retry of a job no outage paused, input
        or a decision for one it did), ForbiddenError (wrong role, self-approval),
        UsageError (a retry together with input or a decision).
        """
        if retry and (input is not None or approval is not None):
            raise UsageError("a retry gives nothing: no input, no approval or denial with it")
        async with self._turn() as turn:
            record = await self.store.get(job_id)
            if record is None:
                raise NotFoundError(f"no job '{job_id}'")
            waiting = record.waiting
            if record.status is not JobStatus.PAUSED or waiting is None:
                raise ConflictError(f"job {job_id} is {record.status}, not paused")
            if correlation_id is not None and correlation_id != waiting.correlation_id:
                raise ConflictError(f"job {job_id} is waiting under another correlation id")
            if retry and record.outcome_class is not OutcomeClass.MODEL_UNAVAILABLE:
                raise ConflictError(
                    f"job {job_id} is paused {record.outcome_class}, not by a model outage "
                    "(MODEL_UNAVAILABLE): there is nothing to retry"
                )
            run = self._run(record, await self.skills.of_record(record), turn)
            with job_span(job_id, record.skill_id, "resume", run.state.trace):
                try:
                    given = await apply_resume(
                        run,
                        self.pipeline,
                        input=input,
                        approval=approval,
                        role=role,
                        decided_by=decided_by,
                        correlation_id=correlation_id,
                        retry=retry,
                    )
                    if given:
                        run = await self._guarded(run, turn, self.pipeline.advance)
                except VersionConflict as exc:
                    raise ConflictError(f"job {job_id} changed meanwhile (resumed twice?)") from exc
                end_job(run.record.status, run.record.outcome_class)
            return await self._outcome(run, detail)

    async def recover(self, job_id: str, *, detail: bool = True) -> JobView:
        """Continue a job a crash left ``queued`` or ``running``.

        The job goes on from its last save. A tool that started but did not finish is
        run again only if it declares ``idempotent: true``; otherwise the job pauses for
        an operator (``OPERATOR_ACTION_REQUIRED``), who resumes it with ``outcome=ran``
        or ``outcome=not_run``. Raises ConflictError if another worker took the job.
        """
        async with self._turn() as turn:
            record = await self.store.get(job_id)
            if record is None:
                raise NotFoundError(f"no job '{job_id}'")
            if record.status not in (JobStatus.QUEUED, JobStatus.RUNNING):
                return await self.view(job_id, detail=detail)
            run = self._run(record, await self.skills.of_record(record), turn)
            run.event(EventKind.RECOVERED, "continuing after an interruption")
            with job_span(job_id, record.skill_id, "recover", run.state.trace):
                try:
                    run = await self._guarded(run, turn, self._continue)
                except VersionConflict as exc:
                    raise ConflictError(f"job {job_id} is being worked on elsewhere") from exc
                end_job(run.record.status, run.record.outcome_class)
            return await self._outcome(run, detail)

    async def _continue(self, run: JobRun) -> None:
        """Go on from the last save: settle a call left in flight, then advance."""
        flight = run.state.in_flight
        if flight is None or not await recover_in_flight(run, self.pipeline, flight):
            await self.pipeline.advance(run)

    async def _guarded(self, run: JobRun, turn: Turn, step: Step) -> JobRun:
        """Run ``step``; the run that ends it (a new one after an unexpected error).

        An unexpected error (a bug in a stage, a tool's or a model's) is recorded as an
        ``engine_error`` event on the job as last saved, counted in its state, and the
        job goes on from there as recovery would; at :data:`MAX_ENGINE_ERRORS` it fails
        with ``INTERNAL_ERROR``. What the run did since its last save is dropped with it
        (only idempotent tools run again), except its model calls: they are recorded
        and counted. Not caught: a
        save that conflicts (another worker has the job), a failing store (nothing can
        be recorded: the job stays as last saved, for recovery), a test script's
        mistake, and a cancellation.
        """
        while True:
            try:
                await step(run)
                return run
            except (VersionConflict, ScriptError):
                raise
            except Exception as exc:
                if run.saving:
                    raise
                run = await self._record_error(run, turn, exc)
            if run.record.status not in (JobStatus.QUEUED, JobStatus.RUNNING):
                return run
            step = self._continue

    async def _record_error(self, failed: JobRun, turn: Turn, exc: Exception) -> JobRun:
        """The job as last saved, with the error recorded and saved (failed once the
        bound is reached)."""
        await turn.take()  # the error may have come while the turn was given away
        record = await self.store.get(failed.id)
        if record is None:
            raise exc
        run = self._run(record, failed.compiled, turn)
        state = run.state
        # the model calls the failed run made were made: they count against the budget
        # and are recorded, numbered on from the last save
        for call in failed.new_calls:
            state.call_seq += 1
            state.model_calls += 1
            run.new_calls.append(replace(call, seq=state.call_seq))
        state.engine_errors += 1
        final = state.engine_errors >= MAX_ENGINE_ERRORS
        run.event(
            EventKind.ENGINE_ERROR,
            f"{type(exc).__name__}: {str(exc)[:200]}",
            reason_code=OutcomeClass.INTERNAL_ERROR,
            error_type=type(exc).__name__,
            phase=str(failed.state.phase),
            attempt=state.engine_errors,
            final=final,
        )
        if final and record.status in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.PAUSED):
            state.phase = Phase.DONE
            state.pending = None
            run.record.waiting = None
            run.record.reply = INTERNAL_ERROR_REPLY
            run.set_status(JobStatus.FAILED, OutcomeClass.INTERNAL_ERROR)
        await run.persist()
        return run

    async def recover_all(self) -> list[str]:
        """Recover every job left queued or running; the ids recovered.

        Jobs another worker holds (a ConflictError) are skipped and not listed.
        """
        stranded: list[str] = []
        for status in (JobStatus.QUEUED, JobStatus.RUNNING):
            offset = 0
            while page := await self.store.list(status=status, limit=500, offset=offset):
                stranded.extend(r.id for r in page)
                offset += len(page)
        ids = []
        for job_id in dict.fromkeys(stranded):
            try:
                await self.recover(job_id, detail=False)
            except ConflictError:
                continue
            ids.append(job_id)
        return ids
