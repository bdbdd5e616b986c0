"""What every route reaches: the server's parts, and who is calling.

:class:`ServerContext` is kept on ``app.state.skillwire``; the dependencies here read it
and identify the caller from ``Authorization: Bearer <key>`` or the page's session cookie.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.templating import Jinja2Templates

from skillwire.core.errors import NotAuthenticated
from skillwire.core.store import JobStore
from skillwire.server.auth import COOKIE_NAME, KeyRing, Principal
from skillwire.server.service import JobService
from skillwire.server.sessions import LoginSessions
from skillwire.server.signals import JobSignals

__all__ = [
    "ApiPrincipal",
    "NotAuthenticated",
    "PagePrincipal",
    "ServerContext",
    "api_principal",
    "context_of",
    "page_principal",
]


@dataclass
class ServerContext:
    """The server's parts, built once by ``create_app``."""

    service: JobService
    store: JobStore
    signals: JobSignals
    keys: KeyRing
    templates: Jinja2Templates
    sessions: LoginSessions = field(default_factory=LoginSessions)
    """The page's open login sessions."""
    dev: bool = False
    secure_cookies: bool = False
    """Mark the login cookie ``Secure`` even on a request that came over plain HTTP."""
    trust_proxy: bool = False
    """Believe ``X-Forwarded-Proto`` (``[server] trust_proxy``)."""
    poll_seconds: float = 2.0
    """The longest a stream waits without a signal (catches other processes' writes)."""
    keepalive_seconds: float = 15.0
    """A live stream with nothing to send for this long sends a ``: ping`` comment."""
    closing: bool = False
    background: set[asyncio.Task[Any]] = field(default_factory=set)
    """Server tasks to keep referenced (the recovery at start)."""


def context_of(request: Request) -> ServerContext:
    """The server context of the app serving ``request``."""
    ctx: ServerContext = request.app.state.skillwire
    return ctx


_bearer = HTTPBearer(
    auto_error=False,
    description="An API key from skillwire.toml's [[server.keys]]: `Authorization: Bearer <key>`.",
)


def api_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The caller of an API route: the bearer key, else the page's session cookie."""
    ctx = context_of(request)
    if credentials is not None:
        principal = ctx.keys.identify(credentials.credentials)
    else:
        principal = ctx.sessions.principal(request.cookies.get(COOKIE_NAME), ctx.keys)
    if principal is None:
        raise NotAuthenticated("a valid API key is required: Authorization: Bearer <key>")
    return principal


def page_principal(request: Request) -> Principal:
    """The caller of a page route: the login session its cookie names."""
    ctx = context_of(request)
    principal = ctx.sessions.principal(request.cookies.get(COOKIE_NAME), ctx.keys)
    if principal is None:
        raise NotAuthenticated("log in with your API key")
    return principal


ApiPrincipal = Annotated[Principal, Depends(api_principal)]
PagePrincipal = Annotated[Principal, Depends(page_principal)]
