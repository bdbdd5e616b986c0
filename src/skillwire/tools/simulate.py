"""The ``simulate`` executor (spec 002): the declared result and state changes, no
side effects. ``{{arg}}`` in a result string is replaced by that argument (a string
that is only ``{{arg}}`` takes the argument's value with its type)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillwire.core.executor import ToolOutcome
from skillwire.skills.model_tools import SimulateExecutor, Tool

__all__ = ["SimulatedExecutor", "fill_template"]


def fill_template(value: Any, args: dict[str, Any]) -> Any:
    """``value`` with ``{{name}}`` placeholders filled from ``args``, recursively."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("{{") and stripped.endswith("}}") and stripped.count("{{") == 1:
            name = stripped[2:-2].strip()
            return args.get(name, value)
        out = value
        for name, arg in args.items():
            out = out.replace("{{" + name + "}}", str(arg))
        return out
    if isinstance(value, dict):
        return {k: fill_template(v, args) for k, v in value.items()}
    if isinstance(value, list):
        return [fill_template(v, args) for v in value]
    return value


class SimulatedExecutor:
    """Runs ``simulate`` executors, and tools that declare no executor at all."""

    async def execute(
        self, tool: Tool, args: dict[str, Any], *, idempotency_key: str, skill_root: Path | None
    ) -> ToolOutcome:
        """The declared result; ``{"simulated": true}`` for a tool with no executor."""
        spec = tool.executor
        if isinstance(spec, SimulateExecutor):
            return ToolOutcome(
                True,
                result=fill_template(spec.result, args),
                state_changes=fill_template(spec.state_changes, args),
            )
        return ToolOutcome(True, result={"simulated": True, "tool": tool.name})
