"""Ordered schema migrations of the SQLite job store, in the manner of simonw/llm.

Each migration is a function that takes the connection and runs its statements. They are
applied in list order, each once, all in one transaction together with the record of
them. The number applied is the schema version: it is kept in ``PRAGMA user_version``
(what :func:`migrate` checks) and, with each migration's name and time, in the
``schema_migrations`` table (for people reading the file). A database whose version is
higher than :data:`SCHEMA_VERSION` was written by newer code and is refused, not opened.

Never edit a migration that has shipped; append a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime

from skillwire.core.issues import SkillwireError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SchemaTooNewError", "migrate", "schema_version"]

Migration = Callable[[sqlite3.Connection], None]

MIGRATIONS: list[Migration] = []
"""Every migration, oldest first."""


class SchemaTooNewError(SkillwireError):
    """The database was written by a newer skillwire than this one."""

    def __init__(self, where: str, found: int, known: int) -> None:
        super().__init__(
            f"{where}: database schema version {found} is newer than this skillwire "
            f"knows (version {known}); upgrade skillwire to open it"
        )
        self.found = found
        self.known = known


def migration(fn: Migration) -> Migration:
    """Register ``fn`` as the next migration."""
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    """Jobs, their events and model calls, and the migration log."""
    # One statement per execute(): executescript() would COMMIT the open transaction.
    for statement in (
        """CREATE TABLE schema_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TEXT NOT NULL
        )""",
        """CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            skill_id TEXT NOT NULL,
            owner TEXT NOT NULL,
            status TEXT NOT NULL,
            outcome_class TEXT,
            version INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            state_version INTEGER NOT NULL,
            body TEXT NOT NULL
        )""",
        # Each index ends in rowid implicitly, so "created_at DESC, rowid DESC" needs no sort.
        "CREATE INDEX jobs_by_created ON jobs (created_at)",
        "CREATE INDEX jobs_by_owner ON jobs (owner, created_at)",
        "CREATE INDEX jobs_by_status ON jobs (status, created_at)",
        "CREATE INDEX jobs_by_skill ON jobs (skill_id, created_at)",
        """CREATE TABLE events (
            job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            at TEXT NOT NULL,
            stage TEXT NOT NULL,
            kind TEXT NOT NULL,
            reason_code TEXT NOT NULL,
            message TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (job_id, seq)
        ) WITHOUT ROWID""",
        """CREATE TABLE model_calls (
            job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            at TEXT NOT NULL,
            stage TEXT NOT NULL,
            model TEXT NOT NULL,
            prompt_chars INTEGER NOT NULL,
            input_tokens INTEGER,
            output_tokens INTEGER,
            latency_ms REAL NOT NULL,
            ok INTEGER NOT NULL,
            error TEXT NOT NULL,
            PRIMARY KEY (job_id, seq)
        ) WITHOUT ROWID""",
    ):
        db.execute(statement)


SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this code writes: the number of migrations."""


def schema_version(db: sqlite3.Connection) -> int:
    """The version recorded in the database (0 for a new file)."""
    row = db.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def migrate(db: sqlite3.Connection, *, where: str) -> int:
    """Bring the database to :data:`SCHEMA_VERSION` and return the version found.

    ``db`` must be in autocommit mode (``isolation_level=None``). ``BEGIN IMMEDIATE``
    takes the write lock before the version is read, so two processes opening a new
    file at once apply each migration once. Raises :class:`SchemaTooNewError`, naming
    ``where``, when the database is newer than this code.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        found = schema_version(db)
        if found > SCHEMA_VERSION:
            raise SchemaTooNewError(where, found, SCHEMA_VERSION)
        now = datetime.now(UTC).isoformat()
        for number in range(found + 1, SCHEMA_VERSION + 1):
            step = MIGRATIONS[number - 1]
            step(db)
            db.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (number, step.__name__, now),
            )
        if found != SCHEMA_VERSION:
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return found
