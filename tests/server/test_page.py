"""The web page as HTML: the input widget exactly when spec 001's UI contract holds, one
field per requested field; the approvals inbox; the job list; login; the same facts as
``skillwire show``."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import SKILL_ID, key, sse, start_refund, to_approval

from skillwire.core.job import JobRecord, JobStatus, OutcomeClass, Waiting
from skillwire.engine import JobView
from skillwire.server.auth import Principal
from skillwire.server.presenters import form_values, job_panel

ALICE = Principal("alice", frozenset({"user"}))


def login(client: TestClient, who: str) -> TestClient:
    """Log ``who`` in through the form (the cookie stays on the client)."""
    client.cookies.clear()
    response = client.post("/login", data={"key": key(who), "next": "/"}, follow_redirects=False)
    assert response.status_code == 303
    return client


def widget(html: str) -> str | None:
    """The input widget's form, or None."""
    found = re.search(r'<form id="input-widget".*?</form>', html, re.S)
    return found.group(0) if found else None


# -- the UI contract, on every combination -------------------------------------------------


def record(status: JobStatus, outcome: OutcomeClass | None, waiting: Waiting | None) -> JobView:
    """A job view with no events."""
    rec = JobRecord("j", SKILL_ID, status, outcome, "alice", "t", "t", 3, waiting=waiting)
    return JobView(rec, [], [])


def waiting_for(*fields: str, reason_code: str = "IDENTITY_VERIFICATION_REQUIRED") -> Waiting:
    """A waiting object asking for ``fields``."""
    return Waiting(reason_code, list(fields), "Please provide your details", "c1", "t", "t")


CASES = [
    (JobStatus.PAUSED, OutcomeClass.USER_ACTION_REQUIRED, waiting_for("full_name"), True),
    (JobStatus.PAUSED, OutcomeClass.USER_ACTION_REQUIRED, waiting_for("a", reason_code=""), False),
    (JobStatus.PAUSED, OutcomeClass.USER_ACTION_REQUIRED, None, False),
    (JobStatus.PAUSED, OutcomeClass.APPROVAL_REQUIRED, waiting_for(), False),
    (JobStatus.PAUSED, OutcomeClass.OPERATOR_ACTION_REQUIRED, waiting_for("outcome"), False),
    (JobStatus.RUNNING, OutcomeClass.USER_ACTION_REQUIRED, waiting_for("full_name"), False),
    (JobStatus.COMPLETED, OutcomeClass.SUCCESS, None, False),
    (JobStatus.FAILED, OutcomeClass.INTERNAL_ERROR, None, False),
    (JobStatus.QUEUED, None, None, False),
]


@pytest.mark.parametrize(("status", "outcome", "waiting", "expected"), CASES)
def test_the_widget_renders_if_and_only_if_the_contract_holds(
    client: TestClient,
    status: JobStatus,
    outcome: OutcomeClass | None,
    waiting: Waiting | None,
    expected: bool,
) -> None:
    panel = job_panel(record(status, outcome, waiting), ALICE)
    assert panel.show_widget is expected
    templates = client.app.state.skillwire.templates  # type: ignore[attr-defined]
    html = templates.env.get_template("_state.html").render(
        panel=panel, principal=ALICE, flash=None
    )
    assert (widget(html) is not None) is expected


def test_one_field_per_requested_field_typed_by_its_schema(client: TestClient) -> None:
    waiting = waiting_for("full_name", "email_or_phone", "amount", "plan")
    waiting.field_schemas = {
        "amount": {"type": "number"},
        "plan": {"enum": ["basic", "pro"]},
        "full_name": {"type": "string", "description": "As on your ID"},
    }
    panel = job_panel(record(JobStatus.PAUSED, OutcomeClass.USER_ACTION_REQUIRED, waiting), ALICE)
    templates = client.app.state.skillwire.templates  # type: ignore[attr-defined]
    html = widget(
        templates.env.get_template("_state.html").render(panel=panel, principal=ALICE, flash=None)
    )
    assert html is not None
    assert re.findall(r'data-field="([^"]+)"', html) == [
        "full_name",
        "email_or_phone",
        "amount",
        "plan",
    ]
    assert 'type="number"' in html and "<select" in html and "As on your ID" in html
    assert "Please provide your details" in html and 'value="c1"' in html


def test_form_values_are_typed_by_the_schema() -> None:
    waiting = waiting_for("amount", "count", "ok", "plan", "name", "empty")
    waiting.field_schemas = {
        "amount": {"type": "number"},
        "count": {"type": "integer"},
        "ok": {"type": "boolean"},
        "plan": {"enum": [1, 2]},
    }
    form = {
        "input.amount": "750",
        "input.count": "x",
        "input.ok": "true",
        "input.plan": "2",
        "input.name": " Ann ",
        "input.empty": " ",
        "input.other": "ignored",
    }
    assert form_values(waiting, form) == {
        "amount": 750,
        "count": "x",
        "ok": True,
        "plan": 2,
        "name": "Ann",
    }


# -- pages ------------------------------------------------------------------------------------


def test_pages_send_an_anonymous_visitor_to_the_login_form(client: TestClient) -> None:
    for path in ("/", "/jobs", "/approvals", "/skills", "/jobs/x"):
        response = client.get(path, follow_redirects=False)
        assert response.status_code == 303
        assert response.headers["location"].startswith("/login?next=")
    assert "API key" in client.get("/login").text


def test_login_sets_an_http_only_cookie_and_refuses_a_bad_key(client: TestClient) -> None:
    bad = client.post("/login", data={"key": "nope"}, follow_redirects=False)
    assert bad.status_code == 401 and "not valid" in bad.text
    good = client.post(
        "/login",
        data={"key": key("alice"), "next": "https://evil.example/"},
        follow_redirects=False,
    )
    assert good.status_code == 303 and good.headers["location"] == "/"
    cookie = good.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert "alice (user)" in client.get("/").text
    client.post("/logout")
    assert client.get("/", follow_redirects=False).status_code == 303


def test_the_chat_page_offers_the_skill_and_its_examples(client: TestClient) -> None:
    html = login(client, "alice").get("/").text
    assert "Refund support" in html and 'name="message"' in html
    assert "I want my money back" in html
    assert "Approvals" not in html  # alice holds no approver role


def test_sending_a_message_starts_a_job_and_shows_the_widget(client: TestClient) -> None:
    login(client, "alice")
    sent = client.post(
        "/chat",
        data={"skill_id": SKILL_ID, "message": "I want a refund of $750"},
        follow_redirects=False,
    )
    assert sent.status_code == 303
    html = client.get(sent.headers["location"]).text
    form = widget(html)
    assert form is not None
    assert re.findall(r'data-field="([^"]+)"', form) == ["order_id"]
    assert 'data-reason-code="MISSING_REQUIRED_INPUT"' in form
    assert "e.g. ORD-12345" in form


def test_the_widget_posts_with_htmx_and_gets_the_panel_back(client: TestClient) -> None:
    job = start_refund(client)
    login(client, "alice")
    response = client.post(
        f"/jobs/{job['id']}/input",
        data={"input.order_id": "ORD-12345", "correlation_id": job["waiting"]["correlation_id"]},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert response.text.lstrip().startswith('<section id="job-state"')
    assert 'data-outcome="APPROVAL_REQUIRED"' in response.text
    assert widget(response.text) is None
    assert 'id="approve"' not in response.text  # alice cannot approve
    assert "process_refund" in response.text


def test_a_plain_form_post_redirects_and_a_stale_one_says_why(client: TestClient) -> None:
    job = start_refund(client)
    login(client, "alice")
    data = {"input.order_id": "ORD-12345", "correlation_id": job["waiting"]["correlation_id"]}
    first = client.post(f"/jobs/{job['id']}/input", data=data, follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == f"/jobs/{job['id']}"
    again = client.post(f"/jobs/{job['id']}/input", data=data, headers={"HX-Request": "true"})
    assert again.status_code == 200 and 'class="flash"' in again.text


def test_the_supervisor_inbox_lists_tool_arguments_and_reason(client: TestClient) -> None:
    job = to_approval(client)
    html = login(client, "sup").get("/approvals").text
    assert job["id"] in html and "process_refund" in html and "ORD-12345" in html
    assert "750" in html and "needs supervisor approval" in html
    assert '<span class="badge"' in html
    page = client.get(f"/jobs/{job['id']}").text
    assert 'id="approve"' in page and widget(page) is None
    done = client.post(
        f"/jobs/{job['id']}/approval",
        data={"decision": "approve", "correlation_id": job["waiting"]["correlation_id"]},
        follow_redirects=False,
    )
    assert done.status_code == 303
    final = client.get(done.headers["location"]).text
    assert 'data-status="completed"' in final and 'id="job-reply"' in final
    assert "Nothing is waiting" in client.get("/approvals").text


@pytest.mark.parametrize("who", ["alice", "boss", "mgr"])
def test_other_roles_cannot_approve_from_the_page(client: TestClient, who: str) -> None:
    job = to_approval(client)
    login(client, who)
    response = client.post(
        f"/jobs/{job['id']}/approval",
        data={"decision": "approve", "correlation_id": job["waiting"]["correlation_id"]},
        headers={"Accept": "text/html"},
    )
    assert response.status_code in (403, 404)


def test_the_job_list_shows_only_the_users_jobs(client: TestClient) -> None:
    mine, theirs = start_refund(client, "alice"), start_refund(client, "bob")
    html = login(client, "alice").get("/jobs").text
    assert mine["id"] in html and theirs["id"] not in html
    assert "Your jobs" in html
    everything = login(client, "boss").get("/jobs").text
    assert mine["id"] in everything and theirs["id"] in everything


def test_another_users_job_page_is_not_found(client: TestClient) -> None:
    job = start_refund(client, "bob")
    response = login(client, "alice").get(f"/jobs/{job['id']}")
    assert response.status_code == 404 and "not found" in response.text.lower()


def test_the_job_page_shows_every_event_and_model_call(client: TestClient) -> None:
    job = to_approval(client)
    full = client.get(f"/api/jobs/{job['id']}", headers={"Authorization": "Bearer key-alice"})
    facts: dict[str, Any] = full.json()
    html = login(client, "alice").get(f"/jobs/{job['id']}").text
    rows = re.findall(r'<tr data-seq="(\d+)" class="ev"', html)
    assert [int(r) for r in rows] == [e["seq"] for e in facts["events"]]
    for e in facts["events"]:
        if e["reason_code"]:
            assert f"<code>{e['reason_code']}</code>" in html
    calls = re.findall(r'<tr data-seq="(\d+)" class="call"', html)
    assert len(calls) == len(facts["model_calls"])
    assert 'data-stream="/jobs/' in html  # live: the job is not finished


def test_the_job_page_shows_the_jobs_intents(client: TestClient) -> None:
    job = to_approval(client)
    html = login(client, "alice").get(f"/jobs/{job['id']}").text
    assert '<dt>Intents</dt><dd id="job-intents">intent_refund</dd>' in html


def test_the_page_stream_carries_rendered_rows_and_ends(client: TestClient) -> None:
    job = to_approval(client)
    client.post(
        f"/api/jobs/{job['id']}/approval",
        headers={"Authorization": "Bearer key-sup"},
        json={"decision": "approve", "correlation_id": job["waiting"]["correlation_id"]},
    )
    login(client, "alice")
    items = sse(client.get(f"/jobs/{job['id']}/stream?after=21&calls=4&version=1").text)
    rows = [i for i in items if i["event"] == "row"]
    assert rows[0]["data"].startswith('<tr data-seq="22"') and rows[0]["id"] == "22:4"
    assert [i["event"] for i in items][-2:] == ["state", "end"]
    assert any(i["event"] == "call" and 'data-seq="5"' in i["data"] for i in items)


def test_a_message_is_escaped(client: TestClient) -> None:
    job = start_refund(client, message="<script>alert(1)</script> refund $750 please")
    html = login(client, "alice").get(f"/jobs/{job['id']}").text
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_post_from_another_origin_is_refused(client: TestClient) -> None:
    job = start_refund(client)
    login(client, "alice")
    response = client.post(
        f"/jobs/{job['id']}/input",
        data={"input.order_id": "ORD-12345"},
        headers={"Origin": "https://evil.example"},
    )
    assert response.status_code == 403


def test_skills_page_and_reload_for_an_admin_only(client: TestClient) -> None:
    assert "Reload skills" not in login(client, "alice").get("/skills").text
    assert login(client, "alice").post("/skills/reload").status_code == 403
    html = login(client, "boss").get("/skills").text
    assert "Reload skills" in html and "domain.yaml" in html
    reloaded = client.post("/skills/reload").text
    assert "Reloaded" in reloaded and "no errors" in reloaded


def test_the_vendored_htmx_and_its_license_are_served(client: TestClient) -> None:
    js = client.get("/static/vendor/htmx-2.0.11.min.js")
    assert js.status_code == 200 and "htmx" in js.text[:200]
    assert "Zero-Clause BSD" in client.get("/static/vendor/htmx-LICENSE.txt").text
    assert client.get("/static/live.js").status_code == 200
    page = login(client, "alice").get("/")
    assert "/static/vendor/htmx-2.0.11.min.js" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]


@pytest.mark.parametrize(
    "outcome", [OutcomeClass.BLOCKED, OutcomeClass.DENIED, OutcomeClass.TOOL_FAILED]
)
def test_a_job_completed_without_doing_the_request_is_not_shown_as_done(
    outcome: OutcomeClass,
) -> None:
    panel = job_panel(record(JobStatus.COMPLETED, outcome, None), ALICE)
    assert panel.tone == "bad" and "Done" not in panel.headline
    assert str(outcome) in panel.headline
    done = job_panel(record(JobStatus.COMPLETED, OutcomeClass.SUCCESS, None), ALICE)
    assert (done.tone, done.headline) == ("ok", "Done")
