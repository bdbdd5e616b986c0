"""The tool threads' pool reuses a thread waiting for work before it starts another,
and starts one when every thread is busy (up to its size): the count of waiting threads
is kept under the pool's lock."""

from __future__ import annotations

import asyncio
import threading

from skillwire.tools import ToolThreads


def _name() -> str:
    return threading.current_thread().name


async def _one_by_one(pool: ToolThreads, calls: int) -> set[str]:
    """The threads of ``calls`` calls, each made once the last one's thread is back
    waiting (it settles the call first, then counts itself as waiting)."""
    names = set()
    for _ in range(calls):
        names.add(await pool.run(_name, {}, 5.0))
        await asyncio.sleep(0.01)
    return names


def test_calls_one_after_another_reuse_one_thread() -> None:
    pool = ToolThreads(4, name="reuse-one")

    async def main() -> set[str]:
        return await _one_by_one(pool, 20)

    assert asyncio.run(main()) == {"reuse-one-1"}


def test_calls_at_once_get_a_thread_each_then_the_threads_are_reused() -> None:
    pool = ToolThreads(3, name="reuse-three")
    barrier = threading.Barrier(3, timeout=5)

    def meet() -> str:
        barrier.wait()  # all three run at the same time, or this times out
        return _name()

    async def main() -> tuple[set[str], set[str]]:
        together = await asyncio.gather(*(pool.run(meet, {}, 10.0) for _ in range(3)))
        await asyncio.sleep(0.05)  # the threads go back to waiting on the queue
        later = await _one_by_one(pool, 10)
        again = await asyncio.gather(*(pool.run(meet, {}, 10.0) for _ in range(3)))
        return set(together) | set(again), later

    at_once, later = asyncio.run(main())
    started = {f"reuse-three-{i}" for i in (1, 2, 3)}
    assert at_once == started
    assert later <= started
    assert pool.stuck == 0
