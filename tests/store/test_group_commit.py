"""The group commit's rule: a write fails before changing anything, or is undone alone.

Writes queued together share one transaction; whatever one of them holds (a lone
surrogate, a value SQLite cannot bind, a document past SQLite's length limit) must never
cost the others their commit.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from tests.store.test_sqlite import call, event, make_job
from tests.store.test_sqlite_inline import Watch

from skillwire.core.job import Event, JobRecord, JobStatus, ModelCallRecord, Waiting
from skillwire.store import SQLiteJobStore

LONE = "\ud800"
"""A lone surrogate: a Python str holds it, UTF-8 cannot."""

Save = tuple[JobRecord, list[Event], list[ModelCallRecord]]


def mend(value: Any) -> Any:
    """``value`` as the store gives it back: each lone surrogate in its text read as
    U+FFFD, the rest as it was."""
    if type(value) is str:
        return value.replace(LONE, "\ufffd")
    if type(value) is dict:
        return {mend(key): mend(item) for key, item in value.items()}
    if type(value) is list:
        return [mend(item) for item in value]
    if is_dataclass(value) and not isinstance(value, type):
        return replace(value, **{f.name: mend(getattr(value, f.name)) for f in fields(value)})
    return value


def waiting(prompt: str) -> Waiting:
    return Waiting("USER_ACTION_REQUIRED", ["order_id"], prompt, "c-1", "t0", "t1")


SPOILERS: dict[str, Callable[[Save], Save]] = {
    "reply": lambda s: (replace(s[0], reply=f"Refunded {LONE}"), s[1], s[2]),
    "state": lambda s: (replace(s[0], state={"said": ["ok", f"x{LONE}y"]}), s[1], s[2]),
    "a state key": lambda s: (replace(s[0], state={LONE: 1}), s[1], s[2]),
    "fields": lambda s: (replace(s[0], fields={"order_id": LONE}), s[1], s[2]),
    "the waiting prompt": lambda s: (replace(s[0], waiting=waiting(f"Order {LONE}?")), *s[1:]),
    "owner": lambda s: (replace(s[0], owner=f"al{LONE}ice"), s[1], s[2]),
    "updated_at": lambda s: (replace(s[0], updated_at=f"2025{LONE}"), s[1], s[2]),
    "an event message": lambda s: (s[0], [replace(s[1][0], message=LONE)], s[2]),
    "event data": lambda s: (s[0], [replace(s[1][0], data={"out": [LONE]})], s[2]),
    "a model-call error": lambda s: (s[0], s[1], [replace(s[2][0], ok=False, error=LONE)]),
}


@pytest.mark.parametrize("where", list(SPOILERS))
def test_a_lone_surrogate_spoils_no_save_of_its_batch(tmp_path: Path, where: str) -> None:
    """Issue 16.9: five jobs save in one commit, one of them with a lone surrogate in
    its text. Every save lands; that job's text reads back with U+FFFD in its place."""

    async def main() -> None:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            jobs = [await store.create(make_job(f"j{i}")) for i in range(5)]
            watch = Watch(store)
            saves: list[Save] = []
            for i, job in enumerate(jobs):
                done = replace(job, status=JobStatus.COMPLETED, reply=f"done {i}")
                save: Save = (done, [event(job.id, 1)], [call(job.id, 1)])
                saves.append(SPOILERS[where](save) if i == 2 else save)
            results = await asyncio.gather(
                *(store.save(j, expected_version=1, events=e, model_calls=c) for j, e, c in saves),
                return_exceptions=True,
            )
            assert [r for r in results if isinstance(r, BaseException)] == []
            commits = [sql for _thread, sql in watch.statements if sql == "COMMIT"]
            assert len(commits) == 1, "five saves, one transaction"
            for job, events, calls in saves:
                assert await store.get(job.id) == mend(replace(job, version=2))
                assert await store.events(job.id) == mend(events)
                assert await store.model_calls(job.id) == mend(calls)

    asyncio.run(main())


def test_a_lone_surrogate_in_an_id_spoils_no_create_of_its_batch(tmp_path: Path) -> None:
    """The job is stored under its id with U+FFFD in place of the surrogate, and the
    same id, surrogate and all, finds it again: reads and saves mend it alike."""
    spoiled = f"j{LONE}"

    async def main() -> None:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            ids = ["a", spoiled, "b"]
            created = await asyncio.gather(
                *(store.create(make_job(i), [event(i, 1)]) for i in ids),
                return_exceptions=True,
            )
            assert [r for r in created if isinstance(r, BaseException)] == []
            assert await store.get("a") == replace(make_job("a"), version=1)
            found = await store.get(spoiled)
            assert found is not None and found.id == "j\ufffd"
            assert [e.seq for e in await store.events(spoiled)] == [1]
            saved = await store.save(
                make_job(spoiled, version=1), expected_version=1, events=[event(spoiled, 2)]
            )
            assert saved.version == 2 and (await store.get("j\ufffd")) == mend(saved)
            assert [e.seq for e in await store.events("j\ufffd")] == [1, 2]
            assert [j.id for j in await store.list(owner="alice")] == ["b", "j\ufffd", "a"]
            await store.create(make_job("c", owner=f"bo{LONE}b", skill_id=f"s{LONE}"))
            found_by = await store.list(owner=f"bo{LONE}b", skill_id=f"s{LONE}")
            assert [(j.id, j.owner, j.skill_id) for j in found_by] == [
                ("c", "bo\ufffdb", "s\ufffd")
            ]
            assert await store.bytes_for(spoiled) > 0

    asyncio.run(main())


def test_a_write_that_fails_after_changing_its_job_is_undone_alone(tmp_path: Path) -> None:
    """A save whose job row is updated but whose journal row SQLite refuses (past its
    length limit), a create likewise, and a save whose version SQLite cannot bind, in
    one batch with good saves: each of the three fails alone and leaves nothing; the
    others land."""

    async def main() -> None:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            jobs = [await store.create(make_job(f"j{i}"), [event(f"j{i}", 1)]) for i in range(5)]
            assert store._conn is not None
            store._conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 20_000)
            huge = [event("j1", 2, text="x" * 30_000)]
            results = await asyncio.gather(
                store.save(replace(jobs[0], reply="a"), expected_version=1),
                store.save(replace(jobs[1], reply="b"), expected_version=1, events=huge),
                store.save(replace(jobs[2], reply="c"), expected_version=1),
                store.create(make_job("new"), [event("new", 1, text="y" * 30_000)]),
                store.save(replace(jobs[3], state_version=2**63), expected_version=1),
                store.save(replace(jobs[4], reply="e"), expected_version=1),
                return_exceptions=True,
            )
            assert isinstance(results[1], sqlite3.DataError), results[1]
            assert isinstance(results[3], sqlite3.DataError), results[3]
            assert isinstance(results[4], OverflowError), results[4]
            for index in (0, 2, 5):
                stored = results[index]
                assert isinstance(stored, JobRecord) and stored.version == 2
                assert await store.get(stored.id) == stored
            for job in (jobs[1], jobs[3]):
                assert await store.get(job.id) == job, "nothing of it was written"
            assert [e.seq for e in await store.events("j1")] == [1]
            assert await store.get("new") is None and await store.events("new") == []
            assert not store._conn.in_transaction

    asyncio.run(main())


def test_a_batch_whose_every_write_fails_alone_ends(tmp_path: Path) -> None:
    """Each write left out in turn: every caller hears its own error, nothing lands,
    and the store is left without a transaction open, ready for the next save."""

    async def main() -> None:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            jobs = [await store.create(make_job(f"j{i}")) for i in range(6)]
            results = await asyncio.gather(
                *(
                    store.save(replace(job, state_version=2**63 + i), expected_version=1)
                    for i, job in enumerate(jobs)
                ),
                return_exceptions=True,
            )
            assert all(isinstance(r, OverflowError) for r in results), results
            assert [await store.get(job.id) for job in jobs] == jobs
            assert store._conn is not None and not store._conn.in_transaction
            assert (await store.save(jobs[0], expected_version=1)).version == 2

    asyncio.run(main())


def test_a_leader_cancelled_while_it_yields_still_writes_its_batch(tmp_path: Path) -> None:
    """The first write of a batch yields once before it writes the batch: cancelled
    then, it writes the batch all the same (its own write and the ones queued behind
    it), and only then stops waiting."""

    async def main() -> None:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            jobs = [await store.create(make_job(f"j{i}")) for i in range(2)]
            watch = Watch(store)
            leader = asyncio.create_task(store.save(jobs[0], expected_version=1))
            follower = asyncio.create_task(store.save(jobs[1], expected_version=1))
            await asyncio.sleep(0)  # the leader queues its write and yields, the follower
            leader.cancel()  # queues behind it, and the leader is cancelled in its yield
            with pytest.raises(asyncio.CancelledError):
                await leader
            assert (await follower).version == 2
            for job in jobs:
                stored = await store.get(job.id)
                assert stored is not None and stored.version == 2
            commits = [sql for _thread, sql in watch.statements if sql == "COMMIT"]
            assert len(commits) == 1, "both writes in the leader's one transaction"

    asyncio.run(main())


def test_a_write_alone_costs_one_pass_of_the_loop(tmp_path: Path) -> None:
    """A lone save yields once (for the tasks ready then), and is written when its task
    resumes: a task that counts the loop's passes meanwhile runs once."""

    async def main() -> None:
        async with SQLiteJobStore(tmp_path / "jobs.db") as store:
            job = await store.create(make_job("j1"))
            passes = 0
            stop = False

            async def count() -> None:
                nonlocal passes
                while not stop:
                    passes += 1
                    await asyncio.sleep(0)

            counter = asyncio.create_task(count())
            await asyncio.sleep(0)
            before = passes
            await store.save(job, expected_version=1)
            stop = True
            await counter
            assert passes - before == 1

    asyncio.run(main())
