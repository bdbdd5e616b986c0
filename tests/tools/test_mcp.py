"""The ``mcp`` executor on real MCP servers: one written with the SDK (stdio and
streamable HTTP) and, where installed, a published one (``mcp-server-time``). Servers
start once per runtime and stop cleanly; results and errors map to outcomes; a server
gets only the credentials bound to the tool calling it."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.tools.helpers import package, tool_of, write_package
from typer.testing import CliRunner

from skillwire.cli_app import app
from skillwire.core.executor import ToolOutcome
from skillwire.skills import load_skill
from skillwire.tools import Credentials, Executors, McpExecutor, McpServer

pytest.importorskip("mcp")

SERVER = Path(__file__).with_name("mcp_server.py")
STDIO = McpServer("test", (sys.executable, str(SERVER)))
SECRET = "mcp-secret-0123456789abcdef"


def mcp_tool(name: str, tool: str | None = None, server: str = "test") -> dict[str, Any]:
    return {
        "name": name,
        "description": "an MCP tool",
        "inputSchema": {"type": "object", "properties": {}},
        "executor": {"type": "mcp", "server": server, **({"tool": tool} if tool else {})},
    }


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


async def _calls(
    executors: Executors, skill: Any, calls: list[tuple[str, dict[str, Any]]]
) -> list[ToolOutcome]:
    try:
        return [
            await executors.execute(
                tool_of(skill, name), args, idempotency_key="k", skill_root=skill.root
            )
            for name, args in calls
        ]
    finally:
        await executors.aclose()


def test_a_stdio_server_runs_tools_started_once_and_stopped(tmp_path: Path) -> None:
    skill = package(
        tmp_path,
        [mcp_tool("add"), mcp_tool("pid"), mcp_tool("fails", "boom"), mcp_tool("nope", "absent")],
    )
    executors = Executors(mcp=McpExecutor([STDIO], timeout=30))
    add, pid1, pid2, failed, absent = asyncio.run(
        _calls(
            executors,
            skill,
            [
                ("add", {"a": 2, "b": 3}),
                ("pid", {}),
                ("pid", {}),
                ("fails", {"message": "bad"}),
                ("nope", {}),
            ],
        )
    )
    assert add.ok and add.result == {"result": 5}
    assert pid1.result == pid2.result  # one server for the runtime
    assert not _alive(pid1.result["result"])  # stopped by aclose
    assert not failed.ok and "boom" in failed.error
    assert not absent.ok


def test_an_unconfigured_server_fails_clearly(tmp_path: Path) -> None:
    skill = package(tmp_path, [mcp_tool("add", server="elsewhere")])
    (out,) = asyncio.run(_calls(Executors(mcp=McpExecutor([STDIO])), skill, [("add", {})]))
    assert out.error == "MCP server 'elsewhere' is not configured ([tools.mcp_servers]: test)"


def test_a_server_that_does_not_start_fails_the_call(tmp_path: Path) -> None:
    broken = McpServer("test", (sys.executable, "-c", "import sys; sys.exit(3)"))
    skill = package(tmp_path, [mcp_tool("add")])
    (out,) = asyncio.run(
        _calls(Executors(mcp=McpExecutor([broken], timeout=10)), skill, [("add", {"a": 1, "b": 1})])
    )
    assert not out.ok and out.error


def test_the_server_gets_only_the_calling_tools_credentials(tmp_path: Path) -> None:
    creds = {
        "credentials": [{"id": "MCP_KEY", "type": "env", "required": True, "secret": True}],
        "bindings": [{"tool": "bound", "credentialId": "MCP_KEY", "target": "SERVICE_TOKEN"}],
    }
    skill = package(
        tmp_path, [mcp_tool("bound", "env_names"), mcp_tool("free", "env_names")], credentials=creds
    )
    executors = Executors(
        mcp=McpExecutor([STDIO]), credentials=Credentials(environ={"MCP_KEY": SECRET})
    )
    bound, free = asyncio.run(_calls(executors, skill, [("bound", {}), ("free", {})]))
    assert "SERVICE_TOKEN" in bound.result["result"]
    assert "SERVICE_TOKEN" not in free.result["result"]
    assert "MCP_KEY" not in bound.result["result"]  # not the runtime's environment
    assert "PYTEST_CURRENT_TEST" not in bound.result["result"]


def test_a_revealed_credential_is_redacted(tmp_path: Path) -> None:
    creds = {
        "credentials": [{"id": "MCP_KEY", "type": "env", "required": True, "secret": True}],
        "bindings": [{"tool": "leak", "credentialId": "MCP_KEY", "target": "SERVICE_TOKEN"}],
    }
    skill = package(tmp_path, [mcp_tool("leak", "reveal")], credentials=creds)
    executors = Executors(
        mcp=McpExecutor([STDIO]), credentials=Credentials(environ={"MCP_KEY": SECRET})
    )
    (out,) = asyncio.run(_calls(executors, skill, [("leak", {"name": "SERVICE_TOKEN"})]))
    assert out.ok and out.result == {"result": "****"}


@pytest.fixture
def http_server() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:  # wait until the port accepts (or the server dies)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("the HTTP MCP server did not start")
                try:
                    process.wait(timeout=0.05)
                    pytest.fail("the HTTP MCP server exited")
                except subprocess.TimeoutExpired:
                    pass
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def test_a_streamable_http_server(tmp_path: Path, http_server: str) -> None:
    skill = package(tmp_path, [mcp_tool("add")])
    executors = Executors(mcp=McpExecutor([McpServer("test", url=http_server)]))
    (out,) = asyncio.run(_calls(executors, skill, [("add", {"a": 20, "b": 22})]))
    assert out.ok, out.error
    assert out.result == {"result": 42}


def test_skillwire_mcp_tools_prints_entries_to_paste(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["mcp", "tools", "--server", "files", "--", sys.executable, str(SERVER)]
    )
    assert result.exit_code == 0, result.output
    entries = {t["name"]: t for t in json.loads(result.stdout)["tools"]}
    assert set(entries) == {"add", "env_names", "pid", "reveal", "boom"}
    assert entries["add"]["executor"] == {"type": "mcp", "server": "files", "tool": "add"}
    assert entries["add"]["inputSchema"]["required"] == ["a", "b"]
    # pasted into a package, they load
    folder = write_package(tmp_path, list(entries.values()))
    assert load_skill(folder).tool("add") is not None


def test_skillwire_mcp_tools_needs_a_server() -> None:
    result = CliRunner().invoke(app, ["mcp", "tools"])
    assert result.exit_code == 2


def test_skillwire_call_on_an_mcp_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add = mcp_tool("add")
    add["inputSchema"] = {
        "type": "object",
        "required": ["a", "b"],
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    }
    folder = write_package(tmp_path, [add])
    config = tmp_path / "skillwire.toml"
    config.write_text(
        f"[tools.mcp_servers.test]\ncommand = [{json.dumps(sys.executable)}, "
        f"{json.dumps(str(SERVER))}]\n"
    )
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(config))
    result = CliRunner().invoke(
        app, ["call", str(folder), "add", "--args", '{"a": 1, "b": 2}', "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["outcome"]["result"] == {"result": 3}


def test_a_published_server_from_the_registry(tmp_path: Path) -> None:
    """``mcp-server-time`` (PyPI), offline: the current time in UTC."""
    pytest.importorskip("mcp_server_time")
    server = McpServer("time", (sys.executable, "-m", "mcp_server_time"))
    skill = package(tmp_path, [mcp_tool("now", "get_current_time", server="time")])
    executors = Executors(mcp=McpExecutor([server], timeout=60))
    (out,) = asyncio.run(_calls(executors, skill, [("now", {"timezone": "UTC"})]))
    assert out.ok, out.error
    assert "UTC" in json.dumps(out.result)
