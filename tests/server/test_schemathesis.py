"""Schemathesis against the published OpenAPI document: generated requests (valid and
invalid) to every API operation, with schemathesis' checks: never a 5xx, every status and
body as documented, invalid data rejected with a 4xx.

A job id in the path is replaced by a real job's, so the operations act on real jobs:
one paused for input (input, read), one paused for a supervisor's approval (approval,
sent as the supervisor), one finished (its event stream ends)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.core.parameters import ParameterLocation
from tests.server.helpers import auth, copy_refund, server_config, start_refund, to_approval

from skillwire.server import ServerSettings, create_app

EXAMPLES = 40
"""Examples per operation: enough to find the usual mistakes, well under a minute."""

# Loaded at import: schemathesis' fixture-based loader does not run under pytest 9.
_HOME = tempfile.TemporaryDirectory(prefix="skillwire-schemathesis-")
APP = create_app(
    ServerSettings(
        skill_paths=[copy_refund(Path(_HOME.name) / "refund_support")],
        db=Path(_HOME.name) / "jobs.db",
        config=server_config(),
        recover_on_start=False,
    )
)
schema = schemathesis.openapi.from_asgi("/api/openapi.json", APP)


@pytest.fixture
def jobs() -> dict[str, str]:
    """Real jobs to aim the generated requests at (fresh for each operation)."""
    client = TestClient(APP)
    waiting_input = start_refund(client, "root")["id"]
    waiting_approval = to_approval(client, "root")["id"]
    paused = to_approval(client, "root")
    finished = paused["id"]
    body = {"decision": "approve", "correlation_id": paused["waiting"]["correlation_id"]}
    response = client.post(f"/api/jobs/{finished}/approval", headers=auth("sup"), json=body)
    assert response.json()["status"] == "completed"
    return {"input": waiting_input, "approval": waiting_approval, "finished": finished}


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_the_api_holds_to_its_document(case: Any, jobs: dict[str, str]) -> None:
    path = case.operation.path
    who = "root"
    if case.path_parameters and "job_id" in case.path_parameters:
        if path.endswith("/approval"):
            case.path_parameters["job_id"], who = jobs["approval"], "sup"
        elif path.endswith("/events"):
            case.path_parameters["job_id"] = jobs["finished"]
        else:
            case.path_parameters["job_id"] = jobs["input"]
    # The key is sent whatever the case says, so a case made negative by a missing key
    # (the header) may reach the server valid: negative_data_rejection reads the case's
    # own headers, not the ones sent, so it is not asked about such a case (the other
    # checks read what is sent).
    header = case.meta.components.get(ParameterLocation.HEADER) if case.meta else None
    negated_key = header is not None and header.mode.is_negative
    excluded = [schemathesis.checks.negative_data_rejection] if negated_key else []
    response = case.call_and_validate(headers=auth(who), excluded_checks=excluded)
    assert response.status_code < 500
