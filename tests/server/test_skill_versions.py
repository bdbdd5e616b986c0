"""Skill versions: a job resumes on the version it started on after the skill changed
(on the server, after a reload and after a restart; on the command line), the store
keeps every version, ``skills history``, ``diff`` and ``pin``."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import auth, copy_refund, decide, start_refund, to_approval
from typer.testing import CliRunner, Result

from skillwire.cli_app import app as cli_app
from skillwire.core.errors import NotFoundError, UsageError
from skillwire.core.store import SkillVersion
from skillwire.server import ServerSettings, create_app
from skillwire.skills import load_skill
from skillwire.skills.versions import content_version, diff_skills, load_version, version_of
from skillwire.store import SQLiteJobStore

ROOT = Path(__file__).resolve().parents[2]
REFUND = ROOT / "examples" / "refund_support"
NEVER = ("      allowed: always ", "      allowed: never  ")


def make_v2(domain: Path) -> None:
    """Version 2 never lets process_refund run."""
    text = domain.read_text()
    assert NEVER[0] in text
    domain.write_text(text.replace(*NEVER))


def ran(job: dict[str, Any]) -> list[str]:
    return [e["data"]["tool"] for e in job.get("events", []) if e["kind"] == "tool_started"]


def test_a_job_paused_on_v1_resumes_on_v1_after_v2_is_loaded(
    client: TestClient, skills_dir: Path
) -> None:
    job = to_approval(client)
    make_v2(skills_dir / "refund_support" / "domain.yaml")
    reloaded = client.post("/api/skills/reload", headers=auth("boss")).json()
    assert reloaded["ok"] and reloaded["loaded"] == ["refund-support"]
    done = decide(client, job)
    assert done.status_code == 200, done.text
    body = done.json()
    assert (body["status"], body["outcome_class"]) == ("completed", "SUCCESS")
    events = client.get(f"/api/jobs/{job['id']}", headers=auth("alice")).json()["events"]
    assert "process_refund" in [
        e["data"].get("tool") for e in events if e["kind"] == "tool_started"
    ]
    # a new job starts on version 2: process_refund never runs
    new = start_refund(client)
    answered = client.post(
        f"/api/jobs/{new['id']}/input",
        headers=auth("alice"),
        json={"input": {"order_id": "ORD-12345"}},
    ).json()
    assert answered["outcome_class"] != "APPROVAL_REQUIRED"
    events = client.get(f"/api/jobs/{new['id']}", headers=auth("alice")).json()["events"]
    assert "process_refund" not in [
        e["data"].get("tool") for e in events if e["kind"] == "tool_started"
    ]


def test_after_a_restart_the_store_gives_the_version_back(
    settings: ServerSettings, skills_dir: Path
) -> None:
    with TestClient(create_app(settings)) as first:
        job = to_approval(first)
    make_v2(skills_dir / "refund_support" / "domain.yaml")
    with TestClient(create_app(settings)) as second:  # loads only version 2 from disk
        done = decide(second, job)
        assert done.status_code == 200, done.text
        assert (done.json()["status"], done.json()["outcome_class"]) == ("completed", "SUCCESS")


def test_a_version_kept_nowhere_is_a_conflict_not_a_silent_switch(
    settings: ServerSettings, skills_dir: Path
) -> None:
    with TestClient(create_app(settings)) as first:
        job = to_approval(first)
    db = settings.db

    async def forget() -> None:
        store = SQLiteJobStore(db)
        try:
            store._db().execute("DELETE FROM skill_versions")
        finally:
            await store.close()

    asyncio.run(forget())
    make_v2(skills_dir / "refund_support" / "domain.yaml")
    with TestClient(create_app(settings)) as second:
        refused = decide(second, job)
        assert refused.status_code == 409, refused.text
        assert "no longer available" in refused.text


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(cli_app, [str(a) for a in args])


def test_cli_resume_history_diff_and_pin(tmp_path: Path) -> None:
    check_cli_versions(tmp_path, ["--db", tmp_path / "jobs.db"])


def check_cli_versions(tmp_path: Path, db: list[str | Path]) -> None:
    """Run, resume on v1 after v2, history, diff and pin on the store ``db`` gives
    (``--db FILE``, or nothing: ``$SKILLWIRE_DB``, for PostgreSQL in tests/store)."""
    folder = tmp_path / "refund"
    copy_refund(folder, REFUND)
    started = cli("run", folder, "-m", "Please refund 750 for order ORD-12345", *db, "--json")
    job = json.loads(started.stdout)
    assert job["outcome_class"] == "APPROVAL_REQUIRED"
    v1 = load_skill(folder / "domain.yaml").version_hash
    make_v2(folder / "domain.yaml")
    v2 = load_skill(folder / "domain.yaml").version_hash
    assert v1 != v2
    resumed = cli("resume", job["id"], "--approve", "--as", "supervisor", *db, "--json")
    body = json.loads(resumed.stdout)
    assert (body["status"], body["outcome_class"]) == ("completed", "SUCCESS"), body
    assert "process_refund" in ran(body)
    fresh = json.loads(
        cli("run", folder, "-m", "Please refund 750 for order ORD-12345", *db, "--json").stdout
    )
    assert "process_refund" not in ran(fresh)
    history = cli("skills", "history", "refund-support", *db)
    assert history.exit_code == 0 and v1 in history.stdout and v2 in history.stdout
    diff = cli("skills", "diff", "refund-support", v1[:6], v2[:6], *db)
    assert diff.exit_code == 0, diff.output
    assert "~ tool process_refund: policy" in diff.stdout and '"never"' in diff.stdout
    assert cli("skills", "pin", "refund-support", v1, *db).exit_code == 0
    pinned = cli("run", folder, "-m", "Please refund 750 for order ORD-12345", *db, "--json")
    assert f"pinned to version {v1}" in pinned.stderr
    assert json.loads(pinned.stdout)["outcome_class"] == "APPROVAL_REQUIRED"  # v1's rule
    assert "pinned" in cli("skills", "history", "refund-support", *db).stdout
    assert cli("skills", "pin", "refund-support", "--clear", *db).exit_code == 0
    assert cli("skills", "pin", "refund-support", "0000", *db).exit_code == 2
    assert cli("skills", "pin", "refund-support", *db).exit_code == 2
    assert cli("skills", "history", "nobody", *db).exit_code == 2


def test_a_version_is_the_content_not_the_place(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "refund", tmp_path / "b" / "refund"
    shutil.copytree(REFUND, first)
    shutil.copytree(REFUND, second)
    assert (
        load_skill(first / "domain.yaml").version_hash
        == load_skill(second / "domain.yaml").version_hash
    )
    (second / "refund_tools.py").write_text((second / "refund_tools.py").read_text() + "\n# x\n")
    assert (
        load_skill(first / "domain.yaml").version_hash
        != load_skill(second / "domain.yaml").version_hash
    )
    assert content_version({"a": b"1", "b": b"2"}) != content_version({"a": b"12", "b": b""})


def test_a_kept_version_loads_again_and_bad_names_are_refused(tmp_path: Path) -> None:
    skill = load_skill(REFUND / "domain.yaml")
    version = version_of(skill)
    assert version is not None and set(version.files) == {"domain.yaml", "refund_tools.py"}
    again = load_version(version, tmp_path)
    assert again.version_hash == skill.version_hash and again.id == skill.id
    for bad in ("../evil.py", "/etc/evil", ""):
        crafted = SkillVersion(skill.id, "x" + bad, version.source, version.format, {bad: b"x"})
        with pytest.raises(UsageError, match="bad file name"):
            load_version(crafted, tmp_path / "bad")
    lying = SkillVersion(skill.id, "0" * 16, version.source, version.format, version.files)
    with pytest.raises(UsageError, match="are version"):
        load_version(lying, tmp_path / "lying")


def test_the_store_keeps_versions_once_and_pins_only_kept_ones(tmp_path: Path) -> None:
    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            v = SkillVersion("s", "v1", "src", "yaml", {"domain.yaml": b"\x00\xffbytes"})
            assert await store.put_skill_version(v) is True
            assert await store.put_skill_version(v) is False
            await store.put_skill_version(SkillVersion("s", "v2", "src", "yaml", {}))
            kept = await store.skill_versions("s")
            assert [k.version for k in kept] == ["v1", "v2"]
            assert kept[0].files == {"domain.yaml": b"\x00\xffbytes"} and kept[0].created_at
            with pytest.raises(NotFoundError):
                await store.pin_skill("s", "v3")
            await store.pin_skill("s", "v1")
            assert [k.pinned for k in await store.skill_versions("s")] == [True, False]
            await store.pin_skill("s", None)
            assert not any(k.pinned for k in await store.skill_versions("s"))
            assert await store.skill_versions("other") == []
        finally:
            await store.close()

    asyncio.run(main())


def test_the_diff_reads_rules_not_text() -> None:
    old = load_skill(REFUND / "domain.yaml")
    assert diff_skills(old, old) == []
    pkg = load_skill(ROOT / "examples" / "refund_support_pkg")
    lines = diff_skills(old, pkg)
    assert any(line.startswith("+ tool refund-support-pkg.") for line in lines)
    assert "- tool delete_customer_record" in lines
    assert any(line.startswith("~ prompt") for line in lines)
