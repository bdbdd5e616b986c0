"""Job ids in the API and on the page (issue 17, item 2): a unique start of the id of a
job the caller may see names it; jobs the caller may not see are never candidates nor
named; the page shows ids whole."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import auth, start_refund
from tests.server.test_page import login


def common_start(ids: list[str]) -> str:
    """The longest start all of ``ids`` share."""
    n = 0
    while all(len(i) > n and i[n] == ids[0][n] for i in ids):
        n += 1
    return ids[0][:n]


def unique_start(job_id: str, others: list[str]) -> str:
    """The shortest start of ``job_id`` that no other id has."""
    for n in range(1, len(job_id) + 1):
        if not any(o.startswith(job_id[:n]) for o in others):
            return job_id[:n]
    raise AssertionError(job_id)


@pytest.fixture
def jobs(client: TestClient) -> dict[str, str]:
    """Two jobs of alice and one of bob; their ids start alike (the time comes first)."""
    return {
        "a1": start_refund(client, "alice")["id"],
        "a2": start_refund(client, "alice")["id"],
        "b": start_refund(client, "bob")["id"],
    }


def get(client: TestClient, who: str, text: str) -> Any:
    return client.get(f"/api/jobs/{text}", headers=auth(who))


def test_a_unique_prefix_names_the_job(client: TestClient, jobs: dict[str, str]) -> None:
    a1 = jobs["a1"]
    short = unique_start(a1, [jobs["a2"], jobs["b"]])
    found = get(client, "alice", short)
    assert found.status_code == 200 and found.json()["id"] == a1
    order = {"input": {"order_id": "ORD-12345"}}
    answered = client.post(f"/api/jobs/{short}/input", headers=auth("alice"), json=order)
    assert answered.status_code == 200, answered.text
    assert answered.json()["id"] == a1
    assert answered.json()["outcome_class"] == "APPROVAL_REQUIRED"


def test_an_ambiguous_prefix_names_only_the_callers_jobs(
    client: TestClient, jobs: dict[str, str]
) -> None:
    common = common_start(list(jobs.values()))
    assert common
    response = get(client, "alice", common)
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "ambiguous" in message and jobs["a1"] in message and jobs["a2"] in message
    assert jobs["b"] not in message
    # for bob the same prefix names his one job: alice's are no candidates
    assert get(client, "bob", common).json()["id"] == jobs["b"]


def test_another_users_job_is_not_found_by_any_prefix(
    client: TestClient, jobs: dict[str, str]
) -> None:
    short = unique_start(jobs["a1"], [jobs["a2"], jobs["b"]])
    response = get(client, "bob", short)
    assert response.status_code == 404
    assert jobs["a1"] not in response.text  # the prefix is not completed for bob
    assert get(client, "bob", jobs["a1"]).status_code == 404
    assert get(client, "boss", short).json()["id"] == jobs["a1"]  # an admin sees it


@pytest.mark.parametrize("text", ["%25", "_", "%25%25", "0_", "zz"])
def test_a_wildcard_is_no_prefix(client: TestClient, jobs: dict[str, str], text: str) -> None:
    assert get(client, "boss", text).status_code == 404


def test_the_page_shows_whole_ids_and_follows_a_prefix(
    client: TestClient, jobs: dict[str, str]
) -> None:
    page = login(client, "alice")
    html = page.get("/jobs").text
    shown = re.findall(r'<code class="job-id">([^<]*)</code>', html)
    assert sorted(shown) == sorted([jobs["a1"], jobs["a2"]])
    short = unique_start(jobs["a2"], [jobs["a1"], jobs["b"]])
    moved = page.get(f"/jobs/{short}", follow_redirects=False)
    assert moved.status_code == 303 and moved.headers["location"] == f"/jobs/{jobs['a2']}"
    job_html = page.get(f"/jobs/{jobs['a2']}").text
    assert f"skillwire show {jobs['a2']} --json" in job_html
    assert page.get(f"/jobs/{jobs['b']}").status_code == 404
