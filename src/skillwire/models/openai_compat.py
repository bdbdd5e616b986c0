"""OpenAI, and any server that speaks its chat-completions API, behind :class:`ChatModel`.

One class covers api.openai.com and the OpenAI-compatible servers people run themselves
(Ollama, vLLM, llama.cpp, LM Studio) or route through (gateways): point ``base_url`` at
the server. Servers whose models cannot call tools natively get ``tool_mode="json"``:
the tools are described in the system prompt and the reply text is read back as calls.

The ``openai`` SDK is imported when a model is made, not when this module is, so the
rest of skillwire runs without it (``pip install 'skillwire[openai]'``). The SDK's own
retries are off; :mod:`skillwire.models._retry` retries and maps every SDK error to a
:class:`~skillwire.core.chat.ModelError`.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from skillwire.core.chat import ChatMessage, ChatRequest, ChatResponse, ToolCall, Usage
from skillwire.core.errors import ModelConfigError, ModelError
from skillwire.models._jsonmode import (
    ToolMode,
    finish_reply,
    new_call_id,
    parse_arguments,
    prepare_messages,
)
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
    from openai import AsyncOpenAI
    from openai.types.chat import (
        ChatCompletion,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageParam,
    )
    from openai.types.chat.chat_completion_message_tool_call import (
        ChatCompletionMessageToolCallUnion,
    )

__all__ = ["PLACEHOLDER_API_KEY", "OpenAICompatModel"]

PLACEHOLDER_API_KEY = "skillwire-no-key"
"""Sent to a ``base_url`` server when no key is given: local servers ignore the key."""

_INSTALL_HINT = "OpenAICompatModel needs the openai SDK: pip install 'skillwire[openai]'"
_KEY_HINT = "set OPENAI_API_KEY or pass api_key"


class OpenAICompatModel:
    """A chat model on the OpenAI chat-completions API.

    Args:
        model: the model's name on the server, e.g. ``gpt-4o-mini`` or ``llama3.1:8b``.
        base_url: the server's API root (``http://localhost:11434/v1`` for Ollama);
            defaults to ``OPENAI_BASE_URL``, then api.openai.com.
        api_key: defaults to ``OPENAI_API_KEY``; with a ``base_url`` and no key a
            placeholder is sent, since local servers need none.
        timeout: seconds one attempt may take.
        max_retries: retries after the first attempt, on 429, 5xx, timeouts and
            connection errors, with exponential backoff that honours ``Retry-After``.
        tool_mode: ``native`` sends function tools; ``json`` writes them into the
            system prompt for servers without tool calling.
        http_client: an ``httpx2.AsyncClient`` for the SDK to use (tests pass one with
            a mock transport).
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
        http_client: httpx2.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if not model:
            raise ModelConfigError("openai: no model name given")
        if tool_mode not in ("native", "json"):
            raise ModelConfigError(
                f"openai: tool_mode must be 'native' or 'json', not {tool_mode!r}"
            )
        if max_retries < 0 or timeout <= 0:
            raise ModelConfigError("openai: max_retries must be >= 0 and timeout > 0")
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        # Redacted from every error this model raises, wherever a message quotes them.
        self._secrets = backend_secrets(api_key, base_url)
        if base_url is not None and urlsplit(base_url).scheme not in ("http", "https"):
            raise ModelConfigError(
                f"openai: base_url must be an http(s) URL, not {base_url!r}", secrets=self._secrets
            )
        if api_key is None:
            if base_url is None:
                raise ModelConfigError(
                    "openai: no API key; set OPENAI_API_KEY (or pass api_key), or set "
                    "OPENAI_BASE_URL / base_url for a local server that needs no key"
                )
            api_key = PLACEHOLDER_API_KEY
        try:
            import openai
        except ImportError as exc:
            raise ModelConfigError(_INSTALL_HINT) from exc
        self._model = model
        self._timeout = timeout
        self._tool_mode: ToolMode = tool_mode
        self._retrier = Retrier(
            self.name, RetryPolicy(max_retries=max_retries), sleep, self._secrets
        )
        # The official API wants max_completion_tokens (reasoning models refuse
        # max_tokens); compatible servers widely know only max_tokens.
        self._official = base_url is None or urlsplit(base_url).hostname == "api.openai.com"
        try:
            self._client: AsyncOpenAI = openai.AsyncOpenAI(
                api_key=api_key,
                base_url=base_url,
                timeout=timeout,
                max_retries=0,
                http_client=http_client,
            )
        except (openai.OpenAIError, ValueError) as exc:
            raise ModelConfigError(
                f"openai: cannot make a client: {exc}", secrets=self._secrets
            ) from exc

    @property
    def name(self) -> str:
        """``openai:<model>``, for accounting and logs."""
        return f"openai:{self._model}"

    async def aclose(self) -> None:
        """Close the SDK client and its connections."""
        await self._client.close()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Run one chat completion; raises only :class:`ModelError` subclasses."""
        from openai import omit

        messages = _wire_messages(prepare_messages(request, self._tool_mode))
        native_tools = self._tool_mode == "native" and bool(request.tools)
        tools: list[ChatCompletionFunctionToolParam] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in (request.tools if native_tools else ())
        ]
        limit = request.max_tokens if request.max_tokens is not None else omit
        completions = self._client.chat.completions

        async def attempt() -> ChatCompletion:
            return await completions.create(
                model=self._model,
                messages=messages,
                tools=tools or omit,
                response_format=(
                    {"type": "json_object"} if request.response_format == "json" else omit
                ),
                temperature=request.temperature if request.temperature is not None else omit,
                max_completion_tokens=limit if self._official else omit,
                max_tokens=omit if self._official else limit,
            )

        return await self._retrier.run(
            attempt,
            self._classify,
            lambda completion: self._read(completion, request),
            expected="a chat completion",
        )

    def _read(self, completion: ChatCompletion, request: ChatRequest) -> ChatResponse:
        """Turn a completion into a :class:`ChatResponse`."""
        usage = completion.usage
        mapped = Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage()
        if not completion.choices:
            return ChatResponse(usage=mapped, model=completion.model or self._model)
        choice = completion.choices[0]
        message = choice.message
        calls = tuple(_tool_call(c) for c in message.tool_calls or ())
        text, calls = finish_reply(
            message.content or message.refusal or "", calls, request, self._tool_mode
        )
        return ChatResponse(
            text=text,
            tool_calls=calls,
            usage=mapped,
            model=completion.model or self._model,
            finish_reason=choice.finish_reason or "",
        )

    def _classify(self, exc: Exception) -> ModelError | Transient | None:
        """Map an SDK exception to a retry or an error; None for anything else."""
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return Transient(f"timed out after {self._timeout:g}s")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return Transient(f"could not connect to {self._client.base_url}: {cause}")
        if isinstance(exc, openai.APIStatusError):
            return status_failure(
                exc.status_code,
                _server_message(exc.body, exc.message),
                exc.response.headers,
                label=self.name,
                model=self._model,
                key_hint=_KEY_HINT,
                secrets=self._secrets,
            )
        if isinstance(exc, openai.OpenAIError):
            return ModelError(f"{self.name}: {exc}", secrets=self._secrets)
        return None


def _server_message(body: object, fallback: str) -> str:
    """The server's own error message: ``error.message``, a bare string, or ``fallback``."""
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    if isinstance(body, str) and body:
        return body
    return fallback


def _arguments_text(call: ToolCall) -> str:
    """The argument text to replay for an earlier call: its object, else its raw text."""
    return json.dumps(call.arguments) if call.arguments is not None else call.raw_arguments


def _wire_messages(messages: Sequence[ChatMessage]) -> list[ChatCompletionMessageParam]:
    """Our messages in chat-completions form."""
    out: list[ChatCompletionMessageParam] = []
    for m in messages:
        if m.role == "system":
            out.append({"role": "system", "content": m.content})
        elif m.role == "user":
            out.append({"role": "user", "content": m.content})
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": _arguments_text(c)},
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": "assistant", "content": m.content})
    return out


def _tool_call(call: ChatCompletionMessageToolCallUnion) -> ToolCall:
    """One tool call from the reply; argument text that is not a JSON object gives None."""
    call_id = call.id or new_call_id()
    if call.type == "custom":
        return ToolCall(call.custom.name, None, call.custom.input, call_id)
    arguments, raw = parse_arguments(call.function.arguments)
    return ToolCall(call.function.name, arguments, raw, call_id)
