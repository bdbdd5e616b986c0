"""The skill registry (``skill_registry.yaml``) as the reference framework writes it.

Enforced: ``skill_id``, ``eligible_agent_types``, ``preconditions`` (compiled to CEL),
``institutional_constraints.once_only`` / ``permanent`` / ``annual``,
``allowed_state_changes``, ``implementation_mapping`` (``sim.NAME``: the world hook
``NAME``) and ``default_skill``. Read and reported as not enforced: ``cost_type``,
``requires_grant``, ``conflicts_with`` (one skill per decision: nothing to conflict).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from skillwire.conditions import compile_condition
from skillwire.core.errors import ConditionSyntaxError
from skillwire.core.issues import SkillIssue
from skillwire.sim.definitions import Precondition, SkillSpec
from skillwire.sim.sources import Document

__all__ = ["read_registry"]

_SKILL_KEYS = frozenset(
    {
        "skill_id",
        "description",
        "eligible_agent_types",
        "preconditions",
        "institutional_constraints",
        "allowed_state_changes",
        "implementation_mapping",
        "conflicts_with",
    }
)
_ENFORCED_CONSTRAINTS = frozenset({"once_only", "permanent", "annual"})
_READ_CONSTRAINTS = frozenset({"cost_type", "requires_grant"})
_HOOK_PREFIX = "sim."


def read_registry(
    doc: Document, known_names: Collection[str] | None, issues: list[SkillIssue]
) -> tuple[dict[str, SkillSpec], str]:
    """Skills by id and the default skill; every problem is appended to ``issues``."""
    data = doc.data
    if not isinstance(data, dict):
        issues.append(doc.issue((), "the registry must be a mapping with a 'skills' list"))
        return {}, ""
    for key in data:
        if key not in ("skills", "default_skill"):
            issues.append(doc.issue((key,), f"unknown key '{key}' (ignored)", warning=True))
    raw = data.get("skills")
    if not isinstance(raw, list) or not raw:
        issues.append(doc.issue(("skills",), "'skills' must be a non-empty list"))
        return {}, ""
    skills: dict[str, SkillSpec] = {}
    for index, entry in enumerate(raw):
        spec = _skill(doc, index, entry, known_names, issues)
        if spec is None:
            continue
        if spec.id in skills:
            issues.append(doc.issue(("skills", index, "skill_id"), f"skill '{spec.id}' twice"))
        skills[spec.id] = spec
    default = data.get("default_skill")
    if not isinstance(default, str) or not default:
        issues.append(doc.issue(("default_skill",), "'default_skill' must name a skill"))
        default = ""
    elif skills and default not in skills:
        issues.append(
            doc.issue(
                ("default_skill",), f"default_skill '{default}' is not a skill of the registry"
            )
        )
    return skills, default


def _strings(
    doc: Document, path: tuple[Any, ...], value: Any, issues: list[SkillIssue]
) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        issues.append(doc.issue(path, "expected a list of names"))
        return []
    return list(value)


def _skill(
    doc: Document,
    index: int,
    entry: Any,
    known_names: Collection[str] | None,
    issues: list[SkillIssue],
) -> SkillSpec | None:
    path: tuple[Any, ...] = ("skills", index)
    if not isinstance(entry, dict):
        issues.append(doc.issue(path, "a skill must be a mapping"))
        return None
    skill_id = entry.get("skill_id")
    if not isinstance(skill_id, str) or not skill_id.isidentifier():
        issues.append(
            doc.issue((*path, "skill_id"), "skill_id must be a name (letters, digits, _)")
        )
        return None
    for key in entry:
        if key not in _SKILL_KEYS:
            issues.append(doc.issue((*path, key), f"unknown key '{key}' (ignored)", warning=True))
    eligible = _strings(
        doc, (*path, "eligible_agent_types"), entry.get("eligible_agent_types", ["*"]), issues
    )
    preconditions: list[Precondition] = []
    for pi, text in enumerate(
        _strings(doc, (*path, "preconditions"), entry.get("preconditions"), issues)
    ):
        where = (*path, "preconditions", pi)
        try:
            condition = compile_condition(text, known_names=known_names)
        except ConditionSyntaxError as exc:
            issues.append(doc.issue(where, f"precondition does not parse: {exc}"))
            continue
        preconditions.append(Precondition(text, condition, doc.locate(where)))
    constraints = entry.get("institutional_constraints") or {}
    flags: dict[str, bool] = {}
    if not isinstance(constraints, dict):
        issues.append(doc.issue((*path, "institutional_constraints"), "expected a mapping"))
        constraints = {}
    for key, value in constraints.items():
        where = (*path, "institutional_constraints", key)
        if key in _ENFORCED_CONSTRAINTS:
            if not isinstance(value, bool):
                issues.append(doc.issue(where, f"{key} must be true or false"))
            else:
                flags[key] = value
        elif key in _READ_CONSTRAINTS:
            issues.append(
                doc.issue(
                    where,
                    f"{key} is read, not enforced (the world hooks decide costs and grants)",
                    warning=True,
                    code="not-enforced",
                )
            )
        else:
            issues.append(
                doc.issue(where, f"unknown constraint '{key}': not enforced", warning=True)
            )
    conflicts = _strings(doc, (*path, "conflicts_with"), entry.get("conflicts_with"), issues)
    if conflicts:
        issues.append(
            doc.issue(
                (*path, "conflicts_with"),
                "conflicts_with is read, not enforced: an agent executes one skill per step",
                warning=True,
                code="not-enforced",
            )
        )
    changes = _strings(
        doc, (*path, "allowed_state_changes"), entry.get("allowed_state_changes"), issues
    )
    mapping = entry.get("implementation_mapping", f"{_HOOK_PREFIX}{skill_id}")
    hook = ""
    if (
        isinstance(mapping, str)
        and mapping.startswith(_HOOK_PREFIX)
        and mapping[len(_HOOK_PREFIX) :].isidentifier()
    ):
        hook = mapping[len(_HOOK_PREFIX) :]
    else:
        issues.append(
            doc.issue(
                (*path, "implementation_mapping"),
                "implementation_mapping must be 'sim.NAME' (NAME: a function of the world's hooks)",
            )
        )
    description = entry.get("description", "")
    return SkillSpec(
        skill_id,
        description if isinstance(description, str) else "",
        tuple(eligible),
        tuple(preconditions),
        flags.get("once_only", False),
        flags.get("permanent", False),
        flags.get("annual", False),
        frozenset(changes),
        hook,
        doc.locate(path),
    )
