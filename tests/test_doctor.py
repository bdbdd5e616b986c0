"""``skillwire doctor``: prerequisites' checks run as argv (never a shell), credentials
without showing them, executors; exit 1 only when a required item is missing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from skillwire.assembly import make_executors
from skillwire.cli_app import app
from skillwire.core.errors import UsageError
from skillwire.doctor import Check, DoctorReport, command_argv, diagnose

PY = sys.executable


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def with_items(refund_pkg: Path, *items: dict[str, Any]) -> Path:
    path = refund_pkg / "prerequisites.json"
    data = json.loads(path.read_text())
    data["items"] = list(items)
    path.write_text(json.dumps(data))
    return refund_pkg


def item(ident: str, command: str | None, *, required: bool = True) -> dict[str, Any]:
    how = (
        {"kind": "command", "command": command}
        if command
        else {"kind": "manual", "instructions": "Look at the dashboard."}
    )
    return {
        "id": ident,
        "required": required,
        "howToCheck": how,
        "expected": "it works",
        "howToFix": "install it",
    }


def checks(report: DoctorReport, kind: str) -> dict[str, Check]:
    return {c.item: c for c in report.checks if c.kind == kind}


def test_commands_pass_fail_and_manual_items_are_listed(refund_pkg: Path) -> None:
    folder = with_items(
        refund_pkg,
        item("ok", f"{PY} -c \"import sys; print('3.11 here'); sys.exit(0)\""),
        item("fails", f"{PY} -c 'raise SystemExit(3)'"),
        item("absent", "no-such-program-skillwire --version"),
        item("by-hand", None),
    )
    found = checks(diagnose([folder], environ={}), "prerequisite")
    assert found["ok"].state == "ok" and "3.11 here" in found["ok"].detail
    assert found["fails"].state == "missing" and "exit code 3" in found["fails"].detail
    assert found["fails"].how_to_fix == "install it" and found["fails"].expected == "it works"
    assert found["absent"].state == "missing" and "no program" in found["absent"].detail
    assert found["by-hand"].state == "manual"
    assert found["by-hand"].detail == "Look at the dashboard."


@pytest.mark.parametrize(
    "command",
    [
        "echo hi | tee {m}",
        "echo hi; touch {m}",
        "true && touch {m}",
        "echo hi > {m}",
        "echo $(touch {m})",
        "echo `touch {m}`",
    ],
)
def test_a_check_that_needs_a_shell_is_refused_not_run(
    refund_pkg: Path, tmp_path: Path, command: str
) -> None:
    marker = tmp_path / "pwned"
    folder = with_items(refund_pkg, item("sneaky", command.format(m=marker)))
    found = checks(diagnose([folder], environ={}), "prerequisite")["sneaky"]
    assert found.state == "missing" and "needs a shell" in found.detail
    assert not marker.exists()


def test_quoted_operators_are_plain_text() -> None:
    assert command_argv("grep -q 'a|b' file") == ["grep", "-q", "a|b", "file"]
    with pytest.raises(UsageError, match="closing quotation"):
        command_argv("echo 'open")
    with pytest.raises(UsageError, match="empty"):
        command_argv("   ")


def test_a_check_that_hangs_is_stopped(refund_pkg: Path) -> None:
    folder = with_items(refund_pkg, item("hangs", f"{PY} -c 'while True: pass'"))
    found = checks(diagnose([folder], timeout=0.5, environ={}), "prerequisite")["hangs"]
    assert found.state == "missing" and "did not finish within 0.5 s" in found.detail


def test_credentials_are_checked_and_never_shown(refund_pkg: Path) -> None:
    path = refund_pkg / "credentials.json"
    data = json.loads(path.read_text())
    data["credentials"][0]["required"] = True
    data["credentials"][0]["validation"] = {"minLength": 8, "pattern": "^tok_"}
    path.write_text(json.dumps(data))
    secret = "tok_s3cr3t-value"
    ok = checks(diagnose([refund_pkg], environ={"REFUND_API_TOKEN": secret}), "credential")
    assert ok["REFUND_API_TOKEN"].state == "ok"
    assert secret not in repr(ok)
    short = checks(diagnose([refund_pkg], environ={"REFUND_API_TOKEN": "tok_1"}), "credential")
    assert "shorter than 8" in short["REFUND_API_TOKEN"].detail
    wrong = checks(diagnose([refund_pkg], environ={"REFUND_API_TOKEN": "xyz_12345"}), "credential")
    assert "pattern" in wrong["REFUND_API_TOKEN"].detail and "xyz" not in repr(wrong)
    missing = diagnose([refund_pkg], environ={})
    assert missing.failed  # a required credential is not set
    result = cli("doctor", refund_pkg)
    assert secret not in result.output


def test_a_tool_whose_program_is_absent_is_missing(refund_pkg: Path) -> None:
    path = refund_pkg / "tools.json"
    data = json.loads(path.read_text())
    data["tools"][0]["executor"] = {
        "type": "shell_command",
        "command": "no-such-program-x",
        "argsTemplate": ["{{order_id}}"],
    }
    path.write_text(json.dumps(data))
    report = diagnose([refund_pkg], environ={})
    tool = next(c for c in report.checks if c.kind == "tool" and "verify_identity" in c.item)
    assert tool.state == "missing"
    assert report.failed


def test_required_adapters_are_checked(refund_pkg: Path) -> None:
    path = refund_pkg / "skill.json"
    data = json.loads(path.read_text())
    data["runtime"]["requiredAdapters"] = ["simulate", "mcp"]
    path.write_text(json.dumps(data))
    found = checks(diagnose([refund_pkg], environ={}), "adapter")
    assert found["simulate"].state == "ok"
    here = "mcp" in make_executors().by_type  # this installation's executors decide
    assert found["mcp"].state == ("ok" if here else "missing")
    data["runtime"]["requiredAdapters"] = ["teleport"]  # no executor type at all
    path.write_text(json.dumps(data))
    report = diagnose([refund_pkg], environ={})
    assert report.failed and checks(report, "load")["skill loads"].state == "missing"


def test_cli_exit_codes(refund_pkg: Path) -> None:
    with_items(
        refund_pkg,
        item("optional", f"{PY} -c 'raise SystemExit(1)'", required=False),
        item("[bold]name[/bold]", None),
    )
    fine = cli("doctor", refund_pkg)
    assert fine.exit_code == 0, fine.output
    assert "[bold]name[/bold]" in fine.stdout  # never read as markup
    with_items(refund_pkg, item("needed", f"{PY} -c 'raise SystemExit(1)'"))
    assert cli("doctor", refund_pkg).exit_code == 1
    (refund_pkg / "tools.json").write_text("{")
    broken = cli("doctor", refund_pkg)
    assert broken.exit_code == 1 and "skill loads" in broken.stdout
    assert cli("doctor", refund_pkg, "--timeout", "0").exit_code == 2


def test_the_example_package_is_healthy() -> None:
    root = Path(__file__).resolve().parent.parent / "examples"
    report = diagnose([root], environ={})
    assert not report.failed, [c for c in report.checks if c.state == "missing"]
    assert checks(report, "prerequisite")["python3"].state == "ok"
