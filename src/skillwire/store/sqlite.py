"""The embedded job store: stdlib ``sqlite3`` in WAL mode, run on the caller's thread.

The store is three layers, one concern each:

* :mod:`~skillwire.store._connection`: one connection, its lock, where a call runs (on
  the event loop unless it would wait; on the worker thread for a busy file or
  ``synchronous="FULL"``) and the checkpoints;
* :mod:`~skillwire.store._group_commit`: the writes queued on a loop share one
  transaction, and the rule that keeps one write from failing the others;
* this module: the queries. Records become rows in :mod:`~skillwire.store._rows`, their
  JSON and text in :mod:`~skillwire.store._stored_json`; the schema is in
  :mod:`~skillwire.store.migrations`.

A save is ``UPDATE jobs ... WHERE id = :id AND version = :version - 1 AND last_event <
:first_event AND last_call < :first_call`` (the job's row keeps the highest seqs stored:
``m003_seqs_on_the_job``) followed by one ``journal`` row holding the save's new events
and model calls (``m002_journal``): all of it lands or none of it, and only if the
stored version is the one the caller read and the save's seqs follow those stored. A
save that is refused (a version conflict, a seq already stored) is refused by that
``UPDATE`` (or by the ``INSERT`` of a job that exists) before it changes anything. The
``events`` view (``m004_events_view``) reads the journal's events with plain SQL.

Errors raised on purpose (all in :mod:`skillwire.core.errors`): ``SchemaTooNewError``
(the file was written by a newer skillwire), ``JobStateTooNewError`` (a job's
state_version is newer than ``JOB_STATE_VERSION``), ``UsageError`` (bad argument,
mismatched job_id, seq stored or out of order, closed store), ``VersionConflict`` (the
stored version is not the expected one); ``TypeError`` when a value to persist is not
plain JSON.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import orjson

from skillwire.core.errors import JobStateTooNewError, NotFoundError, UsageError, VersionConflict
from skillwire.core.job import (
    JOB_STATE_VERSION,
    Event,
    JobRecord,
    JobStatus,
    ModelCallRecord,
    OutcomeClass,
)
from skillwire.core.store import (
    Claim,
    ClaimSnapshot,
    SkillVersion,
    after_prefix,
    checked_claims,
    job_filters,
)
from skillwire.store import _claims, _skill_versions
from skillwire.store._group_commit import GroupCommit
from skillwire.store._rows import (
    JOB_COLUMNS,
    Statement,
    WriteValues,
    call_from,
    event_from,
    job_from_row,
    stored_bytes,
    with_version,
    write_values,
)
from skillwire.store._stored_json import storable

__all__ = ["DURABILITY_LEVELS", "Durability", "JobStateTooNewError", "SQLiteJobStore"]

Durability = Literal["strict", "default", "fast"]
"""What a commit survives: see :class:`SQLiteJobStore` and docs/engine.md."""
DURABILITY_LEVELS: tuple[Durability, ...] = ("strict", "default", "fast")


_INSERT_JOB = Statement(
    f"INSERT INTO jobs ({JOB_COLUMNS}, last_event, last_call) VALUES (:id, :skill_id, "
    ":owner, :status, :outcome_class, :version, :created_at, :updated_at, :state_version, "
    ":body, :last_event, :last_call) ON CONFLICT (id) DO NOTHING"
)
_SEQS_FOLLOW = (
    "last_event = max(last_event, :last_event), last_call = max(last_call, :last_call) "
    "WHERE id = :id AND version = :version - 1 AND last_event < :first_event "
    "AND last_call < :first_call"
)
"""A save's checks: the version it read (the one before the version it writes), and
seqs that follow those stored; and the highest seqs, which the job keeps."""
_UPDATE_JOB = Statement(
    "UPDATE jobs SET status = :status, outcome_class = :outcome_class, version = :version, "
    "updated_at = :updated_at, state_version = :state_version, body = :body, "
    f"{_SEQS_FOLLOW} AND skill_id = :skill_id AND owner = :owner AND created_at = :created_at"
)
"""A save that keeps the columns a job keeps: they are checked, not set (setting them
rewrites their index entries, a third of an update's cost)."""
_UPDATE_JOB_ANEW = Statement(
    "UPDATE jobs SET skill_id = :skill_id, owner = :owner, status = :status, "
    "outcome_class = :outcome_class, version = :version, created_at = :created_at, "
    "updated_at = :updated_at, state_version = :state_version, body = :body, " + _SEQS_FOLLOW
)
"""A save that changes skill, owner or creation time, or is refused."""
_APPEND = Statement(
    "INSERT INTO journal (job_id, version, last_event, last_call, data) "
    "VALUES (:id, :version, :last_event, :last_call, :data)"
)
"""The save's journal row (its seqs were checked against the job's, in the same
transaction, by the statement before)."""


class SQLiteJobStore(GroupCommit):
    """A :class:`~skillwire.core.store.JobStore` in one SQLite file.

    Durability, one of three levels (``durability``; docs/engine.md says what each
    survives and costs). The file is in WAL mode. A commit is written to the WAL (the OS
    page cache) before ``save`` returns, so every committed save survives the process
    being killed, SIGKILL included, at every level; they differ in what survives an OS
    crash or a power loss:

    * ``"default"``: a save with ``durable=True`` (the engine's save before a tool that
      is not idempotent runs, and of every pause) returns only once the WAL is fsynced,
      one fsync shared by the durable saves of that moment
      (:mod:`~skillwire.store._group_commit`); other saves are not synced;
    * ``"strict"``: every commit is fsynced (``synchronous=FULL``);
    * ``"fast"``: no save is synced; ``durable`` is ignored.

    ``synchronous="FULL"`` is the ``strict`` level, as before the levels were named.

    Threads: with ``NORMAL``, a call runs on the calling thread (the event loop) and the
    loop does its SQLite work itself, about a tenth of a millisecond for a save, but it
    never waits there for the lock or another process (see
    :mod:`~skillwire.store._connection`), nor for a durable save's fsync unless the
    store's fsyncs are measured fast (:mod:`~skillwire.store._group_commit`).
    With ``FULL`` every call runs on the store's worker thread. The store may be used
    from one event loop after another (``asyncio.run`` twice) and from several threads.

    The constructor opens the file and migrates it (blocking briefly: build the store at
    start-up). It raises :class:`~skillwire.store.migrations.SchemaTooNewError` if the
    file was written by newer code. ``busy_timeout_ms`` is how long a write waits, on the
    worker thread, for another process holding the file's write lock.

    A task cancelled while awaiting a save does not cancel the save: it may still
    commit. Read the job again before retrying; the version check keeps a retry from
    being applied twice.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        durability: Durability = "default",
        synchronous: Literal["NORMAL", "FULL"] | None = None,
        busy_timeout_ms: int = 5000,
    ) -> None:
        if durability not in DURABILITY_LEVELS:
            levels = ", ".join(DURABILITY_LEVELS)
            raise UsageError(f"durability must be one of {levels}, not {durability!r}")
        if synchronous not in (None, "NORMAL", "FULL"):
            raise UsageError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        if synchronous == "FULL":
            durability = "strict"
        self.durability: Durability = durability
        """The level this store keeps (``synchronous="FULL"`` reads as ``strict``)."""
        mode = "FULL" if durability == "strict" else "NORMAL"
        super().__init__(path, mode, busy_timeout_ms, syncs=durability == "default")

    # -- the public API: each write whole or not at all -------------------------------

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        """Insert ``job`` as version 1 with its first events; returns it as stored.

        Raises :class:`VersionConflict` (expected 0) if a job with this id exists.
        """
        await self._submit(self._insert_job, write_values(job, 1, events, ()))
        return with_version(job, 1)

    async def save(
        self,
        job: JobRecord,
        *,
        expected_version: int,
        events: Sequence[Event] = (),
        model_calls: Sequence[ModelCallRecord] = (),
        durable: bool = False,
        claims: Sequence[Claim] = (),
        released: Sequence[str] = (),
    ) -> JobRecord:
        """Store ``job`` as version ``expected_version + 1`` with its new events and model
        calls, all or nothing (group-committed: see :mod:`~skillwire.store._group_commit`);
        returns a copy of ``job`` with the new version. With ``durable``, it returns only
        once the save is on disk (at the ``default`` level: see the class). ``claims``
        are taken and the ``released`` calls' claims given back in the same transaction
        (:mod:`~skillwire.store._claims`).

        Raises :class:`ClaimConflictError` when a claim's limit is reached,
        :class:`VersionConflict` if the stored version is not ``expected_version``
        and :class:`UsageError` if the events' or model calls' seqs do not each increase
        from past the last one stored; in each case nothing is written.
        """
        values = write_values(job, expected_version + 1, events, model_calls)
        if claims or released:
            taken, given_back = checked_claims(values["id"], claims, released, storable)
            await self._submit(self._update_job_claiming, values, taken, given_back)
        else:
            await self._submit(self._update_job, values)
        if durable:
            await self._sync()
        return with_version(job, expected_version + 1)

    async def get(self, job_id: str) -> JobRecord | None:
        """The job, or None. Raises :class:`JobStateTooNewError` for a newer state."""
        return await self._call(self._get, storable(job_id))

    async def ids_starting(self, prefix: str, *, limit: int = 10) -> list[str]:
        """The ids of at most ``limit`` jobs whose id starts with ``prefix``, in id order.

        One range of the primary key's index (``prefix <= id < the next string after
        every id that starts with it``): no row outside the range is read, and ``%``,
        ``_`` or any other character is only itself. Raises :class:`UsageError` for an
        empty prefix or a negative limit."""
        if not prefix:
            raise UsageError("a job id prefix must not be empty")
        if limit < 0:
            raise UsageError(f"limit must be >= 0, not {limit}")
        return await self._call(self._ids_starting, storable(prefix), limit)

    async def events(self, job_id: str, *, after_seq: int = 0) -> list[Event]:
        """The job's events with ``seq > after_seq``, in order."""
        return await self._call(self._events, storable(job_id), after_seq)

    async def model_calls(self, job_id: str) -> list[ModelCallRecord]:
        """The job's model calls, in order."""
        return await self._call(self._model_calls, storable(job_id))

    async def bytes_for(self, job_id: str) -> int:
        """Bytes of the job's stored values: its row, its events and its model calls.

        Text counts its UTF-8 bytes, numbers 8 bytes, NULL none. SQLite's record
        headers, page slack and the indexes are not counted (0 for an unknown job).
        """
        return await self._call(self._bytes_for, storable(job_id))

    async def close(self) -> None:
        """Finish the queued work, checkpoint, close the connections, stop the thread.

        Calls made after ``close`` starts raise :class:`UsageError`.
        """
        if self._closed:
            return
        self._closed = True
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._close)
        finally:
            self._executor.shutdown(wait=False)

    async def __aenter__(self) -> SQLiteJobStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- statements (under the lock, on either thread) ---------------------------------

    def _insert_job(self, db: sqlite3.Connection, values: WriteValues) -> None:
        if _INSERT_JOB.execute(db, values).rowcount == 0:
            raise VersionConflict(values["id"], 0, _stored_version(db, values["id"]))
        if values["data"] is not None:
            _APPEND.execute(db, values)

    def _update_job(self, db: sqlite3.Connection, values: WriteValues) -> None:
        updated = _UPDATE_JOB.execute(db, values)
        if updated.rowcount == 0:  # another version, a seq stored, or a kept column changed
            updated = _UPDATE_JOB_ANEW.execute(db, values)
        if updated.rowcount == 0:  # nothing was written: say why
            _refuse(db, values)
        if values["data"] is not None:
            _APPEND.execute(db, values)

    def _update_job_claiming(
        self,
        db: sqlite3.Connection,
        values: WriteValues,
        claims: list[Claim],
        released: list[str],
    ) -> None:
        _claims.check_claims(db, values["id"], claims)  # reads only: refused, nothing written
        self._update_job(db, values)
        _claims.keep_claims(db, values["id"], claims, released)

    async def claim_ledger(self, claims: Sequence[Claim]) -> ClaimSnapshot:
        """How many claims count now against each of ``claims`` (see
        :class:`~skillwire.core.store.ClaimStore`)."""
        return await self._call(self._claim_ledger, list(claims))

    def _claim_ledger(self, claims: list[Claim]) -> ClaimSnapshot:
        db = self._db()
        counts = {}
        for claim in claims:
            found = _claims.count(db, replace(claim, key=storable(claim.key)))
            counts[claim.key] = replace(found, key=claim.key)
        return ClaimSnapshot(counts)

    def _get(self, job_id: str) -> JobRecord | None:
        # fetchall: a statement left unfinished would hold a read snapshot open.
        found = self._db().execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        rows = found.fetchall()
        return _job_read(rows[0]) if rows else None

    def _ids_starting(self, prefix: str, limit: int) -> list[str]:
        above = after_prefix(prefix)
        if above is None:  # the prefix is all U+10FFFF: every id from it on starts with it
            found = self._db().execute(_IDS_FROM, (prefix, limit))
        else:
            found = self._db().execute(_IDS_BETWEEN, (prefix, above, limit))
        return [row[0] for row in found.fetchall()]

    def _select_jobs(self, sql: str, params: dict[str, Any]) -> list[JobRecord]:
        return [_job_read(row) for row in self._db().execute(sql, params).fetchall()]

    def _events(self, job_id: str, after_seq: int) -> list[Event]:
        # Entries whose last event is past after_seq: the others hold none to return.
        sql = "SELECT data FROM journal WHERE job_id = ? AND last_event > ? ORDER BY version"
        rows = self._db().execute(sql, (job_id, after_seq)).fetchall()
        return [
            event_from(job_id, item)
            for (data,) in rows
            for item in orjson.loads(data)["events"]
            if item["seq"] > after_seq
        ]

    def _model_calls(self, job_id: str) -> list[ModelCallRecord]:
        sql = "SELECT data FROM journal WHERE job_id = ? ORDER BY version"
        rows = self._db().execute(sql, (job_id,)).fetchall()
        return [
            call_from(job_id, item)
            for (data,) in rows
            for item in orjson.loads(data)["model_calls"]
        ]

    def _bytes_for(self, job_id: str) -> int:
        db = self._db()
        total = 0
        for table in ("jobs", "journal"):
            key = "id" if table == "jobs" else "job_id"
            for row in db.execute(f"SELECT * FROM {table} WHERE {key} = ?", (job_id,)).fetchall():
                total += sum(stored_bytes(value) for value in row)
        return total

    # -- skill versions (core.store.SkillVersionStore) ----------------------------------

    async def put_skill_version(self, version: SkillVersion) -> bool:
        """Keep ``version`` of a skill; False when it was kept already (a version is a
        content hash: the row is never changed)."""
        outcome: list[bool] = []
        await self._submit(_skill_versions.put_version, version, outcome)
        return bool(outcome and outcome[-1])

    async def skill_versions(self, skill_id: str) -> list[SkillVersion]:
        """Every version kept of ``skill_id``, oldest first, with its files and pin."""
        return await self._call(self._skill_versions, storable(skill_id))

    async def pin_skill(self, skill_id: str, version: str | None) -> None:
        """New jobs of ``skill_id`` start on ``version`` (None: on the loaded one).
        Raises NotFoundError for a version not kept."""
        skill_id = storable(skill_id)
        if version is not None:
            version = storable(version)
            if not await self._call(self._has_version, skill_id, version):
                raise NotFoundError(f"skill {skill_id} has no version {version} in this store")
        await self._submit(_skill_versions.pin_skill, skill_id, version)

    def _has_version(self, skill_id: str, version: str) -> bool:
        return _skill_versions.has_version(self._db(), skill_id, version)

    def _skill_versions(self, skill_id: str) -> list[SkillVersion]:
        return _skill_versions.read_versions(self._db(), skill_id)

    async def list(  # last in the class: below it, "list" would name this method
        self,
        *,
        owner: str | None = None,
        status: JobStatus | None = None,
        skill_id: str | None = None,
        outcome_class: OutcomeClass | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[JobRecord]:
        """Jobs matching every filter given, newest first: by ``created_at`` as text (so
        ISO-8601 times in one format and zone), then by insertion order."""
        filters = job_filters(
            storable,
            owner=owner,
            status=status,
            skill_id=skill_id,
            outcome_class=outcome_class,
            limit=limit,
            offset=offset,
        )
        where = " AND ".join(f"{column} = :{column}" for column in filters)
        sql = (
            f"SELECT {JOB_COLUMNS} FROM jobs {f'WHERE {where} ' if where else ''}"
            "ORDER BY created_at DESC, rowid DESC LIMIT :limit OFFSET :offset"
        )
        params = filters | {"limit": limit, "offset": offset}
        return await self._call(self._select_jobs, sql, params)


_IDS_BETWEEN = "SELECT id FROM jobs WHERE id >= ? AND id < ? ORDER BY id LIMIT ?"
_IDS_FROM = "SELECT id FROM jobs WHERE id >= ? ORDER BY id LIMIT ?"


def _job_read(row: tuple[Any, ...]) -> JobRecord:
    """The job of a row of :data:`JOB_COLUMNS`; :class:`JobStateTooNewError` if its
    state is newer than this code reads."""
    job_id, state_version = row[0], row[8]  # see JOB_COLUMNS
    if state_version > JOB_STATE_VERSION:
        raise JobStateTooNewError(job_id, state_version)
    return job_from_row(row)


def _stored_version(db: sqlite3.Connection, job_id: str) -> int | None:
    found = db.execute("SELECT version FROM jobs WHERE id = ?", (job_id,)).fetchall()
    return int(found[0][0]) if found else None


def _refuse(db: sqlite3.Connection, values: WriteValues) -> None:
    """Raise why a save that wrote nothing was refused: :class:`VersionConflict` if the
    stored version is not the one before ``values["version"]``, else
    :class:`UsageError` naming the first seq already stored."""
    job_id, expected = values["id"], values["version"] - 1
    first_event, first_call = values["first_event"], values["first_call"]
    found = db.execute(
        "SELECT version, last_event, last_call FROM jobs WHERE id = ?", (job_id,)
    ).fetchall()
    if not found or found[0][0] != expected:
        raise VersionConflict(job_id, expected, int(found[0][0]) if found else None)
    _version, had_event, had_call = found[0]
    for what, first, had in (
        ("event", first_event, had_event),
        ("model call", first_call, had_call),
    ):
        if first <= had:
            raise UsageError(
                f"job {job_id}: an event or model call seq is already stored: {what} {first} "
                f"({what}s up to {had} are)"
            )
    raise AssertionError(f"job {job_id}: a save at version {expected} wrote nothing")
