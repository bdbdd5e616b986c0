"""``skillwire test``: command scenarios, ``scenarios[]`` and ``tests:`` dry runs, the
table, JUnit XML and the exit code; every expectation can fail, and a test cannot get
past what it claims to check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from skillwire.cli_app import app
from skillwire.skilltests import CaseOutcome, SuiteReport, run_suite

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
REFUND_DIR = EXAMPLES / "refund_support"


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def refund_with(tmp_path: Path, tests_yaml: str, *, extra: str = "") -> Path:
    """A copy of the refund example whose ``tests:`` section is ``tests_yaml``."""
    folder = tmp_path / "refund"
    shutil.copytree(REFUND_DIR, folder)
    text = (REFUND_DIR / "domain.yaml").read_text(encoding="utf-8")
    base = text[: text.index("\n# Dry runs that")]
    (folder / "domain.yaml").write_text(base + "\n" + extra + "tests:\n" + tests_yaml)
    return folder


def outcomes(report: SuiteReport) -> dict[str, CaseOutcome]:
    return {o.case: o for o in report.outcomes}


def only(report: SuiteReport) -> CaseOutcome:
    assert len(report.outcomes) == 1, report.outcomes
    return report.outcomes[0]


def test_the_examples_pass_offline() -> None:
    report = run_suite([EXAMPLES])
    assert not report.failed, [o for o in report.outcomes if o.verdict == "fail"]
    kinds = {(o.skill, o.kind) for o in report.outcomes}
    assert ("refund-support", "dry-run") in kinds
    assert ("refund-support-pkg", "dry-run") in kinds
    assert ("refund-support-pkg", "command") in kinds
    assert report.count("manual") == 2  # the package's manual scenarios, listed not run
    assert report.count("pass") >= 8


SMALL = """\
  - id: t
    message: "Please refund 120 for order ORD-12345"
    context: {user_id: alice}
    expect:
"""


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ("      status: paused\n", "expected status paused, got completed"),
        ("      outcome: BLOCKED\n", "expected outcome BLOCKED, got SUCCESS"),
        (
            "      tools: [check_eligibility, verify_identity, process_refund]\n",
            "to run in this order",
        ),
        ("      tools: [verify_identity, check_eligibility]\n", "to run in this order"),
        ("      not_called: [process_refund]\n", "process_refund ran, and must not"),
        ("      blocked: [process_refund]\n", "expected the gate to block process_refund"),
        ("      fields: {status: pending}\n", "reply field 'status': expected 'pending'"),
        ("      fields: {refund_total: 1}\n", "expected reply field 'refund_total'"),
        ("      reply_contains: [zebra]\n", "the reply does not contain 'zebra'"),
    ],
)
def test_every_expectation_can_fail(tmp_path: Path, expect: str, message: str) -> None:
    outcome = only(run_suite([refund_with(tmp_path, SMALL + expect)]))
    assert outcome.verdict == "fail"
    assert any(message in d for d in outcome.details), outcome.details


def test_the_same_expectations_pass_when_true(tmp_path: Path) -> None:
    expect = (
        "      status: completed\n      outcome: SUCCESS\n"
        "      tools: [verify_identity, check_eligibility, process_refund]\n"
        "      not_called: [delete_customer_record]\n"
        "      fields: {order_id: ORD-12345, status: refunded}\n"
    )
    assert only(run_suite([refund_with(tmp_path, SMALL + expect)])).verdict == "pass"


def test_a_number_field_is_not_a_boolean(tmp_path: Path) -> None:
    """``_equal``: JSON equality, so ``true`` never equals 1."""
    from skillwire.engine.dry_run import _equal

    assert _equal(750, 750.0) and not _equal(True, 1) and not _equal(1, True)
    assert _equal({"a": [1, "x"]}, {"a": [1.0, "x"]}) and not _equal({"a": 1}, {"a": 1, "b": 2})


LARGE = """\
  - id: t
    message: "Please refund 750 for order ORD-12345"
    context: {user_id: alice}
"""


@pytest.mark.parametrize(
    ("pauses", "message"),
    [
        ("", "the job paused (APPROVAL_REQUIRED) and the test lists no pauses"),
        (
            "    pauses:\n      - {outcome: USER_ACTION_REQUIRED, input: {order_id: ORD-12345}}\n",
            "pause 1: expected USER_ACTION_REQUIRED, got APPROVAL_REQUIRED",
        ),
        (
            "    pauses:\n      - {outcome: APPROVAL_REQUIRED, tool: check_eligibility, "
            "approve: supervisor}\n",
            "expected to wait on check_eligibility, waits on process_refund",
        ),
        (
            "    pauses:\n      - {outcome: APPROVAL_REQUIRED, approve: supervisor, by: sam}\n"
            "      - {outcome: APPROVAL_REQUIRED, approve: supervisor, by: sam}\n",
            "expected pause 2 (APPROVAL_REQUIRED), but the job is completed SUCCESS",
        ),
        # the wrong role: the runtime refuses, the test fails with its reason
        (
            "    pauses:\n      - {outcome: APPROVAL_REQUIRED, approve: intern, by: sam}\n",
            "ForbiddenError",
        ),
        # the job's owner approving their own refund is refused too
        (
            "    pauses:\n      - {outcome: APPROVAL_REQUIRED, approve: supervisor, by: alice}\n",
            "ForbiddenError",
        ),
    ],
)
def test_pauses_are_checked_in_order(tmp_path: Path, pauses: str, message: str) -> None:
    outcome = only(run_suite([refund_with(tmp_path, LARGE + pauses)]))
    assert outcome.verdict == "fail"
    assert any(message in d for d in outcome.details), outcome.details


def test_a_test_may_end_on_a_pause(tmp_path: Path) -> None:
    tests = LARGE + (
        "    pauses:\n      - {outcome: APPROVAL_REQUIRED, tool: process_refund}\n"
        "    expect: {status: paused, outcome: APPROVAL_REQUIRED, not_called: [process_refund]}\n"
    )
    assert only(run_suite([refund_with(tmp_path, tests)])).verdict == "pass"


def test_a_misspelled_expectation_is_a_load_error_not_a_passing_test(tmp_path: Path) -> None:
    folder = refund_with(tmp_path, SMALL + "      outcom: BLOCKED\n")
    outcome = only(run_suite([folder]))
    assert (outcome.kind, outcome.verdict) == ("load", "fail")
    assert any("unknown key 'outcom'" in d for d in outcome.details), outcome.details
    assert "domain.yaml:" in outcome.location


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("    model: scripted\n", "model: scripted needs a script"),
        ("    script: x.yaml\n", "write model: scripted"),
        (
            "    pauses: [{outcome: APPROVAL_REQUIRED, approve: supervisor, deny: supervisor}]\n",
            "not approve and deny",
        ),
    ],
)
def test_a_test_that_cannot_run_is_a_load_error(tmp_path: Path, entry: str, message: str) -> None:
    outcome = only(run_suite([refund_with(tmp_path, LARGE + entry)]))
    assert (outcome.kind, outcome.verdict) == ("load", "fail")
    assert any(message in d for d in outcome.details), outcome.details


def test_a_script_file_outside_the_skill_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.yaml"
    shutil.copy(REFUND_DIR / "scripts" / "small_refund.yaml", outside)
    tests = SMALL.replace("    expect:\n", "    model: scripted\n    script: ../elsewhere.yaml\n")
    outcome = only(run_suite([refund_with(tmp_path, tests + "    expect: {}\n")]))
    assert outcome.verdict == "fail"
    assert any("outside the skill's folder" in d for d in outcome.details), outcome.details


def _script_replies() -> list[dict[str, Any]]:
    from ruamel.yaml import YAML

    data = YAML(typ="safe").load((REFUND_DIR / "scripts" / "small_refund.yaml").read_text())
    return list(data["replies"])


def test_inline_scripts_run_and_leftover_replies_fail(tmp_path: Path) -> None:
    replies = _script_replies()
    ok = {
        "id": "ok",
        "message": "Please refund 120 for order ORD-12345",
        "context": {"user_id": "alice"},
        "model": "scripted",
        "script": replies,
        "expect": {"outcome": "SUCCESS"},
    }
    extra = dict(ok, id="extra", script=[*replies, {"stage": "planner", "text": "again"}])
    tests = "".join(f"  - {json.dumps(t)}\n" for t in (ok, extra))
    found = outcomes(run_suite([refund_with(tmp_path, tests)]))
    assert found["ok"].verdict == "pass", found["ok"].details
    assert found["extra"].verdict == "fail"
    assert any("never asked for" in d for d in found["extra"].details)


def test_a_script_that_does_not_fit_fails_the_test(tmp_path: Path) -> None:
    replies = _script_replies()[1:]  # no intent reply: the first call meets a planner reply
    test = {
        "id": "bad",
        "message": "Please refund 120 for order ORD-12345",
        "context": {"user_id": "alice"},
        "model": "scripted",
        "script": replies,
    }
    outcome = only(run_suite([refund_with(tmp_path, f"  - {json.dumps(test)}\n")]))
    assert outcome.verdict == "fail"
    assert any("the script does not fit" in d for d in outcome.details), outcome.details
