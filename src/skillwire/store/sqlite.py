"""The embedded job store: stdlib ``sqlite3`` in WAL mode, run on the caller's thread.

One connection, guarded by a lock, serves every call. With ``synchronous="NORMAL"`` (the
default) a commit appends to the WAL through the OS page cache and does not fsync, so a
save is some 50 to 150 microseconds of CPU, less than a hop to a thread and back costs.
So a call runs right where it is made, on the event loop, but never waits there:

* it takes the lock only if it is free, and SQLite's busy timeout is 0 on the loop, so
  it never waits for another process holding the file's write lock;
* if the lock is held (by the worker thread, or another thread using the store), the
  call's task waits for its release without blocking the loop, then runs;
* if SQLite reports the file busy or locked, what the call did is rolled back and it
  goes to the store's worker thread, which waits up to ``busy_timeout_ms`` for the file.
  Any other outcome, an error included, is the call's answer.

Checkpoints (copying the WAL back into the database file, with fsyncs) never run on the
loop: SQLite's automatic checkpoint is off on this connection. The worker thread
checkpoints on a second connection, without the lock, after about every 1,000 WAL pages
written (500 commits at most), and at :meth:`close`. The WAL starts over once all of it
is copied and no commit came meanwhile; if commits never pause for that long and it
passes 4,000 pages, a checkpoint holds the writers off while it copies the last pages
written, so the WAL stays bounded. With ``synchronous="FULL"`` every commit fsyncs, so
every call is one hop to the worker thread, and SQLite checkpoints as by default.

A save is ``UPDATE jobs ... WHERE id = ? AND version = ? AND last_event < ? AND
last_call < ?`` (the job's row keeps the highest seqs stored: ``m003_seqs_on_the_job``)
followed by one ``journal`` row holding the save's new events and model calls
(``m002_journal`` in migrations.py): all of it lands or none of it, and only if the
stored version is the one the caller read and the save's seqs follow those stored.
Writes are group-committed: the saves and creates queued on an event loop while the
tasks ready at that moment run share one ``BEGIN IMMEDIATE`` transaction, so a thousand
jobs saving at about the same moment cost one commit. A write that is refused (a version
conflict, a seq already stored) is refused by that ``UPDATE`` (or by the ``INSERT`` of a
job that exists) before it changes anything, so it needs no savepoint: it raises to its
own caller and the others land.

Errors raised on purpose::

    SkillwireError
    ├── SchemaTooNewError     the file was written by a newer skillwire (migrations.py)
    ├── JobStateTooNewError   a job's state_version is newer than JOB_STATE_VERSION
    └── UsageError            bad argument, mismatched job_id, seq stored or out of order,
                              closed store
    VersionConflict           the stored version is not the expected one (core.store)
    TypeError                 a value to persist is not plain JSON
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

import orjson

from skillwire.core.errors import JobStateTooNewError, UsageError, VersionConflict
from skillwire.core.job import (
    JOB_STATE_VERSION,
    Event,
    JobRecord,
    JobStatus,
    ModelCallRecord,
    OutcomeClass,
    Waiting,
)
from skillwire.core.plainjson import plain_dumps
from skillwire.store.migrations import migrate

__all__ = ["JobStateTooNewError", "SQLiteJobStore"]

T = TypeVar("T")

log = logging.getLogger("skillwire.store")

_JOB_COLUMNS = (
    "id, skill_id, owner, status, outcome_class, version, created_at, updated_at, "
    "state_version, body"
)

_CHECKPOINT_PAGES = 1000
"""Checkpoint after about this many WAL pages written (SQLite's own default)."""
_CHECKPOINT_MIN_COMMITS = 16
_CHECKPOINT_MAX_COMMITS = 500
"""Bounds on the commits between two checkpoints, whatever the pages per commit."""
_CHECKPOINT_FIRST = 100
"""Commits before the first checkpoint, before the pages per commit are known."""
_WAL_MAX_PAGES = 4 * _CHECKPOINT_PAGES
"""Past this, a checkpoint holds the writers off until the WAL can start over."""
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class SQLiteJobStore:
    """A :class:`~skillwire.core.store.JobStore` in one SQLite file.

    Durability: the file is in WAL mode with ``synchronous=NORMAL`` by default. A commit
    is written to the WAL (the OS page cache) before ``save`` returns, so a committed
    save survives the process being killed, SIGKILL included; only an OS crash or power
    loss can lose the last commits, and the file stays consistent even then. Pass
    ``synchronous="FULL"`` to fsync the WAL on every commit and keep commits through
    power loss too, at the price of one fsync per save.

    Threads: with ``NORMAL``, a call runs on the calling thread (the event loop) and the
    loop does its SQLite work itself, about a tenth of a millisecond for a save, but it
    never waits there for the lock, another process or an fsync (see the module's
    docstring).
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
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        busy_timeout_ms: int = 5000,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise UsageError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._spare: sqlite3.Connection | None = None  # the worker's, for checkpoints
        self._lock = threading.Lock()  # held by whoever uses self._conn
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._waiters_lock = threading.Lock()  # guards self._waiters and self._batches
        self._batches: dict[asyncio.AbstractEventLoop, list[_Queued]] = {}
        self._flushes: set[asyncio.Task[None]] = set()
        self._inline = False  # set by _open: NORMAL, and the file is in WAL mode
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._closed = False
        self._commits = 0  # since the last checkpoint was queued
        self._checkpoint_every = _CHECKPOINT_FIRST
        self._checkpoint_queued = False
        self._wal_pages = 0  # the WAL's length at the last checkpoint
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillwire-sqlite")
        try:
            self._executor.submit(self._open, synchronous).result()
        except BaseException:
            self._executor.shutdown(wait=True)
            raise

    # -- the public API: each write whole or not at all -------------------------------

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        """Insert ``job`` as version 1 with its first events; returns it as stored.

        Raises :class:`VersionConflict` (expected 0) if a job with this id exists.
        """
        row = _job_row(job, 1)
        entry = _journal_entry(job.id, events, ())
        await self._submit(self._insert_job, row, entry)
        return _with_version(job, 1)

    async def save(
        self,
        job: JobRecord,
        *,
        expected_version: int,
        events: Sequence[Event] = (),
        model_calls: Sequence[ModelCallRecord] = (),
    ) -> JobRecord:
        """Store ``job`` as version ``expected_version + 1`` with its new events and model
        calls, all or nothing (group-committed: see the module); returns a copy of ``job``
        with the new version.

        Raises :class:`VersionConflict` if the stored version is not ``expected_version``
        and :class:`UsageError` if the events' or model calls' seqs do not each increase
        from past the last one stored; in both cases nothing is written.
        """
        row = _job_row(job, expected_version + 1)
        entry = _journal_entry(job.id, events, model_calls)
        await self._submit(self._update_job, row, expected_version, entry)
        return _with_version(job, expected_version + 1)

    async def get(self, job_id: str) -> JobRecord | None:
        """The job, or None. Raises :class:`JobStateTooNewError` for a newer state."""
        return await self._call(self._get, job_id)

    async def events(self, job_id: str, *, after_seq: int = 0) -> list[Event]:
        """The job's events with ``seq > after_seq``, in order."""
        return await self._call(self._events, job_id, after_seq)

    async def model_calls(self, job_id: str) -> list[ModelCallRecord]:
        """The job's model calls, in order."""
        return await self._call(self._model_calls, job_id)

    async def bytes_for(self, job_id: str) -> int:
        """Bytes of the job's stored values: its row, its events and its model calls.

        Text counts its UTF-8 bytes, numbers 8 bytes, NULL none. SQLite's record
        headers, page slack and the indexes are not counted (0 for an unknown job).
        """
        return await self._call(self._bytes_for, job_id)

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

    # -- group commit ----------------------------------------------------------------

    async def _submit(self, fn: Callable[..., None], *args: Any) -> None:
        """Write ``fn(db, *args)``, sharing a transaction with the writes queued on this
        loop meanwhile (group commit).

        The first write queued starts a flush, which runs once the tasks ready now have
        had their turn: writes made at about the same moment by many jobs then cost one
        commit. Each write still lands whole or not at all: a write refused (a version
        conflict, a seq already stored) has changed nothing, and its error is raised to
        its caller only.
        """
        if self._closed:
            raise UsageError(f"the job store {self.path} is closed")
        if not self._inline:
            await self._call(self._write, fn, *args)
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._waiters_lock:
            batch = self._batches.get(loop)
            first = batch is None
            if batch is None:
                batch = self._batches[loop] = []
            batch.append((fn, args, future))
        if first:
            loop.call_soon(self._flush_soon, loop)
        await future

    def _flush_soon(self, loop: asyncio.AbstractEventLoop) -> None:
        """Write the batch queued on ``loop``, right here if the store is free (the usual
        case: no task to create), else from a task that waits for it."""
        with self._waiters_lock:
            batch = self._batches.pop(loop, [])
        if not batch:
            return
        busy = False
        if self._lock.acquire(blocking=False):
            try:
                outcomes = self._write_batch([(fn, a) for fn, a, _f in batch])
            except sqlite3.OperationalError as err:
                if getattr(err, "sqlite_errorcode", 0) & 0xFF not in _BUSY_CODES:
                    _answer(batch, err)
                    return
                busy = True  # another process has the file (rolled back): wait for it
            except BaseException as exc:
                _answer(batch, exc)
                if not isinstance(exc, Exception):
                    raise
                return
            else:
                _answer(batch, outcomes)
                return
            finally:
                self._release()
        task = loop.create_task(self._flush(batch, busy=busy))
        self._flushes.add(task)  # a task nobody references may be collected
        task.add_done_callback(self._flushes.discard)

    async def _flush(self, batch: list[_Queued], *, busy: bool) -> None:
        """Write ``batch`` in one transaction once the store is free, or on the worker
        thread if the file is ``busy``; answer each writer."""
        items = [(fn, a) for fn, a, _f in batch]
        try:
            if busy:
                outcomes = await self._on_worker(self._write_batch, items)
            else:
                outcomes = await self._call(self._write_batch, items)
        except BaseException as exc:  # the whole batch failed: every writer hears why
            _answer(batch, exc)
            if not isinstance(exc, Exception):
                raise
            return
        _answer(batch, outcomes)

    def _write_batch(
        self, items: list[tuple[Callable[..., None], tuple[Any, ...]]]
    ) -> list[Exception | None]:
        """Every write of ``items`` in one transaction; a write's version conflict or
        seq already stored is its outcome, any other error fails the whole batch (rolled
        back).

        No savepoints are needed: each write checks the stored version and seqs in the
        statement that would change the job's row, and adds its journal row only once
        that succeeded, so a write refused for either reason has changed nothing.
        """
        db = self._db()
        outcomes: list[Exception | None] = []
        db.execute("BEGIN IMMEDIATE")
        try:
            for fn, args in items:
                try:
                    fn(db, *args)
                except (VersionConflict, UsageError) as exc:
                    outcomes.append(exc)
                else:
                    outcomes.append(None)
            db.execute("COMMIT" if None in outcomes else "ROLLBACK")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self._committed()
        return outcomes

    # -- where a call runs -------------------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``: on this thread if the store is free, after the holder of the
        lock is done if it is not, on the worker thread if the file is busy."""
        if self._closed:
            raise UsageError(f"the job store {self.path} is closed")
        if self._inline:
            if not self._lock.acquire(blocking=False):
                await self._acquire()
            try:
                return fn(*args)
            except sqlite3.OperationalError as err:
                if getattr(err, "sqlite_errorcode", 0) & 0xFF not in _BUSY_CODES:
                    raise
                # Another process has the file (_write has rolled back): wait for it
                # on the worker thread, with the busy timeout.
                self._rollback()
            finally:
                self._release()
        return await self._on_worker(fn, *args)

    async def _on_worker(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the worker thread, under the lock, waiting for the file."""
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, self._on_thread, fn, *args
        )

    async def _acquire(self) -> None:
        """Take the lock without blocking the loop: wait for its holder to release it.

        Not by queueing behind the holder on the worker thread: the worker holds the
        lock while it waits for the GIL, so under load every call after this one would
        find it held and queue too. Each waiter registers, then tries the lock: a
        holder that still has it at that try sees the waiter when it releases.
        """
        loop = asyncio.get_running_loop()
        while True:
            waiter = (loop, loop.create_future())
            with self._waiters_lock:
                self._waiters.append(waiter)
            try:
                if self._lock.acquire(blocking=False):
                    return
                await waiter[1]
            finally:
                with self._waiters_lock, contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)

    def _release(self) -> None:
        """Release the lock and wake the tasks waiting for it, on whatever loop."""
        self._lock.release()
        if not self._waiters:  # a waiter appends before it checks the lock
            return
        with self._waiters_lock:
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed
                loop.call_soon_threadsafe(_wake, future)

    @contextlib.contextmanager
    def _holding(self) -> Iterator[None]:
        """Hold the lock (blocking: not on the loop)."""
        self._lock.acquire()
        try:
            yield
        finally:
            self._release()

    def _on_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """On the worker thread: ``fn(*args)`` under the lock, waiting for the file."""
        with self._holding():
            db = self._db()
            if not self._inline:  # the busy timeout is always set
                return fn(*args)
            db.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms:d}")
            try:
                return fn(*args)
            finally:
                db.execute("PRAGMA busy_timeout = 0")

    def _rollback(self) -> None:
        if self._conn is not None and self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    # -- opening, closing, checkpoints (on the worker thread) --------------------------

    def _open(self, synchronous: str) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms:d}")
            (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            # Not enforced: a write checks its job row first (the version check) and
            # adds its events and model calls in the same transaction, so they always
            # have a job, and nothing deletes jobs. Enforcing costs a lookup per row.
            conn.execute("PRAGMA foreign_keys = OFF")
            # 32 MiB of page cache (the default is 2): a thousand jobs running at once
            # write to that many pages, which then stay in memory between their saves.
            conn.execute("PRAGMA cache_size = -32768")
            migrate(conn, where=str(self.path))
            # Inline only where a commit does not fsync: NORMAL, in WAL mode (a file
            # system without WAL support keeps the old journal, which syncs).
            if synchronous == "NORMAL" and str(mode).lower() == "wal":
                conn.execute("PRAGMA wal_autocheckpoint = 0")
                conn.execute("PRAGMA busy_timeout = 0")
                self._spare = sqlite3.connect(
                    self.path, timeout=0, isolation_level=None, check_same_thread=False
                )
                self._inline = True
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _close(self) -> None:
        with self._holding():
            if self._spare is not None:
                self._spare.close()
                self._spare = None
            if self._conn is not None:
                try:
                    if self._inline:  # whatever another process keeps open
                        self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                finally:
                    self._conn.close()  # the last connection to close checkpoints it all
                    self._conn = None

    def _committed(self) -> None:
        """Count a commit (under the lock); queue a checkpoint when it is time."""
        if not self._inline:
            return
        self._commits += 1
        if self._commits < self._checkpoint_every or self._checkpoint_queued:
            return
        commits, self._commits = self._commits, 0
        self._checkpoint_queued = True
        try:
            self._executor.submit(self._checkpoint, commits)
        except RuntimeError:  # the executor is shut down: the store is closing
            self._checkpoint_queued = False

    def _checkpoint(self, commits: int) -> None:
        """Copy the WAL back into the database file, on the worker thread.

        On the spare connection, without the lock: the loop keeps committing while the
        pages are copied and synced. PASSIVE never waits, for a writer here or a reader
        in another process (which can hold a checkpoint back). Once all of the WAL is
        copied, the next commit starts it over from its beginning, which keeps its size
        bounded; but only if no commit came in the meantime. If commits never paused for
        that long and the WAL passed ``_WAL_MAX_PAGES``, the few pages written during the
        copy are copied again under the lock, holding the writers off for that long.
        """
        try:
            if self._spare is None:
                return
            _, frames, _ = self._spare.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            # frames: the pages in the WAL since it last started over
            new = frames - self._wal_pages if frames >= self._wal_pages else frames
            self._wal_pages = frames
            if new > 0:  # adapt to the pages a commit writes
                every = _CHECKPOINT_PAGES * commits // new
                self._checkpoint_every = min(
                    max(every, _CHECKPOINT_MIN_COMMITS), _CHECKPOINT_MAX_COMMITS
                )
            if frames > _WAL_MAX_PAGES:
                with self._holding():
                    if self._conn is not None:
                        self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self._wal_pages = 0
        except sqlite3.Error as err:  # the next checkpoint tries again
            if getattr(err, "sqlite_errorcode", 0) & 0xFF not in _BUSY_CODES:
                log.warning("checkpoint of %s failed: %s", self.path, err)
        finally:
            self._checkpoint_queued = False

    # -- statements (under the lock, on either thread) ---------------------------------

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
        self._committed()

    def _insert_job(
        self, db: sqlite3.Connection, row: tuple[Any, ...], entry: _Entry | None
    ) -> None:
        last_event, last_call = (0, 0) if entry is None else (entry[1], entry[3])
        inserted = db.execute(
            f"INSERT INTO jobs ({_JOB_COLUMNS}, last_event, last_call) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            (*row, last_event, last_call),
        )
        if inserted.rowcount == 0:
            raise VersionConflict(row[0], 0, _stored_version(db, row[0]))
        _append(db, row[0], 1, entry)

    def _update_job(
        self,
        db: sqlite3.Connection,
        row: tuple[Any, ...],
        expected: int,
        entry: _Entry | None,
    ) -> None:
        job_id = row[0]
        # The seqs: the save's first event and model call must come after those stored
        # (a save without one checks nothing: the bound is past any seq).
        first_event, last_event, first_call, last_call = (
            (0, 0, 0, 0) if entry is None else entry[:4]
        )
        first_event, first_call = first_event or _NO_SEQ, first_call or _NO_SEQ
        seqs = (last_event, last_call, job_id, expected, first_event, first_call)
        # The columns a job keeps (skill, owner, creation time) are checked, not set:
        # setting them rewrites their index entries, a third of an update's cost.
        updated = db.execute(
            "UPDATE jobs SET status = ?, outcome_class = ?, version = ?, updated_at = ?, "
            "state_version = ?, body = ?, last_event = max(last_event, ?), "
            "last_call = max(last_call, ?) WHERE id = ? AND version = ? AND last_event < ? "
            "AND last_call < ? AND skill_id = ? AND owner = ? AND created_at = ?",
            (*row[3:6], *row[7:], *seqs, row[1], row[2], row[6]),
        )
        if updated.rowcount == 0:  # another version, a seq stored, or one of those changed
            updated = db.execute(
                "UPDATE jobs SET skill_id = ?, owner = ?, status = ?, outcome_class = ?, "
                "version = ?, created_at = ?, updated_at = ?, state_version = ?, body = ?, "
                "last_event = max(last_event, ?), last_call = max(last_call, ?) "
                "WHERE id = ? AND version = ? AND last_event < ? AND last_call < ?",
                (*row[1:], *seqs),
            )
        if updated.rowcount == 0:  # nothing was written: say why
            _refuse(db, job_id, expected, first_event, first_call)
        _append(db, job_id, expected + 1, entry)

    def _get(self, job_id: str) -> JobRecord | None:
        # fetchall: a statement left unfinished would hold a read snapshot open.
        found = self._db().execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        rows = found.fetchall()
        return _job_from_row(rows[0]) if rows else None

    def _select_jobs(self, sql: str, params: tuple[Any, ...]) -> list[JobRecord]:
        return [_job_from_row(row) for row in self._db().execute(sql, params).fetchall()]

    def _events(self, job_id: str, after_seq: int) -> list[Event]:
        # Entries whose last event is past after_seq: the others hold none to return.
        sql = "SELECT data FROM journal WHERE job_id = ? AND last_event > ? ORDER BY version"
        rows = self._db().execute(sql, (job_id, after_seq)).fetchall()
        return [
            _event_from(job_id, item)
            for (data,) in rows
            for item in orjson.loads(data)["events"]
            if item["seq"] > after_seq
        ]

    def _model_calls(self, job_id: str) -> list[ModelCallRecord]:
        sql = "SELECT data FROM journal WHERE job_id = ? ORDER BY version"
        rows = self._db().execute(sql, (job_id,)).fetchall()
        return [
            _call_from(job_id, item)
            for (data,) in rows
            for item in orjson.loads(data)["model_calls"]
        ]

    def _bytes_for(self, job_id: str) -> int:
        db = self._db()
        total = 0
        for table in ("jobs", "journal"):
            key = "id" if table == "jobs" else "job_id"
            for row in db.execute(f"SELECT * FROM {table} WHERE {key} = ?", (job_id,)).fetchall():
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
        return await self._call(self._select_jobs, sql, (*params, limit, offset))


# -- rows, JSON --------------------------------------------------------------------------


_Queued = tuple[Callable[..., None], tuple[Any, ...], "asyncio.Future[None]"]
"""A write waiting for the next group commit: the function, its arguments, the answer."""


def _answer(batch: list[_Queued], outcome: BaseException | list[Exception | None]) -> None:
    """Tell each writer of ``batch`` its outcome: ``outcome`` for all if it is an
    exception (the whole batch failed), else the one at its place in the list."""
    if isinstance(outcome, BaseException):
        for _fn, _args, future in batch:
            if not future.done():
                future.set_exception(outcome)
        return
    for (_fn, _args, future), each in zip(batch, outcome, strict=True):
        if future.done():  # its task was cancelled; the write stands
            continue
        if each is None:
            future.set_result(None)
        else:
            future.set_exception(each)


def _with_version(job: JobRecord, version: int) -> JobRecord:
    """A shallow copy of ``job`` at ``version``: its fields copied as they are, four
    times cheaper than ``dataclasses.replace``, which rebuilds it through ``__init__``."""
    stored = object.__new__(type(job))
    stored.__dict__.update(job.__dict__)
    stored.version = version
    return stored


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _stored_version(db: sqlite3.Connection, job_id: str) -> int | None:
    found = db.execute("SELECT version FROM jobs WHERE id = ?", (job_id,)).fetchall()
    return int(found[0][0]) if found else None


_NO_SEQ = 2**63 - 1
"""The bound a save's first seq is checked against when it has none: past any seq."""

_Entry = tuple[int, int, int, int, str]
"""A save's journal entry: its first and last event seq, its first and last model-call
seq (0 for none), and its events and model calls as one JSON document."""


def _journal_entry(
    job_id: str, events: Sequence[Event], calls: Sequence[ModelCallRecord]
) -> _Entry | None:
    """The journal entry of a save's ``events`` and ``calls`` (None when there are
    none). Each list must be in ``seq`` order, without repeats, and belong to ``job_id``:
    :class:`UsageError` otherwise; a value that is not plain JSON is a ``TypeError``
    naming it."""
    if not events and not calls:
        return None
    for what, items in (("event", events), ("model call", calls)):
        last = 0
        for item in items:
            if item.job_id != job_id:
                raise UsageError(f"{what} {item.seq} belongs to job {item.job_id}, not {job_id}")
            if item.seq <= last:
                raise UsageError(
                    f"job {job_id}: {what} seq {item.seq} is already stored or out of order "
                    f"(it comes after seq {last})"
                )
            last = item.seq
    document = {
        "events": [e.to_dict() for e in events],
        "model_calls": [c.to_dict() for c in calls],
    }
    try:
        data = _dumps(document, f"job {job_id} journal")
    except TypeError:
        for event in events:  # name the event whose data is not JSON, if it is one
            _dumps(event.data, f"job {job_id} event {event.seq} data")
        raise
    if events:
        first_event, last_event = events[0].seq, events[-1].seq
    else:
        first_event = last_event = 0
    first_call, last_call = (calls[0].seq, calls[-1].seq) if calls else (0, 0)
    return first_event, last_event, first_call, last_call, data


def _refuse(
    db: sqlite3.Connection, job_id: str, expected: int, first_event: int, first_call: int
) -> None:
    """Raise why a save that wrote nothing was refused: :class:`VersionConflict` if the
    stored version is not ``expected``, else :class:`UsageError` naming the first seq
    already stored."""
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


def _append(db: sqlite3.Connection, job_id: str, version: int, entry: _Entry | None) -> None:
    """Add the journal entry of the save that writes ``version`` of the job (its seqs
    were checked against the job's, in the same transaction)."""
    if entry is None:
        return
    _first_event, last_event, _first_call, last_call, data = entry
    db.execute(
        "INSERT INTO journal (job_id, version, last_event, last_call, data) VALUES (?,?,?,?,?)",
        (job_id, version, last_event, last_call, data),
    )


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


def _event_from(job_id: str, item: dict[str, Any]) -> Event:
    """An event read back from its journal form (:meth:`Event.to_dict`: the fields but
    the job id)."""
    return Event(job_id=job_id, **item)


def _call_from(job_id: str, item: dict[str, Any]) -> ModelCallRecord:
    """A model call read back from its journal form (:meth:`ModelCallRecord.to_dict`)."""
    return ModelCallRecord(job_id=job_id, **item)


def _job_from_row(row: tuple[Any, ...]) -> JobRecord:
    job_id, skill_id, owner, status, outcome, version, created, updated, state_v, body = row
    if state_v > JOB_STATE_VERSION:
        raise JobStateTooNewError(job_id, state_v)
    data = orjson.loads(body)
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


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def _dumps(value: object, what: str) -> str:
    """Compact JSON of ``value``; a ``TypeError`` naming the path if it is not plain JSON.

    What is stored must read back equal to what was given, or fail here: a plain
    ``json.dumps`` would quietly turn tuples into lists and ``{1: ...}`` into
    ``{"1": ...}``. A plain value (:mod:`skillwire.core.plainjson`: the exact JSON types)
    is written by orjson; anything else takes the standard library's path, which
    accepts what reads back equal and names what does not.
    """
    data = plain_dumps(value)
    return data.decode() if data is not None else _dumps_checked(value, what)


def _dumps_checked(value: object, what: str) -> str:
    """:func:`_dumps` with the standard library: the encoder refuses what JSON cannot
    hold, then the text is read back and compared (subclasses, tuples and odd keys may
    not read back equal)."""
    try:  # first: it also refuses circular values
        text = _encode(value)
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


def _walk(
    value: object, path: str, above: frozenset[int] = frozenset()
) -> Iterator[tuple[str, object]]:
    yield path, value
    if isinstance(value, dict | list):
        if id(value) in above:  # a circular value: the encoder's error names it
            return
        above = above | {id(value)}
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}", above)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]", above)
