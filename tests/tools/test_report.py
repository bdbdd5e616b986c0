"""The load report per tool: it tells the truth about how each tool would run here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.tools.helpers import base_of, package, shell_tool, write_base, write_package
from typer.testing import CliRunner

from skillwire.cli_app import app
from skillwire.config import McpServerConfig
from skillwire.skills import BasePolicy
from skillwire.tools.report import tool_findings

LS = shell_tool(
    "ls", "ls", ["-1", "/srv/data", "{{#if all}}-a{{/if}}"], {"all": {"type": "boolean"}}
)
HTTP = {
    "name": "get",
    "inputSchema": {"type": "object", "properties": {}},
    "executor": {"type": "http_request", "method": "GET", "url": "https://api.example.com/x"},
}
MCP = {
    "name": "remote",
    "inputSchema": {"type": "object", "properties": {}},
    "executor": {"type": "mcp", "server": "files"},
}


def codes(found: list) -> list[str]:  # type: ignore[type-arg]
    return [i.code for i in found if i.severity != "info"]


def test_what_the_operator_still_has_to_allow(tmp_path: Path) -> None:
    skill = package(
        tmp_path,
        [LS, HTTP, MCP],
        guardrails={"toolPolicies": {"get": {"requireConfirmationFor": ["delete"]}}},
    )
    found = tool_findings(skill, BasePolicy(), None, "missing")
    assert codes(found) == [
        "shell-unsandboxed",
        "shell-prefix-not-allowed",
        "shell-root-not-allowed",
        "http-host-not-allowed",
        "confirmation-not-enforced",
        "mcp-server-not-configured",
    ]
    messages = " | ".join(i.message for i in found)
    assert "allows a shell prefix of 'ls -1 /srv/data'" in messages
    assert "names /srv/data, outside the operator's roots" in messages
    assert "cannot reach api.example.com:443" in messages
    assert "[tools.mcp_servers.files]" in messages


def test_nothing_to_say_once_the_operator_allowed_it(tmp_path: Path) -> None:
    skill = package(tmp_path, [LS, HTTP, MCP])
    base = base_of(
        tmp_path,
        {"shell": {"allowedPrefixes": ["ls -1"]}, "filesystem": {"allowedReadRoots": ["/srv"]}},
    )
    found = tool_findings(
        skill, base, None, "bwrap", http_hosts=["api.example.com"], mcp_servers=["files"]
    )
    assert codes(found) == []
    facts = [i.message for i in found]
    assert "tools-demo.ls: executor shell_command; sandboxed (bwrap), no network" in facts


def test_check_warns_when_shell_tools_run_unsandboxed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_package(tmp_path, [LS])
    base = write_base(tmp_path, {"shell": {"allowedPrefixes": ["ls"]}})
    config = tmp_path / "skillwire.toml"
    config.write_text(f'[runtime]\nbase_policy = "{base}"\n[tools]\nsandbox = "off"\n')
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(config))
    result = CliRunner().invoke(app, ["check", str(folder), "--json"])
    issues = [
        i for s in json.loads(result.stdout)["skills"] for f in s["files"] for i in f["issues"]
    ]
    unsandboxed = [i["message"] for i in issues if i["code"] == "shell-unsandboxed"]
    assert unsandboxed == [
        "tools-demo.ls runs unsandboxed ([tools] sandbox is off): it sees the whole file "
        "system and the network; only the gate's checks of its arguments apply"
    ]


def test_a_template_reading_an_unknown_input_is_reported(tmp_path: Path) -> None:
    tool = shell_tool("echo", "echo", ["{{missing}}"], {"word": {"type": "string"}})
    skill = package(tmp_path, [tool])
    found = tool_findings(skill, BasePolicy(), None, "bwrap")
    assert "the template reads 'missing', which is not an input of the tool" in " ".join(
        i.message for i in found
    )


def test_an_mcp_server_needs_exactly_one_transport() -> None:
    with pytest.raises(ValueError, match="exactly one of command and url"):
        McpServerConfig.model_validate({})
    with pytest.raises(ValueError, match="exactly one of command and url"):
        McpServerConfig.model_validate({"command": ["x"], "url": "http://h/mcp"})
