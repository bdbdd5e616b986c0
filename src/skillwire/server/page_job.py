"""The job page: the conversation, the state panel, the live timeline and model calls.

The state panel (``#job-state``) holds the status, the input widget (exactly when spec
001's UI contract holds, for the job's owner), the approval buttons (for a holder of the
approver role) and the reply. The timeline and model-call tables grow live: the page's
script follows ``/jobs/{id}/stream`` (server-sent events carrying rendered rows) and
fetches the panel again whenever the job was saved.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Coroutine
from contextlib import aclosing
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.sse import ServerSentEvent

from skillwire.core.errors import NotFoundError, UsageError
from skillwire.core.job import JobRecord
from skillwire.engine import JobView
from skillwire.server.auth import Principal
from skillwire.server.context import PagePrincipal, ServerContext, context_of
from skillwire.server.events import Cursor, follow
from skillwire.server.jobs import visible_job_id
from skillwire.server.page import render, same_origin
from skillwire.server.presenters import FIELD_PREFIX, JobPanel, form_values, job_panel
from skillwire.server.service import Outcome
from skillwire.server.streams import EventStream

__all__ = ["router"]

router = APIRouter(include_in_schema=False, dependencies=[Depends(same_origin)])


def _urls(view: JobView) -> dict[str, str]:
    last_event = view.events[-1].seq if view.events else 0
    last_call = view.model_calls[-1].seq if view.model_calls else 0
    base = f"/jobs/{view.id}"
    query = f"after={last_event}&calls={last_call}&version={view.record.version}"
    return {"state": f"{base}/state", "stream": f"{base}/stream?{query}"}


def _job_panel(request: Request, view: JobView, principal: Principal) -> JobPanel:
    skill = context_of(request).service.book.known(view.record.skill_id)
    return job_panel(view, principal, skill)


async def _panel(
    request: Request, principal: Principal, view: JobView, flash: str | None = None
) -> HTMLResponse:
    response: HTMLResponse = context_of(request).templates.TemplateResponse(
        request,
        "_state.html",
        {
            "panel": _job_panel(request, view, principal),
            "principal": principal,
            "flash": flash,
            "field_prefix": FIELD_PREFIX,
        },
    )
    return response


@router.get("/jobs/{job_id}", response_class=HTMLResponse, response_model=None)
async def job_page(
    job_id: str, request: Request, principal: PagePrincipal
) -> HTMLResponse | RedirectResponse:
    """The whole job page; ``/jobs/<a unique start of its id>`` redirects to it."""
    full_id = await visible_job_id(request, principal, job_id)
    if full_id != job_id:
        return RedirectResponse(f"/jobs/{full_id}", status_code=303)
    view = await context_of(request).service.view(principal, job_id)
    return await render(
        request,
        principal,
        "job.html",
        panel=_job_panel(request, view, principal),
        view=view,
        urls=_urls(view),
        flash=None,
        field_prefix=FIELD_PREFIX,
    )


@router.get("/jobs/{job_id}/state", response_class=HTMLResponse)
async def job_state(job_id: str, request: Request, principal: PagePrincipal) -> HTMLResponse:
    """The state panel alone (fetched by the page when the job changes)."""
    view = await context_of(request).service.view(principal, job_id)
    return await _panel(request, principal, view)


async def _page_visible_job(job_id: str, principal: PagePrincipal, request: Request) -> JobRecord:
    return await context_of(request).service.record(principal, job_id)


@router.get("/jobs/{job_id}/stream", response_class=EventStream)
async def job_stream(
    job: Annotated[JobRecord, Depends(_page_visible_job)],
    request: Request,
    after: Annotated[int, Query(ge=0)] = 0,
    calls: Annotated[int, Query(ge=0)] = 0,
    version: Annotated[int | None, Query(ge=0)] = None,
) -> EventStream:
    """Rendered timeline rows (``row``), model-call rows (``call``), ``state`` when the
    job was saved, ``end`` when it finished."""
    cursor = Cursor.parse(request.headers.get("last-event-id")) or Cursor(after, calls)
    return EventStream(_page_events(context_of(request), job.id, cursor, version))


async def _page_events(
    ctx: ServerContext, job_id: str, cursor: Cursor, version: int | None
) -> AsyncGenerator[ServerSentEvent, None]:
    env = ctx.templates.env
    row, call_row = env.get_template("_event_row.html"), env.get_template("_call_row.html")
    async with aclosing(follow(ctx, job_id, cursor, version=version)) as ticks:
        async for tick in ticks:
            for event in tick.events:
                cursor.event_seq = event.seq
                yield ServerSentEvent(event="row", id=cursor.token, raw_data=row.render(e=event))
            for call in tick.calls:
                cursor.call_seq = call.seq
                yield ServerSentEvent(
                    event="call", id=cursor.token, raw_data=call_row.render(c=call)
                )
            if tick.changed:
                yield ServerSentEvent(event="state", raw_data=str(tick.record.version))
            if tick.end:
                yield ServerSentEvent(event="end", raw_data=str(tick.record.status))
            if tick.quiet:
                yield ServerSentEvent(comment="ping")


async def _after(
    request: Request, principal: Principal, job_id: str, work: Coroutine[Any, Any, Outcome]
) -> Response:
    """Run ``work`` (a resume); answer htmx with the panel, a plain form with a redirect."""
    service = context_of(request).service
    if not request.headers.get("hx-request"):
        await work
        return RedirectResponse(f"/jobs/{job_id}", status_code=303)
    flash = None
    try:
        view = (await work).view
    except NotFoundError:
        raise
    except UsageError as exc:  # a conflict, a wrong role: say so in the panel
        flash = str(exc)
        view = await service.view(principal, job_id)
    return await _panel(request, principal, view, flash)


@router.post("/jobs/{job_id}/input", response_model=None)
async def give_input(job_id: str, request: Request, principal: PagePrincipal) -> Response:
    """The input widget's submission: one value per requested field."""
    service = context_of(request).service
    record = await service.record(principal, job_id)
    form = await request.form()
    if record.waiting is None:
        work = service.answer(principal, job_id, {}, None)
    else:
        values = form_values(record.waiting, {k: v for k, v in form.items() if isinstance(v, str)})
        correlation = form.get("correlation_id")
        work = service.answer(
            principal, job_id, values, correlation if isinstance(correlation, str) else None
        )
    return await _after(request, principal, job_id, work)


@router.post("/jobs/{job_id}/approval", response_model=None)
async def decide(job_id: str, request: Request, principal: PagePrincipal) -> Response:
    """Approve or deny (the buttons of the job page and of the inbox)."""
    form = await request.form()
    decision = form.get("decision")
    correlation = form.get("correlation_id")
    if decision not in ("approve", "deny"):
        raise UsageError("choose approve or deny")
    work = context_of(request).service.decide(
        principal,
        job_id,
        "approve" if decision == "approve" else "deny",
        correlation if isinstance(correlation, str) else None,
    )
    return await _after(request, principal, job_id, work)
