"""SQLiteJobStore's fast path: calls on the loop's thread, waits that never block it.

Which thread ran a statement is read from the connection's trace callback; what went to
the worker thread, from the executor's ``submit``.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import json
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.store.test_sqlite import call, event, make_job

from skillwire.core.errors import UsageError, VersionConflict
from skillwire.core.job import JobRecord, JobStatus
from skillwire.store import SQLiteJobStore
from skillwire.store._stored_json import stored_json


class Watch:
    """What the store sends to its worker thread, and on which thread each statement runs."""

    def __init__(self, store: SQLiteJobStore) -> None:
        self.store = store
        self.submitted: list[str] = []
        self.statements: list[tuple[str, str]] = []  # (thread name, sql)
        self.on_statement: Callable[[str, str], None] = lambda thread, sql: None
        submit = store._executor.submit

        def counting_submit(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
            name = getattr(fn, "__name__", repr(fn))
            if name != "_checkpoint":
                self.submitted.append(args[0].__name__ if name == "_on_thread" else name)
            return submit(fn, *args, **kwargs)

        store._executor.submit = counting_submit  # type: ignore[method-assign]
        assert store._conn is not None
        store._conn.set_trace_callback(self._trace)

    def _trace(self, sql: str) -> None:
        thread = threading.current_thread().name
        self.statements.append((thread, sql))
        self.on_statement(thread, sql)

    def threads(self, prefix: str) -> set[str]:
        """The threads that ran statements starting with ``prefix``."""
        return {thread for thread, sql in self.statements if sql.startswith(prefix)}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "jobs.db"


def on_worker(store: SQLiteJobStore, fn: Callable[[], Any]) -> asyncio.Future[Any]:
    """Run ``fn`` on the store's worker thread, holding the store's lock."""
    loop = asyncio.get_running_loop()
    return loop.run_in_executor(store._executor, store._on_thread, fn)


async def wait_for_event(flag: threading.Event) -> None:
    """Wait (off the loop) until another thread sets ``flag``."""
    assert await asyncio.get_running_loop().run_in_executor(None, flag.wait, 10)


async def spin(times: int) -> int:
    """Let other tasks run ``times`` times; returns how often this task ran."""
    for _ in range(times):
        await asyncio.sleep(0)
    return times


def test_normal_mode_runs_every_call_on_the_loop_thread(path: Path) -> None:
    async def main() -> None:
        async with SQLiteJobStore(path) as store:
            watch = Watch(store)
            created = await store.create(make_job(), [event("j1", 1)])
            saved = await store.save(
                created, expected_version=1, events=[event("j1", 2)], model_calls=[call("j1", 1)]
            )
            assert await store.get("j1") == saved
            assert len(await store.events("j1")) == 2
            assert len(await store.model_calls("j1")) == 1
            assert [job.id for job in await store.list()] == ["j1"]
            assert await store.bytes_for("j1") > 0
            assert watch.submitted == []
            assert watch.threads("") == {threading.current_thread().name}
            assert store._conn is not None
            assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)

    asyncio.run(main())


def test_full_mode_runs_every_call_on_the_worker_thread(path: Path) -> None:
    async def main() -> None:
        async with SQLiteJobStore(path, synchronous="FULL") as store:
            watch = Watch(store)
            created = await store.create(make_job())
            await store.save(created, expected_version=1, events=[event("j1", 1)])
            await store.get("j1")
            await store.list()
            assert watch.submitted == ["_write", "_write", "_get", "_select_jobs"]
            threads = watch.threads("")
            assert threads and all(name.startswith("skillwire-sqlite") for name in threads)
            assert store._conn is not None
            assert store._conn.execute("PRAGMA synchronous").fetchone() == (2,)

    asyncio.run(main())


def test_a_call_waits_for_the_worker_without_blocking_the_loop(path: Path) -> None:
    async def main() -> None:
        async with SQLiteJobStore(path) as store:
            created = await store.create(make_job())
            watch = Watch(store)
            holding, release = threading.Event(), threading.Event()

            def hold() -> None:
                holding.set()
                assert release.wait(10)

            blocker = on_worker(store, hold)
            await wait_for_event(holding)
            save = asyncio.create_task(
                store.save(created, expected_version=1, events=[event("j1", 1)])
            )
            get = asyncio.create_task(store.get("j1"))
            assert await spin(20) == 20, "the loop kept running"
            assert not save.done() and not get.done()
            release.set()
            saved = await asyncio.wait_for(save, 10)
            assert await asyncio.wait_for(get, 10) in (created, saved)
            await blocker
            assert await store.get("j1") == saved
            assert [e.seq for e in await store.events("j1")] == [1]
            # It ran on the loop once the worker let go, not queued behind it.
            assert watch.submitted == ["hold"]
            assert watch.threads("BEGIN") == {threading.current_thread().name}
            assert store._waiters == []

    asyncio.run(main())


def test_a_cancelled_wait_leaves_the_store_usable(path: Path) -> None:
    async def main() -> None:
        async with SQLiteJobStore(path) as store:
            created = await store.create(make_job())
            holding, release = threading.Event(), threading.Event()

            def hold() -> None:
                holding.set()
                assert release.wait(10)

            blocker = on_worker(store, hold)
            await wait_for_event(holding)
            save = asyncio.create_task(store.save(created, expected_version=1))
            await spin(5)
            save.cancel()
            with pytest.raises(asyncio.CancelledError):
                await save
            release.set()
            await blocker
            # As documented: the cancelled caller stops waiting, the write may still land
            # (its group commit was under way); the version check tells which.
            while store._flushes:
                await asyncio.sleep(0)
            assert store._waiters == []
            stored = await store.get("j1")
            assert stored is not None and stored.version in (1, 2)
            again = await store.save(created, expected_version=stored.version)
            assert again.version == stored.version + 1

    asyncio.run(main())


def test_a_busy_file_is_waited_for_on_the_worker_thread(path: Path) -> None:
    """Another connection holds the write lock: the loop goes on, the save waits on the
    worker thread (with the busy timeout) and lands once the other commits."""

    async def main() -> None:
        async with SQLiteJobStore(path, busy_timeout_ms=30_000) as store:
            created = await store.create(make_job(), [event("j1", 1)])
            watch = Watch(store)
            loop_thread = threading.current_thread().name
            worker_began = threading.Event()

            def began(thread: str, sql: str) -> None:
                if sql == "BEGIN IMMEDIATE" and thread != loop_thread:
                    worker_began.set()

            watch.on_statement = began
            other = sqlite3.connect(path, isolation_level=None)
            try:
                other.execute("BEGIN IMMEDIATE")
                changed = replace(created, status=JobStatus.COMPLETED, reply="done")
                started = time.monotonic()
                save = asyncio.create_task(
                    store.save(
                        changed, expected_version=1, events=[event("j1", 2)],
                        model_calls=[call("j1", 1)],
                    )
                )  # fmt: skip
                await asyncio.sleep(0)  # the save's first step: the inline attempt
                assert time.monotonic() - started < 5, "the loop waited for the lock"
                await wait_for_event(worker_began)
                assert await spin(20) == 20
                assert not save.done(), "it waits on the worker thread for the file"
                other.execute("COMMIT")
            finally:
                other.close()
            saved = await asyncio.wait_for(save, 30)
            assert saved == replace(changed, version=2)
            assert await store.get("j1") == saved
            assert [e.seq for e in await store.events("j1")] == [1, 2]
            assert len(await store.model_calls("j1")) == 1
            assert watch.submitted == ["_write_batch"]
            begins = [thread for thread, sql in watch.statements if sql == "BEGIN IMMEDIATE"]
            assert begins[0] == loop_thread and begins[1] != loop_thread
            # The busy timeout is 0 again for the loop, and nothing was left open.
            assert store._conn is not None and not store._conn.in_transaction
            assert store._conn.execute("PRAGMA busy_timeout").fetchone() == (0,)

    asyncio.run(main())


def test_a_busy_read_is_waited_for_on_the_worker_thread(path: Path) -> None:
    """SQLite can report a read busy too (another process recovering the WAL, or in
    exclusive locking mode): the read goes to the worker thread."""

    async def main() -> None:
        async with SQLiteJobStore(path) as store:
            created = await store.create(make_job())
            watch = Watch(store)
            loop_thread = threading.current_thread().name
            read = store._get

            def busy_on_the_loop(job_id: str) -> JobRecord | None:
                if threading.current_thread().name == loop_thread:
                    assert store._conn is not None
                    store._conn.execute("SELECT 1").fetchall()
                    err = sqlite3.OperationalError("database is locked")
                    err.sqlite_errorcode = sqlite3.SQLITE_BUSY
                    raise err
                return read(job_id)

            store._get = busy_on_the_loop  # type: ignore[method-assign]
            assert await store.get("j1") == created
            assert watch.submitted == ["busy_on_the_loop"]
            assert len(watch.threads("SELECT")) == 2

            def failing_on_the_loop(job_id: str) -> JobRecord | None:
                raise sqlite3.OperationalError("no such table: jobs")

            store._get = failing_on_the_loop  # type: ignore[method-assign]
            with pytest.raises(sqlite3.OperationalError, match="no such table"):
                await store.get("j1")
            assert watch.submitted == ["busy_on_the_loop"], "not busy: the answer"

    asyncio.run(main())


def test_inline_conflicts_and_duplicates_write_nothing(path: Path) -> None:
    async def main() -> None:
        async with SQLiteJobStore(path) as store:
            created = await store.create(make_job(), [event("j1", 1)])
            watch = Watch(store)
            changed = replace(created, status=JobStatus.COMPLETED, state={"done": True})
            with pytest.raises(VersionConflict) as caught:
                await store.save(
                    changed, expected_version=4, events=[event("j1", 2)],
                    model_calls=[call("j1", 1)],
                )  # fmt: skip
            assert (caught.value.expected, caught.value.actual) == (4, 1)
            with pytest.raises(UsageError, match="already stored"):
                await store.save(
                    changed, expected_version=1, events=[event("j1", 2), event("j1", 1)],
                    model_calls=[call("j1", 1)],
                )  # fmt: skip
            with pytest.raises(UsageError, match="already stored"):
                await store.save(
                    changed, expected_version=1, events=[event("j1", 2)],
                    model_calls=[call("j1", 1), call("j1", 1)],
                )  # fmt: skip
            with pytest.raises(VersionConflict):
                await store.create(make_job(), [event("j1", 9)])
            assert watch.submitted == [], "real answers, not reasons to go to the thread"
            assert store._conn is not None and not store._conn.in_transaction
            assert await store.get("j1") == created
            assert [e.seq for e in await store.events("j1")] == [1]
            assert await store.model_calls("j1") == []
            saved = await store.save(changed, expected_version=1, events=[event("j1", 2)])
            assert await store.get("j1") == saved

    asyncio.run(main())


def test_columns_a_job_keeps_can_still_change(path: Path) -> None:
    """A save checks skill, owner and creation time rather than setting them; a save that
    changes them still stores them, and a conflict is still a conflict."""

    async def main() -> None:
        async with SQLiteJobStore(path) as store:
            created = await store.create(make_job())
            moved = replace(created, owner="bob", skill_id="orders", created_at="2025-02-02")
            saved = await store.save(moved, expected_version=1)
            assert await store.get("j1") == saved
            assert [job.id for job in await store.list(owner="bob", skill_id="orders")] == ["j1"]
            with pytest.raises(VersionConflict) as caught:
                await store.save(replace(moved, owner="carol"), expected_version=1)
            assert (caught.value.expected, caught.value.actual) == (1, 2)
            with pytest.raises(VersionConflict) as caught:
                await store.save(make_job("ghost", owner="carol"), expected_version=1)
            assert caught.value.actual is None
            assert await store.get("j1") == saved

    asyncio.run(main())


def wal_size(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_the_wal_stays_bounded_and_is_checkpointed_off_the_loop(path: Path) -> None:
    saves = 3000
    # Some 6 pages a save, changed ones (SQLite skips writing a page that did not change):
    # 75 MB of WAL after 3,000 saves without checkpoints.

    async def main() -> None:
        store = SQLiteJobStore(path)
        watch = Watch(store)
        jobs = [await store.create(make_job(f"j{n}")) for n in range(50)]
        largest = 0
        for i in range(saves):
            job = jobs[i % 50]
            job = replace(job, state={"i": i, "pad": f"{i:06d}" * 3000})
            jobs[i % 50] = await store.save(job, expected_version=job.version)
            if i % 50 == 0:
                largest = max(largest, wal_size(path))
        await asyncio.get_running_loop().run_in_executor(store._executor, lambda: None)
        largest = max(largest, wal_size(path))
        assert largest < 10_000 * 4096, f"the WAL grew to {largest} bytes"
        print(f"largest WAL: {largest} bytes")
        loop_thread = threading.current_thread().name
        for thread, sql in watch.statements:  # checkpoints on the worker, the rest here
            assert (thread == loop_thread) != sql.startswith("PRAGMA wal_checkpoint"), sql
        with sqlite3.connect(path) as other:  # the whole WAL gets copied back
            busy, frames, copied = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            assert (busy, frames) == (0, copied)
        other.close()
        await store.close()
        assert not path.with_name(path.name + "-wal").exists(), "close checkpoints it all"
        async with SQLiteJobStore(path) as again:
            assert [(await again.get(f"j{n}")) == jobs[n] for n in range(50)] == [True] * 50

    asyncio.run(main())


def test_one_event_loop_after_another_and_two_threads_at_once(path: Path) -> None:
    store = SQLiteJobStore(path)
    first = asyncio.run(store.create(make_job("a"), [event("a", 1)]))

    async def advance(job_id: str, times: int) -> JobRecord:
        job = await store.get(job_id)
        assert job is not None
        for _ in range(times):
            job = await store.save(job, expected_version=job.version)
        return job

    assert asyncio.run(advance("a", 3)).version == 4
    errors: list[BaseException] = []

    def in_thread(fn: Callable[[], Any]) -> threading.Thread:
        def run() -> None:
            try:
                fn()
            except BaseException as err:  # pragma: no cover - reported below
                errors.append(err)

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    thread = in_thread(lambda: asyncio.run(advance("a", 2)))
    thread.join(30)
    assert not errors and asyncio.run(store.get("a")) == replace(first, version=6)

    # Two loops on two threads at once: each finds the lock held by the other at times.
    asyncio.run(store.create(make_job("b")))
    threads = [
        in_thread(functools.partial(asyncio.run, advance(job_id, 300))) for job_id in ("a", "b")
    ]
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    jobs = asyncio.run(store.list())
    assert sorted((job.id, job.version) for job in jobs) == [("a", 306), ("b", 301)]
    asyncio.run(store.close())
    with pytest.raises(UsageError, match="closed"):
        asyncio.run(store.get("a"))


class Color(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


def read_back_equal(value: Any) -> bool:
    """The rule ``stored_json`` keeps: stored only if it reads back equal."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return bool(json.loads(text) == value)


def accepted(value: Any) -> bool:
    try:
        stored_json(value, "v")
    except TypeError:
        return False
    return True


def values() -> Iterator[Any]:
    yield from ({}, [], "", 0, -0.0, 1e308, True, None, 10**30)  # "\ud800": test_stored_json
    yield {"a": [1, 2.5, None, {"b": False, "c": "é ✓"}], "d": {"e": {"f": []}}}
    yield from ({"t": (1, 2)}, (1,), {"m": {1: "a"}}, {True: 1}, {None: 1}, {1.5: 1})
    yield from ({"f": math.nan}, [math.inf], {"s": {1}}, b"x", {"o": object()})
    yield from ({"c": Color.RED}, {Color.RED: 1}, [Level.HIGH], {"l": Level.HIGH})
    yield from (json.loads('{"x": [1]}'), {"k": [[[[[[["deep"]]]]]]]})
    yield {"a": 1, 1: "a"}


@pytest.mark.parametrize("value", list(values()), ids=repr)
def test_dumps_stores_exactly_what_reads_back_equal(value: Any) -> None:
    assert accepted(value) == read_back_equal(value)
    if accepted(value):
        assert json.loads(stored_json(value, "v")) == value


def test_dumps_refuses_a_circular_value() -> None:
    cycle: dict[str, Any] = {"a": [1]}
    cycle["a"].append(cycle)
    with pytest.raises(TypeError, match="Circular reference"):
        stored_json(cycle, "v")


# -- group commit ---------------------------------------------------------------------------


def test_saves_made_at_the_same_moment_share_one_commit(path: Path) -> None:
    async def main() -> None:
        async with SQLiteJobStore(path) as store:
            jobs = [await store.create(make_job(f"j{i}")) for i in range(20)]
            watch = Watch(store)
            saved = await asyncio.gather(
                *(
                    store.save(
                        replace(job, status=JobStatus.COMPLETED),
                        expected_version=1,
                        events=[event(job.id, 1)],
                        model_calls=[call(job.id, 1)],
                    )
                    for job in jobs
                )
            )
            commits = [sql for _thread, sql in watch.statements if sql == "COMMIT"]
            assert len(commits) == 1, "twenty saves, one transaction"
            for job, stored in zip(jobs, saved, strict=True):
                assert await store.get(job.id) == stored
                assert stored.version == 2 and stored.status is JobStatus.COMPLETED
                assert [e.seq for e in await store.events(job.id)] == [1]

    asyncio.run(main())


def test_a_failing_write_in_a_batch_undoes_only_itself(path: Path) -> None:
    """A stale version, a save out of seq order and one whose seq is stored, among good
    saves of the same commit: those three raise to their callers and write nothing; the
    others land whole."""

    async def main() -> None:
        async with SQLiteJobStore(path) as store:
            jobs = [await store.create(make_job(f"j{i}"), [event(f"j{i}", 1)]) for i in range(5)]
            results = await asyncio.gather(
                store.save(replace(jobs[0], reply="a"), expected_version=1),
                store.save(replace(jobs[1], reply="b"), expected_version=7),  # stale
                store.save(  # seq 1 is stored: the whole save is refused
                    replace(jobs[2], reply="c"),
                    expected_version=1,
                    events=[event("j2", 2), event("j2", 1)],
                    model_calls=[call("j2", 1)],
                ),
                store.save(
                    replace(jobs[3], reply="d"), expected_version=1, events=[event("j3", 2)]
                ),
                store.save(  # seq 1 is stored
                    replace(jobs[4], reply="e"),
                    expected_version=1,
                    events=[event("j4", 1), event("j4", 2)],
                    model_calls=[call("j4", 1)],
                ),
                return_exceptions=True,
            )
            assert isinstance(results[1], VersionConflict)
            assert isinstance(results[2], UsageError)
            assert isinstance(results[4], UsageError) and "event 1 (events up to 1" in str(
                results[4]
            )
            for index in (0, 3):
                stored = await store.get(f"j{index}")
                assert stored == results[index] and stored is not None and stored.version == 2
            assert [e.seq for e in await store.events("j4")] == [1]
            assert await store.model_calls("j4") == []
            for index in (1, 2, 4):
                assert await store.get(f"j{index}") == jobs[index], "nothing of it was written"
            assert [e.seq for e in await store.events("j2")] == [1]
            assert await store.model_calls("j2") == []
            assert [e.seq for e in await store.events("j3")] == [1, 2]
            assert store._conn is not None and not store._conn.in_transaction

    asyncio.run(main())
