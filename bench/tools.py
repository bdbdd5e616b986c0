"""Tools benchmark: what the gate and an executor add to one tool call, per executor,
against calling the program or endpoint directly.

Run ``python -m bench.tools``. A package with one tool of each kind is written to a
temporary folder: ``shell_command`` (``echo WORD``), ``http_request`` (``GET`` on a
standard-library server on 127.0.0.1 started here) and ``mcp`` (an SDK server over
stdio, started once). For each, ``--calls`` calls are timed two ways:

- **direct**: the program through ``asyncio.create_subprocess_exec``; the URL through an
  open ``httpx2.AsyncClient`` (the executor keeps one per event loop too); the MCP tool
  through an open SDK client session;
- **governed**: :meth:`Gate.check` over the operator's base policy, then
  :meth:`Executors.execute` (template, credentials, redaction, effect check, and for
  shell the fresh working folder, the own environment, the process group and, where
  ``bwrap`` is installed, a second run inside the sandbox).

One JSON line is printed, per executor the median milliseconds both ways, their ratio
and the overhead in milliseconds::

    {"bench": "tools", "calls": 100, "shell": {"direct_ms": 1.1, "governed_ms": 1.6,
     "ratio": 1.45, "overhead_ms": 0.5}, "shell_sandboxed": {...}, "http": {...},
     "mcp": {...}, "python": "3.11.7"}

Bounded: loopback only, a fixed number of calls. The MCP part is skipped when the
``mcp`` SDK is not installed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from skillwire.policy import Gate
from skillwire.skills import BasePolicy, Skill, load_skill
from skillwire.tools import Executors, HttpExecutor, McpExecutor, McpServer, ShellExecutor
from skillwire.tools.shell import bwrap_path

MCP_SERVER = """
from mcp.server.mcpserver import MCPServer
server = MCPServer("bench")

@server.tool()
def add(a: int, b: int) -> int:
    return a + b

server.run()
"""


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        body = json.dumps({"item": self.path.rsplit("/", 1)[-1]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _package(folder: Path, port: int) -> Skill:
    schema = {"type": "object", "properties": {"word": {"type": "string"}}}
    tools = [
        {
            "name": "echo",
            "inputSchema": schema,
            "executor": {"type": "shell_command", "command": "echo", "argsTemplate": ["{{word}}"]},
        },
        {
            "name": "item",
            "inputSchema": schema,
            "executor": {
                "type": "http_request",
                "method": "GET",
                "url": f"http://127.0.0.1:{port}/items/{{{{word}}}}",
            },
        },
        {
            "name": "add",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            },
            "executor": {"type": "mcp", "server": "bench", "tool": "add"},
        },
    ]
    files = {
        "skill.json": {"schemaVersion": "ayati-skill/v1", "id": "bench-tools", "version": "1"},
        "tools.json": {"schemaVersion": "ayati-tools/v1", "skillId": "bench-tools", "tools": tools},
    }
    pkg = folder / "bench-tools"
    pkg.mkdir()
    for name, data in files.items():
        (pkg / name).write_text(json.dumps(data))
    (pkg / "skill.md").write_text("# bench\n")
    return load_skill(pkg)


async def _timed(calls: int, one: Callable[[int], Awaitable[Any]]) -> float:
    """The median milliseconds of ``calls`` calls (after one warm-up call)."""
    await one(-1)
    times = []
    for i in range(calls):
        start = time.perf_counter()
        await one(i)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _row(direct: float, governed: float) -> dict[str, float]:
    return {
        "direct_ms": round(direct, 3),
        "governed_ms": round(governed, 3),
        "ratio": round(governed / direct, 2),
        "overhead_ms": round(governed - direct, 3),
    }


async def _governed(gate: Gate, executors: Executors, skill: Skill, name: str, args: Any) -> None:
    decision = gate.check(name, args)
    assert decision.kind == "allow", decision
    tool = skill.tool(name)
    assert tool is not None
    outcome = await executors.execute(
        tool, dict(decision.args), idempotency_key="bench", skill_root=skill.root
    )
    assert outcome.ok, outcome.error


async def _main(calls: int) -> dict[str, Any]:
    import httpx2

    out: dict[str, Any] = {"bench": "tools", "calls": calls}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        skill = _package(folder, port)
        base = BasePolicy.model_validate({"shell": {"allowedPrefixes": ["echo"]}})
        gate = Gate.for_skill(skill, base=base)
        (folder / "server.py").write_text(MCP_SERVER)
        mcp = McpExecutor([McpServer("bench", (sys.executable, str(folder / "server.py")))])
        executors = Executors(
            shell=ShellExecutor(sandbox="off"),
            http=HttpExecutor(allowed_hosts=[f"127.0.0.1:{port}"]),
            mcp=mcp,
        )

        async def echo_direct(i: int) -> None:
            process = await asyncio.create_subprocess_exec(
                "echo", f"w{i}", stdout=asyncio.subprocess.PIPE
            )
            await process.communicate()

        direct = await _timed(calls, echo_direct)
        governed = await _timed(
            calls, lambda i: _governed(gate, executors, skill, "echo", {"word": f"w{i}"})
        )
        out["shell"] = _row(direct, governed)
        if bwrap_path() is not None:
            boxed = Executors(shell=ShellExecutor(sandbox="auto"))
            sandboxed = await _timed(
                calls, lambda i: _governed(gate, boxed, skill, "echo", {"word": f"w{i}"})
            )
            out["shell_sandboxed"] = _row(direct, sandboxed)

        async with httpx2.AsyncClient(trust_env=False) as http_client:

            async def http_direct(i: int) -> None:
                response = await http_client.get(f"http://127.0.0.1:{port}/items/w{i}")
                response.json()

            direct = await _timed(calls, http_direct)
        governed = await _timed(
            calls, lambda i: _governed(gate, executors, skill, "item", {"word": f"w{i}"})
        )
        out["http"] = _row(direct, governed)

        try:
            from mcp import Client, StdioServerParameters
        except ImportError:
            out["mcp"] = "skipped: the mcp SDK is not installed"
        else:
            params = StdioServerParameters(command=sys.executable, args=[str(folder / "server.py")])
            async with Client(params) as client:

                async def mcp_direct(i: int) -> None:
                    await client.call_tool("add", {"a": i, "b": 1})

                direct = await _timed(calls, mcp_direct)
            governed = await _timed(
                calls, lambda i: _governed(gate, executors, skill, "add", {"a": i, "b": 1})
            )
            out["mcp"] = _row(direct, governed)
        await executors.aclose()
    server.shutdown()
    server.server_close()
    out["python"] = platform.python_version()
    return out


def main() -> None:
    """Run the benchmark and print its JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="calls per executor and way")
    options = parser.parse_args()
    print(json.dumps(asyncio.run(_main(options.calls))))


if __name__ == "__main__":
    main()
