"""``skillwire.toml``: which models exist, which one runs, where jobs are stored.

    [runtime]
    model = "local"            # the default model name ("offline" when unset)
    gate_model = "offline"     # the finalization gate's model (default: the same)
    db = ".skillwire/jobs.db"

    [models.local]
    backend = "openai"         # openai | anthropic | offline
    model = "llama3.1"
    base_url = "http://127.0.0.1:11434/v1"

The file is found by ``--config``, else ``$SKILLWIRE_CONFIG``, else ``./skillwire.toml``;
``$SKILLWIRE_MODEL`` and ``$SKILLWIRE_GATE_MODEL`` override the runtime's choices. The
model ``offline`` always exists. A skill's ``engine.model`` picks a configured model by
name; an unconfigured name falls back to the default, and the caller is told.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from skillwire.core.issues import UsageError

__all__ = ["ModelConfig", "RuntimeConfig", "SkillwireConfig", "load_config"]


class ModelConfig(BaseModel):
    """One named model."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    backend: Literal["openai", "anthropic", "offline"]
    """Which backend serves it."""
    model: str = ""
    """The provider's model name (e.g. ``gpt-4o-mini``)."""
    base_url: str | None = None
    """The server, for OpenAI-compatible servers (vLLM, Ollama, llama.cpp) or proxies."""
    api_key_env: str | None = None
    """The environment variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY)."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds per call."""
    max_retries: int = Field(default=2, ge=0, le=10)
    """Retries on 429, 5xx and timeouts, with backoff."""
    tool_mode: Literal["native", "json"] = "native"
    """``json`` for servers without tool calling (OpenAI-compatible only)."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Largest reply (Anthropic requires one; default 1024)."""


class RuntimeConfig(BaseModel):
    """Runtime choices."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    model: str = "offline"
    """The default model's name."""
    gate_model: str | None = None
    """The finalization gate's model (default: the same as ``model``)."""
    db: str | None = None
    """The SQLite file for jobs."""
    base_policy: str | None = None
    """The operator's base policy file."""


class SkillwireConfig(BaseModel):
    """The whole configuration."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig)
    """Runtime choices."""
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    """Named models."""
    source: str = ""
    """Where the configuration was read from (empty: defaults)."""

    def model_named(self, name: str) -> ModelConfig | None:
        """The model called ``name`` (``offline`` always exists)."""
        if name in self.models:
            return self.models[name]
        if name == "offline":
            return ModelConfig(backend="offline")
        return None

    def names(self) -> list[str]:
        """Every configured model name, ``offline`` included."""
        return sorted({*self.models, "offline"})


def load_config(path: Path | None = None) -> SkillwireConfig:
    """Read the configuration (see the module docstring for where it is found)."""
    chosen = path or (
        Path(os.environ["SKILLWIRE_CONFIG"]) if os.environ.get("SKILLWIRE_CONFIG") else None
    )
    if chosen is None and Path("skillwire.toml").is_file():
        chosen = Path("skillwire.toml")
    data: dict[str, object] = {}
    if chosen is not None:
        try:
            data = tomllib.loads(chosen.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UsageError(f"no configuration file {chosen}") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"{chosen}: {exc}") from None
    try:
        config = SkillwireConfig.model_validate({**data, "source": str(chosen or "")})
    except ValidationError as exc:
        lines = [
            f"{chosen}: {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        ]
        raise UsageError("\n".join(lines)) from None
    env_model = os.environ.get("SKILLWIRE_MODEL")
    env_gate = os.environ.get("SKILLWIRE_GATE_MODEL")
    if env_model:
        config.runtime.model = env_model
    if env_gate:
        config.runtime.gate_model = env_gate
    for name in (config.runtime.model, config.runtime.gate_model):
        if name and config.model_named(name) is None:
            raise UsageError(
                f"model {name!r} is not configured (known: {', '.join(config.names())})"
            )
    return config
