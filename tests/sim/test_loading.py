"""Experiments load as they are: the reference framework's files unchanged, and
skillwire's experiment.yaml; every problem has its file and line."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from tests.sim.helpers import FLOOD, edit

from skillwire.core.errors import ExperimentError
from skillwire.core.issues import Severity
from skillwire.sim import is_experiment, load_experiment, read_experiment
from skillwire.sim.sources import read_csv, read_yaml

SHARED = next(
    (
        p / "shared" / "data" / "flood_abm"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "data" / "flood_abm").is_dir()
    ),
    Path("/nonexistent"),
)
REFERENCE = (
    "agent_types.yaml",
    "skill_registry.yaml",
    "agent_initial_profiles.csv",
    "flood_years.csv",
    "config/prompts/household.txt",
    "LICENSE",
    "README.md",
)


def line_of(path: Path, text: str) -> int:
    """The 1-based line of ``path`` where ``text`` first appears."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


def _errors(path: Path) -> list[str]:
    return [str(i) for i in read_experiment(path).issues if i.severity is Severity.ERROR]


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared data is not next to the repo")
@pytest.mark.parametrize("name", REFERENCE)
def test_the_example_holds_the_reference_files_unchanged(name: str) -> None:
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    assert digest(FLOOD / name) == digest(SHARED / name)


def test_the_reference_folder_loads_as_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "ref"
    shutil.copytree(
        FLOOD, folder, ignore=shutil.ignore_patterns("experiment.yaml", "world.py", "__pycache__")
    )
    assert is_experiment(folder)
    found = read_experiment(folder)
    assert found.ok, [str(i) for i in found.issues]
    exp = found.experiment
    assert exp is not None and exp.source == "reference"
    assert len(exp.agents) == 100 and exp.agents[0].agent_type == "household"
    assert exp.tables["flood_years"] == [{"Flood_Years": 3}, {"Flood_Years": 4}, {"Flood_Years": 9}]
    # read, not enforced: said so, with the line
    warned = [str(i) for i in found.issues if i.code == "not-enforced"]
    assert any("conflicts_with" in w and "skill_registry.yaml:" in w for w in warned)
    assert any("reflection" in w and "agent_types.yaml:4:" in w for w in warned)


def test_the_example_experiment_loads_with_everything_compiled() -> None:
    exp = load_experiment(FLOOD)
    assert exp.source == "experiment.yaml" and exp.steps == 10 and exp.seed == 42
    first = exp.agents[0]
    assert first.state["elevated"] is False and first.state["trust_in_insurance"] == 0.34
    assert first.state["memory"][0].startswith("Some residents reported delays")
    assert exp.skills["elevate_house"].preconditions[0].condition.expression == "!elevated"
    assert exp.skills["relocate"].once_only and exp.skills["relocate"].permanent
    assert exp.skills["buy_insurance"].annual
    rules = {r.id: r for r in exp.agent_types["household"].governance["strict"]}
    assert rules["extreme_threat_block"].condition.expression == 'TP_LABEL in ["H", "VH"]'
    assert rules["elevation_block"].kind == "identity" and rules["elevation_block"].level == "ERROR"
    assert rules["low_coping_block"].level == "WARNING"
    assert str(rules["extreme_threat_block"].location).endswith("agent_types.yaml:341:11")
    assert exp.max_retries == 3 and exp.max_reports_per_retry == 3 and exp.memory_window == 5
    assert exp.profiles == ["disabled", "relaxed", "strict"]
    assert set(exp.files) >= {"experiment.yaml", "world.py", "flood_years.csv"}


def test_a_csv_with_a_byte_order_mark_and_typed_cells(tmp_path: Path) -> None:
    path = tmp_path / "agents.csv"
    path.write_bytes("\ufeffid,flag,x,memory\nA,TRUE,1.5,a | b\nB,false,2,\n".encode())
    read = read_csv(path, list_columns={"memory": " | "})
    assert not isinstance(read, Exception) and not hasattr(read, "severity")
    header, rows = read  # type: ignore[misc]
    assert header == ["id", "flag", "x", "memory"]
    assert rows == [
        {"id": "A", "flag": True, "x": 1.5, "memory": ["a", "b"]},
        {"id": "B", "flag": False, "x": 2, "memory": []},
    ]


def test_an_agents_csv_with_a_byte_order_mark_finds_its_id_column(flood_copy: Path) -> None:
    csv = flood_copy / "agent_initial_profiles.csv"
    data = csv.read_bytes()
    assert not data.startswith(b"\xef\xbb\xbf")
    csv.write_bytes(b"\xef\xbb\xbf" + data)
    assert load_experiment(flood_copy).agents[0].id == "Agent_1"


def test_a_short_csv_row_is_an_error_with_its_line(flood_copy: Path) -> None:
    csv = flood_copy / "agent_initial_profiles.csv"
    lines = csv.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = "Agent_3,FALSE\n"
    csv.write_text("".join(lines), encoding="utf-8")
    assert any(
        "agent_initial_profiles.csv:4:" in e and "2 values" in e for e in _errors(flood_copy)
    )


def test_an_unknown_key_in_experiment_yaml_is_an_error_with_its_line(flood_copy: Path) -> None:
    edit(flood_copy / "experiment.yaml", "steps: 10\n", "steps: 10\nstpes: 3\n")
    errors = _errors(flood_copy)
    line = line_of(flood_copy / "experiment.yaml", "stpes")
    assert any(f"experiment.yaml:{line}:1" in e and "unknown key 'stpes'" in e for e in errors), (
        errors
    )


def test_a_bad_value_in_experiment_yaml_names_its_line(flood_copy: Path) -> None:
    edit(flood_copy / "experiment.yaml", "steps: 10", "steps: 0")
    line = line_of(flood_copy / "experiment.yaml", "steps: 0")
    assert any(f"experiment.yaml:{line}:" in e and "steps" in e for e in _errors(flood_copy))
    with pytest.raises(ExperimentError):
        load_experiment(flood_copy)


def test_a_precondition_that_does_not_parse_is_an_error_at_its_line(flood_copy: Path) -> None:
    edit(flood_copy / "skill_registry.yaml", '- "not elevated"', '- "not elevated and"')
    line = line_of(flood_copy / "skill_registry.yaml", "not elevated and")
    assert any(
        f"skill_registry.yaml:{line}:" in e and "precondition" in e for e in _errors(flood_copy)
    )


def test_a_precondition_naming_no_state_key_is_an_error(flood_copy: Path) -> None:
    edit(flood_copy / "skill_registry.yaml", '- "not elevated"', '- "not elevatd"')
    errors = _errors(flood_copy)
    line = line_of(flood_copy / "skill_registry.yaml", "elevatd")
    assert any(f"skill_registry.yaml:{line}:" in e and "elevatd" in e for e in errors), errors


def test_a_rule_blocking_an_unknown_skill_is_an_error(flood_copy: Path) -> None:
    edit(
        flood_copy / "agent_types.yaml",
        'blocked_skills: ["do_nothing"],\n            level: ERROR',
        'blocked_skills: ["do_nothin"],\n            level: ERROR',
    )
    line = line_of(flood_copy / "agent_types.yaml", "id: extreme_threat_block") - 1
    assert any("do_nothin" in e and f"agent_types.yaml:{line}" in e for e in _errors(flood_copy))


def test_a_rule_level_must_be_error_or_warning(flood_copy: Path) -> None:
    edit(
        flood_copy / "agent_types.yaml",
        'level: WARNING,\n            message: "Low',
        'level: WARN,\n            message: "Low',
    )
    line = line_of(flood_copy / "agent_types.yaml", "level: WARN,")
    assert any(
        f"agent_types.yaml:{line}" in e and "ERROR or WARNING" in e for e in _errors(flood_copy)
    )


def test_a_duplicate_yaml_key_is_an_error_with_its_line(flood_copy: Path) -> None:
    edit(
        flood_copy / "skill_registry.yaml",
        "default_skill: do_nothing",
        "default_skill: do_nothing\ndefault_skill: relocate",
    )
    errors = _errors(flood_copy)
    assert any("skill_registry.yaml:" in e and "invalid YAML" in e for e in errors), errors


def test_hooks_outside_the_experiment_folder_are_refused(flood_copy: Path) -> None:
    edit(flood_copy / "experiment.yaml", "hooks: world.py", "hooks: ../world.py")
    assert any("world.hooks" in e for e in _errors(flood_copy))


def test_a_missing_prompt_file_is_an_error_at_its_line(flood_copy: Path) -> None:
    (flood_copy / "config" / "prompts" / "household.txt").unlink()
    line = line_of(flood_copy / "agent_types.yaml", "prompt_template_file:")
    assert any(
        f"agent_types.yaml:{line}" in e and "household.txt" in e for e in _errors(flood_copy)
    )


def test_yaml_positions_are_one_based(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("a:\n  b: [1, 2]\n", encoding="utf-8")
    doc = read_yaml(path)
    assert not hasattr(doc, "severity")
    assert str(doc.locate(("a", "b", 1))).endswith("x.yaml:2:10")  # type: ignore[union-attr]


def test_a_yaml_tag_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("a: !!python/object:os.system {}\n", encoding="utf-8")
    found = read_yaml(path)
    assert getattr(found, "severity", None) is Severity.ERROR


def test_a_bad_inactive_when_is_an_error_at_its_line(flood_copy: Path) -> None:
    edit(flood_copy / "experiment.yaml", "inactive_when: relocated", "inactive_when: relocatd or")
    line = line_of(flood_copy / "experiment.yaml", "inactive_when")
    assert any(
        f"experiment.yaml:{line}:" in e and "inactive_when" in e for e in _errors(flood_copy)
    )


def test_placeholder_values_are_inserted_as_text_not_expanded() -> None:
    from skillwire.sim.prompts import fill_template

    text = fill_template("{a} and {b} {not a placeholder} {}", {"a": "{b}", "b": "B"}, "t")
    assert text == "{b} and B {not a placeholder} {}"
    with pytest.raises(Exception, match="placeholder"):
        fill_template("{missing}", {}, "t")
