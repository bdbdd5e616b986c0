"""``skillwire new/edit --from-mcp -- CMD...``: the tools of a real MCP server (written
with the SDK) become mcp tools with a policy proposed from what they do; the skill loads,
its generated scenarios pass, and with the printed skillwire.toml entry the mcp executor
runs them."""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from tests.builder.test_edit_and_drafting import REFUND, comments, only_added
from tests.builder.test_interview_cli import FIXTURES, cli, loads_clean
from tests.tools.test_mcp import http_server  # noqa: F401 - a fixture

pytest.importorskip("mcp")

SERVER = Path(__file__).resolve().parents[1] / "tools" / "mcp_server.py"
HINTS = FIXTURES / "mcp_hints_server.py"
TOOLS = ["add", "env_names", "pid", "reveal", "boom"]


def entry_of(output: str) -> str:
    """The skillwire.toml table the command printed."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("[tools.mcp_servers."))
    return "\n".join(lines[start : start + 2]) + "\n"


def test_yes_from_the_sdk_server_loads_passes_and_runs_with_the_printed_entry() -> None:
    args = ["new", "calc", "--describe", "Add numbers for the user.", "--from-mcp", "--yes"]
    result = cli([*args, "--", sys.executable, str(SERVER)])
    assert result.exit_code == 0, result.output
    loads_clean(Path("calc"))
    data = YAML(typ="safe").load(Path("calc/domain.yaml"))
    assert [t["name"] for t in data["tools"]] == TOOLS
    assert data["tools"][0] == {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": {  # the server's schema, without its generated titles
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        "executor": {"type": "mcp", "server": "calc", "tool": "add"},
    }
    # none of them says it only reads: each needs an approval, none runs freely
    assert [(a["tool_id"], a["when"]) for a in data["policy"]["approvals"]] == [
        (name, "always") for name in TOOLS
    ]
    generated = [f"approval-{name}-{i}" for i, name in enumerate(TOOLS, 1)]
    assert [t["id"] for t in data["tests"]] == [
        "intent-intent_add_numbers_for_the",
        *generated,
        "out-of-domain",
    ]
    assert "dry run: 7 passed, 0 failed, 0 manual" in result.output
    entry = entry_of(result.output)
    assert tomllib.loads(entry) == {
        "tools": {"mcp_servers": {"calc": {"command": [sys.executable, str(SERVER)]}}}
    }
    assert "add to skillwire.toml" in result.output

    unconfigured = cli(["check", "calc"])
    assert "cannot run until the operator configures MCP server 'calc'" in unconfigured.output
    Path("skillwire.toml").write_text(entry)
    check = cli(["check", "calc"])
    assert check.exit_code == 0 and "0 errors, 0 warnings" in check.output, check.output
    call = cli(["call", "calc", "add", "--args", '{"a": 2, "b": 40}', "--as", "supervisor"])
    assert call.exit_code == 0, call.output
    assert "42" in call.output
    assert cli(["call", "calc", "add", "--args", '{"a": 2, "b": 40}']).exit_code == 3
    test = cli(["test", "calc"])
    assert test.exit_code == 0 and "7 passed, 0 failed, 0 manual" in test.output

    # edit --from-mcp again: the tools are there (left as they are), the entry configured
    before = Path("calc/domain.yaml").read_text()
    again = cli(["edit", "calc", "--from-mcp", "--yes", "--", sys.executable, str(SERVER)])
    assert again.exit_code == 0, again.output
    for name in TOOLS:
        assert f"left out: tool {name}: the skill has a tool of that name" in again.output
    assert "calc/domain.yaml is unchanged" in again.output
    assert "skillwire.toml configures the MCP server calc already" in again.output
    assert Path("calc/domain.yaml").read_text() == before


def test_a_streamable_http_server_by_its_url(http_server: str) -> None:  # noqa: F811
    args = ["new", "calc", "--describe", "Add numbers.", "--from-mcp-url", http_server, "--yes"]
    result = cli(args)
    assert result.exit_code == 0, result.output
    loads_clean(Path("calc"))
    assert "dry run: 7 passed, 0 failed, 0 manual" in result.output
    entry = entry_of(result.output)
    assert tomllib.loads(entry) == {"tools": {"mcp_servers": {"calc": {"url": http_server}}}}
    Path("skillwire.toml").write_text(entry)
    call = cli(["call", "calc", "add", "--args", '{"a": 20, "b": 22}', "--as", "supervisor"])
    assert call.exit_code == 0 and "42" in call.output, call.output


def test_edit_from_mcp_adds_the_tools_and_keeps_the_hand_written_file() -> None:
    shutil.copytree(REFUND, "refund")
    before = Path("refund/domain.yaml").read_text()
    # skillwire.toml names calc with another command (the same server, started another
    # way): the dry run calls the configured one, as every later job will
    configured = f'[tools.mcp_servers.calc]\ncommand = ["{sys.executable}", "-u", "{SERVER}"]\n'
    Path("skillwire.toml").write_text(configured)
    args = ["edit", "refund", "--from-mcp", "--mcp-server", "calc", "--yes"]
    result = cli([*args, "--", sys.executable, str(SERVER)])
    assert result.exit_code == 0, result.output
    after = Path("refund/domain.yaml").read_text()
    assert comments(after) == comments(before)
    only_added(before, after)  # nothing the author wrote changed
    data = YAML(typ="safe").load(after)
    added = [t for t in data["tools"] if (t.get("executor") or {}).get("type") == "mcp"]
    assert [(t["name"], t["executor"]["server"]) for t in added] == [(n, "calc") for n in TOOLS]
    assert load_clean_errors(Path("refund")) == 0
    # skillwire.toml names another server calc: said, with the one listed
    assert "skillwire.toml configures the MCP server calc otherwise" in result.output
    assert f'command = ["{sys.executable}", "{SERVER}"]' in result.output


def load_clean_errors(folder: Path) -> int:
    from skillwire.skills import load_paths

    return load_paths([folder]).report.error_count


def test_a_servers_hints_weigh_as_its_words_and_never_lower_them() -> None:
    args = ["new", "desk", "--describe", "Look after tickets.", "--from-mcp", "--yes"]
    result = cli([*args, "--mcp-server", "hints", "--", sys.executable, str(HINTS)])
    assert result.exit_code == 0, result.output
    loads_clean(Path("desk"))
    data = YAML(typ="safe").load(Path("desk/domain.yaml"))
    tools = {t["name"]: t for t in data["tools"]}
    # names are identifiers; the executor calls the server's own name
    assert tools["delete_everything"]["executor"]["tool"] == "delete-everything"
    assert tools["get_status"]["executor"]["tool"] == "getStatus"
    assert "left out: tool 'get_status': its name is get_status" in result.output
    approvals = {a["tool_id"] for a in data["policy"]["approvals"]}
    # read-only and nothing in its words says otherwise: runs freely
    assert "frobnicate" not in approvals
    assert "the server marks it read-only and its words name no change" in result.output
    # a read-only mark does not make a deletion a read; a destructive mark outweighs "get"
    assert approvals == {"delete_everything", "get_status"}
    assert "its words outweigh the server's read-only mark" in result.output
    assert "the server marks it destructive" in result.output
    # a tool that reaches an open world returns text others wrote
    assert tools["search_web"]["trust"] == "untrusted"
    assert "trust" not in tools["frobnicate"]
    # the server's text is shown as it is, never read as markup
    assert "Searches the web [bold red]for anything[/]." in result.output
    assert "dry run: 4 passed, 0 failed, 0 manual" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--yes", "--", "python3", "s.py"], "an MCP server's command goes after --from-mcp --"),
        (["--yes", "--from-mcp"], "--from-mcp lists the server whose command follows --"),
        (
            ["--yes", "--from-mcp", "--from-mcp-url", "http://127.0.0.1:9/mcp", "--", "x"],
            "give the MCP server's command (--from-mcp -- CMD) or --from-mcp-url",
        ),
        (["--yes", "--from-mcp-url", "file:///etc/passwd"], "takes an http:// or https:// URL"),
        (
            ["--yes", "--from-mcp", "--mcp-server", "a]\nx", "--", "x"],
            "a server name is letters, digits, - and _",
        ),
        (["--yes", "--mcp-server", "calc"], "--mcp-server names the server of --from-mcp"),
        (
            ["--yes", "--from-mcp", "--", sys.executable, "-c", "raise SystemExit(3)"],
            "cannot list the tools of the MCP server",
        ),
        (
            ["--yes", "--from-mcp", "--", "/nonexistent/mcp-server"],
            "cannot list the tools of the MCP server /nonexistent/mcp-server",
        ),
    ],
)
def test_a_wrong_mcp_source_is_a_usage_error_and_writes_nothing(
    args: list[str], message: str
) -> None:
    result = cli(["new", "desk", "--describe", "Tickets.", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not Path("desk/domain.yaml").exists()


def test_the_printed_entry_is_toml_whatever_the_command_holds() -> None:
    from skillwire.cli_new import server_entry
    from skillwire.tools import McpServer

    odd = ['py "3"', "C:\\tools\\srv", "line\nbreak", "del\x7f", "tab\t", "ünï", '"]\n[x]']
    entry = server_entry(McpServer("srv", tuple(odd)))
    assert tomllib.loads(entry) == {"tools": {"mcp_servers": {"srv": {"command": odd}}}}
    url = 'http://h/mcp?q="x"\n'
    parsed = tomllib.loads(server_entry(McpServer("srv", url=url)))
    assert parsed["tools"]["mcp_servers"]["srv"] == {"url": url}
