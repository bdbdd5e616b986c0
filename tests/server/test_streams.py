"""An event stream whose client goes away ends quietly: no error, no traceback in the log,
and the job's change listener released at once. An idle live stream sends keep-alive
comments (which is also how a server finds a client that left without a word)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from tests.server.helpers import auth, key, start_refund, to_approval

from skillwire.server import ServerSettings, create_app
from skillwire.server.auth import COOKIE_NAME
from skillwire.server.context import ServerContext


def context(app: FastAPI) -> ServerContext:
    """The server context of ``app``."""
    ctx: ServerContext = app.state.skillwire
    return ctx


class DroppingClient:
    """The ASGI side of a client that reads the first piece of a response, then goes
    away: on ASGI 2.3 (uvicorn) the write under way waits until the server, told by
    ``http.disconnect``, gives up on it; on 2.4 later writes fail with ``OSError``."""

    def __init__(self, spec_version: str) -> None:
        self.spec_version = spec_version
        self.gone = asyncio.Event()
        self.pieces: list[bytes] = []
        self.status = 0
        self._asked = False

    async def receive(self) -> dict[str, Any]:
        """The (empty) request, then, once gone, ``http.disconnect``."""
        if not self._asked:
            self._asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        """Keep the first piece of the body; go away after it."""
        if self.gone.is_set():
            if self.spec_version == "2.4":
                raise OSError("connection reset by peer")
            return
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message.get("body"):
            self.pieces.append(message["body"])
            self.gone.set()
            if self.spec_version == "2.3":
                # The socket is full and the peer gone: uvicorn's write waits for the
                # connection's end, and meanwhile the server learns of it by a receive.
                await asyncio.Event().wait()

    async def get(self, app: FastAPI, path: str, headers: dict[str, str]) -> None:
        """Run ``GET path`` through ``app`` with this client."""
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": self.spec_version},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"testserver")]
            + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
            "state": {},
        }
        await app(scope, self.receive, self.send)


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every record of every logger, from DEBUG up."""
    with caplog.at_level(logging.DEBUG):
        yield caplog


def page_headers(client: TestClient, who: str) -> dict[str, str]:
    """The login cookie of ``who``, as a request header."""
    client.post("/login", data={"key": key(who)}, follow_redirects=False)
    return {"Cookie": f"{COOKIE_NAME}={client.cookies.get(COOKIE_NAME)}"}


@pytest.mark.parametrize("spec_version", ["2.3", "2.4"])
@pytest.mark.parametrize("where", ["api", "page"])
@pytest.mark.parametrize("job_state", ["finished", "paused"])
def test_a_client_leaving_mid_stream_is_no_error(
    app: FastAPI,
    client: TestClient,
    log: pytest.LogCaptureFixture,
    spec_version: str,
    where: str,
    job_state: str,
) -> None:
    job = to_approval(client)
    if job_state == "finished":
        decided = client.post(
            f"/api/jobs/{job['id']}/approval",
            headers=auth("sup"),
            json={"decision": "approve", "correlation_id": job["waiting"]["correlation_id"]},
        )
        assert decided.json()["status"] == "completed"
    if where == "api":
        path, headers = f"/api/jobs/{job['id']}/events", auth("alice")
    else:
        path, headers = f"/jobs/{job['id']}/stream", page_headers(client, "alice")
    log.clear()
    dropping = DroppingClient(spec_version)
    portal = client.portal
    assert portal is not None
    portal.call(dropping.get, app, path, headers)
    assert dropping.status == 200 and dropping.pieces
    problems = [r for r in log.records if r.levelno >= logging.WARNING or r.exc_info]
    assert problems == [], [r.getMessage() for r in problems]
    assert context(app).signals.listening(job["id"]) == 0  # released now, not by the GC


def test_an_idle_live_stream_sends_keepalive_comments(settings: ServerSettings) -> None:
    settings.keepalive_seconds = 0.05
    with TestClient(create_app(settings)) as client:
        job = start_refund(client)
        url = f"/api/jobs/{job['id']}/events?after={len(job['events'])}"
        with client.stream("GET", url, headers=auth("alice")) as response:
            lines = response.iter_lines()
            comments = 0
            for line in lines:
                if line == ": ping":
                    comments += 1
                    if comments == 2:
                        break
        assert comments == 2
