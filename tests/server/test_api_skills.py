"""Skills (list, reload with last-known-good), the ``[server]`` configuration, and the
``skillwire keys`` and ``skillwire serve`` commands."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.server.helpers import SKILL_ID, auth, give_order, start_refund
from typer.testing import CliRunner

from skillwire.cli_app import app as cli
from skillwire.config import load_config
from skillwire.core.errors import UsageError


def test_a_user_sees_the_skills_without_their_files(client: TestClient) -> None:
    body = client.get("/api/skills", headers=auth("alice")).json()
    [skill] = body["skills"]
    assert skill["id"] == SKILL_ID and skill["name"] == "Refund support"
    assert skill["approvers"] == ["supervisor"]
    assert "process_refund" in skill["tools"]
    assert any("refund" in e.lower() for i in skill["intents"] for e in i["examples"])
    assert skill["source"] is None and body["last_load"] is None


def test_an_admin_sees_the_files_and_the_last_load(client: TestClient) -> None:
    body = client.get("/api/skills", headers=auth("boss")).json()
    assert body["skills"][0]["source"].endswith("domain.yaml")
    assert body["last_load"]["ok"] is True and body["last_load"]["loaded"] == [SKILL_ID]


@pytest.mark.parametrize("who", ["alice", "sup", "mgr"])
def test_only_an_admin_reloads(client: TestClient, who: str) -> None:
    response = client.post("/api/skills/reload", headers=auth(who))
    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"


def test_a_broken_reload_keeps_the_last_good_version(client: TestClient, skills_dir: Path) -> None:
    domain = skills_dir / "refund_support" / "domain.yaml"
    good = domain.read_text()
    domain.write_text(good.replace("id: refund-support", "id: refund-support\nid: twice"))
    broken = client.post("/api/skills/reload", headers=auth("boss")).json()
    assert broken["ok"] is False and broken["kept"] == [SKILL_ID] and broken["loaded"] == []
    issues = [i for s in broken["report"]["skills"] for f in s["files"] for i in f["issues"]]
    assert any(i["severity"] == "error" and i["line"] for i in issues)
    assert start_refund(client)["status"] == "paused"  # still offered, at its good version
    domain.write_text(good)
    fixed = client.post("/api/skills/reload", headers=auth("root")).json()
    assert fixed["ok"] is True and fixed["loaded"] == [SKILL_ID] and fixed["kept"] == []


def test_a_removed_skill_is_not_offered_but_its_paused_jobs_resume(
    client: TestClient, skills_dir: Path
) -> None:
    job = start_refund(client)
    domain = skills_dir / "refund_support" / "domain.yaml"
    domain.rename(domain.with_suffix(".off"))
    outcome = client.post("/api/skills/reload", headers=auth("boss")).json()
    assert outcome["removed"] == [SKILL_ID]
    assert client.get("/api/skills", headers=auth("alice")).json()["skills"] == []
    response = client.post(
        "/api/jobs", headers=auth("alice"), json={"skill_id": SKILL_ID, "message": "hi"}
    )
    assert response.status_code == 404
    assert give_order(client, job["id"])["outcome_class"] == "APPROVAL_REQUIRED"


# -- configuration and commands ------------------------------------------------------------


def test_server_keys_are_read_from_skillwire_toml(tmp_path: Path) -> None:
    digest = hashlib.sha256(b"k1").hexdigest()
    path = tmp_path / "skillwire.toml"
    path.write_text(
        "[server]\nsync_wait = 2.5\nskills = ['skills']\n\n"
        f'[[server.keys]]\nprincipal = "alice"\nroles = ["user", "supervisor"]\n'
        f'key_sha256 = "{digest}"\n'
    )
    config = load_config(path)
    assert config.server.sync_wait == 2.5 and config.server.skills == ["skills"]
    [entry] = config.server.keys
    assert (entry.principal, entry.roles, entry.key_sha256) == (
        "alice",
        ["user", "supervisor"],
        digest,
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[[server.keys]]\nprincipal = "a"\nkey_sha256 = "plain-key"\n', "key_sha256"),
        ('[[server.keys]]\nprincipal = "a"\nkey = "x"\nkey_sha256 = "' + "a" * 64 + '"\n', "key"),
        (
            '[[server.keys]]\nprincipal = "a"\nkey_sha256 = "' + "a" * 64 + '"\n'
            '[[server.keys]]\nprincipal = "b"\nkey_sha256 = "' + "a" * 64 + '"\n',
            "same key_sha256",
        ),
        ("[server]\nsync_wait = -1\n", "sync_wait"),
    ],
)
def test_bad_server_configuration_is_a_usage_error(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "skillwire.toml"
    path.write_text(body)
    with pytest.raises(UsageError, match=message):
        load_config(path)


def test_keys_hash_prints_the_sha256() -> None:
    result = CliRunner().invoke(cli, ["keys", "hash", "secret"])
    assert result.exit_code == 0
    assert result.output.strip() == hashlib.sha256(b"secret").hexdigest()


def test_keys_new_prints_a_key_and_an_entry_that_loads(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["keys", "new", "carol", "--role", "user", "--role", "supervisor"]
    )
    assert result.exit_code == 0, result.output
    key = re.search(r"(sw_[A-Za-z0-9_-]+)", result.output)
    assert key is not None
    entry = result.output[result.output.index("[[server.keys]]") :]
    path = tmp_path / "skillwire.toml"
    path.write_text(entry)
    [loaded] = load_config(path).server.keys
    assert loaded.principal == "carol" and loaded.roles == ["user", "supervisor"]
    assert loaded.key_sha256 == hashlib.sha256(key.group(1).encode()).hexdigest()


def test_serve_without_keys_and_without_dev_refuses_to_start(
    tmp_path: Path, skills_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    result = CliRunner().invoke(cli, ["serve", str(skills_dir), "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2
    assert "--dev" in result.output and "[[server.keys]]" in result.output
