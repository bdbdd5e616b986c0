"""The jobs API: start, read, list, answer, approve or deny, and the approvals inbox."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from skillwire.core.issues import UsageError
from skillwire.core.job import JobRecord, JobStatus
from skillwire.engine import JobView
from skillwire.server.context import ApiPrincipal, context_of
from skillwire.server.errors import error_responses
from skillwire.server.payloads import (
    ApprovalIn,
    InboxItem,
    InboxOut,
    InputIn,
    JobIn,
    JobListOut,
    JobOut,
    JobSummary,
    MeOut,
    WaitingOut,
)
from skillwire.server.service import Outcome

__all__ = ["job_out", "router", "summary_out"]

router = APIRouter(prefix="/api", tags=["jobs"])


def job_out(view: JobView) -> JobOut:
    """The job as ``skillwire show JOB --json`` prints it."""
    return JobOut.model_validate(view.to_dict())


def summary_out(record: JobRecord) -> JobSummary:
    """A job in a list."""
    return JobSummary(
        id=record.id,
        skill_id=record.skill_id,
        owner=record.owner,
        status=str(record.status),
        outcome_class=str(record.outcome_class) if record.outcome_class else None,
        created_at=record.created_at,
        updated_at=record.updated_at,
        waiting=WaitingOut.model_validate(record.waiting.to_dict()) if record.waiting else None,
    )


def _answer(outcome: Outcome, response: Response, *, created: bool) -> JobOut:
    if not outcome.finished:
        response.status_code = 202
    elif created:
        response.status_code = 201
    if created:
        response.headers["Location"] = f"/api/jobs/{outcome.view.id}"
    return job_out(outcome.view)


@router.get("/me", response_model=MeOut, responses=error_responses(401))
async def me(principal: ApiPrincipal) -> MeOut:
    """Who the key belongs to, and the roles it holds."""
    return MeOut(principal=principal.name, roles=sorted(principal.roles), dev=principal.dev)


@router.post(
    "/jobs",
    response_model=JobOut,
    status_code=201,
    responses={
        202: {"model": JobOut, "description": "Started; still running after the server's wait"},
        **error_responses(400, 401, 403, 404, 503),
    },
)
async def start_job(
    body: JobIn, principal: ApiPrincipal, request: Request, response: Response
) -> JobOut:
    """Start a job on a skill and run it until it pauses or ends.

    201 with the job when it paused or ended within the server's wait (``sync_wait``);
    202 with the job still ``running`` otherwise (follow ``/api/jobs/{id}/events``).
    Needs the role ``user``.
    """
    service = context_of(request).service
    outcome = await service.start(principal, body.skill_id, body.message, body.context)
    return _answer(outcome, response, created=True)


@router.get("/jobs", response_model=JobListOut, responses=error_responses(401, 403))
async def list_jobs(
    principal: ApiPrincipal,
    request: Request,
    status: Annotated[JobStatus | None, Query(description="Only jobs with this status.")] = None,
    skill_id: Annotated[str | None, Query(description="Only jobs of this skill.")] = None,
    owner: Annotated[str | None, Query(description="Only this owner's jobs (admin).")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> JobListOut:
    """Jobs, newest first: the caller's own; an admin's: everyone's."""
    records = await context_of(request).service.list_jobs(
        principal, status=status, skill_id=skill_id, owner=owner, limit=limit, offset=offset
    )
    return JobListOut(jobs=[summary_out(r) for r in records], limit=limit, offset=offset)


@router.get("/jobs/{job_id}", response_model=JobOut, responses=error_responses(401, 404))
async def get_job(job_id: str, principal: ApiPrincipal, request: Request) -> JobOut:
    """A job with its events and model calls: the facts of ``skillwire show JOB --json``."""
    return job_out(await context_of(request).service.view(principal, job_id))


@router.post(
    "/jobs/{job_id}/input",
    response_model=JobOut,
    responses={
        202: {"model": JobOut, "description": "Resumed; still running after the server's wait"},
        **error_responses(400, 401, 403, 404, 409, 503),
    },
)
async def give_input(
    job_id: str, body: InputIn, principal: ApiPrincipal, request: Request, response: Response
) -> JobOut:
    """Answer the input a paused job waits for (its owner; an operator's question: an admin).

    A value that does not satisfy the field's schema keeps the job paused under the same
    correlation id, with ``waiting.error`` saying what was wrong (200).
    """
    service = context_of(request).service
    outcome = await service.answer(principal, job_id, body.input, body.correlation_id)
    return _answer(outcome, response, created=False)


@router.post(
    "/jobs/{job_id}/approval",
    response_model=JobOut,
    responses={
        202: {"model": JobOut, "description": "Resumed; still running after the server's wait"},
        **error_responses(400, 401, 403, 404, 409, 503),
    },
)
async def decide(
    job_id: str, body: ApprovalIn, principal: ApiPrincipal, request: Request, response: Response
) -> JobOut:
    """Approve or deny the call a paused job waits on: only the role the rule names may."""
    service = context_of(request).service
    outcome = await service.decide(principal, job_id, body.decision, body.correlation_id)
    return _answer(outcome, response, created=False)


@router.get("/approvals", response_model=InboxOut, responses=error_responses(401))
async def approvals(
    principal: ApiPrincipal,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> InboxOut:
    """The caller's approvals inbox: jobs waiting for an approval one of its roles gives."""
    records = await context_of(request).service.inbox(principal, limit=limit)
    items = []
    for r in records:
        w = r.waiting
        if w is None:  # pragma: no cover - the inbox holds waiting jobs only
            raise UsageError(f"job {r.id} is not waiting")
        items.append(
            InboxItem(
                job_id=r.id,
                skill_id=r.skill_id,
                owner=r.owner,
                tool=w.tool,
                arguments=w.arguments,
                reason=w.reason,
                approver=w.approver,
                prompt_message=w.prompt_message,
                correlation_id=w.correlation_id,
                requested_at=w.created_at,
            )
        )
    return InboxOut(approvals=items)
