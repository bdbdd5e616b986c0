"""Durable saves waiting for the store's fsync: who shares one, who needs the next, what a
cancelled or failed wait does, and waiters on several event loops.

The first fsync, and every one while fsyncs are measured slow, runs on the store's
worker thread, which wakes the waiting loops itself (:meth:`GroupCommit._fsync_wal`);
once they are measured fast they run on the loop of the save that asks. The tests hold
the worker or the fsync on a ``threading.Event`` so that waiters pile up in a known
order, and time the fsyncs with a clock of their own: no sleeps.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.store.test_sqlite import make_job

from skillwire.core.job import JobRecord
from skillwire.store import SQLiteJobStore, _group_commit
from skillwire.store._group_commit import INLINE_SYNC_SECONDS
from skillwire.store._rows import write_values

real_sync = _group_commit.sync_file
WAIT = 10.0
"""Seconds a test waits for a state it expects at once (a failure, not a delay)."""


class HeldSync:
    """``sync_file`` that counts the WAL's fsyncs and holds the first one until released."""

    def __init__(self, db: Path, *, fail: bool = False) -> None:
        self.wal = Path(f"{db}-wal")
        self.started = threading.Event()
        self.release = threading.Event()
        self.fail = fail
        self.wal_syncs = 0

    def __call__(self, path: Path) -> None:
        if path != self.wal:
            real_sync(path)
            return
        self.wal_syncs += 1
        if self.wal_syncs == 1:
            self.started.set()
            assert self.release.wait(WAIT)
        if self.fail:
            raise OSError(5, "Input/output error")
        real_sync(path)


async def _until(event: threading.Event) -> None:
    assert await asyncio.to_thread(event.wait, WAIT)


async def _waiting(store: SQLiteJobStore, n: int) -> None:
    """Let the loop run until ``n`` durable saves wait for an fsync."""
    for _ in range(1000):
        if len(store._sync_waiters) >= n:
            return
        await asyncio.sleep(0)  # a turn of the loop, not a delay
    raise AssertionError(f"{len(store._sync_waiters)} waiters, not {n}")


async def _done(task: asyncio.Future[Any]) -> Any:
    return await asyncio.wait_for(task, WAIT)


def _hold_worker(store: SQLiteJobStore) -> threading.Event:
    """Keep the store's worker thread busy until the returned event is set, so that the
    fsync the next durable save asks for waits in its queue."""
    release = threading.Event()
    store._executor.submit(release.wait, WAIT)
    return release


async def _jobs(store: SQLiteJobStore, n: int) -> list[JobRecord]:
    return [await store.create(make_job(f"j{i}")) for i in range(n)]


def test_a_save_committed_during_an_fsync_waits_for_the_next_and_a_cancelled_one_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "jobs.db"
    sync = HeldSync(db)
    monkeypatch.setattr(_group_commit, "sync_file", sync)

    async def main() -> None:
        async with SQLiteJobStore(db) as store:
            jobs = await _jobs(store, 3)
            first = asyncio.create_task(store.save(jobs[0], expected_version=1, durable=True))
            await _until(sync.started)  # the first fsync runs, before the next commits
            second = asyncio.create_task(store.save(jobs[1], expected_version=1, durable=True))
            third = asyncio.create_task(store.save(jobs[2], expected_version=1, durable=True))
            await _waiting(store, 3)  # both committed and wait, with the first
            assert not second.done() and not third.done()
            third.cancel()
            sync.release.set()
            await _done(first)
            assert sync.wal_syncs in (1, 2)  # the second may not have asked yet
            await _done(second)  # it needed an fsync started after its commit
            assert sync.wal_syncs == 2
            with pytest.raises(asyncio.CancelledError):
                await third
            stored = await store.get("j2")
            assert stored is not None and stored.version == 2  # the commit stands
            assert store._sync_waiters == []

    asyncio.run(main())


def test_an_fsync_error_reaches_every_save_sharing_it_and_the_next_save_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "jobs.db"
    sync = HeldSync(db, fail=True)
    sync.release.set()  # not held: the worker is
    monkeypatch.setattr(_group_commit, "sync_file", sync)

    async def main() -> None:
        async with SQLiteJobStore(db) as store:
            jobs = await _jobs(store, 3)
            worker = _hold_worker(store)
            saves = [
                asyncio.create_task(store.save(j, expected_version=1, durable=True)) for j in jobs
            ]
            await _waiting(store, 3)  # one fsync queued, three saves waiting for it
            worker.set()
            outcomes = await _done(asyncio.gather(*saves, return_exceptions=True))
            assert all(isinstance(o, OSError) for o in outcomes), outcomes
            assert sync.wal_syncs == 1
            sync.fail = False
            stored = await store.get("j0")
            assert stored is not None and stored.version == 2  # committed, not synced
            await store.save(stored, expected_version=2, durable=True)
            assert sync.wal_syncs == 2  # the failure was not taken for a sync

    asyncio.run(main())


class _Counting(list[Any]):
    """A waiter list that says when ``n`` waiters are in it."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.full = threading.Event()

    def append(self, item: Any) -> None:
        super().append(item)
        if len(self) >= self.n:
            self.full.set()


def test_durable_saves_on_two_event_loops_share_an_fsync_and_each_is_woken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "jobs.db"
    sync = HeldSync(db)
    sync.release.set()
    monkeypatch.setattr(_group_commit, "sync_file", sync)
    store = SQLiteJobStore(db)
    jobs = asyncio.run(_jobs(store, 2))
    worker = _hold_worker(store)
    waiters = _Counting(2)
    store._sync_waiters = waiters
    errors: list[BaseException] = []

    def on_its_loop(job: JobRecord) -> None:
        try:
            asyncio.run(store.save(job, expected_version=1, durable=True))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=on_its_loop, args=(j,), daemon=True) for j in jobs]
    for thread in threads:
        thread.start()
    assert waiters.full.wait(WAIT)  # both committed and wait, on their own loops
    worker.set()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    assert errors == []
    assert sync.wal_syncs == 1  # one fsync for both
    asyncio.run(store.close())


class Disk:
    """``sync_file`` on a disk whose WAL fsyncs take ``latency`` seconds by the store's
    clock (``_group_commit._clock``, replaced), noting the thread each one ran on."""

    def __init__(self, db: Path) -> None:
        self.wal = Path(f"{db}-wal")
        self.now = 0.0
        self.latency = 0.0001
        self.threads: list[int] = []
        self.fail = False

    def clock(self) -> float:
        return self.now

    def __call__(self, path: Path) -> None:
        if path == self.wal:
            self.threads.append(threading.get_ident())
            self.now += self.latency
            if self.fail:
                raise OSError(5, "Input/output error")
        real_sync(path)


def _disk(db: Path, monkeypatch: pytest.MonkeyPatch) -> Disk:
    disk = Disk(db)
    monkeypatch.setattr(_group_commit, "sync_file", disk)
    monkeypatch.setattr(_group_commit, "_clock", disk.clock)
    return disk


def test_fast_fsyncs_run_on_the_loop_and_a_slow_one_sends_them_to_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "jobs.db"
    disk = _disk(db, monkeypatch)

    async def main() -> None:
        loop = threading.get_ident()
        async with SQLiteJobStore(db) as store:
            (job,) = await _jobs(store, 1)
            version = 1

            async def durable_saves(n: int) -> list[bool]:
                """Whether each of ``n`` durable saves was synced on the loop."""
                nonlocal version
                start = len(disk.threads)
                for _ in range(n):
                    await store.save(job, expected_version=version, durable=True)
                    version += 1
                    assert store._sync_waiters == []
                return [t == loop for t in disk.threads[start:]]

            assert await durable_saves(3) == [False, True, True]  # the first is not measured
            disk.latency = 0.050  # the disk slows down: one fsync stalls the loop, no more
            assert await durable_saves(3) == [True, False, False]
            disk.latency = 0.0001  # fast again: back on the loop once the average is low
            back = await durable_saves(20)
            assert back[0] is False and back[-1] is True
            assert back == sorted(back)  # on the worker until then, on the loop after
            assert store._sync_seconds < INLINE_SYNC_SECONDS

    asyncio.run(main())


def test_a_failed_fsync_on_the_loop_fails_the_save_and_is_not_taken_for_a_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "jobs.db"
    disk = _disk(db, monkeypatch)

    async def main() -> None:
        async with SQLiteJobStore(db) as store:
            (job,) = await _jobs(store, 1)
            await store.save(job, expected_version=1, durable=True)  # measured fast
            disk.fail = True
            with pytest.raises(OSError, match="Input/output"):
                await store.save(job, expected_version=2, durable=True)
            assert disk.threads[-1] == threading.get_ident()  # it ran on the loop
            disk.fail = False
            await store.save(job, expected_version=3)  # not durable: no fsync
            assert len(disk.threads) == 2
            await store.save(job, expected_version=4, durable=True)
            assert len(disk.threads) == 3  # the failure did not count as a sync
            assert not store._sync_running

    asyncio.run(main())


def test_a_save_on_another_loop_waits_for_an_fsync_running_on_a_loop_and_shares_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loop A's fsync runs on A; loop B's durable save, committed before it started,
    waits for it (no second fsync) and is woken by A."""
    db = tmp_path / "jobs.db"
    disk = _disk(db, monkeypatch)
    store = SQLiteJobStore(db)
    jobs = asyncio.run(_jobs(store, 3))
    asyncio.run(store.save(jobs[2], expected_version=1, durable=True))  # measured fast
    assert len(disk.threads) == 1
    waiters = _Counting(1)
    store._sync_waiters = waiters
    held, on_b = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    real_disk = disk.__call__

    def holding_sync(path: Path) -> None:
        if path == disk.wal:
            held.set()
            assert waiters.full.wait(WAIT)  # B waits for this fsync
        real_disk(path)

    monkeypatch.setattr(_group_commit, "sync_file", holding_sync)

    def on_its_loop(job: JobRecord, committed: threading.Event | None) -> None:
        async def save() -> None:
            if committed is None:  # B: commit, then ask once A's fsync runs
                await store._submit(store._update_job, _values(job))
                on_b.set()
                await asyncio.to_thread(held.wait, WAIT)
                await store._sync()
            else:
                await _until(on_b)  # A: its commit comes after B's
                await store.save(job, expected_version=1, durable=True)

        try:
            asyncio.run(save())
        except BaseException as exc:
            errors.append(exc)

    b = threading.Thread(target=on_its_loop, args=(jobs[1], None), daemon=True)
    a = threading.Thread(target=on_its_loop, args=(jobs[0], on_b), daemon=True)
    b.start()
    a.start()
    for thread in (a, b):
        thread.join(WAIT)
        assert not thread.is_alive()
    assert errors == []
    assert len(disk.threads) == 2  # one fsync for both, on A's thread
    assert disk.threads[-1] == a.ident
    asyncio.run(store.close())


def _values(job: JobRecord) -> dict[str, Any]:
    return write_values(job, 2, (), ())
