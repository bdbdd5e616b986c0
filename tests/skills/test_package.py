"""The JSON package: loading, namespacing, and spec 003's nine validation rules."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.conftest import PackageEdit
from tests.policy.helpers import with_required

from skillwire.skills import load_paths, load_skill


def codes(path: Path) -> list[str]:
    return [i.code for r in load_paths([path]).report.skills for i in r.errors]


def test_example_package_loads(refund_pkg: Path) -> None:
    skill = load_skill(refund_pkg)
    assert skill.format == "package" and skill.id == "refund-support-pkg"
    assert [t.name for t in skill.tools][:2] == [
        "refund-support-pkg.verify_identity",
        "refund-support-pkg.check_eligibility",
    ]
    assert skill.tool("process_refund") is skill.tool("refund-support-pkg.process_refund")
    assert skill.prompt.startswith("# Refund support")
    assert skill.credentials is not None and skill.tests_file is not None
    report = load_paths([refund_pkg]).report.skills[0]
    assert set(report.files) >= {
        f"{refund_pkg}/skill.json",
        f"{refund_pkg}/tools.json",
        f"{refund_pkg}/tests.json",
    }
    assert report.status == "ok", [str(i) for i in report.issues]


def test_tool_locations_point_into_tools_json(refund_pkg: Path) -> None:
    skill = load_skill(refund_pkg)
    loc = skill.locate(("tools", 2, "policy", "condition"))
    assert loc.file.endswith("tools.json")
    assert '"condition"' in (refund_pkg / "tools.json").read_text().splitlines()[loc.line - 1]


def test_rule1_unknown_schema_version(refund_pkg: Path, edit_package: PackageEdit) -> None:
    edit_package("tests.json", lambda d: d.update(schemaVersion="ayati-tests/v9"))
    report = load_paths([refund_pkg]).report.skills[0]
    error = report.errors[0]
    assert error.code == "unknown-schema-version" and error.location.file.endswith("tests.json")
    assert error.location.line == 2 and "ayati-tests/v1" in error.hint


def test_rule2_duplicate_skill_ids(refund_pkg: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(refund_pkg, twin)
    result = load_paths([refund_pkg, twin])
    assert list(result.skills) == ["refund-support-pkg"]
    assert [i.code for i in result.report.skills[1].errors] == ["duplicate-skill-id"]


def test_rule3_duplicate_tool_names_globally(refund_pkg: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.skill.yaml"
    other.write_text(
        with_required("id: other\ntools:\n  - name: refund-support-pkg.process_refund\n")
    )
    result = load_paths([refund_pkg, other])
    assert "other" not in result.skills
    assert "duplicate-tool" in [i.code for i in result.report.skills[1].errors]


def test_rule3_duplicate_tool_names_in_one_skill(
    refund_pkg: Path, edit_package: PackageEdit
) -> None:
    edit_package("tools.json", lambda d: d["tools"].append(dict(d["tools"][0])))
    assert "duplicate-tool" in codes(refund_pkg)


def test_rule4_tool_without_valid_schema(refund_pkg: Path, edit_package: PackageEdit) -> None:
    def break_schema(d: Any) -> None:
        d["tools"][0]["inputSchema"] = {"type": "object", "properties": {"x": {"type": 5}}}
        del d["tools"][1]["inputSchema"]
        d["tools"][2]["inputSchema"] = {"type": "array"}

    edit_package("tools.json", break_schema)
    found = codes(refund_pkg)
    assert found.count("invalid-schema") == 3


def test_rule4_remote_ref_rejected(refund_pkg: Path, edit_package: PackageEdit) -> None:
    edit_package(
        "tools.json",
        lambda d: d["tools"][0]["inputSchema"]["properties"].update(
            x={"$ref": "https://example.com/schema.json"}
        ),
    )
    assert "remote-ref" in codes(refund_pkg)


def test_rule5_plan_outside_namespace(refund_pkg: Path, edit_package: PackageEdit) -> None:
    def plan(d: Any) -> None:
        ops = d["toolAccessPlan"]["operations"]
        ops.append({"op": "upsert_tool", "toolName": "core.shell", "config": {"enabled": True}})
        ops.append(
            {
                "op": "upsert_tool",
                "toolName": "refund-support-pkg.process_refund",
                "config": {"requireApproval": False},
            }
        )

    edit_package("guardrails.json", plan)
    assert codes(refund_pkg).count("plan-removes-protection") == 2


def test_rule5_only_adding_operations(refund_pkg: Path, edit_package: PackageEdit) -> None:
    edit_package(
        "guardrails.json",
        lambda d: d["toolAccessPlan"]["operations"].append(
            {"op": "remove_guardrail", "path": "guardrails.shell.denyPrefixes"}
        ),
    )
    report = load_paths([refund_pkg]).report.skills[0]
    error = report.errors[0]
    assert error.path == ("toolAccessPlan", "operations", 3, "op")
    assert "upsert_tool" in error.message and error.location.line > 1


def test_rule6_credential_missing_key_fields(refund_pkg: Path, edit_package: PackageEdit) -> None:
    edit_package("credentials.json", lambda d: d["credentials"][0].pop("secret"))
    report = load_paths([refund_pkg]).report.skills[0]
    error = report.errors[0]
    assert error.location.file.endswith("credentials.json")
    assert error.path == ("credentials", 0, "secret") and "missing" in error.message


def test_rule7_binding_to_unknown_tool(refund_pkg: Path, edit_package: PackageEdit) -> None:
    edit_package("credentials.json", lambda d: d["bindings"][0].update(tool="nope"))
    assert codes(refund_pkg) == ["unknown-tool"]


def test_rule8_prerequisite_without_check_or_fix(
    refund_pkg: Path, edit_package: PackageEdit
) -> None:
    def strip(d: Any) -> None:
        d["items"][0]["howToFix"] = "  "
        d["items"].append({"id": "b", "howToFix": "x"})

    edit_package("prerequisites.json", strip)
    assert codes(refund_pkg) == ["prerequisite-incomplete", "prerequisite-incomplete"]


def test_rule9_scenario_without_id_or_expected(refund_pkg: Path, edit_package: PackageEdit) -> None:
    def strip(d: Any) -> None:
        d["scenarios"][0].pop("id")
        d["scenarios"][1]["expected"] = []

    edit_package("tests.json", strip)
    assert codes(refund_pkg) == ["scenario-incomplete", "scenario-incomplete"]


def test_namespace_prefix_must_match(refund_pkg: Path, edit_package: PackageEdit) -> None:
    edit_package("tools.json", lambda d: d["tools"][0].update(name="other.verify_identity"))
    assert "bad-namespace" in codes(refund_pkg)


def test_skill_id_must_match(refund_pkg: Path, edit_package: PackageEdit) -> None:
    edit_package("credentials.json", lambda d: d.update(skillId="someone-else"))
    assert codes(refund_pkg) == ["skill-id-mismatch"]


def test_missing_tools_file(refund_pkg: Path) -> None:
    (refund_pkg / "tools.json").unlink()
    assert codes(refund_pkg) == ["missing-file"]


def test_format_v1_additions_warn(refund_pkg: Path, edit_package: PackageEdit) -> None:
    edit_package("skill.json", lambda d: d.update(schemaVersion="ayati-skill/v1"))
    warnings = [i.code for i in load_paths([refund_pkg]).report.skills[0].warnings]
    assert "skillwire-addition" in warnings


def test_broken_json_reports_line(refund_pkg: Path) -> None:
    text = (refund_pkg / "tools.json").read_text().replace('"skillId"', '"skillId",', 1)
    (refund_pkg / "tools.json").write_text(text)
    error = load_paths([refund_pkg]).report.skills[0].errors[0]
    assert error.code == "json-syntax" and error.location.line == 3
