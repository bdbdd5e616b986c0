"""The process the SIGKILL test kills, and the fork server that makes it cheaply.

``python -m tests.engine.crash_child DB SKILL LEDGER`` imports skillwire once, prints
``ready``, then reads commands on stdin: ``fork JOBS`` forks a worker (no thread
runs in this process, so forking is safe), waits for it and prints
``reaped PID STATUS``; ``quit`` ends. Forking costs a millisecond where starting Python
and importing skillwire costs a second, which is what lets the test kill hundreds of
workers in well under a minute.

A worker prints ``pid PID`` first, then one line per step, each flushed as it happens:
``created ID`` (once the job is stored), ``tool NAME`` (from the tool, once its run is
in the ledger), ``paused ID``, ``done ID``, ``recovered ID``. It first takes every job a
killed worker left behind to its end, then runs new refund jobs (a pause for approval
each), and prints ``idle`` when it has run ``JOBS`` of them.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.engine.helpers import SwitchModel, approval_script, decide, drive, fresh_script

from skillwire.core.job import Event, JobRecord, JobStatus
from skillwire.engine import Runtime
from skillwire.skills import Skill, load_skill
from skillwire.skills.model_tools import PythonExecutor
from skillwire.store import SQLiteJobStore
from skillwire.tools import Executors, resolve_callable

UNFINISHED = (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.PAUSED)


def say(line: str) -> None:
    """One progress line, written at once."""
    print(line, flush=True)


class ReportingStore(SQLiteJobStore):
    """Says ``created ID`` as soon as a job is stored."""

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        """Create, then say so."""
        stored = await super().create(job, events)
        say(f"created {stored.id}")
        return stored


async def unfinished(store: SQLiteJobStore) -> list[str]:
    """Every job not finished yet."""
    ids: list[str] = []
    for status in UNFINISHED:
        ids += [r.id for r in await store.list(status=status, limit=100_000)]
    return ids


async def finish_all(
    runtime: Runtime, model: SwitchModel, ledger: Path, *, announce: bool
) -> list[str]:
    """Take every unfinished job to its end; their ids."""
    ids = await unfinished(runtime.store)  # type: ignore[arg-type]
    for job_id in ids:
        await drive(runtime, model, job_id, approval_script(), ledger)
        if announce:
            say(f"recovered {job_id}")
    return ids


async def work(db: Path, skill: Skill, ledger: Path, jobs: int) -> None:
    """A worker's life: finish what others left, then run ``jobs`` new jobs."""
    store = ReportingStore(db)
    model = SwitchModel()
    runtime = Runtime(store, model, skills=lambda _record: skill, executors=Executors())
    try:
        await finish_all(runtime, model, ledger, announce=True)
        for _ in range(jobs):
            fresh_script(model, approval_script())
            job = await runtime.start(skill, "Refund 750 for ORD-12345", detail=False)
            say(f"paused {job.id}")
            await decide(runtime, job.id, "approve", role="supervisor", detail=False)
            say(f"done {job.id}")
        say("idle")
    finally:
        await store.close()


def serve(db: Path, skill_file: Path, ledger: Path) -> None:
    """The fork server's loop."""
    skill = load_skill(skill_file)
    for tool in skill.tools:  # import the tools' module once, here, not in every worker
        if isinstance(tool.executor, PythonExecutor):
            resolve_callable(tool.executor.callable, skill.root)
    say("ready")
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            return
        _, jobs = command
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                say(f"pid {os.getpid()}")
                asyncio.run(work(db, skill, ledger, int(jobs)))
            except BaseException as exc:  # a worker's failure is the test's to see
                say(f"error {type(exc).__name__}: {exc}")
                status = 1
            finally:
                sys.stdout.flush()
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        # A worker killed while printing leaves its last line unfinished: the report
        # starts on a line of its own (the test skips the empty lines this makes).
        say(f"\nreaped {pid} {status}")


if __name__ == "__main__":
    serve(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
