"""OpenAICompatModel in JSON tool mode against a local fake server, over real HTTP.

A stand-in for Ollama, vLLM or llama.cpp serving a model without tool calling: a stdlib
HTTP server on a free port, reached through the SDK's default transport (no injected
client), with the placeholder key a local server gets.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from skillwire.core.chat import ChatMessage, ChatRequest, ChatResponse, ToolSpec, Usage
from skillwire.models.openai_compat import PLACEHOLDER_API_KEY, OpenAICompatModel

WEATHER = ToolSpec(
    "get_weather",
    "Current weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


class _FakeServer(BaseHTTPRequestHandler):
    """A chat-completions server without tool calling: it answers every call in JSON."""

    bodies: ClassVar[list[dict[str, Any]]] = []
    keys: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        length = int(self.headers["content-length"])
        type(self).bodies.append(json.loads(self.rfile.read(length)))
        type(self).keys.append(self.headers["authorization"])
        call = '```json\n{"tool": "get_weather", "arguments": {"city": "Oslo"}}\n```'
        payload = json.dumps(
            {
                "id": "chatcmpl-local",
                "object": "chat.completion",
                "created": 1,
                "model": "llama3.1:8b",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": call},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def local_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_json_tool_mode_against_a_local_server_over_real_http(local_server: str) -> None:
    _FakeServer.bodies.clear()
    _FakeServer.keys.clear()
    model = OpenAICompatModel("llama3.1:8b", base_url=local_server, tool_mode="json")

    async def run() -> ChatResponse:
        try:
            return await model.complete(
                ChatRequest("planner", (ChatMessage("user", "Oslo?"),), tools=(WEATHER,))
            )
        finally:
            await model.aclose()

    reply = asyncio.run(run())
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("get_weather", {"city": "Oslo"})]
    assert reply.usage == Usage(30, 12)
    (body,) = _FakeServer.bodies
    assert "tools" not in body
    assert "get_weather" in body["messages"][0]["content"]
    assert _FakeServer.keys == [f"Bearer {PLACEHOLDER_API_KEY}"]
