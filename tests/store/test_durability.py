"""Durability levels: what a power loss keeps, simulated without a special file system.

A commit on the event loop (``synchronous=NORMAL``) reaches the WAL in the OS page
cache; only an fsync puts it on disk. The tests watch the store's fsyncs
(``_group_commit.sync_file``): at each one the WAL's bytes are what the disk holds. A
power loss is then the database file as it was (no checkpoint ran meanwhile: checked)
with the WAL as last synced, opened anew: SQLite keeps the WAL's frames up to its last
whole commit, and the engine recovers from there.

Under ``default`` the save that marks ``process_refund`` in flight is synced before the
tool runs, so after the power loss recovery finds it in flight and asks an operator: the
refund never runs twice. Under ``fast`` nothing is synced: the disk may hold any earlier
moment (the OS writes its cache back when it likes), here the approval pause, and the
approver's second approval runs the refund a second time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench import lean_job
from tests.store.test_sqlite import make_job

from skillwire.core.errors import UsageError
from skillwire.core.job import JobRecord, JobStatus, OutcomeClass
from skillwire.engine import JobView, Runtime
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore, _group_commit
from skillwire.store.sqlite import Durability
from skillwire.testing import FunctionModel
from skillwire.tools import Executors

TOOLS = """
import os

def process_refund(order_id, amount, *, idempotency_key=""):
    with open(os.environ["REFUND_LEDGER"], "a") as ledger:
        ledger.write(f"{order_id} {amount}\\n")
    return {"order_id": order_id, "status": "refunded", "next_steps": "5 business days."}
"""


def counting_skill(folder: Path) -> Skill:
    """The lean refund skill, its refund written to a ledger (the world outside)."""
    folder.mkdir(parents=True)
    (folder / "lean_tools.py").write_text(TOOLS)
    text = lean_job.SKILL.read_text()
    simulated = text[text.index("    executor:\n      type: simulate") : text.index("\npolicy:")]
    python = '    executor:\n      type: python\n      callable: "lean_tools:process_refund"\n'
    (folder / "domain.yaml").write_text(text.replace(simulated, python))
    return load_skill(folder / "domain.yaml")


class Disk:
    """What is on disk: the WAL as of the store's last fsync of it."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.wal: bytes = b""
        self.syncs = 0
        self.job_id = ""

    def sync(self, path: Path) -> None:
        if path == Path(f"{self.db}-wal"):
            self.wal = path.read_bytes()
            self.syncs += 1
        real_sync(path)

    def flush_now(self) -> None:
        """The OS writes its cache back, as it may at any moment."""
        self.wal = Path(f"{self.db}-wal").read_bytes()

    def power_loss(self, folder: Path, db_file: bytes) -> Path:
        """The files a power loss leaves, in ``folder``."""
        assert self.db.read_bytes() == db_file, "a checkpoint ran: the simulation is void"
        folder.mkdir()
        (folder / "jobs.db").write_bytes(db_file)
        (folder / "jobs.db-wal").write_bytes(self.wal)
        return folder / "jobs.db"


real_sync = _group_commit.sync_file


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "ledger.txt"
    monkeypatch.setenv("REFUND_LEDGER", str(path))
    yield path


def refunds(ledger: Path) -> int:
    return len(ledger.read_text().splitlines()) if ledger.exists() else 0


def empty_file(db: Path) -> bytes:
    """A migrated, checkpointed store file (its WAL gone), as the disk holds it."""

    async def main() -> None:
        async with SQLiteJobStore(db):
            pass

    asyncio.run(main())
    assert not Path(f"{db}-wal").exists()
    return db.read_bytes()


async def approve(runtime: Runtime, job: JobView | JobRecord) -> JobView:
    record = job.record if isinstance(job, JobView) else job
    assert record.waiting is not None
    return await runtime.resume(
        record.id,
        approval="approve",
        role="supervisor",
        decided_by="sup",
        correlation_id=record.waiting.correlation_id,
    )


def run_job(db: Path, skill: Skill, level: Durability, disk: Disk, at_loss: bytes) -> Path:
    """Start the refund, approve it (under ``fast`` the OS flushes at the pause), run it
    to its end, and lose the power before the store closes: the files left."""

    async def main() -> Path:
        async with SQLiteJobStore(db, durability=level) as store:
            runtime = Runtime(store, FunctionModel(lean_job.reply), executors=Executors())
            job = await runtime.start(skill, lean_job.MESSAGE, context={"user_id": "u1"})
            assert job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED
            if level == "fast":
                disk.flush_now()  # the pause reached the disk; nothing after it did
            job = await approve(runtime, job)
            assert job.status is JobStatus.COMPLETED
            disk.job_id = job.id
            return disk.power_loss(db.parent / "after", at_loss)

    return asyncio.run(main())


def after_power_loss(db: Path, skill: Skill, job_id: str, level: Durability) -> JobView:
    """Reopen the files a power loss left; recover the job, or approve it again."""

    async def main() -> JobView:
        async with SQLiteJobStore(db, durability=level) as store:
            runtime = Runtime(store, FunctionModel(lean_job.reply), executors=Executors())
            record = await store.get(job_id)
            assert record is not None
            if record.status is JobStatus.PAUSED:  # the approver is asked again
                return await approve(runtime, record)
            return await runtime.recover(job_id)

    return asyncio.run(main())


def test_default_never_runs_a_refund_twice_after_a_power_loss(
    tmp_path: Path, ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = counting_skill(tmp_path / "skill")
    db = tmp_path / "jobs.db"
    on_disk = empty_file(db)
    disk = Disk(db)
    monkeypatch.setattr(_group_commit, "sync_file", disk.sync)
    lost = run_job(db, skill, "default", disk, on_disk)
    assert refunds(ledger) == 1
    assert disk.syncs == 2  # the pause, and the save before the refund
    job = after_power_loss(lost, skill, disk.job_id, "default")
    assert job.record.outcome_class is OutcomeClass.OPERATOR_ACTION_REQUIRED
    assert job.record.waiting is not None and job.record.waiting.tool == "process_refund"
    assert refunds(ledger) == 1  # found in flight: the operator says whether it ran


def test_fast_can_lose_the_in_flight_marker_and_run_a_refund_twice(
    tmp_path: Path, ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = counting_skill(tmp_path / "skill")
    db = tmp_path / "jobs.db"
    on_disk = empty_file(db)
    disk = Disk(db)
    monkeypatch.setattr(_group_commit, "sync_file", disk.sync)
    lost = run_job(db, skill, "fast", disk, on_disk)
    assert disk.syncs == 0
    job = after_power_loss(lost, skill, disk.job_id, "fast")
    assert job.status is JobStatus.COMPLETED
    assert refunds(ledger) == 2  # what docs/engine.md says fast may do


def test_durable_saves_made_together_share_an_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = Disk(tmp_path / "jobs.db")
    monkeypatch.setattr(_group_commit, "sync_file", disk.sync)

    async def main() -> None:
        async with SQLiteJobStore(disk.db) as store:
            jobs = [await store.create(make_job(f"j{i}")) for i in range(20)]
            assert disk.syncs == 0  # creating is not durable
            await store.save(jobs[0], expected_version=1)
            assert disk.syncs == 0  # nor is a save not asked to be
            await asyncio.gather(
                *(store.save(j, expected_version=1, durable=True) for j in jobs[1:])
            )
            assert 1 <= disk.syncs <= 2  # 19 durable saves, one or two fsyncs
            before = disk.syncs
            await store.save(jobs[0], expected_version=2, durable=True)
            assert disk.syncs == before + 1  # a commit after the last fsync needs its own

    asyncio.run(main())


@pytest.mark.parametrize("level", ["strict", "fast"])
def test_strict_and_fast_never_fsync_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, level: Durability
) -> None:
    """strict: SQLite syncs each commit (synchronous=FULL); fast: nothing is synced."""
    disk = Disk(tmp_path / "jobs.db")
    monkeypatch.setattr(_group_commit, "sync_file", disk.sync)

    async def main() -> None:
        async with SQLiteJobStore(disk.db, durability=level) as store:
            job = await store.create(make_job("j"))
            await store.save(job, expected_version=1, durable=True)
            assert store.durability == level
            mode = 2 if level == "strict" else 1  # FULL, NORMAL
            assert store._conn is not None
            assert store._conn.execute("PRAGMA synchronous").fetchone() == (mode,)
        assert disk.syncs == 0

    asyncio.run(main())


def test_a_failed_fsync_fails_the_save_and_the_refund_does_not_run(
    tmp_path: Path, ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = counting_skill(tmp_path / "skill")
    db = tmp_path / "jobs.db"
    failing = {"on": False}

    def sync(path: Path) -> None:
        if failing["on"]:
            raise OSError(5, "Input/output error")
        real_sync(path)

    monkeypatch.setattr(_group_commit, "sync_file", sync)

    async def main() -> None:
        async with SQLiteJobStore(db) as store:
            runtime = Runtime(store, FunctionModel(lean_job.reply), executors=Executors())
            job = await runtime.start(skill, lean_job.MESSAGE, context={"user_id": "u1"})
            failing["on"] = True
            with pytest.raises(OSError, match="Input/output"):
                await approve(runtime, job)
            failing["on"] = False
            # the next durable save syncs again
            record = await store.get(job.id)
            assert record is not None
            await store.save(record, expected_version=record.version, durable=True)

    asyncio.run(main())
    assert refunds(ledger) == 0


def test_the_level_is_checked(tmp_path: Path) -> None:
    bad: Any = "paranoid"
    with pytest.raises(UsageError, match="strict, default, fast"):
        SQLiteJobStore(tmp_path / "x.db", durability=bad)
    store = SQLiteJobStore(tmp_path / "y.db", synchronous="FULL")
    assert store.durability == "strict"
    asyncio.run(store.close())
