"""AnthropicModel through the real anthropic SDK, with HTTP answered by a mock transport.

The replies are Messages-API JSON as the API sends it; the requests the SDK made are
recorded and their bodies asserted. Nothing sleeps: retries wait on a recording fake.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from skillwire.core.chat import (
    ChatMessage,
    ChatModel,
    ChatRequest,
    ChatResponse,
    ToolCall,
    ToolSpec,
    Usage,
)
from skillwire.core.errors import (
    ModelConfigError,
    ModelError,
    ModelRequestError,
    ModelUnavailableError,
)
from skillwire.models.anthropic_backend import (
    DEFAULT_MAX_TOKENS,
    PLACEHOLDER_API_KEY,
    AnthropicModel,
)

Reply = httpx2.Response | Callable[[httpx2.Request], httpx2.Response]
MODEL = "claude-sonnet-4-6"

WEATHER = ToolSpec(
    "get_weather",
    "Current weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


class Wire:
    """Scripted HTTP replies, and the requests that asked for them."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx2.Request] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        reply = self.replies.pop(0)
        return reply(request) if callable(reply) else reply

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))


class Sleeps:
    """A fake async sleep that records what it was asked to wait."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def message(*content: dict[str, Any], stop: str = "end_turn", **usage: int) -> httpx2.Response:
    """A 200 Messages reply as api.anthropic.com sends it."""
    body = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": list(content),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 2095, "output_tokens": 503, **usage},
    }
    return httpx2.Response(200, json=body)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def error(
    status: int, kind: str, msg: str, headers: dict[str, str] | None = None
) -> httpx2.Response:
    body = {"type": "error", "error": {"type": kind, "message": msg}, "request_id": "req_011"}
    return httpx2.Response(status, json=body, headers=headers)


def model_on(wire: Wire, sleeps: Sleeps | None = None, **kwargs: Any) -> AnthropicModel:
    kwargs.setdefault("api_key", "sk-ant-test")
    return AnthropicModel(MODEL, http_client=wire.client(), sleep=sleeps or Sleeps(), **kwargs)


def ask(model: AnthropicModel, *messages: ChatMessage, **kwargs: Any) -> ChatResponse:
    msgs = messages or (ChatMessage("user", "Hi"),)
    return asyncio.run(model.complete(ChatRequest("planner", msgs, **kwargs)))


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_CUSTOM_HEADERS",
    ):
        monkeypatch.delenv(name, raising=False)


def test_text_reply_maps_text_usage_and_model() -> None:
    wire = Wire(message(text("Hello there.")))
    model = model_on(wire)
    reply = ask(model, ChatMessage("system", "Be brief."), ChatMessage("user", "Hi"))
    assert isinstance(model, ChatModel)
    assert model.name == "anthropic:claude-sonnet-4-6"
    assert reply == ChatResponse(
        text="Hello there.",
        usage=Usage(input_tokens=2095, output_tokens=503),
        model="claude-sonnet-4-6",
        finish_reason="end_turn",
    )
    request = wire.requests[0]
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert "sk-ant-test" in (
        request.headers.get("x-api-key", "") + request.headers["authorization"]
    )
    assert wire.bodies[0] == {
        "model": MODEL,
        "max_tokens": DEFAULT_MAX_TOKENS,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Hi"}],
    }


def test_request_max_tokens_wins_and_temperature_is_not_sent() -> None:
    wire = Wire(message(text("ok")))
    ask(model_on(wire), max_tokens=77, temperature=0.3)
    assert wire.bodies[0]["max_tokens"] == 77
    assert "temperature" not in wire.bodies[0]


def test_cached_prompt_tokens_count_as_input() -> None:
    wire = Wire(message(text("ok"), cache_read_input_tokens=1000, cache_creation_input_tokens=5))
    assert ask(model_on(wire)).usage == Usage(input_tokens=3100, output_tokens=503)


def test_tool_call_and_the_request_body_with_tool_results() -> None:
    wire = Wire(
        message(
            text("Let me check Rome too."),
            tool_use("toolu_02", "get_weather", {"city": "Rome"}),
            stop="tool_use",
        )
    )
    history = (
        ChatMessage("system", "You are a support agent."),
        ChatMessage("system", "Answer in English."),
        ChatMessage("user", "Weather in Oslo and Bergen?"),
        ChatMessage(
            "assistant",
            "Checking.",
            (
                ToolCall("get_weather", {"city": "Oslo"}, "", "toolu_a"),
                ToolCall("get_weather", None, '{"city": "Ber', "toolu_b"),
            ),
        ),
        ChatMessage("tool", '{"temp_c": 4}', tool_call_id="toolu_a"),
        ChatMessage("tool", "error: bad arguments", tool_call_id="toolu_b"),
    )
    reply = ask(model_on(wire), *history, tools=(WEATHER,))
    assert reply.text == "Let me check Rome too."
    assert reply.tool_calls == (
        ToolCall("get_weather", {"city": "Rome"}, '{"city": "Rome"}', "toolu_02"),
    )
    assert reply.finish_reason == "tool_use"
    body = wire.bodies[0]
    assert body["system"] == "You are a support agent.\n\nAnswer in English."
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": WEATHER.description,
            "input_schema": WEATHER.parameters,
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": "Weather in Oslo and Bergen?"},
        {
            "role": "assistant",
            "content": [
                text("Checking."),
                tool_use("toolu_a", "get_weather", {"city": "Oslo"}),
                tool_use("toolu_b", "get_weather", {}),
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": '{"temp_c": 4}'},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": "error: bad arguments",
                },
            ],
        },
    ]


def test_several_tool_calls_and_an_unknown_name_pass_through() -> None:
    wire = Wire(
        message(
            tool_use("toolu_1", "get_weather", {"city": "Oslo"}),
            tool_use("toolu_2", "launch_rockets", {}),
            stop="tool_use",
        )
    )
    reply = ask(model_on(wire), tools=(WEATHER,))
    assert reply.tool_calls == (
        ToolCall("get_weather", {"city": "Oslo"}, '{"city": "Oslo"}', "toolu_1"),
        ToolCall("launch_rockets", {}, "{}", "toolu_2"),
    )


def test_input_that_is_not_an_object_gives_none() -> None:
    wire = Wire(message(tool_use("toolu_1", "get_weather", "Oslo"), stop="tool_use"))
    reply = ask(model_on(wire), tools=(WEATHER,))
    assert reply.tool_calls == (ToolCall("get_weather", None, "Oslo", "toolu_1"),)


def test_an_empty_reply_and_thinking_blocks_give_empty_text() -> None:
    thinking = {"type": "thinking", "thinking": "Hmm.", "signature": "sig"}
    reply = ask(model_on(Wire(message(thinking, stop="end_turn"))))
    assert (reply.text, reply.tool_calls) == ("", ())
    assert ask(model_on(Wire(message()))).text == ""


def test_tool_history_without_tools_on_offer_is_replayed_as_text() -> None:
    wire = Wire(message(text("It is 4 degrees in Oslo.")))
    history = (
        ChatMessage("user", "Oslo?"),
        ChatMessage("assistant", "", (ToolCall("get_weather", {"city": "Oslo"}, "", "toolu_1"),)),
        ChatMessage("tool", '{"temp_c": 4}', tool_call_id="toolu_1"),
    )
    ask(model_on(wire), *history)
    body = wire.bodies[0]
    assert "tools" not in body
    assert body["messages"] == [
        {"role": "user", "content": "Oslo?"},
        {"role": "assistant", "content": '{"tool": "get_weather", "arguments": {"city": "Oslo"}}'},
        {"role": "user", "content": 'Tool result for get_weather (call toolu_1):\n{"temp_c": 4}'},
    ]


@pytest.mark.parametrize("content", ['{"intent": "refund"}', '```json\n{"intent": "refund"}\n```'])
def test_response_format_json_is_asked_in_the_system_prompt(content: str) -> None:
    wire = Wire(message(text(content)))
    reply = ask(
        model_on(wire),
        ChatMessage("system", "Classify."),
        ChatMessage("user", "Refund?"),
        response_format="json",
    )
    assert json.loads(reply.text) == {"intent": "refund"}
    assert (
        wire.bodies[0]["system"] == "Classify.\n\nReply with a single JSON object and nothing else."
    )


@pytest.mark.parametrize(
    ("content", "calls"),
    [
        ('```json\n{"tool": "get_weather", "arguments": {"city": "Oslo"}}\n```', 1),
        ('{"tool": "get_weather", "arguments": {"city": "Oslo"}}', 1),
        ("Sunny.", 0),
    ],
)
def test_json_tool_mode(content: str, calls: int) -> None:
    wire = Wire(message(text(content)))
    reply = ask(model_on(wire, tool_mode="json"), tools=(WEATHER,))
    assert len(reply.tool_calls) == calls
    if calls:
        assert reply.tool_calls[0].arguments == {"city": "Oslo"}
    else:
        assert reply.text == "Sunny."
    body = wire.bodies[0]
    assert "tools" not in body
    assert "get_weather" in body["system"]


def test_429_and_529_are_retried_honouring_retry_after() -> None:
    sleeps = Sleeps()
    wire = Wire(
        error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your rate limit.",
            {"retry-after": "7"},
        ),
        error(529, "overloaded_error", "Overloaded"),
        message(text("ok")),
    )
    assert ask(model_on(wire, sleeps)).text == "ok"
    assert sleeps.calls[0] == 7.0
    assert 0.75 <= sleeps.calls[1] <= 1.0
    assert len(wire.requests) == 3


def test_500s_give_up_as_unavailable() -> None:
    sleeps = Sleeps()
    wire = Wire(*(error(500, "api_error", "Internal server error") for _ in range(3)))
    with pytest.raises(
        ModelUnavailableError, match=r"HTTP 500: Internal server error; gave up after 3"
    ):
        ask(model_on(wire, sleeps))
    assert len(wire.requests) == 3
    assert len(sleeps.calls) == 2


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_are_a_config_error(status: int) -> None:
    wire = Wire(error(status, "authentication_error", "invalid x-api-key"))
    with pytest.raises(ModelConfigError, match=r"invalid x-api-key.*check the API key"):
        ask(model_on(wire))
    assert len(wire.requests) == 1


def test_404_names_the_unknown_model() -> None:
    wire = Wire(error(404, "not_found_error", f"model: {MODEL}"))
    with pytest.raises(ModelRequestError, match=f"unknown model '{MODEL}'"):
        ask(model_on(wire))


def test_400_carries_the_servers_message() -> None:
    msg = "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after"
    with pytest.raises(ModelRequestError, match="tool_use` ids were found"):
        ask(model_on(Wire(error(400, "invalid_request_error", msg))))


def test_a_reply_that_is_not_a_messages_reply_is_a_model_error() -> None:
    page = httpx2.Response(200, text="<html>login</html>", headers={"content-type": "text/html"})
    with pytest.raises(ModelError, match=r"not a Messages reply.*API root"):
        ask(model_on(Wire(page)))


def _timeout(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ReadTimeout("timed out", request=request)


def test_timeouts_are_unavailable_after_the_retries() -> None:
    sleeps = Sleeps()
    with pytest.raises(ModelUnavailableError, match="timed out after 30s"):
        ask(model_on(Wire(_timeout, _timeout, _timeout), sleeps, timeout=30))
    assert len(sleeps.calls) == 2


def test_no_key_and_no_base_url_says_which_variable_to_set() -> None:
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicModel(MODEL)


def test_a_base_url_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://localhost:8080")
    wire = Wire(message(text("ok")))
    ask(AnthropicModel(MODEL, http_client=wire.client()))
    request = wire.requests[0]
    assert str(request.url) == "http://localhost:8080/v1/messages"
    assert PLACEHOLDER_API_KEY in request.headers["authorization"]


def test_a_key_from_the_environment_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    wire = Wire(message(text("ok")))
    ask(AnthropicModel(MODEL, http_client=wire.client()))
    assert "sk-ant-env" in wire.requests[0].headers["authorization"]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )


def test_importing_the_module_does_not_import_the_sdk() -> None:
    result = _python(
        "import sys, skillwire.models.anthropic_backend\n"
        "assert 'anthropic' not in sys.modules, 'anthropic imported'\n"
        "assert 'httpx2' not in sys.modules, 'httpx2 imported'\n"
    )
    assert result.returncode == 0, result.stderr


def test_a_missing_sdk_is_a_config_error_with_the_install_hint() -> None:
    result = _python(
        "import sys\n"
        "sys.modules['anthropic'] = None\n"
        "from skillwire.core.errors import ModelConfigError\n"
        "from skillwire.models.anthropic_backend import AnthropicModel\n"
        "try:\n"
        "    AnthropicModel('m', api_key='k')\n"
        "except ModelConfigError as exc:\n"
        "    print(exc)\n"
    )
    assert "pip install 'skillwire[anthropic]'" in result.stdout, result.stderr
