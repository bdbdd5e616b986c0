"""The job runtime: start a job, resume it with input or an approval, recover it.

    runtime = Runtime(store=SQLiteJobStore("jobs.db"), model=OfflineModel())
    job = await runtime.start(skill, "Refund 750 for ORD-12345", context={"user_id": "u1"})
    if job.status == "paused":
        job = await runtime.resume(job.id, approval="approve", role="supervisor")

Pauses own nothing: a paused job is a stored record, and any runtime with the same
store can resume it. A resume is applied exactly once (the save is checked against
the version read), and a crashed job is continued by :meth:`Runtime.recover`.

``start``, ``resume`` and ``recover`` return the job with its events and model calls
(two more reads of the store); pass ``detail=False`` for the record alone, as the
engine holds it, with no read at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from skillwire.core.chat import ChatModel
from skillwire.core.issues import ConflictError, ForbiddenError, NotFoundError, UsageError
from skillwire.core.job import Event, JobRecord, JobStatus, ModelCallRecord, OutcomeClass
from skillwire.core.proposal import ToolProposal
from skillwire.core.store import JobStore, VersionConflict
from skillwire.engine.pipeline import Pipeline, _answer_call
from skillwire.engine.run import EngineLimits, JobRun, new_job_id, now
from skillwire.engine.state import JobState
from skillwire.engine.turns import Turn, Turns
from skillwire.policy.access import BasePolicy
from skillwire.policy.gate import Gate
from skillwire.policy.json_schema import schema_validator
from skillwire.skills.model import Skill
from skillwire.tools import Executors

__all__ = ["JobView", "Runtime", "SkillResolver"]

SkillResolver = Callable[[JobRecord], Skill]
"""Finds the skill of a stored job (by ``skill_id`` or the recorded source)."""


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
    """Runs jobs of any skill against one store, one model and one set of executors."""

    def __init__(
        self,
        store: JobStore,
        model: ChatModel,
        *,
        gate_model: ChatModel | None = None,
        executors: Executors | None = None,
        base_policy: BasePolicy | None = None,
        skills: SkillResolver | None = None,
        limits: EngineLimits | None = None,
        turns: int | None = 64,
    ) -> None:
        self.store = store
        self.turns = Turns(turns)
        self.base_policy = base_policy or BasePolicy()
        self.limits = limits or EngineLimits()
        self.pipeline = Pipeline(model, gate_model or model, executors or Executors())
        self._resolve = skills
        self._gates: dict[int, Gate] = {}
        self._known: dict[str, Skill] = {}

    def gate_for(self, skill: Skill) -> Gate:
        """The compiled gate of ``skill`` (compiled once per skill object)."""
        gate = self._gates.get(id(skill))
        if gate is None or gate.skill is not skill:
            gate = Gate.for_skill(skill, base=self.base_policy)
            self._gates[id(skill)] = gate
        return gate

    def _skill_of(self, record: JobRecord) -> Skill:
        if self._resolve is not None:
            return self._resolve(record)
        skill = self._known.get(record.skill_id)
        if skill is None:
            from skillwire.skills import load_skill

            source = str(record.state.get("skill_source") or "")
            if not source:
                raise NotFoundError(f"job {record.id}: its skill '{record.skill_id}' is unknown")
            skill = load_skill(source)
            self._known[skill.id] = skill
        return skill

    def _run(self, record: JobRecord, skill: Skill, turn: Turn) -> JobRun:
        """A run of a stored job: it must save before its first effect (``claimed``)."""
        return JobRun(
            record,
            JobState.from_dict(record.state),
            skill,
            self.gate_for(skill),
            self.store,
            self.limits,
            claimed=False,
            turn=turn,
        )

    async def _in_turn(self, work: Callable[[Turn], Awaitable[JobView]]) -> JobView:
        """``work(turn)`` once a turn is taken (:mod:`skillwire.engine.turns`); the turn
        is given back however it ends."""
        turn = self.turns.turn()
        await turn.take()
        try:
            return await work(turn)
        finally:
            turn.give()

    async def start(
        self,
        skill: Skill,
        message: str,
        *,
        context: Mapping[str, Any] | None = None,
        owner: str | None = None,
        detail: bool = True,
    ) -> JobView:
        """Create a job for ``message`` and run it until it pauses or ends.

        The job is stored before any model is called, so a crash never loses it.
        """
        if not message.strip():
            raise UsageError("the message is empty")
        return await self._in_turn(
            lambda turn: self._start(turn, skill, message, context, owner, detail)
        )

    async def _start(
        self,
        turn: Turn,
        skill: Skill,
        message: str,
        context: Mapping[str, Any] | None,
        owner: str | None,
        detail: bool,
    ) -> JobView:
        self._known.setdefault(skill.id, skill)
        ctx = dict(context or {})
        at = now()
        state = JobState(message=message, skill_source=skill.origin, context=ctx)
        record = JobRecord(
            new_job_id(),
            skill.id,
            JobStatus.QUEUED,
            None,
            owner or str(ctx.get("user_id", "")),
            at,
            at,
            state=state.to_dict(),
        )
        run = self._run(record, skill, turn)
        run.event("job", "created", message, skill=skill.id, context=ctx)
        run.record.status = JobStatus.RUNNING
        run.event("job", "status", "running", status="running")
        run.record.state = run.state.to_dict()
        run.record = await self.store.create(run.record, run.new_events)
        run.new_events = []
        run.claimed = True
        await self.pipeline.advance(run)
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
        correlation_id: str | None = None,
        detail: bool = True,
    ) -> JobView:
        """Give a paused job what it waits for, and run it on.

        Input that does not satisfy a field's schema keeps the job paused under the
        same correlation id and says what was wrong. An approval is accepted only from
        the role the rule names. Raises NotFoundError, ConflictError (not paused, stale
        correlation id, resumed meanwhile), ForbiddenError (wrong role), UsageError.
        """
        return await self._in_turn(
            lambda turn: self._resume(turn, job_id, input, approval, role, correlation_id, detail)
        )

    async def _resume(
        self,
        turn: Turn,
        job_id: str,
        input: Mapping[str, Any] | None,
        approval: Literal["approve", "deny"] | None,
        role: str | None,
        correlation_id: str | None,
        detail: bool,
    ) -> JobView:
        record = await self.store.get(job_id)
        if record is None:
            raise NotFoundError(f"no job '{job_id}'")
        waiting = record.waiting
        if record.status is not JobStatus.PAUSED or waiting is None:
            raise ConflictError(f"job {job_id} is {record.status}, not paused")
        if correlation_id is not None and correlation_id != waiting.correlation_id:
            raise ConflictError(f"job {job_id} is waiting under another correlation id")
        run = self._run(record, self._skill_of(record), turn)
        try:
            if run.state.pause_kind == "approval":
                await self._approve(run, approval, role)
            elif run.state.pause_kind == "operator":
                await self._operator(run, input, role)
            elif not await self._give_input(run, input):
                return await self._outcome(run, detail)
            await self.pipeline.advance(run)
        except VersionConflict as exc:
            raise ConflictError(f"job {job_id} changed meanwhile (resumed twice?)") from exc
        return await self._outcome(run, detail)

    async def _give_input(self, run: JobRun, values: Mapping[str, Any] | None) -> bool:
        waiting = run.record.waiting
        assert waiting is not None
        if values is None:
            raise UsageError(f"job {run.id} waits for input: {', '.join(waiting.requested_fields)}")
        problems = []
        accepted: dict[str, Any] = {}
        for name in waiting.requested_fields:
            if name not in values or values[name] in (None, ""):
                problems.append(f"{name} is missing")
                continue
            schema = waiting.field_schemas.get(name) or {}
            errors = sorted(
                schema_validator(schema).iter_errors(values[name]), key=lambda e: e.message
            )
            if errors:
                problems.append(f"{name}: {errors[0].message}")
            else:
                accepted[name] = values[name]
        if problems:
            waiting.last_prompt_at = now()
            waiting.error = "; ".join(problems)
            run.event(
                "resume",
                "input_rejected",
                waiting.error,
                reason_code=waiting.reason_code,
                correlation_id=waiting.correlation_id,
            )
            await run.persist()
            return False
        state = run.state
        state.inputs.update(accepted)
        state.evidence += 1
        if state.pending is not None:
            pending = ToolProposal.from_dict(state.pending)
            tool = run.skill.tool(pending.tool)
            names = set(tool.input_names()) if tool else set()
            args = {**pending.args, **{k: v for k, v in accepted.items() if k in names}}
            state.pending = {**state.pending, "args": args}
        ignored = sorted(set(values) - set(waiting.requested_fields))
        run.event(
            "resume",
            "input_received",
            ", ".join(sorted(accepted)),
            inputs=accepted,
            ignored=ignored,
            correlation_id=waiting.correlation_id,
        )
        self._unpause(run)
        return True

    async def _approve(self, run: JobRun, approval: str | None, role: str | None) -> None:
        waiting = run.record.waiting
        assert waiting is not None
        if approval not in ("approve", "deny"):
            raise UsageError(
                f"job {run.id} waits for approval by {waiting.approver}: approve or deny"
            )
        if role != waiting.approver:
            raise ForbiddenError(
                f"only the role '{waiting.approver}' may {approval} this call "
                f"(you are '{role or 'no role'}')"
            )
        state = run.state
        if approval == "approve":
            state.grants.append(
                {"tool": waiting.tool, "args": waiting.arguments or {}, "role": role}
            )
            run.event(
                "resume",
                "approval_granted",
                f"{role} approved {waiting.tool}",
                role=role,
                tool=waiting.tool,
                args=waiting.arguments,
                correlation_id=waiting.correlation_id,
            )
        else:
            pending = state.pending or {}
            state.pending = None
            state.denials.append(
                {"tool": waiting.tool, "args": waiting.arguments or {}, "role": role}
            )
            _answer_call(
                run,
                str(pending.get("call_id", "")),
                f"DENIED by {role}: {waiting.tool} did not run. Do not try the same call again.",
            )
            run.event(
                "resume",
                "approval_denied",
                f"{role} denied {waiting.tool}",
                role=role,
                tool=waiting.tool,
                args=waiting.arguments,
                reason_code="APPROVAL_DENIED",
                correlation_id=waiting.correlation_id,
            )
        self._unpause(run)

    async def _operator(
        self, run: JobRun, values: Mapping[str, Any] | None, role: str | None
    ) -> None:
        outcome = (values or {}).get("outcome")
        if outcome not in ("ran", "not_run"):
            raise UsageError("give outcome=ran (the tool did run) or outcome=not_run (run it)")
        flight = run.state.in_flight
        if flight is None:
            raise ConflictError(f"job {run.id} has no interrupted tool call")
        run.event(
            "resume",
            "operator_decided",
            f"{role or 'operator'}: the tool {outcome}",
            outcome=outcome,
            tool=flight.get("tool"),
        )
        if outcome == "ran":
            run.state.in_flight = None
            run.state.history.append(
                {
                    "tool": flight["tool"],
                    "args": flight["args"],
                    "result": {"recovered": True},
                    "ok": True,
                    "error": "",
                    "state_changes": {},
                }
            )
            run.state.evidence += 1
            _answer_call(run, str(flight.get("call_id", "")), '{"recovered": true}')
        self._unpause(run)
        if outcome == "not_run":
            # run_tool saves (status running, call in flight) before the tool runs again,
            # so a crash during this run leads to the operator once more, never a rerun
            await self.pipeline.run_tool(
                run, flight["tool"], flight["args"], flight["key"], str(flight.get("call_id", ""))
            )

    def _unpause(self, run: JobRun) -> None:
        run.record.waiting = None
        run.state.pause_kind = None
        run.set_status(JobStatus.RUNNING, None)

    async def recover(self, job_id: str, *, detail: bool = True) -> JobView:
        """Continue a job a crash left ``queued`` or ``running``.

        The job goes on from its last save. A tool that started but did not finish is
        run again only if it declares ``idempotent: true``; otherwise the job pauses for
        an operator (``OPERATOR_ACTION_REQUIRED``), who resumes it with ``outcome=ran``
        or ``outcome=not_run``. Raises ConflictError if another worker took the job.
        """
        return await self._in_turn(lambda turn: self._recover(turn, job_id, detail))

    async def _recover(self, turn: Turn, job_id: str, detail: bool) -> JobView:
        record = await self.store.get(job_id)
        if record is None:
            raise NotFoundError(f"no job '{job_id}'")
        if record.status not in (JobStatus.QUEUED, JobStatus.RUNNING):
            return await self.view(job_id, detail=detail)
        run = self._run(record, self._skill_of(record), turn)
        run.event("job", "recovered", "continuing after an interruption")
        flight = run.state.in_flight
        try:
            if flight is not None:
                tool = run.skill.tool(flight["tool"])
                if tool is not None and tool.idempotent:
                    run.event(
                        "execute",
                        "tool_rerun",
                        f"{tool.name} is idempotent: run again",
                        tool=tool.name,
                        idempotency_key=flight["key"],
                    )
                    await self.pipeline.run_tool(
                        run,
                        tool.name,
                        flight["args"],
                        flight["key"],
                        str(flight.get("call_id", "")),
                    )
                else:
                    run.state.pause_kind = "operator"
                    prompt = (
                        f"{flight['tool']} started but did not finish, and it is not "
                        "idempotent. Check whether it ran, then resume with outcome=ran "
                        "or outcome=not_run."
                    )
                    waiting = run.new_waiting(
                        "TOOL_INTERRUPTED",
                        ["outcome"],
                        prompt,
                        tool=flight["tool"],
                        arguments=flight["args"],
                        field_schemas={"outcome": {"enum": ["ran", "not_run"]}},
                    )
                    run.pause(waiting, OutcomeClass.OPERATOR_ACTION_REQUIRED)
                    await run.persist()
                    return await self._outcome(run, detail)
            await self.pipeline.advance(run)
        except VersionConflict as exc:
            raise ConflictError(f"job {job_id} is being worked on elsewhere") from exc
        return await self._outcome(run, detail)

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
