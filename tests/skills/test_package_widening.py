"""A widening a package asks for and the restrictive merge drops: a warning of plain
``skillwire check``, one per value, at the line that asks (FORMATS.md section 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import PackageEdit
from typer.testing import CliRunner

from skillwire.cli_app import app
from skillwire.policy.access import merge_access
from skillwire.skills import BasePolicy, load_paths
from skillwire.skills.package_rules import check_widenings


def _widen(data: Any) -> None:
    data["shell"]["allowedPrefixes"] = ["git", "GIT", "git "]
    data["filesystem"] = {"allowedWriteRoots": ["/etc"], "allowedReadRoots": ["/home"]}
    data["toolAccessPlan"]["operations"] += [
        {
            "op": "append_unique_guardrail_list",
            "path": "guardrails.shell.allowedPrefixes",
            "values": ["bash"],
        },
        {
            "op": "append_unique_guardrail_list",
            "path": "guardrails.filesystem.allowedWriteRoots",
            "values": ["/var/data"],
        },
    ]


def _widenings(refund_pkg: Path) -> list[Any]:
    report = load_paths([refund_pkg]).report.skills[0]
    return [i for i in report.warnings if i.code == "widening-dropped"]


def test_each_dropped_value_is_a_warning_at_its_line(
    refund_pkg: Path, edit_package: PackageEdit
) -> None:
    edit_package("guardrails.json", _widen)
    found = _widenings(refund_pkg)
    named = [i.message.split("'", 2)[1] for i in found]
    assert named == ["git", "GIT", "git ", "/home", "/etc", "bash", "/var/data"]
    text = (refund_pkg / "guardrails.json").read_text().splitlines()
    for value, issue in zip(named, found, strict=True):
        assert issue.location.file.endswith("guardrails.json")
        assert issue.location.line is not None
        assert json.dumps(value) in text[issue.location.line - 1]
        assert "not applied" in issue.message and "skillwire's default" in issue.message
    assert "base policy" in found[0].hint


def test_deny_lists_and_the_example_add_no_warning(
    refund_pkg: Path, edit_package: PackageEdit
) -> None:
    assert _widenings(refund_pkg) == []
    edit_package(
        "guardrails.json",
        lambda d: d["toolAccessPlan"]["operations"].append(
            {
                "op": "append_unique_guardrail_list",
                "path": "guardrails.shell.denyPrefixes",
                "values": ["sudo"],
            }
        ),
    )
    assert _widenings(refund_pkg) == []


def test_plain_check_shows_the_warnings_and_strict_fails(
    refund_pkg: Path, edit_package: PackageEdit
) -> None:
    edit_package("guardrails.json", _widen)
    plain = CliRunner().invoke(app, ["check", str(refund_pkg)])
    assert plain.exit_code == 0, plain.output
    out = " ".join(plain.output.split())
    for value in ("'git'", "'bash'", "'/etc'", "'/var/data'"):
        assert value in out
    as_json = CliRunner().invoke(app, ["check", "--json", str(refund_pkg)])
    issues = [i for f in json.loads(as_json.stdout)["skills"][0]["files"] for i in f["issues"]]
    assert sum(i["code"] == "widening-dropped" for i in issues) == 7
    assert CliRunner().invoke(app, ["check", "--strict", str(refund_pkg)]).exit_code == 1


def test_the_report_names_exactly_what_the_merge_drops(
    refund_pkg: Path, edit_package: PackageEdit
) -> None:
    """Against an operator base that allows some: the values warned about are exactly
    the values the merged policy lacks (a near miss such as 'GIT' or 'git ' included)."""
    edit_package("guardrails.json", _widen)
    skill = load_paths([refund_pkg]).skills["refund-support-pkg"]
    base = BasePolicy.model_validate(
        {"shell": {"allowedPrefixes": ["git"]}, "filesystem": {"allowedWriteRoots": ["/etc"]}}
    )
    assert skill.access is not None
    warned = {i.message.split("'", 2)[1] for i in check_widenings(skill.access, base, skill.locate)}
    assert warned == {"GIT", "git ", "bash", "/home", "/var/data"}
    merged = merge_access(skill, base)
    asked = {"git", "GIT", "git ", "bash", "/home", "/etc", "/var/data"}
    kept = set(merged.shell_allowed) | set(merged.write_roots) | set(merged.read_roots)
    assert asked - kept == warned
