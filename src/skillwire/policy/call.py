"""One proposed tool call, with everything the gate may read about the job.

The gate takes every input as an argument (arguments, entities, context, history,
inputs, granted approvals), never from a job object or a global, so the same gate
serves jobs, simulations with per-agent state, and any other agent framework.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ApprovalGrant", "GateCall", "ToolRun", "args_key"]


@dataclass(frozen=True, slots=True)
class ToolRun:
    """A tool call already executed in this job (or by this agent)."""

    tool: str
    args: Mapping[str, Any]
    result: Any = None
    ok: bool = True

    def as_dict(self) -> dict[str, Any]:
        """The form conditions read: ``{tool, args, result, ok}``."""
        return {"tool": self.tool, "args": dict(self.args), "result": self.result, "ok": self.ok}


@dataclass(frozen=True, slots=True)
class ApprovalGrant:
    """An approval given by ``role`` for exactly these arguments of ``tool``."""

    tool: str
    args: Mapping[str, Any]
    role: str


def args_key(tool: str, args: Mapping[str, Any]) -> str:
    """A canonical key of a call: an approval binds exactly these arguments."""
    return tool + "\x00" + json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)


@dataclass
class GateCall:
    """A proposal being checked, and its lazily built condition variables."""

    tool: str
    args: dict[str, Any]
    entities: Mapping[str, Any]
    context: Mapping[str, Any]
    history: Sequence[ToolRun]
    inputs: Mapping[str, Any]
    grants: Sequence[ApprovalGrant]
    intent: str | None = None
    stated_tool: str | None = None
    stated_args: Mapping[str, Any] | None = None
    _variables: _Variables | None = field(default=None, repr=False)

    @property
    def variables(self) -> Mapping[str, Any]:
        """What conditions read: each argument, ``args``, ``entities``, ``context``,
        ``history`` and ``counts``. History and counts are built only when read."""
        if self._variables is None:
            self._variables = _Variables(self)
        return self._variables

    def succeeded(self, tool: str) -> list[ToolRun]:
        """Successful earlier runs of ``tool``."""
        return [run for run in self.history if run.ok and run.tool == tool]


class _Variables(Mapping[str, Any]):
    """Condition variables, computed on first access of each runtime name."""

    __slots__ = ("_cache", "_call")

    _RUNTIME = ("args", "entities", "context", "history", "counts")

    def __init__(self, call: GateCall) -> None:
        self._call = call
        self._cache: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name in self._cache:
            return self._cache[name]
        call = self._call
        if name == "args":
            value: Any = call.args
        elif name == "entities":
            value = dict(call.entities)
        elif name == "context":
            value = dict(call.context)
        elif name == "history":
            value = [run.as_dict() for run in call.history]
        elif name == "counts":
            counts: dict[str, int] = {}
            for run in call.history:
                if run.ok:
                    counts[run.tool] = counts.get(run.tool, 0) + 1
            value = counts
        else:
            value = call.args[name]
        self._cache[name] = value
        return value

    def __contains__(self, name: object) -> bool:
        return name in self._RUNTIME or name in self._call.args

    def __iter__(self) -> Iterator[str]:
        yield from self._RUNTIME
        yield from (k for k in self._call.args if k not in self._RUNTIME)

    def __len__(self) -> int:
        return len(self._RUNTIME) + sum(1 for k in self._call.args if k not in self._RUNTIME)
