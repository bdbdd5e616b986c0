"""The load report's word on provenance: a write fed by untrusted output, unguarded.

A skill whose tool declares ``trust: untrusted`` hands the model text written by others.
Each tool that writes (``effects`` or ``permanent``) may be given a value from that
text; :func:`provenance_findings` warns for each such tool that no rule of the skill
guards with ``untrusted()`` or ``origin()``: only the base policy's ``untrusted_writes``
switch (on unless the operator turns it off) stands between an injected value and it.
"""

from __future__ import annotations

from collections.abc import Iterable

from skillwire.conditions import PROVENANCE_FUNCTIONS
from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath
from skillwire.policy.rules import CompiledRule
from skillwire.skills.model import Skill

__all__ = ["provenance_findings", "reads_provenance"]


def reads_provenance(rule: CompiledRule) -> bool:
    """Whether the rule's condition calls ``untrusted()`` or ``origin()``."""
    calls: frozenset[str] = getattr(rule.condition, "calls", frozenset())
    return not PROVENANCE_FUNCTIONS.isdisjoint(calls)


def provenance_findings(skill: Skill, rules: Iterable[CompiledRule]) -> list[SkillIssue]:
    """A warning for each write of a skill with untrusted tools that no rule of the
    skill checks with ``untrusted()`` or ``origin()``."""
    readers = [tool.name for tool in skill.tools if tool.untrusted]
    if not readers:
        return []
    guarded = {name for rule in rules if reads_provenance(rule) for name in rule.tools}
    every = any(reads_provenance(rule) and not rule.tools for rule in rules)
    found = []
    for ti, tool in enumerate(skill.tools):
        if not tool.writes or tool.name in guarded or every:
            continue
        path: FieldPath = ("tools", ti)
        found.append(
            SkillIssue(
                Severity.WARNING,
                f"{tool.name} writes, and {', '.join(readers)} returns text written by "
                f"others (trust: untrusted), but no rule of this skill checks where "
                f"{tool.name}'s arguments came from; only the base policy's "
                "untrusted_writes switch guards it",
                skill.locate(path),
                path,
                code="untrusted-feeds-write",
                hint=f"add a rule for {tool.name} such as `when: untrusted(args.<field>)` "
                "with `action: require_approval` or `deny` (docs/conditions.md)",
            )
        )
    return found
