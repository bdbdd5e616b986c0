"""A ceiling on request bodies (``[server] max_body_bytes``, 1 MiB by default).

:class:`BodySizeLimit` is plain ASGI, so streamed responses stay streams. A request
that declares a larger ``Content-Length`` is answered 413 before the application sees
it; a body sent without one (chunked) is counted as it arrives, and the read that passes
the limit raises :class:`BodyTooLargeError`, which the error handlers turn into the same 413
(``{"error": {"code": "too_large", ...}}``). Nothing past the limit is buffered.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillwire.core.errors import RequestTooLargeError

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BodySizeLimit", "BodyTooLargeError"]

DEFAULT_MAX_BODY_BYTES = 1_048_576
"""1 MiB: a message is at most 20,000 characters; an input or a context is small."""


class BodyTooLargeError(RequestTooLargeError, HTTPException):
    """:class:`~skillwire.core.errors.RequestTooLargeError` as Starlette's HTTPException
    too: FastAPI turns any other error raised while it reads a body into a 400."""

    def __init__(self, limit: int) -> None:
        RequestTooLargeError.__init__(self, limit)
        HTTPException.__init__(self, 413, str(self))


class BodySizeLimit:
    """Refuse request bodies over ``max_bytes`` with 413 (see the module docstring)."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check ``Content-Length`` first, then count what the application reads."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is None:
            await _refuse(scope, receive, send, 400, "the Content-Length header is not a length")
            return
        if declared > self.max_bytes:
            await _refuse(scope, receive, send, 413, BodyTooLargeError(self.max_bytes).detail)
            return
        received = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal received
            if received > self.max_bytes:
                raise BodyTooLargeError(self.max_bytes)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLargeError(self.max_bytes)
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except BodyTooLargeError as exc:
            # The error handlers answer it inside the application; this is for a read
            # made where they do not reach (after a response started, there is nothing
            # left to say: the cut response ends the connection).
            if not started:
                await _refuse(scope, receive, send, 413, exc.detail)


def _content_length(scope: Scope) -> int | None:
    """The declared length (0 when there is none), or None when it is not one number."""
    values = {
        value.strip()
        for name, value in scope.get("headers", ())
        if name.lower() == b"content-length"
    }
    if not values:
        return 0
    if len(values) > 1 or not all(v.isdigit() for v in values):
        return None
    value = values.pop()
    # Twenty digits pass any limit; int() of thousands of digits would raise.
    return int(value) if len(value) <= 20 else 10**20


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
    """Answer with the API's error shape, without reading the body (so the connection
    is closed after the answer)."""
    code = "too_large" if status == 413 else "bad_request"
    response = JSONResponse(
        {"error": {"code": code, "message": message}},
        status_code=status,
        headers={"Connection": "close"},
    )
    await response(scope, receive, send)
