"""skillwire.toml: named models, defaults, environment overrides, clear errors."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.conftest import EXAMPLES

from skillwire.assembly import choose_models
from skillwire.config import ModelConfig, load_config
from skillwire.core.errors import UsageError
from skillwire.models.offline import OfflineModel
from skillwire.models.registry import build_model, probe_model
from skillwire.skills import load_skill


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "skillwire.toml"
    path.write_text(text)
    return path


def test_defaults_without_a_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SKILLWIRE_CONFIG", raising=False)
    monkeypatch.delenv("SKILLWIRE_MODEL", raising=False)
    config = load_config()
    assert config.runtime.model == "offline" and config.names() == ["offline"]


def test_named_models_and_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[runtime]
model = "local"
[models.local]
backend = "openai"
model = "llama3.1"
base_url = "http://127.0.0.1:11434/v1"
[models.claude]
backend = "anthropic"
model = "claude-sonnet-4-5"
api_key_env = "MY_ANTHROPIC_KEY"
""",
    )
    monkeypatch.delenv("SKILLWIRE_MODEL", raising=False)
    config = load_config(path)
    assert config.runtime.model == "local"
    assert config.names() == ["claude", "local", "offline"]
    monkeypatch.setenv("SKILLWIRE_MODEL", "offline")
    assert load_config(path).runtime.model == "offline"


@pytest.mark.parametrize(
    "text, words",
    [
        ("[runtime]\nmodel = 'nope'\n", "not configured"),
        ("[models.x]\nbackend = 'cohere'\n", "backend"),
        ("[models.x\n", "skillwire.toml"),
        ("[runtime]\nmodle = 'x'\n", "modle"),
    ],
)
def test_config_errors_are_clear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, words: str
) -> None:
    monkeypatch.delenv("SKILLWIRE_MODEL", raising=False)
    with pytest.raises(UsageError, match=words):
        load_config(write(tmp_path, text))


def test_skill_model_falls_back_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SKILLWIRE_MODEL", raising=False)
    config = load_config(write(tmp_path, "[runtime]\nmodel = 'offline'\n"))
    choice = choose_models(
        None, skill=load_skill(EXAMPLES / "refund_support" / "domain.yaml"), config=config
    )
    assert isinstance(choice.model, OfflineModel)
    assert "claude-3-sonnet" in choice.notes[0]


def test_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    config = ModelConfig(backend="openai", model="gpt-4o-mini", api_key_env="NO_SUCH_KEY")
    ok, detail = asyncio.run(probe_model(config))
    assert not ok and "NO_SUCH_KEY" in detail
    assert asyncio.run(probe_model(ModelConfig(backend="offline")))[0]


def test_build_local_openai_compatible_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = build_model(
        ModelConfig(backend="openai", model="llama3.1", base_url="http://127.0.0.1:9/v1")
    )
    assert model.name == "openai:llama3.1"


def test_unreachable_server_is_reported() -> None:
    config = ModelConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1")
    ok, detail = asyncio.run(probe_model(config, timeout=2.0))
    assert not ok and "127.0.0.1:9" in detail
