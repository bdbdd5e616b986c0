"""The jobs API: start, read, list, answer, approve or deny, retry, and the approvals inbox."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse

from skillwire.core.errors import NotFoundError, UsageError
from skillwire.core.job import JobRecord, JobStatus, OutcomeClass
from skillwire.core.store import resolve_job_id
from skillwire.engine import JobView
from skillwire.server.auth import Principal
from skillwire.server.context import ApiPrincipal, context_of
from skillwire.server.errors import error_responses, known_query
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
    RetryIn,
)
from skillwire.server.service import Outcome

__all__ = ["FactsResponse", "JobId", "job_json", "router", "summary_json", "visible_job_id"]

router = APIRouter(prefix="/api", tags=["jobs"], dependencies=[Depends(known_query)])


async def visible_job_id(request: Request, principal: Principal, text: str) -> str:
    """The id of the one job ``principal`` may see whose id is ``text`` or starts with
    it. Jobs the principal may not see are no candidates and are never named; a full
    id is returned as it is (the caller's visibility check answers for it)."""
    service = context_of(request).service

    async def visible(job_id: str) -> bool:
        try:
            await service.record(principal, job_id)
        except NotFoundError:
            return False
        return True

    return await resolve_job_id(service.store, text, visible=visible)


async def _job_id(
    job_id: Annotated[
        str, Path(description="The job's id, or any start of it that only one of your jobs has.")
    ],
    principal: ApiPrincipal,
    request: Request,
) -> str:
    return await visible_job_id(request, principal, job_id)


JobId = Annotated[str, Depends(_job_id)]
"""A job id path parameter: the full id of the job the caller named (a unique prefix
of a job they may see is enough; several are a 400 naming them)."""


class FactsResponse(JSONResponse):
    """A job's facts exactly as ``JobView.to_dict()`` gives them (no added nulls)."""


def job_json(view: JobView) -> dict[str, Any]:
    """The job as ``skillwire show JOB --json`` prints it, checked against :class:`JobOut`."""
    data = view.to_dict()
    JobOut.model_validate(data)
    return data


def summary_json(record: JobRecord) -> dict[str, Any]:
    """A job in a list, checked against :class:`JobSummary`."""
    data = {
        "id": record.id,
        "skill_id": record.skill_id,
        "owner": record.owner,
        "status": str(record.status),
        "outcome_class": str(record.outcome_class) if record.outcome_class else None,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "waiting": record.waiting.to_dict() if record.waiting else None,
    }
    JobSummary.model_validate(data)
    return data


def _answer(outcome: Outcome, *, created: bool) -> FactsResponse:
    status = 202 if not outcome.finished else 201 if created else 200
    headers = {"Location": f"/api/jobs/{outcome.view.id}"} if created else None
    return FactsResponse(job_json(outcome.view), status_code=status, headers=headers)


def _job_responses(status: int, description: str, *errors: int) -> dict[int | str, Any]:
    return {
        status: {"model": JobOut, "description": description},
        202: {"model": JobOut, "description": "Accepted; still running after the server's wait"},
        **error_responses(*errors),
    }


@router.get("/me", response_model=MeOut, responses=error_responses(401))
async def me(principal: ApiPrincipal) -> MeOut:
    """Who the key belongs to, and the roles it holds."""
    return MeOut(principal=principal.name, roles=sorted(principal.roles), dev=principal.dev)


@router.post(
    "/jobs",
    response_class=FactsResponse,
    status_code=201,
    responses=_job_responses(201, "The job, paused or ended", 400, 401, 403, 404, 503),
)
async def start_job(body: JobIn, principal: ApiPrincipal, request: Request) -> FactsResponse:
    """Start a job on a skill and run it until it pauses or ends.

    201 with the job when it paused or ended within the server's wait (``sync_wait``);
    202 with the job still ``running`` otherwise (follow ``/api/jobs/{id}/events``).
    Needs the role ``user``.
    """
    service = context_of(request).service
    outcome = await service.start(principal, body.skill_id, body.message, body.context)
    return _answer(outcome, created=True)


@router.get(
    "/jobs",
    response_class=FactsResponse,
    responses={
        200: {"model": JobListOut, "description": "A page of jobs"},
        **error_responses(401, 403),
    },
)
async def list_jobs(
    principal: ApiPrincipal,
    request: Request,
    status: Annotated[JobStatus | None, Query(description="Only jobs with this status.")] = None,
    skill_id: Annotated[str | None, Query(description="Only jobs of this skill.")] = None,
    owner: Annotated[str | None, Query(description="Only this owner's jobs (admin).")] = None,
    outcome_class: Annotated[
        OutcomeClass | None, Query(description="Only jobs with this outcome class.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> FactsResponse:
    """Jobs, newest first: the caller's own; an admin's: everyone's."""
    records = await context_of(request).service.list_jobs(
        principal,
        status=status,
        skill_id=skill_id,
        owner=owner,
        outcome_class=outcome_class,
        limit=limit,
        offset=offset,
    )
    return FactsResponse(
        {"jobs": [summary_json(r) for r in records], "limit": limit, "offset": offset}
    )


@router.get(
    "/jobs/{job_id}",
    response_class=FactsResponse,
    responses={200: {"model": JobOut, "description": "The job"}, **error_responses(400, 401, 404)},
)
async def get_job(job_id: JobId, principal: ApiPrincipal, request: Request) -> FactsResponse:
    """A job with its events and model calls: the facts of ``skillwire show JOB --json``."""
    return FactsResponse(job_json(await context_of(request).service.view(principal, job_id)))


@router.post(
    "/jobs/{job_id}/input",
    response_class=FactsResponse,
    responses=_job_responses(200, "The job, paused again or ended", 400, 401, 403, 404, 409, 503),
)
async def give_input(
    job_id: JobId, body: InputIn, principal: ApiPrincipal, request: Request
) -> FactsResponse:
    """Answer the input a paused job waits for (its owner; an operator's question: an admin).

    A value that does not satisfy the field's schema keeps the job paused under the same
    correlation id, with ``waiting.error`` saying what was wrong (200).
    """
    service = context_of(request).service
    outcome = await service.answer(principal, job_id, body.input, body.correlation_id)
    return _answer(outcome, created=False)


@router.post(
    "/jobs/{job_id}/approval",
    response_class=FactsResponse,
    responses=_job_responses(200, "The job, paused again or ended", 400, 401, 403, 404, 409, 503),
)
async def decide(
    job_id: JobId, body: ApprovalIn, principal: ApiPrincipal, request: Request
) -> FactsResponse:
    """Approve or deny the call a paused job waits on: only the role the rule names may,
    naming the pause (``correlation_id``, required), and never the job's owner's own
    approval unless the rule says ``self_approval: allowed``. The event records the
    caller's name as ``decided_by``."""
    service = context_of(request).service
    outcome = await service.decide(principal, job_id, body.decision, body.correlation_id)
    return _answer(outcome, created=False)


@router.post(
    "/jobs/{job_id}/retry",
    response_class=FactsResponse,
    responses=_job_responses(200, "The job, paused again or ended", 400, 401, 403, 404, 409, 503),
)
async def retry(
    job_id: JobId, body: RetryIn, principal: ApiPrincipal, request: Request
) -> FactsResponse:
    """Retry a job a model outage paused (``MODEL_UNAVAILABLE``): the stage whose model
    could not be reached runs again from the saved state; a model still unreachable
    pauses the job again. The job's owner or an admin; a job no outage paused is a 409
    and nothing changes."""
    service = context_of(request).service
    outcome = await service.retry(principal, job_id, body.correlation_id)
    return _answer(outcome, created=False)


@router.get("/approvals", response_model=InboxOut, responses=error_responses(401))
async def approvals(
    principal: ApiPrincipal,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> InboxOut:
    """The caller's approvals inbox: jobs waiting for an approval one of its roles gives,
    oldest request first, a page at a time (``total`` counts them all; ``next_offset``
    is the next page's ``offset``, null on the last)."""
    records = await context_of(request).service.inbox(principal)
    items = []
    for r in records[offset : offset + limit]:
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
    following = offset + limit
    return InboxOut(
        approvals=items,
        total=len(records),
        limit=limit,
        offset=offset,
        next_offset=following if following < len(records) else None,
    )
