"""What ``skillwire check`` says about a skill's ``mcp`` tools once their servers listed
their tools (:meth:`~skillwire.tools.mcp.McpExecutor.prepare`).

Only servers the operator configured (``[tools.mcp_servers]`` of ``skillwire.toml``)
are started, and only those a checked skill's tools name: a package names a server,
never a command, so checking an untrusted package runs nothing it chose.

Findings, at the line of the tool that names the server:

- ``mcp-tool-not-offered`` (warning): the server does not list the tool; the planner is
  not offered it and its calls are refused;
- ``mcp-server-did-not-start`` (warning): the server did not start (or not in time);
- ``mcp-schema-missing`` (warning): the tool's input schema declares no argument though
  the server's tool takes some (an ``inputSchema`` of ``{"type": "object"}``). The
  schema is *not* taken from the server: the skill is the contract the gate enforces,
  reviewed and versioned with the package, and a schema that arrived from a process at
  run time would be neither; the hint carries the server's schema to paste
  (``skillwire mcp tools`` prints whole entries);
- ``mcp-schema-differs`` (warning): the server requires arguments the tool's schema
  does not declare (the gate refuses them, the server refuses calls without them).
"""

from __future__ import annotations

import json
from pathlib import Path

from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath
from skillwire.skills.model import Skill
from skillwire.skills.model_tools import McpExecutor as McpSpec
from skillwire.skills.model_tools import Tool
from skillwire.tools.credentials import SkillCredentials
from skillwire.tools.mcp import McpExecutor

__all__ = ["SCHEMA_HINT_CHARS", "mcp_findings", "uses_configured_server"]

SCHEMA_HINT_CHARS = 600
"""The longest server schema a hint quotes; a longer one points to ``skillwire mcp
tools``."""


def uses_configured_server(skill: Skill, executor: McpExecutor) -> bool:
    """Whether a tool of ``skill`` names an MCP server the operator configured."""
    return any(
        isinstance(t.executor, McpSpec) and t.executor.server in executor.servers
        for t in skill.tools
    )


def _issue(
    skill: Skill, index: int, message: str, code: str, hint: str = "", *path: str | int
) -> SkillIssue:
    where: FieldPath = ("tools", index, *path)
    return SkillIssue(Severity.WARNING, message, skill.locate(where), where, code=code, hint=hint)


def mcp_findings(
    skill: Skill, executor: McpExecutor, creds: SkillCredentials | None
) -> list[SkillIssue]:
    """Findings about ``skill``'s ``mcp`` tools on configured servers, from what
    ``executor`` learnt when it prepared them (a tool whose credential is unset in
    ``creds`` is reported for that, not here)."""
    out: list[SkillIssue] = []
    root: Path | None = skill.root
    for index, tool in enumerate(skill.tools):
        spec = tool.executor
        if not isinstance(spec, McpSpec) or spec.server not in executor.servers:
            continue
        if creds is not None and creds.missing(tool.name) is not None:
            continue
        name = spec.tool or tool.name.rsplit(".", 1)[-1]
        why = executor.unavailable(tool, root)
        listed = executor.listed(tool, root)
        if why is not None and listed is not None and name not in listed:
            offered = ", ".join(sorted(listed)) or "none"
            out.append(
                _issue(
                    skill,
                    index,
                    f"{tool.name}: MCP server '{spec.server}' offers no tool '{name}' "
                    f"(it lists: {offered}): the planner is not offered {tool.name} and "
                    "its calls are refused",
                    "mcp-tool-not-offered",
                    "name one of its tools in executor.tool (skillwire mcp tools lists them)",
                    "executor",
                )
            )
        elif why is not None:
            detail = executor.failure(tool, root) or why
            out.append(
                _issue(
                    skill,
                    index,
                    f"{tool.name}: {detail}: the tools on it are unavailable until it starts",
                    "mcp-server-did-not-start",
                    "",
                    "executor",
                )
            )
        elif listed is not None and name in listed:
            found = _schema_findings(tool, spec.server, listed[name])
            out += [_issue(skill, index, m, c, h, "inputSchema") for m, c, h in found]
    return out


def _schema_findings(
    tool: Tool, server: str, schema: dict[str, object]
) -> list[tuple[str, str, str]]:
    """``(message, code, hint)`` for a tool's input schema against its server's."""
    properties = schema.get("properties")
    names = sorted(properties) if isinstance(properties, dict) else []
    required = schema.get("required")
    needed = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    if tool.input_schema().get("additionalProperties"):
        return []  # the gate lets undeclared arguments through
    declared = set(tool.input_names())
    if not declared:
        if not names:
            return []
        text = json.dumps(schema, sort_keys=True)
        hint = (
            f'add "inputSchema": {text}'
            if len(text) <= SCHEMA_HINT_CHARS
            else "skillwire mcp tools prints the server's schema to paste"
        )
        return [
            (
                f"{tool.name} declares no arguments, but MCP server '{server}' takes "
                f"{', '.join(names)}: the gate refuses every argument the tool does not "
                "declare (the schema is not taken from the server)",
                "mcp-schema-missing",
                hint,
            )
        ]
    lacking = [n for n in needed if n not in declared]
    if not lacking:
        return []
    return [
        (
            f"{tool.name}: MCP server '{server}' requires {', '.join(lacking)}, which the "
            "tool's input schema does not declare: the gate refuses them and the server "
            "refuses calls without them",
            "mcp-schema-differs",
            "",
        )
    ]
