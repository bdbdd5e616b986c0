"""Spec 003's validation rules that a package's own files decide (rules 5 to 9).

Rules 1 (schema versions) and 4 (tool schemas) are applied where each file is read
and where tools are checked; rules 2 and 3 (duplicate skill ids and tool names) need
every skill of a load and live in :mod:`skillwire.skills.loading`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.core.patterns import PatternError, compile_pattern
from skillwire.skills.base_policy import BasePolicy
from skillwire.skills.model import Skill
from skillwire.skills.model_package import (
    CredentialsFile,
    GuardrailsFile,
    PrerequisitesFile,
    TestsFile,
)

__all__ = [
    "ACCESS_LIST_PATHS",
    "check_access_plan",
    "check_credentials",
    "check_prerequisites",
    "check_tests",
    "check_widenings",
]

Locate = Callable[[FieldPath], SourceLocation]

ACCESS_LIST_PATHS: dict[str, str] = {
    "guardrails.shell.allowedPrefixes": "allow",
    "guardrails.shell.denyPrefixes": "deny",
    "guardrails.shell.denyOperators": "deny",
    "guardrails.shell.denyPatterns": "deny",
    "guardrails.filesystem.allowedReadRoots": "allow",
    "guardrails.filesystem.allowedWriteRoots": "allow",
    "guardrails.filesystem.requireConfirmationFor": "deny",
}
"""The access-policy lists an ``append_unique_guardrail_list`` may name: ``deny`` lists
only tighten; ``allow`` lists are intersected with the base policy at merge."""

_STABLE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def _err(locate: Locate, path: FieldPath, message: str, code: str, hint: str = "") -> SkillIssue:
    return SkillIssue(Severity.ERROR, message, locate(path), path, code=code, hint=hint)


def _deny_patterns(access: GuardrailsFile, locate: Locate) -> Iterator[SkillIssue]:
    """Each ``denyPatterns`` entry is one the skill pattern engine takes."""
    sites: list[tuple[FieldPath, str]] = []
    if access.shell is not None:
        sites += [
            (("shell", "denyPatterns", i), p) for i, p in enumerate(access.shell.denyPatterns)
        ]
    for oi, op in enumerate(access.toolAccessPlan.operations if access.toolAccessPlan else []):
        if op.path == "guardrails.shell.denyPatterns":
            path: FieldPath = ("toolAccessPlan", "operations", oi, "values")
            sites += [((*path, i), v) for i, v in enumerate(op.values or [])]
    for path, text in sites:
        try:
            compile_pattern(text)
        except PatternError as exc:
            yield _err(locate, path, f"deny {exc}", "invalid-pattern", exc.hint)


def check_access_plan(skill: Skill, access: GuardrailsFile, locate: Locate) -> Iterator[SkillIssue]:
    """Rule 5: a ``toolAccessPlan`` may only add, and only within the skill's namespace.
    Deny patterns must be ones the pattern engine takes (they run on every shell call)."""
    yield from _deny_patterns(access, locate)
    own = f"{skill.id}."
    for name in access.toolPolicies:
        if skill.tool(name) is None:
            yield _err(
                locate,
                ("toolPolicies", name),
                f"toolPolicies names unknown tool '{name}'",
                "unknown-tool",
            )
    plan = access.toolAccessPlan
    if plan is None:
        return
    if not plan.idempotent:
        yield _err(
            locate,
            ("toolAccessPlan", "idempotent"),
            "toolAccessPlan must be idempotent",
            "plan-not-idempotent",
            "set idempotent: true; operations only add",
        )
    for oi, op in enumerate(plan.operations):
        p: FieldPath = ("toolAccessPlan", "operations", oi)
        if op.op in ("upsert_tool", "add_global_allowlist_tool"):
            if not op.toolName:
                yield _err(locate, (*p, "toolName"), f"{op.op} needs toolName", "plan-op-invalid")
                continue
            qualified = op.toolName if "." in op.toolName else own + op.toolName
            if not qualified.startswith(own):
                yield _err(
                    locate,
                    (*p, "toolName"),
                    f"{op.op} touches '{op.toolName}', outside "
                    f"this skill's namespace '{skill.id}': a package may only enable its "
                    "own tools",
                    "plan-removes-protection",
                )
            elif skill.tool(qualified) is None:
                yield _err(
                    locate,
                    (*p, "toolName"),
                    f"{op.op} names unknown tool '{op.toolName}'",
                    "unknown-tool",
                )
            if op.op == "upsert_tool" and op.config is not None:
                for key, value in op.config.items():
                    if key != "enabled" or not isinstance(value, bool):
                        yield _err(
                            locate,
                            (*p, "config", key),
                            f"upsert_tool config key '{key}' "
                            "is not allowed: only enabled (true/false) may be set",
                            "plan-removes-protection",
                        )
        else:
            if op.path not in ACCESS_LIST_PATHS:
                yield _err(
                    locate,
                    (*p, "path"),
                    f"unknown access-policy list '{op.path}'",
                    "plan-op-invalid",
                    "one of: " + ", ".join(ACCESS_LIST_PATHS),
                )
            if not op.values:
                yield _err(
                    locate,
                    (*p, "values"),
                    "append_unique_guardrail_list needs values[]",
                    "plan-op-invalid",
                )


_ALLOW_LISTS: dict[str, tuple[str, str, str]] = {
    "guardrails.shell.allowedPrefixes": ("shell", "allowedPrefixes", "shell prefix"),
    "guardrails.filesystem.allowedReadRoots": ("filesystem", "allowedReadRoots", "read root"),
    "guardrails.filesystem.allowedWriteRoots": ("filesystem", "allowedWriteRoots", "write root"),
}
"""Each allow list of the access policy: its section and key in ``guardrails.json`` and
in the base policy, and what one value of it is."""


def check_widenings(
    access: GuardrailsFile, base: BasePolicy, locate: Locate
) -> Iterator[SkillIssue]:
    """A warning for each allow-list value the package asks for that the restrictive
    merge drops (it is not in the base policy's list): in ``shell`` / ``filesystem`` or
    through an ``append_unique_guardrail_list``. The merge
    (:func:`skillwire.policy.merge_access`) keeps exactly the values the base lists too,
    so the report names every value that will not apply, where it was written."""
    sites: list[tuple[str, FieldPath, str]] = []
    for list_path, (section, key, _) in _ALLOW_LISTS.items():
        part = getattr(access, section)
        for i, value in enumerate(getattr(part, key) if part is not None else []):
            sites.append((list_path, (section, key, i), value))
    plan = access.toolAccessPlan
    for oi, op in enumerate(plan.operations if plan is not None else []):
        if op.op == "append_unique_guardrail_list" and op.path in _ALLOW_LISTS:
            for vi, value in enumerate(op.values):
                sites.append((op.path, ("toolAccessPlan", "operations", oi, "values", vi), value))
    for list_path, where, value in sites:
        section, key, what = _ALLOW_LISTS[list_path]
        ceiling = getattr(getattr(base, section), key)
        if value in ceiling:
            continue
        allowed = ", ".join(repr(v) for v in ceiling) or f"no {what}"
        yield SkillIssue(
            Severity.WARNING,
            f"the package asks to allow {what} {value!r} ({list_path}): not applied, the "
            f"base policy ({base.origin()}) does not allow it (it allows {allowed})",
            locate(where),
            where,
            code="widening-dropped",
            hint=f"only the operator can allow it: add {value!r} to {section}.{key} of the "
            "base policy (skillwire-base-policy/v1)",
        )


def check_credentials(skill: Skill, creds: CredentialsFile, locate: Locate) -> Iterator[SkillIssue]:
    """Rules 6 and 7: credential specs complete (the model requires the key fields),
    ids unique, bindings naming known tools and credentials."""
    ids = [c.id for c in creds.credentials]
    for ci, cid in enumerate(ids):
        if ids.index(cid) != ci:
            yield _err(
                locate,
                ("credentials", ci, "id"),
                f"duplicate credential id '{cid}'",
                "duplicate-credential",
            )
    for bi, binding in enumerate(creds.bindings):
        if skill.tool(binding.tool) is None:
            yield _err(
                locate,
                ("bindings", bi, "tool"),
                f"binding references unknown tool '{binding.tool}'",
                "unknown-tool",
            )
        if binding.credentialId not in ids:
            yield _err(
                locate,
                ("bindings", bi, "credentialId"),
                f"binding references unknown credential '{binding.credentialId}'",
                "unknown-credential",
            )


def check_prerequisites(prereqs: PrerequisitesFile, locate: Locate) -> Iterator[SkillIssue]:
    """Rule 8: every prerequisite says how to check it and how to fix it."""
    for pi, item in enumerate(prereqs.items):
        p: FieldPath = ("items", pi)
        check = item.howToCheck
        if check is None:
            yield _err(
                locate,
                (*p, "howToCheck"),
                f"prerequisite '{item.id}' has no howToCheck",
                "prerequisite-incomplete",
            )
        elif check.kind == "command" and not (check.command or "").strip():
            yield _err(
                locate,
                (*p, "howToCheck", "command"),
                f"prerequisite '{item.id}': howToCheck of kind command has no command",
                "prerequisite-incomplete",
            )
        elif check.kind == "manual" and not (check.instructions or "").strip():
            yield _err(
                locate,
                (*p, "howToCheck", "instructions"),
                f"prerequisite '{item.id}': howToCheck of kind manual has no instructions",
                "prerequisite-incomplete",
            )
        if not (item.howToFix or "").strip():
            yield _err(
                locate,
                (*p, "howToFix"),
                f"prerequisite '{item.id}' has no howToFix",
                "prerequisite-incomplete",
            )


def check_tests(
    tests: TestsFile, prereqs: PrerequisitesFile | None, locate: Locate
) -> Iterator[SkillIssue]:
    """Rule 9: every scenario has a stable, unique ``id`` and at least one ``expected``."""
    seen: set[str] = set()
    known = {i.id for i in prereqs.items} if prereqs else set()
    for si, sc in enumerate(tests.scenarios):
        p: FieldPath = ("scenarios", si)
        if not sc.id:
            yield _err(
                locate,
                p,
                "test scenario has no id",
                "scenario-incomplete",
                "give it a stable id such as 'smoke-refund'",
            )
        elif not _STABLE_ID.match(sc.id):
            yield _err(
                locate,
                (*p, "id"),
                f"scenario id '{sc.id}' is not stable: use lowercase "
                "letters, digits, '-', '_' or '.'",
                "scenario-incomplete",
            )
        elif sc.id in seen:
            yield _err(
                locate, (*p, "id"), f"duplicate scenario id '{sc.id}'", "scenario-incomplete"
            )
        if sc.id:
            seen.add(sc.id)
        if not [e for e in sc.expected if e.strip()]:
            yield _err(
                locate,
                (*p, "expected"),
                f"scenario '{sc.id or si}' has no expected assertions",
                "scenario-incomplete",
            )
        if sc.type == "command" and not sc.commands:
            yield _err(
                locate,
                (*p, "commands"),
                f"scenario '{sc.id or si}' is of type command but has no commands",
                "scenario-incomplete",
            )
        for ci, pre in enumerate(sc.preconditions):
            if prereqs is not None and pre not in known:
                yield SkillIssue(
                    Severity.WARNING,
                    f"precondition '{pre}' is not a prerequisite id",
                    locate((*p, "preconditions", ci)),
                    (*p, "preconditions", ci),
                    code="unknown-prerequisite",
                )
