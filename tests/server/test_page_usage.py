"""The job page's model calls by stage: prompt characters and tokens (issue 21)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from tests.server.helpers import key, to_approval


def test_the_job_page_shows_the_stages(client: TestClient) -> None:
    job = to_approval(client)
    facts = client.get(f"/api/jobs/{job['id']}", headers={"Authorization": "Bearer key-alice"})
    calls = facts.json()["model_calls"]
    client.post("/login", data={"key": key("alice"), "next": "/"}, follow_redirects=False)
    html = client.get(f"/jobs/{job['id']}").text
    table = html.split('id="stage-usage"', 1)[1].split("</table>", 1)[0]
    rows = dict(re.findall(r'data-stage="(\w+)"><td>\w+</td><td class="num">(\d+)</td>', table))
    assert int(rows["job"]) == len(calls)
    chars = re.search(r'data-stage="job">.*?<td class="num">\d+</td><td class="num">(\d+)', table)
    assert chars is not None and int(chars.group(1)) == sum(c["prompt_chars"] for c in calls)
