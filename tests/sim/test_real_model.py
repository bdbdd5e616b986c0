"""``sim run --model NAME`` with a model configured as for jobs: an OpenAI-compatible
server (a stand-in for Ollama) on loopback, over real HTTP, concurrently."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from tests.sim.helpers import FLOOD, answer
from typer.testing import CliRunner

from skillwire.cli_app import app


class _Ollama(BaseHTTPRequestHandler):
    """Answers every chat completion with a flood decision: insurance."""

    prompts: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).prompts.append(body["messages"][-1]["content"])
        payload = json.dumps(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "llama3.1",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer(1, "H", "M")},
                        "finish_reason": "stop",
                    }
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Ollama)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_configured_model_runs_the_simulation(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "skillwire.toml"
    config.write_text(
        f'[models.local]\nbackend = "openai"\nmodel = "llama3.1"\nbase_url = "{server}"\n'
    )
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(config))
    _Ollama.prompts.clear()
    out = tmp_path / "run"
    args = [
        "sim",
        "run",
        str(FLOOD),
        "--out",
        str(out),
        "--model",
        "local",
        "--agents",
        "6",
        "--steps",
        "2",
        "--concurrency",
        "3",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "audit.jsonl").read_text().splitlines()]
    assert len(records) == 12 and all(r["executed_skill"] == "buy_insurance" for r in records)
    assert all(r["raw_output"] == answer(1, "H", "M") for r in records)
    assert (
        len(_Ollama.prompts) == 12
        and "Using the Protection Motivation Theory" in _Ollama.prompts[0]
    )
    meta = json.loads((out / "run.json").read_text())
    assert meta["model"] == "local" and meta["model_name"]
    replay = CliRunner().invoke(app, ["sim", "replay", str(out)])
    assert replay.exit_code == 0 and "byte-identical" in replay.output
    assert len(_Ollama.prompts) == 12  # a replay calls no model
