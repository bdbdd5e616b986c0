"""The ``python`` executor: a callable named by import path, sync or async, within a
time limit.

``callable: "refund_tools:process_refund"`` names ``refund_tools.py`` in the skill's
folder, or a module the operator lists (:mod:`skillwire.tools.python_scope`); nothing
else is imported. Sync callables run on a pool thread so they never block other jobs
(:mod:`skillwire.tools.tool_threads`), unless the executor says ``blocking: false`` (a
quick pure function): then they are called on the event loop, which saves the thread
hop. Async callables are awaited on the loop. A callable that accepts
``idempotency_key`` receives it.

Every call has a time limit: the executor's ``timeoutMs``, else the runtime's
(``[tools] timeout``, :data:`DEFAULT_TOOL_TIMEOUT` seconds). An async callable is
cancelled when it passes; a sync one cannot be stopped, so its thread runs on and its
result is dropped, and the outcome says so. A sync ``blocking: false`` callable runs on
the loop and cannot be interrupted at all: the limit does not apply to it (only to an
awaitable it returns), which is why it must be quick.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from skillwire.core.executor import ToolOutcome
from skillwire.core.plainjson import plain_dumps
from skillwire.skills.model_tools import PythonExecutor, Tool
from skillwire.tools.python_scope import CallableRefusedError, module_stamp, resolve_callable
from skillwire.tools.tool_threads import ToolThreads, ToolTimeoutError

__all__ = ["DEFAULT_TOOL_TIMEOUT", "PythonCallableExecutor", "as_json", "resolve_callable"]

DEFAULT_TOOL_TIMEOUT = 30.0
"""Seconds a tool call may take when neither the tool nor the runtime says otherwise."""


@dataclass(frozen=True, slots=True)
class _Target:
    """A resolved callable and how to call it."""

    fn: Any
    is_async: bool
    takes_key: bool
    stamp: tuple[int, int] | None
    """:func:`module_stamp` of the module's file when it was resolved."""


_Key = tuple[str, str | None, tuple[str, ...]]
_TARGETS: dict[_Key, _Target] = {}


def _target(path: str, root: Path | None, modules: tuple[str, ...]) -> _Target:
    """The callable ``path`` names, resolved once per (path, skill folder, allowed
    modules) and content of its module's file: what one runtime's operator allowed is
    never served to another, and a skill reloaded after its module changed runs the new
    code."""
    key = _key(path, root, modules)
    found = _TARGETS.get(key)
    stamp = module_stamp(path, root)
    if found is None or found.stamp != stamp:  # new, or its module's file changed
        fn = resolve_callable(path, root, modules)
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        takes_key = any(
            p.name == "idempotency_key" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params
        )
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
        )
        found = _Target(fn, is_async, takes_key, stamp)
        _TARGETS[key] = found
    return found


def _last_target(path: str, root: Path | None, modules: tuple[str, ...]) -> _Target:
    """The callable as :func:`_target` last resolved it for the same key, without
    looking at its module's file again (no ``stat``); resolved now when it never was.
    Only for a hint (:meth:`PythonCallableExecutor.waits`): a run always calls
    :func:`_target`, which sees a changed module."""
    found = _TARGETS.get(_key(path, root, modules))
    return found if found is not None else _target(path, root, modules)


def _key(path: str, root: Path | None, modules: tuple[str, ...]) -> _Key:
    """Where :data:`_TARGETS` keeps the callable ``path`` of a skill folder ``root``
    under the allowed ``modules``."""
    return (path, None if root is None else str(root), modules)


def _discard(task: asyncio.Task[Any]) -> None:
    """Retrieve what a task given up on ended with, so that nothing is logged for it."""
    if not task.cancelled():
        task.exception()


async def _within(awaitable: Awaitable[Any], seconds: float) -> Any:
    """The awaitable's result, or :class:`ToolTimeoutError` after ``seconds``.

    It runs as a task of its own and is cancelled at the limit without waiting for it to
    end, so that one that swallows its cancellation cannot hold the job either.
    """
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait((task,), timeout=seconds)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        task.add_done_callback(_discard)
        raise ToolTimeoutError(seconds, started=True)
    return task.result()


def _timed_out(limit: float, started: bool, on_thread: bool) -> str:
    """The outcome's error for a call that passed its limit of ``limit`` seconds."""
    passed = f"timed out after {limit:g} s"
    if not started:
        return f"{passed} before it started (every tool thread was busy); it will not run"
    if on_thread:
        return (
            f"{passed}; a sync callable cannot be stopped: it runs on in its thread, may "
            "still take effect, and its result will be dropped"
        )
    return f"{passed}; the call was cancelled"


def as_json(value: Any) -> Any:
    """``value`` in its plain JSON form: what storing it and reading it back gives (a
    copy: tuples become lists). Raises ``TypeError`` or ``ValueError`` as ``json.dumps``
    does if it is not JSON data (NaN included). A value already plain is copied through
    orjson, several times faster."""
    data = plain_dumps(value)
    if data is not None:
        return orjson.loads(data)
    return json.loads(json.dumps(value, allow_nan=False))


class PythonCallableExecutor:
    """Runs ``python`` executors whose callables come from the skill's folder or from
    ``modules`` (module prefixes the operator lists), each call within its limit
    (the tool's ``timeoutMs``, else ``timeout`` seconds). Sync callables run on a pool
    of at most ``threads`` threads."""

    def __init__(
        self,
        *,
        modules: Sequence[str] = (),
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        threads: int = 32,
    ) -> None:
        if not timeout > 0:
            raise ValueError("a tool time limit must be positive")
        self.modules = tuple(modules)
        self.timeout = timeout
        self._threads_size = threads
        self._threads: ToolThreads | None = None  # started on the first sync call

    def _target(self, spec: PythonExecutor, skill_root: Path | None) -> _Target:
        return _target(spec.callable, skill_root, self.modules)

    def _pool(self) -> ToolThreads:
        """The threads of sync callables, started with the first one."""
        if self._threads is None:
            self._threads = ToolThreads(self._threads_size)
        return self._threads

    def waits(self, tool: Tool, skill_root: Path | None) -> bool:
        """Whether a run of ``tool`` may wait: it runs on a thread (``blocking``, the
        default) or its callable is async. False when it cannot be loaded (its run
        fails at once).

        The engine asks just before each run, which looks at the module's file itself:
        so this answer reads the callable as last resolved, without a ``stat`` of its
        own. After a module changed between sync and async, one run may keep or give
        back its turn when the other would suit it better (a scheduling hint: the run
        itself is the new code, awaited within its limit either way)."""
        spec = tool.executor
        if not isinstance(spec, PythonExecutor):
            return False
        if spec.blocking:
            return True
        try:
            return _last_target(spec.callable, skill_root, self.modules).is_async
        except (Exception, SystemExit):  # refused or broken: the run reports it
            return False

    def limit(self, spec: PythonExecutor) -> float:
        """The seconds a call of ``spec`` may take."""
        return spec.timeoutMs / 1000 if spec.timeoutMs is not None else self.timeout

    async def execute(
        self, tool: Tool, args: dict[str, Any], *, idempotency_key: str, skill_root: Path | None
    ) -> ToolOutcome:
        """Call the function with the arguments as keywords; errors become outcomes.

        The result must be JSON data; it is returned in its plain JSON form (tuples
        become lists), so that what the job stores reads back equal. A sync callable
        runs on a pool thread, or on the loop if the executor says ``blocking: false``.
        A call that passes its time limit fails with "timed out after N s".
        """
        spec = tool.executor
        if not isinstance(spec, PythonExecutor):
            return ToolOutcome(False, error=f"{tool.name} has no python executor")
        try:
            target = self._target(spec, skill_root)
        except CallableRefusedError as exc:
            return ToolOutcome(False, error=f"refused {spec.callable}: {exc}")
        except (Exception, SystemExit) as exc:  # the module's own code failed to load
            return ToolOutcome(
                False, error=f"cannot load {spec.callable}: {type(exc).__name__}: {exc}"
            )
        kwargs = dict(args)
        if target.takes_key:
            kwargs["idempotency_key"] = idempotency_key
        limit = self.limit(spec)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        on_thread = False  # whether the limit passed while a pool thread ran it
        try:
            if target.is_async:
                result = await _within(target.fn(**kwargs), limit)
            else:
                if spec.blocking:
                    on_thread = True
                    result = await self._pool().run(target.fn, kwargs, limit)
                    on_thread = False
                else:
                    result = target.fn(**kwargs)
                if inspect.isawaitable(result):
                    result = await _within(result, max(deadline - loop.time(), 0.0))
        except ToolTimeoutError as exc:
            return ToolOutcome(False, error=_timed_out(limit, exc.started, on_thread))
        except (Exception, SystemExit) as exc:
            return ToolOutcome(False, error=f"{type(exc).__name__}: {exc}")
        try:
            plain = as_json(result)
        except (TypeError, ValueError) as exc:
            return ToolOutcome(False, error=f"result of {tool.name} is not JSON: {exc}")
        return ToolOutcome(True, result=plain)
