"""What ``skillwire check`` says about each tool of a skill: how it runs, whether it is
sandboxed, which credentials it needs and whether they are set, and which shell
prefixes and roots the operator's base policy would have to allow.

Findings are :class:`~skillwire.core.issues.SkillIssue` values at the tool's line:
``info`` for the facts, ``warning`` for what stops or weakens the tool on this machine
(a shell tool that runs unsandboxed, a program or root the base policy does not allow,
a confirmation list with nothing to match, an executor this runtime cannot run).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from skillwire.core.issues import Severity, SkillIssue
from skillwire.skills.base_policy import BasePolicy
from skillwire.skills.model import Skill
from skillwire.skills.model_package import ToolPolicyOverride
from skillwire.skills.model_tools import (
    HttpRequestExecutor,
    McpExecutor,
    ShellCommandExecutor,
    Tool,
)
from skillwire.skills.shell_template import template_problems
from skillwire.tools.credentials import SkillCredentials

__all__ = ["tool_findings"]

RUNNABLE = frozenset({"python", "simulate", "shell_command", "http_request", "mcp"})
"""The executor types this runtime runs."""


def _issue(skill: Skill, index: int, severity: Severity, message: str, code: str) -> SkillIssue:
    path = ("tools", index)
    return SkillIssue(severity, message, skill.locate(path), path, code=code)


def _programs(spec: ShellCommandExecutor) -> list[str]:
    """Each program's command line as far as it is fixed (up to the first template tag)."""
    literal: list[str] = []
    for element in spec.argsTemplate:
        if "{{" in element:
            break
        literal.append(element)
    return [
        " ".join([spec.command, *literal]),
        *(" ".join([f.command, *f.fixedArgs, *literal]) for f in spec.commandFallbacks),
    ]


def _allowed(program: str, prefixes: list[str]) -> bool:
    words = program.split()
    return any(p.split() == words[: len(p.split())] for p in prefixes if p.split())


def _shell(
    skill: Skill, index: int, tool: Tool, spec: ShellCommandExecutor, base: BasePolicy, sandbox: str
) -> list[SkillIssue]:
    out: list[SkillIssue] = []
    if sandbox in {"off", "missing"}:
        why = "[tools] sandbox is off" if sandbox == "off" else "bwrap is not installed"
        out.append(
            _issue(
                skill,
                index,
                Severity.WARNING,
                f"{tool.name} runs unsandboxed ({why}): it sees the whole file system "
                "and the network; only the gate's checks of its arguments apply",
                "shell-unsandboxed",
            )
        )
    for program in _programs(spec):
        if not _allowed(program, base.shell.allowedPrefixes):
            out.append(
                _issue(
                    skill,
                    index,
                    Severity.WARNING,
                    f"{tool.name} cannot run until the operator's base policy allows a "
                    f"shell prefix of '{program}' (shell.allowedPrefixes)",
                    "shell-prefix-not-allowed",
                )
            )
    roots = [*base.filesystem.allowedReadRoots, *base.filesystem.allowedWriteRoots]
    for element in [*spec.argsTemplate, *(a for f in spec.commandFallbacks for a in f.fixedArgs)]:
        if element.startswith("/") and "{{" not in element:
            real = os.path.realpath(element)
            if not any(
                real == os.path.realpath(r) or real.startswith(os.path.realpath(r) + "/")
                for r in roots
            ):
                out.append(
                    _issue(
                        skill,
                        index,
                        Severity.WARNING,
                        f"{tool.name} names {element}, outside the operator's roots: "
                        "filesystem.allowedReadRoots must include it",
                        "shell-root-not-allowed",
                    )
                )
    for problem in template_problems(spec.argsTemplate, set(tool.input_names())):
        out.append(
            _issue(skill, index, Severity.WARNING, f"{tool.name}: {problem}", "shell-template")
        )
    return out


def _http(
    skill: Skill, index: int, tool: Tool, spec: HttpRequestExecutor, hosts: Sequence[str]
) -> list[SkillIssue]:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(spec.url.split("{{", 1)[0] if "://{{" in spec.url else spec.url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return []
    if not host or "{{" in host:
        return []
    wanted = {f"{host}:{port}".lower()}
    if port == (443 if parts.scheme == "https" else 80):
        wanted.add(host.lower())
    if wanted & {h.lower().strip() for h in hosts}:
        return []
    return [
        _issue(
            skill,
            index,
            Severity.WARNING,
            f"{tool.name} cannot reach {host}:{port} until the operator lists it in "
            "[tools] http_allowed_hosts",
            "http-host-not-allowed",
        )
    ]


def tool_findings(
    skill: Skill,
    base: BasePolicy,
    creds: SkillCredentials | None,
    sandbox: str,
    *,
    http_hosts: Sequence[str] = (),
    mcp_servers: Sequence[str] = (),
) -> list[SkillIssue]:
    """Findings about each tool of ``skill`` under ``base``. ``sandbox`` is how shell
    tools run here: ``bwrap``, ``missing`` (auto, not installed) or ``off``;
    ``http_hosts`` and ``mcp_servers`` are what the operator configured."""
    out: list[SkillIssue] = []
    overrides: dict[str, ToolPolicyOverride] = {}
    if skill.access is not None:
        for name, entry in skill.access.toolPolicies.items():
            found = skill.tool(name)
            overrides[found.name if found else name] = entry
    for index, tool in enumerate(skill.tools):
        kind = tool.executor.type if tool.executor is not None else "simulate"
        facts = [f"executor {kind}"]
        if kind not in RUNNABLE:
            out.append(
                _issue(
                    skill,
                    index,
                    Severity.WARNING,
                    f"{tool.name}: executor '{kind}' is not available in this runtime yet; "
                    "its calls fail",
                    "executor-unavailable",
                )
            )
        spec = tool.executor
        if isinstance(spec, ShellCommandExecutor):
            facts.append(
                ("sandboxed (bwrap)" if sandbox == "bwrap" else "unsandboxed")
                + (", network" if spec.network else ", no network")
            )
            out += _shell(skill, index, tool, spec, base, sandbox)
        if isinstance(spec, HttpRequestExecutor):
            out += _http(skill, index, tool, spec, http_hosts)
        if isinstance(spec, McpExecutor) and spec.server not in mcp_servers:
            out.append(
                _issue(
                    skill,
                    index,
                    Severity.WARNING,
                    f"{tool.name} cannot run until the operator configures MCP server "
                    f"'{spec.server}' ([tools.mcp_servers.{spec.server}])",
                    "mcp-server-not-configured",
                )
            )
        if creds is not None:
            needed = creds.needed_by(tool.name) or [c for _, c in creds.bindings.get(tool.name, [])]
            if needed:
                facts.append(
                    "credentials "
                    + ", ".join(f"{c} ({'set' if c in creds.values else 'unset'})" for c in needed)
                )
        override = overrides.get(tool.name)
        if (
            override is not None
            and override.requireConfirmationFor
            and "action" not in tool.input_names()
        ):
            out.append(
                _issue(
                    skill,
                    index,
                    Severity.WARNING,
                    f"{tool.name}: requireConfirmationFor is not enforced: the tool has "
                    "no 'action' input to match it against",
                    "confirmation-not-enforced",
                )
            )
        if kind not in ("simulate", "python") or len(facts) > 1:
            out.append(
                _issue(
                    skill, index, Severity.INFO, f"{tool.name}: {'; '.join(facts)}", "tool-report"
                )
            )
    return out
