"""PostgreSQL chosen by configuration (``SKILLWIRE_DB``, ``[runtime] db``), the CLI's
commands on it, and ``skillwire db migrate`` / ``db status`` on both stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import ORDER, input_script
from typer.testing import CliRunner, Result

from skillwire.assembly import db_label, default_db, open_store
from skillwire.cli_app import app
from skillwire.config import load_config
from skillwire.store import SCHEMA_VERSION, SQLiteJobStore
from skillwire.store.postgres import PostgresJobStore
from skillwire.store.postgres_migrations import PG_SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent.parent
REFUND = ROOT / "examples" / "refund_support" / "domain.yaml"


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def ok(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_database_is_chosen_by_url(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SKILLWIRE_DB", raising=False)
    toml = tmp_path / "skillwire.toml"
    toml.write_text(f'[runtime]\ndb = "{pg_dsn}"\n')
    assert default_db(load_config(toml)) == pg_dsn
    toml.write_text('[runtime]\ndb = "jobs/x.db"\n')
    assert default_db(load_config(toml)) == tmp_path / "jobs" / "x.db"  # SQLite stays a path
    assert default_db(None) == Path(".skillwire/jobs.db")
    monkeypatch.setenv("SKILLWIRE_DB", pg_dsn)
    assert default_db(load_config(toml)) == pg_dsn  # the environment wins
    assert isinstance(open_store(pg_dsn), PostgresJobStore)
    assert isinstance(open_store(tmp_path / "a" / "b.db"), SQLiteJobStore)
    assert db_label("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"


def test_run_resume_jobs_show_on_postgres(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLWIRE_DB", pg_dsn)
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(input_script()))
    model = f"scripted:{script}"
    job = ok(cli("run", REFUND, "-m", "I want a refund of $750", "--model", model, "--json"))
    assert job["outcome_class"] == "USER_ACTION_REQUIRED"
    assert not (tmp_path / ".skillwire").exists()  # nothing went to a SQLite file
    job = ok(cli("resume", job["id"], "--input", f"order_id={ORDER}", "--model", model, "--json"))
    job = ok(
        cli("resume", job["id"], "--approve", "--as", "supervisor", "--model", model, "--json")
    )
    assert (job["status"], job["outcome_class"]) == ("completed", "SUCCESS")
    listed = ok(cli("jobs", "--json"))
    assert [(j["id"], j["status"]) for j in listed] == [(job["id"], "completed")]
    shown = ok(cli("show", job["id"], "--json"))
    assert shown["events"] == job["events"]


def test_db_migrate_and_status_on_postgres(pg_dsn: str) -> None:
    before = cli("db", "status", "--db", pg_dsn)
    assert before.exit_code == 1 and "run 'skillwire db migrate'" in before.output
    migrated = cli("db", "migrate", "--db", pg_dsn)
    assert migrated.exit_code == 0, migrated.output
    assert f"schema version 0 -> {PG_SCHEMA_VERSION}" in migrated.output
    again = cli("db", "migrate", "--db", pg_dsn)
    assert "nothing to do" in again.output
    status = ok(cli("db", "status", "--db", pg_dsn, "--json"))
    assert (status["kind"], status["state"], status["jobs"]) == ("postgresql", "current", {})
    assert [m["name"] for m in status["migrations"]] == [
        "m001_initial",
        "m002_skill_versions",
        "m003_claims",
    ]


def test_db_status_never_shows_a_password() -> None:
    result = cli("db", "status", "--db", "postgresql://u:sekrit-pw@127.0.0.1:1/x")
    assert result.exit_code == 2
    assert "sekrit-pw" not in result.output and "cannot connect" in result.output
    assert "Traceback" not in result.output


def test_db_migrate_and_status_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    missing = cli("db", "status", "--db", path)
    assert missing.exit_code == 2 and "no job database" in missing.output
    assert f"0 -> {SCHEMA_VERSION}" in cli("db", "migrate", "--db", path).output
    status = ok(cli("db", "status", "--db", path, "--json"))
    assert (status["kind"], status["state"], status["schema_version"]) == (
        "sqlite", "current", SCHEMA_VERSION
    )  # fmt: skip
    path.with_name("junk.db").write_text("not a database")
    junk = cli("db", "status", "--db", path.with_name("junk.db"))
    assert junk.exit_code == 2 and "not a skillwire job database" in junk.output


def test_a_url_given_as_a_file_option_is_refused_clearly(tmp_path: Path) -> None:
    """``--db postgresql://...`` parses as a path (``postgresql:/...``): refused with a
    message, no folder named ``postgresql:`` made, no password shown."""
    import os

    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = cli("jobs", "--db", "postgresql://u:pw-secret@h/db")
        ran = cli("run", REFUND, "-m", "hi", "--db", "postgresql://u:pw-secret@h/db")
    finally:
        os.chdir(here)
    for outcome in (result, ran):
        assert outcome.exit_code == 2, outcome.output
        assert "--db takes a file" in outcome.output and "pw-secret" not in outcome.output
    assert list(tmp_path.iterdir()) == []
