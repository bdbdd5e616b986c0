"""Server-sent events as a response that ends quietly when its client goes away.

FastAPI's own generator streams run the generator in a task of their own; when a client
drops, that task is cancelled while the generator waits at a ``yield``, so the generator
is never closed (a job's change listener stays registered until the garbage collector
finds it), and the keep-alive task can fail with ``BrokenResourceError``, which is logged
as an error with its traceback (fastapi discussion 15725). :class:`EventStream` iterates
the events in the response's own task, closes them whatever ends the response, and
treats a client that went away as the normal end of a stream.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from fastapi.sse import ServerSentEvent, format_sse_event
from starlette.requests import ClientDisconnect
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

__all__ = ["SSE_ITEM_SCHEMA", "EventStream", "encode_event"]

log = logging.getLogger("skillwire.server")

SSE_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "data": {"type": "string"},
        "event": {"type": "string"},
        "id": {"type": "string"},
        "retry": {"type": "integer", "minimum": 0},
    },
}
"""One server-sent event, for the OpenAPI document (``itemSchema``)."""


def encode_event(event: ServerSentEvent) -> bytes:
    """The wire form of ``event``: ``data`` as JSON, ``raw_data`` as it is; a line break
    inside a value starts another ``data:`` line, so a value cannot forge a field."""
    if event.raw_data is not None:
        data: str | None = event.raw_data
    elif event.data is not None:
        data = json.dumps(event.data)
    else:
        data = None
    return format_sse_event(
        data_str=data, event=event.event, id=event.id, retry=event.retry, comment=event.comment
    )


class EventStream(StreamingResponse):
    """A ``text/event-stream`` response of ``events``, which it closes when it ends."""

    # Named per response, not on the class: FastAPI would document a class's media type
    # as one string, where the route's ``responses`` describe the events one by one.
    media_type = None

    def __init__(
        self, events: AsyncGenerator[ServerSentEvent, None], status_code: int = 200
    ) -> None:
        self._events = events
        super().__init__(
            self._encoded(events),
            status_code=status_code,
            media_type="text/event-stream",
            # No caching, and no buffering by a proxy such as nginx: events go out now.
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @staticmethod
    async def _encoded(events: AsyncIterator[ServerSentEvent]) -> AsyncIterator[bytes]:
        async for event in events:
            yield encode_event(event)
            # Let the loop run between writes: a connection that failed on this write is
            # seen as lost before the next (asyncio warns after five writes to a lost
            # socket), and a disconnect is heard even when the events come all at once.
            await asyncio.sleep(0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream until the events end or the client goes away (not an error)."""
        try:
            await super().__call__(scope, receive, send)
        except ClientDisconnect:  # a server on ASGI 2.4 reports a write to a closed socket
            log.debug("%s: the client went away", scope.get("path"))
        finally:
            # Whatever ended the response (the end, a disconnect, a cancellation while a
            # write was under way), the events' listeners are released now.
            body = self.body_iterator
            if isinstance(body, AsyncGenerator):
                await body.aclose()
            await self._events.aclose()
