"""``POST /api/jobs/{id}/retry`` (issue 17 item 4): a job a model outage paused is retried
by its owner or an admin and runs on; a retry of a job no outage paused is a 409 that
changes nothing, and an outage pause takes no input."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import SKILL_ID, auth, decide, server_config, start_refund

from skillwire.assembly import ModelChoice
from skillwire.core.chat import ChatRequest, ChatResponse
from skillwire.core.errors import ModelUnavailableError
from skillwire.models.offline import OfflineModel
from skillwire.server import ServerSettings, create_app
from skillwire.skills import Skill

REFUND_120 = "Please refund $120 for order ORD-12345"


class Switch:
    """The offline model, or an outage while :attr:`down`."""

    def __init__(self) -> None:
        self.down = False
        self.offline = OfflineModel()

    @property
    def name(self) -> str:
        """The name model calls record."""
        return "openai:gpt-test"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """The offline model's reply, unless the model is down."""
        if self.down:
            raise ModelUnavailableError("openai:gpt-test: HTTP 503: down; gave up after 3 tries")
        return await self.offline.complete(request)

    async def aclose(self) -> None:
        """Nothing to release."""


@pytest.fixture
def switch() -> Switch:
    """The model every job of the app runs on."""
    return Switch()


@pytest.fixture
def client(tmp_path: Path, skills_dir: Path, switch: Switch) -> Iterator[TestClient]:
    """An app whose jobs run on ``switch``."""

    def models(skill: Skill) -> ModelChoice:
        return ModelChoice(switch, switch, [])

    settings = ServerSettings(
        skill_paths=[skills_dir], db=tmp_path / "jobs.db", config=server_config(), models=models
    )
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def outage(client: TestClient, switch: Switch, who: str = "alice") -> dict[str, Any]:
    """A refund of 120 started while the model is down: paused MODEL_UNAVAILABLE."""
    switch.down = True
    job = start_refund(client, who, REFUND_120)
    assert (job["status"], job["outcome_class"]) == ("paused", "MODEL_UNAVAILABLE")
    return job


def get(client: TestClient, job_id: str) -> dict[str, Any]:
    """The job as its admin sees it."""
    response = client.get(f"/api/jobs/{job_id}", headers=auth("root"))
    assert response.status_code == 200, response.text
    job: dict[str, Any] = response.json()
    return job


def test_an_outage_pauses_and_the_owner_retries_it_to_the_end(
    client: TestClient, switch: Switch
) -> None:
    job = outage(client, switch)
    waiting = job["waiting"]
    assert waiting["reason_code"] == "MODEL_UNAVAILABLE" and waiting["requested_fields"] == []
    assert (waiting["model"], waiting["stage"]) == ("openai:gpt-test", "intent")
    assert "HTTP 503" in waiting["reason"]
    url = f"/api/jobs/{job['id']}/retry"
    still = client.post(url, headers=auth("alice"), json={})
    assert still.status_code == 200, still.text
    again = still.json()
    assert again["outcome_class"] == "MODEL_UNAVAILABLE"
    assert again["waiting"]["correlation_id"] != waiting["correlation_id"]
    switch.down = False
    body = {"correlation_id": again["waiting"]["correlation_id"]}
    done = client.post(url, headers=auth("alice"), json=body)
    assert done.status_code == 200, done.text
    job = done.json()
    assert (job["status"], job["outcome_class"]) == ("completed", "SUCCESS")
    asked = [e for e in job["events"] if e["kind"] == "retry_requested"]
    assert [e["data"]["requested_by"] for e in asked] == ["alice", "alice"]


def test_an_admin_may_retry_and_another_user_may_not(client: TestClient, switch: Switch) -> None:
    job = outage(client, switch)
    url = f"/api/jobs/{job['id']}/retry"
    switch.down = False
    assert client.post(url, headers=auth("bob"), json={}).status_code == 404  # not visible
    assert client.post(url, headers=auth("sup"), json={}).status_code == 404
    assert get(client, job["id"])["version"] == job["version"]
    done = client.post(url, headers=auth("boss"), json={})
    assert done.status_code == 200, done.text
    assert done.json()["outcome_class"] == "SUCCESS"


def test_a_retry_of_a_job_no_outage_paused_is_a_409_and_changes_nothing(
    client: TestClient, switch: Switch
) -> None:
    job = start_refund(client)  # the offline model: paused for the order number
    assert job["outcome_class"] == "USER_ACTION_REQUIRED"
    before = get(client, job["id"])
    for who in ("alice", "root"):
        response = client.post(f"/api/jobs/{job['id']}/retry", headers=auth(who), json={})
        assert response.status_code == 409, response.text
        assert response.json()["error"]["code"] == "conflict"
        assert "nothing to retry" in response.json()["error"]["message"]
    assert get(client, job["id"]) == before
    paused = client.post(
        f"/api/jobs/{job['id']}/input",
        headers=auth("alice"),
        json={"input": {"order_id": "ORD-12345"}},
    ).json()
    assert paused["outcome_class"] == "APPROVAL_REQUIRED"
    before = get(client, job["id"])
    response = client.post(f"/api/jobs/{job['id']}/retry", headers=auth("alice"), json={})
    assert response.status_code == 409
    assert get(client, job["id"]) == before
    assert decide(client, paused).status_code == 200
    done = get(client, job["id"])
    assert done["status"] == "completed"
    response = client.post(f"/api/jobs/{job['id']}/retry", headers=auth("root"), json={})
    assert response.status_code == 409
    assert get(client, job["id"]) == done


def test_an_outage_pause_takes_no_input_and_no_stale_retry(
    client: TestClient, switch: Switch
) -> None:
    job = outage(client, switch)
    before = get(client, job["id"])
    response = client.post(
        f"/api/jobs/{job['id']}/input",
        headers=auth("alice"),
        json={"input": {"order_id": "ORD-12345"}},
    )
    assert response.status_code == 409, response.text
    assert "retry it" in response.json()["error"]["message"]
    switch.down = False
    stale = client.post(
        f"/api/jobs/{job['id']}/retry", headers=auth("alice"), json={"correlation_id": "x"}
    )
    assert stale.status_code == 409, stale.text
    unknown = client.post(
        f"/api/jobs/{job['id']}/retry", headers=auth("alice"), json={"retry": True}
    )
    assert unknown.status_code == 422
    assert get(client, job["id"]) == before
    assert before["skill_id"] == SKILL_ID
