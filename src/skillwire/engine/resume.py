"""What a paused or interrupted job is given before it runs on.

A paused job waits for one thing, named by its :class:`~skillwire.engine.state.PauseKind`:
input (values for the fields the gate or the finalization gate asked for), an
approver's decision on the pending call, an operator's word on a tool a crash
interrupted, or a retry of the stage a model outage stopped
(:mod:`skillwire.engine.outage`). :func:`apply_resume` checks what the caller gives
against what the job waits for and records it; :func:`recover_in_flight` decides what
happens to a tool that was running when the process died. The runtime
(:class:`~skillwire.engine.Runtime`) reads the job, calls these, and runs it on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from skillwire.core.errors import ConflictError, ForbiddenError, UsageError
from skillwire.core.job import EventKind, JobStatus, OutcomeClass
from skillwire.core.plainjson import mended, plain_dumps
from skillwire.engine.outage import apply_retry
from skillwire.engine.pipeline import Pipeline
from skillwire.engine.run import JobRun, now
from skillwire.engine.state import HistoryEntry, InFlightCall, PauseKind, Ruling
from skillwire.policy import schema_validator
from skillwire.policy.gate_input import checked_mapping

__all__ = ["apply_resume", "recover_in_flight"]


async def apply_resume(
    run: JobRun,
    pipeline: Pipeline,
    *,
    input: Mapping[str, Any] | None,
    approval: str | None,
    role: str | None,
    decided_by: str | None = None,
    correlation_id: str | None = None,
    retry: bool = False,
) -> bool:
    """Give the paused job what it waits for. True when it may run on; False when the
    input was rejected (the job stays paused, saved with the reason).

    Raises UsageError (nothing usable given; a decision without who decides or without
    the pause's correlation id), ForbiddenError (an approval by another role than the
    rule names, or by the job's owner when the rule does not allow it), ConflictError
    (an operator's word with no interrupted call; a ``retry`` of a job no model outage
    paused, or anything but a retry of one it did)."""
    kind = run.state.pause_kind
    if retry:
        apply_retry(run, decided_by)
    elif kind is PauseKind.MODEL:
        waiting = run.record.waiting
        model = waiting.model if waiting is not None else None
        raise ConflictError(
            f"job {run.id} waits for the model {model or ''} to be reachable again, "
            "not for input or a decision: retry it"
        )
    elif kind is PauseKind.APPROVAL:
        _approve(run, approval, role, decided_by, correlation_id)
    elif kind is PauseKind.OPERATOR:
        await _operator(run, pipeline, input, role)
    else:
        accepted = await _give_input(run, input)
        if accepted is None:
            return False
        # an answer is a new user message: it may add an intent (engine.intent_stage)
        said = "\n".join(v for v in accepted.values() if isinstance(v, str))
        await pipeline.add_intents(run, said)
    return True


async def _give_input(run: JobRun, values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Accept input for a pause for input or clarification (see :func:`apply_resume`):
    the values accepted, or None when they were rejected."""
    waiting = run.record.waiting
    assert waiting is not None
    if values is None:
        raise UsageError(f"job {run.id} waits for input: {', '.join(waiting.requested_fields)}")
    values = checked_mapping(mended(dict(values)), "input")  # as the context, at start
    problems = []
    accepted: dict[str, Any] = {}
    for name in waiting.requested_fields:
        if name not in values or values[name] in (None, ""):
            problems.append(f"{name} is missing")
            continue
        schema = waiting.field_schemas.get(name) or {}
        errors = sorted(schema_validator(schema).iter_errors(values[name]), key=lambda e: e.message)
        if errors:
            problems.append(f"{name}: {errors[0].message}")
        else:
            accepted[name] = values[name]
    if problems:
        waiting.last_prompt_at = now()
        waiting.error = "; ".join(problems)
        run.event(
            EventKind.INPUT_REJECTED,
            waiting.error,
            reason_code=waiting.reason_code,
            correlation_id=waiting.correlation_id,
        )
        await run.persist()
        return None
    state = run.state
    state.inputs.update(accepted)
    state.evidence += 1
    pending = state.pending
    if pending is not None:
        tool = run.skill.tool(pending.tool)
        names = set(tool.input_names()) if tool else set()
        args = {**pending.args, **{k: v for k, v in accepted.items() if k in names}}
        state.pending = replace(pending, args=args)
    ignored = sorted(set(values) - set(waiting.requested_fields))
    run.event(
        EventKind.INPUT_RECEIVED,
        ", ".join(sorted(accepted)),
        inputs=accepted,
        ignored=ignored,
        correlation_id=waiting.correlation_id,
    )
    _unpause(run)
    return accepted


def _approve(
    run: JobRun,
    approval: str | None,
    role: str | None,
    decided_by: str | None,
    correlation_id: str | None,
) -> None:
    """Record the approver's decision on the pending call (see :func:`apply_resume`).

    The decision names the pause it answers (its correlation id: the caller has checked
    it is the current one) and who decides; the job's owner may deny their own call,
    but approve it only when the rule says ``self_approval: allowed``."""
    waiting = run.record.waiting
    assert waiting is not None
    if approval not in ("approve", "deny"):
        raise UsageError(f"job {run.id} waits for approval by {waiting.approver}: approve or deny")
    what = "an approval" if approval == "approve" else "a denial"
    if type(decided_by) is not str or not decided_by.strip():
        raise UsageError(f"{what} of job {run.id} must say who decides (decided_by)")
    if not correlation_id:
        raise UsageError(
            f"{what} of job {run.id} must name the pause it answers: give the waiting "
            f"object's correlation_id ({waiting.correlation_id})"
        )
    if role != waiting.approver:
        raise ForbiddenError(
            f"only the role '{waiting.approver}' may {approval} this call "
            f"(you are '{role or 'no role'}')"
        )
    if waiting.tool is None or role is None:  # an approval pause always names both
        raise ConflictError(f"job {run.id} has no call waiting for approval")
    granted = approval == "approve"
    if granted and decided_by == run.record.owner and not waiting.self_approval:
        raise ForbiddenError(
            f"'{decided_by}' owns job {run.id} and may not approve its own call "
            f"(the rule does not say self_approval: allowed); another {role} must"
        )
    state = run.state
    ruling = Ruling(waiting.tool, waiting.arguments or {}, role, waiting.correlation_id, decided_by)
    if granted:
        state.grants.append(ruling)
        state.pending_grants.append(ruling.correlation_id)
    else:
        pending = state.pending
        state.pending = None
        state.denials.append(ruling)
        run.answer(
            "" if pending is None else pending.call_id,
            f"DENIED by {role}: {waiting.tool} did not run. Do not try the same call again.",
        )
        state.pending_grants = []
    run.event(
        EventKind.APPROVAL_GRANTED if granted else EventKind.APPROVAL_DENIED,
        f"{decided_by} ({role}) {'approved' if granted else 'denied'} {waiting.tool}",
        role=role,
        decided_by=decided_by,
        tool=waiting.tool,
        args=waiting.arguments,
        reason_code="" if granted else "APPROVAL_DENIED",
        correlation_id=waiting.correlation_id,
    )
    _unpause(run)


async def _operator(
    run: JobRun, pipeline: Pipeline, values: Mapping[str, Any] | None, role: str | None
) -> None:
    """Settle a tool call a crash interrupted, as the operator says: it ran (recorded as
    run, with the ``result`` the operator gives, else ``{"recovered": true}``) or it did
    not (run it now)."""
    given = values or {}
    outcome = given.get("outcome")
    if outcome not in ("ran", "not_run"):
        raise UsageError("give outcome=ran (the tool did run) or outcome=not_run (run it)")
    has_result = "result" in given
    result = given.get("result")
    if has_result and outcome != "ran":
        raise UsageError("a result goes with outcome=ran only (a tool that did not run has none)")
    if has_result and plain_dumps(result) is None:
        raise UsageError(
            "the result must be plain JSON (no NaN or infinity, no lone surrogate, "
            "nested at most 254 deep)"
        )
    flight = run.state.in_flight
    if flight is None:
        raise ConflictError(f"job {run.id} has no interrupted tool call")
    run.event(
        EventKind.OPERATOR_DECIDED,
        f"{role or 'operator'}: the tool {outcome}",
        outcome=outcome,
        tool=flight.tool,
        result_given=has_result,
    )
    if outcome == "ran":
        outcome_result = result if has_result else {"recovered": True}
        run.state.in_flight = None
        run.state.history.append(HistoryEntry(flight.tool, flight.args, outcome_result))
        run.state.evidence += 1
        data = plain_dumps(outcome_result)
        run.answer(flight.call_id, data.decode() if data is not None else '{"recovered": true}')
    _unpause(run)
    if outcome == "not_run":
        # run_tool saves (status running, call in flight) before the tool runs again,
        # so a crash during this run leads to the operator once more, never a rerun
        await pipeline.run_tool(run, flight.tool, flight.args, flight.key, flight.call_id)


def _unpause(run: JobRun) -> None:
    run.record.waiting = None
    run.state.pause_kind = None
    run.set_status(JobStatus.RUNNING, None)


async def recover_in_flight(run: JobRun, pipeline: Pipeline, flight: InFlightCall) -> bool:
    """Deal with the call a crash left in flight: an idempotent tool runs again; any
    other pauses the job for an operator (saved). True when the job paused."""
    tool = run.skill.tool(flight.tool)
    if tool is not None and tool.idempotent:
        run.event(
            EventKind.TOOL_RERUN,
            f"{tool.name} is idempotent: run again",
            tool=tool.name,
            idempotency_key=flight.key,
        )
        await pipeline.run_tool(run, tool.name, flight.args, flight.key, flight.call_id)
        return False
    run.state.pause_kind = PauseKind.OPERATOR
    prompt = (
        f"{flight.tool} started but did not finish, and it is not idempotent. Check "
        "whether it ran, then resume with outcome=ran (and its result as JSON, "
        "result=<json>, if you have it) or outcome=not_run."
    )
    waiting = run.new_waiting(
        "TOOL_INTERRUPTED",
        ["outcome"],
        prompt,
        tool=flight.tool,
        arguments=flight.args,
        field_schemas={"outcome": {"enum": ["ran", "not_run"]}},
    )
    run.pause(waiting, OutcomeClass.OPERATOR_ACTION_REQUIRED)
    await run.persist()
    return True
