"""The governance profiles of an agent type: ``thinking_rules`` and ``identity_rules``
compiled to conditions in skillwire's condition language (CEL).

``when_above: [H, VH]`` on ``construct: TP_LABEL`` becomes ``TP_LABEL in ["H", "VH"]``;
each of ``conditions: [{construct, values}]`` becomes ``CONSTRUCT in [values]``;
an identity rule's ``precondition`` is a condition over the agent's state; the parts are
joined by ``and``. A rule fails when its condition holds and the proposal chose one of
its ``blocked_skills``.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from skillwire.conditions import compile_condition
from skillwire.core.errors import ConditionSyntaxError
from skillwire.core.issues import SkillIssue
from skillwire.sim.definitions import GovernanceRule
from skillwire.sim.sources import Document

__all__ = ["read_governance"]

_LEVELS = ("ERROR", "WARNING")


def read_governance(
    doc: Document, name: str, block: Any, known: Collection[str] | None, issues: list[SkillIssue]
) -> dict[str, tuple[GovernanceRule, ...]]:
    """Every profile of agent type ``name``, its rules compiled; problems go to ``issues``."""
    out: dict[str, tuple[GovernanceRule, ...]] = {}
    if not isinstance(block, dict):
        issues.append(doc.issue((name, "governance"), "expected a mapping of profiles"))
        return out
    for profile, rules in block.items():
        if not isinstance(rules, dict):
            issues.append(
                doc.issue(
                    (name, "governance", profile), "a profile has thinking_rules and identity_rules"
                )
            )
            continue
        compiled: list[GovernanceRule] = []
        for kind in ("thinking", "identity"):
            key = f"{kind}_rules"
            for index, rule in enumerate(rules.get(key) or []):
                path = (name, "governance", profile, key, index)
                made = _rule(doc, path, kind, rule, f"{profile}.{key}[{index}]", known, issues)
                if made is not None:
                    compiled.append(made)
        for other in rules:
            if other not in ("thinking_rules", "identity_rules"):
                issues.append(
                    doc.issue(
                        (name, "governance", profile, other),
                        f"unknown key '{other}' (ignored)",
                        warning=True,
                    )
                )
        out[str(profile)] = tuple(compiled)
    return out


def _cel_list(values: list[Any]) -> str:
    return "[" + ", ".join(json.dumps(str(v)) for v in values) + "]"


def _rule(
    doc: Document,
    path: tuple[Any, ...],
    kind: str,
    rule: Any,
    default_id: str,
    known: Collection[str] | None,
    issues: list[SkillIssue],
) -> GovernanceRule | None:
    if not isinstance(rule, dict):
        issues.append(doc.issue(path, "a rule must be a mapping"))
        return None
    level = rule.get("level", "ERROR")
    if level not in _LEVELS:
        issues.append(doc.issue((*path, "level"), "level must be ERROR or WARNING"))
        return None
    blocked = rule.get("blocked_skills")
    if not isinstance(blocked, list) or not blocked or not all(isinstance(s, str) for s in blocked):
        issues.append(doc.issue((*path, "blocked_skills"), "blocked_skills must list skills"))
        return None
    parts: list[str] = []
    construct = rule.get("construct")
    if isinstance(rule.get("when_above"), list):
        if not isinstance(construct, str):
            issues.append(doc.issue((*path, "when_above"), "when_above needs a 'construct'"))
            return None
        parts.append(f"{construct} in {_cel_list(rule['when_above'])}")
    for ci, cond in enumerate(rule.get("conditions") or []):
        if (
            not isinstance(cond, dict)
            or not isinstance(cond.get("construct"), str)
            or not isinstance(cond.get("values"), list)
        ):
            issues.append(
                doc.issue((*path, "conditions", ci), "a condition is {construct, values: [...]}")
            )
            return None
        parts.append(f"{cond['construct']} in {_cel_list(cond['values'])}")
    precondition = rule.get("precondition")
    if isinstance(precondition, str) and precondition:
        parts.append(f"({precondition})")
    if not parts:
        issues.append(
            doc.issue(path, "the rule has no condition (when_above, conditions or precondition)")
        )
        return None
    source = " and ".join(parts)
    try:
        condition = compile_condition(source, known_names=known)
    except ConditionSyntaxError as exc:
        issues.append(doc.issue(path, f"the rule's condition does not compile ({source}): {exc}"))
        return None
    rule_id = str(rule["id"]) if isinstance(rule.get("id"), str) else default_id
    message = rule.get("message")
    if not isinstance(message, str) or not message:
        message = f"{rule_id}: {', '.join(blocked)} is blocked when {source}"
    return GovernanceRule(
        rule_id,
        "thinking" if kind == "thinking" else "identity",
        level,
        frozenset(blocked),
        condition,
        message,
        doc.locate(path),
    )
