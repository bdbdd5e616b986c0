"""The ``python`` executor: a callable named by import path, sync or async.

``callable: "refund_tools:process_refund"`` first looks for ``refund_tools.py`` in the
skill's folder, then on the import path. Sync callables run in a worker thread so
they never block other jobs, unless the executor says ``blocking: false`` (a quick pure
function): then they are called on the event loop, which saves the thread hop. Async
callables are awaited on the loop. A callable that accepts ``idempotency_key`` receives
it.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from skillwire.core.executor import ToolOutcome
from skillwire.core.plainjson import plain_dumps
from skillwire.skills.model_tools import PythonExecutor, Tool

__all__ = ["PythonCallableExecutor", "as_json", "resolve_callable"]

_MODULES: dict[tuple[str, str], ModuleType] = {}


def _module(name: str, root: Path | None) -> ModuleType:
    if root is not None:
        candidate = root.joinpath(*name.split(".")).with_suffix(".py")
        if candidate.is_file():
            key = (str(candidate), name)
            cached = _MODULES.get(key)
            if cached is not None:
                return cached
            unique = "skillwire_skill_" + hashlib.sha1(str(candidate).encode()).hexdigest()[:12]
            spec = importlib.util.spec_from_file_location(f"{unique}.{name}", candidate)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {candidate}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            _MODULES[key] = module
            return module
    return importlib.import_module(name)


def resolve_callable(path: str, root: Path | None) -> Any:
    """The object ``module:attr`` names, looked up in the skill's folder first."""
    module_name, _, attr = path.partition(":")
    obj: Any = _module(module_name, root)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{path} is not callable")
    return obj


@dataclass(frozen=True, slots=True)
class _Target:
    """A resolved callable and how to call it."""

    fn: Any
    is_async: bool
    takes_key: bool


_TARGETS: dict[tuple[str, str | None], _Target] = {}


def _target(path: str, root: Path | None) -> _Target:
    """The callable ``path`` names, resolved once per (path, skill folder)."""
    key = (path, None if root is None else str(root))
    found = _TARGETS.get(key)
    if found is None:
        fn = resolve_callable(path, root)
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
        found = _Target(fn, is_async, takes_key)
        _TARGETS[key] = found
    return found


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
    """Runs ``python`` executors."""

    def waits(self, tool: Tool, skill_root: Path | None) -> bool:
        """Whether a run of ``tool`` may wait: it runs on a thread (``blocking``, the
        default) or its callable is async. False when it cannot be loaded (its run
        fails at once)."""
        spec = tool.executor
        if not isinstance(spec, PythonExecutor):
            return False
        if spec.blocking:
            return True
        try:
            return _target(spec.callable, skill_root).is_async
        except (ImportError, AttributeError, TypeError, SyntaxError):
            return False

    async def execute(
        self, tool: Tool, args: dict[str, Any], *, idempotency_key: str, skill_root: Path | None
    ) -> ToolOutcome:
        """Call the function with the arguments as keywords; errors become outcomes.

        The result must be JSON data; it is returned in its plain JSON form (tuples
        become lists), so that what the job stores reads back equal. A sync callable
        runs in a worker thread, or on the loop if the executor says ``blocking: false``.
        """
        spec = tool.executor
        if not isinstance(spec, PythonExecutor):
            return ToolOutcome(False, error=f"{tool.name} has no python executor")
        try:
            target = _target(spec.callable, skill_root)
        except (ImportError, AttributeError, TypeError, SyntaxError) as exc:
            return ToolOutcome(False, error=f"cannot load {spec.callable}: {exc}")
        kwargs = dict(args)
        if target.takes_key:
            kwargs["idempotency_key"] = idempotency_key
        try:
            if target.is_async:
                result = await target.fn(**kwargs)
            else:
                if spec.blocking:
                    result = await asyncio.to_thread(target.fn, **kwargs)
                else:
                    result = target.fn(**kwargs)
                if inspect.isawaitable(result):
                    result = await result
        except Exception as exc:
            return ToolOutcome(False, error=f"{type(exc).__name__}: {exc}")
        try:
            plain = as_json(result)
        except (TypeError, ValueError) as exc:
            return ToolOutcome(False, error=f"result of {tool.name} is not JSON: {exc}")
        return ToolOutcome(True, result=plain)
