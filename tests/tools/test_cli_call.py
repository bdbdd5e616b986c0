"""``skillwire call``: one call through the gate and the executor, outside a job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.tools.helpers import shell_tool, write_base, write_package
from typer.testing import CliRunner, Result

from skillwire.cli_app import app

GREET = shell_tool(
    "greet",
    "python3",
    [
        "-c",
        "import sys\nif sys.argv[2] == 'fail': sys.exit('no luck')\n"
        "print(sys.argv[1] + ' ' + sys.argv[2])",
        "{{action}}",
        "{{name}}",
    ],
    {"action": {"type": "string"}, "name": {"type": "string"}},
    allowedActions=["hello", "shout"],
)
GUARD = {"toolPolicies": {"tools-demo.greet": {"requireConfirmationFor": ["shout"]}}}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_package(tmp_path, [GREET], guardrails=GUARD)


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    return write_base(tmp_path, {"shell": {"allowedPrefixes": ["python3 -c"]}})


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(app, ["call", *(str(a) for a in args)])


def test_an_allowed_call_runs(folder: Path, policy: Path) -> None:
    result = cli(
        folder, "greet", "--args", '{"action": "hello", "name": "ann"}', "--policy", policy
    )
    assert result.exit_code == 0, result.output
    assert '"stdout": "hello ann\\n"' in result.stdout


def test_a_blocked_call_exits_1_with_the_reason(folder: Path) -> None:
    result = cli(folder, "greet", "--args", '{"action": "hello", "name": "ann"}')
    assert result.exit_code == 1, result.output
    assert "blocked: greet" in result.stdout
    assert "allowed shell prefixes (none)" in result.stdout


def test_an_approval_exits_3_unless_as_names_the_approver(folder: Path, policy: Path) -> None:
    args = ["--args", '{"action": "shout", "name": "ann"}', "--policy", policy]
    asked = cli(folder, "greet", *args)
    assert asked.exit_code == 3, asked.output
    assert "needs approval by supervisor" in asked.stdout
    assert "hello" not in asked.stdout
    assert cli(folder, "greet", *args, "--as", "clerk").exit_code == 3
    approved = cli(folder, "greet", *args, "--as", "supervisor", "--json")
    assert approved.exit_code == 0, approved.output
    data = json.loads(approved.stdout)
    assert data["decision"] == "allow" and data["approved_by"] == "supervisor"
    assert data["outcome"]["result"]["stdout"] == "shout ann\n"


def test_a_failing_tool_exits_4(folder: Path, policy: Path) -> None:
    result = cli(
        folder, "greet", "--args", '{"action": "hello", "name": "fail"}', "--policy", policy
    )
    assert result.exit_code == 4, result.output
    assert "failed: python3" in result.stdout or "exited with status 1" in result.stdout


def test_json_output_for_a_block(folder: Path) -> None:
    result = cli(folder, "greet", "--args", '{"action": "nope", "name": "a"}', "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["decision"] == "block" and data["exit_code"] == 1
    assert any("allowed actions" in r["message"] for r in data["reasons"])


@pytest.mark.parametrize("bad", ["{", "[1]", '"x"'])
def test_bad_args_are_a_usage_error(folder: Path, bad: str) -> None:
    result = cli(folder, "greet", "--args", bad)
    assert result.exit_code == 2
    assert "--args" in result.stderr
    assert "Traceback" not in result.output


def test_an_unknown_tool_is_blocked(folder: Path) -> None:
    result = cli(folder, "nope", "--args", "{}")
    assert result.exit_code == 1
    assert "no tool named 'nope'" in result.stdout


def test_a_missing_policy_file_is_a_usage_error(folder: Path, tmp_path: Path) -> None:
    result = cli(folder, "greet", "--policy", tmp_path / "absent.json")
    assert result.exit_code == 2
    assert "no base policy file" in result.stderr
