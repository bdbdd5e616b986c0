"""The ``simulate`` executor (spec 002): a result without side effects.

A simulated tool (a ``simulate`` executor, or no executor at all) returns:

1. its declared ``result``, with ``{{arg}}`` replaced by that argument (a string that
   is only ``{{arg}}`` takes the argument's value with its type);
2. for each field its ``output`` declares (``output.fields[]``, ``output.schema``) that
   the result does not give, the argument of that name; when its skill may make values
   up (every tool it may call is simulated: :mod:`skillwire.skills.simulation`), a value
   made up from the field's schema for the others;
3. when it stands in for the output contract, the contract's fields, the same way.

Made-up values are deterministic and typed by the schema (a ``number`` gets a number,
an ``enum`` its first value, a string ``(simulated <name>)``), and the result names
them under ``_simulated``: ``{"tool": ..., "invented": [...]}``, which every result of
a tool with no declared ``result`` carries (then perhaps with no names). A tool with a
real executor is refused here: it never gets invented values.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from skillwire.core.executor import ToolOutcome
from skillwire.skills.model_tools import SimulateExecutor, Tool
from skillwire.skills.simulation import declared_output, is_simulated

__all__ = ["MARKER", "SimulatedExecutor", "fill_template", "invent"]

MARKER = "_simulated"
"""The result key that names the values a simulation made up."""

_DEPTH = 4
"""Nested objects and arrays made up at most this deep."""

_MAX_ITEMS = 10
"""Items made up for an array at most, whatever its ``minItems``."""

_FORMATS = {
    "date": "2000-01-01",
    "date-time": "2000-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "email": "simulated@example.com",
    "uri": "https://example.com/simulated",
    "uuid": "00000000-0000-0000-0000-000000000000",
}


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


def _number(schema: dict[str, Any], integer: bool) -> int | float:
    """0 when the bounds allow it, else the bound nearest to 0."""
    low: float = 0
    if isinstance(schema.get("minimum"), int | float) and schema["minimum"] > low:
        low = schema["minimum"]
    above = schema.get("exclusiveMinimum")
    if isinstance(above, int | float) and low <= above:
        low = math.floor(above) + 1
    top = schema.get("maximum")
    if isinstance(top, int | float) and low > top:
        low = top
    below = schema.get("exclusiveMaximum")
    if isinstance(below, int | float) and low >= below:
        low = math.ceil(below) - 1
    if integer:
        return math.ceil(low)
    return int(low) if float(low).is_integer() else low


def _type_of(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if not isinstance(kind, str):
        if isinstance(schema.get("properties"), dict):
            return "object"
        return "array" if "items" in schema else "string"
    return kind


def invent(name: str, schema: dict[str, Any], depth: int = 0) -> Any:
    """A deterministic value for field ``name`` of ``schema``: its ``const``,
    ``default``, first ``enum`` value or first example if it has one, else one of its
    type (the smallest number its bounds allow, ``true``, one item, every property,
    ``(simulated <name>)`` for a string)."""
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    for key in ("enum", "examples"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return values[0]
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches and isinstance(branches[0], dict):
            return invent(name, branches[0], depth)
    kind = _type_of(schema)
    if kind in ("number", "integer"):
        return _number(schema, kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        items = schema.get("items")
        least = schema.get("minItems")
        count = min(max(1, least if isinstance(least, int) else 1), _MAX_ITEMS)
        if depth >= _DEPTH:
            return []
        return [invent(name, items if isinstance(items, dict) else {}, depth + 1)] * count
    if kind == "object":
        props = schema.get("properties")
        if depth >= _DEPTH or not isinstance(props, dict) or not props:
            return {"simulated": True}
        return {
            key: invent(key, sub if isinstance(sub, dict) else {}, depth + 1)
            for key, sub in props.items()
        }
    fmt = schema.get("format")
    text = _FORMATS.get(fmt, "") if isinstance(fmt, str) else ""
    text = text or f"(simulated {name.replace('_', ' ')})"
    limit = schema.get("maxLength")
    return text[:limit] if isinstance(limit, int) and limit >= 0 else text


class SimulatedExecutor:
    """Runs ``simulate`` executors, and tools that declare no executor at all."""

    async def execute(
        self, tool: Tool, args: dict[str, Any], *, idempotency_key: str, skill_root: Path | None
    ) -> ToolOutcome:
        """The declared result, completed with the declared output and the contract
        fields this tool stands in for; made-up values are named under ``_simulated``."""
        if not is_simulated(tool):
            kind = tool.executor.type if tool.executor is not None else "simulate"
            return ToolOutcome(
                False, error=f"tool '{tool.name}' has a '{kind}' executor: it is not simulated"
            )
        spec = tool.executor if isinstance(tool.executor, SimulateExecutor) else None
        result: dict[str, Any] = fill_template(spec.result, args) if spec else {}
        state_changes = fill_template(spec.state_changes, args) if spec else {}
        plan = tool.simulation()
        wanted = dict(declared_output(tool))
        own = {f.name for f in tool.input_fields()}
        for name in plan.contract_fields:
            # A contract field that is the tool's own input is its argument, or nothing.
            if name not in own or name in args:
                wanted.setdefault(name, {"type": "string"})
        invented: list[str] = []
        for name, schema in wanted.items():
            if name in result:
                continue
            if name in args:
                result[name] = args[name]
            elif plan.invents:
                result[name] = invent(name, schema)
                invented.append(name)
        if invented or spec is None or not spec.result:
            result[MARKER] = {"tool": tool.name, "invented": invented}
        return ToolOutcome(True, result=result, state_changes=state_changes)
