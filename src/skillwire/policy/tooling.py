"""Per-tool facts the gate computes once: rules by kind, argument checks, prompts.

Arguments are checked strictly (``"750"`` is not a number): a fast path for the flat
schemas that ``inputs[]`` produce, and ``jsonschema`` (Draft 2020-12, compiled once,
never fetching a remote ``$ref``) for any other schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from skillwire.policy.access import AccessPolicy
from skillwire.policy.compiler import CompiledRule, RuleKind
from skillwire.skills.model import Skill
from skillwire.skills.model_tools import ShellCommandExecutor, Tool, ToolInput

__all__ = ["ToolFacts", "check_value"]

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}


def check_value(spec: ToolInput, value: Any, pattern: re.Pattern[str] | None) -> str | None:
    """What is wrong with ``value`` for ``spec``, or None. Never coerces."""
    expected = _TYPES[spec.type]
    if isinstance(value, bool) and spec.type != "boolean":
        return f"expected {spec.type}, got boolean {value!r}"
    if not isinstance(value, expected):
        if spec.type == "integer" and isinstance(value, float) and value.is_integer():
            pass
        else:
            return f"expected {spec.type}, got {type(value).__name__} {value!r}"
    if spec.enum is not None and value not in spec.enum:
        return f"{value!r} is not one of {spec.enum!r}"
    if pattern is not None and isinstance(value, str) and pattern.search(value) is None:
        return f"{value!r} does not match pattern {spec.pattern!r}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        if spec.minimum is not None and value < spec.minimum:
            return f"{value!r} is below the minimum {spec.minimum}"
        if spec.maximum is not None and value > spec.maximum:
            return f"{value!r} is above the maximum {spec.maximum}"
    return None


@dataclass
class ToolFacts:
    """Everything the gate needs about one tool, computed once per skill."""

    tool: Tool
    skill: Skill
    rules: tuple[CompiledRule, ...]
    access: AccessPolicy
    _by_kind: dict[RuleKind, tuple[CompiledRule, ...]] = field(default_factory=dict)
    _fields: dict[str, tuple[ToolInput, re.Pattern[str] | None]] = field(default_factory=dict)
    _validator: Draft202012Validator | None = None
    required: tuple[str, ...] = ()
    _intent_tools: dict[str, frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for rule in self.rules:
            self._by_kind[rule.kind] = (*self._by_kind.get(rule.kind, ()), rule)
        if self.tool.inputs is not None:
            for spec in self.tool.inputs:
                pattern = re.compile(spec.pattern) if spec.pattern else None
                self._fields[spec.name] = (spec, pattern)
            self.required = tuple(s.name for s in self.tool.inputs if s.required)
        else:
            schema = dict(self.tool.input_schema())
            self.required = tuple(schema.pop("required", []) or [])
            self._validator = Draft202012Validator(schema)
        for intent in self.skill.intents.supported:
            if intent.tools is not None:
                names = {
                    self.skill.tool(n).name if self.skill.tool(n) else n  # type: ignore[union-attr]
                    for n in intent.tools
                }
                self._intent_tools[intent.id] = frozenset(names)

    @property
    def name(self) -> str:
        """The tool's full name."""
        return self.tool.name

    def rules_of(self, *kinds: RuleKind) -> tuple[CompiledRule, ...]:
        """The tool's rules of these kinds, in declaration order."""
        if len(kinds) == 1:
            return self._by_kind.get(kinds[0], ())
        return tuple(r for r in self.rules if r.kind in kinds)

    def missing_required(self, args: Mapping[str, Any]) -> frozenset[str]:
        """Required arguments absent, null or empty."""
        return frozenset(n for n in self.required if args.get(n) in (None, ""))

    def argument_errors(self, args: Mapping[str, Any]) -> list[str]:
        """Every problem with the arguments given (missing ones are not problems here)."""
        errors: list[str] = []
        if self._validator is not None:
            present = {k: v for k, v in args.items() if v is not None}
            for err in self._validator.iter_errors(present):
                where = ".".join(str(p) for p in err.absolute_path) or "arguments"
                errors.append(f"{where}: {err.message}")
            return errors
        for key, value in args.items():
            entry = self._fields.get(key)
            if entry is None:
                errors.append(f"{key}: unknown argument of {self.name}")
            elif value is not None:
                problem = check_value(entry[0], value, entry[1])
                if problem:
                    errors.append(f"{key}: {problem}")
        return errors

    def field_schema(self, name: str) -> dict[str, Any]:
        """The JSON Schema of one argument (for validating input given on resume)."""
        schema = self.tool.input_schema().get("properties", {}).get(name)
        return dict(schema) if isinstance(schema, dict) else {}

    def intent_tools(self, intent: str | None) -> frozenset[str] | None:
        """The tools allowed for ``intent``, or None when the intent does not scope tools."""
        if intent is None:
            return None
        return self._intent_tools.get(intent)

    def waived_by_exception(self, rule: CompiledRule, waived: set[int]) -> bool:
        """An ``allow`` condition that holds waives the tool's own ``conditions[]`` rules."""
        return bool(waived) and ".policy.conditions[" in rule.origin

    def shell_problems(self, args: Mapping[str, Any]) -> Iterable[str]:
        """Why a ``shell_command`` tool may not run under the merged access policy."""
        executor = self.tool.executor
        if not isinstance(executor, ShellCommandExecutor):
            return
        program = executor.command
        if not self.access.shell_allows(program):
            yield (
                f"program '{program}' is not in the operator's allowed shell prefixes "
                f"({', '.join(self.access.shell_allowed) or 'none'})"
            )
        if self.access.shell_denies(program):
            yield f"program '{program}' is in the denied shell prefixes"
        action = args.get("action")
        if (
            executor.allowedActions is not None
            and action is not None
            and action not in executor.allowedActions
        ):
            yield f"action {action!r} is not one of the allowed actions"
        for value in _strings(args):
            for op in self.access.shell_deny_operators:
                if op in value:
                    yield f"argument contains the denied shell operator {op!r}"
            for pattern in self.access.shell_deny_patterns:
                if pattern.search(value):
                    yield f"argument matches the denied pattern {pattern.pattern!r}"


def _strings(args: Mapping[str, Any]) -> Iterable[str]:
    for value in args.values():
        if isinstance(value, str):
            yield value
        elif isinstance(value, list | tuple):
            yield from (v for v in value if isinstance(v, str))
