"""Turns: at most N jobs do engine work at once on a loop; a job gives its turn back
while it waits on a model or a tool that waits, and no turn is ever lost."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.engine.helpers import REFUND_DIR, decide, run

from skillwire.core.chat import ChatRequest, ChatResponse
from skillwire.core.errors import ConflictError, NotFoundError
from skillwire.core.job import Event, JobRecord, JobStatus, OutcomeClass
from skillwire.engine import Runtime
from skillwire.engine.turns import Turns
from skillwire.skills import load_skill
from skillwire.skills.model_tools import PythonExecutor, SimulateExecutor
from skillwire.store import SQLiteJobStore
from skillwire.testing import FunctionModel
from skillwire.tools import Executors

SKILL = REFUND_DIR / "domain.yaml"


async def settle(condition: object, what: str) -> None:
    """Let the loop run until ``condition()`` holds (no sleeps: a bounded number of turns
    of the loop, each letting every ready task run)."""
    for _ in range(10_000):
        if condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


# -- the Turns class ---------------------------------------------------------------------


def test_at_most_size_turns_are_held_and_waiters_go_in_order() -> None:
    async def main() -> None:
        turns = Turns(2)
        order: list[int] = []
        release = asyncio.Event()

        async def job(n: int) -> None:
            turn = turns.turn()
            await turn.take()
            order.append(n)
            try:
                await release.wait()
            finally:
                turn.give()

        tasks = [asyncio.create_task(job(n)) for n in range(5)]
        await settle(lambda: len(order) == 2, "two jobs take turns")
        for _ in range(20):
            await asyncio.sleep(0)
        assert order == [0, 1], "the others wait while both turns are held"
        assert turns.free() == 0
        release.set()
        await asyncio.gather(*tasks)
        assert order == [0, 1, 2, 3, 4]
        assert turns.free() == 2

    run(main())


def test_away_gives_the_turn_back_while_waiting_and_takes_it_again() -> None:
    async def main() -> None:
        turns = Turns(1)
        first, second = turns.turn(), turns.turn()
        await first.take()
        gate = asyncio.Event()
        inside = asyncio.Event()

        async def waits_away() -> None:
            async with first.away():
                inside.set()
                await gate.wait()
            assert first.held

        task = asyncio.create_task(waits_away())
        await inside.wait()
        assert not first.held and turns.free() == 1
        await second.take()  # free while the first one waits away
        gate.set()
        for _ in range(20):
            await asyncio.sleep(0)
        assert not task.done(), "the first waits for the second to give its turn back"
        second.give()
        await task
        first.give()
        assert turns.free() == 1

    run(main())


def test_a_task_cancelled_while_taking_its_turn_again_loses_no_turn() -> None:
    async def main() -> None:
        turns = Turns(1)
        holder, other = turns.turn(), turns.turn()
        await holder.take()
        gate = asyncio.Event()

        async def body() -> None:
            try:
                async with holder.away():
                    await gate.wait()
            finally:
                holder.give()  # what Runtime.start does on the way out

        task = asyncio.create_task(body())
        await settle(lambda: not holder.held, "the holder gives its turn back")
        await other.take()
        gate.set()
        for _ in range(20):
            await asyncio.sleep(0)
        assert not task.done(), "it waits to take a turn again"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not holder.held
        other.give()
        assert turns.free() == 1, "the cancelled task neither kept nor gave an extra turn"

    run(main())


def test_a_turn_handed_to_a_waiter_cancelled_before_it_ran_goes_to_the_next() -> None:
    async def main() -> None:
        turns = Turns(1)
        holder, first, second = turns.turn(), turns.turn(), turns.turn()
        await holder.take()
        waiting_first = asyncio.create_task(first.take())
        waiting_second = asyncio.create_task(second.take())
        await settle(lambda: turns.free() == 0 and not waiting_first.done(), "both wait")
        for _ in range(5):
            await asyncio.sleep(0)
        assert holder.give()  # handed to the first waiter, which has not run yet
        waiting_first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting_first
        assert not first.held
        await asyncio.wait_for(waiting_second, timeout=5)
        assert second.held and turns.free() == 0, "the turn went on, not lost, not doubled"
        assert second.give()
        assert turns.free() == 1

    asyncio.run(main())


def test_no_limit_never_waits_and_a_limit_below_one_is_refused() -> None:
    async def main() -> None:
        turns = Turns(None)
        many = [turns.turn() for _ in range(100)]
        for turn in many:
            await turn.take()
        assert turns.free() is None

    run(main())
    with pytest.raises(ValueError, match="at least 1"):
        Turns(0)


def test_each_event_loop_has_its_own_turns() -> None:
    turns = Turns(1)

    async def take_and_keep() -> None:
        await turns.turn().take()  # never given back on this loop

    run(take_and_keep())
    run(take_and_keep())  # a new loop: its own turn, free


# -- the runtime -------------------------------------------------------------------------


class SlowCreateStore(SQLiteJobStore):
    """Creates wait for a signal, counting how many are under way at once."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.now = self.most = 0
        self.go = asyncio.Event()

    async def create(self, job: JobRecord, events: Sequence[Event] = ()) -> JobRecord:
        """Wait for ``go``, then create."""
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await self.go.wait()
            return await super().create(job, events)
        finally:
            self.now -= 1


def out_of_domain(request: ChatRequest) -> ChatResponse:
    """An intent no skill has: every job ends after its one model call."""
    return ChatResponse(text=json.dumps({"intent": "weather", "entities": {}}))


def test_the_runtime_bounds_the_jobs_doing_engine_work(tmp_path: Path) -> None:
    async def main() -> None:
        store = SlowCreateStore(tmp_path / "jobs.db")
        runtime = Runtime(store, FunctionModel(out_of_domain), turns=2, executors=Executors())
        skill = load_skill(SKILL)
        try:
            jobs = [asyncio.create_task(runtime.start(skill, f"hi {n}")) for n in range(5)]
            await settle(lambda: store.now == 2, "two jobs reach their first save")
            for _ in range(20):
                await asyncio.sleep(0)
            assert store.now == 2, "three jobs wait for a turn"
            store.go.set()
            done = await asyncio.gather(*jobs)
            assert store.most == 2
            assert {j.record.outcome_class for j in done} == {OutcomeClass.OUT_OF_DOMAIN}
            assert runtime.turns.free() == 2
        finally:
            await store.close()

    run(main())


def test_jobs_give_their_turn_back_while_the_model_works(tmp_path: Path) -> None:
    """With one turn, every job still gets its model call out: the turn is given back
    while a call is out, so the model sees all of them waiting at once."""

    async def main() -> None:
        answer = asyncio.Event()
        waiting = 0

        async def slow(request: ChatRequest) -> ChatResponse:
            nonlocal waiting
            waiting += 1
            await answer.wait()
            return out_of_domain(request)

        store = SQLiteJobStore(tmp_path / "jobs.db")
        runtime = Runtime(store, FunctionModel(slow), turns=1, executors=Executors())
        skill = load_skill(SKILL)
        try:
            jobs = [asyncio.create_task(runtime.start(skill, f"hi {n}")) for n in range(4)]
            await settle(lambda: waiting == 4, "four model calls out with one turn")
            assert runtime.turns.free() == 1
            answer.set()
            done = await asyncio.gather(*jobs)
            assert all(j.status is JobStatus.COMPLETED for j in done)
            assert runtime.turns.free() == 1
        finally:
            await store.close()

    run(main())


def test_a_failed_start_gives_its_turn_back(tmp_path: Path) -> None:
    async def main() -> None:
        def broken(request: ChatRequest) -> ChatResponse:
            raise RuntimeError("a bug in the model adapter")

        store = SQLiteJobStore(tmp_path / "jobs.db")
        runtime = Runtime(store, FunctionModel(broken), turns=1, executors=Executors())
        try:
            job = await runtime.start(load_skill(SKILL), "hi")  # failed, not raised
            assert (job.status, job.record.outcome_class) == ("failed", "INTERNAL_ERROR")
            assert runtime.turns.free() == 1
        finally:
            await store.close()

    run(main())


def test_a_turn_scope_gives_its_turn_back_however_the_block_ends() -> None:
    async def main() -> None:
        turns = Turns(1)
        with pytest.raises(ValueError, match="boom"):
            async with turns.turn() as turn:
                assert turn.held and turns.free() == 0
                turn.give()  # given away and taken again inside, as the hot paths do
                await turn.take()
                raise ValueError("boom")
        assert turns.free() == 1
        async with turns.turn() as turn:
            turn.give()  # given away at the end: nothing left to give back
        assert turns.free() == 1

    run(main())


def test_a_refused_resume_or_recover_gives_its_turn_back(tmp_path: Path) -> None:
    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        runtime = Runtime(store, FunctionModel(out_of_domain), turns=1, executors=Executors())
        try:
            job = await runtime.start(load_skill(SKILL), "hi", detail=False)
            with pytest.raises(NotFoundError):
                await runtime.resume("no-such-job", input={})
            with pytest.raises(ConflictError, match="not paused"):
                await decide(runtime, job.id, "approve", role="supervisor")
            with pytest.raises(NotFoundError):
                await runtime.recover("no-such-job")
            assert runtime.turns.free() == 1
        finally:
            await store.close()

    run(main())


# -- which tool runs give the turn back -------------------------------------------------


def test_only_tool_runs_that_wait_give_the_turn_back() -> None:
    skill = load_skill(SKILL)
    executors = Executors()
    refund = skill.tool("process_refund")
    assert refund is not None and isinstance(refund.executor, PythonExecutor)
    assert refund.executor.blocking is False
    assert not executors.waits(refund, skill.root), "a sync callable run on the loop"
    on_thread = refund.model_copy(
        update={"executor": refund.executor.model_copy(update={"blocking": True})}
    )
    assert executors.waits(on_thread, skill.root)
    missing = refund.model_copy(
        update={"executor": refund.executor.model_copy(update={"callable": "no.such:thing"})}
    )
    assert not executors.waits(missing, skill.root), "it fails at once"
    simulated = refund.model_copy(update={"executor": SimulateExecutor(type="simulate")})
    assert not executors.waits(simulated, skill.root)


def test_a_job_cancelled_during_its_model_call_ends_without_waiting_for_a_turn(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        called = asyncio.Event()

        async def never(request: ChatRequest) -> ChatResponse:
            called.set()
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

        store = SQLiteJobStore(tmp_path / "jobs.db")
        runtime = Runtime(store, FunctionModel(never), turns=1, executors=Executors())
        try:
            job = asyncio.create_task(runtime.start(load_skill(SKILL), "hi"))
            await called.wait()
            other = runtime.turns.turn()
            await other.take()  # every turn is held by someone else now
            job.cancel()
            await settle(job.done, "the cancelled job ends")
            assert job.cancelled()
            other.give()
            assert runtime.turns.free() == 1
        finally:
            await store.close()

    run(main())
