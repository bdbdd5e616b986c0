"""The ``mcp`` executor: a tool of an MCP server the operator configured, on the official
``mcp`` SDK.

The operator names servers in ``skillwire.toml``::

    [tools.mcp_servers.files]
    command = ["python3", "-m", "my_server"]   # stdio: started by skillwire
    [tools.mcp_servers.search]
    url = "http://127.0.0.1:8931/mcp"          # streamable HTTP: already running

A tool says ``executor: {type: mcp, server: files, tool: read}`` (``tool`` defaults to
the tool's local name). A server is started (or connected to) on its first call and kept
for the runtime, one connection per server and set of injected credentials; a stdio
server's process gets the SDK's minimal environment plus the credentials bound to the
tool calling it, and its standard error is discarded. :meth:`McpExecutor.aclose`
stops every server (the process ends with its connection).

A server lists its tools (``tools/list``) as its connection starts, once per runtime:
:meth:`McpExecutor.prepare` starts the servers a skill's tools name before a job of it
plans, so that :meth:`McpExecutor.unavailable` can say which tools a server does not
offer (the planner is not offered them, the gate refuses them); a call of a tool its
server does not offer is refused without calling the server. The listing is kept
per server and set of injected credentials (a server may list more tools to a caller
with a token); a listing that fails or runs past :data:`MAX_PAGES` pages says nothing.

A call's result is the tool's structured content when it gives one, else its text;
an ``isError`` result, a protocol error or a timeout is a failed outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillwire.core.executor import ToolOutcome
from skillwire.skills.model_tools import McpExecutor as McpSpec
from skillwire.skills.model_tools import Tool

__all__ = ["MAX_PAGES", "McpExecutor", "McpServer", "list_server_tools", "tool_entries"]

Environment = Callable[[Tool, Path | None], dict[str, str]]

Listing = dict[str, dict[str, Any]]
"""A server's tools: each name with its input schema."""

_Key = tuple[str, tuple[tuple[str, str], ...]]
"""A connection's key: the server's name and the credentials injected into it."""

MAX_PAGES = 50
"""The pages of ``tools/list`` read at most; a longer listing is taken as unknown."""


@dataclass(frozen=True)
class McpServer:
    """One server the operator configured: a stdio ``command`` or an HTTP ``url``."""

    name: str
    command: tuple[str, ...] = ()
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def transport(self, extra_env: Mapping[str, str]) -> Any:
        """The SDK's transport for this server (credentials in ``extra_env``)."""
        if self.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(self.url)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        bound = {k: v for k, v in extra_env.items() if not k.startswith(("LD_", "DYLD_"))}
        params = StdioServerParameters(
            command=self.command[0],
            args=list(self.command[1:]),
            env={**bound, **self.env},  # the operator's own variables win over bindings
            cwd=self.cwd,
        )
        return stdio_client(params, errlog=_devnull())


def _devnull() -> Any:
    return open(os.devnull, "w")


class _Connection:
    """A connected client kept open by a task of its own (entered and left there)."""

    def __init__(self, server: McpServer, env: Mapping[str, str], timeout: float) -> None:
        self.server = server
        self.env = dict(env)
        self.timeout = timeout
        self.client: Any = None
        self.tools: Listing | None = None
        """What the server listed as the connection started (None: unknown)."""
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.error: BaseException | None = None
        self.task = asyncio.ensure_future(self._hold())

    async def _hold(self) -> None:
        from mcp import Client

        try:
            transport = self.server.transport(self.env)
            async with Client(transport, read_timeout_seconds=self.timeout) as client:
                self.client = client
                self.tools = await _listing(client, self.timeout)
                self.ready.set()
                await self.stop.wait()
        except BaseException as exc:  # the caller of the first call sees it
            self.error = exc
            self.ready.set()
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def started(self) -> Any:
        await self.ready.wait()
        if self.client is None:
            error = self.error
            while isinstance(error, BaseExceptionGroup) and error.exceptions:
                error = error.exceptions[0]
            raise RuntimeError(
                f"MCP server '{self.server.name}' did not start: {type(error).__name__}: {error}"
            )
        return self.client

    async def close(self) -> None:
        self.stop.set()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(self.task, 10)


async def _listing(client: Any, timeout: float) -> Listing | None:
    """Every tool the server lists, with its input schema; None when the listing fails,
    takes longer than ``timeout`` or has more than :data:`MAX_PAGES` pages."""
    tools: Listing = {}
    cursor: str | None = None
    try:
        async with asyncio.timeout(timeout):
            for _ in range(MAX_PAGES):
                page = await client.list_tools(cursor=cursor)
                for tool in page.tools:
                    schema = tool.input_schema
                    tools[str(tool.name)] = dict(schema) if isinstance(schema, dict) else {}
                cursor = page.next_cursor
                if not cursor:
                    return tools
    except Exception:  # a server that cannot list still runs its tools
        return None
    return None


def _texts(result: Any) -> str:
    parts = []
    for block in getattr(result, "content", []) or []:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')}]")
    return "\n".join(parts)


class McpExecutor:
    """Runs ``mcp`` tools on the operator's ``servers``; each call within ``timeout``."""

    def __init__(
        self,
        servers: Sequence[McpServer] = (),
        *,
        timeout: float = 30.0,
        environment: Environment | None = None,
    ) -> None:
        self.servers = {s.name: s for s in servers}
        self.timeout = timeout
        self.environment = environment
        self._connections: dict[_Key, _Connection] = {}
        self._listed: dict[_Key, Listing] = {}
        self._failed: dict[_Key, str] = {}

    def _connection(self, server: McpServer, env: Mapping[str, str]) -> _Connection:
        key = _key(server.name, env)
        found = self._connections.get(key)
        loop = asyncio.get_running_loop()
        if found is None or found.task.get_loop() is not loop or found.task.done():
            found = _Connection(server, env, self.timeout)
            self._connections[key] = found
        return found

    def _target(self, tool: Tool, skill_root: Path | None) -> tuple[McpServer, _Key, str] | None:
        """The configured server ``tool`` names, its connection's key and the server's
        name for the tool; None when the tool is no mcp tool or its server is unknown."""
        spec = tool.executor
        if not isinstance(spec, McpSpec):
            return None
        server = self.servers.get(spec.server)
        if server is None:
            return None
        env = self.environment(tool, skill_root) if self.environment else {}
        return server, _key(server.name, env), spec.tool or tool.name.rsplit(".", 1)[-1]

    def listed(self, tool: Tool, skill_root: Path | None) -> Listing | None:
        """What the server of ``tool`` listed to it (None: not known yet)."""
        target = self._target(tool, skill_root)
        return self._listed.get(target[1]) if target is not None else None

    def failure(self, tool: Tool, skill_root: Path | None) -> str | None:
        """Why the server of ``tool`` did not start when last tried (for the operator:
        it may quote what the server said), or None."""
        target = self._target(tool, skill_root)
        return self._failed.get(target[1]) if target is not None else None

    def unavailable(self, tool: Tool, skill_root: Path | None) -> str | None:
        """Why ``tool`` cannot run here, as far as is known: its server is not
        configured, did not start when last tried, or does not offer it. None: it may
        run (or it is no mcp tool)."""
        spec = tool.executor
        if not isinstance(spec, McpSpec):
            return None
        target = self._target(tool, skill_root)
        if target is None:
            return f"MCP server '{spec.server}' is not configured"
        server, key, name = target
        if key in self._failed:  # the error's text is the server's: not for the planner
            return f"MCP server '{server.name}' did not start"
        listed = self._listed.get(key)
        if listed is not None and name not in listed:
            return f"MCP server '{spec.server}' offers no tool '{name}'"
        return None

    async def prepare(self, tools: Sequence[Tool], skill_root: Path | None) -> None:
        """Start the servers ``tools`` name and learn their tools, each (server, set of
        credentials) once: a listing is kept for the runtime, a server that did not
        start is tried again at the next call or preparation."""
        wanted: dict[_Key, tuple[McpServer, dict[str, str]]] = {}
        for tool in tools:
            target = self._target(tool, skill_root)
            if target is None or (target[1] in self._listed and target[1] not in self._failed):
                continue
            env = self.environment(tool, skill_root) if self.environment else {}
            wanted.setdefault(target[1], (target[0], env))
        if wanted:  # failures are kept in _failed: unavailable() reports them
            await asyncio.gather(
                *(self._start(server, env) for server, env in wanted.values()),
                return_exceptions=True,
            )

    async def _start(self, server: McpServer, env: dict[str, str]) -> Any:
        """The started client of ``server`` with ``env`` injected (its listing kept).
        Raises when it does not start within the timeout; its tools are then unavailable
        until a later call or preparation starts it."""
        key = _key(server.name, env)
        connection = self._connection(server, env)
        try:
            client = await asyncio.wait_for(connection.started(), self.timeout)
        except TimeoutError:
            self._failed[key] = (
                f"MCP server '{server.name}' did not start within {self.timeout:g} s"
            )
            raise
        except Exception as exc:
            self._failed[key] = str(exc)[:300] or f"MCP server '{server.name}' did not start"
            raise
        self._failed.pop(key, None)
        if connection.tools is not None:
            self._listed[key] = connection.tools
        return client

    async def execute(
        self, tool: Tool, args: dict[str, Any], *, idempotency_key: str, skill_root: Path | None
    ) -> ToolOutcome:
        """Call the server's tool; errors and timeouts are failed outcomes."""
        spec = tool.executor
        if not isinstance(spec, McpSpec):
            return ToolOutcome(False, error=f"{tool.name} has no mcp executor")
        server = self.servers.get(spec.server)
        if server is None:
            known = ", ".join(self.servers) or "none"
            return ToolOutcome(
                False,
                error=f"MCP server '{spec.server}' is not configured "
                f"([tools.mcp_servers]: {known})",
            )
        try:
            import mcp  # noqa: F401
        except ImportError:
            return ToolOutcome(
                False, error="mcp tools need the mcp SDK: pip install 'skillwire[tools]'"
            )
        env = self.environment(tool, skill_root) if self.environment else {}
        name = spec.tool or tool.name.rsplit(".", 1)[-1]
        try:
            client = await self._start(server, env)
            listed = self._listed.get(_key(server.name, env))
            if listed is not None and name not in listed:
                return ToolOutcome(
                    False,
                    error=f"refused: MCP server '{spec.server}' offers no tool '{name}' "
                    "(its tools/list); it was not called",
                )
            result = await asyncio.wait_for(client.call_tool(name, args), self.timeout)
        except TimeoutError:
            return ToolOutcome(False, error=f"timed out after {self.timeout:g} s")
        except Exception as exc:
            return ToolOutcome(False, error=f"MCP call failed: {type(exc).__name__}: {exc}")
        text = _texts(result)
        if result.is_error:
            return ToolOutcome(False, result={"text": text}, error=text or "the MCP tool failed")
        structured = result.structured_content
        return ToolOutcome(True, result=structured if structured is not None else {"text": text})

    async def aclose(self) -> None:
        """Stop every server this executor started (and close every connection)."""
        connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            if connection.task.get_loop() is asyncio.get_running_loop():
                await connection.close()


def _key(server: str, env: Mapping[str, str]) -> _Key:
    return (server, tuple(sorted(env.items())))


async def list_server_tools(server: McpServer) -> list[Any]:
    """The tools ``server`` offers (started for the listing, then stopped)."""
    from mcp import Client

    async with Client(server.transport({}), read_timeout_seconds=30) as client:
        listed = await client.list_tools()
        return list(listed.tools)


def tool_entries(tools: Sequence[Any], server: str) -> list[dict[str, Any]]:
    """``tools.json`` entries for an MCP server's tools, for an author to paste."""
    return [
        {
            "name": t.name,
            "description": t.description or "",
            "inputSchema": t.input_schema,
            "executor": {"type": "mcp", "server": server, "tool": t.name},
        }
        for t in tools
    ]
