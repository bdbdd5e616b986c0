"""``skillwire serve --watch``: a change that breaks a skill keeps its last good version
(the log, the page and the API name the file and line), a fix is taken in, and a job
keeps the version it started on. The test waits on the book's loads, never sleeps."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import SKILL_ID, auth, decide, key, server_config, to_approval

from skillwire.server import ServerSettings, create_app

NEVER = ("      allowed: always ", "      allowed: never  ")


def test_a_reload_that_breaks_and_recovers(
    tmp_path: Path, skills_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = ServerSettings(
        skill_paths=[skills_dir],
        db=tmp_path / "jobs.db",
        config=server_config(),
        watch=True,
        watch_debounce_ms=50,
    )
    app = create_app(settings)
    book = app.state.skillwire.service.book
    domain = skills_dir / "refund_support" / "domain.yaml"
    good = domain.read_text()
    caplog.set_level(logging.INFO, logger="skillwire.server")
    with TestClient(app) as client:
        job = to_approval(client)  # paused on version 1
        first = book.known(SKILL_ID)
        assert first is not None

        seen = book.generation
        domain.write_text(good.replace("id: refund-support", "id: refund-support\nid: twice"))
        assert book.wait_for_load(seen, timeout=60), "the change was not picked up"
        body = client.get("/api/skills", headers=auth("boss")).json()
        assert [s["id"] for s in body["skills"]] == [SKILL_ID]  # still offered
        assert body["last_load"]["ok"] is False and body["last_load"]["kept"] == [SKILL_ID]
        issues = [
            i for s in body["last_load"]["report"]["skills"] for f in s["files"]
            for i in f["issues"] if i["severity"] == "error"
        ]  # fmt: skip
        assert issues and issues[0]["line"] and issues[0]["file"].endswith("domain.yaml")
        broken_at = f"domain.yaml:{issues[0]['line']}"
        assert any(
            "kept at its last good version" in r.getMessage() and broken_at in r.getMessage()
            for r in caplog.records
        ), [r.getMessage() for r in caplog.records]
        client.post("/login", data={"key": key("boss"), "next": "/"}, follow_redirects=False)
        page = client.get("/skills").text
        assert "Kept at their last good version" in page and broken_at in page
        client.cookies.clear()
        assert book.get(SKILL_ID) is first

        seen = book.generation
        domain.write_text(good.replace(*NEVER))  # a good version 2
        assert book.wait_for_load(seen, timeout=60), "the fix was not picked up"
        fixed = client.get("/api/skills", headers=auth("boss")).json()["last_load"]
        assert fixed["ok"] is True and fixed["loaded"] == [SKILL_ID]
        second = book.get(SKILL_ID)
        assert second is not first and second.version_hash != first.version_hash

        done = decide(client, job)  # the running job keeps version 1: the refund runs
        assert done.status_code == 200, done.text
        assert (done.json()["status"], done.json()["outcome_class"]) == ("completed", "SUCCESS")
