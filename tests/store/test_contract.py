"""The store contract: what every :class:`~skillwire.core.store.JobStore` must do, run
against the SQLite store, the in-memory store of ``skillwire.testing`` and the
PostgreSQL store (on a throwaway server: see ``conftest.py``).

A new store passes this file before the engine may use it: add it to ``BACKENDS``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

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
from skillwire.core.store import JobStore

Open = Callable[[], JobStore]
"""Opens another handle on the same database (another process, in effect)."""


@dataclass
class Backend:
    """One kind of store under test: ``open`` makes a handle on one shared database."""

    name: str
    open: Open


BACKENDS = ["sqlite", "memory", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each store kind in turn, on a new, empty database."""
    if request.param == "sqlite":
        from skillwire.store import SQLiteJobStore

        return Backend("sqlite", lambda: SQLiteJobStore(tmp_path / "jobs.db"))
    if request.param == "memory":
        from skillwire.testing import MemoryJobStore

        shared = MemoryJobStore()
        return Backend("memory", lambda: shared)
    from skillwire.store.postgres import PostgresJobStore

    dsn = request.getfixturevalue("pg_dsn")
    return Backend("postgres", lambda: PostgresJobStore(dsn))


def run(backend: Backend, body: Callable[[Open], Awaitable[None]]) -> None:
    """Run ``body`` with an opener of handles, closing every handle at the end."""

    async def main() -> None:
        handles: list[JobStore] = []

        def opener() -> JobStore:
            handles.append(backend.open())
            return handles[-1]

        try:
            await body(opener)
        finally:
            for handle in handles:
                await handle.close()

    asyncio.run(main())


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


def call(job_id: str, seq: int, **changes: Any) -> ModelCallRecord:
    """A model call numbered ``seq``."""
    made = ModelCallRecord(job_id, seq, "2025-01-01T00:00:00Z", "planner", "m", 120, 30, None, 12.5)
    return replace(made, **changes)


# -- round trips -------------------------------------------------------------------------


def test_create_get_save_round_trip(backend: Backend) -> None:
    waiting = Waiting(
        "APPROVAL_REQUIRED", ["amount"], "Approve?", "c-1", "t0", "t1",
        tool="refund", arguments={"amount": 750, "z": [1, {"b": 2, "a": 1}]},
        approver="supervisor", reason="> 500",
    )  # fmt: skip
    odd = {
        "nul": "a\x00b", "emoji": "déjà 🎉", "big": 2**62, "neg": -0.25, "tiny": 1e-300,
        "quote": "it's \"x\" \\ ;--", "empty": {}, "nested": [[[]]], "order": {"b": 1, "a": 2},
    }  # fmt: skip

    async def body(opener: Open) -> None:
        store = opener()
        created = await store.create(make_job(state=odd), [event("j1", 1, tool="lookup")])
        assert created.version == 1
        assert await store.get("j1") == created
        paused = replace(created, status=JobStatus.PAUSED, waiting=waiting, reply="wait")
        saved = await store.save(
            paused, expected_version=1, events=[event("j1", 2), event("j1", 3, **odd)],
            model_calls=[call("j1", 1), call("j1", 2, ok=False, error="timeout")],
        )  # fmt: skip
        assert saved.version == 2
        again = await opener().get("j1")  # another handle: read from the database
        assert again == saved and again is not None
        assert list(again.state["order"]) == ["b", "a"]  # key order kept
        assert again.waiting == waiting
        events = await store.events("j1")
        assert [e.seq for e in events] == [1, 2, 3]
        assert events[0] == event("j1", 1, tool="lookup") and events[2].data == odd
        assert await store.events("j1", after_seq=2) == [event("j1", 3, **odd)]
        assert await store.model_calls("j1") == [
            call("j1", 1),
            call("j1", 2, ok=False, error="timeout"),
        ]
        assert await store.get("nope") is None
        assert await store.events("nope") == [] and await store.model_calls("nope") == []

    run(backend, body)


def test_a_copy_read_does_not_change_the_store(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        store = opener()
        created = await store.create(make_job())
        read = await store.get("j1")
        assert read is not None
        read.state["plan"].append("tampered")
        created.fields["order_id"] = "B-2"
        stored = await store.get("j1")
        assert stored is not None and stored.state["plan"] == ["lookup", "refund"]
        assert stored.fields == {"order_id": "A-1"}

    run(backend, body)


# -- versions: exactly one winner --------------------------------------------------------


def test_version_conflicts(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        store = opener()
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
        assert await store.get("ghost") is None

    run(backend, body)


def test_racing_handles_have_one_winner_per_version(backend: Backend) -> None:
    """Four handles (four processes, in effect) save each version of one job at once,
    round after round: every round exactly one lands, with its events."""

    async def body(opener: Open) -> None:
        handles = [opener() for _ in range(4)]
        current = await handles[0].create(make_job())
        for seq in range(1, 16):
            attempts = [
                h.save(replace(current, reply=f"{n}"), expected_version=current.version,
                       events=[event("j1", seq, by=n)])
                for n, h in enumerate(handles)
            ]  # fmt: skip
            results = await asyncio.gather(*attempts, return_exceptions=True)
            won = [r for r in results if isinstance(r, JobRecord)]
            assert len(won) == 1, results
            assert all(isinstance(r, VersionConflict | JobRecord) for r in results), results
            current = won[0]
        stored = await handles[3].get("j1")
        assert stored == current and stored is not None and stored.version == 16
        events = await handles[2].events("j1")
        assert [e.seq for e in events] == list(range(1, 16))
        assert {e.data["by"] for e in events} <= {0, 1, 2, 3}
        assert events[-1].data["by"] == int(current.reply or "-1")  # the winner's events

    run(backend, body)


def test_many_concurrent_saves_of_many_jobs_all_land(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        a, b = opener(), opener()
        jobs = [await a.create(make_job(f"j{i}")) for i in range(30)]

        async def advance(job: JobRecord, store: JobStore) -> None:
            for seq in range(1, 4):
                job = await store.save(
                    replace(job, reply=str(seq)), expected_version=job.version,
                    events=[event(job.id, seq)],
                )  # fmt: skip

        await asyncio.gather(*(advance(j, (a, b)[i % 2]) for i, j in enumerate(jobs)))
        for job in jobs:
            stored = await b.get(job.id)
            assert stored is not None and (stored.version, stored.reply) == (4, "3")
            assert [e.seq for e in await a.events(job.id)] == [1, 2, 3]

    run(backend, body)


# -- seqs and journals -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "calls"),
    [
        ([2, 2], []),  # a duplicate within the save
        ([2, 1], []),  # out of order within the save
        ([1], []),  # a seq stored by an earlier save
        ([2], [1, 1]),  # a duplicate model call, after good events
    ],
)
def test_a_refused_save_writes_nothing(
    backend: Backend, events: list[int], calls: list[int]
) -> None:
    async def body(opener: Open) -> None:
        store = opener()
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
        saved = await store.save(changed, expected_version=1, events=[event("j1", 2)])
        assert await store.get("j1") == saved

    run(backend, body)


def test_events_come_from_every_save_in_order(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        store = opener()
        job = await store.create(make_job(), [event("j1", 1), event("j1", 2)])
        job = await store.save(job, expected_version=1)  # no events: checks no seq
        job = await store.save(job, expected_version=2, model_calls=[call("j1", 1)])
        job = await store.save(job, expected_version=3, events=[event("j1", 3)])
        job = await store.save(
            job, expected_version=4, events=[event("j1", 4), event("j1", 5)],
            model_calls=[call("j1", 2)],
        )  # fmt: skip
        for after in range(6):
            assert [e.seq for e in await store.events("j1", after_seq=after)] == list(
                range(after + 1, 6)
            )
        assert [c.seq for c in await store.model_calls("j1")] == [1, 2]
        with pytest.raises(UsageError, match="already stored"):
            await store.save(job, expected_version=5, model_calls=[call("j1", 2)])

    run(backend, body)


class Opaque:
    """Not JSON."""


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ({"t": (1, 2)}, r"t has type tuple"),
        ({"m": {1: "a"}}, r"key of type int"),
        ({"f": math.nan}, r"f is nan"),
        ({"s": {1, 2}}, r"s has type set"),
        ({"o": [Opaque()]}, r"o\[0\] has type Opaque"),
        ({"b": b"x"}, r"b has type bytes"),
    ],
)
def test_non_json_values_are_refused_by_name(
    backend: Backend, state: dict[str, Any], problem: str
) -> None:
    async def body(opener: Open) -> None:
        store = opener()
        with pytest.raises(TypeError, match=problem):
            await store.create(make_job(state={"outer": state}))
        assert await store.get("j1") is None
        created = await store.create(make_job())
        with pytest.raises(TypeError, match="event 2 data"):
            await store.save(created, expected_version=1, events=[event("j1", 2, **state)])
        with pytest.raises(UsageError, match="belongs to job other"):
            await store.save(created, expected_version=1, events=[event("other", 2)])
        assert await store.get("j1") == created

    run(backend, body)


# -- text an attacker chose --------------------------------------------------------------


@pytest.mark.parametrize(
    "job_id",
    ["x'; DROP TABLE jobs; --", "%(id)s", "?", "a\\b", "lone \ud800 surrogate", "nul\x00id"],
)
def test_hostile_ids_and_owners_are_data(backend: Backend, job_id: str) -> None:
    """An id or owner that looks like SQL, a placeholder, or holds what text columns
    cannot: the job is stored, found again by the same text, and nothing else moves."""

    async def body(opener: Open) -> None:
        store = opener()
        await store.create(make_job("bystander"))
        created = await store.create(make_job(job_id, owner=job_id), [event(job_id, 1)])
        found = await store.get(job_id)
        assert found is not None and found.version == 1
        assert found.owner == found.id  # mended (or kept) the same way
        assert found == replace(created, id=found.id, owner=found.owner)
        assert [j.id for j in await store.list(owner=job_id)] == [found.id]
        assert [e.seq for e in await store.events(job_id)] == [1]
        await store.save(found, expected_version=1, events=[event(found.id, 2)])
        assert len(await store.list()) == 2
        assert [j.id for j in await store.list(owner="alice")] == ["bystander"]

    run(backend, body)


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("job-1", ["job-1", "job-1%x", "job-10", "job-11"]),  # "%" sorts before "0"
        ("job-1%", ["job-1%x"]),  # no wildcard: % and _ are themselves
        ("job-_", ["job-_y"]),
        ("job-\U0010ffff", ["job-\U0010ffff"]),
        ("zzz", []),
    ],
)
def test_ids_starting_a_prefix_are_one_range_in_code_point_order(
    backend: Backend, prefix: str, expected: list[str]
) -> None:
    """What ``show`` and ``resume`` find a job by (any unique start of its id)."""
    ids = ["job-1", "job-10", "job-11", "job-2", "job-1%x", "job-_y", "job-\U0010ffff", "JOB-1"]

    async def body(opener: Open) -> None:
        store = opener()
        for job_id in ids:
            await store.create(make_job(job_id))
        assert await store.ids_starting(prefix, limit=100) == expected
        assert await store.ids_starting("job-1", limit=2) == ["job-1", "job-1%x"]
        with pytest.raises(UsageError):
            await store.ids_starting("")
        with pytest.raises(UsageError):
            await store.ids_starting("job", limit=-1)

    run(backend, body)


def test_newer_job_state_is_refused(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        store = opener()
        await store.create(make_job("new", state_version=JOB_STATE_VERSION + 1))
        with pytest.raises(JobStateTooNewError, match=f"state version {JOB_STATE_VERSION + 1}"):
            await store.get("new")
        with pytest.raises(JobStateTooNewError):
            await store.list()

    run(backend, body)


# -- listing -----------------------------------------------------------------------------


def test_list_filters_and_order(backend: Backend) -> None:
    specs = [  # id, owner, status, skill, outcome, created_at
        ("a", "alice", JobStatus.PAUSED, "refund", None, "2025-01-01"),
        ("b", "bob", JobStatus.PAUSED, "refund", None, "2025-01-03"),
        ("c", "alice", JobStatus.COMPLETED, "refund", OutcomeClass.DENIED, "2025-01-02"),
        ("d", "alice", JobStatus.PAUSED, "orders", None, "2025-01-04"),
        ("e", "alice", JobStatus.PAUSED, "orders", None, "2025-01-04"),  # same time, later
        ("f", "Alice", JobStatus.FAILED, "refund", OutcomeClass.BLOCKED, "2025-01-10"),
        ("g", "alice", JobStatus.COMPLETED, "refund", OutcomeClass.DENIED, "2025-01-1Z"),
    ]

    async def body(opener: Open) -> None:
        store = opener()
        for job_id, owner, status, skill, outcome, created in specs:
            await store.create(
                make_job(job_id, owner=owner, status=status, skill_id=skill,
                         outcome_class=outcome, created_at=created)
            )  # fmt: skip
        reader = opener()

        async def ids(**filters: Any) -> list[str]:
            return [job.id for job in await reader.list(**filters)]

        # By created_at as text, byte order ("Z" after digits), then newest inserted.
        assert await ids() == ["g", "f", "e", "d", "b", "c", "a"]
        assert await ids(owner="alice") == ["g", "e", "d", "c", "a"]  # case matters
        assert await ids(status=JobStatus.PAUSED) == ["e", "d", "b", "a"]
        assert await ids(skill_id="refund") == ["g", "f", "b", "c", "a"]
        assert await ids(outcome_class=OutcomeClass.DENIED) == ["g", "c"]
        assert await ids(owner="alice", status=JobStatus.PAUSED, skill_id="refund") == ["a"]
        assert await ids(owner="carol") == [] and await ids(owner="%") == []
        assert await ids(limit=2) == ["g", "f"]
        assert await ids(limit=2, offset=5) == ["c", "a"]
        assert await ids(limit=0) == [] and await ids(offset=99) == []
        with pytest.raises(UsageError):
            await reader.list(limit=-1)
        with pytest.raises(UsageError):
            await reader.list(offset=-1)
        # A save moves a job between filters.
        found = await reader.get("a")
        assert found is not None
        await reader.save(replace(found, status=JobStatus.COMPLETED), expected_version=1)
        assert await ids(status=JobStatus.PAUSED) == ["e", "d", "b"]

    run(backend, body)


def test_a_closed_store_refuses_calls(backend: Backend) -> None:
    async def body(opener: Open) -> None:
        store = opener()
        await store.create(make_job())
        await store.close()
        with pytest.raises(UsageError, match="closed"):
            await store.get("j1")
        with pytest.raises(UsageError, match="closed"):
            await store.save(make_job(), expected_version=1)

    run(backend, body)
