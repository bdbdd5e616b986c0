"""Every error as ``{"error": {"code": ..., "message": ...}}`` (the API) or a page.

A caller's mistake is a 4xx; only the server's own failure is a 500, and it never
carries a traceback (that goes to the log)::

    NotAuthenticated          401 unauthorized (the page: to the login form)
    UsageError                400 bad_request
    ├── NotFoundError         404 not_found
    ├── ForbiddenError        403 forbidden
    └── ConflictError         409 conflict
    SkillError                422 skill_error (details: the skill's issues)
    RequestValidationError    422 invalid_request (details: per-field problems)
    HTTPException             its status (not_found, method_not_allowed ...)
    ServiceUnavailable        503 model_unavailable, credentials_missing
    anything else             500 internal_error
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from skillwire.core.errors import (
    ConflictError,
    ForbiddenError,
    NotAuthenticated,
    NotFoundError,
    RequestTooLargeError,
    ServiceUnavailable,
    SkillError,
    UsageError,
)
from skillwire.server.context import context_of
from skillwire.server.payloads import ErrorOut

__all__ = ["allowed_methods", "error_responses", "install_error_handlers", "known_query"]

log = logging.getLogger("skillwire.server")

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_requests",
    503: "unavailable",
}
_DESCRIPTIONS = {
    400: "A malformed request",
    401: "No valid API key",
    403: "The caller's roles do not allow this",
    404: "No such job or skill (or not visible to the caller)",
    409: "The job is not in a state that allows this, or it changed meanwhile",
    413: "The request body is larger than the server accepts",
    422: "The request body or parameters do not match the schema",
    503: "The skill's model is not usable now",
}


def error_responses(*codes: int, json_content: bool = False) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for ``codes`` (and 413 and 422, which any request
    can meet), all with the error body.

    ``json_content``: name ``application/json`` explicitly, for a route whose own media
    type is another (the event stream)."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in sorted({*codes, 413, 422}):
        description = _DESCRIPTIONS.get(code, "Error")
        if json_content:
            schema = {"$ref": "#/components/schemas/ErrorOut"}
            out[code] = {
                "description": description,
                "content": {"application/json": {"schema": schema}},
            }
        else:
            out[code] = {"model": ErrorOut, "description": description}
    return out


def allowed_methods(request: Request) -> list[str]:
    """The methods the OpenAPI document gives the request's path (empty off the API)."""
    methods: set[str] = set()
    for template, operations in request.app.openapi().get("paths", {}).items():
        pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
        if re.fullmatch(pattern, request.url.path):
            methods.update(m.upper() for m in operations if m in _HTTP_METHODS)
    return sorted(methods)


_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "patch", "head", "options"})


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def _body(code: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return {"error": error}


def _respond(
    request: Request,
    status: int,
    code: str,
    message: str,
    details: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    accept = request.headers.get("accept", "")
    if _is_api(request) or ("application/json" in accept and "text/html" not in accept):
        return JSONResponse(_body(code, message, details), status_code=status, headers=headers)
    templates = context_of(request).templates
    return templates.TemplateResponse(
        request,
        "error.html",
        {"status": status, "code": code, "message": message, "principal": None},
        status_code=status,
        headers=headers,
    )


def _usage_status(exc: UsageError) -> tuple[int, str]:
    if isinstance(exc, NotFoundError):
        return 404, "not_found"
    if isinstance(exc, ForbiddenError):
        return 403, "forbidden"
    if isinstance(exc, ConflictError):
        return 409, "conflict"
    if isinstance(exc, RequestTooLargeError):
        return 413, "too_large"
    return 400, "bad_request"


def _validation_details(exc: RequestValidationError) -> list[dict[str, Any]]:
    return [
        {
            "loc": [str(p) for p in e.get("loc", ())],
            "msg": str(e.get("msg", "")),
            "type": e.get("type"),
        }
        for e in exc.errors()
    ]


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers of the module docstring on ``app``."""

    @app.exception_handler(NotAuthenticated)
    async def _unauthenticated(request: Request, exc: NotAuthenticated) -> Response:
        if _is_api(request):
            return JSONResponse(
                _body("unauthorized", str(exc)),
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        target = "/login?next=" + quote(request.url.path, safe="/")
        if request.headers.get("hx-request"):
            return Response(status_code=401, headers={"HX-Redirect": target})
        return RedirectResponse(target, status_code=303)

    @app.exception_handler(UsageError)
    async def _usage(request: Request, exc: UsageError) -> Response:
        status, code = _usage_status(exc)
        return _respond(request, status, code, str(exc))

    @app.exception_handler(SkillError)
    async def _skill(request: Request, exc: SkillError) -> Response:
        details = [dict(i.to_dict()) for i in exc.issues]
        return _respond(request, 422, "skill_error", "the skill has errors", details)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        details = _validation_details(exc)
        first = details[0] if details else {"loc": [], "msg": "invalid request"}
        where = ".".join(first["loc"])
        return _respond(
            request, 422, "invalid_request", f"{where}: {first['msg']}".strip(": "), details
        )

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> Response:
        code = _HTTP_CODES.get(exc.status_code, "error")
        message = str(exc.detail) if exc.detail else code.replace("_", " ")
        headers = dict(exc.headers) if exc.headers else {}
        if exc.status_code == 405 and (allowed := allowed_methods(request)):
            headers["Allow"] = ", ".join(allowed)  # Starlette names only one route's methods
        return _respond(request, exc.status_code, code, message, headers=headers or None)

    @app.exception_handler(ServiceUnavailable)
    async def _unavailable(request: Request, exc: ServiceUnavailable) -> Response:
        return _respond(request, 503, exc.code, str(exc))

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> Response:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return _respond(
            request, 500, "internal_error", "the server failed; the details are in its log"
        )


def known_query(request: Request) -> None:
    """Refuse query parameters the route does not declare (a misspelt filter such as
    ``?stauts=paused`` would otherwise be ignored silently), and a parameter given twice
    (every one holds one value; all but one would be ignored): 422."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not request.query_params:
        return
    given = Counter(name for name, _ in request.query_params.multi_items())
    unknown = sorted(set(given) - _query_names(route.dependant))
    repeated = sorted({name for name, times in given.items() if times > 1} - set(unknown))
    problems = [
        {"loc": ("query", name), "msg": "unknown query parameter", "type": "extra_forbidden"}
        for name in unknown
    ] + [
        {"loc": ("query", name), "msg": "given more than once", "type": "repeated"}
        for name in repeated
    ]
    if problems:
        raise RequestValidationError(problems)


def _query_names(dependant: Dependant) -> set[str]:
    """The query parameters a route (with its dependencies) declares."""
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names
