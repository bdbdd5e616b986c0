"""Anthropic's Messages API behind :class:`ChatModel`.

System messages become the ``system`` parameter, tool calls ``tool_use`` blocks and tool
results ``tool_result`` blocks in a user turn. Consecutive turns of one role are merged,
as the API wants all results of one assistant turn in the next user turn. The API
refuses tool blocks in a request that offers no tools, so such history is replayed as
text then (see :mod:`skillwire.models._jsonmode`), as it is in ``tool_mode="json"``.

The ``anthropic`` SDK is imported when a model is made, not when this module is
(``pip install 'skillwire[anthropic]'``). Its own retries are off; the retries, and the
mapping of every SDK error to a :class:`~skillwire.core.chat.ModelError`, are
:mod:`skillwire.models._retry`'s (529 "overloaded" is retried like any 5xx).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from skillwire.core.chat import ChatMessage, ChatRequest, ChatResponse, ToolCall, Usage
from skillwire.core.errors import ModelConfigError, ModelError
from skillwire.models._jsonmode import ToolMode, finish_reply, parse_arguments, prepare_messages
from skillwire.models._retry import (
    Retrier,
    RetryPolicy,
    Sleep,
    Transient,
    backend_secrets,
    status_failure,
)

if TYPE_CHECKING:
    import httpx2
    from anthropic import AsyncAnthropic
    from anthropic.types import ContentBlockParam, Message, MessageParam, ToolParam

__all__ = ["DEFAULT_MAX_TOKENS", "PLACEHOLDER_API_KEY", "AnthropicModel"]

DEFAULT_MAX_TOKENS = 1024
"""Sent when a request sets no ``max_tokens``; the Messages API requires one."""

PLACEHOLDER_API_KEY = "skillwire-no-key"
"""Sent to a ``base_url`` server when no key is given: local proxies ignore the key."""

_INSTALL_HINT = "AnthropicModel needs the anthropic SDK: pip install 'skillwire[anthropic]'"
_KEY_HINT = "set ANTHROPIC_API_KEY or pass api_key"


class AnthropicModel:
    """A chat model on Anthropic's Messages API.

    ``ChatRequest.temperature`` is not sent: the API version the 2.x SDK speaks
    (``2026-10-21``) refuses sampling parameters.

    Args:
        model: the model's name, e.g. ``claude-sonnet-4-6``.
        base_url: the API root; defaults to ``ANTHROPIC_BASE_URL``, then
            api.anthropic.com.
        api_key: defaults to ``ANTHROPIC_API_KEY``; with a ``base_url`` and no key a
            placeholder is sent. Only these are read: no SDK profile or config file.
        timeout: seconds one attempt may take.
        max_retries: retries after the first attempt, on 429, 5xx (529 included),
            timeouts and connection errors, with backoff that honours ``Retry-After``.
        tool_mode: ``native`` sends tools; ``json`` writes them into the system prompt
            (for Anthropic-compatible servers without tool use).
        max_tokens: the output limit when a request sets none.
        http_client: an ``httpx2.AsyncClient`` for the SDK (tests pass a mock transport).
        sleep: the async sleep used between retries (tests pass a recorder).

    Raises:
        ModelConfigError: no key and no ``base_url``, a bad setting, or no SDK.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        tool_mode: ToolMode = "native",
        max_tokens: int = DEFAULT_MAX_TOKENS,
        http_client: httpx2.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if not model:
            raise ModelConfigError("anthropic: no model name given")
        if tool_mode not in ("native", "json"):
            raise ModelConfigError(
                f"anthropic: tool_mode must be 'native' or 'json', not {tool_mode!r}"
            )
        if max_retries < 0 or timeout <= 0 or max_tokens <= 0:
            raise ModelConfigError(
                "anthropic: max_retries must be >= 0, timeout and max_tokens > 0"
            )
        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY") or None
        # Redacted from every error this model raises, wherever a message quotes them.
        self._secrets = backend_secrets(api_key, base_url)
        if base_url is not None and urlsplit(base_url).scheme not in ("http", "https"):
            raise ModelConfigError(
                f"anthropic: base_url must be an http(s) URL, not {base_url!r}",
                secrets=self._secrets,
            )
        if api_key is None:
            if base_url is None:
                raise ModelConfigError(
                    "anthropic: no API key; set ANTHROPIC_API_KEY (or pass api_key), or "
                    "set ANTHROPIC_BASE_URL / base_url for a server that needs no key"
                )
            api_key = PLACEHOLDER_API_KEY
        try:
            import anthropic
        except ImportError as exc:
            raise ModelConfigError(_INSTALL_HINT) from exc
        self._model = model
        self._timeout = timeout
        self._tool_mode: ToolMode = tool_mode
        self._max_tokens = max_tokens
        self._retrier = Retrier(
            self.name, RetryPolicy(max_retries=max_retries), sleep, self._secrets
        )
        try:
            self._client: AsyncAnthropic = anthropic.AsyncAnthropic(
                api_key=api_key,
                base_url=base_url,
                timeout=timeout,
                max_retries=0,
                http_client=http_client,
            )
        except (anthropic.AnthropicError, ValueError) as exc:
            raise ModelConfigError(
                f"anthropic: cannot make a client: {exc}", secrets=self._secrets
            ) from exc

    @property
    def name(self) -> str:
        """``anthropic:<model>``, for accounting and logs."""
        return f"anthropic:{self._model}"

    async def aclose(self) -> None:
        """Close the SDK client and its connections."""
        await self._client.close()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Run one Messages call; raises only :class:`ModelError` subclasses."""
        from anthropic import omit

        native_tools = self._tool_mode == "native" and bool(request.tools)
        prepared = prepare_messages(request, self._tool_mode, flatten=not native_tools)
        system = "\n\n".join(m.content for m in prepared if m.role == "system" and m.content)
        messages = _wire_messages(prepared)
        tools: list[ToolParam] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in (request.tools if native_tools else ())
        ]
        messages_api = self._client.messages

        async def attempt() -> Message:
            return await messages_api.create(
                model=self._model,
                max_tokens=request.max_tokens or self._max_tokens,
                messages=messages,
                system=system or omit,
                tools=tools or omit,
                timeout=self._timeout,
            )

        return await self._retrier.run(
            attempt,
            self._classify,
            lambda reply: self._read(reply, request),
            expected="a Messages reply",
        )

    def _read(self, reply: Message, request: ChatRequest) -> ChatResponse:
        """Turn a Messages reply into a :class:`ChatResponse`."""
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in reply.content or ():
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                arguments, raw = parse_arguments(block.input)
                calls.append(ToolCall(block.name, arguments, raw, block.id))
        text, found = finish_reply(
            "\n".join(t for t in texts if t), tuple(calls), request, self._tool_mode
        )
        usage = reply.usage
        # input_tokens leaves out cached prompt tokens; a call used those too.
        input_tokens = (
            usage.input_tokens
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0)
            if usage is not None
            else None
        )
        return ChatResponse(
            text=text,
            tool_calls=found,
            usage=Usage(input_tokens, usage.output_tokens if usage is not None else None),
            model=reply.model or self._model,
            finish_reason=reply.stop_reason or "",
        )

    def _classify(self, exc: Exception) -> ModelError | Transient | None:
        """Map an SDK exception to a retry or an error; None for anything else."""
        import anthropic

        if isinstance(exc, anthropic.APITimeoutError):
            return Transient(f"timed out after {self._timeout:g}s")
        if isinstance(exc, anthropic.APIConnectionError):
            cause = exc.__cause__ or exc
            return Transient(f"could not connect to {self._client.base_url}: {cause}")
        if isinstance(exc, anthropic.APIStatusError):
            return status_failure(
                exc.status_code,
                exc.api_message or exc.message,
                exc.response.headers,
                label=self.name,
                model=self._model,
                key_hint=_KEY_HINT,
                secrets=self._secrets,
            )
        if isinstance(exc, anthropic.RetryableError):
            return Transient(str(exc))
        if isinstance(exc, anthropic.AnthropicError):
            return ModelError(f"{self.name}: {exc}", secrets=self._secrets)
        return None


def _wire_messages(messages: Sequence[ChatMessage]) -> list[MessageParam]:
    """Our non-system messages as Messages-API turns, same-role neighbours merged."""
    turns: list[tuple[Literal["user", "assistant"], list[ContentBlockParam]]] = []
    for m in messages:
        if m.role == "system":
            continue
        role: Literal["user", "assistant"] = "assistant" if m.role == "assistant" else "user"
        blocks: list[ContentBlockParam] = []
        if m.role == "tool":
            blocks.append(
                {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            )
        elif m.content:
            blocks.append({"type": "text", "text": m.content})
        for call in m.tool_calls if m.role == "assistant" else ():
            arguments = call.arguments
            if arguments is None:
                arguments = parse_arguments(call.raw_arguments)[0] or {}
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}
            )
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    out: list[MessageParam] = []
    for role, blocks in turns:
        only = blocks[0] if len(blocks) == 1 else None
        content: str | list[ContentBlockParam] = blocks
        if only is not None and only["type"] == "text":
            content = only["text"]
        if role == "user":
            out.append({"role": "user", "content": content})
        else:
            out.append({"role": "assistant", "content": content})
    return out
