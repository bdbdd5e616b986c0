"""Limits across jobs in the engine (issue 20 item 5): the refund example refunds an
order once across all its jobs, on the offline scripted model and one SQLite store;
variants of a spelling are one order; a failed run gives its claim back; a job resumed
after another job took the order is refused; a rate limit counts per user.

Racing jobs on SQLite and PostgreSQL: tests/store/test_claims_engine.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tests.engine.helpers import (
    ORDER,
    REFUND_DIR,
    Crash,
    call,
    events_of,
    final,
    gate,
    intent,
    polish,
    refund_variant,
    run,
    runtime_for,
    skill_from,
)

from skillwire.core.job import JobRecord, JobStatus
from skillwire.engine import JobView, Runtime
from skillwire.skills import Skill, load_skill
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import Executors, resolve_callable

SMALL = {"order_id": ORDER, "amount": 120}


def refund_job(amount: float = 120, order: str = ORDER) -> list[dict[str, Any]]:
    """A refund of ``amount`` (under 500: no approval) that ends answered."""
    args = {"order_id": order, "amount": amount}
    return [
        intent(**args),
        call("verify_identity", "c1", order_id=order),
        call("check_eligibility", "c2", **args),
        call("process_refund", "c3", **args),
        final(),
        gate(),
        polish(),
    ]


def refusals(job: JobView, code: str) -> list[dict[str, Any]]:
    """The reasons with ``code`` of the job's gate decisions."""
    return [
        r for e in events_of(job, "gate_decision") for r in e.data["reasons"] if r["code"] == code
    ]


def runs_of(job: JobView, tool: str) -> int:
    return sum(1 for e in events_of(job, "tool_started") if e.data["tool"] == tool)


def test_a_second_refund_of_the_same_order_in_a_new_job_is_refused(tmp_path: Path) -> None:
    """The issue's "Must show": the shipped refund example, two jobs, one store."""
    skill = load_skill(REFUND_DIR / "domain.yaml")

    async def main() -> None:
        refused = refund_job()[:5]  # a blocked job ends without the gate and polisher
        async with runtime_for(tmp_path / "jobs.db", refund_job() + refused) as (rt, model):
            first = await rt.start(skill, f"Refund 120 for {ORDER}")
            assert first.status is JobStatus.COMPLETED and runs_of(first, "process_refund") == 1
            second = await rt.start(skill, f"Refund 120 for {ORDER}, please")
            model.assert_complete()
        assert runs_of(second, "process_refund") == 0  # the tool never started
        [reason] = refusals(second, "ONCE_PER")
        assert "once per args.order_id across all jobs" in reason["message"]
        assert first.id in reason["message"]  # which job holds the order
        assert "refund_support/domain.yaml:" in reason["source"]  # the once_per line
        assert second.record.outcome_class is not None
        assert str(second.record.outcome_class) == "BLOCKED"

    run(main())


ANY_ID = """
    id: payouts
    problem: {statement: "Pay refunds"}
    intents:
      supported:
        - id: refund
          description: Refund an order
          examples: ["refund my order"]
    tools:
      - name: refund
        description: Refund an order
        inputs:
          - {name: order_id, type: string, required: true}
          - {name: note, type: string}
        policy:
          once_per: args.order_id
        executor: {type: python, callable: "payout_tools:refund"}
    output_contract:
      required_fields: [order_id]
    engine:
      finalization_gate: {enabled: false}
    """

TOOLS = """
    FAIL = set()

    def refund(order_id, note=None):
        if order_id in FAIL:
            FAIL.discard(order_id)
            raise RuntimeError("the payment service is down")
        return {"order_id": order_id, "status": "refunded"}
    """


def payout_skill(folder: Path, **edits: str) -> Skill:
    text = ANY_ID
    for old, new in edits.items():
        text = text.replace(old, new)
    return skill_from(folder, text, payout_tools=TOOLS)


def payout_job(order: str) -> list[dict[str, Any]]:
    """A payout job's replies: refund ``order``, then answer."""
    return [
        intent("refund", order_id=order),
        call("refund", "r1", order_id=order),
        call("final_answer", "f1", answer="done", fields={"order_id": order}),
    ]


async def start_all(
    rt: Runtime, skill: Skill, orders: list[str], owners: list[str] | None = None
) -> list[JobView]:
    jobs = []
    for n, order in enumerate(orders):
        owner = owners[n] if owners else "alice"
        jobs.append(await rt.start(skill, f"refund {order!r}", owner=owner))
    return jobs


def test_a_trivially_different_spelling_is_the_same_order(tmp_path: Path) -> None:
    """Without a pattern the schema takes any text: trailing newline, case, spaces,
    full-width letters and a zero-width space all name the order already refunded."""
    skill = payout_skill(tmp_path / "skill")
    spellings = ["ORD-1", "ORD-1\n", "ord-1", "  ORD-1  ", "\uff2f\uff32\uff24-1", "ORD\u200b-1"]
    script = [r for s in spellings for r in payout_job(s)] + payout_job("ORD-2")

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            jobs = await start_all(rt, skill, [*spellings, "ORD-2"])
            model.assert_complete()
        assert runs_of(jobs[0], "refund") == 1
        for job in jobs[1:-1]:
            assert runs_of(job, "refund") == 0, job.events
            assert refusals(job, "ONCE_PER"), job.events
        assert runs_of(jobs[-1], "refund") == 1  # another order is another key

    run(main())


@pytest.mark.parametrize("permanent", [False, True])
def test_a_failed_run_gives_the_order_back_unless_the_tool_is_permanent(
    tmp_path: Path, permanent: bool
) -> None:
    """once_per counts runs that may have had an effect: a run that failed (the
    executor reported it) releases its claim, so a later job may refund the order. A
    ``permanent`` tool's effect may have happened though its run failed (a timeout
    after the payment service paid): its failed run keeps the claim, as ``once_only``
    counts it in a job, and a later job's refund of the order is refused."""
    edits = {"once_per: args.order_id": "once_per: args.order_id\n        permanent: true"}
    skill = payout_skill(tmp_path / "skill", **(edits if permanent else {}))
    assert skill.tool("refund").permanent is permanent  # type: ignore[union-attr]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", payout_job("ORD-9") * 2) as (rt, model):
            refund = resolve_callable("payout_tools:refund", skill.root)
            sys.modules[refund.__module__].FAIL.add("ORD-9")  # the executor's module
            first = await rt.start(skill, "refund ORD-9")
            assert [e.data["tool"] for e in events_of(first, "tool_failed")] == ["refund"]
            second = await rt.start(skill, "refund ORD-9")
            model.assert_complete()
        if permanent:
            assert runs_of(second, "refund") == 0, second.events
            assert refusals(second, "ONCE_PER"), second.events
        else:
            assert [e.data["tool"] for e in events_of(second, "tool_finished")] == ["refund"]

    run(main())


def test_a_job_resumed_after_another_took_the_order_is_refused(tmp_path: Path) -> None:
    """Job A waits for a supervisor on a 750 refund; meanwhile job B refunds 120 of the
    same order; A's approval then finds the order taken: its refund never runs."""
    skill = refund_variant(tmp_path / "skill")
    store = SQLiteJobStore(tmp_path / "jobs.db")
    big = refund_job(750)

    async def main() -> None:
        model_a = ScriptedModel([*big[:4], final()])
        model_b = ScriptedModel(refund_job(120))
        rt_a = Runtime(store, model_a, executors=Executors())
        rt_b = Runtime(store, model_b, executors=Executors())
        try:
            a = await rt_a.start(skill, f"Refund 750 for {ORDER}")
            assert a.status is JobStatus.PAUSED and a.record.waiting is not None
            b = await rt_b.start(skill, f"Refund 120 for {ORDER}")
            assert runs_of(b, "process_refund") == 1
            a = await rt_a.resume(
                a.id,
                approval="approve",
                role="supervisor",
                decided_by="sup",
                correlation_id=a.record.waiting.correlation_id,
            )
            model_a.assert_complete()
            model_b.assert_complete()
        finally:
            await store.close()
        assert runs_of(a, "process_refund") == 0
        [reason] = refusals(a, "ONCE_PER")
        assert b.id in reason["message"]

    run(main())


def test_a_rate_limit_counts_per_user_across_jobs(tmp_path: Path) -> None:
    skill = payout_skill(
        tmp_path / "skill",
        **{"once_per: args.order_id": "rate_limit: {max: 2, per: 1h, scope: user}"},
    )
    orders = ["A-1", "A-2", "A-3", "B-1"]
    owners = ["alice", "alice", "alice", "bob"]
    script = [r for o in orders for r in payout_job(o)]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            jobs = await start_all(rt, skill, orders, owners)
            model.assert_complete()
        assert [runs_of(j, "refund") for j in jobs] == [1, 1, 0, 1]
        [reason] = refusals(jobs[2], "RATE_LIMITED")
        assert "2 runs in the last 1h for user 'alice' (limit 2)" in reason["message"]

    run(main())


class DiesWithTheCallInFlight(SQLiteJobStore):
    """The SQLite store; the process "dies" (:class:`Crash`) right after the save that
    took a claim, with the call in flight."""

    async def save(self, job: JobRecord, **options: Any) -> JobRecord:  # type: ignore[override]
        saved = await super().save(job, **options)
        if options.get("claims"):
            raise Crash("killed with the call in flight")
        return saved


def test_a_crash_in_flight_keeps_the_claim(tmp_path: Path) -> None:
    """A crash between the claim and the run's end may have left the refund done: the
    claim is kept (fail safe). Another job is refused; the crashed job, settled by an
    operator as not run, runs under the claim it holds."""
    skill = payout_skill(tmp_path / "skill")
    db = tmp_path / "jobs.db"

    async def main() -> None:
        dying = DiesWithTheCallInFlight(db)
        try:
            rt = Runtime(dying, ScriptedModel(payout_job("ORD-5")[:2]), executors=Executors())
            with pytest.raises(Crash):
                await rt.start(skill, "refund ORD-5")
        finally:
            await dying.close()
        [crashed] = await _jobs(db)
        script = payout_job("ORD-5") + payout_job("ORD-5")[2:]
        async with runtime_for(db, script) as (rt, model):
            other = await rt.start(skill, "refund ORD-5 again")
            assert runs_of(other, "refund") == 0 and refusals(other, "ONCE_PER")
            assert crashed in refusals(other, "ONCE_PER")[0]["message"]
            paused = await rt.recover(crashed)
            assert str(paused.record.outcome_class) == "OPERATOR_ACTION_REQUIRED"
            done = await rt.resume(crashed, input={"outcome": "not_run"}, role="operator")
            model.assert_complete()
        assert [e.data["tool"] for e in events_of(done, "tool_finished")] == ["refund"]

    run(main())


async def _jobs(db: Path) -> list[str]:
    store = SQLiteJobStore(db)
    try:
        return [job.id for job in await store.list()]
    finally:
        await store.close()


def test_jobs_without_an_owner_share_one_rate_limit_per_user(tmp_path: Path) -> None:
    """``skillwire run`` without a ``user_id`` context starts jobs with no owner (""):
    a ``scope: user`` limit is not lifted for them, they count as one user together."""
    skill = payout_skill(
        tmp_path / "skill",
        **{"once_per: args.order_id": "rate_limit: {max: 2, per: 1h, scope: user}"},
    )
    orders = ["A-1", "A-2", "A-3"]
    script = [r for o in orders for r in payout_job(o)]

    async def main() -> None:
        async with runtime_for(tmp_path / "jobs.db", script) as (rt, model):
            jobs = [await rt.start(skill, f"refund {order!r}") for order in orders]
            model.assert_complete()
        assert [j.record.owner for j in jobs] == ["", "", ""]
        assert [runs_of(j, "refund") for j in jobs] == [1, 1, 0]
        assert refusals(jobs[2], "RATE_LIMITED")

    run(main())
