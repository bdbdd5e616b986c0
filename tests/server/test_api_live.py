"""Live behaviour: the event stream, jobs that outlast a request (202), a failed request
that leaves a job running and its recovery at the next start, and the change signals."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import SKILL_ID, auth, sse, start_refund, to_approval

from skillwire.assembly import ModelChoice
from skillwire.core.chat import ChatRequest, ChatResponse
from skillwire.core.job import JobRecord, JobStatus
from skillwire.models.offline import OfflineModel
from skillwire.server import ServerSettings, create_app
from skillwire.server.signals import JobSignals, SignallingStore
from skillwire.skills import Skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import FunctionModel


def read_until(lines: Iterator[str], done: Any) -> list[dict[str, str]]:
    """Read SSE lines until ``done(item)`` holds for a parsed item; the items read."""
    items: list[dict[str, str]] = []
    block: list[str] = []
    for line in lines:
        if line:
            block.append(line)
            continue
        if block:
            items.extend(sse("\n".join(block)))
            block = []
            if items and done(items[-1]):
                return items
    raise AssertionError(f"the stream ended first: {items}")


def state_is(status: str, outcome: str | None = None) -> Any:
    """A predicate: a ``job`` item with this status (and outcome)."""
    import json

    def check(item: dict[str, str]) -> bool:
        if item.get("event") != "job":
            return False
        job = json.loads(item["data"])
        return bool(
            job["status"] == status and (outcome is None or job["outcome_class"] == outcome)
        )

    return check


# -- the stream -----------------------------------------------------------------------


def test_the_stream_of_a_finished_job_holds_every_event_and_ends(client: TestClient) -> None:
    import json

    job = to_approval(client)
    client.post(
        f"/api/jobs/{job['id']}/approval",
        headers=auth("sup"),
        json={"decision": "approve", "correlation_id": job["waiting"]["correlation_id"]},
    )
    full = client.get(f"/api/jobs/{job['id']}", headers=auth("alice")).json()
    response = client.get(f"/api/jobs/{job['id']}/events", headers=auth("alice"))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    items = sse(response.text)
    events = [json.loads(i["data"]) for i in items if i["event"] == "job_event"]
    calls = [json.loads(i["data"]) for i in items if i["event"] == "model_call"]
    assert events == full["events"]
    assert calls == full["model_calls"]
    assert items[-1] == {"event": "end", "data": '{"status": "completed"}'}
    last_call = [i for i in items if i["event"] == "model_call"][-1]
    assert last_call["id"] == f"{events[-1]['seq']}:{len(calls)}"


def test_last_event_id_and_after_resume_the_stream(client: TestClient) -> None:
    import json

    job = to_approval(client)
    client.post(
        f"/api/jobs/{job['id']}/approval",
        headers=auth("sup"),
        json={"decision": "approve", "correlation_id": job["waiting"]["correlation_id"]},
    )
    url = f"/api/jobs/{job['id']}/events"
    resumed = sse(client.get(url, headers={**auth("alice"), "Last-Event-ID": "20:4"}).text)
    seqs = [json.loads(i["data"])["seq"] for i in resumed if i["event"] == "job_event"]
    assert seqs and seqs[0] == 21
    calls = [json.loads(i["data"])["seq"] for i in resumed if i["event"] == "model_call"]
    assert calls and calls[0] == 5
    after = sse(client.get(f"{url}?after=25", headers=auth("alice")).text)
    assert json.loads(next(i for i in after if i["event"] == "job_event")["data"])["seq"] == 26


def test_a_stored_snapshot_of_a_paused_job_does_not_wait(client: TestClient) -> None:
    job = start_refund(client)
    items = sse(client.get(f"/api/jobs/{job['id']}/events?live=false", headers=auth("alice")).text)
    assert [i["event"] for i in items].count("job_event") == len(job["events"])
    assert items[-1]["event"] == "job" and "end" not in [i["event"] for i in items]


def test_the_stream_of_another_users_job_is_not_found(client: TestClient) -> None:
    job = start_refund(client, "bob")
    response = client.get(f"/api/jobs/{job['id']}/events", headers=auth("alice"))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    bad = client.get(f"/api/jobs/{job['id']}/events?after=-1", headers=auth("bob"))
    assert bad.status_code == 422


def test_a_live_stream_shows_a_resume_made_meanwhile(client: TestClient) -> None:
    job = start_refund(client)
    url = f"/api/jobs/{job['id']}/events?after={len(job['events'])}"
    with client.stream("GET", url, headers=auth("alice")) as response:
        lines = response.iter_lines()
        read_until(lines, state_is("paused", "USER_ACTION_REQUIRED"))
        answer = threading.Thread(
            target=client.post,
            args=(f"/api/jobs/{job['id']}/input",),
            kwargs={"headers": auth("alice"), "json": {"input": {"order_id": "ORD-12345"}}},
        )
        answer.start()
        items = read_until(lines, state_is("paused", "APPROVAL_REQUIRED"))
        answer.join()
    kinds = [i.get("data", "") for i in items if i.get("event") == "job_event"]
    assert any('"input_received"' in k for k in kinds)


def test_signals_wake_a_listener_when_the_job_is_saved(tmp_path: Path) -> None:
    async def main() -> tuple[bool, bool]:
        signals = JobSignals()
        store = SignallingStore(lambda: SQLiteJobStore(tmp_path / "s.db"), signals)
        record = JobRecord("j1", "s", JobStatus.QUEUED, None, "o", "t", "t")
        with signals.listen("j1") as idle:
            quiet = await idle.wait(0)
        with signals.listen("j1") as listener:
            stored = await store.create(record)
            await store.save(stored, expected_version=1)
            woke = await listener.wait(30)
        assert signals.listening("j1") == 0
        await store.close()
        return quiet, woke

    assert asyncio.run(main()) == (False, True)


# -- jobs that outlast the request -------------------------------------------------------


@pytest.fixture
def gated(tmp_path: Path, skills_dir: Path) -> Iterator[tuple[TestClient, threading.Event]]:
    """A client whose jobs wait for ``gate`` before every model call; sync_wait is 0."""
    gate = threading.Event()
    offline = OfflineModel()

    async def slow(request: ChatRequest) -> ChatResponse:
        await asyncio.to_thread(gate.wait)
        return await offline.complete(request)

    def models(skill: Skill) -> ModelChoice:
        model = FunctionModel(slow, name="slow-offline")
        return ModelChoice(model, model, [])

    from tests.server.helpers import server_config

    settings = ServerSettings(
        skill_paths=[skills_dir],
        db=tmp_path / "g.db",
        config=server_config(),
        models=models,
        sync_wait=0,
    )
    with TestClient(create_app(settings)) as client:
        yield client, gate
        gate.set()


def test_a_job_still_running_after_the_wait_is_answered_202(
    gated: tuple[TestClient, threading.Event],
) -> None:
    client, gate = gated
    body = {"skill_id": SKILL_ID, "message": "I want a refund of $750"}
    response = client.post("/api/jobs", headers=auth("alice"), json=body)
    assert response.status_code == 202
    job = response.json()
    assert job["status"] in ("queued", "running") and job["waiting"] is None
    assert response.headers["location"] == f"/api/jobs/{job['id']}"
    url = f"/api/jobs/{job['id']}/events"
    with client.stream("GET", url, headers=auth("alice")) as stream:
        gate.set()
        read_until(stream.iter_lines(), state_is("paused", "USER_ACTION_REQUIRED"))
    gate.clear()
    answered = client.post(
        f"/api/jobs/{job['id']}/input",
        headers=auth("alice"),
        json={"input": {"order_id": "ORD-12345"}},
    )
    assert answered.status_code == 202 and answered.json()["status"] == "running"
    with client.stream("GET", url, headers=auth("alice")) as stream:
        gate.set()
        read_until(stream.iter_lines(), state_is("paused", "APPROVAL_REQUIRED"))


def test_a_run_that_keeps_failing_ends_failed_without_internal_text(
    tmp_path: Path, skills_dir: Path
) -> None:
    """An unexpected error is retried a bounded number of times, then the job fails with
    INTERNAL_ERROR (issue 16 item 10); the error's text stays in the events."""
    from tests.server.helpers import server_config

    offline = OfflineModel()

    async def broken(request: ChatRequest) -> ChatResponse:
        if request.stage == "planner":
            raise RuntimeError("a bug in a model adapter")
        return await offline.complete(request)

    def models(skill: Skill) -> ModelChoice:
        model = FunctionModel(broken)
        return ModelChoice(model, model, [])

    db = tmp_path / "r.db"
    first = ServerSettings(skill_paths=[skills_dir], db=db, config=server_config(), models=models)
    with TestClient(create_app(first), raise_server_exceptions=False) as client:
        body = {"skill_id": SKILL_ID, "message": "I want a refund of $750"}
        response = client.post("/api/jobs", headers=auth("alice"), json=body)
        assert response.status_code == 201, response.text
        job = response.json()
        assert (job["status"], job["outcome_class"]) == ("failed", "INTERNAL_ERROR")
        assert "a bug in a model adapter" not in (job["reply"] or "")
        assert "Traceback" not in response.text
        failed = client.get("/api/jobs?outcome_class=INTERNAL_ERROR", headers=auth("alice"))
        assert [j["id"] for j in failed.json()["jobs"]] == [job["id"]]
