"""``skillwire worker``: run the jobs queued in the PostgreSQL job database, and what
``skillwire run --queue`` does instead of running a job in process
(:mod:`skillwire.jobqueue`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from skillwire.config import SkillwireConfig
    from skillwire.skills.model import Skill

__all__ = ["enqueue_run", "queue_url", "worker"]


def queue_url(config: SkillwireConfig) -> str:
    """The PostgreSQL URL the queue lives in (the job database); :class:`UsageError`
    when jobs are kept in a SQLite file, which has no queue."""
    from skillwire.assembly import default_db
    from skillwire.core.errors import UsageError

    db = default_db(config)
    if not isinstance(db, str):
        raise UsageError(
            "the queue lives in a PostgreSQL job database: set $SKILLWIRE_DB or runtime.db "
            f"to a postgresql:// URL (jobs are kept in the file {db} now)"
        )
    return db


def enqueue_run(
    config: SkillwireConfig, skill: Skill, message: str, context: dict[str, Any], owner: str
) -> str:
    """Queue the start of a job (``skillwire run --queue``); its id."""
    from skillwire.jobqueue import JobQueue, ensure_queue_schema

    url = queue_url(config)

    async def main() -> str:
        await ensure_queue_schema(url)
        queue = JobQueue(url, config)
        async with queue.app.open_async():
            return await queue.enqueue_start(skill, message, owner=owner, context=context)

    return asyncio.run(main())


def worker(
    once: Annotated[
        bool, typer.Option("--once", help="Run what is queued, then exit (scripts, tests).")
    ] = False,
    queue: Annotated[
        list[str] | None,
        typer.Option("--queue", help="Only this queue (repeatable): skill.<skill id>."),
    ] = None,
    concurrency: Annotated[int, typer.Option(help="Jobs run at once.")] = 10,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", help="A configured model name (default: the skill's), or scripted:FILE."
        ),
    ] = None,
    heartbeat: Annotated[float, typer.Option(help="Seconds between heartbeats.")] = 10.0,
    stalled_after: Annotated[
        float, typer.Option(help="Seconds of silence after which a worker is taken for dead.")
    ] = 30.0,
    config_path: Annotated[
        Path | None, typer.Option("--config", help="skillwire.toml (default ./skillwire.toml).")
    ] = None,
) -> None:
    """Run jobs from the queue in the PostgreSQL job database until stopped.

    Starts and resumes queued by ``run --queue`` and ``serve --queue`` run here; a job
    paused on one worker resumes on any other. The tasks of a worker that died (no
    heartbeat for --stalled-after seconds) are queued again and its jobs recovered.
    """
    from skillwire.cli_jobs import guard
    from skillwire.config import load_config
    from skillwire.core.errors import UsageError
    from skillwire.jobqueue import JobQueue, WorkerOptions, run_worker

    def body() -> None:
        if concurrency < 1:
            raise UsageError("--concurrency must be at least 1")
        if heartbeat <= 0 or stalled_after <= heartbeat:
            raise UsageError("--stalled-after must be longer than --heartbeat, both above 0")
        config = load_config(config_path)
        url = queue_url(config)
        options = WorkerOptions(
            queues=list(queue) if queue else None,
            concurrency=concurrency,
            once=once,
            heartbeat_seconds=heartbeat,
            stalled_after=stalled_after,
            model_spec=model,
        )
        asyncio.run(run_worker(JobQueue(url, config, model_spec=model), options))

    guard(body)
