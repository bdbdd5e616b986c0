"""Job ids from the lists can be used: ``show`` and ``resume`` take any unique start of
an id, an ambiguous one lists the candidates, and ``skillwire jobs`` prints ids whole at
any terminal width (issue 17, item 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import ORDER
from tests.test_cli import cli, env, ok, resume, start, user_error
from typer.testing import CliRunner

from skillwire.cli_app import app

__all__ = ["env"]  # the fixture, used by name


def common_start(ids: list[str]) -> str:
    """The longest start all of ``ids`` share."""
    n = 0
    while all(len(i) > n and i[n] == ids[0][n] for i in ids):
        n += 1
    return ids[0][:n]


def unique_start(job_id: str, others: list[str]) -> str:
    """The shortest start of ``job_id`` that no other id has."""
    for n in range(1, len(job_id) + 1):
        if not any(o.startswith(job_id[:n]) for o in others):
            return job_id[:n]
    raise AssertionError(job_id)


@pytest.fixture
def two(env: dict[str, Path]) -> list[dict[str, Any]]:
    """Two refund jobs, paused for their order number (their ids start alike: both
    begin with the time they were made)."""
    return [start(env), start(env)]


def test_show_and_resume_take_a_unique_prefix(env: dict[str, Path], two: list[Any]) -> None:
    first, second = (j["id"] for j in two)
    short = unique_start(first, [second])
    assert len(short) < len(first)
    assert ok(cli("show", short, "--db", env["db"], "--json"))["id"] == first
    resumed = ok(resume(env, unique_start(second, [first]), "--input", f"order_id={ORDER}"))
    assert resumed["id"] == second and resumed["outcome_class"] == "APPROVAL_REQUIRED"
    text = cli("show", short, "--db", env["db"])
    assert text.exit_code == 0 and first in text.stdout


def test_an_ambiguous_prefix_lists_the_candidates(env: dict[str, Path], two: list[Any]) -> None:
    ids = [j["id"] for j in two]
    common = common_start(ids)
    assert common, ids
    for command in (
        ("show", common, "--db", env["db"]),
        ("resume", common, "--input", f"order_id={ORDER}", "--db", env["db"]),
    ):
        result = cli(*command)
        user_error(result, f"job id '{common}' is ambiguous: 2 jobs start with it")
        assert all(i in result.stderr for i in ids)
    for job in ids:  # neither was resumed
        assert ok(cli("show", job, "--db", env["db"], "--json"))["status"] == "paused"


@pytest.mark.parametrize("text", ["%", "_", "%%", "0_", "zz", "[bold]x[/]"])
def test_a_prefix_of_no_job_is_an_error(env: dict[str, Path], two: list[Any], text: str) -> None:
    user_error(cli("show", text, "--db", env["db"]), f"no job '{text}'")
    user_error(resume(env, text, "--input", f"order_id={ORDER}"), f"no job '{text}'")


def test_an_empty_or_one_character_prefix_names_no_job(
    env: dict[str, Path], two: list[Any]
) -> None:
    user_error(cli("show", "", "--db", env["db"]), "give a job id")
    first = two[0]["id"][0]
    user_error(cli("show", first, "--db", env["db"]), "is ambiguous")


@pytest.mark.parametrize("columns", ["40", "80", "200"])
def test_the_job_list_prints_whole_ids_at_any_width(
    env: dict[str, Path], two: list[Any], columns: str
) -> None:
    result = CliRunner().invoke(app, ["jobs", "--db", str(env["db"])], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    for job in two:
        assert any(line.startswith(job["id"] + " ") for line in lines), result.stdout
    assert "…" not in result.stdout
