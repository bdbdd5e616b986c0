"""One SQLite connection shared by every call of a store, and where each call runs.

The connection is guarded by a lock. With ``synchronous="NORMAL"`` (the default) a
commit appends to the WAL through the OS page cache and does not fsync, so a save is
some 50 to 150 microseconds of CPU, less than a hop to a thread and back costs. So a
call runs right where it is made, on the event loop, but never waits there:

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
written (500 commits at most), and at close. The WAL starts over once all of it is
copied and no commit came meanwhile; if commits never pause for that long and it passes
4,000 pages, a checkpoint holds the writers off while it copies the last pages written,
so the WAL stays bounded. With ``synchronous="FULL"`` every commit fsyncs, so every call
is one hop to the worker thread, and SQLite checkpoints as by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from skillwire.core.errors import UsageError
from skillwire.store.migrations import migrate

__all__ = ["SharedConnection", "is_busy"]

T = TypeVar("T")

log = logging.getLogger("skillwire.store")

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


def is_busy(err: sqlite3.Error) -> bool:
    """Whether ``err`` says another connection holds the file (busy or locked)."""
    return getattr(err, "sqlite_errorcode", 0) & 0xFF in _BUSY_CODES


class SharedConnection:
    """The connection to one SQLite file, its lock and its worker thread.

    The constructor opens the file and migrates it, on the worker thread (blocking
    briefly). :meth:`_call` runs a function of the connection where the module says;
    :meth:`_close` (on the worker thread) checkpoints and closes.
    """

    def __init__(self, path: str | Path, synchronous: str, busy_timeout_ms: int) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._spare: sqlite3.Connection | None = None  # the worker's, for checkpoints
        self._lock = threading.Lock()  # held by whoever uses self._conn
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._waiters_lock = threading.Lock()  # guards self._waiters (and what subclasses say)
        self._inline = False  # set by _open: NORMAL, and the file is in WAL mode
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._closed = False
        self._commits = 0  # since the last checkpoint was queued
        self._commit_seq = 0  # commits made so far (the group commit's syncs read it)
        self._checkpoint_every = _CHECKPOINT_FIRST
        self._checkpoint_queued = False
        self._wal_pages = 0  # the WAL's length at the last checkpoint
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillwire-sqlite")
        try:
            self._executor.submit(self._open, synchronous).result()
        except BaseException:
            self._executor.shutdown(wait=True)
            raise

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
                if not is_busy(err):
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
        self._commit_seq += 1
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
            if not is_busy(err):
                log.warning("checkpoint of %s failed: %s", self.path, err)
        finally:
            self._checkpoint_queued = False

    def _db(self) -> sqlite3.Connection:
        """The connection, to use under the lock; :class:`UsageError` once closed."""
        if self._conn is None:
            raise UsageError(f"the job store {self.path} is closed")
        return self._conn


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
