"""Tools from an MCP server's ``tools/list``: one ``mcp`` tool per tool it offers.

The builder never talks to a server (it imports no executor): the caller lists the
server (``skillwire new --from-mcp`` does it through :mod:`skillwire.tools.mcp`) and
hands over the listed tools as the protocol writes them, plain mappings of ``name``,
``description``, ``inputSchema`` and ``annotations``. Each becomes a tool named as an
identifier (``get-weather`` is ``get_weather``) whose executor names the server and the
server's own tool name; its ``inputSchema`` is kept (without generated ``title`` keys).
The server's annotations are hints for the proposed policy (:class:`ToolHints`), and a
tool the server marks as reaching an open world (``openWorldHint``) is written
``trust: untrusted``: its results can carry text written by others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from skillwire.builder.python_tools import ImportedTools, strip_titles
from skillwire.builder.tool_effects import ToolHints, identifier_words

__all__ = ["tools_from_mcp"]


def _description(listed: Mapping[str, Any], name: str, server: str) -> str:
    annotations = listed.get("annotations")
    title = annotations.get("title") if isinstance(annotations, Mapping) else None
    for text in (listed.get("description"), listed.get("title"), title):
        if isinstance(text, str) and text.strip():
            return " ".join(text.split())
    return f"The tool {name} of the MCP server {server}"


def tools_from_mcp(listed: Sequence[Mapping[str, Any]], server: str) -> ImportedTools:
    """One ``mcp`` tool of ``server`` (the name the operator configures) per entry of
    ``listed``; an entry without a usable name or input schema, or whose name is another
    entry's once written as an identifier, is left out and said."""
    result = ImportedTools()
    taken: dict[str, str] = {}
    for entry in listed:
        raw = entry.get("name")
        if not isinstance(raw, str) or not raw:
            result.skipped.append(f"a tool of {server} without a name")
            continue
        name = "_".join(identifier_words(raw))
        if not name:
            result.skipped.append(f"tool {raw!r}: its name has no letter or digit")
            continue
        if name in taken:
            result.skipped.append(
                f"tool {raw!r}: its name is {name}, as the name of {taken[name]!r} is"
            )
            continue
        schema = entry.get("inputSchema")
        if not isinstance(schema, Mapping):
            result.skipped.append(f"tool {raw!r}: no inputSchema object")
            continue
        taken[name] = raw
        tool: dict[str, Any] = {
            "name": name,
            "description": _description(entry, raw, server),
            "inputSchema": strip_titles(dict(schema)),
            "executor": {"type": "mcp", "server": server, "tool": raw},
        }
        hints = ToolHints.of(entry.get("annotations"))
        if hints.open_world is True:
            tool["trust"] = "untrusted"
        if hints != ToolHints():
            result.hints[name] = hints
        result.tools.append(tool)
    if not listed:
        result.skipped.append(f"the MCP server {server} lists no tool")
    return result
