"""``skillwire db``: the job database's schema, for operators.

``skillwire db migrate`` brings the database (SQLite file or PostgreSQL) to the schema
this skillwire writes; ``skillwire db status`` says which version it has, which
migrations were applied and how many jobs are in each status, and exits 1 when the
schema is not the current one (so a deploy script can check before starting workers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["db_app"]

db_app = typer.Typer(help="The job database: schema migrations and status.", no_args_is_help=True)

DbArg = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="SQLite file or postgresql:// URL (default $SKILLWIRE_DB, else runtime.db of "
        "skillwire.toml, else .skillwire/jobs.db).",
    ),
]


def _where(db: str | None) -> Path | str:
    from skillwire.assembly import default_db
    from skillwire.config import load_config
    from skillwire.store.postgres import is_postgres_url

    if db is None:
        return default_db(load_config())
    return db if is_postgres_url(db) else Path(db)


@db_app.command()
def migrate(db: DbArg = None) -> None:
    """Apply the migrations the database lacks (each once, even with several processes
    migrating at once); refuse a database written by a newer skillwire."""
    from skillwire.cli_jobs import guard

    def body() -> None:
        where = _where(db)
        if isinstance(where, str):
            from skillwire.store.postgres import prepare, safe_url
            from skillwire.store.postgres_migrations import PG_SCHEMA_VERSION

            found, current, label = prepare(where), PG_SCHEMA_VERSION, safe_url(where)
        else:
            import asyncio

            from skillwire.store import SCHEMA_VERSION, SQLiteJobStore
            from skillwire.store.status import sqlite_status

            found = sqlite_status(where).found if where.is_file() else 0
            where.parent.mkdir(parents=True, exist_ok=True)
            asyncio.run(SQLiteJobStore(where).close())  # opening migrates
            current, label = SCHEMA_VERSION, str(where)
        if found == current:
            typer.echo(f"{label}: schema version {current}, nothing to do")
        else:
            typer.echo(f"{label}: schema version {found} -> {current}")

    guard(body)


@db_app.command()
def status(db: DbArg = None, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The schema version found and wanted, the migrations applied, jobs by status.
    Exits 1 when the schema is behind (run ``skillwire db migrate``) or newer."""
    from skillwire.cli_jobs import guard
    from skillwire.store.status import DbStatus, postgres_status, sqlite_status

    def body() -> DbStatus:
        where = _where(db)
        return postgres_status(where) if isinstance(where, str) else sqlite_status(where)

    found = guard(body)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "database": found.where,
                    "kind": found.kind,
                    "schema_version": found.found,
                    "current_version": found.current,
                    "state": found.state,
                    "migrations": [
                        {"version": v, "name": n, "applied_at": at} for v, n, at in found.migrations
                    ],
                    "jobs": found.jobs,
                },
                indent=2,
            )
        )
    else:
        typer.echo(f"database: {found.where} ({found.kind})")
        typer.echo(f"schema:   version {found.found}, this skillwire writes {found.current}")
        for version, name, at in found.migrations:
            typer.echo(f"  {version:>3} {name}  ({at})")
        if found.state == "behind":
            typer.echo("migrations are pending: run 'skillwire db migrate'")
        elif found.state == "newer":
            typer.echo("written by a newer skillwire: upgrade skillwire to use it")
        else:
            total = sum(found.jobs.values())
            counts = ", ".join(f"{n} {s}" for s, n in found.jobs.items())
            typer.echo(f"jobs:     {total}" + (f" ({counts})" if counts else ""))
    if found.state != "current":
        raise typer.Exit(1)
