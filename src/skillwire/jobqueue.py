"""Jobs run by workers, from a procrastinate queue in the job database (PostgreSQL).

``skillwire run --queue``, ``skillwire resume --queue`` and ``skillwire serve --queue``
enqueue what they would have run: a start (:data:`START`, with the job id chosen now, so
the caller can tell it) or a resume (:data:`RESUME`: input, a decision or a retry,
checked by the caller first). ``skillwire worker`` runs them (:func:`run_worker`). A task
is named after the engine's rule that makes it safe to run again, which a queue will do
after a worker died:

* a start whose job exists already continues it (``Runtime.recover``);
* a resume whose pause was answered already (the job is no longer paused under that
  correlation id) continues the job if it is still ``queued`` or ``running``.

So a task may run any number of times: the job's versions let one run at a time win, a
non-idempotent tool runs at most once (one that was in flight when a worker died pauses
the job for an operator), and nothing is lost. Every task of one job takes the lock
``job:<id>`` (two never run at once); its queue is ``skill.<skill id>``, so that a skill
can be given workers of its own (``skillwire worker --queue skill.refund-support``).

A worker killed (SIGKILL, a lost machine) stops sending heartbeats; every worker looks
for tasks left ``doing`` by a worker silent for ``stalled_after`` seconds and queues them
again (procrastinate's stalled-job retry), and the engine's recovery does the rest.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skillwire.core.errors import (
    ConflictError,
    NotFoundError,
    StoreUnavailableError,
    UsageError,
    VersionConflict,
)
from skillwire.core.job import JobRecord, JobStatus
from skillwire.core.tracing import carrier, restored
from skillwire.engine import Runtime

if TYPE_CHECKING:
    import procrastinate
    from procrastinate.app import WorkerOptions as ProcrastinateOptions

    from skillwire.config import SkillwireConfig
    from skillwire.core.store import JobStore
    from skillwire.skills.model import Skill

__all__ = [
    "RESUME",
    "START",
    "JobQueue",
    "WorkerOptions",
    "ensure_queue_schema",
    "queue_name",
    "queueable",
    "run_worker",
]

log = logging.getLogger("skillwire.worker")

START = "skillwire.start"
"""The task that starts a job: ``job_id``, ``skill_source``, ``message``, ``owner``,
``context``, and ``trace`` when tracing is on (the enqueuer's W3C trace context:
``traceparent``, ``tracestate``)."""
RESUME = "skillwire.resume"
"""The task that resumes a job: ``job_id``, the keywords of ``Runtime.resume`` and
``trace`` as for :data:`START`."""


def queue_name(skill_id: str) -> str:
    """The queue of a skill's jobs: ``skill.<skill id>``."""
    return f"skill.{skill_id}"


def _procrastinate() -> Any:
    try:
        import procrastinate
    except ImportError:
        raise StoreUnavailableError(
            "the queue needs the postgres extra: pip install 'skillwire[postgres]'"
        ) from None
    return procrastinate


async def ensure_queue_schema(url: str) -> bool:
    """Create procrastinate's tables in the database at ``url`` unless they exist (under
    an advisory lock: several processes may try at once); whether it created them."""
    from psycopg import AsyncConnection

    from skillwire.store.postgres import safe_url

    _procrastinate()  # the extra is there
    try:
        conn = await AsyncConnection.connect(url, autocommit=True)
    except Exception as err:
        raise StoreUnavailableError(f"{safe_url(url)}: cannot connect: {err}") from None
    from procrastinate.schema import SchemaManager

    async with conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (0x5C1113E,))
        found = await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
        row = await found.fetchone()
        if row is not None and row[0]:
            return False
        await conn.execute(SchemaManager.get_schema())
    return True


@dataclass
class WorkerOptions:
    """How a worker runs (the ``skillwire worker`` options)."""

    queues: list[str] | None = None
    """The queues it takes tasks from (None: every queue)."""
    concurrency: int = 10
    """Tasks run at once (each a job on its way to a pause or its end)."""
    once: bool = False
    """Run what is queued, then exit."""
    heartbeat_seconds: float = 10.0
    """How often the worker tells the database it is alive."""
    stalled_after: float = 30.0
    """A worker silent for this long is taken for dead: its tasks are queued again."""
    model_spec: str | None = None
    """``--model``: a configured model name, or ``scripted:FILE``."""


@dataclass
class JobQueue:
    """The procrastinate app on the job database, and the runtimes its tasks run on."""

    url: str
    config: SkillwireConfig
    store: JobStore | None = None
    model_spec: str | None = None
    app: procrastinate.App = field(init=False)
    _runtimes: dict[str, tuple[Skill, Runtime]] = field(default_factory=dict, init=False)
    _seen: dict[str, Any] = field(default_factory=dict, init=False)
    """The record each task last read of its job (a scripted model skips its calls)."""
    _versions: dict[str, Skill] = field(default_factory=dict, init=False)
    """The skill version each job a task took on runs on (the one it started on)."""

    def __post_init__(self) -> None:
        from skillwire.assembly import start_tracing

        start_tracing(self.config)  # spans, and their context in the tasks, if asked
        procrastinate = _procrastinate()
        self.app = procrastinate.App(
            connector=procrastinate.PsycopgConnector(conninfo=self.url, min_size=1, max_size=4)
        )
        self.app.task(name=START)(self._start)
        self.app.task(name=RESUME)(self._resume)

    # -- enqueueing ----------------------------------------------------------------------

    async def enqueue_start(
        self,
        skill: Skill,
        message: str,
        *,
        owner: str,
        context: Mapping[str, Any] | None = None,
        job_id: str | None = None,
    ) -> str:
        """Queue the start of a job on ``skill``; the job's id (chosen now)."""
        from skillwire.engine.run import new_job_id

        if not message.strip():
            raise UsageError("the message is empty")
        if not skill.origin:
            raise UsageError(f"skill '{skill.id}' has no file to load it from in a worker")
        job_id = job_id or new_job_id()
        await self._defer(
            START,
            skill.id,
            job_id,
            skill_source=str(skill.origin),
            message=message,
            owner=owner,
            context=dict(context or {}),
        )
        return job_id

    async def enqueue_resume(self, skill_id: str, job_id: str, **resume: Any) -> None:
        """Queue a resume of ``job_id`` with ``Runtime.resume``'s keywords."""
        await self._defer(RESUME, skill_id, job_id, resume=resume)

    async def _defer(self, task: str, skill_id: str, job_id: str, **kwargs: Any) -> None:
        deferrer = self.app.configure_task(
            name=task, queue=queue_name(skill_id), lock=f"job:{job_id}"
        )
        trace = carrier()  # the W3C trace context, when tracing is on
        if trace:
            kwargs["trace"] = trace
        await deferrer.defer_async(job_id=job_id, **queueable(kwargs))

    # -- the tasks -------------------------------------------------------------------------

    async def _start(
        self,
        job_id: str,
        skill_source: str,
        message: str,
        owner: str,
        context: dict[str, Any],
        trace: dict[str, str] | None = None,
    ) -> None:
        with restored(trace):  # the enqueuer's span is the job span's parent
            await self._start_job(job_id, skill_source, message, owner, context)

    async def _start_job(
        self, job_id: str, skill_source: str, message: str, owner: str, context: dict[str, Any]
    ) -> None:
        store = self._store()
        if await store.get(job_id) is None:
            from skillwire.versioning import starting_skill

            skill, note = await starting_skill(store, self._load(skill_source))  # pins
            if note:
                log.info("job %s: %s", job_id, note)
            self._versions[job_id] = skill
            try:
                await self._runtime(skill, job_id).start(
                    skill, message, context=context, owner=owner, job_id=job_id, detail=False
                )
                return
            except VersionConflict:
                pass  # created meanwhile by another run of this task: continue it
        await self._continue(job_id)

    async def _resume(
        self, job_id: str, resume: dict[str, Any], trace: dict[str, str] | None = None
    ) -> None:
        with restored(trace):  # a link of the job span (the job keeps its own trace)
            await self._resume_job(job_id, resume)

    async def _resume_job(self, job_id: str, resume: dict[str, Any]) -> None:
        store = self._store()
        record = await store.get(job_id)
        if record is None:
            log.error("job %s: no such job to resume", job_id)
            return
        self._seen[job_id] = record
        wanted = resume.get("correlation_id")
        waiting = record.waiting
        if (
            record.status is JobStatus.PAUSED
            and waiting is not None
            and wanted in (None, waiting.correlation_id)
        ):
            skill = await self._version_of(record)
            if skill is None:
                return
            runtime = self._runtime(skill, job_id)
            try:
                await runtime.resume(job_id, detail=False, **resume)
                return
            except ConflictError as err:
                log.info("job %s: resume not applied: %s", job_id, err)
        await self._continue(job_id)

    async def _continue(self, job_id: str) -> None:
        """Take the job on if it was left ``queued`` or ``running`` (a worker died)."""
        record = await self._store().get(job_id)
        if record is not None:
            self._seen[job_id] = record
        if record is not None and record.status in (JobStatus.QUEUED, JobStatus.RUNNING):
            log.info("job %s: continuing it (left %s)", job_id, record.status)
            skill = await self._version_of(record)
            if skill is None:
                return
            try:
                await self._runtime(skill, job_id).recover(job_id, detail=False)
            except ConflictError as err:
                log.info("job %s: %s", job_id, err)

    # -- runtimes ---------------------------------------------------------------------------

    def _store(self) -> JobStore:
        if self.store is None:
            from skillwire.assembly import open_store

            self.store = open_store(self.url, self.config.runtime.durability)
        return self.store

    def _load(self, source: str) -> Skill:
        from skillwire.skills import load_skill

        return load_skill(source)

    async def _version_of(self, record: JobRecord) -> Skill | None:
        """The skill version ``record`` started on (kept by the store when its files
        changed since); None, logged, when it is kept nowhere: the job waits as it is."""
        from skillwire.versioning import skill_for_job

        try:
            skill = await skill_for_job(self._store(), record, self._skill_of(record))
        except NotFoundError as err:
            log.error("job %s: %s", record.id, err)
            return None
        chosen = skill if skill is not None else self._skill_of(record)
        self._versions[record.id] = chosen
        return chosen

    def _resolve(self, record: JobRecord) -> Skill:
        """The runtimes' resolver: the version a task chose for the job, else its source."""
        return self._versions.get(record.id) or self._skill_of(record)

    def _skill_of(self, record: Any) -> Skill:
        source = str(record.state.get("skill_source") or "")
        if not source:
            raise UsageError(f"job {record.id} has no skill source to load")
        cached = self._runtimes.get(source)
        return cached[0] if cached is not None else self._load(source)

    def _runtime(self, skill: Skill, job_id: str) -> Runtime:
        """The runtime of ``skill``'s jobs (a scripted model: one per job, past the
        calls the job made)."""
        from skillwire.assembly import choose_models, make_executors

        source = str(skill.origin)
        scripted = bool(self.model_spec and self.model_spec.startswith("scripted:"))
        cached = self._runtimes.get(source)
        if cached is not None and not scripted:
            return cached[1]
        calls = 0
        if scripted:  # a scripted job goes on past the replies it used
            stored = self._seen.get(job_id)
            calls = int(stored.state.get("model_calls", 0)) if stored is not None else 0
        choice = choose_models(self.model_spec, skill=skill, config=self.config, calls_made=calls)
        from skillwire.assembly import base_policy
        from skillwire.models.offline import OfflineModel  # its classifier: intents.thresholds

        base = base_policy(self.config)  # the operator's, as for run and serve
        runtime = Runtime(
            self._store(),
            choice.model,
            classifier=OfflineModel(),
            gate_model=choice.gate_model,
            executors=make_executors(self.config, base),
            base_policy=base,
            skills=self._resolve,
        )
        if not scripted:
            self._runtimes[source] = (skill, runtime)
        return runtime

    async def aclose(self) -> None:
        """Close the runtimes' models and the store."""
        for _, runtime in self._runtimes.values():
            await runtime.aclose()
        if self.store is not None:
            await self.store.close()


async def run_worker(queue: JobQueue, options: WorkerOptions) -> None:
    """Run tasks until stopped (SIGINT, SIGTERM), or, with ``options.once``, until none
    is left; meanwhile queue again the tasks of workers gone silent."""
    await ensure_queue_schema(queue.url)
    async with queue.app.open_async():
        await _retry_stalled(queue, options)
        sweeper = asyncio.get_running_loop().create_task(_sweep(queue, options))
        try:
            settings: ProcrastinateOptions = {
                "concurrency": options.concurrency,
                "wait": not options.once,
                "update_heartbeat_interval": options.heartbeat_seconds,
                "stalled_worker_timeout": options.stalled_after,
                "install_signal_handlers": not options.once,
                "delete_jobs": "successful",
            }
            if options.queues:
                settings["queues"] = options.queues
            await queue.app.run_worker_async(**settings)
        finally:
            sweeper.cancel()
            await queue.aclose()


async def _sweep(queue: JobQueue, options: WorkerOptions) -> None:
    while True:
        await asyncio.sleep(max(options.stalled_after / 3, 0.2))
        try:
            await _retry_stalled(queue, options)
        except Exception as err:  # the worker goes on; the next sweep tries again
            log.warning("looking for stalled tasks failed: %s", err)


async def _retry_stalled(queue: JobQueue, options: WorkerOptions) -> int:
    """Queue again the tasks left ``doing`` by workers silent for ``stalled_after``."""
    manager = queue.app.job_manager
    stalled = await manager.get_stalled_jobs(seconds_since_heartbeat=options.stalled_after)
    count = 0
    for job in stalled:
        if options.queues is None or job.queue in options.queues:
            log.warning("task %s of a silent worker: queued again", job.id)
            await manager.retry_job(job)
            count += 1
    return count


def queueable(value: Any) -> Any:
    """``value`` as the queue's ``jsonb`` can hold it: lone surrogates mended and U+0000
    turned into U+FFFD in every text, keys included (``jsonb`` refuses both; the task
    would otherwise not be queued at all)."""
    from skillwire.core.plainjson import mended

    def fix(item: Any) -> Any:
        if isinstance(item, str):
            return item.replace("\x00", "\ufffd")
        if isinstance(item, dict):
            return {fix(k): fix(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [fix(v) for v in item]
        return item

    return fix(mended(value))
