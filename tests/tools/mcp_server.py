"""An MCP server written with the SDK, for the ``mcp`` executor tests.

``python mcp_server.py`` serves on stdio; ``python mcp_server.py http PORT`` serves
streamable HTTP on 127.0.0.1:PORT.
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("skillwire-test")


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
