"""``skillwire serve`` runs packages under the operator's configuration: its base policy
(shell prefixes, roots) reaches the gate, and a package whose required credential is
unset and that says ``fail_fast`` starts no job (503, with the package's message)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.conftest import EXAMPLES
from tests.server.helpers import auth, server_config

from skillwire.server import ServerSettings, create_app

pytest.importorskip("mcp")


def _demo(tmp_path: Path, mode: str) -> tuple[Path, ServerSettings]:
    folder = tmp_path / "skills" / "tools_demo"
    shutil.copytree(EXAMPLES / "tools_demo", folder)
    creds = folder / "credentials.json"
    data = json.loads(creds.read_text())
    data["credentials"][0]["required"] = True
    data["missingCredentialBehavior"] = {
        "mode": mode,
        "messageTemplate": "{{credentialId}} is not set: ask the operator",
    }
    creds.write_text(json.dumps(data))
    config = server_config().model_copy(deep=True)
    config.runtime.base_policy = str(folder / "operator-policy.json")
    config.credentials.env = ["INVENTORY_TOKEN"]
    config.server.enable = ["tools-demo"]  # the example's package is off by default
    return folder, ServerSettings(
        skill_paths=[folder.parent], db=tmp_path / "jobs.db", config=config
    )


def test_the_gate_of_serve_reads_the_operators_base_policy(tmp_path: Path) -> None:
    _, settings = _demo(tmp_path, "continue")
    app = create_app(settings)
    base = app.state.skillwire.service.base_policy
    assert base.origin().endswith("operator-policy.json")
    assert "ls -1" in base.shell.allowedPrefixes


def test_fail_fast_without_its_credential_starts_no_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("INVENTORY_TOKEN", raising=False)
    _, settings = _demo(tmp_path, "fail_fast")
    with TestClient(create_app(settings)) as client:
        response = client.post(
            "/api/jobs",
            headers=auth("alice"),
            json={"skill_id": "tools-demo", "message": "list the files of /usr/share"},
        )
        assert response.status_code == 503, response.text
        error = response.json()["error"]
        assert error["code"] == "credentials_missing"
        assert "INVENTORY_TOKEN is not set: ask the operator" in error["message"]
        listed = client.get("/api/jobs", headers=auth("alice")).json()
        assert listed["jobs"] == []  # refused before a job existed
    monkeypatch.setenv("INVENTORY_TOKEN", "inventory-token-0123456789")
    with TestClient(create_app(settings)) as client:  # the server reads it at start
        started = client.post(
            "/api/jobs",
            headers=auth("alice"),
            json={"skill_id": "tools-demo", "message": "list the files of /usr/share"},
        )
        assert started.status_code == 201, started.text
