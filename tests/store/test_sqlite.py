"""SQLiteJobStore: round trips, optimistic concurrency, atomic saves, versions, crashes."""

from __future__ import annotations

import asyncio
import functools
import math
import random
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest

from skillwire.core.errors import UsageError, VersionConflict
from skillwire.core.job import (
    JOB_STATE_VERSION,
    Event,
    JobRecord,
    JobStatus,
    ModelCallRecord,
    OutcomeClass,
    Waiting,
)
from skillwire.core.store import JobStore
from skillwire.store import (
    SCHEMA_VERSION,
    JobStateTooNewError,
    SchemaTooNewError,
    SQLiteJobStore,
)
from skillwire.store.migrations import MIGRATIONS

T = TypeVar("T")


def make_job(job_id: str = "j1", **changes: Any) -> JobRecord:
    """A running job; ``changes`` override any field."""
    job = JobRecord(
        id=job_id,
        skill_id="refund",
        status=JobStatus.RUNNING,
        outcome_class=None,
        owner="alice",
        created_at="2025-01-01T00:00:00Z",
        updated_at="2025-01-01T00:00:00Z",
        fields={"order_id": "A-1"},
        state={"plan": ["lookup", "refund"], "n": 1, "ok": True, "x": None, "f": 1.5},
    )
    return replace(job, **changes)


def event(job_id: str, seq: int, **data: Any) -> Event:
    """An event numbered ``seq``."""
    return Event(job_id, seq, f"2025-01-01T00:00:{seq:02d}Z", "planner", "allowed", "OK", "", data)


def call(job_id: str, seq: int) -> ModelCallRecord:
    """A model call numbered ``seq``."""
    return ModelCallRecord(job_id, seq, "2025-01-01T00:00:00Z", "planner", "m", 120, 30, None, 12.5)


def run_with_store(path: Path, body: Callable[[SQLiteJobStore], Awaitable[T]]) -> T:
    """Open a store at ``path``, run ``body`` with it, close it."""

    async def main() -> T:
        async with SQLiteJobStore(path) as store:
            return await body(store)

    return asyncio.run(main())


def test_create_get_and_save_round_trip(tmp_path: Path) -> None:
    waiting = Waiting(
        "APPROVAL_REQUIRED", ["amount"], "Approve?", "c-1", "t0", "t1",
        tool="refund", arguments={"amount": 750}, approver="supervisor", reason="> 500",
        field_schemas={"amount": {"type": "number"}},
    )  # fmt: skip
    job = make_job(state={"text": "héllo ✓", "nested": {"a": [1, 2.5, None, {"b": False}]}})

    async def body(store: SQLiteJobStore) -> None:
        created = await store.create(job, [event("j1", 1, tool="lookup")])
        assert created == replace(job, version=1)
        assert await store.get("j1") == created
        paused = replace(
            created, status=JobStatus.PAUSED, outcome_class=OutcomeClass.APPROVAL_REQUIRED,
            waiting=waiting, reply="Waiting for approval", updated_at="2025-01-01T00:01:00Z",
        )  # fmt: skip
        stored = await store.save(
            paused, expected_version=1, events=[event("j1", 2), event("j1", 3)],
            model_calls=[call("j1", 1), replace(call("j1", 2), ok=False, error="timeout")],
        )  # fmt: skip
        assert stored == replace(paused, version=2)
        assert paused.version == 1, "the caller's record is not changed"
        assert await store.get("j1") == stored
        assert [e.seq for e in await store.events("j1")] == [1, 2, 3]
        assert (await store.events("j1"))[0] == event("j1", 1, tool="lookup")
        assert await store.events("j1", after_seq=1) == [event("j1", 2), event("j1", 3)]
        calls = await store.model_calls("j1")
        assert calls == [call("j1", 1), replace(call("j1", 2), ok=False, error="timeout")]
        assert await store.get("nope") is None
        assert await store.events("nope") == []

    run_with_store(tmp_path / "jobs.db", body)


def test_version_conflicts(tmp_path: Path) -> None:
    async def body(store: SQLiteJobStore) -> None:
        read = await store.create(make_job())
        results = await asyncio.gather(
            *(store.save(replace(read, reply=str(i)), expected_version=1) for i in range(10)),
            return_exceptions=True,
        )
        winners = [r for r in results if isinstance(r, JobRecord)]
        losers = [r for r in results if isinstance(r, VersionConflict)]
        assert len(winners) == 1 and len(losers) == 9
        assert all((c.expected, c.actual) == (1, 2) for c in losers)
        assert await store.get("j1") == winners[0]

        # The same resume delivered twice: the second is refused and writes nothing.
        ok = await store.save(read, expected_version=2, events=[event("j1", 1)])
        with pytest.raises(VersionConflict) as caught:
            await store.save(read, expected_version=2, events=[event("j1", 1)])
        assert (caught.value.expected, caught.value.actual) == (2, 3)
        assert await store.get("j1") == ok
        assert len(await store.events("j1")) == 1

        with pytest.raises(VersionConflict) as caught:
            await store.save(make_job("ghost"), expected_version=1)
        assert caught.value.actual is None
        with pytest.raises(VersionConflict) as caught:
            await store.create(make_job())
        assert (caught.value.expected, caught.value.actual) == (0, 3)

    run_with_store(tmp_path / "jobs.db", body)


@pytest.mark.parametrize(
    ("events", "calls"),
    [
        ([2, 2], []),  # a duplicate within the save
        ([2, 1], []),  # a seq stored by an earlier save
        ([2], [1, 1]),  # a duplicate model call, after the events went in
    ],
)
def test_failed_save_writes_nothing(tmp_path: Path, events: list[int], calls: list[int]) -> None:
    async def body(store: SQLiteJobStore) -> None:
        created = await store.create(make_job(), [event("j1", 1)])
        changed = replace(created, status=JobStatus.COMPLETED, state={"done": True})
        with pytest.raises(UsageError, match="already stored"):
            await store.save(
                changed, expected_version=1,
                events=[event("j1", s) for s in events], model_calls=[call("j1", s) for s in calls],
            )  # fmt: skip
        assert await store.get("j1") == created
        assert [e.seq for e in await store.events("j1")] == [1]
        assert await store.model_calls("j1") == []
        # The store is still usable and the version still the one read.
        saved = await store.save(changed, expected_version=1, events=[event("j1", 2)])
        assert await store.get("j1") == saved

    run_with_store(tmp_path / "jobs.db", body)


class Opaque:
    """Not JSON."""


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ({"t": (1, 2)}, r"\.t has type tuple"),
        ({"m": {1: "a"}}, r"\.m has a key of type int \(1\)"),
        ({"f": math.nan}, r"\.f is nan"),
        ({"s": {1, 2}}, r"\.s has type set"),
        ({"o": [Opaque()]}, r"\.o\[0\] has type Opaque"),
        ({"b": b"x"}, r"\.b has type bytes"),
    ],
)
def test_non_json_values_fail_loudly(tmp_path: Path, state: dict[str, Any], problem: str) -> None:
    async def body(store: SQLiteJobStore) -> None:
        with pytest.raises(TypeError, match=problem):
            await store.create(make_job(state={"outer": state}))
        assert await store.get("j1") is None
        created = await store.create(make_job())
        with pytest.raises(TypeError, match="event 2 data"):
            await store.save(created, expected_version=1, events=[event("j1", 2, **state)])
        with pytest.raises(UsageError, match="belongs to job other"):
            await store.save(created, expected_version=1, events=[event("other", 2)])
        assert await store.get("j1") == created

    run_with_store(tmp_path / "jobs.db", body)


def test_schema_is_migrated_once_and_newer_schema_refused(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    run_with_store(path, lambda store: store.create(make_job()))
    run_with_store(path, lambda store: store.get("j1"))
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        applied = db.execute("SELECT version, name FROM schema_migrations").fetchall()
        assert [v for v, _ in applied] == list(range(1, SCHEMA_VERSION + 1))
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(SchemaTooNewError) as caught:
        SQLiteJobStore(path)
    message = str(caught.value)
    assert f"version {SCHEMA_VERSION + 1}" in message and f"version {SCHEMA_VERSION})" in message


def test_newer_job_state_refused(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    run_with_store(path, lambda store: store.create(make_job()))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE jobs SET state_version = ?", (JOB_STATE_VERSION + 1,))
    db.close()

    async def body(store: SQLiteJobStore) -> None:
        for read in (store.get("j1"), store.list()):
            with pytest.raises(JobStateTooNewError, match=f"state version {JOB_STATE_VERSION + 1}"):
                await read

    run_with_store(path, body)


def test_list_filters_and_order(tmp_path: Path) -> None:
    specs = [  # id, owner, status, skill, created_at
        ("a", "alice", JobStatus.PAUSED, "refund", "2025-01-01"),
        ("b", "bob", JobStatus.PAUSED, "refund", "2025-01-03"),
        ("c", "alice", JobStatus.COMPLETED, "refund", "2025-01-02"),
        ("d", "alice", JobStatus.PAUSED, "orders", "2025-01-04"),
        ("e", "alice", JobStatus.PAUSED, "orders", "2025-01-04"),  # same time, inserted later
    ]

    async def body(store: SQLiteJobStore) -> None:
        for job_id, owner, status, skill, created in specs:
            job = make_job(job_id, owner=owner, status=status, skill_id=skill, created_at=created)
            await store.create(job)

        async def ids(**filters: Any) -> list[str]:
            return [job.id for job in await store.list(**filters)]

        assert await ids() == ["e", "d", "b", "c", "a"]
        assert await ids(owner="alice") == ["e", "d", "c", "a"]
        assert await ids(status=JobStatus.PAUSED) == ["e", "d", "b", "a"]
        assert await ids(skill_id="refund") == ["b", "c", "a"]
        assert await ids(owner="alice", status=JobStatus.PAUSED, skill_id="refund") == ["a"]
        assert await ids(owner="carol") == []
        assert await ids(limit=2) == ["e", "d"]
        assert await ids(limit=2, offset=3) == ["c", "a"]
        with pytest.raises(UsageError):
            await store.list(limit=-1)

    run_with_store(tmp_path / "jobs.db", body)


def test_many_concurrent_saves_all_land(tmp_path: Path) -> None:
    async def one_job(store: JobStore, n: int) -> None:
        job = await store.create(make_job(f"job-{n}"), [event(f"job-{n}", 1)])
        for _ in range(5):
            job.state = {"step": job.version}
            new_event = event(job.id, job.version + 1)
            job = await store.save(job, expected_version=job.version, events=[new_event])

    async def body(store: SQLiteJobStore) -> None:
        await asyncio.gather(*(one_job(store, n) for n in range(200)))
        jobs = await store.list(limit=1000)
        assert len(jobs) == 200
        for job in jobs:
            assert (job.version, job.state) == (6, {"step": 5})
            assert [e.seq for e in await store.events(job.id)] == [1, 2, 3, 4, 5, 6]

    run_with_store(tmp_path / "jobs.db", body)


def test_bytes_for_and_close(tmp_path: Path) -> None:
    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        job = await store.create(make_job(state={"pad": "x" * 2000}))
        size = await store.bytes_for("j1")
        assert 2000 < size < 2400
        await store.save(job, expected_version=1, events=[event("j1", 1, pad="y" * 100)])
        assert await store.bytes_for("j1") > size + 100
        assert await store.bytes_for("nope") == 0
        await store.close()
        await store.close()
        with pytest.raises(UsageError, match="closed"):
            await store.get("j1")

    asyncio.run(main())


CHILD = """
import asyncio, sys
from skillwire.core.job import Event, JobRecord, JobStatus, ModelCallRecord
from skillwire.store import SQLiteJobStore

def new_job(job_id):
    return JobRecord(job_id, "refund", JobStatus.RUNNING, None, "crash", "t", "t")

def ev(job_id, seq):
    return Event(job_id, seq, "t", "planner", "step")

async def advance(store, job):
    v = job.version
    job.state = {"counter": v, "pad": "x" * 300}
    events = [ev(job.id, 2 * v), ev(job.id, 2 * v + 1)]
    calls = [ModelCallRecord(job.id, v, "t", "planner", "m", 10, 1, 1, 1.0)]
    job = await store.save(job, expected_version=v, events=events, model_calls=calls)
    print(job.id, job.version, flush=True)
    return job

async def long_lived(store, n):
    job = await store.get(f"w{n}")
    if job is None:
        job = await store.create(new_job(f"w{n}"), [ev(f"w{n}", 1)])
    while True:
        job = await advance(store, job)

async def short_lived(store, run):
    for i in range(10**9):
        job_id = f"r{run}-{i}"
        job = await store.create(new_job(job_id), [ev(job_id, 1)])
        print(job_id, 1, flush=True)
        await advance(store, job)

async def main():
    store = SQLiteJobStore(sys.argv[1])
    await asyncio.gather(short_lived(store, sys.argv[2]), *(long_lived(store, n) for n in range(4)))

asyncio.run(main())
"""


def test_committed_saves_survive_sigkill(tmp_path: Path) -> None:
    """Kill a writing process at random points; every commit it reported is there, whole."""
    path = tmp_path / "crash.db"
    rng = random.Random(20250101)
    for run in range(25):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), str(run)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert child.stdout is not None and child.stderr is not None
        reported: dict[str, int] = {}
        try:
            for _ in range(rng.randint(1, 60)):
                line = child.stdout.readline()
                assert line, f"the writer exited early: {child.stderr.read()}"
                job_id, version = line.split()
                reported[job_id] = int(version)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
            child.stdout.close()
            child.stderr.close()
        assert child.returncode == -signal.SIGKILL
        run_with_store(path, functools.partial(check_crashed_store, reported=reported))


async def check_crashed_store(store: SQLiteJobStore, reported: dict[str, int]) -> None:
    """Every job reads back; events and model calls are gap-free and match its version."""
    jobs = {job.id: job for job in await store.list(limit=100_000)}
    for job_id, version in reported.items():
        assert jobs[job_id].version >= version, f"{job_id}: a reported commit was lost"
    for job in jobs.values():
        events = [e.seq for e in await store.events(job.id)]
        assert events == list(range(1, 2 * job.version)), job.id
        calls = [c.seq for c in await store.model_calls(job.id)]
        assert calls == list(range(1, job.version)), job.id
        if job.version > 1:
            assert job.state["counter"] == job.version - 1


def test_list_filters_by_outcome_class_with_an_index(tmp_path: Path) -> None:
    specs = [  # id, status, outcome class, created_at
        ("a", JobStatus.COMPLETED, OutcomeClass.BLOCKED, "2025-01-01"),
        ("b", JobStatus.COMPLETED, OutcomeClass.SUCCESS, "2025-01-02"),
        ("c", JobStatus.COMPLETED, OutcomeClass.DENIED, "2025-01-03"),
        ("d", JobStatus.COMPLETED, OutcomeClass.BLOCKED, "2025-01-04"),
        ("e", JobStatus.RUNNING, None, "2025-01-05"),
    ]

    async def body(store: SQLiteJobStore) -> None:
        for job_id, status, outcome, created in specs:
            await store.create(
                make_job(job_id, status=status, outcome_class=outcome, created_at=created)
            )

        async def ids(**filters: Any) -> list[str]:
            return [job.id for job in await store.list(**filters)]

        assert await ids(outcome_class=OutcomeClass.BLOCKED) == ["d", "a"]
        assert await ids(outcome_class=OutcomeClass.DENIED, owner="alice") == ["c"]
        assert await ids(outcome_class=OutcomeClass.TOOL_FAILED) == []
        assert await ids(outcome_class=OutcomeClass.BLOCKED, limit=1, offset=1) == ["a"]

    run_with_store(tmp_path / "jobs.db", body)
    with sqlite3.connect(tmp_path / "jobs.db") as db:
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE outcome_class = 'BLOCKED' "
            "ORDER BY created_at DESC, rowid DESC"
        ).fetchall()
        assert any("jobs_by_outcome" in str(row) for row in plan), plan


def _by_outcome(db: sqlite3.Connection, outcome: OutcomeClass) -> tuple[list[str], list[str]]:
    """The ids of the jobs of ``outcome``, read through ``jobs_by_outcome`` and without."""
    order = "ORDER BY created_at DESC, rowid DESC"
    return (
        [r[0] for r in db.execute(
            f"SELECT id FROM jobs INDEXED BY jobs_by_outcome WHERE outcome_class = ? {order}",
            (str(outcome),),
        )],
        [r[0] for r in db.execute(
            f"SELECT id FROM jobs NOT INDEXED WHERE outcome_class = ? {order}", (str(outcome),)
        )],
    )  # fmt: skip


def test_the_outcome_index_follows_a_job_into_and_out_of_an_outcome(tmp_path: Path) -> None:
    """``jobs_by_outcome`` holds only jobs with an outcome class (migration 8): a job that
    gets one, loses it (a resumed pause) and gets another is listed by each in turn."""
    path = tmp_path / "jobs.db"
    moves = [OutcomeClass.APPROVAL_REQUIRED, None, None, OutcomeClass.SUCCESS]

    async def body(store: SQLiteJobStore) -> None:
        job = await store.create(make_job("a"))
        await store.create(make_job("b", outcome_class=OutcomeClass.SUCCESS))
        for version, outcome in enumerate(moves, start=1):
            job = await store.save(replace(job, outcome_class=outcome), expected_version=version)
            for each in (OutcomeClass.APPROVAL_REQUIRED, OutcomeClass.SUCCESS):
                listed = [j.id for j in await store.list(outcome_class=each)]
                # b is newer (same time, inserted after a): listed first
                expected = ["b"] if each is OutcomeClass.SUCCESS else []
                expected += ["a"] if outcome is each else []
                assert listed == expected, (version, each)
                with sqlite3.connect(path) as db:
                    assert _by_outcome(db, each) == (expected, expected)

    run_with_store(path, body)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        (sql,) = db.execute("SELECT sql FROM sqlite_schema WHERE name = 'jobs_by_outcome'")
        assert sql[0].endswith("WHERE outcome_class IS NOT NULL")


def test_a_schema_7_file_keeps_its_jobs_listed_by_outcome(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    for number, step in enumerate(MIGRATIONS[:7], start=1):
        step(db)
        db.execute("INSERT INTO schema_migrations VALUES (?, ?, 't')", (number, step.__name__))
    db.execute("PRAGMA user_version = 7")
    outcomes = [OutcomeClass.BLOCKED, None, OutcomeClass.SUCCESS, OutcomeClass.BLOCKED, None]
    for n, outcome in enumerate(outcomes):
        db.execute(
            "INSERT INTO jobs (id, skill_id, owner, status, outcome_class, version, created_at, "
            "updated_at, state_version, body) VALUES (?, 's', 'o', 'completed', ?, 1, ?, ?, 1, "
            '\'{"waiting":null,"reply":null,"fields":{},"state":{}}\')',
            (f"j{n}", None if outcome is None else str(outcome), f"2025-01-0{n + 1}", "t"),
        )
    db.execute("COMMIT")
    db.close()

    async def body(store: SQLiteJobStore) -> dict[OutcomeClass, list[str]]:
        return {
            each: [j.id for j in await store.list(outcome_class=each)]
            for each in (OutcomeClass.BLOCKED, OutcomeClass.SUCCESS, OutcomeClass.DENIED)
        }

    assert run_with_store(path, body) == {
        OutcomeClass.BLOCKED: ["j3", "j0"],
        OutcomeClass.SUCCESS: ["j2"],
        OutcomeClass.DENIED: [],
    }
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert _by_outcome(db, OutcomeClass.BLOCKED) == (["j3", "j0"], ["j3", "j0"])
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
