"""``skillwire sim run|replay|report`` and ``skillwire check`` on experiments."""

from __future__ import annotations

import json
from pathlib import Path

from tests.sim.helpers import FLOOD, answer, edit
from typer.testing import CliRunner, Result

from skillwire.cli_app import app


def cli(*args: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def test_run_replay_report_on_the_example(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = cli("sim", "run", FLOOD, "--out", out, "--agents", 10, "--steps", 3)
    assert result.exit_code == 0, result.output
    assert "10 agents x 3 steps" in result.output and (out / "audit.jsonl").is_file()
    result = cli("sim", "replay", out)
    assert result.exit_code == 0 and "byte-identical" in result.output
    result = cli("sim", "replay", out, "--governance", "relaxed")
    assert result.exit_code == 0 and "counterfactual" in result.output
    assert (out / "replay" / "relaxed" / "audit.jsonl").is_file()
    result = cli("sim", "report", out)
    assert result.exit_code == 0, result.output
    assert "has_insurance" in result.output and (out / "report.csv").is_file()
    assert "report.png" in result.output


def test_replay_exits_1_when_the_audit_differs(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert cli("sim", "run", FLOOD, "--out", out, "--agents", 3, "--steps", 2).exit_code == 0
    with (out / "audit.jsonl").open("a") as handle:
        handle.write('{"step": 99}\n')
    result = cli("sim", "replay", out)
    assert result.exit_code == 1 and "differs" in result.output


def test_run_with_a_scripted_model_and_options(tmp_path: Path) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text(json.dumps(answer(1, "H")) + "\n" + json.dumps(answer(3, "VH")) + "\n")
    out = tmp_path / "run"
    result = cli(
        "sim",
        "run",
        FLOOD,
        "--out",
        out,
        "--model",
        f"scripted:{script}",
        "--agents",
        2,
        "--steps",
        1,
        "--governance",
        "relaxed",
        "--seed",
        7,
    )
    assert result.exit_code == 0, result.output
    meta = json.loads((out / "run.json").read_text())
    assert (
        meta["seed"] == 7
        and meta["governance"] == "relaxed"
        and meta["model"].startswith("scripted:")
    )


def test_usage_errors_exit_2_without_a_traceback(tmp_path: Path) -> None:
    for args in (
        ("sim", "run", FLOOD, "--out", tmp_path / "r", "--governance", "lenient"),
        ("sim", "run", FLOOD, "--out", tmp_path / "r", "--model", "scripted:/nonexistent"),
        ("sim", "run", tmp_path / "nothing", "--out", tmp_path / "r"),
        ("sim", "replay", tmp_path / "nothing"),
        ("sim", "report", tmp_path / "nothing"),
    ):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output


def test_the_reference_folder_cannot_run_without_hooks(tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "ref"
    shutil.copytree(FLOOD, folder, ignore=shutil.ignore_patterns("experiment.yaml", "world.py"))
    result = cli("sim", "run", folder, "--out", tmp_path / "r")
    assert result.exit_code == 2 and "no world hooks" in result.output


def test_check_loads_an_experiment_and_explains_its_cel() -> None:
    result = cli("check", FLOOD, "--explain")
    assert result.exit_code == 0, result.output
    assert "0 errors" in result.output and "!elevated" in result.output
    assert (
        'TP_LABEL in ["H", "VH"]' in result.output.replace("\n", " ")
        or "TP_LABEL in" in result.output
    )


def test_check_json_lists_issues_and_rules() -> None:
    result = cli("check", FLOOD, "--json", "--explain")
    assert result.exit_code == 0
    data = json.loads(result.output)
    found = data["experiments"][0]
    assert found["ok"] and any(i["code"] == "not-enforced" for i in found["issues"])
    expressions = {r["expression"] for r in found["explain"]["rules"]}
    assert "!elevated" in expressions and 'TP_LABEL in ["H", "VH"]' in expressions


def test_check_fails_with_file_and_line(flood_copy: Path) -> None:
    edit(flood_copy / "skill_registry.yaml", "default_skill: do_nothing", "default_skill: nap")
    result = cli("check", flood_copy)
    assert result.exit_code == 1
    assert "skill_registry.yaml:" in result.output and "nap" in result.output
    assert cli("check", flood_copy / "experiment.yaml").exit_code == 1


def test_check_strict_counts_not_enforced_warnings() -> None:
    assert cli("check", FLOOD, "--strict").exit_code == 1


def test_check_of_skills_is_unchanged_next_to_experiments() -> None:
    examples = FLOOD.parent
    result = cli("check", examples)
    assert result.exit_code == 0, result.output
    assert "skill load report" in result.output
