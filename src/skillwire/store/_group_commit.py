"""Group commit: the writes queued on an event loop share one transaction.

The first write queued on a loop starts a flush, which runs once the tasks ready at
that moment have had their turn: a thousand jobs saving at about the same moment then
cost one ``BEGIN IMMEDIATE`` ... ``COMMIT``.

The rule that keeps one write from failing the others: **a write fails before it
changes anything, or is undone alone.**

* Before: what a write binds is made before it is queued, and checked there (its JSON,
  its seqs in order): such a mistake fails its caller before the batch. In the batch, a
  write raises :class:`VersionConflict` or :class:`UsageError` only from the statement
  that would first change the database (the ``UPDATE`` of the job's row that checks its
  version and seqs, the ``INSERT`` of a job that exists), and
  :class:`ClaimConflictError` only from the reads before it, so it has changed nothing
  and needs no savepoint: it raises to its own caller, and the others land.
* Alone: a write that fails of its own making in the batch (:data:`OWN_FAULTS`: a value
  SQLite cannot take, a text past its length limit), perhaps after its first statement
  changed the job's row, rolls the transaction back, and the batch is written again
  without it: its error goes to its caller only. That costs a second transaction when
  it happens, instead of a savepoint around every write.

An error of the store's own (the file busy, locked, full or unreadable) fails the whole
batch and every writer hears it; a busy file first sends the batch to the worker thread.

Durable writes, grouped too. A commit on the loop (``synchronous="NORMAL"``) is in the
WAL, in the OS page cache, not on disk. A write that must survive power loss (the
store's ``durable=True``) commits the same way, then waits for :meth:`GroupCommit._sync`:
an ``fdatasync`` of the WAL file, started after its commit. The writers that ask while
one runs share the next one, so jobs that need a durable save at about the same moment
pay for one fsync between them (and the writes of one batch are covered by the same).

Where it runs: on the loop itself while the store's fsyncs are measured fast (an
average under :data:`INLINE_SYNC_SECONDS`), else on the worker thread. The hop to the
thread and back (a wake-up of the worker, another of the loop through its self-pipe)
costs more CPU than the fsync's own (0.15 to 0.3 ms per refund job for its two durable
saves), and the caller waits for the fsync either way; but a slow disk must not stall
the loop for long, so once fsyncs take long the next ones go to the worker until they
are measured fast again. The first one goes to the worker too, before any is measured.
While the loop waits for its fsync, no write of that loop can commit, so none needs
another; writers on other loops that ask meanwhile wait for it as for the worker's,
and share the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillwire.core.errors import ClaimConflictError, UsageError, VersionConflict
from skillwire.store._connection import SharedConnection, is_busy

__all__ = ["INLINE_SYNC_SECONDS", "OWN_FAULTS", "GroupCommit", "sync_file"]

INLINE_SYNC_SECONDS = 0.005
"""A durable write's fsync runs on the event loop while the store's fsyncs take less than
this on average, else on the worker thread (see the module): the longest the loop
stalls for one. The WAL's ``fdatasync`` takes 0.23 ms (median; 0.43 ms p99) on the
test machine's idle virtual disk (ext4), 2 to 3.5 ms while other work loads both of its
cores; a disk that takes longer keeps them on the worker."""

OWN_FAULTS = (
    ValueError,
    TypeError,
    OverflowError,
    sqlite3.DataError,
    sqlite3.IntegrityError,
    sqlite3.InterfaceError,
    sqlite3.ProgrammingError,
)
"""Errors a write's own values cause: text the driver cannot encode, a number or type
it cannot bind, a value past SQLite's limits or against a constraint. The others (the
file busy, locked, full, unreadable) are the store's, and fail the whole batch."""

Write = Callable[..., None]
"""A write: ``fn(db, *args)`` on the connection, inside a transaction it does not end."""

_Queued = tuple[Write, tuple[Any, ...], "asyncio.Future[None]"]
"""A write waiting for the next group commit: the function, its arguments, the answer."""

_SyncWaiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]
"""A durable write waiting for the next fsync: its loop and the future it awaits."""

_clock = time.perf_counter
"""What fsyncs are timed with (the tests replace it to make a disk slow)."""


class GroupCommit(SharedConnection):
    """A :class:`SharedConnection` whose writes are group-committed (see the module).

    With ``synchronous="FULL"`` every commit fsyncs on the worker thread, so each write
    is a transaction of its own there.
    """

    def __init__(
        self, path: str | Path, synchronous: str, busy_timeout_ms: int, *, syncs: bool = True
    ) -> None:
        self._batches: dict[asyncio.AbstractEventLoop, list[_Queued]] = {}  # _waiters_lock
        self._flushes: set[asyncio.Task[None]] = set()
        self._syncs = syncs  # False: durable writes are not synced (durability "fast")
        self._synced_seq = 0  # every commit up to this one is on disk (_sync_lock)
        self._sync_running = False  # an fsync is queued or under way (_sync_lock)
        self._sync_waiters: list[_SyncWaiter] = []  # who waits for it (_sync_lock)
        # The fsync's expected seconds (_sync_lock): not measured yet, so not inline.
        self._sync_seconds = INLINE_SYNC_SECONDS
        self._sync_lock = threading.Lock()
        self._dir_synced = False
        super().__init__(path, synchronous, busy_timeout_ms)
        self._wal_path = Path(f"{self.path}-wal")

    async def _sync(self) -> None:
        """Return once every commit made before this call is on disk.

        Only a commit on the loop needs it: with ``synchronous="FULL"`` (and in a file
        not in WAL mode) SQLite syncs each commit itself. Otherwise the WAL file is
        fsynced, here if fsyncs are fast, else on the worker thread (see the module); a
        caller that finds an fsync under way which started before its commit waits for
        it, then shares the next one with whoever asked meanwhile. An ``OSError`` of the
        fsync is raised to every caller sharing it.

        The worker wakes the waiters' loops itself (one ``call_soon_threadsafe`` per
        loop), without a ``concurrent.futures.Future`` chained to an asyncio one: the
        hop costs about a third less CPU.
        """
        if not (self._inline and self._syncs):
            return
        target = self._commit_seq
        while True:
            with self._sync_lock:
                if self._synced_seq >= target:
                    return
                here = False
                if not self._sync_running:
                    if self._closed:
                        raise UsageError(f"the job store {self.path} is closed")
                    self._sync_running = True
                    here = self._sync_seconds < INLINE_SYNC_SECONDS
                    if not here:
                        self._executor.submit(self._fsync_wal)
                if not here:
                    loop = asyncio.get_running_loop()
                    waiter: asyncio.Future[None] = loop.create_future()
                    self._sync_waiters.append((loop, waiter))
            if here:  # it covers every commit up to now, this one included
                error = self._fsync_wal()
                if error is not None:
                    raise error
                continue
            await waiter

    def _fsync_wal(self) -> BaseException | None:
        """fsync the WAL, note the commits it covered (every commit made before it
        started) and how long it took, and wake whoever waits for it, the error of the
        fsync if it failed (also returned). The folder is synced once too, so that the
        WAL file itself is found after a power loss. On the worker thread, or on the
        loop of the write that asked (see the module)."""
        seq = self._commit_seq
        error: BaseException | None = None
        started = _clock()
        try:
            try:
                sync_file(self._wal_path)
            except FileNotFoundError:  # checkpointed and gone: all is in the database
                sync_file(self.path)
            if not self._dir_synced:
                sync_file(self.path.parent)
                self._dir_synced = True
        except BaseException as exc:  # every waiter hears it
            error = exc
        took = _clock() - started
        with self._sync_lock:
            if error is None:
                self._synced_seq = max(self._synced_seq, seq)
                # An average in which each new fsync weighs a quarter: one that takes
                # four times the bound sends the next ones to the worker.
                self._sync_seconds = (3 * self._sync_seconds + took) / 4
            waiters, self._sync_waiters = self._sync_waiters, []
            self._sync_running = False
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for loop, waiter in waiters:
            by_loop.setdefault(loop, []).append(waiter)
        for loop, each in by_loop.items():  # one wake-up per loop
            with contextlib.suppress(RuntimeError):  # that loop is closed
                loop.call_soon_threadsafe(_settle, each, error)
        return error

    async def _submit(self, fn: Write, *args: Any) -> None:
        """Write ``fn(db, *args)``, sharing a transaction with the writes queued on this
        loop meanwhile (group commit).

        The first write queued leads the batch: it yields once, so that the tasks ready
        now have their turn (and may queue writes of their own), then writes the batch
        itself: writes made at about the same moment by many jobs then cost one commit,
        and a write alone costs one pass of the loop, without a callback to run for the
        flush and another to wake its writer. Each write still lands whole or not at
        all, and its error is raised to its caller only (see the module). A leader
        cancelled while it yields still writes the batch, its own write included.
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
            try:
                await asyncio.sleep(0)
            finally:
                self._flush_soon(loop)
        await future  # done already, unless the batch waits for the store or the file

    def _flush_soon(self, loop: asyncio.AbstractEventLoop) -> None:
        """Write the batch queued on ``loop``, right here if the store is free (the usual
        case: no task to create), else from a task that waits for it (its leader's
        turn: see :meth:`_submit`)."""
        with self._waiters_lock:
            batch = self._batches.pop(loop, [])
        if not batch:
            return
        busy = False
        if self._lock.acquire(blocking=False):
            try:
                outcomes = self._write_batch([(fn, a) for fn, a, _f in batch])
            except sqlite3.OperationalError as err:
                if not is_busy(err):
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

    def _write_batch(self, items: list[tuple[Write, tuple[Any, ...]]]) -> list[Exception | None]:
        """Every write of ``items`` in one transaction: each one's outcome, None for
        written, its error for refused or failed alone (see the module). Any other
        error fails the whole batch, rolled back."""
        db = self._db()
        outcomes: list[Exception | None] = [None] * len(items)
        left_out: set[int] = set()
        while (failed := _write_together(db, items, outcomes, left_out)) is not None:
            left_out.add(failed)
        self._committed()
        return outcomes

    def _write(self, fn: Write, *args: Any) -> None:
        """``fn(db, *args)`` in a transaction of its own (``synchronous="FULL"``)."""
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


def sync_file(path: Path) -> None:
    """Flush the file or folder at ``path`` to disk: its data and what is needed to read
    it back (``fdatasync`` where there is one: a file's times are not needed, and
    skipping them saves a journal commit; else ``fsync``). The tests replace it to see
    what a power loss would keep."""
    fd = os.open(path, os.O_RDONLY)
    try:
        _datasync(fd)
    finally:
        os.close(fd)


_datasync = getattr(os, "fdatasync", os.fsync)


def _settle(waiters: list[asyncio.Future[None]], error: BaseException | None) -> None:
    """On the waiters' loop: the fsync they waited for is done (or failed with
    ``error``)."""
    for waiter in waiters:
        if waiter.done():  # its task was cancelled
            continue
        if error is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(error)


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


def _write_together(
    db: sqlite3.Connection,
    items: list[tuple[Write, tuple[Any, ...]]],
    outcomes: list[Exception | None],
    left_out: set[int],
) -> int | None:
    """One transaction over the writes of ``items`` not ``left_out``, each one's
    outcome set in ``outcomes``; committed if any was written. Returns None, or the
    place of a write that failed of its own making (:data:`OWN_FAULTS`): then
    everything is rolled back, to be written again without it."""
    db.execute("BEGIN IMMEDIATE")
    try:
        for index, (fn, args) in enumerate(items):
            if index in left_out:
                continue
            try:
                fn(db, *args)
            except (VersionConflict, UsageError, ClaimConflictError) as exc:  # refused: unchanged
                outcomes[index] = exc
            except OWN_FAULTS as exc:  # it may have changed something: undo it alone
                outcomes[index] = exc
                db.execute("ROLLBACK")
                return index
            else:
                outcomes[index] = None
        db.execute("COMMIT" if None in outcomes else "ROLLBACK")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return None
