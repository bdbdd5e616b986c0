"""Turns: how many jobs do engine work at once on an event loop.

A job alternates between engine work (the gate, bookkeeping, saves: CPU on the event
loop) and waiting (a model call, a tool that runs on a thread or awaits I/O). Engine
work takes a turn; waiting gives it back. When more jobs want to work than there are
turns, the others wait, in order, without costing anything.

Without turns, a thousand jobs that become ready together (a burst of new jobs, a batch
of approvals) all advance one step before any advances two: the first job's model call
goes out only once every job has done its share of that step, and the model's waiting
time does not overlap the engine's work. With turns, a few jobs at a time run a whole
step through to their next model call, and the engine works on the others while those
calls are out. The total work is the same; jobs get to their model calls sooner, the
loop is not left idle while calls are out, and each job's latency stays bounded.

A turn is held across store writes (they are short, and jobs that save together share
a commit), never across a model call or a tool run that waits.

A unit of work (a start, a resume, a recovery) holds its turn in one scope, ``async
with turns.turn() as turn:``, which takes it and gives it back however the work ends.
Inside, the engine's hot paths give it back around a wait and take it again by hand
(``had = turn.give()`` ... ``if had: await turn.take()``), which costs a thirtieth of
the :meth:`Turn.away` context manager; the scope itself is a plain class, as cheap as a
``try``/``finally`` around the work.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import weakref
from collections.abc import AsyncIterator

__all__ = ["Turn", "Turns"]


class _Gate:
    """The turns of one loop: ``free`` turns, and the jobs waiting for one, in order.

    A turn given back goes straight to the first waiter still waiting (it is not
    counted free in between, so nobody can take it out of order); a waiter cancelled
    after it was handed a turn passes it on. A job takes about eight turns, so this
    is :class:`asyncio.Semaphore` without its general checks (under half the cost:
    170 against 400 ns for a take and a give).
    """

    __slots__ = ("free", "waiters")

    def __init__(self, size: int) -> None:
        self.free = size
        self.waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> None:
        if self.free and not self.waiters:
            self.free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a turn, then cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    self.waiters.remove(waiter)
            raise

    def release(self) -> None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


class Turn:
    """One job's claim on a turn, held or not. Without a limit it is never waited for.

    ``async with`` takes the turn and gives it back at the end of the block (an
    exception or a cancellation included), however often the block gave it away and
    took it again meanwhile."""

    __slots__ = ("_gate", "held")

    def __init__(self, gate: _Gate | None = None) -> None:
        self._gate = gate
        self.held = False

    async def __aenter__(self) -> Turn:
        await self.take()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.give()

    async def take(self) -> None:
        """Wait for a turn (at once if one is free and nobody waits before us)."""
        if self._gate is not None and not self.held:
            await self._gate.acquire()
            self.held = True

    def give(self) -> bool:
        """Give the turn back; whether it was held (nothing to give otherwise)."""
        if not self.held:
            return False
        self.held = False
        assert self._gate is not None
        self._gate.release()
        return True

    @contextlib.asynccontextmanager
    async def away(self) -> AsyncIterator[None]:
        """Give the turn back while the body waits, and take one again after it.

        If the task is cancelled while it waits to take a turn again, it holds none,
        so giving back afterwards gives back nothing: no turn is ever lost or doubled.
        (The engine's own hot paths write ``had = turn.give()`` ... ``if had: await
        turn.take()`` out, which costs a thirtieth of this context manager.)
        """
        had = self.give()
        try:
            yield
        finally:
            if had:
                await self.take()


class Turns:
    """At most ``size`` jobs doing engine work at once, on each event loop (``None``:
    no limit). One :class:`Turns` may serve several loops (``asyncio.run`` twice, or a
    loop per thread): each loop has its own turns."""

    def __init__(self, size: int | None) -> None:
        if size is not None and size < 1:
            raise ValueError(f"turns must be at least 1 (or None for no limit), not {size}")
        self.size = size
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Gate] = (
            weakref.WeakKeyDictionary()
        )

    def turn(self) -> Turn:
        """A turn, not yet taken, on the running loop."""
        if self.size is None:
            return Turn()
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = _Gate(self.size)
        return Turn(gate)

    def free(self) -> int | None:
        """Turns free on the running loop now (``None`` without a limit)."""
        if self.size is None:
            return None
        gate = self._gates.get(asyncio.get_running_loop())
        return self.size if gate is None else gate.free
