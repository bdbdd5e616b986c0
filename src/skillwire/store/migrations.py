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

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from skillwire.core.errors import SchemaTooNewError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SchemaTooNewError", "migrate", "schema_version"]

Migration = Callable[[sqlite3.Connection], None]

MIGRATIONS: list[Migration] = []
"""Every migration, oldest first."""


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


@migration
def m002_journal(db: sqlite3.Connection) -> None:
    """One journal row per save, holding that save's events and model calls, instead of
    a row per event and per model call: a save then adds one row, not thirty.

    Rows are found by job and the job version the save wrote; ``last_event`` and ``last_call``
    are the highest seqs stored for the job up to that row (what a new save must come
    after, read from the newest row). ``data`` is ``{"events": [...], "model_calls":
    [...]}``, each item the record's JSON form without its job id. The events and model
    calls stored by schema 1 move into one row per job, version 0, in seq order.
    """
    # A rowid table: an entry is a few kilobytes, which a rowid table keeps on one page
    # (up to about 4 KB) where a WITHOUT ROWID table would spill it to overflow pages.
    # The index covers what a save reads (the newest entry's seqs); one version per job
    # is already guaranteed by the job's version check, in the same transaction.
    db.execute(
        """CREATE TABLE journal (
            job_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            last_event INTEGER NOT NULL,
            last_call INTEGER NOT NULL,
            data TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX journal_by_job ON journal (job_id, version, last_event, last_call)")
    events: dict[str, list[dict[str, Any]]] = {}
    for job_id, seq, at, stage, kind, code, message, data in db.execute(
        "SELECT job_id, seq, at, stage, kind, reason_code, message, data FROM events "
        "ORDER BY job_id, seq"
    ):
        item = {"seq": seq, "at": at, "stage": stage, "kind": kind, "reason_code": code,
                "message": message, "data": json.loads(data)}  # fmt: skip
        events.setdefault(job_id, []).append(item)
    calls: dict[str, list[dict[str, Any]]] = {}
    for row in db.execute(
        "SELECT job_id, seq, at, stage, model, prompt_chars, input_tokens, output_tokens, "
        "latency_ms, ok, error FROM model_calls ORDER BY job_id, seq"
    ):
        job_id, seq, at, stage, model, chars, tokens_in, tokens_out, latency, ok, error = row
        item = {"seq": seq, "at": at, "stage": stage, "model": model, "prompt_chars": chars,
                "input_tokens": tokens_in, "output_tokens": tokens_out, "latency_ms": latency,
                "ok": bool(ok), "error": error}  # fmt: skip
        calls.setdefault(job_id, []).append(item)
    for job_id in sorted(events.keys() | calls.keys()):
        job_events, job_calls = events.get(job_id, []), calls.get(job_id, [])
        db.execute(
            "INSERT INTO journal (job_id, version, last_event, last_call, data) "
            "VALUES (?, 0, ?, ?, ?)",
            (
                job_id,
                job_events[-1]["seq"] if job_events else 0,
                job_calls[-1]["seq"] if job_calls else 0,
                json.dumps({"events": job_events, "model_calls": job_calls},
                           separators=(",", ":"), ensure_ascii=False),
            ),
        )  # fmt: skip
    db.execute("DROP TABLE events")
    db.execute("DROP TABLE model_calls")


@migration
def m003_seqs_on_the_job(db: sqlite3.Connection) -> None:
    """The highest event and model-call seqs stored move onto the job's row.

    A save then checks that its seqs come after them in the ``UPDATE`` that checks its
    version, instead of reading the newest journal row first. From this schema on, a
    journal row's ``last_event`` and ``last_call`` are its own highest seqs (0 for none),
    not the job's so far; rows written before keep the job's so far, which reads the same
    (a row is read for events when its ``last_event`` is past the seq asked for).
    """
    for column in ("last_event", "last_call"):
        db.execute(f"ALTER TABLE jobs ADD COLUMN {column} INTEGER NOT NULL DEFAULT 0")
    db.execute(
        "UPDATE jobs SET "
        "last_event = (SELECT coalesce(max(last_event), 0) FROM journal WHERE job_id = jobs.id), "
        "last_call = (SELECT coalesce(max(last_call), 0) FROM journal WHERE job_id = jobs.id)"
    )


@migration
def m004_events_view(db: sqlite3.Connection) -> None:
    """An ``events`` view: one row per event, read out of the journal, so that the audit
    can be queried with plain SQL (``SELECT ... FROM events WHERE job_id = ? ORDER BY
    seq``) by any SQLite with its JSON functions (built in since 3.38).

    Its columns are those of the table schema 1 had: ``job_id``, ``seq``, ``at``,
    ``stage``, ``kind``, ``reason_code``, ``message``, and ``data`` as JSON text. A query
    by ``job_id`` reads that job's journal rows through their index.
    """
    # json_extract, not the ->> operator: every SQLite that opens the file parses the
    # view, and one older than 3.38 could not parse ->>, so could not open the file.
    db.execute(
        """CREATE VIEW events AS
        SELECT
            journal.job_id AS job_id,
            json_extract(item.value, '$.seq') AS seq,
            json_extract(item.value, '$.at') AS at,
            json_extract(item.value, '$.stage') AS stage,
            json_extract(item.value, '$.kind') AS kind,
            json_extract(item.value, '$.reason_code') AS reason_code,
            json_extract(item.value, '$.message') AS message,
            json_quote(json_extract(item.value, '$.data')) AS data
        FROM journal, json_each(journal.data, '$.events') AS item"""
    )


@migration
def m005_jobs_by_outcome(db: sqlite3.Connection) -> None:
    """An index for listing jobs by outcome class (``BLOCKED``, ``DENIED``, ...), newest
    first, as ``jobs_by_status`` serves the status."""
    db.execute("CREATE INDEX jobs_by_outcome ON jobs (outcome_class, created_at)")


@migration
def m006_skill_versions(db: sqlite3.Connection) -> None:
    """Skill versions, so that a job resumes on the version it started on after its
    skill's files changed, and an operator's pin of a version for new jobs.

    ``files`` is JSON ``{"schema": 1, "files": {path: base64 of the bytes}}``; a version
    is its content hash, so a row is written once and never changed."""
    db.execute(
        """CREATE TABLE skill_versions (
            skill_id TEXT NOT NULL,
            version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            source TEXT NOT NULL,
            format TEXT NOT NULL,
            files TEXT NOT NULL,
            PRIMARY KEY (skill_id, version)
        )"""
    )
    db.execute(
        """CREATE TABLE skill_pins (
            skill_id TEXT PRIMARY KEY,
            version TEXT NOT NULL,
            pinned_at TEXT NOT NULL
        )"""
    )


@migration
def m007_claims(db: sqlite3.Connection) -> None:
    """Cross-job claims (a tool policy's ``once_per`` and ``rate_limit``): one row per
    call that took a claim on a key, kept until the call fails (a crash keeps it).

    ``made_at`` is POSIX seconds; ``once`` marks a claim of limit 1 with no window,
    which the unique index ``claims_once`` holds to one row per key whatever a save
    checked first. The job's own table and state are unchanged."""
    for statement in (
        """CREATE TABLE claims (
            key TEXT NOT NULL,
            job_id TEXT NOT NULL,
            call TEXT NOT NULL,
            made_at REAL NOT NULL,
            once INTEGER NOT NULL,
            PRIMARY KEY (key, call)
        )""",
        "CREATE UNIQUE INDEX claims_once ON claims (key) WHERE once = 1",
        "CREATE INDEX claims_by_time ON claims (key, made_at)",
        "CREATE INDEX claims_by_job ON claims (job_id, call)",
    ):
        db.execute(statement)


@migration
def m008_jobs_by_outcome_when_set(db: sqlite3.Connection) -> None:
    """``jobs_by_outcome`` holds only the jobs that have an outcome class: a job has none
    until its end, and each save of it before then rewrote its entry (its ``UPDATE``
    sets the column, to NULL again). A listing by outcome class (``outcome_class =
    ?``) reads the same entries as before: NULL is never equal to the class asked."""
    db.execute("DROP INDEX jobs_by_outcome")
    db.execute(
        "CREATE INDEX jobs_by_outcome ON jobs (outcome_class, created_at) "
        "WHERE outcome_class IS NOT NULL"
    )


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
