"""``skillwire run``, ``resume``, ``jobs`` and ``show``: jobs from the command line."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import typer
from rich.table import Table

from skillwire.cli_output import console as plain_console
from skillwire.cli_output import styled, terminal_width
from skillwire.cli_values import Pair, typed_values
from skillwire.config import SkillwireConfig
from skillwire.core.errors import SkillError, SkillwireError
from skillwire.core.job import JobStatus, OutcomeClass
from skillwire.engine import JobView, Runtime
from skillwire.engine.usage import usage_by_stage
from skillwire.skills.model import Skill

if TYPE_CHECKING:
    from skillwire.assembly import Database


__all__ = [
    "cli_actor",
    "decide_waiting",
    "exit_code",
    "exit_for",
    "explain_model_failure",
    "fail",
    "full_job_id",
    "give_input",
    "guard",
    "print_job",
    "refused_input",
    "render_timeline",
    "with_runtime",
]

T = TypeVar("T")


def full_job_id(db: Database, text: str) -> str:
    """The id of the job in ``db`` (a SQLite file or a PostgreSQL URL) whose id is
    ``text`` or starts with it (a :class:`UsageError` naming the candidates when
    several do)."""
    from skillwire.assembly import db_exists, db_label, open_store
    from skillwire.core.errors import NotFoundError
    from skillwire.core.store import resolve_job_id

    if not db_exists(db):
        raise NotFoundError(f"no job database at {db_label(db)}")

    async def find() -> str:
        store = open_store(db)
        try:
            return await resolve_job_id(store, text)
        finally:
            await store.close()

    return asyncio.run(find())


async def give_input(runtime: Runtime, job_id: str, pairs: list[Pair]) -> JobView:
    """Resume job ``job_id`` with ``--input`` values typed by the schemas of the fields
    it waits for (:mod:`skillwire.cli_values`)."""
    view = await runtime.view(job_id, detail=False)
    waiting = view.record.waiting
    schemas = {name: [schema] for name, schema in waiting.field_schemas.items()} if waiting else {}
    return await runtime.resume(job_id, input=typed_values(pairs, schemas, "--input"))


def with_runtime(
    db: Database,
    model_spec: str | None,
    job_id: str | None,
    work: Callable[[Runtime], Awaitable[T]],
    *,
    skill: Skill | None = None,
    config: SkillwireConfig | None = None,
) -> T:
    """Build a runtime for the job's skill (a resumed job continues its script) as
    ``config`` says (read now unless given), run ``work``, close. Notes about the model
    choice go to standard error."""
    from skillwire.assembly import (
        choose_models,
        credentials,
        db_exists,
        make_runtime,
        open_store,
        refuse_without_credentials,
    )
    from skillwire.config import load_config, trust_policy

    config = config or load_config()

    async def main() -> T:
        from skillwire.versioning import skill_for_job

        calls = 0
        chosen_skill = skill
        resumed: Skill | None = None
        if job_id is not None and db_exists(db):
            probe = open_store(db)
            try:
                record = await probe.get(job_id)
                if record is not None:
                    calls = int(record.state.get("model_calls", 0))
                    source = str(record.state.get("skill_source") or "")
                    if chosen_skill is None and source and Path(source).exists():
                        from skillwire.skills import load_skill

                        chosen_skill = load_skill(source, trust=trust_policy(config))
                    # the version the job started on, even if its files changed since
                    chosen_skill = resumed = await skill_for_job(probe, record, chosen_skill)
            finally:
                await probe.close()
        if job_id is None and chosen_skill is not None:  # a job starts: its credentials
            refuse_without_credentials(chosen_skill, credentials(config))
        choice = choose_models(model_spec, skill=chosen_skill, config=config, calls_made=calls)
        for note in choice.notes:
            plain_console(stderr=True, soft_wrap=True).print(styled(("note:", "yellow"), " ", note))
        runtime = make_runtime(
            db, choice, config, skills=None if resumed is None else (lambda _record: resumed)
        )
        try:
            return await work(runtime)
        finally:
            try:
                await runtime.aclose()
            finally:
                await runtime.store.close()

    return asyncio.run(main())


def cli_actor() -> str:
    """Who decides from this command line: ``cli:<the OS user>`` (``cli:uid<N>`` when the
    system has no name for it). A job the CLI started is owned by its context's
    ``user_id`` (none by default), so this is never its owner unless that names it."""
    import getpass
    import os

    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):  # no LOGNAME/USER and no password entry
        return f"cli:uid{os.getuid()}"


async def decide_waiting(
    runtime: Runtime, job_id: str, decision: Literal["approve", "deny"], role: str | None
) -> JobView:
    """Approve or deny the call job ``job_id`` waits on now, as :func:`cli_actor`: read
    its waiting object and send that pause's correlation id (a job that moved on
    meanwhile is a conflict, not another call decided); once accepted, say on standard
    error which call was decided."""
    view = await runtime.view(job_id, detail=False)
    waiting = view.record.waiting
    actor = cli_actor()
    job = await runtime.resume(
        job_id,
        approval=decision,
        role=role,
        decided_by=actor,
        correlation_id=waiting.correlation_id if waiting is not None else None,
    )
    if waiting is not None and waiting.tool is not None:
        done = "approved" if decision == "approve" else "denied"
        plain_console(stderr=True, soft_wrap=True).print(
            f"{actor} ({role}) {done} {waiting.tool} "
            f"{json.dumps(waiting.arguments or {}, sort_keys=True)} "
            f"(pause {waiting.correlation_id})"
        )
    return job


def fail(message: str) -> typer.Exit:
    """Print an error (no traceback) and return the exit to raise."""
    plain_console(stderr=True, soft_wrap=True).print(styled(("error:", "red"), " ", message))
    return typer.Exit(2)


def guard(action: Callable[[], T]) -> T:
    """Run a command body; user errors become a message and exit code 2.

    User errors: a skill with errors, a bad argument, an unknown or busy job, a wrong
    role, a model that is not configured, a script file that is not a script, a job
    file written by a newer skillwire. Anything else (a job file that is not a
    database, a bug) is one line on standard error and exit code 1; with
    ``SKILLWIRE_TRACEBACK=1`` in the environment it keeps its traceback.
    """
    import os

    from click.exceptions import ClickException, Exit

    from skillwire.core.errors import ScriptError

    try:
        return action()
    except SkillError as exc:
        raise fail("the skill has errors:\n" + "\n".join(str(i) for i in exc.issues)) from None
    except ScriptError as exc:  # before SkillwireError, which it is too
        raise fail(f"the script does not fit this job: {exc}") from None
    except SkillwireError as exc:
        raise fail(str(exc)) from None
    except (Exit, typer.Exit, ClickException):  # typer's Exit is not click's: an exit code
        raise
    except Exception as exc:
        if os.environ.get("SKILLWIRE_TRACEBACK") == "1":
            raise
        text = " ".join(str(exc).split())[:300]
        fail(f"{type(exc).__name__}: {text} (set SKILLWIRE_TRACEBACK=1 for the traceback)")
        raise typer.Exit(1) from None


NORMAL_PAUSES = frozenset({OutcomeClass.USER_ACTION_REQUIRED, OutcomeClass.APPROVAL_REQUIRED})
"""Pauses that are spec 001's normal course (a user's input, an approver's decision): a
``run`` or ``resume`` that ends in one did its work."""


def exit_code(job: JobView) -> int:
    """The exit code of ``run`` and ``resume`` for the job they leave: 0 when it
    completed with ``SUCCESS`` or paused for input or an approval, 1 for every other
    ending (failed, escalated, out of domain, blocked, denied, a tool failed, a model
    outage or an operator's pause)."""
    r = job.record
    if r.status is JobStatus.COMPLETED and r.outcome_class is OutcomeClass.SUCCESS:
        return 0
    if r.status is JobStatus.PAUSED and r.outcome_class in NORMAL_PAUSES:
        return 0
    return 1


def explain_model_failure(job: JobView) -> None:
    """On standard error (never markup, never a traceback), why a model stopped the
    job: the model, the stage and the failure (redacted when the error was made), and
    what to do about it."""
    r = job.record
    lines: list[str] = []
    waiting = r.waiting
    if (
        r.status is JobStatus.PAUSED
        and r.outcome_class is OutcomeClass.MODEL_UNAVAILABLE
        and waiting is not None
    ):
        lines = [
            f"the model {waiting.model} could not be reached ({waiting.stage} stage): "
            f"{waiting.reason}",
            f"job {r.id} is paused with everything done so far; once the model is back: "
            f"skillwire resume {r.id} --retry",
        ]
    elif r.status is JobStatus.FAILED:
        failure = next((e for e in reversed(job.events) if e.kind == "model_error"), None)
        if failure is not None:
            lines = [
                f"the model {failure.data.get('model', '')} failed "
                f"({failure.data.get('stage', '')} stage): {failure.message}",
                f"job {r.id} failed; this is not an outage that a retry mends: check the "
                "model's configuration (skillwire models), then run the job again",
            ]
    if lines:
        text = "\n".join(" ".join(line.split()) for line in lines)
        plain_console(stderr=True, soft_wrap=True).print(styled(("error:", "red"), " ", text))


def exit_for(job: JobView) -> None:
    """After the job is printed: say on standard error why a model stopped it, and exit
    with :func:`exit_code` (nothing raised for 0)."""
    explain_model_failure(job)
    code = exit_code(job)
    if code:
        raise typer.Exit(code)


def refused_input(job: JobView) -> str | None:
    """Why a resume's input was refused (the job waits on, as it was), or None."""
    waiting = job.record.waiting
    return waiting.error if waiting is not None else None


def job_intents(state: Mapping[str, Any]) -> list[str]:
    """The intents a stored job state names (``intents``; ``intent`` of a state saved
    before version 5)."""
    listed = state.get("intents")
    if isinstance(listed, list):
        return [i for i in listed if isinstance(i, str)]
    one = state.get("intent")
    return [one] if isinstance(one, str) and one else []


def print_job(job: JobView, as_json: bool) -> None:
    """The job as JSON, or a short human summary."""
    if as_json:
        typer.echo(json.dumps(job.to_dict(), indent=2, default=str))
        return
    console = plain_console(width=terminal_width())
    r = job.record
    outcome = f" ({r.outcome_class})" if r.outcome_class else ""
    console.print(styled("job ", (r.id, "bold"), f"  {r.status}{outcome}"))
    intents = job_intents(r.state)
    if intents:
        console.print(f"intents: {', '.join(intents)}")
    if r.waiting is not None:
        console.print(styled(("waiting:", "yellow")))
        console.print_json(json.dumps(r.waiting.to_dict(), default=str))
    if r.reply is not None:
        console.print(styled(("reply:", "green"), " ", r.reply))
    if r.fields:
        console.print(f"fields: {json.dumps(r.fields, default=str)}")


def render_timeline(job: JobView) -> None:
    """``skillwire show``: stages, decisions with reason codes, model calls."""
    console = plain_console(width=terminal_width())
    print_job(job, as_json=False)
    table = Table(title="timeline", show_lines=False)
    for col in ("#", "at", "stage", "event", "reason", "detail"):
        table.add_column(col, overflow="fold")
    for e in job.events:
        table.add_row(str(e.seq), e.at[11:23], e.stage, e.kind, e.reason_code, e.message[:120])
    console.print(table)
    calls = Table(title="model calls")
    for col in ("#", "stage", "model", "prompt chars", "tokens in/out", "ms", "ok"):
        calls.add_column(col)
    for c in job.model_calls:
        tokens = (
            f"{c.input_tokens if c.input_tokens is not None else '-'}/"
            f"{c.output_tokens if c.output_tokens is not None else '-'}"
        )
        calls.add_row(
            str(c.seq),
            c.stage,
            c.model,
            str(c.prompt_chars),
            tokens,
            f"{c.latency_ms:.1f}",
            "yes" if c.ok else f"no: {c.error}",
        )
    console.print(calls)
    stages = Table(title="by stage (prompt characters sent; tokens as the backend counts them)")
    for col in ("stage", "calls", "prompt chars", "tokens in/out"):
        stages.add_column(col)
    for u in usage_by_stage(job.model_calls):
        stages.add_row(u.stage, str(u.calls), str(u.prompt_chars), u.tokens_text())
    if stages.row_count:
        console.print(stages)
