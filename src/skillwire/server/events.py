"""A job's events as server-sent events, live.

:func:`follow` reads the store after a cursor and then waits for the job's next change
(:class:`~skillwire.server.signals.JobSignals`, or at most ``poll_seconds`` for writes
by another process); it never loops without waiting. The API stream sends:

- ``job_event``: one timeline entry (as in ``skillwire show JOB --json``'s ``events``);
- ``model_call``: one model call;
- ``job``: the job's status, outcome, ``waiting`` and reply, whenever it was saved;
- ``end``: the job completed, failed or was escalated; the stream closes.

Every ``job_event`` and ``model_call`` carries the id ``<event seq>:<call seq>``, so a
client that reconnects with ``Last-Event-ID`` continues where it stopped. A stream with
nothing to say for ``keepalive_seconds`` sends a ``: ping`` comment, which also finds a
client that went away; a client going away ends its stream quietly
(:class:`~skillwire.server.streams.EventStream`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.sse import ServerSentEvent

from skillwire.core.job import Event, JobRecord, JobStatus, ModelCallRecord
from skillwire.server.context import ApiPrincipal, ServerContext, context_of
from skillwire.server.errors import error_responses, known_query
from skillwire.server.streams import SSE_ITEM_SCHEMA, EventStream

__all__ = ["TERMINAL", "Cursor", "Tick", "follow", "router"]

router = APIRouter(prefix="/api", tags=["jobs"], dependencies=[Depends(known_query)])

TERMINAL = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.ESCALATED})
"""Statuses after which nothing more happens to a job."""


@dataclass
class Cursor:
    """How far a client has read: the last event seq and the last model call seq."""

    event_seq: int = 0
    call_seq: int = 0

    @property
    def token(self) -> str:
        """The SSE id: ``<event seq>:<call seq>``."""
        return f"{self.event_seq}:{self.call_seq}"

    @classmethod
    def parse(cls, text: str | None) -> Cursor | None:
        """A ``Last-Event-ID`` value (``12:3`` or ``12``), or None when unreadable."""
        if not text:
            return None
        head, _, tail = text.strip().partition(":")
        try:
            events, calls = int(head), int(tail or 0)
        except ValueError:
            return None
        if events < 0 or calls < 0:
            return None
        return cls(events, calls)


@dataclass
class Tick:
    """What changed since the last tick."""

    record: JobRecord
    events: list[Event] = field(default_factory=list)
    calls: list[ModelCallRecord] = field(default_factory=list)
    changed: bool = False
    """The job was saved since the last tick (its ``version`` moved)."""
    end: bool = False
    """The job is finished; nothing follows."""

    @property
    def quiet(self) -> bool:
        """Nothing new: a keep-alive tick."""
        return not (self.events or self.calls or self.changed or self.end)


async def follow(
    ctx: ServerContext,
    job_id: str,
    cursor: Cursor,
    *,
    version: int | None = None,
    live: bool = True,
) -> AsyncGenerator[Tick, None]:
    """Ticks of ``job_id`` after ``cursor`` (advanced in place); ``version`` is the
    job version the client has seen (None: send the job's state first). A live follow
    that has had nothing to tell for ``ctx.keepalive_seconds`` yields a quiet tick."""
    store = ctx.store
    clock = asyncio.get_running_loop().time
    told = clock()
    while not ctx.closing:
        with ctx.signals.listen(job_id) as listener:
            record = await store.get(job_id)
            if record is None:
                return
            tick = Tick(record, changed=record.version != version, end=record.status in TERMINAL)
            tick.events = await store.events(job_id, after_seq=cursor.event_seq)
            if tick.changed:
                calls = await store.model_calls(job_id)
                tick.calls = [c for c in calls if c.seq > cursor.call_seq]
            if not tick.quiet or (live and clock() - told >= ctx.keepalive_seconds):
                yield tick
                told = clock()
            version = record.version
            if tick.end or not live:
                return
            if tick.quiet:
                await listener.wait(min(ctx.poll_seconds, ctx.keepalive_seconds))


async def visible_job(job_id: str, principal: ApiPrincipal, request: Request) -> JobRecord:
    """The job, checked before the stream starts (so a 404 or 401 is a real status)."""
    return await context_of(request).service.record(principal, job_id)


def _job_state(record: JobRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "status": str(record.status),
        "outcome_class": str(record.outcome_class) if record.outcome_class else None,
        "waiting": record.waiting.to_dict() if record.waiting else None,
        "reply": record.reply,
        "fields": record.fields,
        "version": record.version,
        "updated_at": record.updated_at,
    }


@router.get(
    "/jobs/{job_id}/events",
    response_class=EventStream,
    responses={
        200: {
            "description": "The job's events as they happen",
            "content": {"text/event-stream": {"itemSchema": SSE_ITEM_SCHEMA}},
        },
        **error_responses(401, 404, json_content=True),
    },
)
async def job_events(
    job: Annotated[JobRecord, Depends(visible_job)],
    request: Request,
    after: Annotated[int, Query(ge=0, le=10**9, description="Events after this seq.")] = 0,
    live: Annotated[
        bool, Query(description="Keep streaming until the job ends (false: what is stored).")
    ] = True,
    last_event_id: Annotated[str | None, Header(max_length=100)] = None,
) -> EventStream:
    """The job's events as server-sent events (``job_event``, ``model_call``, ``job``,
    ``end``); ``Last-Event-ID`` resumes a dropped stream."""
    ctx = context_of(request)
    cursor = Cursor.parse(last_event_id) or Cursor(after, 0)
    return EventStream(_api_events(ctx, job.id, cursor, live))


async def _api_events(
    ctx: ServerContext, job_id: str, cursor: Cursor, live: bool
) -> AsyncGenerator[ServerSentEvent, None]:
    async with aclosing(follow(ctx, job_id, cursor, live=live)) as ticks:
        async for tick in ticks:
            for event in tick.events:
                cursor.event_seq = event.seq
                yield ServerSentEvent(event="job_event", id=cursor.token, data=event.to_dict())
            for call in tick.calls:
                cursor.call_seq = call.seq
                yield ServerSentEvent(event="model_call", id=cursor.token, data=call.to_dict())
            if tick.changed:
                yield ServerSentEvent(event="job", data=_job_state(tick.record))
            if tick.end:
                yield ServerSentEvent(event="end", data={"status": str(tick.record.status)})
            if tick.quiet:
                yield ServerSentEvent(comment="ping")
