"""Per-tool facts the gate computes once: rules by kind, argument checks, shell policy.

Everything a decision needs that does not depend on the call is computed here, when
the gate is built, so that checking a call only evaluates what depends on it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from skillwire.policy.access import AccessPolicy
from skillwire.policy.arguments import ArgumentChecker
from skillwire.policy.decisions import Reason, ReasonCode
from skillwire.policy.rules import CompiledRule, RuleKind
from skillwire.policy.shell import shell_problems
from skillwire.skills.model import Skill
from skillwire.skills.model_tools import ShellCommandExecutor, Tool

__all__ = ["ToolFacts"]

_INSTITUTIONAL = (RuleKind.ONCE_ONLY, RuleKind.PERMANENT, RuleKind.MAX_CALLS)
_ASKING = (RuleKind.APPROVAL, RuleKind.ESCALATION)


@dataclass
class ToolFacts:
    """Everything the gate needs about one tool, computed once per skill."""

    tool: Tool
    skill: Skill
    rules: tuple[CompiledRule, ...]
    access: AccessPolicy
    intent_tools: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The tools each intent allows, for intents that scope tools."""
    workflow_scopes: tuple[frozenset[str] | None, ...] = ()
    """The intent scope of each workflow that names this tool in a step (None: every
    intent)."""
    required: tuple[str, ...] = ()
    """Required argument names, in declaration order."""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """The schema's ``default`` of each optional argument that declares one: what a
    condition reads when the call leaves the argument out (from the skill, never from
    the call)."""
    static_blocks: tuple[Reason, ...] = ()
    """Reasons that block every call of the tool (denied, effects not allowed)."""
    shell: bool = False
    """Whether the tool runs a shell command (the shell policy applies)."""
    institutional: tuple[CompiledRule, ...] = ()
    """``once_only``, ``permanent`` and call-limit rules, in declaration order."""
    asking: tuple[CompiledRule, ...] = ()
    """Approval and escalation rules, in declaration order."""
    intent_ids: frozenset[str] = frozenset()
    """The ids of the skill's intents."""
    _by_kind: dict[RuleKind, tuple[CompiledRule, ...]] = field(default_factory=dict)
    _arguments: ArgumentChecker | None = None
    _schema: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for rule in self.rules:
            self._by_kind[rule.kind] = (*self._by_kind.get(rule.kind, ()), rule)
        self.institutional = tuple(r for r in self.rules if r.kind in _INSTITUTIONAL)
        self.asking = tuple(r for r in self.rules if r.kind in _ASKING)
        self._schema = dict(self.tool.input_schema())
        required = self._schema.get("required") or []
        self.required = tuple(n for n in required if isinstance(n, str))
        self.defaults = schema_defaults(self._schema, self.required)
        self._arguments = ArgumentChecker(self.tool.name, self._schema)
        blocks = [
            Reason(
                r.code,
                r.text if r.code is ReasonCode.TOOL_UNAVAILABLE else f"{self.name} is denied",
                r.text,
                r.source,
            )
            for r in self.rules
            if r.kind is RuleKind.TOOL_DENY
        ]
        blocks += [
            Reason(r.code, r.text, r.text, r.source)
            for r in self.rules
            if r.kind is RuleKind.EFFECT
        ]
        self.static_blocks = tuple(blocks)
        self.shell = isinstance(self.tool.executor, ShellCommandExecutor)
        self.intent_ids = frozenset(i.id for i in self.skill.intents.supported)

    @property
    def name(self) -> str:
        """The tool's full name."""
        return self.tool.name

    def rules_of(self, kind: RuleKind) -> tuple[CompiledRule, ...]:
        """The tool's rules of one kind, in declaration order."""
        return self._by_kind.get(kind, ())

    def missing_required(self, args: Mapping[str, Any]) -> list[str]:
        """Required arguments not given (absent, or null), in declaration order.

        ``""`` is a value like any other: the schema (``minLength``, ``pattern``)
        decides whether it is acceptable, not this check."""
        return [name for name in self.required if args.get(name) is None]

    def argument_errors(self, args: Mapping[str, Any]) -> list[str]:
        """Every problem with the arguments given (missing ones are not problems here)."""
        assert self._arguments is not None
        return self._arguments.errors(args)

    def field_schema(self, name: str) -> dict[str, Any]:
        """The JSON Schema of one argument (for validating input given on resume)."""
        props = self._schema.get("properties")
        schema = props.get(name) if isinstance(props, dict) else None
        return dict(schema) if isinstance(schema, dict) else {}

    def shell_problems(self, args: Mapping[str, Any]) -> Iterable[str]:
        """Why a ``shell_command`` tool may not run under the merged access policy, its
        argv rendered as the executor will (:mod:`skillwire.policy.shell`)."""
        executor = self.tool.executor
        if not isinstance(executor, ShellCommandExecutor):
            return ()
        return shell_problems(self.access, executor, args)


def schema_defaults(schema: Mapping[str, Any], required: Iterable[str]) -> dict[str, Any]:
    """``{argument: default}`` for each optional property of ``schema`` that declares a
    ``default`` other than null (a required argument has none: it is asked for).

    Each default is copied (a JSON round trip), so nothing a condition or a caller does
    can change the skill's schema."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return {}
    skip = set(required)
    return {
        name: json.loads(json.dumps(prop["default"]))
        for name, prop in props.items()
        if isinstance(name, str)
        and name not in skip
        and isinstance(prop, Mapping)
        and prop.get("default") is not None
        and _plain(prop["default"])
    }


def _plain(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True
