"""The tools example (a shell, an HTTP and an MCP tool) through ``skillwire call`` and
inside a job on the scripted model, with the operator's configuration."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.tools.http_server import Seen, serve
from typer.testing import CliRunner

from skillwire.cli_app import app

pytest.importorskip("mcp")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tools_demo"
TOKEN = "inventory-token-0123456789"


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Seen]]:
    """The example copied, its service started, its operator configuration pointing at
    the service and at this python for the MCP server."""
    folder = tmp_path / "tools_demo"
    shutil.copytree(EXAMPLE, folder)
    with serve() as (port, seen):
        tools = folder / "tools.json"
        tools.write_text(tools.read_text().replace("127.0.0.1:8080", f"127.0.0.1:{port}"))
        (folder / "skillwire.toml").write_text(
            f'[runtime]\nbase_policy = "operator-policy.json"\n'
            f'[tools]\nhttp_allowed_hosts = ["127.0.0.1:{port}"]\n'
            f"[tools.mcp_servers.demo]\n"
            f'command = [{json.dumps(sys.executable)}, "demo_mcp_server.py"]\n'
            '[credentials]\nenv = ["INVENTORY_TOKEN"]\n'
        )
        monkeypatch.setenv("SKILLWIRE_CONFIG", str(folder / "skillwire.toml"))
        monkeypatch.setenv("INVENTORY_TOKEN", TOKEN)
        yield folder, seen


def test_check_says_the_operator_allowed_everything(demo: tuple[Path, Seen]) -> None:
    folder, _ = demo
    result = CliRunner().invoke(app, ["check", str(folder), "--json"])
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and data["warnings"] == 0, data


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("list_files", {"dir": "/usr/share"}, "stdout"),
        ("get_item", {"id": "7"}, {"item": "7"}),
        ("add", {"a": 2, "b": 40}, {"result": 42}),
    ],
)
def test_each_tool_through_skillwire_call(
    demo: tuple[Path, Seen], tool: str, args: dict[str, object], expected: object
) -> None:
    folder, seen = demo
    result = CliRunner().invoke(
        app, ["call", str(folder), tool, "--args", json.dumps(args), "--json"]
    )
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.stdout)["outcome"]
    if tool == "get_item":
        assert outcome["result"]["body"] == expected
        assert seen.requests[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"
    elif tool == "add":
        assert outcome["result"] == expected
    else:
        assert "doc" in outcome["result"]["stdout"].split()


def test_a_job_runs_all_three_tools(demo: tuple[Path, Seen], tmp_path: Path) -> None:
    folder, seen = demo
    calls = [
        ("t1", "list_files", {"dir": "/usr/share"}),
        ("t2", "get_item", {"id": "9"}),
        ("t3", "add", {"a": 1, "b": 2}),
    ]
    script = [
        {"stage": "intent", "json": {"intent": "intent_tools", "entities": {}}},
        *(
            {
                "stage": "planner",
                "tool_call": {"name": f"tools-demo__{name}", "id": cid, "arguments": args},
            }
            for cid, name, args in calls
        ),
        {
            "stage": "planner",
            "tool_call": {
                "name": "final_answer",
                "id": "f1",
                "arguments": {"answer": "done", "fields": {}},
            },
        },
        {"stage": "gate", "json": {"passed": True, "reasons": []}},
    ]
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script))
    result = CliRunner().invoke(
        app,
        ["run", str(folder), "-m", "use the tools", "--model", f"scripted:{script_file}",
         "--db", str(tmp_path / "jobs.db"), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    job = json.loads(result.stdout)
    assert job["status"] == "completed", job["events"]
    finished = [e for e in job["events"] if e["kind"] == "tool_finished"]
    assert [e["data"]["tool"] for e in finished] == [f"tools-demo.{n}" for _, n, _ in calls]
    assert finished[1]["data"]["result"]["body"] == {"item": "9"}
    assert finished[2]["data"]["result"] == {"result": 3}
    assert TOKEN not in result.output
    assert [r["path"] for r in seen.requests] == ["/items/9"]
    # the MCP server the job started is gone with the runtime
    assert _servers_in(folder) == []


def _servers_in(folder: Path) -> list[int]:
    """The demo MCP server processes running in ``folder``."""
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=False)
    found = []
    for line in ps.stdout.splitlines()[1:]:
        pid, _, args = line.strip().partition(" ")
        if "demo_mcp_server.py" in args:
            try:
                if Path(f"/proc/{pid}/cwd").resolve() == folder.resolve():
                    found.append(int(pid))
            except OSError:
                continue
    return found
