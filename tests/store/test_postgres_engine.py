"""The engine on the PostgreSQL store: a crash at any save is recovered, a resume (an
approval, an input, a recovery) raced by two processes is applied once, and an
interrupted non-idempotent tool waits for an operator. The same scenarios as
``tests/engine/test_recovery.py`` and ``test_resume_once.py``, each "process" a store
with its own connection pool."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import (
    ORDER,
    Crash,
    SwitchModel,
    approval_script,
    continue_script,
    decide,
    drive,
    events_of,
    fresh_script,
    ledger_runs,
    ledger_skill,
)
from tests.engine.test_recovery import FLOWS, check_record

from skillwire.core.errors import ConflictError
from skillwire.core.job import Event, JobRecord, JobStatus, ModelCallRecord, OutcomeClass
from skillwire.core.store import Claim, ClaimSnapshot, ClaimStore, JobStore
from skillwire.engine import JobView, Runtime
from skillwire.skills import load_skill
from skillwire.store.postgres import PostgresJobStore
from skillwire.tools import Executors


class Wrapped:
    """A store that hands every call to ``inner``: the base of the test stores below."""

    def __init__(self, inner: JobStore) -> None:
        self.inner = inner

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        return await self.inner.create(job, events)

    async def save(
        self,
        job: JobRecord,
        *,
        expected_version: int,
        events: Sequence[Event] = (),
        model_calls: Sequence[ModelCallRecord] = (),
        durable: bool = False,
        claims: Sequence[Claim] = (),
        released: Sequence[str] = (),
    ) -> JobRecord:
        return await self.inner.save(
            job,
            expected_version=expected_version,
            events=events,
            model_calls=model_calls,
            durable=durable,
            claims=claims,
            released=released,
        )

    async def claim_ledger(self, claims: Sequence[Claim]) -> ClaimSnapshot:
        assert isinstance(self.inner, ClaimStore)
        return await self.inner.claim_ledger(claims)

    async def get(self, job_id: str) -> JobRecord | None:
        return await self.inner.get(job_id)

    async def list(self, **filters: Any) -> list[JobRecord]:
        return await self.inner.list(**filters)

    async def events(self, job_id: str, *, after_seq: int = 0) -> list[Event]:
        return await self.inner.events(job_id, after_seq=after_seq)

    async def model_calls(self, job_id: str) -> list[ModelCallRecord]:
        return await self.inner.model_calls(job_id)

    async def close(self) -> None:
        await self.inner.close()


class Crashing(Wrapped):
    """Dies (raises :class:`Crash`) at write ``crash_at``, before or after it lands."""

    def __init__(self, inner: JobStore, crash_at: int, after_write: bool) -> None:
        super().__init__(inner)
        self.writes, self.crash_at, self.after_write = 0, crash_at, after_write

    async def _counted(self, write: Callable[[], Awaitable[JobRecord]]) -> JobRecord:
        self.writes += 1
        if self.writes == self.crash_at and not self.after_write:
            raise Crash(f"crash before write {self.writes}")
        saved = await write()
        if self.writes == self.crash_at:
            raise Crash(f"crash after write {self.writes}")
        return saved

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        return await self._counted(lambda: self.inner.create(job, events))

    async def save(self, job: JobRecord, **options: Any) -> JobRecord:  # type: ignore[override]
        return await self._counted(lambda: self.inner.save(job, **options))


class Barrier(Wrapped):
    """Holds each ``get`` until both racers have read, so both read one version."""

    def __init__(self, inner: JobStore, gate: dict[str, Any]) -> None:
        super().__init__(inner)
        self.gate = gate

    async def get(self, job_id: str) -> JobRecord | None:
        record = await self.inner.get(job_id)
        self.gate["arrived"] += 1
        if self.gate["arrived"] >= 2:
            self.gate["all_in"].set()
        await self.gate["all_in"].wait()
        return record


async def first_pass(store: JobStore, skill_file: Path, flow: str) -> str | None:
    """Start, give input, approve, as a user would, until the store dies."""
    script, message, _ = FLOWS[flow]
    model = SwitchModel()
    runtime = Runtime(store, model, executors=Executors())
    job_id = None
    try:
        fresh_script(model, script())
        job = await runtime.start(load_skill(skill_file), message, detail=False)
        job_id = job.id
        while job.status is JobStatus.PAUSED:
            if job.record.outcome_class is OutcomeClass.APPROVAL_REQUIRED:
                job = await decide(runtime, job.id, "approve", role="supervisor", detail=False)
            else:
                job = await runtime.resume(job.id, input={"order_id": ORDER}, detail=False)
    except Crash:
        listed = await store.list()
        return listed[0].id if listed else None
    return job_id


CASES = [
    (flow, k, after)
    for flow, (_, _, writes) in FLOWS.items()
    for k in range(1, writes + 1)
    for after in (False, True)
]


@pytest.mark.parametrize(("flow", "crash_at", "after_write"), CASES)
def test_a_crash_at_any_save_is_recovered_on_postgres(
    pg_dsn: str, tmp_path: Path, flow: str, crash_at: int, after_write: bool
) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")

    async def main() -> None:
        crashing = Crashing(PostgresJobStore(pg_dsn), crash_at, after_write)
        try:
            job_id = await first_pass(crashing, skill_file, flow)
        finally:
            await crashing.close()
        if job_id is None:
            assert crash_at == 1 and not after_write
            return
        store = PostgresJobStore(pg_dsn)  # another process
        try:
            model = SwitchModel()
            runtime = Runtime(store, model, executors=Executors())
            job = await drive(runtime, model, job_id, FLOWS[flow][0](), ledger)
        finally:
            await store.close()
        assert job.status is JobStatus.COMPLETED, [e.kind for e in job.events]
        check_record(job)
        refunds = {k: n for (tool, k), n in ledger_runs(ledger).items() if tool == "process_refund"}
        assert refunds == {f"{job_id}:2": 1}

    asyncio.run(main())


async def _race(pg_dsn: str, replies: list[dict[str, Any]], work: Any) -> list[Any]:
    """Two processes (a store, a runtime and a model each) do ``work`` at once."""
    gate = {"arrived": 0, "all_in": asyncio.Event()}
    stores = [Barrier(PostgresJobStore(pg_dsn), gate) for _ in range(2)]
    try:
        listed = await stores[0].inner.list()
        assert len(listed) == 1
        models = [SwitchModel(), SwitchModel()]
        for model in models:
            continue_script(model, listed[0], replies)
        results = await asyncio.gather(
            *(
                work(Runtime(s, m, executors=Executors()))
                for s, m in zip(stores, models, strict=True)
            ),
            return_exceptions=True,
        )
    finally:
        for store in stores:
            await store.close()
    return [*results, *models]


def _winner(a: Any, b: Any) -> tuple[JobView, ConflictError]:
    if isinstance(a, ConflictError):
        a, b = b, a
    assert isinstance(a, JobView), a
    assert isinstance(b, ConflictError), b
    return a, b


def test_two_processes_approving_at_once_apply_it_once(pg_dsn: str, tmp_path: Path) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    replies = approval_script()

    async def main() -> None:
        store = PostgresJobStore(pg_dsn)
        model = SwitchModel()
        fresh_script(model, replies)
        job = await Runtime(store, model, executors=Executors()).start(
            load_skill(skill_file), "Refund 750 please"
        )
        await store.close()
        assert job.status is JobStatus.PAUSED
        a, b, model_a, model_b = await _race(
            pg_dsn, replies, lambda rt: decide(rt, job.id, "approve", role="supervisor")
        )
        won, lost = _winner(a, b)
        assert "changed meanwhile" in str(lost)
        assert won.status is JobStatus.COMPLETED
        assert len(events_of(won, "approval_granted")) == 1
        assert ledger_runs(ledger)[("process_refund", f"{job.id}:2")] == 1
        assert sorted(len(m.current.calls) for m in (model_a, model_b)) == [0, 3]

    asyncio.run(main())


def test_two_processes_recovering_at_once_apply_it_once(pg_dsn: str, tmp_path: Path) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    replies = approval_script()

    async def main() -> None:
        crashing = Crashing(PostgresJobStore(pg_dsn), 1, True)
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
        reader = PostgresJobStore(pg_dsn)
        job_id = (await reader.list())[0].id
        await reader.close()
        a, b, model_a, model_b = await _race(pg_dsn, replies, lambda rt: rt.recover(job_id))
        won, lost = _winner(a, b)
        assert "worked on elsewhere" in str(lost)
        assert won.record.waiting is not None and won.record.waiting.approver == "supervisor"
        assert sorted(len(m.current.calls) for m in (model_a, model_b)) == [0, 4]
        assert sum(ledger_runs(ledger).values()) == 2

    asyncio.run(main())


def test_an_interrupted_refund_waits_for_an_operator_on_postgres(
    pg_dsn: str, tmp_path: Path
) -> None:
    skill_file, ledger = ledger_skill(tmp_path / "skill")
    script = approval_script()

    async def main() -> None:
        crashing = Crashing(PostgresJobStore(pg_dsn), 3, True)  # the refund marked in flight
        try:
            job_id = await first_pass(crashing, skill_file, "approval")
        finally:
            await crashing.close()
        assert job_id is not None
        store = PostgresJobStore(pg_dsn)
        try:
            model = SwitchModel()
            runtime = Runtime(store, model, executors=Executors())
            stored = await store.get(job_id)
            assert stored is not None
            continue_script(model, stored, script)
            job = await runtime.recover(job_id)
            assert job.record.outcome_class is OutcomeClass.OPERATOR_ACTION_REQUIRED
            assert job.record.waiting is not None
            assert job.record.waiting.reason_code == "TOOL_INTERRUPTED"
            job = await runtime.resume(job_id, input={"outcome": "not_run"})
        finally:
            await store.close()
        assert job.status is JobStatus.COMPLETED
        assert ledger_runs(ledger)[("process_refund", f"{job_id}:2")] == 1

    asyncio.run(main())
