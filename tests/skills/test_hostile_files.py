"""Hostile skill files (issue 16 item 14): links that leave the skill's folder, special
files, huge files and lone surrogates are refused with the file named, and
``skillwire check`` never prints a traceback (nor waits on a FIFO)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ROOT
from tests.policy.helpers import with_required, with_required_data
from typer.testing import CliRunner

import skillwire
from skillwire.cli_app import app
from skillwire.skills import LoadResult, load_paths
from skillwire.skills.source import MAX_FILE_BYTES, MAX_PACKAGE_BYTES

SECRET = with_required("id: secret-skill\ntools:\n  - name: exfiltrate\n")
"""A valid skill: read through a link, it would load as if it were the author's."""


def codes(result: LoadResult) -> list[str]:
    return [i.code for rep in result.report.skills for i in rep.errors]


def errors_of(result: LoadResult) -> list[tuple[str, str]]:
    """(file, code) of every error."""
    return [(i.location.file, i.code) for rep in result.report.skills for i in rep.errors]


def check_json(*paths: Path) -> dict[str, Any]:
    """``skillwire check --json`` in this process: exit 1, a report, no traceback."""
    result = CliRunner().invoke(app, ["check", "--json", *map(str, paths)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def issues_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for s in report["skills"] for f in s["files"] for i in f["issues"]]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the skills, holding files no skill may read."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.yaml").write_text(SECRET)
    return folder


@pytest.fixture
def package(refund_pkg: Path) -> Path:
    """The refund package, copied where links can point out of it."""
    return refund_pkg


# ---------------------------------------------------------------- links


def test_a_skill_file_linked_outside_its_folder_is_refused(tmp_path: Path, outside: Path) -> None:
    folder = tmp_path / "skills" / "hr"
    folder.mkdir(parents=True)
    (folder / "domain.yaml").symlink_to(outside / "secret.yaml")
    result = load_paths([tmp_path / "skills"])
    assert result.skills == {}
    assert errors_of(result) == [(str(folder / "domain.yaml"), "file-outside")]
    issue = result.report.skills[0].errors[0]
    assert "exfiltrate" not in str(issue) and "outside" in issue.message
    report = check_json(tmp_path / "skills")
    assert [i["code"] for i in issues_of(report)] == ["file-outside"]


def test_a_folder_linked_out_of_the_folder_being_loaded_is_refused(
    tmp_path: Path, outside: Path
) -> None:
    """A link placed among the skills must not pull in skills from elsewhere (another
    tenant's folder, the whole disk); the target itself, named, loads."""
    (outside / "domain.yaml").write_text(SECRET)
    skills = tmp_path / "skills"
    skills.mkdir()
    (skills / "other").symlink_to(outside, target_is_directory=True)
    (skills / ".venv").symlink_to(outside, target_is_directory=True)  # skipped, as ever
    (skills / "README.md").symlink_to(outside / "secret.yaml")  # not a skill file: never read
    result = load_paths([skills])
    assert result.skills == {}
    assert errors_of(result) == [(str(skills / "other"), "file-outside")]
    assert list(load_paths([skills / "other"]).skills) == ["secret-skill"]


@pytest.mark.parametrize("name", ["tools.json", "guardrails.json", "skill.md"])
def test_a_package_file_linked_outside_the_package_is_refused(
    package: Path, outside: Path, name: str
) -> None:
    shutil.move(package / name, outside / name)
    (package / name).symlink_to(outside / name)
    result = load_paths([package])
    assert result.skills == {}
    assert (str(package / name), "file-outside") in errors_of(result)


def test_a_package_file_reached_through_a_linked_folder_is_refused(
    package: Path, outside: Path
) -> None:
    shutil.move(package / "tools.json", outside / "tools.json")
    (package / "parts").symlink_to(outside)
    manifest = json.loads((package / "skill.json").read_text())
    manifest["files"]["tools"] = "parts/tools.json"
    (package / "skill.json").write_text(json.dumps(manifest))
    result = load_paths([package])
    assert result.skills == {}
    assert (str(package / "parts/tools.json"), "file-outside") in errors_of(result)


def test_a_manifest_linked_outside_is_refused(package: Path, outside: Path) -> None:
    shutil.move(package / "skill.json", outside / "skill.json")
    (package / "skill.json").symlink_to(outside / "skill.json")
    result = load_paths([package])
    assert result.skills == {}
    assert "file-outside" in codes(result)


def test_links_that_stay_inside_load(tmp_path: Path, package: Path, refund_yaml: Path) -> None:
    (package / "real").mkdir()
    shutil.move(package / "tools.json", package / "real" / "tools.json")
    (package / "tools.json").symlink_to(package / "real" / "tools.json")
    linked_package = tmp_path / "linked_pkg"
    linked_package.symlink_to(package, target_is_directory=True)
    single = tmp_path / "single"
    single.mkdir()
    (single / "refund.yaml").write_text(refund_yaml.read_text())
    (single / "domain.yaml").symlink_to("refund.yaml")
    for path in (package, linked_package, single / "domain.yaml"):
        result = load_paths([path])
        assert result.report.ok, [str(i) for r in result.report.skills for i in r.errors]
        assert len(result.skills) == 1


def test_a_package_named_through_a_link_reads_its_own_files(tmp_path: Path, package: Path) -> None:
    """The link is resolved once: the package's files are judged against its real folder."""
    linked = tmp_path / "linked_pkg"
    linked.symlink_to(package, target_is_directory=True)
    (package / "skill.md").unlink()
    (package / "skill.md").symlink_to(tmp_path / "linked_pkg" / "tests.json")
    assert load_paths([linked]).report.ok


# ---------------------------------------------------------------- special files


@pytest.fixture
def fifo_skills(tmp_path: Path, package: Path) -> Iterator[list[Path]]:
    """A folder whose domain.yaml is a FIFO, a package whose skill.md is a FIFO, and one
    whose guardrails.json is a socket."""
    single = tmp_path / "fifo_single"
    single.mkdir()
    os.mkfifo(single / "domain.yaml")
    (package / "skill.md").unlink()
    os.mkfifo(package / "skill.md")
    sockets = tmp_path / "socket_pkg"
    shutil.copytree(ROOT / "examples" / "refund_support_pkg", sockets)
    (sockets / "guardrails.json").unlink()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sockets / "guardrails.json"))
    try:
        yield [single, package, sockets]
    finally:
        server.close()


def test_special_files_are_refused_without_waiting(fifo_skills: list[Path]) -> None:
    """Through the installed command, in a child process with a time limit: a loader that
    opened a FIFO would wait forever for a writer, and the test would fail, not hang."""
    result = subprocess.run(
        [sys.executable, "-m", "skillwire", "check", "--json", *map(str, fifo_skills)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(skillwire.__file__).parents[1])},
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    found = {(i["file"], i["code"]) for i in issues_of(json.loads(result.stdout))}
    single, package, sockets = fifo_skills
    assert found >= {
        (str(single / "domain.yaml"), "file-special"),
        (str(package / "skill.md"), "file-special"),
        (str(sockets / "guardrails.json"), "file-special"),
    }


def test_a_fifo_named_on_the_command_line_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "domain.yaml")
    result = load_paths([tmp_path / "domain.yaml"])
    assert codes(result) == ["file-special"]
    assert "FIFO" in result.report.skills[0].errors[0].message


# ---------------------------------------------------------------- sizes


def test_an_oversized_skill_file_is_refused_naming_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "skill.json"
    padding = "x" * MAX_FILE_BYTES
    path.write_text(json.dumps({"id": "big", "tools": [{"name": "t"}], "_padding": padding}))
    result = load_paths([path])
    assert codes(result) == ["file-too-large"]
    issue = result.report.skills[0].errors[0]
    assert issue.location.file == str(path)
    assert f"{MAX_FILE_BYTES // 2**20} MiB" in issue.message
    assert [i["code"] for i in issues_of(check_json(path))] == ["file-too-large"]


def test_a_file_at_the_limit_loads(tmp_path: Path) -> None:
    path = tmp_path / "skill.json"
    text = json.dumps(with_required_data({"id": "big", "tools": [{"name": "t"}], "_padding": ""}))
    text = text.replace('""', '"' + "x" * (MAX_FILE_BYTES - len(text)) + '"')
    path.write_text(text)
    assert path.stat().st_size == MAX_FILE_BYTES
    assert load_paths([path]).report.ok


def test_an_oversized_package_is_refused_naming_the_limit(package: Path) -> None:
    share = MAX_FILE_BYTES - 2**16  # each file under the per-file limit
    (package / "skill.md").write_text("# Refund support\n" + "x" * share)
    for name in ("skill.json", "tools.json", "guardrails.json", "credentials.json"):
        data = json.loads((package / name).read_text())
        data["_padding"] = "x" * share
        (package / name).write_text(json.dumps(data))
    assert sum(p.stat().st_size for p in package.iterdir()) > MAX_PACKAGE_BYTES
    result = load_paths([package])
    assert result.skills == {}
    assert "package-too-large" in codes(result)
    issue = next(i for i in result.report.skills[0].errors if i.code == "package-too-large")
    assert f"{MAX_PACKAGE_BYTES // 2**20} MiB" in issue.message


# ---------------------------------------------------------------- lone surrogates


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("skill.json", '{"id": "x",\n "tools": [{"name": "pay\\ud800"}]}', 2),
        (
            "skill.json",
            '{"id": "x", "tools": [{"name": "pay", "inputSchema": {"type": "object",\n'
            ' "properties": {"amount\\udc00": {"type": "number"}}}}]}',
            2,
        ),
        ("domain.yaml", 'id: x\nintents:\n  supported:\n    - id: "refund\\ud800"\n', 4),
        ("domain.yaml", 'id: "x\\ud800"\n', 1),
    ],
)
def test_lone_surrogates_are_refused_with_file_and_line(
    tmp_path: Path, name: str, text: str, line: int
) -> None:
    path = tmp_path / name
    path.write_text(text)
    result = load_paths([path])
    assert codes(result) == ["lone-surrogate"]
    issue = result.report.skills[0].errors[0]
    assert (issue.location.file, issue.location.line) == (str(path), line)
    assert "surrogate" in issue.message
    report = check_json(path)
    assert [i["code"] for i in issues_of(report)] == ["lone-surrogate"]
    shown = CliRunner().invoke(app, ["check", str(path)])
    assert shown.exit_code == 1 and "Traceback" not in shown.output


def test_a_surrogate_pair_is_a_character_not_a_refusal(tmp_path: Path) -> None:
    path = tmp_path / "skill.json"
    path.write_text(
        with_required(
            '{"id": "x", "description": "smile \\ud83d\\ude00", "tools": [{"name": "t"}]}'
        )
    )
    result = load_paths([path])
    assert result.report.ok
    assert result.skills["x"].description == "smile \U0001f600"


# ---------------------------------------------------------------- the author's text on screen


def test_text_that_looks_like_markup_is_printed_as_written(tmp_path: Path) -> None:
    path = tmp_path / "domain.yaml"
    path.write_text(
        'id: "[/]"\ntools:\n  - name: "[/x]"\n  - name: "[/x]"\n'
        'policy: {guardrails: {never: ["Never use [/x] [bold]"]}}\n'
    )
    result = CliRunner().invoke(app, ["check", "--explain", str(path)])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "duplicate tool name '[/x]'" in result.stdout
