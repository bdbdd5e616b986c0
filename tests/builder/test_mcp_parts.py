"""The builder's side of ``--from-mcp``, without a server: listed tools (plain mappings,
as the protocol writes them) become mcp tools, and a server's hints weigh as its words
when a policy is proposed, never lowering them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from skillwire.builder import (
    DefaultsPrompter,
    Effect,
    PolicyChoice,
    Session,
    ToolHints,
    add_tools,
    classify_tool,
    finish,
    interview,
    open_draft,
    propose_policy,
    tools_from_mcp,
)
from skillwire.skills import load_paths


def listed(name: str, annotations: Any = None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "description": f"Tool {name}.",
        "inputSchema": {
            "type": "object",
            "title": "args",
            "properties": {"title": {"type": "string", "title": "Title"}},
        },
    }
    if annotations is not None:
        entry["annotations"] = annotations
    return entry | extra


def test_listed_tools_become_mcp_tools_named_as_identifiers() -> None:
    imported = tools_from_mcp(
        [
            listed("get-weather"),
            listed("getWeather"),  # the same identifier: left out, said
            listed("--"),
            {"name": 7, "inputSchema": {}},
            listed("no_schema", inputSchema="nope"),
            {"name": "bare", "inputSchema": {"type": "object"}, "title": "  A   bare tool "},
        ],
        "weather",
    )
    assert [t["name"] for t in imported.tools] == ["get_weather", "bare"]
    first = imported.tools[0]
    assert first["executor"] == {"type": "mcp", "server": "weather", "tool": "get-weather"}
    # generated titles go, a property named "title" stays
    assert first["inputSchema"] == {"type": "object", "properties": {"title": {"type": "string"}}}
    assert imported.tools[1]["description"] == "A bare tool"
    assert imported.skipped == [
        "tool 'getWeather': its name is get_weather, as the name of 'get-weather' is",
        "tool '--': its name has no letter or digit",
        "a tool of weather without a name",
        "tool 'no_schema': no inputSchema object",
    ]
    assert tools_from_mcp([], "weather").skipped == ["the MCP server weather lists no tool"]


def test_hints_are_read_only_from_booleans() -> None:
    assert ToolHints.of({"readOnlyHint": "true", "destructiveHint": 1}) == ToolHints()
    assert ToolHints.of(None) == ToolHints()
    assert ToolHints.of({"readOnlyHint": True, "openWorldHint": False}) == ToolHints(
        read_only=True, open_world=False
    )
    imported = tools_from_mcp(
        [listed("a", {"openWorldHint": True}), listed("b", {"openWorldHint": "yes"})], "s"
    )
    assert imported.tools[0]["trust"] == "untrusted"
    assert "trust" not in imported.tools[1]
    assert imported.hints == {"a": ToolHints(open_world=True)}


READ_ONLY = ToolHints(read_only=True)
DESTRUCTIVE = ToolHints(destructive=True)


@pytest.mark.parametrize(
    ("name", "hints", "effect"),
    [
        ("frobnicate", READ_ONLY, Effect.READ),  # its words say nothing: the hint says
        ("get_ticket", READ_ONLY, Effect.READ),
        ("delete_everything", READ_ONLY, Effect.DELETION),  # words outweigh read-only
        ("issue_refund", READ_ONLY, Effect.PAYMENT),
        ("send_mail", READ_ONLY, Effect.WRITE),
        ("get_status", DESTRUCTIVE, Effect.DELETION),  # destructive outweighs "get"
        ("issue_refund", DESTRUCTIVE, Effect.DELETION),
        ("get_status", ToolHints(read_only=True, destructive=True), Effect.READ),
        ("frobnicate", ToolHints(destructive=False), Effect.WRITE),  # still never free
        ("frobnicate", ToolHints(), Effect.WRITE),
    ],
)
def test_hints_weigh_as_words(name: str, hints: ToolHints, effect: Effect) -> None:
    assert classify_tool(name, "", None, hints) is effect


def test_the_proposal_says_what_the_server_decided() -> None:
    free = propose_policy("frobnicate", hints=READ_ONLY)
    assert free.choice is PolicyChoice.FREE
    assert "the server marks it read-only" in free.reason
    refund = propose_policy(
        "issue_refund",
        schema={"type": "object", "properties": {"amount": {"type": "number"}}},
        hints=READ_ONLY,
    )
    assert (refund.choice, refund.condition) == (PolicyChoice.APPROVAL_WHEN, "amount > 500")
    assert "its words outweigh the server's read-only mark" in refund.reason
    gone = propose_policy("get_status", hints=DESTRUCTIVE)
    assert gone.choice is PolicyChoice.APPROVAL and "destructive" in gone.reason


def test_an_interview_over_imported_mcp_tools_applies_the_hinted_policies(
    tmp_path: Path,
) -> None:
    draft = open_draft(tmp_path / "desk", new=True, description="Look after tickets.")
    session = Session(draft, DefaultsPrompter(), description="Look after tickets.")
    imported = tools_from_mcp(
        [
            listed("frobnicate", {"readOnlyHint": True}),
            listed("purge", {"readOnlyHint": True}),
            listed("get_ticket", {"destructiveHint": True}),
        ],
        "tickets",
    )
    add_tools(session, imported)
    add_tools(session, tools_from_mcp([listed("frobnicate")], "other"))  # taken: left out
    assert "left out: tool frobnicate: the skill has a tool of that name" in session.notes
    interview(session)
    path = finish(session, confirm=False)
    assert path is not None
    assert load_paths([path.parent]).report.error_count == 0
    data = YAML(typ="safe").load(path)
    assert {a["tool_id"] for a in data["policy"]["approvals"]} == {"purge", "get_ticket"}
    assert data["tools"][0]["executor"]["server"] == "tickets"
