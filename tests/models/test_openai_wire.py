"""OpenAICompatModel through the real openai SDK, with HTTP answered by a mock transport.

The replies are chat-completions JSON as the API sends it; the requests the SDK made are
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
from skillwire.models.openai_compat import PLACEHOLDER_API_KEY, OpenAICompatModel

Reply = httpx2.Response | Callable[[httpx2.Request], httpx2.Response]

WEATHER = ToolSpec(
    "get_weather",
    "Current weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
REFUND = ToolSpec(
    "issue_refund",
    "Refund an order.",
    {"type": "object", "properties": {"order_id": {"type": "string"}}},
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


def completion(message: dict[str, Any], finish: str = "stop") -> httpx2.Response:
    """A 200 chat.completion as api.openai.com sends it."""
    body = {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "refusal": None, "annotations": [], **message},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": 82,
            "completion_tokens": 17,
            "total_tokens": 99,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306",
    }
    return httpx2.Response(200, json=body)


def text_reply(content: str | None) -> httpx2.Response:
    return completion({"content": content})


def tool_reply(*calls: tuple[str, str, str]) -> httpx2.Response:
    """A reply with function calls, each ``(id, name, argument text)``."""
    return completion(
        {
            "content": None,
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                for i, n, a in calls
            ],
        },
        finish="tool_calls",
    )


def error(status: int, message: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None}}
    return httpx2.Response(status, json=body, headers=headers)


def model_on(wire: Wire, sleeps: Sleeps | None = None, **kwargs: Any) -> OpenAICompatModel:
    kwargs.setdefault("api_key", "sk-test")
    return OpenAICompatModel(
        "gpt-4o-mini", http_client=wire.client(), sleep=sleeps or Sleeps(), **kwargs
    )


def ask(model: OpenAICompatModel, *messages: ChatMessage, **kwargs: Any) -> ChatResponse:
    msgs = messages or (ChatMessage("user", "Hi"),)
    return asyncio.run(model.complete(ChatRequest("planner", msgs, **kwargs)))


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)


def test_text_reply_maps_text_usage_and_model() -> None:
    wire = Wire(text_reply("Hello there."))
    model = model_on(wire)
    reply = ask(model, max_tokens=50, temperature=0.2)
    assert isinstance(model, ChatModel)
    assert model.name == "openai:gpt-4o-mini"
    assert reply == ChatResponse(
        text="Hello there.",
        usage=Usage(input_tokens=82, output_tokens=17),
        model="gpt-4o-mini-2024-07-18",
        finish_reason="stop",
    )
    request = wire.requests[0]
    assert str(request.url) == "https://api.openai.com/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert wire.bodies[0] == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Hi"}],
        "temperature": 0.2,
        "max_completion_tokens": 50,
    }


def test_tool_call_and_the_request_body_with_tool_results() -> None:
    wire = Wire(tool_reply(("call_2", "issue_refund", '{"order_id": "A-17"}')))
    history = (
        ChatMessage("system", "You are a support agent."),
        ChatMessage("user", "Weather in Oslo, then refund A-17."),
        ChatMessage("assistant", "", (ToolCall("get_weather", {"city": "Oslo"}, "", "call_1"),)),
        ChatMessage("tool", '{"temp_c": 4}', tool_call_id="call_1"),
    )
    reply = ask(model_on(wire), *history, tools=(WEATHER, REFUND))
    assert reply.tool_calls == (
        ToolCall("issue_refund", {"order_id": "A-17"}, '{"order_id": "A-17"}', "call_2"),
    )
    assert reply.text == ""
    assert reply.finish_reason == "tool_calls"
    body = wire.bodies[0]
    assert body["messages"] == [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "Weather in Oslo, then refund A-17."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 4}'},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in (WEATHER, REFUND)
    ]


def test_several_tool_calls_keep_their_order_and_ids() -> None:
    wire = Wire(
        tool_reply(
            ("call_a", "get_weather", '{"city": "Oslo"}'),
            ("call_b", "get_weather", '{"city": "Rome"}'),
        )
    )
    reply = ask(model_on(wire), tools=(WEATHER,))
    assert [(c.id, c.arguments) for c in reply.tool_calls] == [
        ("call_a", {"city": "Oslo"}),
        ("call_b", {"city": "Rome"}),
    ]


@pytest.mark.parametrize("raw", ['{"city": "Oslo"', "not json", "[1, 2]", '"Oslo"', "null"])
def test_arguments_that_are_not_a_json_object_give_none_and_keep_the_text(raw: str) -> None:
    reply = ask(model_on(Wire(tool_reply(("call_1", "get_weather", raw)))), tools=(WEATHER,))
    assert reply.tool_calls == (ToolCall("get_weather", None, raw, "call_1"),)


def test_an_unknown_tool_name_is_passed_through_unchanged() -> None:
    reply = ask(model_on(Wire(tool_reply(("call_1", "delete_everything", "{}")))), tools=(WEATHER,))
    assert reply.tool_calls == (ToolCall("delete_everything", {}, "{}", "call_1"),)


def test_an_empty_reply_is_empty_text_without_calls() -> None:
    assert ask(model_on(Wire(text_reply(None)))).text == ""
    no_choices = httpx2.Response(
        200,
        json={"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []},
    )
    reply = ask(model_on(Wire(no_choices)))
    assert (reply.text, reply.tool_calls, reply.usage) == ("", (), Usage())


@pytest.mark.parametrize("content", ['{"intent": "refund"}', '```json\n{"intent": "refund"}\n```'])
def test_response_format_json_asks_for_an_object_and_unwraps_a_fence(content: str) -> None:
    wire = Wire(text_reply(content))
    reply = ask(model_on(wire), response_format="json")
    assert json.loads(reply.text) == {"intent": "refund"}
    body = wire.bodies[0]
    assert body["response_format"] == {"type": "json_object"}
    # The API refuses json_object unless a message mentions JSON.
    assert body["messages"][0]["role"] == "system"
    assert "JSON object" in body["messages"][0]["content"]


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ('{"tool": "get_weather", "arguments": {"city": "Oslo"}}', ""),
        ('```json\n{"tool": "get_weather", "arguments": {"city": "Oslo"}}\n```', ""),
        (
            'Checking.\n```json\n{"tool": "get_weather", "arguments": {"city": "Oslo"}}\n```',
            "Checking.",
        ),
        ('{"name": "get_weather", "arguments": {"city": "Oslo"}}', ""),
        ('{"tool": "get_weather", "arguments": {"city": "Oslo"}}\nOne moment.', "One moment."),
    ],
)
def test_json_tool_mode_reads_a_call_from_the_text(content: str, text: str) -> None:
    wire = Wire(text_reply(content))
    system = ChatMessage("system", "Be brief.")
    reply = ask(
        model_on(wire, tool_mode="json"), system, ChatMessage("user", "Oslo?"), tools=(WEATHER,)
    )
    (call,) = reply.tool_calls
    assert (call.name, call.arguments, reply.text) == ("get_weather", {"city": "Oslo"}, text)
    assert call.id.startswith("call_")
    body = wire.bodies[0]
    assert "tools" not in body
    prompt = body["messages"][0]["content"]
    assert prompt.startswith("Be brief.\n\n")
    assert "get_weather" in prompt and '"required":["city"]' in prompt
    assert '{"tool": "<tool name>"' in prompt


def test_json_tool_mode_reads_several_calls_and_bad_arguments() -> None:
    content = json.dumps(
        {
            "tool_calls": [
                {"tool": "get_weather", "arguments": {"city": "Oslo"}},
                {"tool": "issue_refund", "arguments": "not json"},
            ]
        }
    )
    reply = ask(model_on(Wire(text_reply(content)), tool_mode="json"), tools=(WEATHER, REFUND))
    assert [(c.name, c.arguments, c.raw_arguments) for c in reply.tool_calls] == [
        ("get_weather", {"city": "Oslo"}, '{"city": "Oslo"}'),
        ("issue_refund", None, "not json"),
    ]


@pytest.mark.parametrize(
    "content", ["It is sunny in Oslo.", '{"answer": 4}', "```json\n[1, 2]\n```", ""]
)
def test_json_tool_mode_returns_other_text_as_plain_text(content: str) -> None:
    reply = ask(model_on(Wire(text_reply(content)), tool_mode="json"), tools=(WEATHER,))
    assert (reply.text, reply.tool_calls) == (content, ())


def test_json_tool_mode_replays_tool_turns_as_text() -> None:
    wire = Wire(text_reply("Done."))
    history = (
        ChatMessage("user", "Oslo?"),
        ChatMessage("assistant", "", (ToolCall("get_weather", {"city": "Oslo"}, "", "call_1"),)),
        ChatMessage("tool", '{"temp_c": 4}', tool_call_id="call_1"),
    )
    ask(model_on(wire, tool_mode="json"), *history, tools=(WEATHER,))
    messages = wire.bodies[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert json.loads(messages[2]["content"]) == {
        "tool": "get_weather",
        "arguments": {"city": "Oslo"},
    }
    assert messages[3]["content"] == 'Tool result for get_weather (call call_1):\n{"temp_c": 4}'


def test_429_then_success_waits_what_retry_after_says() -> None:
    sleeps = Sleeps()
    wire = Wire(
        error(429, "Rate limit reached", {"retry-after": "2"}),
        error(429, "Rate limit reached", {"retry-after-ms": "250"}),
        text_reply("ok"),
    )
    assert ask(model_on(wire, sleeps)).text == "ok"
    assert sleeps.calls == [2.0, 0.25]
    assert len(wire.requests) == 3


def test_500s_back_off_exponentially_then_give_up() -> None:
    sleeps = Sleeps()
    wire = Wire(*(error(500, "The server had an error") for _ in range(4)))
    with pytest.raises(ModelUnavailableError, match=r"HTTP 500.*gave up after 4 attempt"):
        ask(model_on(wire, sleeps, max_retries=3))
    assert len(wire.requests) == 4
    assert len(sleeps.calls) == 3
    for retry, waited in enumerate(sleeps.calls):
        full = 0.5 * 2**retry
        assert 0.75 * full <= waited <= full


def test_a_retry_after_longer_than_a_minute_gives_up_at_once() -> None:
    sleeps = Sleeps()
    wire = Wire(error(503, "busy", {"retry-after": "3600"}), text_reply("never"))
    with pytest.raises(ModelUnavailableError, match="retry after 3600s"):
        ask(model_on(wire, sleeps))
    assert (len(wire.requests), sleeps.calls) == (1, [])


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_are_a_config_error_without_retry(status: int) -> None:
    wire = Wire(error(status, "Incorrect API key provided: sk-test."))
    with pytest.raises(ModelConfigError, match="check the API key") as info:
        ask(model_on(wire))
    assert "Incorrect API key provided" in str(info.value)
    assert len(wire.requests) == 1


def test_404_names_the_unknown_model() -> None:
    wire = Wire(error(404, "The model `gpt-9` does not exist or you do not have access to it."))
    with pytest.raises(ModelRequestError, match="unknown model 'gpt-4o-mini'") as info:
        ask(model_on(wire))
    assert "gpt-9" in str(info.value)
    assert len(wire.requests) == 1


def test_400_carries_the_servers_message() -> None:
    wire = Wire(error(400, "Invalid schema for function 'get_weather'."))
    with pytest.raises(ModelRequestError, match=r"HTTP 400\): Invalid schema for function"):
        ask(model_on(wire), tools=(WEATHER,))


def test_an_error_body_that_is_a_bare_string_is_reported() -> None:
    wire = Wire(httpx2.Response(400, json={"error": "model is required"}))
    with pytest.raises(ModelRequestError, match="model is required"):
        ask(model_on(wire))


def test_a_reply_that_is_not_a_completion_is_a_model_error() -> None:
    page = httpx2.Response(200, text="<html>login</html>", headers={"content-type": "text/html"})
    with pytest.raises(ModelError, match="not a chat completion"):
        ask(model_on(Wire(page)))


def _timeout(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ReadTimeout("timed out", request=request)


def _refused(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)


def test_timeouts_are_retried_then_unavailable() -> None:
    sleeps = Sleeps()
    wire = Wire(_timeout, _timeout)
    with pytest.raises(ModelUnavailableError, match=r"timed out after 5s; gave up after 2"):
        ask(model_on(wire, sleeps, max_retries=1, timeout=5))
    assert len(sleeps.calls) == 1


def test_a_timeout_then_success_recovers() -> None:
    assert ask(model_on(Wire(_timeout, text_reply("ok")))).text == "ok"


def test_connection_errors_are_unavailable_and_name_the_server() -> None:
    wire = Wire(_refused)
    with pytest.raises(
        ModelUnavailableError, match=r"could not connect to http://127\.0\.0\.1:9/v1"
    ):
        ask(model_on(wire, max_retries=0, base_url="http://127.0.0.1:9/v1"))


def test_no_key_and_no_base_url_says_which_variable_to_set() -> None:
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        OpenAICompatModel("gpt-4o-mini")


def test_a_key_from_the_environment_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    wire = Wire(text_reply("ok"))
    ask(OpenAICompatModel("gpt-4o-mini", http_client=wire.client()))
    assert wire.requests[0].headers["authorization"] == "Bearer sk-env"


def test_a_local_server_needs_no_key_and_gets_max_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    wire = Wire(text_reply("ok"))
    ask(OpenAICompatModel("llama3.1:8b", http_client=wire.client()), max_tokens=64)
    request = wire.requests[0]
    assert str(request.url) == "http://localhost:11434/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {PLACEHOLDER_API_KEY}"
    assert wire.bodies[0]["max_tokens"] == 64
    assert "max_completion_tokens" not in wire.bodies[0]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "localhost:11434"},
        {"tool_mode": "xml"},
        {"max_retries": -1},
        {"timeout": 0},
    ],
)
def test_bad_settings_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ModelConfigError):
        OpenAICompatModel("m", api_key="k", **kwargs)


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )


def test_importing_the_module_does_not_import_the_sdk() -> None:
    result = _python(
        "import sys, skillwire.models.openai_compat\n"
        "assert 'openai' not in sys.modules, 'openai imported'\n"
        "assert 'httpx2' not in sys.modules, 'httpx2 imported'\n"
    )
    assert result.returncode == 0, result.stderr


def test_a_missing_sdk_is_a_config_error_with_the_install_hint() -> None:
    result = _python(
        "import sys\n"
        "sys.modules['openai'] = None\n"
        "from skillwire.core.errors import ModelConfigError\n"
        "from skillwire.models.openai_compat import OpenAICompatModel\n"
        "try:\n"
        "    OpenAICompatModel('m', api_key='k')\n"
        "except ModelConfigError as exc:\n"
        "    print(exc)\n"
    )
    assert "pip install 'skillwire[openai]'" in result.stdout, result.stderr
