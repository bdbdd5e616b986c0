"""Who may approve, through the API (issue 16 item 5): never the job's owner, whatever
roles their key holds, unless the rule says ``self_approval: allowed``; a decision names
the pause it answers; events record who decided."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import auth, decide, key, to_approval

SENTENCE = '      - "Never process refunds over $500 without supervisor approval"\n'


def login(client: TestClient, who: str) -> None:
    """Log ``who`` in through the form (the cookie stays on the client)."""
    client.cookies.clear()
    response = client.post("/login", data={"key": key(who), "next": "/"}, follow_redirects=False)
    assert response.status_code == 303


def error_of(response: object) -> tuple[int, str]:
    """The status and error code of a response."""
    status = getattr(response, "status_code")  # noqa: B009
    return status, getattr(response, "json")()["error"]["code"]  # noqa: B009


def test_the_owner_holding_the_approver_role_may_not_approve_their_own_call(
    client: TestClient,
) -> None:
    job = to_approval(client, "selfie")
    refused = decide(client, job, "selfie")
    assert error_of(refused) == (403, "forbidden")
    assert "another supervisor" in refused.json()["error"]["message"]
    still = client.get(f"/api/jobs/{job['id']}", headers=auth("selfie")).json()
    assert still["outcome_class"] == "APPROVAL_REQUIRED"
    assert not [e for e in still["events"] if e["kind"] == "approval_granted"]
    # the inbox does not offer it to them; another supervisor approves
    assert client.get("/api/approvals", headers=auth("selfie")).json()["total"] == 0
    assert client.get("/api/approvals", headers=auth("sup")).json()["total"] == 1
    done = decide(client, job, "sup")
    assert done.status_code == 200 and done.json()["status"] == "completed"


def test_the_owner_may_withdraw_their_call(client: TestClient) -> None:
    job = to_approval(client, "selfie")
    done = decide(client, job, "selfie", "deny")
    assert done.status_code == 200, done.text
    denied = [e for e in done.json()["events"] if e["kind"] == "approval_denied"]
    assert [e["data"]["decided_by"] for e in denied] == ["selfie"]


@pytest.fixture
def self_approved(skills_dir: Path) -> None:
    """The refund skill with its approval rules saying ``self_approval: allowed`` (and
    the guardrail sentence that asks the same, which cannot say it, dropped)."""
    path = skills_dir / "refund_support" / "domain.yaml"
    text = path.read_text()
    condition = '      condition: "amount > 500"\n'
    assert SENTENCE in text and "      approver: supervisor\n" in text and condition in text
    text = (
        text.replace(SENTENCE, "")
        .replace(
            "      approver: supervisor\n",
            "      approver: supervisor\n      self_approval: allowed\n",
        )
        .replace(condition, condition + "      self_approval: allowed\n")
    )
    path.write_text(text)


@pytest.mark.usefixtures("self_approved")
def test_self_approval_allowed_lets_the_owner_approve(client: TestClient) -> None:
    job = to_approval(client, "selfie")
    assert job["waiting"]["self_approval"] is True
    assert client.get("/api/approvals", headers=auth("selfie")).json()["total"] == 1
    done = decide(client, job, "selfie")
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "completed"
    granted = [e for e in done.json()["events"] if e["kind"] == "approval_granted"]
    assert [e["data"]["decided_by"] for e in granted] == ["selfie"]


@pytest.mark.parametrize("decision", ["approve", "deny"])
@pytest.mark.parametrize("correlation", [None, ""])
def test_a_decision_without_the_pauses_correlation_id_is_refused(
    client: TestClient, decision: str, correlation: str | None
) -> None:
    job = to_approval(client)
    body: dict[str, object] = {"decision": decision}
    if correlation is not None:
        body["correlation_id"] = correlation
    response = client.post(f"/api/jobs/{job['id']}/approval", headers=auth("sup"), json=body)
    assert error_of(response) == (422, "invalid_request")
    assert "correlation_id" in response.text
    stale = {"decision": decision, "correlation_id": "not-this-pause"}
    response = client.post(f"/api/jobs/{job['id']}/approval", headers=auth("sup"), json=stale)
    assert error_of(response) == (409, "conflict")
    still = client.get(f"/api/jobs/{job['id']}", headers=auth("alice")).json()
    assert still["outcome_class"] == "APPROVAL_REQUIRED"


def test_events_record_who_decided(client: TestClient) -> None:
    done = decide(client, to_approval(client), "sup").json()
    granted = [e for e in done["events"] if e["kind"] == "approval_granted"]
    assert len(granted) == 1
    assert granted[0]["data"]["decided_by"] == "sup"
    assert granted[0]["data"]["role"] == "supervisor"
    assert granted[0]["data"]["correlation_id"]
    denied = decide(client, to_approval(client), "sup", "deny").json()
    assert [e["data"]["decided_by"] for e in denied["events"] if "denied" in e["kind"]] == ["sup"]


def test_the_page_offers_no_buttons_to_the_owner_and_sends_the_pause(client: TestClient) -> None:
    job = to_approval(client, "selfie")
    login(client, "selfie")
    page = client.get(f"/jobs/{job['id']}").text
    assert 'id="approve"' not in page and "Waiting for approval by a supervisor" in page
    assert job["id"] not in client.get("/approvals").text
    refused = client.post(
        f"/jobs/{job['id']}/approval",
        data={"decision": "approve", "correlation_id": job["waiting"]["correlation_id"]},
        headers={"Accept": "text/html"},
    )
    assert refused.status_code == 403
    login(client, "sup")
    page = client.get(f"/jobs/{job['id']}").text
    form = re.search(r'<form[^>]*action="/jobs/[^"]+/approval".*?</form>', page, re.S)
    assert form is not None and 'id="approve"' in form.group(0)
    assert f'name="correlation_id" value="{job["waiting"]["correlation_id"]}"' in form.group(0)
    inbox = client.get("/approvals").text
    assert f'value="{job["waiting"]["correlation_id"]}"' in inbox
    bare = client.post(f"/jobs/{job['id']}/approval", data={"decision": "approve"})
    assert bare.status_code == 400 and "correlation_id" in bare.text
