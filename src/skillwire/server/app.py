"""``create_app(settings)``: the HTTP API and the web page of ``skillwire serve``.

    app = create_app(ServerSettings(skill_paths=[Path("examples")], db=Path("jobs.db")))

One SQLite store is shared by one runtime per skill (its models chosen by
``assembly.choose_models``, offline by default; tests inject ``models``). The API is under
``/api`` (OpenAPI document at ``/api/openapi.json``, browsable at ``/api/docs``); the page
is at ``/``. See docs/server.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import skillwire
from skillwire.assembly import (
    base_policy,
    credentials,
    make_executors,
    open_store,
    refuse_without_credentials,
)
from skillwire.config import SkillwireConfig, trust_policy
from skillwire.core.errors import ServiceUnavailable, UsageError
from skillwire.server.auth import KeyRing
from skillwire.server.context import ServerContext
from skillwire.server.errors import install_error_handlers
from skillwire.server.limits import BodySizeLimit
from skillwire.server.presenters import humanize, pretty
from skillwire.server.service import JobService, ModelFactory
from skillwire.server.signals import JobSignals, SignallingStore
from skillwire.server.skillbook import SkillBook
from skillwire.skills import Skill
from skillwire.store.postgres import PostgresJobStore

if TYPE_CHECKING:
    from skillwire.jobqueue import JobQueue

__all__ = ["ServerSettings", "create_app"]

log = logging.getLogger("skillwire.server")

HERE = Path(__file__).resolve().parent

_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "object-src 'none'"
)

_DOCS_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; object-src 'none'"
)
"""``/api/docs``: this server's files only, and Swagger UI's inline start-up script."""


@dataclass
class ServerSettings:
    """How to build the server."""

    skill_paths: list[Path]
    """Skill files or folders to offer."""
    db: Path | str
    """The SQLite file of jobs (created if needed), or a ``postgresql://`` URL."""
    config: SkillwireConfig = field(default_factory=SkillwireConfig)
    """``skillwire.toml``: models, and ``[server]`` keys and ``sync_wait``."""
    dev_key: str | None = None
    """``--dev``: one more key, whose principal holds every role."""
    models: ModelFactory | None = None
    """The models of a skill's jobs (default: ``choose_models`` per skill)."""
    sync_wait: float | None = None
    """Overrides ``config.server.sync_wait``."""
    recover_on_start: bool = True
    """Continue jobs a stopped server left queued or running (one server per file)."""
    secure_cookies: bool = False
    """Mark the login cookie ``Secure`` on every request (it is whenever a request came
    over HTTPS anyway)."""
    poll_seconds: float = 2.0
    """A stream's longest wait without a signal (catches other processes' writes)."""
    keepalive_seconds: float = 15.0
    """A live stream with nothing to send for this long sends a ``: ping`` comment (so
    proxies keep it open, and a client that went away is found)."""
    queue: bool = False
    """``serve --queue``: starts and resumes go to workers through the queue in the
    PostgreSQL job database (``skillwire worker``), and the server recovers no job."""
    watch: bool = False
    """``--watch``: reload the skills when their files change (:mod:`.watch`)."""
    watch_debounce_ms: int = 300
    """How long a burst of writes is gathered into one reload."""


def _queue(settings: ServerSettings) -> JobQueue | None:
    """The queue of ``serve --queue``, in the PostgreSQL job database."""
    if not settings.queue:
        return None
    from skillwire.jobqueue import JobQueue

    if not isinstance(settings.db, str):
        raise UsageError(
            "--queue needs a PostgreSQL job database: set $SKILLWIRE_DB or runtime.db to a "
            "postgresql:// URL"
        )
    return JobQueue(settings.db, settings.config)


def _default_models(config: SkillwireConfig) -> ModelFactory:
    from skillwire.assembly import ModelChoice, choose_models

    def models(skill: Skill) -> ModelChoice:
        return choose_models(None, skill=skill, config=config)

    return models


def _templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.filters["pretty"] = pretty
    templates.env.filters["humanize"] = humanize
    templates.env.globals["version"] = skillwire.__version__
    from skillwire.engine.usage import usage_by_stage  # for _stage_usage.html

    templates.env.globals["usage_by_stage"] = usage_by_stage
    return templates


def _drafts_dir(settings: ServerSettings) -> Path:
    """Where the Author page keeps drafts: beside the SQLite file, or (jobs in
    PostgreSQL) in ``.skillwire/drafts`` of the configuration file's folder, else of
    the current folder."""
    if isinstance(settings.db, Path):
        return settings.db.parent / "drafts"
    home = Path(settings.config.source).parent if settings.config.source else Path.cwd()
    return home / ".skillwire" / "drafts"


def create_app(settings: ServerSettings) -> FastAPI:
    """The FastAPI application (the store is opened here, closed at shutdown)."""
    from skillwire.server import author, events, jobs, page, page_job, skills

    signals = JobSignals()
    durability = settings.config.runtime.durability
    store = SignallingStore(lambda: open_store(settings.db, durability), signals)
    queue = _queue(settings)
    base = base_policy(settings.config)  # the operator's: shell tools, roots, and the gate
    book = SkillBook(
        settings.skill_paths,
        trust=trust_policy(settings.config),
        enable=settings.config.server.enable,
        base=base,
    )
    creds = credentials(settings.config)

    def admit(skill: Skill) -> None:
        try:
            refuse_without_credentials(skill, creds)
        except UsageError as exc:  # the operator's setup, not the caller's request
            raise ServiceUnavailable(str(exc), code="credentials_missing") from None

    service = JobService(
        store,
        book,
        settings.models or _default_models(settings.config),
        executors=make_executors(settings.config, base, creds),
        base_policy=base,
        admit=admit,
        signals=signals,
        sync_wait=(
            settings.sync_wait
            if settings.sync_wait is not None
            else settings.config.server.sync_wait
        ),
        queue=queue,
    )
    keys = KeyRing(
        settings.config.server.keys,
        dev_key=settings.dev_key,
        approver_roles=service.all_approver_roles,
    )
    ctx = ServerContext(
        service=service,
        store=store,
        signals=signals,
        keys=keys,
        templates=_templates(),
        dev=settings.dev_key is not None,
        secure_cookies=settings.secure_cookies,
        trust_proxy=settings.config.server.trust_proxy,
        poll_seconds=settings.poll_seconds,
        keepalive_seconds=settings.keepalive_seconds,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if queue is not None:
                from skillwire.jobqueue import ensure_queue_schema

                await ensure_queue_schema(queue.url)
                await stack.enter_async_context(queue.app.open_async())
            async with _serving():
                yield

    @asynccontextmanager
    async def _serving() -> AsyncIterator[None]:
        await book.keep_versions(store)  # every version a job may start on is kept
        stop_watch = asyncio.Event()
        watcher: asyncio.Task[None] | None = None
        if settings.watch:
            from skillwire.server.watch import watch_skills

            ready = asyncio.Event()
            watcher = asyncio.get_running_loop().create_task(
                watch_skills(
                    service,
                    settings.skill_paths,
                    stop_watch,
                    debounce_ms=settings.watch_debounce_ms,
                    ready=ready,
                )
            )
            started = asyncio.ensure_future(ready.wait())
            await asyncio.wait({watcher, started}, return_when=asyncio.FIRST_COMPLETED)
            started.cancel()
            if watcher.done():
                watcher.result()  # the watch could not start: say why, do not serve stale
        if settings.recover_on_start and queue is None:
            task = asyncio.get_running_loop().create_task(service.recover_all())
            ctx.background.add(task)
            task.add_done_callback(ctx.background.discard)
        inner = store.inner  # PostgreSQL: other processes' saves wake the streams at once
        follow = (
            asyncio.get_running_loop().create_task(inner.follow(signals.notify))
            if isinstance(inner, PostgresJobStore)
            else None
        )
        try:
            yield
        finally:
            stop_watch.set()
            if watcher is not None:
                await watcher
            if follow is not None:  # its LISTEN connection is given back before the store closes
                follow.cancel()
                with suppress(asyncio.CancelledError):
                    await follow
            ctx.closing = True
            still = await service.drain(timeout=5.0)
            if still:
                log.warning("%s jobs still running at shutdown: recovered at next start", still)
            else:  # no job is left to call a model (one still running would fail on it)
                await service.aclose()
            await store.close()

    app = FastAPI(
        title="skillwire",
        version=skillwire.__version__,
        summary="Run LLM agent jobs governed by declarative skills.",
        description=(
            "Start jobs on skills, answer the input they wait for, approve or deny the calls "
            "they wait on, and follow their events live. Authenticate with "
            '`Authorization: Bearer <key>`. Errors are `{"error": {"code", "message"}}`.'
        ),
        docs_url=None,  # served below, from the vendored Swagger UI: no network needed
        redoc_url=None,
        openapi_url="/api/openapi.json",
        lifespan=lifespan,
    )
    app.state.skillwire = ctx
    install_error_handlers(app)
    app.include_router(jobs.router)
    app.include_router(events.router)
    app.include_router(skills.router)
    app.include_router(page.router)
    app.include_router(page_job.router)
    author.install(app, _drafts_dir(settings))
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.add_api_route("/api/docs", _api_docs, include_in_schema=False, methods=["GET"])

    app.add_middleware(BodySizeLimit, max_bytes=settings.config.server.max_body_bytes)
    app.add_middleware(SecurityHeaders)  # added last: outermost, so a 413 carries them too
    return app


SWAGGER_UI = "/static/vendor/swagger-ui"
"""Where the vendored Swagger UI is served (see ``static/vendor/README.md``)."""


async def _api_docs() -> HTMLResponse:
    """``/api/docs``: Swagger UI on the OpenAPI document, every file from this server."""
    return get_swagger_ui_html(
        openapi_url="/api/openapi.json",
        title="skillwire API",
        swagger_js_url=f"{SWAGGER_UI}/swagger-ui-bundle.js",
        swagger_css_url=f"{SWAGGER_UI}/swagger-ui.css",
        swagger_favicon_url=f"{SWAGGER_UI}/favicon-32x32.png",
        oauth2_redirect_url=None,
        swagger_ui_parameters={"validatorUrl": None},  # no call to validator.swagger.io
    )


class SecurityHeaders:
    """Adds ``nosniff``, a referrer policy, ``X-Frame-Options: DENY`` and a content
    security policy: a strict one, or on ``/api/docs`` one that also allows Swagger UI's
    inline start-up script (every file still from this server). Plain ASGI, so streams stay
    streams."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; add the headers to the response's start."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = _DOCS_CSP if str(scope.get("path", "")) == "/api/docs" else _CSP

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                headers.setdefault("Referrer-Policy", "same-origin")
                headers.setdefault("Content-Security-Policy", policy)
                headers.setdefault("X-Frame-Options", "DENY")
            await send(message)

        await self.app(scope, receive, send_with_headers)
