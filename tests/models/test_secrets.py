"""Secrets stay out of model errors: not in the exception, the job, the database, the CLI.

A password in a ``base_url`` and a key an upstream echoes in its error body are the two
ways a secret reaches a model error (issue 16, item 15). Each case runs the real SDK
against a mock transport or a closed port, then a whole job through the runtime, and
looks for the secret in every place an error is kept or shown.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx2
import pytest
from tests.conftest import EXAMPLES
from tests.models import test_anthropic_wire as anth
from tests.models import test_openai_wire as oai
from typer.testing import CliRunner

from skillwire.cli_app import app
from skillwire.config import ModelConfig
from skillwire.core.chat import ChatMessage, ChatModel, ChatRequest
from skillwire.core.errors import ModelError
from skillwire.core.job import OutcomeClass
from skillwire.engine import JobView, Runtime
from skillwire.models.registry import build_model
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore
from skillwire.tools import Executors

PASSWORD = "s3cret-Pa55word"
CLOSED_PORT_URL = f"http://user:{PASSWORD}@127.0.0.1:9/v1"
"""Port 9 (discard) refuses connections at once on these machines."""

OPENAI_KEY = "sk-proj-Zq3xV9mB2nL7kR4tY8wE1aS6dF0gH5jK"
ANTHROPIC_KEY = "sk-ant-api03-Xy7Pq2Lm9Nb4Vc8Zx1As6Df3Gh0Jk5Lq-AbCdEf"
GOOGLE_KEY = "AIzaSyD4r7Qx1Lm0Pz9Kb3Vn8Hc2Wj6Ty5Ue4Io"
LOCAL_KEY = "local-vllm-key-7f3a"
"""A key of no known shape: only the configured value itself can be recognised."""
BEARER_TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1MSJ9.c2lnbmF0dXJlLXNlY3JldA"
HEX_TOKEN = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def ask(model: ChatModel) -> ModelError:
    """The error one call of ``model`` raises."""
    request = ChatRequest("planner", (ChatMessage("user", "Hi"),))
    with pytest.raises(ModelError) as caught:
        asyncio.run(model.complete(request))
    return caught.value


def run_job(model: ChatModel, tmp_path: Path) -> JobView:
    """A refund job on ``model``, its store closed (so the database file is complete)."""

    async def flow() -> JobView:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            skill = load_skill(EXAMPLES / "refund_support" / "domain.yaml")
            return await Runtime(store, model, executors=Executors()).start(
                skill, "Please refund $120 for ORD-12345"
            )
        finally:
            await store.close()

    return asyncio.run(flow())


def assert_nowhere_in_job(secret: str, job: JobView, tmp_path: Path) -> None:
    """The job stopped on the model error (failed, or paused by an outage, whose waiting
    object holds the error too), and ``secret`` is in none of its records."""
    outcome = job.record.outcome_class
    assert outcome in (OutcomeClass.INTERNAL_ERROR, OutcomeClass.MODEL_UNAVAILABLE)
    failed = [c for c in job.model_calls if not c.ok]
    assert failed and all(c.error for c in failed)
    shown = json.dumps(job.to_dict())
    failure = "model_error" if outcome is OutcomeClass.INTERNAL_ERROR else "model_unavailable"
    assert failure in shown
    assert secret not in shown
    for path in tmp_path.iterdir():
        if path.name.startswith("jobs.db"):
            assert secret.encode() not in path.read_bytes(), path.name


def test_a_password_in_base_url_stays_out_of_a_connection_error(tmp_path: Path) -> None:
    config = ModelConfig(backend="openai", model="m", base_url=CLOSED_PORT_URL, max_retries=0)
    error = ask(build_model(config))
    assert "127.0.0.1:9" in str(error)
    assert PASSWORD not in str(error)
    assert_nowhere_in_job(PASSWORD, run_job(build_model(config), tmp_path), tmp_path)


def test_a_password_in_an_anthropic_base_url_stays_out_too(tmp_path: Path) -> None:
    config = ModelConfig(
        backend="anthropic", model="claude-x", base_url=CLOSED_PORT_URL, max_retries=0
    )
    error = ask(build_model(config))
    assert "127.0.0.1:9" in str(error)
    assert PASSWORD not in str(error)
    assert_nowhere_in_job(PASSWORD, run_job(build_model(config), tmp_path), tmp_path)


ECHOES = [
    pytest.param(401, f"Incorrect API key provided: {OPENAI_KEY}.", OPENAI_KEY, id="sk-proj"),
    pytest.param(403, f"key {ANTHROPIC_KEY} is not allowed", ANTHROPIC_KEY, id="sk-ant"),
    pytest.param(
        400, f"bad header Authorization: Bearer {BEARER_TOKEN}", BEARER_TOKEN, id="bearer"
    ),
    pytest.param(404, f"GET /v1/models?key={GOOGLE_KEY} not found", GOOGLE_KEY, id="AIza"),
    pytest.param(400, f'{{"api_token": "{HEX_TOKEN}"}} is malformed', HEX_TOKEN, id="hex-token"),
    pytest.param(401, f"unknown key: {LOCAL_KEY}", LOCAL_KEY, id="configured-key"),
    # Quoted bare, the configured key matches no pattern: only its own value finds it.
    pytest.param(401, f"who is {LOCAL_KEY}?", LOCAL_KEY, id="configured-key-bare"),
    pytest.param(503, f"busy serving {LOCAL_KEY}", LOCAL_KEY, id="configured-key-retried"),
    pytest.param(503, f"overloaded; your key was {OPENAI_KEY}", OPENAI_KEY, id="retried-5xx"),
]


@pytest.mark.parametrize(("status", "message", "secret"), ECHOES)
def test_an_openai_upstream_echoing_a_key(
    status: int, message: str, secret: str, tmp_path: Path
) -> None:
    def model() -> ChatModel:
        wire = oai.Wire(*(oai.error(status, message) for _ in range(30)))
        return oai.model_on(wire, api_key=LOCAL_KEY, max_retries=1)

    error = ask(model())
    assert f"HTTP {status}" in str(error)
    assert secret not in str(error)
    assert_nowhere_in_job(secret, run_job(model(), tmp_path), tmp_path)


@pytest.mark.parametrize(("status", "message", "secret"), ECHOES)
def test_an_anthropic_upstream_echoing_a_key(
    status: int, message: str, secret: str, tmp_path: Path
) -> None:
    def model() -> ChatModel:
        wire = anth.Wire(*(anth.error(status, "error", message) for _ in range(30)))
        return anth.model_on(wire, api_key=LOCAL_KEY, max_retries=1)

    error = ask(model())
    assert f"HTTP {status}" in str(error)
    assert secret not in str(error)
    assert_nowhere_in_job(secret, run_job(model(), tmp_path), tmp_path)


def test_a_plain_text_error_body_is_redacted_as_well() -> None:
    """A proxy's HTML error page, quoted as the server's message, with a token in it."""
    reply = httpx2.Response(422, text=f"<html>denied: ?access_token={HEX_TOKEN}</html>")
    error = ask(oai.model_on(oai.Wire(reply), api_key=LOCAL_KEY))
    assert "HTTP 422" in str(error) and "denied" in str(error)
    assert HEX_TOKEN not in str(error)


def test_skillwire_models_hides_the_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "skillwire.toml"
    config.write_text(
        f'[models.local]\nbackend = "openai"\nmodel = "m"\nbase_url = "{CLOSED_PORT_URL}"\n'
    )
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(config))
    monkeypatch.delenv("SKILLWIRE_MODEL", raising=False)
    monkeypatch.delenv("SKILLWIRE_GATE_MODEL", raising=False)
    for extra in ([], ["--json"]):
        result = CliRunner().invoke(app, ["models", *extra])
        assert result.exit_code == 0, result.output
        assert "127.0.0.1:9" in result.output
        assert PASSWORD not in result.output
