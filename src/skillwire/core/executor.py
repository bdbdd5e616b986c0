"""How a tool the gate allowed actually runs: the executor protocols.

:class:`ToolExecutor` runs one kind of executor (``python``, ``simulate``, ...);
:class:`ExecutorRegistry` picks one by the tool's declaration, and is what the engine
holds (``skillwire.tools.Executors`` is the one the program assembles). Both are
generic in the tool definition they read, bound by :class:`ToolDefinition`: what any
executor may rely on, so that this module needs nothing of ``skillwire.skills``.

A registry also says which tools of a skill it cannot run at all
(:meth:`ExecutorRegistry.unavailable`: a credential unset under
``missingCredentialBehavior: continue``, an MCP server not configured or not offering
the tool, ...), so that the engine tells the planner before it plans and the gate
refuses such a call without running anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

__all__ = [
    "ExecutorDeclaration",
    "ExecutorRegistry",
    "ToolDefinition",
    "ToolExecutor",
    "ToolOutcome",
]


class ExecutorDeclaration(Protocol):
    """A tool's ``executor`` block, as far as choosing an executor reads it."""

    @property
    def type(self) -> str:
        """The executor's kind: ``python``, ``simulate``, ``http_request``, ..."""
        ...


class ToolDefinition(Protocol):
    """A declared tool, as far as executors read it (a skill's ``Tool`` is one)."""

    @property
    def name(self) -> str:
        """The tool's name."""
        ...

    @property
    def executor(self) -> ExecutorDeclaration | None:
        """How the tool runs (``None``: simulated)."""
        ...


ToolT_contra = TypeVar("ToolT_contra", bound=ToolDefinition, contravariant=True)
"""The tool definition an executor reads."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool run produced: a JSON-ready result, declared state changes, or an error."""

    ok: bool
    result: Any = None
    state_changes: dict[str, Any] = field(default_factory=dict)
    error: str = ""


class ToolExecutor(Protocol[ToolT_contra]):
    """Runs one kind of executor (``python``, ``simulate``, ...)."""

    async def execute(
        self,
        tool: ToolT_contra,
        args: dict[str, Any],
        *,
        idempotency_key: str,
        skill_root: Path | None,
    ) -> ToolOutcome:
        """Run ``tool``. Failures are outcomes (``ok=False``), not exceptions."""
        ...


class ExecutorRegistry(ToolExecutor[ToolT_contra], Protocol[ToolT_contra]):
    """The executors of a runtime: runs any tool with the executor its declaration
    names (a failure, an unknown executor type included, is an outcome), and says
    beforehand whether the run may wait."""

    def waits(self, tool: ToolT_contra, skill_root: Path | None) -> bool:
        """Whether running ``tool`` may wait (on a thread, for I/O), so that the job
        gives its turn at engine work back meanwhile."""
        ...

    def unavailable(
        self, tools: Sequence[ToolT_contra], skill_root: Path | None
    ) -> Mapping[str, str]:
        """The tools among ``tools`` (one skill's, in ``skill_root``) that this runtime
        cannot run, by full name, each with why in one short sentence (what the planner
        is told, and the gate's reason). As far as is known now: what needs a server's
        answer is known after :meth:`prepare`."""
        ...

    async def prepare(self, tools: Sequence[ToolT_contra], skill_root: Path | None) -> None:
        """Learn what :meth:`unavailable` needs I/O for, before a job of the skill plans
        (the MCP servers its tools name are started and list their tools; each is
        listed once per runtime). Never raises: what fails is reported by
        :meth:`unavailable`."""
        ...
