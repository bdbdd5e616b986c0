"""The ``ToolExecutor`` protocol: how a tool the gate allowed actually runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from skillwire.skills.model_tools import Tool

__all__ = ["ToolExecutor", "ToolOutcome"]


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool run produced: a JSON-ready result, declared state changes, or an error."""

    ok: bool
    result: Any = None
    state_changes: dict[str, Any] = field(default_factory=dict)
    error: str = ""


class ToolExecutor(Protocol):
    """Runs one kind of executor (``python``, ``simulate``, ...)."""

    async def execute(
        self,
        tool: Tool,
        args: dict[str, Any],
        *,
        idempotency_key: str,
        skill_root: Path | None,
    ) -> ToolOutcome:
        """Run ``tool``. Failures are outcomes (``ok=False``), not exceptions."""
        ...
