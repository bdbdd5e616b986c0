"""Two jobs racing for one order id, on SQLite and on PostgreSQL (two handles: two
processes, in effect): both pass the gate (each read the ledger before either took the
claim), and the store lets exactly one take it; the other job records the refusal and
never runs the tool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.engine.helpers import events_of, run
from tests.engine.test_once_per import payout_job, payout_skill

from skillwire.core.store import Claim, ClaimSnapshot
from skillwire.engine import JobView, Runtime
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import Executors


class Meeting:
    """Holds each ledger read until both racers have read (no sleeps: it waits on the
    other's arrival)."""

    def __init__(self) -> None:
        self.arrived = 0
        self.all_in = asyncio.Event()

    async def arrive(self) -> None:
        self.arrived += 1
        if self.arrived >= 2:
            self.all_in.set()
        await self.all_in.wait()


def meeting_store(base: type, meeting: Meeting, *args: object) -> object:
    """An instance of ``base`` (a job store class) whose ledger reads meet."""

    class Met(base):  # type: ignore[misc, valid-type]
        async def claim_ledger(self, claims: Sequence[Claim]) -> ClaimSnapshot:
            read = await super().claim_ledger(claims)
            await meeting.arrive()
            return read

    return Met(*args)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_two_jobs_racing_for_one_order_run_it_once(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    skill = payout_skill(tmp_path / "skill")
    meeting = Meeting()
    if kind == "sqlite":
        stores = [meeting_store(SQLiteJobStore, meeting, tmp_path / "jobs.db") for _ in "ab"]
    else:
        from skillwire.store.postgres import PostgresJobStore

        dsn = request.getfixturevalue("pg_dsn")
        stores = [meeting_store(PostgresJobStore, meeting, dsn) for _ in "ab"]

    async def main() -> list[JobView]:
        runtimes = [
            Runtime(store, ScriptedModel(payout_job("ORD-7")), executors=Executors())  # type: ignore[arg-type]
            for store in stores
        ]
        try:
            return list(
                await asyncio.gather(
                    *(
                        rt.start(skill, "refund ORD-7", owner=f"u{n}")
                        for n, rt in enumerate(runtimes)
                    )
                )
            )
        finally:
            for store in stores:
                await store.close()  # type: ignore[attr-defined]

    jobs = run(main())
    ran = [j for j in jobs if events_of(j, "tool_started")]
    refused = [j for j in jobs if not events_of(j, "tool_started")]
    assert len(ran) == 1 and len(refused) == 1, [j.events for j in jobs]
    assert [e.data["tool"] for e in events_of(ran[0], "tool_finished")] == ["refund"]
    loser = refused[0]
    reasons = [r for e in events_of(loser, "gate_decision") for r in e.data["reasons"]]
    assert [r["code"] for r in reasons] == ["ALLOWED", "ONCE_PER"]  # passed, then refused
    assert "taken by another job meanwhile" in reasons[1]["message"]
    assert ran[0].id in reasons[1]["message"]
    assert loser.status.value == "completed"
