"""Telling the server's streams that a job changed, without polling in a loop.

:class:`SignallingStore` wraps the job store the runtimes write through: after every
committed ``create`` and ``save`` it wakes whoever listens to that job in
:class:`JobSignals`. A stream registers before it reads, so a change between its read
and its wait is never missed; it also wakes after a bounded wait to catch writes made
by another process on the same file (the CLI resuming a job while the server runs).

It also tells a request which job a ``Runtime.start`` it launched has just created
(:func:`creation_watch`), so the request can answer 202 with the job id while the job
goes on running in the background.
"""

from __future__ import annotations

import asyncio
import builtins
import contextvars
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from skillwire.core.job import Event, JobRecord, JobStatus, ModelCallRecord, OutcomeClass
from skillwire.core.store import Claim, ClaimSnapshot, ClaimStore, JobStore

__all__ = ["JobSignals", "Listener", "SignallingStore", "creation_watch"]

_CREATED: contextvars.ContextVar[asyncio.Future[str] | None] = contextvars.ContextVar(
    "skillwire_server_created", default=None
)


@contextmanager
def creation_watch() -> Iterator[asyncio.Future[str]]:
    """A future that gets the id of the first job created by tasks started inside.

    Tasks copy the current context when they are created, so a task created within the
    ``with`` block carries the future, and :class:`SignallingStore` resolves it."""
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    token = _CREATED.set(future)
    try:
        yield future
    finally:
        _CREATED.reset(token)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Listener:
    """One registration for the next change of one job (see :meth:`JobSignals.listen`)."""

    def __init__(self, signals: JobSignals, job_id: str) -> None:
        self._signals = signals
        self._job_id = job_id
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def wait(self, timeout: float) -> bool:
        """Wait for the change, at most ``timeout`` seconds; whether it came."""
        try:
            await asyncio.wait_for(asyncio.shield(self.future), timeout)
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        """Stop listening."""
        self._signals._drop(self._job_id, self)


class JobSignals:
    """Who is waiting for which job to change; safe across event loops and threads."""

    def __init__(self) -> None:
        self._listeners: dict[str, set[Listener]] = {}

    @contextmanager
    def listen(self, job_id: str) -> Iterator[Listener]:
        """Register for the next change of ``job_id`` (register first, then read)."""
        listener = Listener(self, job_id)
        self._listeners.setdefault(job_id, set()).add(listener)
        try:
            yield listener
        finally:
            listener.close()

    def notify(self, job_id: str) -> None:
        """Wake every listener of ``job_id``."""
        for listener in list(self._listeners.get(job_id, ())):
            future = listener.future
            if not future.done():
                future.get_loop().call_soon_threadsafe(_wake, future)

    def listening(self, job_id: str) -> int:
        """How many listen to ``job_id`` now."""
        return len(self._listeners.get(job_id, ()))

    def _drop(self, job_id: str, listener: Listener) -> None:
        found = self._listeners.get(job_id)
        if found is not None:
            found.discard(listener)
            if not found:
                del self._listeners[job_id]


class SignallingStore:
    """A :class:`~skillwire.core.store.JobStore` that signals every committed change.

    It opens the wrapped store with ``opener`` now, and again on first use after
    :meth:`close`, so an application whose lifespan ends (a test client, a reload of the
    server) and starts again keeps working.
    """

    def __init__(self, opener: Callable[[], JobStore], signals: JobSignals) -> None:
        self._opener = opener
        self._inner: JobStore | None = opener()
        self.signals = signals

    @property
    def inner(self) -> JobStore:
        """The wrapped store, opened if it was closed."""
        if self._inner is None:
            self._inner = self._opener()
        return self._inner

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        """Create, then signal and resolve a pending :func:`creation_watch`."""
        stored = await self.inner.create(job, events)
        future = _CREATED.get()
        if future is not None and not future.done():
            future.set_result(stored.id)
        self.signals.notify(stored.id)
        return stored

    async def save(
        self,
        job: JobRecord,
        *,
        expected_version: int,
        events: Sequence[Event] = (),
        model_calls: Sequence[ModelCallRecord] = (),
        durable: bool = False,
        claims: Sequence[Claim] = (),
        released: Sequence[str] = (),
    ) -> JobRecord:
        """Save, then signal."""
        stored = await self.inner.save(
            job,
            expected_version=expected_version,
            events=events,
            model_calls=model_calls,
            durable=durable,
            claims=claims,
            released=released,
        )
        self.signals.notify(stored.id)
        return stored

    async def claim_ledger(self, claims: Sequence[Claim]) -> ClaimSnapshot:
        """The claims held, as the wrapped store reads them (fail closed without)."""
        inner = self.inner
        if not isinstance(inner, ClaimStore):
            return ClaimSnapshot()
        return await inner.claim_ledger(claims)

    async def get(self, job_id: str) -> JobRecord | None:
        """The job, or None."""
        return await self.inner.get(job_id)

    async def ids_starting(self, prefix: str, *, limit: int = 10) -> builtins.list[str]:
        """The ids of at most ``limit`` jobs that start with ``prefix``."""
        return await self.inner.ids_starting(prefix, limit=limit)

    async def list(
        self,
        *,
        owner: str | None = None,
        status: JobStatus | None = None,
        skill_id: str | None = None,
        outcome_class: OutcomeClass | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[JobRecord]:
        """Jobs, newest first."""
        return await self.inner.list(
            owner=owner,
            status=status,
            skill_id=skill_id,
            outcome_class=outcome_class,
            limit=limit,
            offset=offset,
        )

    async def events(self, job_id: str, *, after_seq: int = 0) -> builtins.list[Event]:
        """The job's events after ``after_seq``."""
        return await self.inner.events(job_id, after_seq=after_seq)

    async def model_calls(self, job_id: str) -> builtins.list[ModelCallRecord]:
        """The job's model calls."""
        return await self.inner.model_calls(job_id)

    async def close(self) -> None:
        """Close the wrapped store (it opens again on next use)."""
        inner, self._inner = self._inner, None
        if inner is not None:
            await inner.close()
