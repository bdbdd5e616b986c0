"""Python tools have a time limit: a hung tool fails its call with a clear error instead
of holding its job forever, and a thread stuck in a sync tool neither holds the
process's shutdown nor the other jobs' tools.

The tools below wait on events that are never set (or set only at teardown, to free a
stuck thread); every test waits on outcomes, never on the clock. Each run is bounded by
:data:`BOUND` seconds, so that a missing limit fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import ValidationError
from tests.engine.helpers import ORDER, events_of, lookup_script, lookup_yaml, run, skill_from

from skillwire.core.executor import ToolOutcome
from skillwire.core.job import JobStatus
from skillwire.engine import Runtime
from skillwire.skills import Tool
from skillwire.store import SQLiteJobStore
from skillwire.testing import ScriptedModel
from skillwire.tools import (
    DEFAULT_TOOL_TIMEOUT,
    Executors,
    PythonCallableExecutor,
    ToolThreads,
    ToolTimeoutError,
)
from skillwire.tools.python_callable import resolve_callable

BOUND = 20.0
"""Seconds a test waits for an outcome before it calls the limit missing."""

MODULE = """
import asyncio
import threading

GATE = threading.Event()      # set at teardown only: frees the threads stuck on it
STARTED = threading.Event()
STARTS = {}
RAN = []


def started(order_id):
    return STARTS.setdefault(order_id, threading.Event())


async def never(order_id):
    await asyncio.Event().wait()


async def stubborn(order_id):
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:  # swallows the first cancellation, waits on
        await asyncio.Event().wait()


def stuck(order_id):
    STARTED.set()
    started(order_id).set()
    GATE.wait()
    RAN.append(("stuck", order_id))
    return {"late": order_id}


def quick(order_id):
    RAN.append(("quick", order_id))
    return {"order_id": order_id}


def raises_timeout(order_id):
    raise TimeoutError("the warehouse did not answer")


def returns_never(order_id):
    return never(order_id)
"""


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A skill folder holding ``slow_mod.py``; its gate is opened at teardown, so that
    no thread stays stuck after the test."""
    (tmp_path / "slow_mod.py").write_text(textwrap.dedent(MODULE))
    yield tmp_path
    module(tmp_path).GATE.set()


def module(root: Path) -> ModuleType:
    """The loaded ``slow_mod`` of ``root`` (its globals: the events, ``RAN``)."""
    return sys.modules[resolve_callable("slow_mod:quick", root).__module__]


def tool(target: str, **executor: Any) -> Tool:
    """A tool running ``slow_mod:<target>``, with more executor fields if given."""
    return Tool.model_validate(
        {
            "name": target,
            "inputs": [{"name": "order_id", "type": "string", "required": True}],
            "executor": {"type": "python", "callable": f"slow_mod:{target}", **executor},
        }
    )


async def bounded(
    executor: Executors | PythonCallableExecutor, target: str, root: Path, **spec: Any
) -> ToolOutcome:
    """One run of ``slow_mod:<target>``, failing the test if it outlasts :data:`BOUND`."""
    return await asyncio.wait_for(
        executor.execute(
            tool(target, **spec), {"order_id": ORDER}, idempotency_key="k", skill_root=root
        ),
        BOUND,
    )


def test_an_async_tool_that_never_returns_times_out(root: Path) -> None:
    outcome = asyncio.run(bounded(Executors(), "never", root, timeoutMs=50))
    assert not outcome.ok
    assert outcome.error.startswith("timed out after 0.05 s")


def test_an_async_tool_that_swallows_its_cancellation_still_times_out(root: Path) -> None:
    outcome = asyncio.run(bounded(Executors(), "stubborn", root, timeoutMs=50))
    assert not outcome.ok and outcome.error.startswith("timed out after 0.05 s")


def test_an_awaitable_returned_by_a_sync_tool_is_bounded_too(root: Path) -> None:
    for blocking in (True, False):
        outcome = asyncio.run(
            bounded(Executors(), "returns_never", root, timeoutMs=50, blocking=blocking)
        )
        assert not outcome.ok and outcome.error.startswith("timed out after 0.05 s")


def test_a_sync_tool_stuck_in_its_thread_times_out_and_does_not_hold_shutdown(
    root: Path,
) -> None:
    mod = module(root)
    # a limit that leaves a loaded machine time to start the thread
    outcome = asyncio.run(bounded(Executors(), "stuck", root, timeoutMs=250))
    # asyncio.run returned: the stuck thread did not hold the loop's shutdown
    assert not outcome.ok
    assert outcome.error.startswith("timed out after 0.25 s")
    assert "cannot be stopped" in outcome.error, "the outcome says the call may go on"
    assert mod.STARTED.is_set() and not mod.GATE.is_set()
    stuck = [t for t in threading.enumerate() if t.name.startswith("skillwire-tool")]
    assert stuck and all(t.daemon for t in stuck), "a stuck thread never holds the exit"


def test_the_runtime_default_applies_when_the_tool_declares_no_limit(root: Path) -> None:
    outcome = asyncio.run(bounded(Executors(tool_timeout=0.05), "never", root))
    assert not outcome.ok and outcome.error.startswith("timed out after 0.05 s")
    outcome = asyncio.run(bounded(PythonCallableExecutor(timeout=0.05), "stuck", root))
    assert not outcome.ok and outcome.error.startswith("timed out after 0.05 s")
    assert DEFAULT_TOOL_TIMEOUT == 30.0
    # the tool's own limit wins over the runtime's
    outcome = asyncio.run(bounded(Executors(tool_timeout=BOUND * 2), "never", root, timeoutMs=50))
    assert outcome.error.startswith("timed out after 0.05 s")


def test_a_tool_raising_timeout_error_is_not_a_time_limit(root: Path) -> None:
    outcome = asyncio.run(bounded(Executors(), "raises_timeout", root))
    assert outcome == ToolOutcome(False, error="TimeoutError: the warehouse did not answer")


def test_a_stuck_thread_does_not_starve_the_next_calls(root: Path) -> None:
    async def main() -> None:
        executor = PythonCallableExecutor(threads=1)
        first = await bounded(executor, "stuck", root, timeoutMs=50)
        assert first.error.startswith("timed out after 0.05 s")
        # the only thread is stuck, but it no longer counts: the next call runs
        second = await bounded(executor, "quick", root, timeoutMs=int(BOUND * 1000))
        assert second == ToolOutcome(True, {"order_id": ORDER})

    run(main())


def test_a_call_that_times_out_before_it_starts_never_runs(root: Path) -> None:
    mod = module(root)

    async def main() -> None:
        executor = PythonCallableExecutor(threads=1)
        holder = asyncio.create_task(bounded(executor, "stuck", root, timeoutMs=int(BOUND * 1000)))
        await asyncio.to_thread(mod.STARTED.wait, BOUND)
        queued = await bounded(executor, "quick", root, timeoutMs=50)
        assert not queued.ok
        assert queued.error.startswith("timed out after 0.05 s before it started")
        mod.GATE.set()
        assert (await holder) == ToolOutcome(True, {"late": ORDER})
        # the one thread takes the dropped call before this one: it has skipped it
        after = await bounded(executor, "quick", root, timeoutMs=int(BOUND * 1000))
        assert after.ok
        assert mod.RAN == [("stuck", ORDER), ("quick", ORDER)], "the dropped call never ran"

    run(main())


def test_threads_stuck_in_calls_given_up_on_are_bounded(root: Path) -> None:
    mod = module(root)

    async def main() -> None:
        pool = ToolThreads(1, name=f"bounded-{id(root)}")

        async def given_up(order_id: str) -> None:
            """A call cancelled once its function has started (and is stuck)."""
            task = asyncio.create_task(pool.run(mod.stuck, {"order_id": order_id}, BOUND))
            await asyncio.to_thread(mod.started(order_id).wait, BOUND)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        await given_up("a")
        assert pool.stuck == 1  # it left the pool: a new thread takes the next call
        await given_up("b")
        assert pool.stuck == 1  # at most `size` threads stuck outside: this one stays in
        with pytest.raises(ToolTimeoutError) as queued:
            await pool.run(mod.quick, {"order_id": "c"}, 0.05)
        assert not queued.value.started
        threads = [t for t in threading.enumerate() if t.name.startswith(f"bounded-{id(root)}")]
        assert len(threads) == 2, "two stuck threads, no third started"

    run(main())


@pytest.mark.parametrize("limit", [0, -1, 3_600_001, 1.5, "30"])
def test_a_tool_limit_must_be_whole_positive_milliseconds_up_to_an_hour(limit: Any) -> None:
    with pytest.raises(ValidationError):
        tool("never", timeoutMs=limit)
    assert tool("never", timeoutMs=3_600_000).executor.timeoutMs == 3_600_000  # type: ignore[union-attr]


HUNG_SKILL = lookup_yaml("hung", lookup_order="slow_mod:never", timeout_ms=50)


def test_a_timed_out_tool_is_a_tool_failure_event_of_its_job(tmp_path: Path) -> None:
    skill = skill_from(tmp_path / "skill", HUNG_SKILL, slow_mod=MODULE)
    script = lookup_script("The lookup timed out.")

    async def main() -> None:
        store = SQLiteJobStore(tmp_path / "jobs.db")
        model = ScriptedModel(script)
        try:
            runtime = Runtime(store, model, executors=Executors())
            job = await asyncio.wait_for(runtime.start(skill, "look up my order"), BOUND)
        finally:
            await store.close()
        model.assert_complete()
        assert job.status is JobStatus.COMPLETED
        failed = events_of(job, "tool_failed")
        assert [e.data["tool"] for e in failed] == ["lookup_order"]
        assert failed[0].message.startswith("timed out after 0.05 s")
        told = [m for m in model.calls[2].messages if m.role == "tool"][-1]
        assert told.content.startswith("ERROR: timed out after 0.05 s")

    run(main())
