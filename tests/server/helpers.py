"""Helpers of the server tests: principals and their keys, starting the refund job."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from skillwire.config import ServerConfig, ServerKey, SkillwireConfig
from skillwire.server.auth import hash_key

SKILL_ID = "refund-support"
REFUND_750 = "I want a refund of $750"

ROLES: dict[str, list[str]] = {
    "alice": ["user"],
    "bob": ["user"],
    "sup": ["supervisor"],
    "boss": ["admin"],
    "root": ["user", "admin"],
    "mgr": ["manager"],
    "selfie": ["user", "supervisor"],
}
"""Principals and their roles; each one's key is ``key-<name>``."""


def key(name: str) -> str:
    """The key of principal ``name``."""
    return f"key-{name}"


def auth(name: str) -> dict[str, str]:
    """The Authorization header of principal ``name``."""
    return {"Authorization": f"Bearer {key(name)}"}


def server_config(sync_wait: float = 10.0) -> SkillwireConfig:
    """A configuration with a key for every principal of :data:`ROLES`."""
    keys = [
        ServerKey(principal=name, roles=roles, key_sha256=hash_key(key(name)))
        for name, roles in ROLES.items()
    ]
    return SkillwireConfig(server=ServerConfig(keys=keys, sync_wait=sync_wait))


def start_refund(
    client: TestClient, who: str = "alice", message: str = REFUND_750
) -> dict[str, Any]:
    """Start the refund job; it pauses for the order number."""
    response = client.post(
        "/api/jobs", headers=auth(who), json={"skill_id": SKILL_ID, "message": message}
    )
    assert response.status_code == 201, response.text
    job: dict[str, Any] = response.json()
    return job


def give_order(client: TestClient, job_id: str, who: str = "alice") -> dict[str, Any]:
    """Answer the order number; the job pauses for a supervisor's approval."""
    response = client.post(
        f"/api/jobs/{job_id}/input", headers=auth(who), json={"input": {"order_id": "ORD-12345"}}
    )
    assert response.status_code == 200, response.text
    job: dict[str, Any] = response.json()
    assert job["outcome_class"] == "APPROVAL_REQUIRED", job
    return job


def to_approval(client: TestClient, who: str = "alice") -> dict[str, Any]:
    """A refund job paused for a supervisor's approval."""
    return give_order(client, start_refund(client, who)["id"], who)


def decide(
    client: TestClient, job: dict[str, Any], who: str = "sup", decision: str = "approve"
) -> Any:
    """Post ``decision`` on the call ``job`` waits on, as ``who``, naming its pause."""
    body = {"decision": decision, "correlation_id": job["waiting"]["correlation_id"]}
    return client.post(f"/api/jobs/{job['id']}/approval", headers=auth(who), json=body)


def sse(text: str) -> list[dict[str, str]]:
    """Parse a server-sent events body into ``{event, data, id}`` dicts (comments dropped)."""
    out: list[dict[str, str]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        item: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            item[name] = item[name] + "\n" + value if name in item else value
        if item:
            out.append(item)
    return out


ONCE_PER_LINE = "      once_per: args.order_id"


def copy_refund(dest: Path, source: Path | None = None) -> Path:
    """A copy of the refund example at ``dest`` without its limit across jobs
    (``once_per: args.order_id``): these tests refund ORD-12345 in job after job, the
    one order of the example's book that takes a 750 refund. The limit itself is tested
    in tests/engine/test_once_per.py and tests/store/test_claims_engine.py."""
    from tests.conftest import EXAMPLES

    shutil.copytree(source or EXAMPLES / "refund_support", dest)
    domain = dest / "domain.yaml"
    lines = domain.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith(ONCE_PER_LINE)]
    assert len(kept) == len(lines) - 1, "the refund example's once_per line moved"
    domain.write_text("".join(kept))
    return dest
