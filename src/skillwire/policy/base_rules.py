"""The operator's base policy as rules of a skill: its deny list, approvals, untrusted
writes and call limits (:meth:`skillwire.policy.Gate.for_skill` adds them)."""

from __future__ import annotations

from skillwire.conditions import compile_condition
from skillwire.core.errors import ConditionSyntaxError, SkillError
from skillwire.core.issues import Severity, SkillIssue
from skillwire.policy.access import BasePolicy
from skillwire.policy.decisions import ReasonCode
from skillwire.policy.rules import CompiledRule, RuleKind
from skillwire.skills.model import Skill
from skillwire.skills.semantics import RUNTIME_NAMES

__all__ = ["UNTRUSTED_ARGUMENTS", "base_rules"]

UNTRUSTED_ARGUMENTS = "untrusted(args)"
"""The condition of the base policy's ``untrusted_writes`` approvals."""


def base_rules(skill: Skill, base: BasePolicy) -> list[CompiledRule]:
    """The base policy's deny lists, approvals and limits, as rules of this skill.

    A tool the base names by a package tool's local name or id is that tool.
    """

    def resolve(name: str) -> str:
        tool = skill.tool(name)
        return tool.name if tool else name

    rules = []
    for i, name in enumerate(base.deny_tools):
        rules.append(
            CompiledRule(
                RuleKind.TOOL_DENY,
                f"{name} is denied by the base policy",
                (resolve(name),),
                base.locate(("deny_tools", i)),
                f"base.deny_tools[{i}]",
                ReasonCode.TOOL_DENIED,
            )
        )
    for i, approval in enumerate(base.approvals):
        tool = skill.tool(approval.tool)
        if tool is None:
            continue
        where = base.locate(("approvals", i))
        condition = None
        if approval.when is not None:
            known = RUNTIME_NAMES | set(tool.input_names())
            try:
                condition = compile_condition(approval.when, known_names=known)
            except ConditionSyntaxError as exc:
                raise SkillError(
                    [
                        SkillIssue(
                            Severity.ERROR,
                            f"base policy approval {i} for {tool.name}: {exc.message}",
                            base.locate(("approvals", i, "when")),
                            code="invalid-condition",
                            hint=exc.hint,
                        )
                    ]
                ) from exc
        text = approval.reason or (
            f"{approval.tool} needs {approval.approver} approval (base policy)"
            + (f" when {approval.when}" if approval.when else "")
        )
        rules.append(
            CompiledRule(
                RuleKind.APPROVAL,
                text,
                (tool.name,),
                where,
                f"base.approvals[{i}]",
                ReasonCode.APPROVAL_REQUIRED,
                condition=condition,
                approver=approval.approver,
                self_approval=approval.self_approval == "allowed",
            )
        )
    rules.extend(_untrusted_write_rules(skill, base))
    for name, limit in base.max_calls.items():
        rules.append(
            CompiledRule(
                RuleKind.MAX_CALLS,
                f"{name} runs at most {limit} times per job (base policy)",
                (resolve(name),),
                base.locate(("max_calls", name)),
                f"base.max_calls.{name}",
                ReasonCode.MAX_CALLS,
                limit=limit,
            )
        )
    return rules


def _untrusted_write_rules(skill: Skill, base: BasePolicy) -> list[CompiledRule]:
    """``untrusted_writes: approve``: each write of a skill that reads untrusted output
    asks approval when one of its arguments is ``untrusted()``."""
    guard = base.untrusted_writes
    if guard.action != "approve" or not any(tool.untrusted for tool in skill.tools):
        return []
    condition = compile_condition(UNTRUSTED_ARGUMENTS, known_names=RUNTIME_NAMES)
    return [
        CompiledRule(
            RuleKind.APPROVAL,
            f"{tool.name} writes with a value found only in untrusted tool output; "
            f"{guard.approver} approval needed (base policy)",
            (tool.name,),
            base.locate(("untrusted_writes",)),
            "base.untrusted_writes",
            ReasonCode.APPROVAL_REQUIRED,
            condition=condition,
            approver=guard.approver,
            shows_origin=True,
        )
        for tool in skill.tools
        if tool.writes
    ]
