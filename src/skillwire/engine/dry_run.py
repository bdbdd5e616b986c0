"""One dry run of a skill on a given runtime: a message, the pauses it meets, its end.

    result = await run_dry_run(runtime, skill, test)   # test: skills.DryRunTest
    if not result.passed:
        print("\\n".join(result.failures))

The runtime is the caller's: its model (offline, scripted, or a real one), its store
and its executors decide how the job runs; this module only drives the job (start,
answer each expected pause in order) and compares what happened with the test's
``pauses`` and ``expect``. Every mismatch is one line in :attr:`DryRunResult.failures`;
nothing raises for a failing test. A script mistake of a scripted model
(:class:`~skillwire.core.errors.ScriptError`) is a failure too, with its message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillwire.core.errors import ScriptError, SkillwireError
from skillwire.core.job import EventKind, JobStatus
from skillwire.engine.runtime import JobView, Runtime
from skillwire.skills.model import Skill
from skillwire.skills.model_tests import DryRunExpect, DryRunPause, DryRunTest

__all__ = ["DryRunResult", "run_dry_run"]


@dataclass
class DryRunResult:
    """What one dry run found."""

    test_id: str
    failures: list[str] = field(default_factory=list)
    """One line per mismatch; empty when the test passed."""
    job_id: str | None = None
    """The job the run started (None if it could not start)."""
    status: str | None = None
    """The job's status at the end."""
    outcome: str | None = None
    """The job's outcome class at the end."""
    tools: list[str] = field(default_factory=list)
    """The tools that ran, in order (names as the skill declares them)."""

    @property
    def passed(self) -> bool:
        """No mismatch."""
        return not self.failures


async def run_dry_run(runtime: Runtime, skill: Skill, test: DryRunTest) -> DryRunResult:
    """Run ``test`` against ``skill`` on ``runtime``; never raises for a failing test.

    Errors of the skillwire kind (a refused input, a conflict, a script that does not fit)
    and script mistakes become failures; anything else is a bug and propagates."""
    result = DryRunResult(test.id)
    try:
        job = await runtime.start(skill, test.message, context=test.context)
        result.job_id = job.id
        for index, pause in enumerate(test.pauses, 1):
            if job.status is not JobStatus.PAUSED:
                result.failures.append(
                    f"expected pause {index} ({pause.outcome}), but the job is "
                    f"{job.status} {job.record.outcome_class or ''}".rstrip()
                )
                break
            wrong = _pause_mismatch(skill, job, pause, index)
            if wrong:
                result.failures.extend(wrong)
                break
            if not _gives(pause):
                if index != len(test.pauses):
                    result.failures.append(f"pause {index} gives nothing, but more pauses follow")
                break
            job = await _answer(runtime, job, pause)
    except ScriptError as exc:  # an AssertionError, not a SkillwireError
        result.failures.append(f"the script does not fit: {exc}")
        return result
    except SkillwireError as exc:
        result.failures.append(f"{type(exc).__name__}: {exc}")
        return result
    if result.job_id is None:  # pragma: no cover - start either returns or raises
        return result
    view = await runtime.view(result.job_id)
    result.status = str(view.status)
    result.outcome = str(view.record.outcome_class) if view.record.outcome_class else None
    result.tools = _ran(skill, view)
    if not result.failures:
        result.failures.extend(_end_mismatch(skill, view, test.expect, result.tools))
        unexpected = test.expect.status is None and test.expect.outcome is None
        if not test.pauses and view.status is JobStatus.PAUSED and unexpected:
            result.failures.append(
                f"the job paused ({result.outcome}) and the test lists no pauses"
            )
    return result


def _gives(pause: DryRunPause) -> bool:
    return pause.input is not None or pause.approve is not None or pause.deny is not None


async def _answer(runtime: Runtime, job: JobView, pause: DryRunPause) -> JobView:
    """Resume the paused job with what ``pause`` gives, under its correlation id."""
    waiting = job.record.waiting
    correlation = waiting.correlation_id if waiting is not None else None
    if pause.input is not None:
        return await runtime.resume(job.id, input=pause.input, correlation_id=correlation)
    approve = pause.approve is not None
    return await runtime.resume(
        job.id,
        approval="approve" if approve else "deny",
        role=pause.approve if approve else pause.deny,
        decided_by=pause.by,
        correlation_id=correlation,
    )


def _pause_mismatch(skill: Skill, job: JobView, pause: DryRunPause, index: int) -> list[str]:
    """What differs between the pause the job is in and the ``index``-th expected one."""
    wrong: list[str] = []
    waiting = job.record.waiting
    outcome = str(job.record.outcome_class or "")
    if outcome != pause.outcome:
        wrong.append(f"pause {index}: expected {pause.outcome}, got {outcome or 'none'}")
    if pause.tool is not None:
        got = waiting.tool if waiting is not None else None
        if not _same_tool(skill, got, pause.tool):
            wrong.append(f"pause {index}: expected to wait on {pause.tool}, waits on {got}")
    if pause.fields is not None:
        asked = sorted(waiting.requested_fields) if waiting is not None else []
        if asked != sorted(pause.fields):
            wrong.append(f"pause {index}: expected fields {sorted(pause.fields)}, asked {asked}")
    return wrong


def _end_mismatch(skill: Skill, view: JobView, expect: DryRunExpect, ran: list[str]) -> list[str]:
    """What differs between the job's end and ``expect``; an engine error always does."""
    wrong: list[str] = []
    record = view.record
    outcome = str(record.outcome_class) if record.outcome_class else None
    if outcome == "INTERNAL_ERROR" and expect.outcome != "INTERNAL_ERROR":
        errors = [e.message for e in view.events if e.kind == EventKind.ENGINE_ERROR]
        wrong.append("the engine failed: " + ("; ".join(errors) or "INTERNAL_ERROR"))
    if expect.status is not None and str(record.status) != expect.status:
        wrong.append(f"expected status {expect.status}, got {record.status}")
    if expect.outcome is not None and outcome != expect.outcome:
        wrong.append(f"expected outcome {expect.outcome}, got {outcome}")
    if expect.tools is not None:
        wanted = [_canonical(skill, t) for t in expect.tools]
        if wanted != ran:
            wrong.append(f"expected tools {wanted} to run in this order, ran {ran}")
    for name in expect.not_called:
        if _canonical(skill, name) in ran:
            wrong.append(f"{name} ran, and must not")
    refused = {
        _canonical(skill, str(e.data.get("tool")))
        for e in view.events
        if e.kind == EventKind.GATE_DECISION and e.data.get("decision") == "block"
    }
    for name in expect.blocked:
        if _canonical(skill, name) not in refused:
            wrong.append(f"expected the gate to block {name}; it did not")
    fields = record.fields or {}
    for key, value in expect.fields.items():
        if key not in fields:
            wrong.append(f"expected reply field {key!r}, the reply has none")
        elif not _equal(fields[key], value):
            wrong.append(f"reply field {key!r}: expected {value!r}, got {fields[key]!r}")
    reply = (record.reply or "").casefold()
    for text in expect.reply_contains:
        if text.casefold() not in reply:
            wrong.append(f"the reply does not contain {text!r}")
    return wrong


def _ran(skill: Skill, view: JobView) -> list[str]:
    """The tools that started, in order."""
    return [
        _canonical(skill, str(e.data.get("tool")))
        for e in view.events
        if e.kind == EventKind.TOOL_STARTED
    ]


def _canonical(skill: Skill, name: str) -> str:
    """The tool's declared name (a package tool found by its local name too)."""
    tool = skill.tool(name)
    return tool.name if tool is not None else name


def _same_tool(skill: Skill, got: str | None, wanted: str) -> bool:
    return got is not None and _canonical(skill, got) == _canonical(skill, wanted)


def _equal(got: Any, wanted: Any) -> bool:
    """Equal as JSON values: 750 equals 750.0, but True is not 1."""
    if isinstance(got, bool) or isinstance(wanted, bool):
        return got is wanted
    if isinstance(got, int | float) and isinstance(wanted, int | float):
        return float(got) == float(wanted)
    if isinstance(got, list) and isinstance(wanted, list):
        return len(got) == len(wanted) and all(map(_equal, got, wanted))
    if isinstance(got, dict) and isinstance(wanted, dict):
        return got.keys() == wanted.keys() and all(_equal(got[k], wanted[k]) for k in got)
    return bool(got == wanted)
