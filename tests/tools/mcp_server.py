"""An MCP server written with the SDK, for the ``mcp`` executor tests.

``python mcp_server.py`` serves on stdio; ``python mcp_server.py http PORT`` serves
streamable HTTP on 127.0.0.1:PORT. With ``MCP_TEST_STARTS`` set to a file in its
environment, each start of the server appends a line to that file (so that a test
counts the processes started).
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("skillwire-test")

if os.environ.get("MCP_TEST_STARTS"):
    with open(os.environ["MCP_TEST_STARTS"], "a", encoding="utf-8") as starts:
        starts.write(f"{os.getpid()}\n")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def env_names() -> list[str]:
    """The names of the server's environment variables."""
    return sorted(os.environ)


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def reveal(name: str) -> str:
    """The value of one environment variable."""
    return os.environ.get(name, "")


@server.tool()
def boom(message: str) -> str:
    """Always fails."""
    raise ValueError(message)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
