"""The demo MCP server of the tools example (the official SDK, stdio)."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("tools-demo")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run()
