"""``skillwire test``: tests.json commands (argv, never a shell, timeout, allowFailure),
real files' ``scenarios[]``, JUnit XML and the command line's exit codes."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from typer.testing import CliRunner, Result

from skillwire.cli_app import app
from skillwire.skills import load_skill
from skillwire.skills.suite import DryRunCase, ManualCase, cases_of
from skillwire.skilltests import CaseOutcome, SuiteReport, junit_xml, run_suite

ROOT = Path(__file__).resolve().parent.parent
REFUND_DIR = ROOT / "examples" / "refund_support"


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def by_case(report: SuiteReport) -> dict[str, CaseOutcome]:
    return {o.case: o for o in report.outcomes}


def command_scenarios(refund_pkg: Path, *scenarios: dict[str, Any]) -> Path:
    """The package copy with these ``tests.json`` scenarios (and no dry runs)."""
    tests = json.loads((refund_pkg / "tests.json").read_text())
    tests["scenarios"] = list(scenarios)
    (refund_pkg / "tests.json").write_text(json.dumps(tests))
    manifest = json.loads((refund_pkg / "skill.json").read_text())
    manifest.pop("tests")
    (refund_pkg / "skill.json").write_text(json.dumps(manifest))
    return refund_pkg


def scenario(ident: str, *commands: dict[str, Any]) -> dict[str, Any]:
    return {"id": ident, "type": "command", "commands": list(commands), "expected": ["ok"]}


PY = sys.executable


def test_commands_pass_fail_and_may_allow_failure(refund_pkg: Path) -> None:
    folder = command_scenarios(
        refund_pkg,
        scenario("ok", {"program": PY, "args": ["-c", "pass"]}),
        scenario("fails", {"program": PY, "args": ["-c", "import sys; sys.exit('broken: 3')"]}),
        scenario(
            "allowed", {"program": PY, "args": ["-c", "raise SystemExit(4)"], "allowFailure": True}
        ),
        scenario(
            "second-fails",
            {"program": PY, "args": ["-c", "pass"]},
            {"program": PY, "args": ["-c", "raise SystemExit(5)"]},
        ),
        scenario("missing", {"program": "no-such-program-skillwire"}),
    )
    found = by_case(run_suite([folder]))
    assert found["ok"].verdict == "pass"
    assert found["allowed"].verdict == "pass"
    assert found["fails"].verdict == "fail"
    assert "exit code 1: broken: 3" in found["fails"].details[0]
    assert found["second-fails"].verdict == "fail"
    assert "exit code 5" in found["second-fails"].details[0]
    assert "no program 'no-such-program-skillwire'" in found["missing"].details[0]


def test_commands_run_in_the_skill_folder(refund_pkg: Path) -> None:
    check = "import pathlib, sys; sys.exit(0 if pathlib.Path('tools.json').is_file() else 9)"
    folder = command_scenarios(refund_pkg, scenario("here", {"program": PY, "args": ["-c", check]}))
    assert by_case(run_suite([folder]))["here"].verdict == "pass"


def test_a_command_is_never_read_by_a_shell(refund_pkg: Path, tmp_path: Path) -> None:
    """Shell syntax in a program or an argument is text: nothing it names happens."""
    marker = tmp_path / "pwned"
    folder = command_scenarios(
        refund_pkg,
        scenario("program", {"program": f"true; touch {marker}"}),
        scenario(
            "arg",
            {"program": PY, "args": ["-c", "pass", f"$(touch {marker})", f"; touch {marker}"]},
        ),
    )
    found = by_case(run_suite([folder]))
    assert found["program"].verdict == "fail"
    assert found["arg"].verdict == "pass"
    assert not marker.exists()


def test_a_command_that_hangs_is_stopped(refund_pkg: Path) -> None:
    folder = command_scenarios(
        refund_pkg, scenario("hangs", {"program": PY, "args": ["-c", "while True: pass"]})
    )
    outcome = by_case(run_suite([folder], timeout=0.5))["hangs"]
    assert outcome.verdict == "fail"
    assert "did not finish within 0.5 s" in outcome.details[0]


def test_a_command_gets_no_standard_input(refund_pkg: Path) -> None:
    """Standard input is closed: a command that reads it does not wait for a person."""
    read = "import sys; sys.exit(0 if sys.stdin.read() == '' else 8)"
    folder = command_scenarios(refund_pkg, scenario("stdin", {"program": PY, "args": ["-c", read]}))
    assert by_case(run_suite([folder], timeout=20))["stdin"].verdict == "pass"


def real_file(tmp_path: Path, scenarios: list[dict[str, Any]]) -> Path:
    folder = tmp_path / "real"
    shutil.copytree(REFUND_DIR, folder)
    text = (REFUND_DIR / "domain.yaml").read_text(encoding="utf-8")
    base = text[: text.index("\n# Dry runs that")]
    (folder / "domain.yaml").write_text(base + "\nscenarios: " + json.dumps(scenarios) + "\n")
    return folder


def test_real_scenarios_run_when_a_step_gives_the_users_words(tmp_path: Path) -> None:
    scenarios = [
        {
            "id": "large",
            "title": "Large refund",
            "description": "needs approval",
            "steps": ["User: 'Please refund 750 for order ORD-12345'", "Agent verifies"],
            "expected_outcome": "The job pauses with APPROVAL_REQUIRED",
        },
        {
            "id": "wrong",
            "steps": ["Customer: Please refund 120 for order ORD-12345"],
            "expected_outcome": "APPROVAL_REQUIRED",
        },
        {
            "id": "prose",
            "steps": ["User: Please refund 120 for order ORD-12345"],
            "expected_outcome": "The customer is happy",
        },
        {"id": "manual", "steps": ["Call the customer back"], "expected_outcome": "Resolved"},
    ]
    folder = real_file(tmp_path, scenarios)
    kinds = {c.id: type(c) for c in cases_of(load_skill(folder / "domain.yaml"))}
    assert kinds == {
        "large": DryRunCase,
        "wrong": DryRunCase,
        "prose": DryRunCase,
        "manual": ManualCase,
    }
    found = by_case(run_suite([folder]))
    assert found["large"].verdict == "pass", found["large"].details
    assert found["wrong"].verdict == "fail"
    assert "expected outcome APPROVAL_REQUIRED, got SUCCESS" in found["wrong"].details
    assert found["prose"].verdict == "pass"
    assert "not checked: The customer is happy" in found["prose"].details
    assert found["manual"].verdict == "manual"


def test_junit_xml_is_valid_and_holds_any_output(refund_pkg: Path) -> None:
    noisy = "import sys; sys.stderr.write('bad \\x00\\x1b[31m <&> ]]>'); sys.exit(2)"
    folder = command_scenarios(
        refund_pkg,
        scenario("noisy", {"program": PY, "args": ["-c", noisy]}),
        scenario("ok", {"program": PY, "args": ["-c", "pass"]}),
        {"id": "by-hand", "type": "manual", "steps": ["look"], "expected": ["seen"]},
    )
    root = ElementTree.fromstring(junit_xml(run_suite([folder])))
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    failure = suite.find("testcase[@name='noisy']/failure")
    assert failure is not None and failure.text is not None
    assert "<&> ]]>" in failure.text and "\x00" not in failure.text
    assert suite.find("testcase[@name='by-hand']/skipped") is not None


def test_cli_exit_codes_table_and_junit(refund_pkg: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.xml"
    good = cli("test", refund_pkg, "--junit", out)
    assert good.exit_code == 0, good.output
    assert "pkg-small-refund" in good.stdout and "passed, 0 failed" in good.stdout
    assert ElementTree.parse(out).getroot().tag == "testsuites"
    command_scenarios(
        refund_pkg, scenario("[red]x[/red]", {"program": PY, "args": ["-c", "exit(3)"]})
    )
    bad = cli("test", refund_pkg)
    assert bad.exit_code == 1, bad.output
    assert "[red]x[/red]" in bad.stdout  # user text is never read as markup
    assert "0 passed, 1 failed" in bad.stdout


def test_cli_a_broken_skill_fails_and_an_unknown_model_is_a_usage_error(
    refund_pkg: Path, tmp_path: Path
) -> None:
    (refund_pkg / "tools.json").write_text("{")
    broken = cli("test", refund_pkg)
    assert broken.exit_code == 1 and "load" in broken.stdout
    fine = tmp_path / "fine"
    shutil.copytree(REFUND_DIR, fine)
    unknown = cli("test", fine, "--model", "no-such-model")
    assert unknown.exit_code == 1  # each dry run fails, saying why
    assert "not configured" in unknown.stdout
    assert "Traceback" not in unknown.output


def test_tests_of_a_package_manifest_are_located_in_skill_json(
    edit_package: Callable[[str, Callable[[Any], None]], None], refund_pkg: Path
) -> None:
    edit_package("skill.json", lambda d: d["tests"][0]["expect"].update(outcome="BLOCKED"))
    found = by_case(run_suite([refund_pkg]))
    assert found["pkg-small-refund"].verdict == "fail"
    assert "skill.json:" in found["pkg-small-refund"].location
    assert "tests.json:" in found["files-are-json"].location
