"""Building a configured model, and telling whether it is reachable.

The settings come in as any object with the fields of :class:`ModelSettings`
(``skillwire.config.ModelConfig`` is one): models import nothing of the configuration.
"""

from __future__ import annotations

import os
from typing import Literal, Protocol

from skillwire.core.chat import ChatModel
from skillwire.core.errors import ModelConfigError
from skillwire.core.redaction import redact
from skillwire.models._retry import backend_secrets

__all__ = ["ModelSettings", "build_model", "probe_model"]


class ModelSettings(Protocol):
    """What the registry reads of one configured model."""

    @property
    def backend(self) -> Literal["openai", "anthropic", "offline"]:
        """Which backend serves it."""
        ...

    @property
    def model(self) -> str:
        """The provider's model name."""
        ...

    @property
    def base_url(self) -> str | None:
        """The server's API root, if not the provider's."""
        ...

    @property
    def api_key_env(self) -> str | None:
        """The environment variable holding the key."""
        ...

    @property
    def timeout(self) -> float:
        """Seconds per call."""
        ...

    @property
    def max_retries(self) -> int:
        """Retries on 429, 5xx and timeouts."""
        ...

    @property
    def tool_mode(self) -> Literal["native", "json"]:
        """``json`` for servers without tool calling."""
        ...

    @property
    def max_tokens(self) -> int | None:
        """Largest reply."""
        ...


def build_model(config: ModelSettings) -> ChatModel:
    """The model ``config`` describes; the SDK is imported here, not before."""
    if config.backend == "offline":
        from skillwire.models.offline import OfflineModel

        return OfflineModel()
    key = os.environ.get(config.api_key_env) if config.api_key_env else None
    if config.api_key_env and not key:
        raise ModelConfigError(f"set {config.api_key_env} to use {config.backend}:{config.model}")
    if config.backend == "openai":
        from skillwire.models.openai_compat import OpenAICompatModel

        return OpenAICompatModel(
            config.model,
            base_url=config.base_url,
            api_key=key,
            timeout=config.timeout,
            max_retries=config.max_retries,
            tool_mode=config.tool_mode,
        )
    from skillwire.models.anthropic_backend import AnthropicModel

    return AnthropicModel(
        config.model,
        base_url=config.base_url,
        api_key=key,
        timeout=config.timeout,
        max_retries=config.max_retries,
        max_tokens=config.max_tokens or 1024,
    )


async def probe_model(config: ModelSettings, *, timeout: float = 5.0) -> tuple[bool, str]:
    """``(reachable, detail)``: lists the server's models; sends no prompt, spends no token.

    ``detail`` is shown (``skillwire models``), so it is redacted: the URL's password and
    the key never appear in it.
    """
    if config.backend == "offline":
        return True, "embedded, no network"
    try:
        model = build_model(config)
    except ModelConfigError as exc:  # redacted already, as every ModelError is
        return False, str(exc)
    await model.aclose()
    if config.backend == "openai":
        base = (
            config.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        ).rstrip("/")
        key = os.environ.get(config.api_key_env or "OPENAI_API_KEY", "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
    else:
        base = (config.base_url or "https://api.anthropic.com").rstrip("/") + "/v1"
        key = os.environ.get(config.api_key_env or "ANTHROPIC_API_KEY", "")
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    reachable, detail = await _list_models(base, headers, timeout)
    return reachable, redact(detail, backend_secrets(key, base))


async def _list_models(base: str, headers: dict[str, str], timeout: float) -> tuple[bool, str]:
    """``GET {base}/models``: whether it answered, and what to say about it."""
    import httpx2

    try:
        async with httpx2.AsyncClient(timeout=timeout) as client:
            response = await client.get(f"{base}/models", headers=headers)
    except Exception as exc:
        return False, f"{base}: {type(exc).__name__}: {exc}"
    if response.status_code in (401, 403):
        return False, f"{base}: the key was refused ({response.status_code})"
    if response.status_code >= 400:
        return False, f"{base}: HTTP {response.status_code}"
    return True, f"{base}: reachable"
