"""Group commit: the writes queued on an event loop share one transaction.

The first write queued on a loop starts a flush, which runs once the tasks ready at
that moment have had their turn: a thousand jobs saving at about the same moment then
cost one ``BEGIN IMMEDIATE`` ... ``COMMIT``.

The rule that keeps a batch from failing for one of its writes: **a write refuses
before it changes anything.** A write raises :class:`VersionConflict` or
:class:`UsageError` only from the statement that would first change the database (the
``UPDATE`` of the job's row that checks its version and seqs, the ``INSERT`` of a job
that exists), so it needs no savepoint: it raises to its own caller and the others
land. Everything a write binds is made before it is queued (its row and journal entry,
whose JSON is checked there), so a value that is not JSON fails its caller alone,
before the batch.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillwire.core.issues import UsageError
from skillwire.core.store import VersionConflict
from skillwire.store._connection import SharedConnection, is_busy

__all__ = ["GroupCommit"]

Write = Callable[..., None]
"""A write: ``fn(db, *args)`` on the connection, inside a transaction it does not end."""

_Queued = tuple[Write, tuple[Any, ...], "asyncio.Future[None]"]
"""A write waiting for the next group commit: the function, its arguments, the answer."""


class GroupCommit(SharedConnection):
    """A :class:`SharedConnection` whose writes are group-committed (see the module).

    With ``synchronous="FULL"`` every commit fsyncs on the worker thread, so each write
    is a transaction of its own there.
    """

    def __init__(self, path: str | Path, synchronous: str, busy_timeout_ms: int) -> None:
        self._batches: dict[asyncio.AbstractEventLoop, list[_Queued]] = {}  # _waiters_lock
        self._flushes: set[asyncio.Task[None]] = set()
        super().__init__(path, synchronous, busy_timeout_ms)

    async def _submit(self, fn: Write, *args: Any) -> None:
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
