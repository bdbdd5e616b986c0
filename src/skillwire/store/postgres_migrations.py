"""Ordered schema migrations of the PostgreSQL job store.

The same rules as the SQLite store's (:mod:`skillwire.store.migrations`): each
migration runs once, in list order, in one transaction together with its record in the
``skillwire_schema`` table (version, name, time applied); the highest version recorded
is the schema version; a database newer than :data:`PG_SCHEMA_VERSION` is refused. A
transaction-scoped advisory lock serialises processes that migrate at once (a server and
its workers starting together), so each migration is applied once.

The schema follows the SQLite store's ideas: a ``jobs`` row per job (the columns lists
filter on, the rest in ``body``) that keeps the highest event and model-call seqs
stored, and one ``journal`` row per save holding that save's events and model calls.
Documents are ``json``, not ``jsonb``: ``json`` keeps the text as written (key order,
``\\u0000``), so what is read back is what was given, and its ``->`` operators serve
ad-hoc queries (the ``events`` view). Text columns use the "C" collation so that jobs
list in the same order as in SQLite. Never edit a migration that has shipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from skillwire.core.errors import SchemaTooNewError

if TYPE_CHECKING:
    import psycopg

__all__ = ["PG_MIGRATIONS", "PG_SCHEMA_VERSION", "applied", "migrate", "schema_version"]

Migration = Callable[["psycopg.Connection[tuple[object, ...]]"], None]

PG_MIGRATIONS: list[Migration] = []
"""Every migration, oldest first."""

_LOCK = 0x5_C111_312E
"""The advisory lock key migrations take (any constant of our own)."""


def _migration(fn: Migration) -> Migration:
    PG_MIGRATIONS.append(fn)
    return fn


@_migration
def m001_initial(db: psycopg.Connection[tuple[object, ...]]) -> None:
    """Jobs, the journal of their saves, and the ``events`` view."""
    for statement in (
        """CREATE TABLE jobs (
            id text COLLATE "C" PRIMARY KEY,
            skill_id text COLLATE "C" NOT NULL,
            owner text COLLATE "C" NOT NULL,
            status text COLLATE "C" NOT NULL,
            outcome_class text COLLATE "C",
            version integer NOT NULL,
            created_at text COLLATE "C" NOT NULL,
            updated_at text COLLATE "C" NOT NULL,
            state_version integer NOT NULL,
            body json NOT NULL,
            last_event bigint NOT NULL DEFAULT 0,
            last_call bigint NOT NULL DEFAULT 0,
            inserted bigserial NOT NULL
        )""",
        "CREATE INDEX jobs_by_created ON jobs (created_at DESC, inserted DESC)",
        "CREATE INDEX jobs_by_owner ON jobs (owner, created_at DESC, inserted DESC)",
        "CREATE INDEX jobs_by_status ON jobs (status, created_at DESC, inserted DESC)",
        "CREATE INDEX jobs_by_skill ON jobs (skill_id, created_at DESC, inserted DESC)",
        "CREATE INDEX jobs_by_outcome ON jobs (outcome_class, created_at DESC, inserted DESC)",
        """CREATE TABLE journal (
            job_id text COLLATE "C" NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
            version integer NOT NULL,
            last_event bigint NOT NULL,
            last_call bigint NOT NULL,
            data json NOT NULL,
            PRIMARY KEY (job_id, version)
        )""",
        """CREATE VIEW events AS
        SELECT
            journal.job_id AS job_id,
            (item ->> 'seq')::bigint AS seq,
            item ->> 'at' AS at,
            item ->> 'stage' AS stage,
            item ->> 'kind' AS kind,
            item ->> 'reason_code' AS reason_code,
            item ->> 'message' AS message,
            item -> 'data' AS data
        FROM journal, json_array_elements(journal.data -> 'events') AS item""",
    ):
        db.execute(statement)


@_migration
def m002_skill_versions(db: psycopg.Connection[tuple[object, ...]]) -> None:
    """Skill versions and operators' pins, as the SQLite store's ``m006_skill_versions``.

    ``files`` is ``json`` ``{"schema": 1, "files": {path: base64 of the bytes}}``; a
    version is its content hash, so a row is written once and never changed. ``kept``
    orders the versions kept in the same microsecond."""
    for statement in (
        """CREATE TABLE skill_versions (
            skill_id text COLLATE "C" NOT NULL,
            version text COLLATE "C" NOT NULL,
            created_at text COLLATE "C" NOT NULL,
            source text COLLATE "C" NOT NULL,
            format text COLLATE "C" NOT NULL,
            files json NOT NULL,
            kept bigserial NOT NULL,
            PRIMARY KEY (skill_id, version)
        )""",
        """CREATE TABLE skill_pins (
            skill_id text COLLATE "C" PRIMARY KEY,
            version text COLLATE "C" NOT NULL,
            pinned_at text COLLATE "C" NOT NULL
        )""",
    ):
        db.execute(statement)


@_migration
def m003_claims(db: psycopg.Connection[tuple[object, ...]]) -> None:
    """Cross-job claims, as the SQLite store's ``m007_claims``: one row per call that
    took a claim on a key; ``claims_once`` holds a ``once_per`` key to one row, and a
    save takes ``pg_advisory_xact_lock`` on each key it claims before counting, so two
    transactions never both find room for the last claim."""
    for statement in (
        """CREATE TABLE claims (
            key text COLLATE "C" NOT NULL,
            job_id text COLLATE "C" NOT NULL,
            call text COLLATE "C" NOT NULL,
            made_at double precision NOT NULL,
            once boolean NOT NULL,
            PRIMARY KEY (key, call)
        )""",
        "CREATE UNIQUE INDEX claims_once ON claims (key) WHERE once",
        "CREATE INDEX claims_by_time ON claims (key, made_at)",
        "CREATE INDEX claims_by_job ON claims (job_id, call)",
    ):
        db.execute(statement)


PG_SCHEMA_VERSION = len(PG_MIGRATIONS)
"""The schema version this code writes: the number of migrations."""

_LOG = """CREATE TABLE IF NOT EXISTS skillwire_schema (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""


def schema_version(db: psycopg.Connection[tuple[object, ...]]) -> int:
    """The version recorded in the database (0 for a new one), without changing it."""
    found = db.execute("SELECT to_regclass('skillwire_schema') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return 0
    row = db.execute("SELECT coalesce(max(version), 0) FROM skillwire_schema").fetchone()
    return int(row[0]) if row else 0  # type: ignore[call-overload]


def applied(db: psycopg.Connection[tuple[object, ...]]) -> list[tuple[int, str, str]]:
    """The migrations recorded: version, name and time applied (ISO 8601), in order."""
    if schema_version(db) == 0:
        return []
    rows = db.execute(
        "SELECT version, name, applied_at FROM skillwire_schema ORDER BY version"
    ).fetchall()
    return [(int(v), str(n), at.isoformat()) for v, n, at in rows]  # type: ignore[call-overload,attr-defined]


def migrate(db: psycopg.Connection[tuple[object, ...]], *, where: str) -> int:
    """Bring the database to :data:`PG_SCHEMA_VERSION`; return the version found.

    Raises :class:`SchemaTooNewError`, naming ``where``, when the database is newer than
    this code (and changes nothing).
    """
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        db.execute(_LOG)
        found = schema_version(db)
        if found > PG_SCHEMA_VERSION:
            raise SchemaTooNewError(where, found, PG_SCHEMA_VERSION)
        for number in range(found + 1, PG_SCHEMA_VERSION + 1):
            step = PG_MIGRATIONS[number - 1]
            step(db)
            db.execute(
                "INSERT INTO skillwire_schema (version, name) VALUES (%s, %s)",
                (number, step.__name__),
            )
    return found
