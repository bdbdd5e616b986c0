"""The threads that run sync python tools, with a time limit per call.

A thread cannot be stopped from outside. So when a sync tool outlasts its limit, its
caller gets :class:`ToolTimeoutError` at once while the thread goes on until the function
returns (its result is then dropped). Three things keep such a stuck thread harmless:

- the threads are daemon threads: a stuck one never holds the process's exit (the
  standard pool's threads are joined at exit, and ``asyncio.run`` waits for its default
  executor's);
- a stuck thread stops counting against the pool's size, so the calls of other jobs
  still find a thread; at most ``size`` threads may be stuck at once, beyond which the
  pool stops replacing them and further calls wait in the queue, fail at their own
  limit, and never start;
- a call whose caller gave up before a thread took it (its limit passed in the queue,
  or its job was cancelled) is dropped, never run late.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import os
import queue
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any

from skillwire.core.errors import ToolTimeoutError

__all__ = ["ToolThreads", "ToolTimeoutError"]


class _State(Enum):
    QUEUED = auto()
    RUNNING = auto()
    DROPPED = auto()  # given up before it started: never runs
    ABANDONED = auto()  # given up while running: its thread leaves the pool after it
    DONE = auto()


@dataclass(eq=False, slots=True)
class _Call:
    fn: Callable[..., Any]
    kwargs: dict[str, Any]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    context: contextvars.Context
    state: _State = field(default=_State.QUEUED)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """Give the caller its result, unless it stopped waiting."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


_POOLS: weakref.WeakSet[ToolThreads] = weakref.WeakSet()


class ToolThreads:
    """A pool of at most ``size`` daemon threads (started when needed, then kept) that
    run sync tool functions for the event loop, each call within a time limit."""

    def __init__(self, size: int = 32, *, name: str = "skillwire-tool") -> None:
        if size < 1:
            raise ValueError("a pool needs at least one thread")
        self.size = size
        self._name = name
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._reset()
        _POOLS.add(self)

    def _reset(self) -> None:
        """An empty pool (also in a forked child, where the parent's threads are gone)."""
        self._queue: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        # threads waiting on the queue for a call, counted under the lock (nobody ever
        # waits on this count: threading.Semaphore's condition would cost a few us a call)
        self._idle = 0
        self._threads = 0  # threads that count against size
        self._stuck = 0  # threads still running a call given up on

    @property
    def stuck(self) -> int:
        """How many threads are running calls whose callers gave up."""
        return self._stuck

    async def run(self, fn: Callable[..., Any], kwargs: dict[str, Any], seconds: float) -> Any:
        """``fn(**kwargs)`` on a pool thread, in a copy of the caller's context
        variables (as ``asyncio.to_thread``); its result, or what it raised.

        Raises :class:`ToolTimeoutError` when ``seconds`` pass first (time spent waiting
        for a thread included). A cancelled caller drops the call as a timeout does.
        """
        loop = asyncio.get_running_loop()
        call = _Call(fn, kwargs, loop, loop.create_future(), contextvars.copy_context())
        self._submit(call)
        timer = asyncio.timeout(seconds)
        try:
            async with timer:
                return await call.future
        except TimeoutError:
            if not timer.expired():
                raise  # the function itself raised TimeoutError
            raise ToolTimeoutError(seconds, started=self._give_up(call)) from None
        except asyncio.CancelledError:
            self._give_up(call)
            raise

    def _submit(self, call: _Call) -> None:
        self._queue.put(call)
        with self._lock:
            if self._idle:  # a thread waiting on the queue takes it
                self._idle -= 1
                return
            if self._threads >= self.size:
                return
            self._threads += 1
        thread = threading.Thread(target=self._work, name=f"{self._name}-{next(self._numbers)}")
        thread.daemon = True
        thread.start()

    def _give_up(self, call: _Call) -> bool:
        """Stop waiting for ``call``; whether it had started."""
        with self._lock:
            if call.state is _State.QUEUED:
                call.state = _State.DROPPED
                return False
            if call.state is _State.RUNNING and self._stuck < self.size:
                call.state = _State.ABANDONED
                self._threads -= 1
                self._stuck += 1
            return True

    def _work(self) -> None:
        while True:
            call = self._queue.get()
            with self._lock:
                runs = call.state is _State.QUEUED
                if runs:
                    call.state = _State.RUNNING
            if runs:
                result: Any = None
                error: BaseException | None = None
                try:
                    result = call.context.run(call.fn, **call.kwargs)
                except BaseException as exc:  # the caller's to see, whatever it is
                    error = exc
                with self._lock:
                    leaves = call.state is _State.ABANDONED
                    call.state = _State.DONE
                    if leaves:
                        self._stuck -= 1
                if leaves:
                    return
                with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
                    call.loop.call_soon_threadsafe(_settle, call.future, result, error)
                del call, result, error
            with self._lock:
                self._idle += 1


def _after_fork() -> None:
    for pool in list(_POOLS):
        pool._lock = threading.Lock()
        pool._reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
