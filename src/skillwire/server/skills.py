"""The skills API: list the offered skills, reload them (admin)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from skillwire.core.errors import ServiceUnavailable
from skillwire.server.context import ApiPrincipal, context_of
from skillwire.server.errors import error_responses, known_query
from skillwire.server.payloads import ReloadOut, SkillIntentOut, SkillListOut, SkillOut
from skillwire.server.service import JobService
from skillwire.skills import Skill

__all__ = ["router", "skill_out"]

router = APIRouter(prefix="/api", tags=["skills"], dependencies=[Depends(known_query)])


def skill_out(service: JobService, skill: Skill, *, admin: bool) -> SkillOut:
    """A skill as the API lists it (its source path only for an admin)."""
    try:
        approvers = service.approver_roles(skill)
    except ServiceUnavailable:
        approvers = []
    return SkillOut(
        id=skill.id,
        name=skill.name or skill.id,
        description=skill.description or skill.problem.statement or "",
        version=None if skill.version is None else str(skill.version),
        format=skill.format,
        source=skill.origin if admin else None,
        intents=[
            SkillIntentOut(id=i.id, description=i.description, examples=list(i.examples))
            for i in skill.intents.supported
        ],
        tools=[t.name for t in skill.tools],
        approvers=approvers,
        content_version=skill.version_hash or None,
        state=skill.package.status.state if skill.package is not None else None,
    )


@router.get("/skills", response_model=SkillListOut, responses=error_responses(401))
async def list_skills(principal: ApiPrincipal, request: Request) -> SkillListOut:
    """The skills offered for new jobs; for an admin, also the last (re)load's report."""
    service = context_of(request).service
    admin = principal.is_admin
    return SkillListOut(
        skills=[skill_out(service, s, admin=admin) for s in service.book.skills()],
        last_load=service.book.last.to_dict() if admin else None,
    )


@router.post("/skills/reload", response_model=ReloadOut, responses=error_responses(401, 403))
async def reload_skills(principal: ApiPrincipal, request: Request) -> ReloadOut:
    """Load every skill path again (admin). A skill whose new version fails keeps its
    last good version (listed in ``kept``); the report gives every error with its line."""
    outcome = await context_of(request).service.reload(principal)
    return ReloadOut.model_validate(outcome.to_dict())
