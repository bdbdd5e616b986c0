"""The approvals inbox lists every pending approval, however many paused jobs there are,
a page at a time with the next page named (the API's ``next_offset``, the page's link)."""

from __future__ import annotations

import asyncio
import builtins
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import SKILL_ID, auth, key, server_config, to_approval

from skillwire.core.job import JobRecord, JobStatus, OutcomeClass, Waiting
from skillwire.server import ServerSettings, create_app, page, service
from skillwire.server.auth import Principal
from skillwire.store import SQLiteJobStore

SUP = Principal("sup", frozenset({"supervisor"}))


def paused(number: int, approver: str | None) -> JobRecord:
    """A job paused for an approval by ``approver`` (None: for input), created at second
    ``number`` (a higher number is newer)."""
    at = f"2026-01-01T00:00:00.{number:06d}+00:00"
    if approver is None:
        waiting = Waiting(
            "MISSING_REQUIRED_INPUT", ["order_id"], "Which order?", f"c{number}", at, at
        )
        outcome = OutcomeClass.USER_ACTION_REQUIRED
    else:
        waiting = Waiting(
            "APPROVAL_REQUIRED", [], "Approve?", f"c{number}", at, at,
            tool="process_refund", arguments={"amount": number}, approver=approver, reason="big",
        )  # fmt: skip
        outcome = OutcomeClass.APPROVAL_REQUIRED
    return JobRecord(
        f"job-{number:06d}", SKILL_ID, JobStatus.PAUSED, outcome, "alice", at, at, waiting=waiting
    )


def store_jobs(db: Path, records: list[JobRecord]) -> None:
    """Write ``records`` into the job file ``db``."""

    async def write() -> None:
        store = SQLiteJobStore(db)
        await asyncio.gather(*(store.create(r) for r in records))
        await store.close()

    asyncio.run(write())


def client_over(tmp_path: Path, skills_dir: Path, records: list[JobRecord]) -> TestClient:
    """A client of a server whose job file already holds ``records``."""
    db = tmp_path / "inbox.db"
    store_jobs(db, records)
    settings = ServerSettings(
        skill_paths=[skills_dir], db=db, config=server_config(), recover_on_start=False
    )
    return TestClient(create_app(settings))


def every_page(client: TestClient, limit: int) -> tuple[list[str], list[dict[str, Any]]]:
    """The job ids of every page of the supervisor's inbox, following ``next_offset``."""
    ids: list[str] = []
    pages: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        response = client.get(f"/api/approvals?limit={limit}&offset={offset}", headers=auth("sup"))
        assert response.status_code == 200, response.text
        body = response.json()
        pages.append(body)
        ids += [item["job_id"] for item in body["approvals"]]
        offset = body["next_offset"]
    return ids, pages


def test_an_approval_behind_five_thousand_newer_paused_jobs_is_listed(
    tmp_path: Path, skills_dir: Path
) -> None:
    oldest = paused(0, "supervisor")
    newer = [paused(n, "manager" if n % 2 else None) for n in range(1, 5001)]
    with client_over(tmp_path, skills_dir, [oldest, *newer]) as client:
        inbox = client.get("/api/approvals", headers=auth("sup")).json()
        assert [item["job_id"] for item in inbox["approvals"]] == [oldest.id]
        assert inbox["total"] == 1
        mgr = client.get("/api/approvals?limit=500", headers=auth("mgr")).json()
        assert mgr["total"] == 2500 and mgr["next_offset"] == 500


def test_every_approval_is_listed_once_across_pages(
    tmp_path: Path, skills_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "INBOX_READ_PAGE", 10)
    records = [paused(n, "supervisor" if n % 3 else None) for n in range(60)]
    expected = [r.id for r in records if r.waiting and r.waiting.approver]
    with client_over(tmp_path, skills_dir, records) as client:
        ids, pages = every_page(client, limit=7)
    assert ids == expected  # oldest request first, none twice, none missing
    assert {p["total"] for p in pages} == {len(expected)}
    assert [p["offset"] for p in pages] == list(range(0, len(expected), 7))
    assert pages[-1]["next_offset"] is None


class Departing:
    """A store whose paused jobs leave their pause between two page reads."""

    def __init__(self, inner: Any, leaving: builtins.list[str]) -> None:
        self.inner = inner
        self.leaving = leaving
        self.reads = 0
        self.gone: set[str] = set()

    async def list(self, **filters: Any) -> builtins.list[JobRecord]:
        """The paused jobs, less those that have left by this read."""
        if self.reads:
            self.gone.add(self.leaving[self.reads - 1])  # one leaves before each next read
        self.reads += 1
        wanted = {k: v for k, v in filters.items() if k not in ("limit", "offset")}
        everything = await self.inner.list(**wanted, limit=10**6, offset=0)
        left = [r for r in everything if r.id not in self.gone]
        return left[filters["offset"] : filters["offset"] + filters["limit"]]


def test_a_job_leaving_its_pause_while_the_inbox_is_read_skips_no_other(
    tmp_path: Path, skills_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "INBOX_READ_PAGE", 10)
    records = [paused(n, "supervisor") for n in range(40)]
    with client_over(tmp_path, skills_dir, records) as client:
        ctx = client.app.state.skillwire  # type: ignore[attr-defined]
        # Newest first: each departure is a job already read, on the first page.
        departing = Departing(ctx.service.store, [r.id for r in reversed(records)])
        ctx.service.store = departing

        found = client.portal.call(ctx.service.inbox, SUP)  # type: ignore[union-attr]
    still_paused = [r.id for r in records if r.id not in departing.gone]
    assert departing.reads > 2
    assert set(still_paused) <= {r.id for r in found}
    assert len({r.id for r in found}) == len(found)


def test_the_inbox_page_pages_with_links_and_counts_all(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(page, "INBOX_PAGE_SIZE", 3)
    jobs = [to_approval(client)["id"] for _ in range(7)]
    client.post("/login", data={"key": key("sup")}, follow_redirects=False)
    seen: list[str] = []
    url: str | None = "/approvals"
    while url is not None:
        html = client.get(url).text
        assert '<span class="badge" title="waiting for you">7</span>' in html
        seen += re.findall(r'data-job="([^"]+)"', html)
        found = re.search(r'href="(/approvals\?offset=\d+)" id="inbox-next"', html)
        url = found.group(1) if found else None
    assert seen == jobs
    last = client.get("/approvals?offset=6").text
    assert "7 to 7 of 7 waiting" in last and 'id="inbox-previous"' in last
    beyond = client.get("/approvals?offset=99").text
    assert 'id="inbox-empty"' in beyond and "the first page" in beyond
