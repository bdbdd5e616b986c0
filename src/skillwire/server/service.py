"""What the API and the page do with jobs, and who may do it: one place for both.

Every operation takes the calling :class:`~skillwire.server.auth.Principal` and applies
the role rules before it touches a job:

- a job is visible to its owner, to an admin, to a principal holding the approver role
  it waits for, and to the holders of a role that approved or denied one of its calls;
  an invisible job is "not found" (its existence is not disclosed);
- input is given by the job's owner (an operator's question, by an admin);
- an approval or a denial is given only by a holder of the role the rule names, and
  names the pause it answers (``correlation_id``); an approval is never given by the
  job's owner, whatever roles their key holds, unless the rule says ``self_approval:
  allowed`` (the owner may deny their own call); events record the principal's name as
  ``decided_by``;
- a job a model outage paused (``MODEL_UNAVAILABLE``) is retried by its owner or an
  admin, and takes nothing else (no input, no decision);
- ``context`` for a new job is set by an admin only (rules may read it).

Starting or resuming a job runs it in a background task; the request waits up to
``sync_wait`` seconds for it to pause or end (offline and scripted jobs take
milliseconds) and otherwise answers with the job as it is, still running (202). The
task goes on; the job's events stream meanwhile. A job left ``queued`` or ``running``
by a stopped server is recovered at the next start (:meth:`JobService.recover_all`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from skillwire.assembly import ModelChoice
from skillwire.core.errors import (
    ConflictError,
    ForbiddenError,
    NotFoundError,
    ServiceUnavailable,
    UsageError,
)
from skillwire.core.executor import ExecutorRegistry
from skillwire.core.job import Event, JobRecord, JobStatus, OutcomeClass
from skillwire.core.store import JobStore
from skillwire.engine import JobView, Runtime
from skillwire.engine.run import now
from skillwire.models.offline import OfflineModel
from skillwire.server.auth import Principal
from skillwire.server.signals import JobSignals, creation_watch
from skillwire.server.skillbook import SkillBook, failures
from skillwire.skills import BasePolicy, Skill
from skillwire.tools import Executors

if TYPE_CHECKING:
    from skillwire.jobqueue import JobQueue

__all__ = ["INBOX_READ_PAGE", "JobService", "ModelFactory", "Outcome", "ServiceUnavailable"]

log = logging.getLogger("skillwire.server")

ModelFactory = Callable[[Skill], ModelChoice]
"""The models a skill's jobs run on (default: ``assembly.choose_models`` per skill)."""

INBOX_READ_PAGE = 500
"""Paused jobs read from the store at a time while an approvals inbox is built (every
paused job is read, a page at a time)."""

_DECISION_KINDS = frozenset({"approval_granted", "approval_denied"})


@dataclass
class Outcome:
    """A job after a start or a resume; ``finished`` is False while it still runs."""

    view: JobView
    finished: bool


def may_see(principal: Principal, record: JobRecord, events: list[Event]) -> bool:
    """Whether ``principal`` may see the job (see the module docstring)."""
    if principal.is_admin or record.owner == principal.name:
        return True
    waiting = record.waiting
    if (
        record.status is JobStatus.PAUSED
        and waiting is not None
        and waiting.approver
        and principal.has(waiting.approver)
    ):
        return True
    return any(e.kind in _DECISION_KINDS and e.data.get("role") in principal.roles for e in events)


def waits_for_input(record: JobRecord) -> bool:
    """Spec 001's UI contract: paused, ``USER_ACTION_REQUIRED``, a ``reason_code``."""
    return (
        record.status is JobStatus.PAUSED
        and record.outcome_class is OutcomeClass.USER_ACTION_REQUIRED
        and record.waiting is not None
        and bool(record.waiting.reason_code)
    )


def waits_for_approval_by(principal: Principal, record: JobRecord) -> bool:
    """Paused for an approval that ``principal`` may give: they hold the role, and the
    job is not their own (unless the rule says ``self_approval: allowed``)."""
    waiting = record.waiting
    return (
        record.status is JobStatus.PAUSED
        and record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
        and waiting is not None
        and bool(waiting.approver)
        and principal.has(str(waiting.approver))
        and (record.owner != principal.name or bool(waiting.self_approval))
    )


class JobService:
    """Jobs through the runtimes, one runtime per skill version over one shared store."""

    def __init__(
        self,
        store: JobStore,
        book: SkillBook,
        models: ModelFactory,
        *,
        executors: ExecutorRegistry[Any] | None = None,
        base_policy: BasePolicy | None = None,
        admit: Callable[[Skill], None] | None = None,
        signals: JobSignals | None = None,
        sync_wait: float = 10.0,
        queue: JobQueue | None = None,
    ) -> None:
        self.queue = queue
        """``serve --queue``: starts and resumes go to workers (:mod:`skillwire.jobqueue`)."""
        self.store = store
        self.base_policy = base_policy
        self.admit = admit
        """Raises :class:`ServiceUnavailable` when a job of the skill may not start (a
        package's required credential is unset and it says ``fail_fast``)."""
        self.book = book
        self.signals = signals or JobSignals()
        self.sync_wait = sync_wait
        self._models = models
        self._executors = executors or Executors()
        self._runtimes: dict[str, tuple[Skill, Runtime]] = {}
        self._tasks: set[asyncio.Task[JobView]] = set()

    # -- runtimes and skills -----------------------------------------------------------

    def runtime_for(self, skill: Skill) -> Runtime:
        """The runtime of ``skill`` (built again when a reload replaced the skill)."""
        cached = self._runtimes.get(skill.id)
        if cached is not None and cached[0] is skill:
            return cached[1]
        try:
            choice = self._models(skill)
        except UsageError as exc:
            raise ServiceUnavailable(f"skill '{skill.id}': {exc}") from None
        for note in choice.notes:
            log.info("skill %s: %s", skill.id, note)
        runtime = Runtime(
            self.store,
            choice.model,
            gate_model=choice.gate_model,
            executors=self._executors,
            base_policy=self.base_policy,
            skills=self.skill_of,
            classifier=OfflineModel(),  # decides intents a skill lets it (docs/skills.md)
        )
        self._runtimes[skill.id] = (skill, runtime)
        return runtime

    def skill_of(self, record: JobRecord) -> Skill:
        """The skill of a stored job, in the version it started on: offered, retired or
        kept (:meth:`SkillBook.prepare`), else loaded from its source."""
        version = str(record.state.get("skill_version") or "") or None
        skill = self.book.known(record.skill_id, version)
        if skill is not None:
            return skill
        source = str(record.state.get("skill_source") or "")
        if source and Path(source).exists():
            from skillwire.skills import load_skill

            loaded = load_skill(source, trust=self.book.trust)
            if version is None or loaded.version_hash == version:
                return loaded
            raise ConflictError(
                f"job {record.id} started on version {version} of skill "
                f"'{record.skill_id}', which is no longer available (the store keeps no copy)"
            )
        raise ConflictError(
            f"job {record.id}: its skill '{record.skill_id}' is not loaded here "
            "(add its path to the server's skills)"
        )

    def approver_roles(self, skill: Skill) -> list[str]:
        """The roles the skill's rules name as approvers."""
        gate = self.runtime_for(skill).gate_for(skill)
        return sorted({r.approver for r in gate.policy.rules if r.approver})

    def all_approver_roles(self) -> set[str]:
        """The approver roles of every offered skill (a skill that cannot run is skipped)."""
        roles: set[str] = set()
        for skill in self.book.skills():
            try:
                roles.update(self.approver_roles(skill))
            except ServiceUnavailable:
                continue
        return roles

    # -- reading -----------------------------------------------------------------------

    async def record(self, principal: Principal, job_id: str) -> JobRecord:
        """The job's record, if ``principal`` may see the job; NotFoundError otherwise
        (its events are read only when they decide)."""
        record = await self.store.get(job_id)
        if record is not None and (
            may_see(principal, record, [])
            or may_see(principal, record, await self.store.events(job_id))
        ):
            await self.book.prepare(record, self.store)  # its skill version, if kept
            return record
        raise NotFoundError(f"no job '{job_id}'")

    async def view(self, principal: Principal, job_id: str) -> JobView:
        """The job with its events and model calls, if ``principal`` may see it."""
        record = await self.record(principal, job_id)
        return JobView(
            record, await self.store.events(job_id), await self.store.model_calls(job_id)
        )

    async def list_jobs(
        self,
        principal: Principal,
        *,
        status: JobStatus | None = None,
        skill_id: str | None = None,
        owner: str | None = None,
        outcome_class: OutcomeClass | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[JobRecord]:
        """The principal's own jobs, newest first; an admin's: everyone's (or ``owner``'s)."""
        if not principal.is_admin:
            if owner is not None and owner != principal.name:
                raise ForbiddenError("only an admin may list other principals' jobs")
            owner = principal.name
        return await self.store.list(
            owner=owner,
            status=status,
            skill_id=skill_id,
            outcome_class=outcome_class,
            limit=limit,
            offset=offset,
        )

    async def inbox(self, principal: Principal) -> list[JobRecord]:
        """Every job waiting for an approval that ``principal`` may give, oldest request
        first.

        The paused jobs are read a page at a time, newest first. Consecutive pages overlap
        by a tenth and a job met twice counts once: a job that leaves its pause while the
        pages are read shifts the later ones back by one, and the overlap keeps that from
        skipping the job at the seam."""
        if not principal.approver_roles:
            return []
        found: dict[str, JobRecord] = {}
        page = max(1, INBOX_READ_PAGE)
        step = page - page // 10
        offset = 0
        while True:
            batch = await self.store.list(status=JobStatus.PAUSED, limit=page, offset=offset)
            for record in batch:
                if waits_for_approval_by(principal, record):
                    found.setdefault(record.id, record)
            if len(batch) < page:
                break
            offset += step
        return sorted(
            found.values(),
            key=lambda r: (r.waiting.created_at if r.waiting else r.updated_at, r.id),
        )

    # -- changing ----------------------------------------------------------------------

    async def start(
        self,
        principal: Principal,
        skill_id: str,
        message: str,
        context: Mapping[str, Any] | None = None,
    ) -> Outcome:
        """Start a job on ``skill_id`` owned by ``principal``."""
        if not principal.can_start:
            raise ForbiddenError("starting a job needs the role 'user'")
        if context and not principal.is_admin:
            raise ForbiddenError("only an admin may set a job's context (rules may read it)")
        if not message.strip():
            raise UsageError("the message is empty")
        skill = self.book.get(skill_id)
        if self.admit is not None:
            self.admit(skill)
        runtime = self.runtime_for(skill)
        ctx = {**(context or {}), "user_id": principal.name}
        if self.queue is not None:  # a worker starts it; the id is known now
            job_id = await self.queue.enqueue_start(
                skill, message, owner=principal.name, context=ctx
            )
            at = now()
            queued = JobRecord(job_id, skill.id, JobStatus.QUEUED, None, principal.name, at, at)
            return Outcome(JobView(queued, [], []), False)
        with creation_watch() as created:
            task = self._spawn(runtime.start(skill, message, context=ctx, owner=principal.name))
        first: set[asyncio.Future[Any]] = {task, created}
        await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return Outcome(task.result(), True)
        return await self._settle(task, runtime, created.result())

    async def answer(
        self,
        principal: Principal,
        job_id: str,
        values: Mapping[str, Any],
        correlation_id: str | None = None,
    ) -> Outcome:
        """Give a paused job the input it waits for."""
        record = await self.record(principal, job_id)
        if record.status is not JobStatus.PAUSED or record.waiting is None:
            raise ConflictError(f"job {job_id} is {record.status}, not waiting for input")
        if record.outcome_class is OutcomeClass.APPROVAL_REQUIRED:
            raise ConflictError(
                f"job {job_id} waits for an approval by {record.waiting.approver}, not for input"
            )
        if record.outcome_class is OutcomeClass.MODEL_UNAVAILABLE:
            raise ConflictError(
                f"job {job_id} waits for the model {record.waiting.model or ''} to be "
                "reachable again, not for input: retry it (POST /api/jobs/{id}/retry)"
            )
        if record.outcome_class is OutcomeClass.OPERATOR_ACTION_REQUIRED:
            if not principal.is_admin:
                raise ForbiddenError("only an admin may answer an operator's question")
        elif record.owner != principal.name:
            raise ForbiddenError("only the job's owner may answer its questions")
        return await self._resume(record, input=dict(values), correlation_id=correlation_id)

    async def decide(
        self,
        principal: Principal,
        job_id: str,
        decision: Literal["approve", "deny"],
        correlation_id: str | None,
    ) -> Outcome:
        """Approve or deny the call a paused job waits on, as the role the rule names,
        naming the pause (``correlation_id``); never the owner's approval of their own
        call unless the rule allows it."""
        record = await self.record(principal, job_id)
        waiting = record.waiting
        if (
            record.status is not JobStatus.PAUSED
            or record.outcome_class is not OutcomeClass.APPROVAL_REQUIRED
            or waiting is None
        ):
            raise ConflictError(f"job {job_id} is not waiting for an approval")
        approver = str(waiting.approver or "")
        if not principal.has(approver):
            raise ForbiddenError(
                f"only the role '{approver}' may {decision} this call "
                f"(you hold: {', '.join(sorted(principal.roles)) or 'no role'})"
            )
        if not correlation_id:
            raise UsageError(
                f"to {decision} job {job_id}, name the pause you answer: give its "
                "waiting.correlation_id"
            )
        if decision == "approve" and record.owner == principal.name and not waiting.self_approval:
            raise ForbiddenError(
                f"you own job {job_id}: another {approver} must approve its call "
                "(the rule does not say self_approval: allowed)"
            )
        log.info("%s: %s %ss %s", job_id, principal.name, decision, waiting.tool)
        return await self._resume(
            record,
            approval=decision,
            role=approver,
            decided_by=principal.name,
            correlation_id=correlation_id,
        )

    async def retry(
        self, principal: Principal, job_id: str, correlation_id: str | None = None
    ) -> Outcome:
        """Run the stage a model outage stopped again (the job's owner or an admin); a
        job no outage paused is a conflict, and nothing changes. ``correlation_id``,
        when given, must name the outage's pause."""
        record = await self.record(principal, job_id)
        if (
            record.status is not JobStatus.PAUSED
            or record.outcome_class is not OutcomeClass.MODEL_UNAVAILABLE
        ):
            raise ConflictError(
                f"job {job_id} is {record.status}"
                + (f" ({record.outcome_class})" if record.outcome_class else "")
                + ", not paused by a model outage (MODEL_UNAVAILABLE): there is nothing to retry"
            )
        if record.owner != principal.name and not principal.is_admin:
            raise ForbiddenError("only the job's owner or an admin may retry it")
        log.info("%s: %s retries it after a model outage", job_id, principal.name)
        return await self._resume(
            record, retry=True, decided_by=principal.name, correlation_id=correlation_id
        )

    async def reload(self, principal: Principal) -> Any:
        """Reload the skills (admin only); the :class:`ReloadOutcome`."""
        if not principal.is_admin:
            raise ForbiddenError("reloading skills needs the role 'admin'")
        outcome = await self.book.reload()
        await self.book.keep_versions(self.store)
        log.info(
            "skills reloaded: %s loaded, %s kept, %s removed",
            len(outcome.loaded),
            len(outcome.kept),
            len(outcome.removed),
        )
        for line in failures(outcome):
            log.error("%s", line)
        return outcome

    # -- background work ---------------------------------------------------------------

    def _spawn(self, work: Coroutine[Any, Any, JobView]) -> asyncio.Task[JobView]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[JobView]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and not isinstance(exc, UsageError):
            log.error("a job task failed", exc_info=exc)

    async def _resume(self, record: JobRecord, **resume: Any) -> Outcome:
        """Run a resume (``Runtime.resume``'s keywords); past the wait, answer once it
        has saved (no longer ``paused``). With a queue, a worker runs it: the job as it
        is now, still paused (202)."""
        job_id = record.id
        runtime = self.runtime_for(self.skill_of(record))
        if self.queue is not None:
            waiting = record.waiting
            if waiting is not None and resume.get("correlation_id") not in (
                None,
                waiting.correlation_id,
            ):  # refused now, as the runtime would: a worker could only drop it
                raise ConflictError(f"job {job_id} is waiting under another correlation id")
            await self.queue.enqueue_resume(record.skill_id, job_id, **resume)
            return Outcome(await runtime.view(job_id), False)
        work = runtime.resume(job_id, **resume)
        with self.signals.listen(job_id) as saved:
            task = self._spawn(work)
            return await self._settle(task, runtime, job_id, saved.future)

    async def _settle(
        self,
        task: asyncio.Task[JobView],
        runtime: Runtime,
        job_id: str,
        saved: asyncio.Future[None] | None = None,
    ) -> Outcome:
        try:
            view = await asyncio.wait_for(asyncio.shield(task), self.sync_wait)
        except TimeoutError:
            if saved is not None:
                # A resume saves before its first model call or tool run: until then the
                # stored job still shows the pause it is leaving.
                either: set[asyncio.Future[Any]] = {task, saved}
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                if task.done():
                    return Outcome(task.result(), True)
            return Outcome(await runtime.view(job_id), False)
        return Outcome(view, True)

    async def recover_all(self) -> list[str]:
        """Continue every job a stopped server left ``queued`` or ``running``."""
        recovered: list[str] = []
        for status in (JobStatus.QUEUED, JobStatus.RUNNING):
            for record in await self.store.list(status=status, limit=10_000):
                try:
                    await self.book.prepare(record, self.store)
                    runtime = self.runtime_for(self.skill_of(record))
                    await runtime.recover(record.id)
                except Exception:
                    log.exception("could not recover job %s", record.id)
                    continue
                recovered.append(record.id)
        return recovered

    async def drain(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for running jobs; how many are still running."""
        pending = set(self._tasks)
        if pending:
            _, still = await asyncio.wait(pending, timeout=timeout)
            return len(still)
        return 0

    async def aclose(self) -> None:
        """Close the models of every runtime (at shutdown, once no job runs)."""
        for _, runtime in self._runtimes.values():
            await runtime.aclose()
