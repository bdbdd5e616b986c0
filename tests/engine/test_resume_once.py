"""A resume is applied exactly once: of two workers resuming (or recovering) the same job
at the same moment, one wins and the other gets ConflictError before it has called a
model or run a tool."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from tests.engine.helpers import (
    ORDER,
    CountingStore,
    Crash,
    SwitchModel,
    approval_script,
    continue_script,
    decide,
    events_of,
    fresh_script,
    input_script,
    ledger_runs,
    ledger_skill,
    run,
)

from skillwire.core.errors import ConflictError
from skillwire.core.job import JobRecord, JobStatus
from skillwire.engine import JobView, Runtime
from skillwire.skills import load_skill
from skillwire.store import SQLiteJobStore
from skillwire.tools import Executors


class BarrierStore(SQLiteJobStore):
    """Holds every ``get`` until ``parties`` of them were made, so that two workers
    surely read the same version before either writes."""

    def __init__(self, path: Path, parties: int = 2) -> None:
        super().__init__(path)
        self.parties = parties
        self.arrived = 0
        self.all_in = asyncio.Event()

    async def get(self, job_id: str) -> JobRecord | None:
        """Read, then wait for the other readers."""
        record = await super().get(job_id)
        self.arrived += 1
        if self.arrived >= self.parties:
            self.all_in.set()
        await self.all_in.wait()
        return record


Work = Callable[[Runtime], Coroutine[Any, Any, JobView]]


async def race(db: Path, replies: list[dict[str, Any]], work: Work) -> list[Any]:
    """Two workers (a runtime and a model each, one store file) do ``work`` at once;
    their results (a JobView or the exception) and their models."""
    store = BarrierStore(db)
    try:
        record = await SQLiteJobStore.get(store, _only_job(await store.list()))
        assert record is not None
        models = [SwitchModel(), SwitchModel()]
        for model in models:
            continue_script(model, record, replies)
        results = await asyncio.gather(
            *(work(Runtime(store, model, executors=Executors())) for model in models),
            return_exceptions=True,
        )
    finally:
        await store.close()
    return [*results, *models]


def _only_job(records: list[JobRecord]) -> str:
    assert len(records) == 1
    return records[0].id


async def paused_job(db: Path, skill_file: Path, replies: list[dict[str, Any]]) -> str:
    """Start a job and leave it at its first pause."""
    store = SQLiteJobStore(db)
    try:
        model = SwitchModel()
        fresh_script(model, replies)
        job = await Runtime(store, model, executors=Executors()).start(
            load_skill(skill_file), "Refund 750 please"
        )
        assert job.status is JobStatus.PAUSED
        return job.id
    finally:
        await store.close()


def winner_and_loser(a: Any, b: Any) -> tuple[JobView, ConflictError]:
    """The result that is a job and the one that is a conflict."""
    if isinstance(a, ConflictError):
        a, b = b, a
    assert isinstance(a, JobView), a
    assert isinstance(b, ConflictError), b
    return a, b


def test_two_concurrent_approvals_apply_once(tmp_path: Path) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    replies = approval_script()

    async def main() -> None:
        job_id = await paused_job(tmp_path / "jobs.db", skill_file, replies)
        a, b, model_a, model_b = await race(
            tmp_path / "jobs.db",
            replies,
            lambda rt: decide(rt, job_id, "approve", role="supervisor"),
        )
        won, lost = winner_and_loser(a, b)
        assert "changed meanwhile" in str(lost)
        assert won.status is JobStatus.COMPLETED
        assert len(events_of(won, "approval_granted")) == 1
        assert ledger_runs(ledger)[("process_refund", f"{job_id}:2")] == 1
        calls = sorted(len(m.current.calls) for m in (model_a, model_b))
        assert calls == [0, 3]  # the loser called no model

    run(main())


def test_two_concurrent_inputs_apply_once(tmp_path: Path) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    replies = input_script()

    async def main() -> None:
        job_id = await paused_job(tmp_path / "jobs.db", skill_file, replies)
        a, b, model_a, model_b = await race(
            tmp_path / "jobs.db", replies, lambda rt: rt.resume(job_id, input={"order_id": ORDER})
        )
        won, _ = winner_and_loser(a, b)
        assert won.record.waiting is not None and won.record.waiting.tool == "process_refund"
        assert len(events_of(won, "input_received")) == 1
        # the first effect after the resume is an idempotent tool: the claim came first
        assert ledger_runs(ledger)[("verify_identity", f"{job_id}:0")] == 1
        assert sorted(len(m.current.calls) for m in (model_a, model_b)) == [0, 2]

    run(main())


def test_two_concurrent_recoveries_apply_once(tmp_path: Path) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    replies = approval_script()

    async def main() -> None:
        crashing = CountingStore(tmp_path / "jobs.db", crash_at=1, after_write=True)
        try:
            model = SwitchModel()
            fresh_script(model, replies)
            await Runtime(crashing, model, executors=Executors()).start(
                load_skill(skill_file), "Refund 750 please"
            )
        except Crash:
            pass
        finally:
            await crashing.close()
        a, b, model_a, model_b = await race(
            tmp_path / "jobs.db", replies, lambda rt: rt.recover(_job_id(tmp_path))
        )
        won, lost = winner_and_loser(a, b)
        assert "worked on elsewhere" in str(lost)
        assert won.record.waiting is not None and won.record.waiting.approver == "supervisor"
        assert sorted(len(m.current.calls) for m in (model_a, model_b)) == [0, 4]
        assert sum(ledger_runs(ledger).values()) == 2  # verify and check, once each

    run(main())


def _job_id(tmp_path: Path) -> str:
    import sqlite3

    with sqlite3.connect(tmp_path / "jobs.db") as db:
        (job_id,) = db.execute("SELECT id FROM jobs").fetchone()
    return str(job_id)
