"""Request bodies over ``[server] max_body_bytes`` are refused with 413 in the API's error
shape: by their ``Content-Length`` before the application runs, and, sent without one
(chunked), as soon as the bytes read pass the limit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import SKILL_ID, auth, key

from skillwire.config import ServerConfig, load_config
from skillwire.server import ServerSettings, create_app

LIMIT = 4096


@pytest.fixture
def small(settings: ServerSettings) -> Iterator[TestClient]:
    """A client of a server that accepts bodies of at most :data:`LIMIT` bytes."""
    settings.config.server.max_body_bytes = LIMIT
    with TestClient(create_app(settings)) as client:
        yield client


def job_body(size: int) -> bytes:
    """A start-job body of exactly ``size`` bytes (the message pads it)."""
    head = {"skill_id": SKILL_ID, "message": ""}
    pad = size - len(json.dumps(head).encode())
    return json.dumps({**head, "message": "x" * pad}).encode()


def too_large(response: Any) -> None:
    """The 413 of the API's error shape, with the server's headers."""
    assert response.status_code == 413, response.text[:200]
    assert response.json()["error"]["code"] == "too_large"
    assert str(LIMIT) in response.json()["error"]["message"]
    assert response.headers["x-content-type-options"] == "nosniff"


def chunks(body: bytes, size: int = 1000) -> Iterator[bytes]:
    """``body`` as a chunked upload (no ``Content-Length``)."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


@pytest.mark.parametrize("sent", ["declared", "chunked"])
def test_a_body_over_the_default_mebibyte_is_refused(client: TestClient, sent: str) -> None:
    # A valid request but for its size: an admin's context has no size of its own.
    head = {"skill_id": SKILL_ID, "message": "I want a refund of $750"}
    body = json.dumps({**head, "context": {"pad": "x" * 1024 * 1024}}).encode()
    response = client.post(
        "/api/jobs",
        headers={**auth("root"), "Content-Type": "application/json"},
        content=body if sent == "declared" else chunks(body, 64 * 1024),
    )
    assert response.status_code == 413, response.text[:200]
    assert response.json()["error"]["code"] == "too_large"
    assert client.get("/api/jobs", headers=auth("root")).json()["jobs"] == []
    assert ServerConfig().max_body_bytes == 1024 * 1024


def test_a_body_at_the_limit_is_accepted(small: TestClient) -> None:
    body = job_body(LIMIT)
    assert len(body) == LIMIT
    response = small.post(
        "/api/jobs", headers={**auth("alice"), "Content-Type": "application/json"}, content=body
    )
    assert response.status_code == 201, response.text


def test_a_declared_length_over_the_limit_is_refused_before_the_app_runs(
    small: TestClient,
) -> None:
    response = small.post(
        "/api/jobs",
        headers={**auth("alice"), "Content-Type": "application/json"},
        content=job_body(LIMIT + 1),
    )
    too_large(response)
    assert small.get("/api/jobs", headers=auth("alice")).json()["jobs"] == []


def test_a_chunked_body_over_the_limit_is_refused(small: TestClient) -> None:
    response = small.post(
        "/api/jobs",
        headers={**auth("alice"), "Content-Type": "application/json"},
        content=chunks(job_body(LIMIT + 1)),
    )
    too_large(response)
    assert small.get("/api/jobs", headers=auth("alice")).json()["jobs"] == []


def test_a_chunked_login_form_over_the_limit_is_refused(small: TestClient) -> None:
    body = f"key={key('alice')}&next=/&pad={'x' * LIMIT}".encode()
    response = small.post(
        "/login",
        headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
        content=chunks(body),
        follow_redirects=False,
    )
    too_large(response)


@pytest.mark.parametrize(
    ("length", "status"),
    [("abc", 400), ("-1", 400), ("1e9", 400), ("9" * 5000, 413), (str(LIMIT + 1), 413)],
)
def test_a_content_length_that_is_no_length_or_too_large(
    small: TestClient, length: str, status: int
) -> None:
    response = small.post(
        "/api/jobs",
        headers={**auth("alice"), "Content-Type": "application/json", "Content-Length": length},
        content=b"{}",
    )
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == ("too_large" if status == 413 else "bad_request")


def test_an_endless_body_is_cut_off_at_the_limit() -> None:
    """A client that never stops sending is read up to the limit, then answered."""
    from skillwire.server.limits import BodySizeLimit

    pulled = 0
    sent: list[dict[str, Any]] = []

    async def endless() -> dict[str, Any]:
        nonlocal pulled
        pulled += 1
        return {"type": "http.request", "body": b"x" * 1000, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def reads_everything(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        raise AssertionError("the body ended")

    scope = {"type": "http", "method": "POST", "path": "/api/jobs", "headers": []}
    limited = BodySizeLimit(reads_everything, max_bytes=LIMIT)
    asyncio.run(limited(scope, endless, send))  # type: ignore[arg-type]
    assert pulled == LIMIT // 1000 + 1
    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["error"]["code"] == "too_large"


def test_the_limit_is_read_from_the_server_section(tmp_path: Path) -> None:
    (tmp_path / "skillwire.toml").write_text("[server]\nmax_body_bytes = 2048\n")
    assert load_config(tmp_path / "skillwire.toml").server.max_body_bytes == 2048
    with pytest.raises(ValueError, match="max_body_bytes"):
        ServerConfig(max_body_bytes=10)
