"""Skill versions on PostgreSQL end to end: the server's and the command line's checks of
``tests/server/test_skill_versions.py``, run on a ``postgresql://`` database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.server import test_skill_versions as on_sqlite  # a module: not collected again
from tests.server.helpers import copy_refund, server_config

from skillwire.server import ServerSettings, create_app
from skillwire.store.postgres import PostgresJobStore


def settings_on(pg_dsn: str, tmp_path: Path) -> tuple[ServerSettings, Path]:
    skills = tmp_path / "skills"
    copy_refund(skills / "refund_support")
    return ServerSettings(skill_paths=[skills], db=pg_dsn, config=server_config()), skills


def kept(pg_dsn: str, skill_id: str) -> list[str]:
    async def read() -> list[str]:
        async with PostgresJobStore(pg_dsn) as store:
            return [v.version for v in await store.skill_versions(skill_id)]

    return asyncio.run(read())


def test_a_job_paused_on_v1_resumes_on_v1_after_a_reload(pg_dsn: str, tmp_path: Path) -> None:
    settings, skills = settings_on(pg_dsn, tmp_path)
    with TestClient(create_app(settings)) as client:
        on_sqlite.test_a_job_paused_on_v1_resumes_on_v1_after_v2_is_loaded(client, skills)
    assert len(kept(pg_dsn, "refund-support")) == 2


def test_after_a_restart_postgres_gives_the_version_back(pg_dsn: str, tmp_path: Path) -> None:
    settings, skills = settings_on(pg_dsn, tmp_path)
    on_sqlite.test_after_a_restart_the_store_gives_the_version_back(settings, skills)
    assert len(kept(pg_dsn, "refund-support")) == 2


def test_cli_resume_history_diff_and_pin_on_postgres(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLWIRE_DB", pg_dsn)
    monkeypatch.chdir(tmp_path)
    on_sqlite.check_cli_versions(tmp_path, [])
    assert not (tmp_path / ".skillwire").exists()  # nothing went to a SQLite file
    assert len(kept(pg_dsn, "refund-support")) == 2


def test_a_schema_1_database_is_upgraded_to_keep_versions(pg_dsn: str) -> None:
    from tests.store.test_contract import make_job

    from skillwire.core.store import SkillVersion
    from skillwire.store import postgres_migrations as pgm
    from skillwire.store.postgres import connect_sync

    with connect_sync(pg_dsn) as conn, conn.transaction():  # as skillwire before m002 left it
        conn.execute(pgm._LOG)
        pgm.PG_MIGRATIONS[0](conn)
        conn.execute("INSERT INTO skillwire_schema (version, name) VALUES (1, 'm001_initial')")

    async def main() -> None:
        async with PostgresJobStore(pg_dsn) as store:
            assert store.schema_found == 1
            await store.create(make_job("j1"))
            version = SkillVersion("s", "v1", "src", "yaml", {"a": b"\x00"})
            assert await store.put_skill_version(version) is True
            assert [v.files for v in await store.skill_versions("s")] == [{"a": b"\x00"}]
        async with PostgresJobStore(pg_dsn, migrate=False) as again:
            assert again.schema_found == pgm.PG_SCHEMA_VERSION
            assert await again.get("j1") is not None

    asyncio.run(main())
