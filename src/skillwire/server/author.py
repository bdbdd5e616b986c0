"""The Author page: admins write and edit draft skills in the browser, the load report
live beside the text (the loader reads every keystroke's version; nothing is written
until it loads), conditions shown as the CEL that runs, and the diff of each save.

Drafts live in a folder of their own next to the job database (``drafts/<name>``); a
draft's name is a slug, so no request names a path. The loader reads a draft and never
runs it (a python tool's module is not imported). A draft becomes a served skill when
the operator adds the drafts folder (or copies the draft) to the skill paths.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from skillwire.core.errors import ForbiddenError, NotFoundError, UsageError
from skillwire.server.auth import Principal
from skillwire.server.context import PagePrincipal
from skillwire.server.page import render, same_origin

__all__ = ["install", "router"]

MAX_NAME = 64
MAX_TEXT = 200_000

router = APIRouter(include_in_schema=False, dependencies=[Depends(same_origin)])


def install(app: FastAPI, drafts: Path) -> None:
    """Serve the Author page on ``app``, its drafts in ``drafts``."""
    app.state.author_drafts = drafts
    app.include_router(router)


def _admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise ForbiddenError("the Author page is for admins")


def _folder(request: Request, name: str) -> Path:
    """The draft ``name``'s folder; a name that is not a slug names nothing."""
    ok = 0 < len(name) <= MAX_NAME and all(c.isalnum() or c in "-_" for c in name)
    if not ok or not name[0].isalnum() or not name.isascii():
        raise NotFoundError(f"no draft {name!r} (a draft's name is letters, digits, - and _)")
    root: Path = request.app.state.author_drafts
    folder = root / name
    # A draft is a folder of the drafts folder itself: a symlink out of it (planted by
    # whoever can write there) is no draft, so nothing is read or written through it.
    if folder.is_symlink() or (folder.exists() and folder.resolve().parent != root.resolve()):
        raise NotFoundError(f"no draft {name!r}")
    return folder


def _drafts(request: Request) -> list[str]:
    root: Path = request.app.state.author_drafts
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "domain.yaml").is_file())


def _report(check: Any) -> dict[str, Any]:
    """What the page shows of a check: status, findings with fixes, the rules' CEL."""
    from skillwire.policy.explain import explain_skill

    issues = [*check.report.issues, *check.policy_findings]
    rules = explain_skill(check.skill)["rules"] if check.loads else []
    return {
        "loads": check.loads,
        "errors": [i for i in issues if str(i.severity) == "error"],
        "warnings": [i for i in issues if str(i.severity) == "warning"],
        "rules": rules,
    }


@router.get("/author", response_class=HTMLResponse)
async def author_home(request: Request, principal: PagePrincipal) -> HTMLResponse:
    """The drafts, and a form to start one from a description."""
    _admin(principal)
    return await render(request, principal, "author.html", drafts=_drafts(request))


@router.post("/author", response_model=None)
async def author_new(
    request: Request,
    principal: PagePrincipal,
    name: Annotated[str, Form(max_length=MAX_NAME)] = "",
    description: Annotated[str, Form(max_length=2_000)] = "",
) -> Response:
    """Start a draft: the interview with every default, from the description."""
    _admin(principal)
    folder = _folder(request, name.strip())
    if (folder / "domain.yaml").exists():
        raise UsageError(f"a draft named {folder.name!r} exists: open it")
    text = " ".join(description.split())
    if not text:
        raise UsageError("describe the agent in a sentence or two")
    await asyncio.to_thread(_start_draft, folder, text)
    return RedirectResponse(f"/author/{folder.name}", status_code=303)


def _start_draft(folder: Path, description: str) -> None:
    from skillwire.builder import DefaultsPrompter, Session, finish, interview, open_draft

    session = Session(open_draft(folder, new=True, description=description), DefaultsPrompter())
    session.description = description
    interview(session)
    finish(session, confirm=False)


@router.get("/author/{name}", response_class=HTMLResponse)
async def author_draft(request: Request, principal: PagePrincipal, name: str) -> HTMLResponse:
    """The draft's text beside its live load report."""
    _admin(principal)
    from skillwire.builder import Draft

    folder = _folder(request, name)
    if not (folder / "domain.yaml").is_file():
        raise NotFoundError(f"no draft {name!r}")
    draft = await asyncio.to_thread(Draft, folder)
    return await render(
        request,
        principal,
        "author_draft.html",
        name=name,
        text=draft.on_disk,
        result=_report(draft.last),
        diff=None,
        saved=False,
    )


@router.post("/author/{name}/check", response_class=HTMLResponse)
async def author_check(
    request: Request,
    principal: PagePrincipal,
    name: str,
    text: Annotated[str, Form(max_length=MAX_TEXT)] = "",
) -> HTMLResponse:
    """The load report of the text as it is now (htmx, as the author types)."""
    _admin(principal)
    from skillwire.builder import Draft

    draft = await asyncio.to_thread(Draft, _folder(request, name))
    check = await asyncio.to_thread(draft.check_text, text)
    return await render(request, principal, "_author_report.html", result=_report(check))


@router.post("/author/{name}/save", response_class=HTMLResponse)
async def author_save(
    request: Request,
    principal: PagePrincipal,
    name: str,
    text: Annotated[str, Form(max_length=MAX_TEXT)] = "",
) -> HTMLResponse:
    """Write the text when it loads, and show the diff; otherwise write nothing."""
    _admin(principal)
    from skillwire.builder import Draft

    draft = await asyncio.to_thread(Draft, _folder(request, name))
    check, diff = await asyncio.to_thread(draft.write_text, text)
    return await render(
        request,
        principal,
        "author_draft.html",
        status_code=200 if check.loads else 422,
        name=name,
        text=text,
        result=_report(check),
        diff=diff,
        saved=check.loads,
    )
