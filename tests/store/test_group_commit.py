"""The group commit's rule: a write fails before changing anything, or is undone alone.

Writes queued together share one transaction; whatever one of them holds (a lone
surrogate, a value SQLite cannot bind, a document past SQLite's length limit) must never
cost the others their commit.
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import replace
from pathlib import Path

from tests.store.test_sqlite import event, make_job

from skillwire.core.job import JobRecord
from skillwire.store import SQLiteJobStore


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
