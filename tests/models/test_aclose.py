"""``ChatModel.aclose()``: every backend has it, and whoever closes a runtime calls it.

The runtime closes its models (each once) and leaves the store, which runtimes share;
the command line closes them after its work, the server at shutdown.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.conftest import EXAMPLES
from tests.models import test_anthropic_wire as anth
from tests.models import test_openai_wire as oai
from tests.server.helpers import server_config, start_refund

from skillwire import cli_jobs
from skillwire.assembly import ModelChoice
from skillwire.core.chat import ChatModel, ChatRequest, ChatResponse
from skillwire.engine import Runtime
from skillwire.models.anthropic_backend import AnthropicModel
from skillwire.models.offline import OfflineModel
from skillwire.models.openai_compat import OpenAICompatModel
from skillwire.server.app import ServerSettings, create_app
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import FunctionModel, ScriptedModel
from skillwire.tools import Executors

REFUND = EXAMPLES / "refund_support" / "domain.yaml"


class ClosingModel:
    """The offline model, counting the times it is closed; no call may follow a close."""

    def __init__(self, name: str = "closing") -> None:
        self._name = name
        self._inner = OfflineModel()
        self.closed = 0

    @property
    def name(self) -> str:
        """As given."""
        return self._name

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """The offline answer, unless closed."""
        assert not self.closed, "called after aclose()"
        return await self._inner.complete(request)

    async def aclose(self) -> None:
        """Count it."""
        self.closed += 1


def test_every_backend_is_a_chat_model_with_aclose() -> None:
    models: list[ChatModel] = [
        OfflineModel(),
        ScriptedModel([]),
        FunctionModel(lambda r: ChatResponse()),
        oai.model_on(oai.Wire()),
        anth.model_on(anth.Wire()),
        ClosingModel(),
    ]
    for model in models:
        assert isinstance(model, ChatModel)
        asyncio.run(model.aclose())


@pytest.mark.parametrize("backend", [OpenAICompatModel, AnthropicModel])
def test_the_sdk_backends_close_their_http_client(backend: type[ChatModel]) -> None:
    client = oai.Wire().client()
    model = backend("m", api_key="k", http_client=client)  # type: ignore[call-arg]
    assert not client.is_closed
    asyncio.run(model.aclose())
    assert client.is_closed


def test_closing_the_runtime_closes_each_model_once_and_leaves_the_store(
    tmp_path: Path,
) -> None:
    planner, gate = ClosingModel("planner"), ClosingModel("gate")

    async def flow() -> int:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        try:
            runtime = Runtime(store, planner, gate_model=gate, executors=Executors())
            await runtime.start(load_skill(REFUND), "I want a refund of $750")
            await runtime.aclose()
            shared = ClosingModel("shared")
            await Runtime(store, shared, executors=Executors()).aclose()
            assert shared.closed == 1
            return len(await store.list())
        finally:
            await store.close()

    assert asyncio.run(flow()) == 1
    assert (planner.closed, gate.closed) == (1, 1)


def test_the_command_line_closes_the_models_after_its_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ClosingModel()
    chosen = ModelChoice(model, model, [])
    monkeypatch.setattr("skillwire.assembly.choose_models", lambda *a, **k: chosen)

    async def work(runtime: Runtime) -> str:
        job = await runtime.start(load_skill(REFUND), "I want a refund of $750")
        assert model.closed == 0
        return str(job.status)

    assert cli_jobs.with_runtime(tmp_path / "jobs.db", None, None, work) == "paused"
    assert model.closed == 1


def test_the_server_closes_the_models_at_shutdown(tmp_path: Path) -> None:
    skills_dir = tmp_path / "skills"
    shutil.copytree(REFUND.parent, skills_dir / "refund_support")
    made: list[ClosingModel] = []

    def models(skill: Skill) -> ModelChoice:
        made.append(ClosingModel())
        return ModelChoice(made[-1], made[-1], [])

    settings = ServerSettings(
        skill_paths=[skills_dir], db=tmp_path / "jobs.db", config=server_config(), models=models
    )
    with TestClient(create_app(settings)) as client:
        start_refund(client)
        assert made and not any(m.closed for m in made)
    assert [m.closed for m in made] == [1] * len(made)
