"""The jobs API: every endpoint, every role rule, the error shape, 4xx on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import (
    REFUND_750,
    SKILL_ID,
    auth,
    give_order,
    start_refund,
    to_approval,
)
from typer.testing import CliRunner

from skillwire.cli_app import app as cli
from skillwire.server import ServerSettings

ENDPOINTS = [
    ("GET", "/api/me", None),
    ("GET", "/api/skills", None),
    ("POST", "/api/skills/reload", None),
    ("GET", "/api/jobs", None),
    ("POST", "/api/jobs", {"skill_id": SKILL_ID, "message": "hi"}),
    ("GET", "/api/jobs/some-id", None),
    ("POST", "/api/jobs/some-id/input", {"input": {"order_id": "ORD-12345"}}),
    ("POST", "/api/jobs/some-id/approval", {"decision": "approve", "correlation_id": "c"}),
    ("GET", "/api/jobs/some-id/events", None),
    ("GET", "/api/approvals", None),
]


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    """The response is ``status`` with the error body ``code``; returns the error."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert "Traceback" not in response.text
    error: dict[str, Any] = body["error"]
    return error


# -- the document, authentication ------------------------------------------------------


def test_openapi_document_is_published_and_lists_every_endpoint(client: TestClient) -> None:
    doc = client.get("/api/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    for method, path, _ in ENDPOINTS:
        templated = path.replace("some-id", "{job_id}")
        assert method.lower() in doc["paths"][templated], templated
    assert "HTTPBearer" in doc["components"]["securitySchemes"]
    assert not any(p.startswith("/jobs") or p == "/" for p in doc["paths"])  # the page is not API


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic x"}]
)
def test_every_endpoint_needs_a_valid_key(
    client: TestClient, method: str, path: str, body: Any, headers: dict[str, str]
) -> None:
    response = client.request(method, path, json=body, headers=headers)
    assert_error(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"


def test_me_names_the_principal_and_roles(client: TestClient) -> None:
    assert client.get("/api/me", headers=auth("root")).json() == {
        "principal": "root",
        "roles": ["admin", "user"],
        "dev": False,
    }


def test_the_page_cookie_also_authenticates_the_api(client: TestClient) -> None:
    client.post("/login", data={"key": "key-alice"}, follow_redirects=False)
    assert client.get("/api/me").json()["principal"] == "alice"


def test_dev_key_holds_every_role_the_skills_name(tmp_path: Path, skills_dir: Path) -> None:
    from skillwire.config import SkillwireConfig
    from skillwire.server import create_app

    settings = ServerSettings(
        skill_paths=[skills_dir], db=tmp_path / "d.db", config=SkillwireConfig(), dev_key="dk"
    )
    with TestClient(create_app(settings)) as client:
        me = client.get("/api/me", headers={"Authorization": "Bearer dk"}).json()
        assert me == {"principal": "dev", "roles": ["admin", "supervisor", "user"], "dev": True}


# -- starting and reading ------------------------------------------------------------


def test_start_runs_the_job_until_it_pauses_for_input(client: TestClient) -> None:
    response = client.post(
        "/api/jobs", headers=auth("alice"), json={"skill_id": SKILL_ID, "message": REFUND_750}
    )
    assert response.status_code == 201
    job = response.json()
    assert response.headers["location"] == f"/api/jobs/{job['id']}"
    assert (job["status"], job["outcome_class"], job["owner"]) == (
        "paused",
        "USER_ACTION_REQUIRED",
        "alice",
    )
    waiting = job["waiting"]
    assert waiting["reason_code"] == "MISSING_REQUIRED_INPUT"
    assert waiting["requested_fields"] == ["order_id"]
    assert {"prompt_message", "correlation_id", "created_at", "last_prompt_at"} <= set(waiting)


@pytest.mark.parametrize(
    ("who", "body", "status", "code"),
    [
        ("sup", {"skill_id": SKILL_ID, "message": "hi"}, 403, "forbidden"),
        ("boss", {"skill_id": SKILL_ID, "message": "hi"}, 403, "forbidden"),
        ("alice", {"skill_id": "nope", "message": "hi"}, 404, "not_found"),
        ("alice", {"skill_id": SKILL_ID, "message": "   "}, 400, "bad_request"),
        ("alice", {"skill_id": SKILL_ID, "message": ""}, 422, "invalid_request"),
        ("alice", {"skill_id": SKILL_ID}, 422, "invalid_request"),
        ("alice", {"skill_id": SKILL_ID, "message": "hi", "extra": 1}, 422, "invalid_request"),
        ("alice", {"skill_id": 5, "message": "hi"}, 422, "invalid_request"),
        ("alice", {"skill_id": SKILL_ID, "message": "hi", "context": {"x": 1}}, 403, "forbidden"),
    ],
)
def test_start_refuses_bad_requests_and_roles(
    client: TestClient, who: str, body: dict[str, Any], status: int, code: str
) -> None:
    assert_error(client.post("/api/jobs", headers=auth(who), json=body), status, code)


def test_an_admin_who_is_a_user_may_set_context_but_not_the_user_id(client: TestClient) -> None:
    body = {"skill_id": SKILL_ID, "message": REFUND_750, "context": {"user_id": "x", "tier": 2}}
    job = client.post("/api/jobs", headers=auth("root"), json=body).json()
    created = job["events"][0]
    assert created["data"]["context"] == {"user_id": "root", "tier": 2}
    assert job["owner"] == "root"


def test_malformed_json_is_a_422_with_the_error_shape(client: TestClient) -> None:
    response = client.post(
        "/api/jobs",
        headers={**auth("alice"), "Content-Type": "application/json"},
        content=b"{not json",
    )
    error = assert_error(response, 422, "invalid_request")
    assert error["details"]


def test_unknown_route_and_method_keep_the_error_shape(client: TestClient) -> None:
    assert_error(client.get("/api/nope", headers=auth("alice")), 404, "not_found")
    assert_error(client.delete("/api/jobs", headers=auth("alice")), 405, "method_not_allowed")


def test_get_job_shows_the_same_facts_as_skillwire_show(
    client: TestClient, settings: ServerSettings
) -> None:
    job = to_approval(client)
    api = client.get(f"/api/jobs/{job['id']}", headers=auth("alice")).json()
    shown = CliRunner().invoke(cli, ["show", job["id"], "--db", str(settings.db), "--json"])
    assert shown.exit_code == 0, shown.output
    assert api == json.loads(shown.output)


def test_a_user_sees_only_their_own_jobs(client: TestClient) -> None:
    mine = start_refund(client, "alice")
    theirs = start_refund(client, "bob")
    assert client.get(f"/api/jobs/{mine['id']}", headers=auth("alice")).status_code == 200
    assert_error(client.get(f"/api/jobs/{theirs['id']}", headers=auth("alice")), 404, "not_found")
    listed = client.get("/api/jobs", headers=auth("alice")).json()["jobs"]
    assert [j["id"] for j in listed] == [mine["id"]]
    assert_error(client.get("/api/jobs?owner=bob", headers=auth("alice")), 403, "forbidden")
    assert client.get("/api/jobs?owner=alice", headers=auth("alice")).status_code == 200


def test_an_admin_sees_every_job_and_filters(client: TestClient) -> None:
    a, b = start_refund(client, "alice"), start_refund(client, "bob")
    assert client.get(f"/api/jobs/{a['id']}", headers=auth("boss")).status_code == 200
    every = client.get("/api/jobs", headers=auth("boss")).json()["jobs"]
    assert {j["id"] for j in every} == {a["id"], b["id"]}
    only_bob = client.get("/api/jobs?owner=bob", headers=auth("boss")).json()["jobs"]
    assert [j["id"] for j in only_bob] == [b["id"]]
    paused = client.get("/api/jobs?status=paused&limit=1", headers=auth("boss")).json()
    assert len(paused["jobs"]) == 1 and paused["limit"] == 1
    assert client.get("/api/jobs?status=completed", headers=auth("boss")).json()["jobs"] == []
    waiting = "/api/jobs?outcome_class=USER_ACTION_REQUIRED"
    assert {j["id"] for j in client.get(waiting, headers=auth("boss")).json()["jobs"]} == {
        a["id"],
        b["id"],
    }
    assert client.get("/api/jobs?outcome_class=DENIED", headers=auth("boss")).json()["jobs"] == []


@pytest.mark.parametrize(
    "query", ["status=nope", "outcome_class=nope", "limit=0", "limit=501", "offset=-1", "limit=x"]
)
def test_list_refuses_bad_parameters(client: TestClient, query: str) -> None:
    assert_error(client.get(f"/api/jobs?{query}", headers=auth("alice")), 422, "invalid_request")


def test_an_unknown_query_parameter_is_refused_not_ignored(client: TestClient) -> None:
    error = assert_error(
        client.get("/api/jobs?stauts=paused", headers=auth("alice")), 422, "invalid_request"
    )
    assert error["details"][0]["loc"] == ["query", "stauts"]


@pytest.mark.parametrize(
    "path", ["/api/jobs?status=paused&status=completed", "/api/approvals?offset=true&offset=0"]
)
def test_a_query_parameter_given_twice_is_refused_not_half_ignored(
    client: TestClient, path: str
) -> None:
    error = assert_error(client.get(path, headers=auth("sup")), 422, "invalid_request")
    assert error["details"][0]["msg"] == "given more than once"


def test_a_405_names_every_method_of_the_path(client: TestClient) -> None:
    response = client.put("/api/jobs", headers=auth("alice"))
    assert response.headers["allow"] == "GET, POST"


def test_nothing_but_the_cli_imports_the_server() -> None:
    src = Path(__file__).resolve().parents[2] / "src" / "skillwire"
    importers = sorted(
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        if "server" not in path.relative_to(src).parts
        and "skillwire.server" in path.read_text(encoding="utf-8")
    )
    assert importers == ["cli_app.py"]


def test_an_unknown_job_is_not_found(client: TestClient) -> None:
    assert_error(client.get("/api/jobs/nope", headers=auth("boss")), 404, "not_found")


# -- input ------------------------------------------------------------------------------


def test_the_owner_answers_and_the_job_pauses_for_approval(client: TestClient) -> None:
    job = start_refund(client)
    answered = give_order(client, job["id"])
    waiting = answered["waiting"]
    assert (waiting["tool"], waiting["approver"]) == ("process_refund", "supervisor")
    assert waiting["arguments"] == {"order_id": "ORD-12345", "amount": 750}
    assert waiting["reason"]


@pytest.mark.parametrize(
    ("who", "status", "code"),
    [
        ("bob", 404, "not_found"),  # another user: invisible
        ("sup", 404, "not_found"),  # an approver: not waiting for them
        ("boss", 403, "forbidden"),  # an admin sees it but does not answer for the owner
    ],
)
def test_only_the_owner_answers(client: TestClient, who: str, status: int, code: str) -> None:
    job = start_refund(client)
    response = client.post(
        f"/api/jobs/{job['id']}/input", headers=auth(who), json={"input": {"order_id": "ORD-12345"}}
    )
    assert_error(response, status, code)


def test_a_value_that_breaks_the_schema_keeps_the_job_paused(client: TestClient) -> None:
    job = start_refund(client)
    response = client.post(
        f"/api/jobs/{job['id']}/input", headers=auth("alice"), json={"input": {"order_id": "123"}}
    )
    assert response.status_code == 200
    after = response.json()
    assert (after["status"], after["outcome_class"]) == ("paused", "USER_ACTION_REQUIRED")
    assert "order_id" in after["waiting"]["error"]
    assert after["waiting"]["correlation_id"] == job["waiting"]["correlation_id"]


@pytest.mark.parametrize("body", [{}, {"input": "ORD-12345"}, {"input": {}, "x": 1}])
def test_a_malformed_input_body_is_a_422(client: TestClient, body: dict[str, Any]) -> None:
    job = start_refund(client)
    response = client.post(f"/api/jobs/{job['id']}/input", headers=auth("alice"), json=body)
    assert_error(response, 422, "invalid_request")


def test_a_stale_correlation_id_is_a_conflict(client: TestClient) -> None:
    job = start_refund(client)
    body = {"input": {"order_id": "ORD-12345"}, "correlation_id": "old"}
    response = client.post(f"/api/jobs/{job['id']}/input", headers=auth("alice"), json=body)
    assert_error(response, 409, "conflict")
    body["correlation_id"] = job["waiting"]["correlation_id"]
    assert (
        client.post(f"/api/jobs/{job['id']}/input", headers=auth("alice"), json=body).status_code
        == 200
    )


def test_input_for_a_job_waiting_for_approval_is_a_conflict(client: TestClient) -> None:
    job = to_approval(client)
    response = client.post(
        f"/api/jobs/{job['id']}/input", headers=auth("alice"), json={"input": {"order_id": "x"}}
    )
    assert_error(response, 409, "conflict")


# -- approvals ----------------------------------------------------------------------------


def test_the_supervisor_sees_the_call_in_the_inbox_and_approves(client: TestClient) -> None:
    job = to_approval(client)
    inbox = client.get("/api/approvals", headers=auth("sup")).json()["approvals"]
    assert len(inbox) == 1
    item = inbox[0]
    assert item["job_id"] == job["id"] and item["owner"] == "alice"
    assert item["tool"] == "process_refund"
    assert item["arguments"] == {"order_id": "ORD-12345", "amount": 750}
    assert item["reason"] and item["approver"] == "supervisor"
    body = {"decision": "approve", "correlation_id": item["correlation_id"]}
    done = client.post(f"/api/jobs/{job['id']}/approval", headers=auth("sup"), json=body)
    assert done.status_code == 200
    assert (done.json()["status"], done.json()["outcome_class"]) == ("completed", "SUCCESS")
    assert "ORD-12345" in done.json()["reply"]
    assert client.get("/api/approvals", headers=auth("sup")).json()["approvals"] == []


@pytest.mark.parametrize("who", ["alice", "bob", "mgr", "boss", "root"])
def test_nobody_else_sees_the_approval_in_an_inbox(client: TestClient, who: str) -> None:
    to_approval(client)
    inbox = client.get("/api/approvals", headers=auth(who)).json()
    assert inbox["approvals"] == [] and inbox["total"] == 0 and inbox["next_offset"] is None


@pytest.mark.parametrize(
    ("who", "status", "code"),
    [
        ("alice", 403, "forbidden"),  # the owner: sees it, is not a supervisor
        ("boss", 403, "forbidden"),  # an admin is not a supervisor
        ("root", 403, "forbidden"),
        ("bob", 404, "not_found"),
        ("mgr", 404, "not_found"),  # another approver role: the job is not for them
    ],
)
def test_a_supervisor_approval_cannot_be_given_by_another_role(
    client: TestClient, who: str, status: int, code: str
) -> None:
    job = to_approval(client)
    for decision in ("approve", "deny"):
        response = client.post(
            f"/api/jobs/{job['id']}/approval",
            headers=auth(who),
            json={"decision": decision, "correlation_id": job["waiting"]["correlation_id"]},
        )
        assert_error(response, status, code)
    still = client.get(f"/api/jobs/{job['id']}", headers=auth("alice")).json()
    assert still["outcome_class"] == "APPROVAL_REQUIRED"


def test_a_denial_is_recorded_and_the_job_goes_on(client: TestClient) -> None:
    job = to_approval(client)
    done = client.post(
        f"/api/jobs/{job['id']}/approval",
        headers=auth("sup"),
        json={"decision": "deny", "correlation_id": job["waiting"]["correlation_id"]},
    ).json()
    assert done["outcome_class"] != "APPROVAL_REQUIRED"
    denied = [e for e in done["events"] if e["kind"] == "approval_denied"]
    assert denied and denied[0]["reason_code"] == "APPROVAL_DENIED"
    assert not any(
        e["kind"] == "tool_finished" and e["message"] == "process_refund" for e in done["events"]
    )


def test_the_approver_keeps_seeing_a_job_they_decided(client: TestClient) -> None:
    job = to_approval(client)
    client.post(
        f"/api/jobs/{job['id']}/approval",
        headers=auth("sup"),
        json={"decision": "approve", "correlation_id": job["waiting"]["correlation_id"]},
    )
    assert client.get(f"/api/jobs/{job['id']}", headers=auth("sup")).status_code == 200
    assert_error(client.get(f"/api/jobs/{job['id']}", headers=auth("mgr")), 404, "not_found")
    again = client.post(
        f"/api/jobs/{job['id']}/approval",
        headers=auth("sup"),
        json={"decision": "approve", "correlation_id": job["waiting"]["correlation_id"]},
    )
    assert_error(again, 409, "conflict")


@pytest.mark.parametrize("body", [{}, {"decision": "maybe"}, {"decision": "approve", "x": 1}])
def test_a_malformed_decision_is_a_422(client: TestClient, body: dict[str, Any]) -> None:
    job = to_approval(client)
    response = client.post(f"/api/jobs/{job['id']}/approval", headers=auth("sup"), json=body)
    assert_error(response, 422, "invalid_request")


def test_approving_a_job_that_waits_for_input_is_a_conflict(client: TestClient) -> None:
    job = start_refund(client)
    response = client.post(
        f"/api/jobs/{job['id']}/approval",
        headers=auth("alice"),
        json={"decision": "approve", "correlation_id": "c"},
    )
    assert_error(response, 409, "conflict")


def test_responses_carry_security_headers(client: TestClient) -> None:
    response = client.get("/api/me", headers=auth("alice"))
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "default-src 'self'" in response.headers["content-security-policy"]


# -- hostile text through the API ------------------------------------------------------


def _post_raw(client: TestClient, path: str, who: str, body: str) -> Any:
    """POST ``body`` as written: JSON escapes such as ``\\ud800`` reach the server whole."""
    headers = {**auth(who), "content-type": "application/json"}
    return client.post(path, headers=headers, content=body.encode())


def test_lone_surrogates_in_a_request_are_refused_or_mended_never_an_engine_error(
    client: TestClient,
) -> None:
    """Half a surrogate pair (a legal JSON escape, but not text) in a message is a 422
    naming the field; in a context value or an input (free JSON) it is mended to U+FFFD
    at the engine's door, where the input's pattern then refuses it. Never a 500, never
    an ``engine_error``; the job it answers keeps waiting and a job beside it is
    untouched."""
    before = client.get("/api/jobs", headers=auth("root")).json()
    message = {"skill_id": SKILL_ID, "message": "Refund $750 \ud800 please"}
    assert_error(
        _post_raw(client, "/api/jobs", "root", json.dumps(message)), 422, "invalid_request"
    )
    assert client.get("/api/jobs", headers=auth("root")).json() == before
    context = {"skill_id": SKILL_ID, "message": REFUND_750, "context": {"note": "a\udc00"}}
    started = _post_raw(client, "/api/jobs", "root", json.dumps(context))
    assert started.status_code == 201, started.text
    shown = client.get(f"/api/jobs/{started.json()['id']}", headers=auth("root")).json()
    assert "engine_error" not in [e["kind"] for e in shown["events"]]
    created = next(e for e in shown["events"] if e["kind"] == "created")
    assert created["data"]["context"]["note"] == "a\ufffd"
    job = start_refund(client)
    neighbour = start_refund(client, "bob")
    answer = json.dumps({"input": {"order_id": "ORD-1234\ud800"}})
    answered = _post_raw(client, f"/api/jobs/{job['id']}/input", "alice", answer)
    assert answered.status_code == 200, answered.text
    still = client.get(f"/api/jobs/{job['id']}", headers=auth("alice")).json()
    assert still["status"] == "paused"
    assert still["waiting"]["correlation_id"] == job["waiting"]["correlation_id"]
    assert "order_id" in still["waiting"]["error"]
    assert "engine_error" not in [e["kind"] for e in still["events"]]
    assert give_order(client, job["id"])["outcome_class"] == "APPROVAL_REQUIRED"
    again = client.get(f"/api/jobs/{neighbour['id']}", headers=auth("bob")).json()
    assert (again["status"], again["waiting"]) == ("paused", neighbour["waiting"])
