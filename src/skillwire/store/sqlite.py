"""The embedded job store: stdlib ``sqlite3`` in WAL mode behind one worker thread.

Every public method is one hop to the store's own thread and one transaction there, so
the event loop never waits on the disk and writes are serialized without locks. A save
is ``UPDATE jobs ... WHERE id = ? AND version = ?`` followed by the new events and model
calls, all in that transaction: all of it lands or none of it, and only if the stored
version is the one the caller read.

Errors raised on purpose::

    SkillwireError
    ├── SchemaTooNewError     the file was written by a newer skillwire (migrations.py)
    ├── JobStateTooNewError   a job's state_version is newer than JOB_STATE_VERSION
    └── UsageError            bad argument, mismatched job_id, duplicate seq, closed store
    VersionConflict           the stored version is not the expected one (core.store)
    TypeError                 a value to persist is not plain JSON
"""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

from skillwire.core.issues import SkillwireError, UsageError
from skillwire.core.job import (
    JOB_STATE_VERSION,
    Event,
    JobRecord,
    JobStatus,
    ModelCallRecord,
    OutcomeClass,
    Waiting,
)
from skillwire.core.store import VersionConflict
from skillwire.store.migrations import migrate

__all__ = ["JobStateTooNewError", "SQLiteJobStore"]

T = TypeVar("T")

_JOB_COLUMNS = (
    "id, skill_id, owner, status, outcome_class, version, created_at, updated_at, "
    "state_version, body"
)
_EVENT_COLUMNS = "job_id, seq, at, stage, kind, reason_code, message, data"
_CALL_COLUMNS = (
    "job_id, seq, at, stage, model, prompt_chars, input_tokens, output_tokens, latency_ms, "
    "ok, error"
)


class JobStateTooNewError(SkillwireError):
    """A stored job's ``state_version`` is newer than this code's ``JOB_STATE_VERSION``."""

    def __init__(self, job_id: str, found: int) -> None:
        super().__init__(
            f"job {job_id}: state version {found} is newer than this skillwire knows "
            f"(version {JOB_STATE_VERSION}); upgrade skillwire to read it"
        )
        self.job_id = job_id
        self.found = found


class SQLiteJobStore:
    """A :class:`~skillwire.core.store.JobStore` in one SQLite file.

    Durability: the file is in WAL mode with ``synchronous=NORMAL`` by default. A commit
    is written to the WAL (the OS page cache) before ``save`` returns, so a committed
    save survives the process being killed, SIGKILL included; only an OS crash or power
    loss can lose the last commits, and the file stays consistent even then. Pass
    ``synchronous="FULL"`` to fsync the WAL on every commit and keep commits through
    power loss too, at the price of one fsync per save.

    The constructor opens the file and migrates it (blocking briefly: build the store at
    start-up). It raises :class:`~skillwire.store.migrations.SchemaTooNewError` if the
    file was written by newer code. ``busy_timeout_ms`` is how long a write waits for
    another process holding the file's write lock.

    A task cancelled while awaiting a save does not cancel the save: it may still
    commit. Read the job again before retrying; the version check keeps a retry from
    being applied twice.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        busy_timeout_ms: int = 5000,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise UsageError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillwire-sqlite")
        try:
            self._executor.submit(self._open, synchronous, busy_timeout_ms).result()
        except BaseException:
            self._executor.shutdown(wait=True)
            raise

    # -- the public API: one hop, one transaction each ---------------------------------

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        """Insert ``job`` as version 1 with its first events; returns it as stored.

        Raises :class:`VersionConflict` (expected 0) if a job with this id exists.
        """
        row = _job_row(job, 1)
        event_rows = [_event_row(job.id, e) for e in events]
        await self._run(self._write, self._insert_job, row, event_rows)
        return replace(job, version=1)

    async def save(
        self,
        job: JobRecord,
        *,
        expected_version: int,
        events: Sequence[Event] = (),
        model_calls: Sequence[ModelCallRecord] = (),
    ) -> JobRecord:
        """Store ``job`` as version ``expected_version + 1`` with its new events and model
        calls, in one transaction; returns a copy of ``job`` with the new version.

        Raises :class:`VersionConflict` if the stored version is not ``expected_version``
        and :class:`UsageError` if an event or model call's ``seq`` is already stored; in
        both cases nothing is written.
        """
        row = _job_row(job, expected_version + 1)
        event_rows = [_event_row(job.id, e) for e in events]
        call_rows = [_call_row(job.id, c) for c in model_calls]
        await self._run(self._write, self._update_job, row, expected_version, event_rows, call_rows)
        return replace(job, version=expected_version + 1)

    async def get(self, job_id: str) -> JobRecord | None:
        """The job, or None. Raises :class:`JobStateTooNewError` for a newer state."""
        return await self._run(self._get, job_id)

    async def events(self, job_id: str, *, after_seq: int = 0) -> list[Event]:
        """The job's events with ``seq > after_seq``, in order."""
        return await self._run(self._events, job_id, after_seq)

    async def model_calls(self, job_id: str) -> list[ModelCallRecord]:
        """The job's model calls, in order."""
        return await self._run(self._model_calls, job_id)

    async def bytes_for(self, job_id: str) -> int:
        """Bytes of the job's stored values: its row, its events and its model calls.

        Text counts its UTF-8 bytes, numbers 8 bytes, NULL none. SQLite's record
        headers, page slack and the indexes are not counted (0 for an unknown job).
        """
        return await self._run(self._bytes_for, job_id)

    async def close(self) -> None:
        """Finish the queued work, close the connection and stop the thread."""
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

    # -- on the store's thread ---------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise UsageError(f"the job store {self.path} is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _open(self, synchronous: str, busy_timeout_ms: int) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms):d}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn, where=str(self.path))
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise UsageError(f"the job store {self.path} is closed")
        return self._conn

    def _write(self, fn: Callable[..., None], *args: Any) -> None:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            fn(db, *args)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _insert_job(self, db: sqlite3.Connection, row: tuple[Any, ...], events: list[Any]) -> None:
        inserted = db.execute(
            f"INSERT INTO jobs ({_JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO NOTHING",
            row,
        )
        if inserted.rowcount == 0:
            raise VersionConflict(row[0], 0, _stored_version(db, row[0]))
        _insert_children(db, row[0], events, [])

    def _update_job(
        self,
        db: sqlite3.Connection,
        row: tuple[Any, ...],
        expected: int,
        events: list[Any],
        calls: list[Any],
    ) -> None:
        job_id = row[0]
        updated = db.execute(
            "UPDATE jobs SET skill_id = ?, owner = ?, status = ?, outcome_class = ?, "
            "version = ?, created_at = ?, updated_at = ?, state_version = ?, body = ? "
            "WHERE id = ? AND version = ?",
            (*row[1:], job_id, expected),
        )
        if updated.rowcount == 0:
            raise VersionConflict(job_id, expected, _stored_version(db, job_id))
        _insert_children(db, job_id, events, calls)

    def _get(self, job_id: str) -> JobRecord | None:
        row = self._db().execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        found = row.fetchone()
        return None if found is None else _job_from_row(found)

    def _select_jobs(self, sql: str, params: tuple[Any, ...]) -> list[JobRecord]:
        return [_job_from_row(row) for row in self._db().execute(sql, params)]

    def _events(self, job_id: str, after_seq: int) -> list[Event]:
        rows = self._db().execute(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE job_id = ? AND seq > ? ORDER BY seq",
            (job_id, after_seq),
        )
        return [Event(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7])) for r in rows]

    def _model_calls(self, job_id: str) -> list[ModelCallRecord]:
        rows = self._db().execute(
            f"SELECT {_CALL_COLUMNS} FROM model_calls WHERE job_id = ? ORDER BY seq", (job_id,)
        )
        return [
            ModelCallRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]), r[10])
            for r in rows
        ]

    def _bytes_for(self, job_id: str) -> int:
        db = self._db()
        total = 0
        for table in ("jobs", "events", "model_calls"):
            key = "id" if table == "jobs" else "job_id"
            for row in db.execute(f"SELECT * FROM {table} WHERE {key} = ?", (job_id,)):
                total += sum(_stored_bytes(value) for value in row)
        return total

    async def list(  # last in the class: below it, "list" would name this method
        self,
        *,
        owner: str | None = None,
        status: JobStatus | None = None,
        skill_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[JobRecord]:
        """Jobs matching every filter given, newest first: by ``created_at`` as text (so
        ISO-8601 times in one format and zone), then by insertion order."""
        if limit < 0 or offset < 0:
            raise UsageError(f"limit and offset must be >= 0, not {limit} and {offset}")
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("owner", owner), ("status", status), ("skill_id", skill_id)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(str(value))
        where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
        sql = (
            f"SELECT {_JOB_COLUMNS} FROM jobs {where}"
            "ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?"
        )
        return await self._run(self._select_jobs, sql, (*params, limit, offset))


# -- rows, JSON --------------------------------------------------------------------------


def _stored_version(db: sqlite3.Connection, job_id: str) -> int | None:
    found = db.execute("SELECT version FROM jobs WHERE id = ?", (job_id,)).fetchone()
    return None if found is None else int(found[0])


def _insert_children(
    db: sqlite3.Connection, job_id: str, events: list[Any], calls: list[Any]
) -> None:
    try:
        db.executemany(f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)", events)
        db.executemany(
            f"INSERT INTO model_calls ({_CALL_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)", calls
        )
    except sqlite3.IntegrityError as err:
        raise UsageError(
            f"job {job_id}: an event or model call seq is already stored: {err}"
        ) from err


def _job_row(job: JobRecord, version: int) -> tuple[Any, ...]:
    body = {
        "waiting": None if job.waiting is None else job.waiting.to_dict(),
        "reply": job.reply,
        "fields": job.fields,
        "state": job.state,
    }
    outcome = None if job.outcome_class is None else str(OutcomeClass(job.outcome_class))
    return (
        job.id,
        job.skill_id,
        job.owner,
        str(JobStatus(job.status)),
        outcome,
        version,
        job.created_at,
        job.updated_at,
        job.state_version,
        _dumps(body, f"job {job.id}"),
    )


def _event_row(job_id: str, event: Event) -> tuple[Any, ...]:
    if event.job_id != job_id:
        raise UsageError(f"event {event.seq} belongs to job {event.job_id}, not {job_id}")
    data = _dumps(event.data, f"job {job_id} event {event.seq} data")
    return (job_id, event.seq, event.at, event.stage, event.kind, event.reason_code,
            event.message, data)  # fmt: skip


def _call_row(job_id: str, call: ModelCallRecord) -> tuple[Any, ...]:
    if call.job_id != job_id:
        raise UsageError(f"model call {call.seq} belongs to job {call.job_id}, not {job_id}")
    return (job_id, call.seq, call.at, call.stage, call.model, call.prompt_chars,
            call.input_tokens, call.output_tokens, call.latency_ms, int(call.ok),
            call.error)  # fmt: skip


def _job_from_row(row: tuple[Any, ...]) -> JobRecord:
    job_id, skill_id, owner, status, outcome, version, created, updated, state_v, body = row
    if state_v > JOB_STATE_VERSION:
        raise JobStateTooNewError(job_id, state_v)
    data = json.loads(body)
    waiting = data["waiting"]
    return JobRecord(
        id=job_id,
        skill_id=skill_id,
        status=JobStatus(status),
        outcome_class=None if outcome is None else OutcomeClass(outcome),
        owner=owner,
        created_at=created,
        updated_at=updated,
        version=version,
        waiting=None if waiting is None else Waiting.from_dict(waiting),
        reply=data["reply"],
        fields=data["fields"],
        state=data["state"],
        state_version=state_v,
    )


def _stored_bytes(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes):
        return len(value)
    return 8


def _dumps(value: object, what: str) -> str:
    """Compact JSON of ``value``; a ``TypeError`` naming the path if it is not plain JSON.

    ``json.dumps`` alone would quietly turn tuples into lists and ``{1: ...}`` into
    ``{"1": ...}``; what is stored must read back equal to what was given, or fail here.
    """
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what}: {_first_non_json(value) or err}") from err
    if json.loads(text) != value:
        raise TypeError(f"{what}: {_first_non_json(value) or 'does not read back equal'}")
    return text


def _first_non_json(value: object, path: str = "$") -> str | None:
    for where, item in _walk(value, path):
        if isinstance(item, float) and not math.isfinite(item):
            return f"{where} is {item!r}, which JSON cannot hold"
        if item is not None and not isinstance(item, str | int | float | list | dict):
            return f"{where} has type {type(item).__name__}, which is not JSON"
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return f"{where} has a key of type {type(key).__name__} ({key!r})"
    return None


def _walk(value: object, path: str) -> Iterator[tuple[str, object]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")
