"""The restrictive merge of the operator's base policy with a skill, and the tool-access plan.

The base policy is the operator's file; its deny lists, approvals and roots are the
core protections. A skill can only tighten it: deny lists are unioned, allow lists
are intersected with the base, base approvals and limits always apply. A package's
``toolAccessPlan`` is applied idempotently; an ``append_unique_guardrail_list`` that
would widen an allow list is not applied, and each dropped value is reported.

With no operator file the base is skillwire's default: no shell prefix allowed, no
write root.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillwire.core.errors import SkillError
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.patterns import Pattern, PatternError, compile_pattern
from skillwire.skills import BaseApproval, BasePolicy, Skill, ToolAccessPlan, load_base_policy
from skillwire.skills.model_package import FilesystemPolicy, ShellPolicy
from skillwire.skills.package_rules import ACCESS_LIST_PATHS

__all__ = [
    "AccessPolicy",
    "AccessState",
    "BaseApproval",
    "BasePolicy",
    "apply_plan",
    "load_base_policy",
    "merge_access",
]


@dataclass
class AccessState:
    """The tool-access state a ``toolAccessPlan`` patches (``context/tool-access.json``)."""

    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    global_allowlist: list[str] = field(default_factory=list)
    lists: dict[str, list[str]] = field(default_factory=dict)

    def copy(self) -> AccessState:
        """A deep enough copy to patch."""
        return AccessState(
            {k: dict(v) for k, v in self.tools.items()},
            list(self.global_allowlist),
            {k: list(v) for k, v in self.lists.items()},
        )


def apply_plan(
    state: AccessState, plan: ToolAccessPlan, base: BasePolicy
) -> tuple[AccessState, list[str]]:
    """Apply ``plan`` to ``state``; returns the new state and the values it dropped.

    Idempotent: applying the result again changes nothing. An allow-list value the
    base does not allow is dropped (and named), never applied.
    """
    out = state.copy()
    dropped: list[str] = []
    for op in plan.operations:
        if op.op == "upsert_tool" and op.toolName:
            out.tools.setdefault(op.toolName, {}).update(op.config or {})
        elif op.op == "add_global_allowlist_tool" and op.toolName:
            if op.toolName not in out.global_allowlist:
                out.global_allowlist.append(op.toolName)
        elif op.op == "append_unique_guardrail_list" and op.path in ACCESS_LIST_PATHS:
            current = out.lists.setdefault(op.path, [])
            ceiling = _base_list(base, op.path) if ACCESS_LIST_PATHS[op.path] == "allow" else None
            for value in op.values:
                if ceiling is not None and value not in ceiling:
                    dropped.append(f"{op.path}: {value}")
                elif value not in current:
                    current.append(value)
    return out, dropped


def _base_list(base: BasePolicy, path: str) -> list[str]:
    _, section, name = path.split(".")
    part = base.shell if section == "shell" else base.filesystem
    value = getattr(part, name)
    return list(value)


@dataclass
class AccessPolicy:
    """The merged, effective access policy for one skill."""

    shell_allowed: tuple[str, ...] = ()
    shell_denied: tuple[str, ...] = ()
    shell_deny_operators: tuple[str, ...] = ()
    shell_deny_patterns: tuple[Pattern, ...] = ()
    read_roots: tuple[str, ...] = ()
    write_roots: tuple[str, ...] = ()
    disabled_tools: frozenset[str] = frozenset()
    dropped: tuple[str, ...] = ()
    """Values a package asked for that the base does not allow (for the load report)."""

    def shell_allows(self, program: str) -> bool:
        """Whether ``program`` is an allowed prefix."""
        return program in self.shell_allowed

    def shell_denies(self, program: str) -> bool:
        """Whether ``program`` is a denied prefix."""
        return program in self.shell_denied


def _intersect(skill_values: list[str] | None, base_values: list[str]) -> tuple[str, ...]:
    """The skill's values the base allows too (the base's own when the skill gives none)."""
    if not skill_values:
        return _union(base_values)
    return tuple(v for v in _union(skill_values) if v in base_values)


def _union(*lists: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for values in lists:
        out.extend(v for v in values if v not in out)
    return tuple(out)


def merge_access(skill: Skill, base: BasePolicy) -> AccessPolicy:
    """The restrictive merge of the base policy and a skill's ``guardrails.json``."""
    access = skill.access
    state = AccessState()
    dropped: list[str] = []
    if access is not None and access.toolAccessPlan is not None:
        state, dropped = apply_plan(state, access.toolAccessPlan, base)
    shell = access.shell if access and access.shell else ShellPolicy()
    fs = access.filesystem if access and access.filesystem else FilesystemPolicy()
    lists = state.lists
    allowed_shell = _intersect(
        shell.allowedPrefixes + lists.get("guardrails.shell.allowedPrefixes", []),
        base.shell.allowedPrefixes,
    )
    for name, asked, ceiling in (
        ("shell.allowedPrefixes", shell.allowedPrefixes, base.shell.allowedPrefixes),
        ("filesystem.allowedReadRoots", fs.allowedReadRoots, base.filesystem.allowedReadRoots),
        (
            "filesystem.allowedWriteRoots",
            fs.allowedWriteRoots,
            base.filesystem.allowedWriteRoots,
        ),
    ):
        dropped.extend(f"guardrails.{name}: {v}" for v in asked if v not in ceiling)
    patterns: list[Pattern] = []
    for text in _union(
        base.shell.denyPatterns, shell.denyPatterns, lists.get("guardrails.shell.denyPatterns", [])
    ):
        try:
            patterns.append(compile_pattern(text))
        except PatternError as exc:
            raise SkillError(
                [
                    SkillIssue(
                        Severity.ERROR,
                        f"deny {exc}",
                        skill.locate(("access",)),
                        code="invalid-pattern",
                        hint=exc.hint,
                    )
                ]
            ) from exc
    disabled = frozenset(name for name, cfg in state.tools.items() if cfg.get("enabled") is False)
    return AccessPolicy(
        shell_allowed=allowed_shell,
        shell_denied=_union(
            base.shell.denyPrefixes,
            shell.denyPrefixes,
            lists.get("guardrails.shell.denyPrefixes", []),
        ),
        shell_deny_operators=_union(
            base.shell.denyOperators,
            shell.denyOperators,
            lists.get("guardrails.shell.denyOperators", []),
        ),
        shell_deny_patterns=tuple(patterns),
        read_roots=_intersect(
            fs.allowedReadRoots + lists.get("guardrails.filesystem.allowedReadRoots", []),
            base.filesystem.allowedReadRoots,
        ),
        write_roots=_intersect(
            fs.allowedWriteRoots + lists.get("guardrails.filesystem.allowedWriteRoots", []),
            base.filesystem.allowedWriteRoots,
        ),
        disabled_tools=disabled,
        dropped=tuple(dict.fromkeys(dropped)),
    )
