"""The web page: log in, pick a skill and chat, the job list, the approvals inbox, skills.

Server-rendered (Jinja2) with htmx for the parts that change in place; every form also
works as a plain POST that redirects. The job page itself is in :mod:`.page_job`.
A POST from another origin is refused (403). Logging in opens a server-side session
(:mod:`.sessions`); the cookie holds its id only, HttpOnly, SameSite=Strict, Path=/, and
Secure whenever the request came over HTTPS. Logging out closes the session.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from skillwire.core.errors import ForbiddenError, UsageError
from skillwire.core.job import JobStatus
from skillwire.server.auth import COOKIE_NAME, Principal, hash_key
from skillwire.server.context import PagePrincipal, ServerContext, context_of
from skillwire.server.sessions import over_https
from skillwire.server.skills import skill_out

__all__ = ["INBOX_PAGE_SIZE", "render", "router", "same_origin"]

INBOX_PAGE_SIZE = 50
"""Approvals shown on one page of the inbox (the others are a link away)."""


def same_origin(request: Request) -> None:
    """Refuse a POST whose ``Origin`` is another site (cross-site request forgery)."""
    if request.method in ("GET", "HEAD"):
        return
    origin = request.headers.get("origin")
    if origin is None:
        return
    if origin == "null" or origin.split("://", 1)[-1] != request.headers.get("host", ""):
        raise ForbiddenError("a form from another site may not post here")


router = APIRouter(include_in_schema=False, dependencies=[Depends(same_origin)])


async def render(
    request: Request,
    principal: Principal | None,
    template: str,
    status_code: int = 200,
    inbox_count: int | None = None,
    **values: Any,
) -> HTMLResponse:
    """Render ``template`` with the navigation's facts (who, dev mode, inbox size; the
    inbox is read unless ``inbox_count`` is given)."""
    ctx = context_of(request)
    inbox = inbox_count or 0
    if inbox_count is None and principal is not None and principal.approver_roles:
        inbox = len(await ctx.service.inbox(principal))
    response: HTMLResponse = ctx.templates.TemplateResponse(
        request,
        template,
        {"principal": principal, "dev": ctx.dev, "inbox_count": inbox, **values},
        status_code=status_code,
    )
    return response


def _local(target: str | None) -> str:
    """``target`` if it is a path on this site, else ``/``."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"


@router.get("/login", response_class=HTMLResponse)
async def login_form(
    request: Request, next: Annotated[str | None, Query(max_length=500)] = None
) -> HTMLResponse:
    """The login form: paste an API key."""
    return await render(request, None, "login.html", next=_local(next), error=None)


@router.post("/login", response_model=None)
async def login(
    request: Request,
    key: Annotated[str, Form(max_length=500)] = "",
    next: Annotated[str, Form(max_length=500)] = "/",
) -> Response:
    """Check the key; open a session and keep its id (not the key) in the cookie."""
    ctx = context_of(request)
    key = key.strip()
    principal = ctx.keys.identify(key)
    if principal is None:
        return await render(
            request,
            None,
            "login.html",
            status_code=401,
            next=_local(next),
            error="That key is not valid. Ask the server's operator for one.",
        )
    ctx.sessions.close(request.cookies.get(COOKIE_NAME))  # a new login ends the previous one
    session_id = ctx.sessions.open(hash_key(key))
    response = RedirectResponse(_local(next), status_code=303)
    response.set_cookie(
        COOKIE_NAME,
        session_id,
        max_age=int(ctx.sessions.lifetime),
        **_cookie_attributes(request, ctx),
    )
    return response


def _cookie_attributes(request: Request, ctx: ServerContext) -> dict[str, Any]:
    """The attributes the login cookie is set and deleted with."""
    secure = ctx.secure_cookies or over_https(request, trust_proxy=ctx.trust_proxy)
    return {"path": "/", "httponly": True, "samesite": "strict", "secure": secure}


@router.post("/logout")
async def logout(request: Request) -> RedirectResponse:
    """Close the session (its cookie is refused from now on) and drop the cookie."""
    ctx = context_of(request)
    ctx.sessions.close(request.cookies.get(COOKIE_NAME))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE_NAME, **_cookie_attributes(request, ctx))
    return response


@router.get("/", response_class=HTMLResponse)
async def chat(
    request: Request,
    principal: PagePrincipal,
    skill: Annotated[str | None, Query(max_length=200)] = None,
) -> HTMLResponse:
    """Pick a skill and send it a message."""
    service = context_of(request).service
    skills = [skill_out(service, s, admin=principal.is_admin) for s in service.book.skills()]
    chosen = next((s for s in skills if s.id == skill), skills[0] if skills else None)
    recent = await service.list_jobs(principal, limit=8) if principal.can_start else []
    examples = [ex for i in chosen.intents for ex in i.examples[:2]][:6] if chosen else []
    return await render(
        request,
        principal,
        "chat.html",
        skills=skills,
        chosen=chosen,
        examples=examples,
        recent=recent,
    )


@router.post("/chat", response_model=None)
async def send(
    request: Request,
    principal: PagePrincipal,
    skill_id: Annotated[str, Form(max_length=200)] = "",
    message: Annotated[str, Form(max_length=20_000)] = "",
) -> Response:
    """Start a job with the message; go to its page."""
    if not message.strip():
        raise UsageError("write a message first")
    outcome = await context_of(request).service.start(principal, skill_id, message)
    return RedirectResponse(f"/jobs/{outcome.view.id}", status_code=303)


@router.get("/jobs", response_class=HTMLResponse)
async def job_list(
    request: Request,
    principal: PagePrincipal,
    status: Annotated[JobStatus | None, Query()] = None,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> HTMLResponse:
    """The caller's jobs (an admin's: everyone's), newest first, 50 a page."""
    jobs = await context_of(request).service.list_jobs(
        principal, status=status, limit=51, offset=offset
    )
    return await render(
        request,
        principal,
        "jobs.html",
        jobs=jobs[:50],
        more=len(jobs) > 50,
        status=status,
        offset=offset,
        statuses=[str(s) for s in JobStatus],
    )


@router.get("/approvals", response_class=HTMLResponse)
async def inbox(
    request: Request,
    principal: PagePrincipal,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> HTMLResponse:
    """Calls waiting for an approval the caller may give: tool, arguments and reason,
    :data:`INBOX_PAGE_SIZE` a page, oldest first, with links to the other pages."""
    jobs = await context_of(request).service.inbox(principal)
    return await render(
        request,
        principal,
        "approvals.html",
        inbox_count=len(jobs),
        jobs=jobs[offset : offset + INBOX_PAGE_SIZE],
        total=len(jobs),
        offset=offset,
        page_size=INBOX_PAGE_SIZE,
    )


@router.get("/skills", response_class=HTMLResponse)
async def skills_page(request: Request, principal: PagePrincipal) -> HTMLResponse:
    """The offered skills; for an admin, the last load's report and a reload button."""
    service = context_of(request).service
    skills = [skill_out(service, s, admin=principal.is_admin) for s in service.book.skills()]
    return await render(
        request, principal, "skills.html", skills=skills, last=service.book.last, reloaded=False
    )


@router.post("/skills/reload", response_class=HTMLResponse)
async def reload(request: Request, principal: PagePrincipal) -> HTMLResponse:
    """Reload the skills (admin) and show the report."""
    service = context_of(request).service
    outcome = await service.reload(principal)
    skills = [skill_out(service, s, admin=True) for s in service.book.skills()]
    return await render(
        request, principal, "skills.html", skills=skills, last=outcome, reloaded=True
    )
