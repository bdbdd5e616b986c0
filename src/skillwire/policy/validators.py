"""The validator chain of spec 002, each a small class with one job.

Order: admissibility, feasibility, institutional constraints, effect safety,
consistency, arguments, required inputs, approvals. Each validator adds findings to
one :class:`Findings`; the gate turns them into one decision (Block over NeedInput
over NeedApproval over Allow). A condition that cannot be evaluated fails closed,
except that a deny rule reading a required argument that is still missing waits for
the input instead of blocking (the rule is checked again with the complete call).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from skillwire.core.conditions import ConditionEvaluationError
from skillwire.policy.call import GateCall
from skillwire.policy.compiler import CompiledRule, RuleKind
from skillwire.policy.decisions import Reason, ReasonCode
from skillwire.policy.tooling import ToolFacts

__all__ = [
    "Admissibility",
    "EffectSafety",
    "Feasibility",
    "Findings",
    "Institutional",
    "ProposalConsistency",
    "Validator",
    "holds",
]


@dataclass
class Findings:
    """What the validators found about one call."""

    blocks: list[Reason] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    input_reasons: list[Reason] = field(default_factory=list)
    approvals: list[tuple[CompiledRule, Reason]] = field(default_factory=list)
    waived: set[int] = field(default_factory=set)

    def block(self, code: ReasonCode, message: str, rule: CompiledRule | None = None) -> None:
        """Record a blocking reason."""
        self.blocks.append(
            Reason(code, message, rule.text if rule else "", rule.source if rule else None)
        )

    def need(self, fields: list[str], reason: Reason) -> None:
        """Record fields the user must give."""
        for f in fields:
            if f not in self.missing:
                self.missing.append(f)
        self.input_reasons.append(reason)


class Validator(Protocol):
    """One job: look at the call, add findings."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        """Add what this validator finds about ``call``."""
        ...


def holds(rule: CompiledRule, call: GateCall, facts: ToolFacts) -> bool | None:
    """True or False; None when the condition cannot be evaluated yet because it reads
    a required argument that is still missing. Unconditional rules hold."""
    if rule.condition is None:
        return True
    try:
        return rule.condition.evaluate(call.variables)
    except ConditionEvaluationError:
        if rule.condition.names & facts.missing_required(call.args):
            return None
        raise


def _fails_closed(rule: CompiledRule, call: GateCall, facts: ToolFacts) -> bool | None:
    """``holds`` with evaluation errors read as "holds" (fail closed)."""
    try:
        return holds(rule, call, facts)
    except ConditionEvaluationError:
        return True


class Admissibility:
    """The tool exists, is not ``never``, is not denied, suits the intent and the shell."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        for rule in facts.rules_of(RuleKind.TOOL_DENY):
            found.block(rule.code, f"{call.tool} is denied", rule)
        allowed = facts.intent_tools(call.intent)
        if allowed is not None and facts.name not in allowed:
            found.block(
                ReasonCode.TOOL_NOT_FOR_INTENT,
                f"{call.tool} is not available for intent '{call.intent}'",
            )
        for problem in facts.shell_problems(call.args):
            found.block(ReasonCode.SHELL_NOT_ALLOWED, problem)
        for rule in facts.rules_of(RuleKind.ALLOW_EXCEPTION):
            if holds_quietly(rule, call, facts):
                found.waived.add(id(rule))
        for rule in facts.rules_of(RuleKind.THRESHOLD):
            if facts.waived_by_exception(rule, found.waived):
                continue
            try:
                verdict = holds(rule, call, facts)
            except ConditionEvaluationError as exc:
                found.block(
                    ReasonCode.CONDITION_UNEVALUABLE,
                    f"cannot evaluate "
                    f"'{rule.condition.source if rule.condition else ''}': {exc}; "
                    "blocked (fail closed)",
                    rule,
                )
                continue
            if verdict:
                found.block(rule.code, rule.text, rule)


def holds_quietly(rule: CompiledRule, call: GateCall, facts: ToolFacts) -> bool:
    """True only when the condition is known to hold (for exceptions: fail closed)."""
    try:
        return holds(rule, call, facts) is True
    except ConditionEvaluationError:
        return False


class Feasibility:
    """Workflow order and tool preconditions."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        for rule in facts.rules_of(RuleKind.WORKFLOW_ORDER):
            missing = [t for t in rule.after if not call.succeeded(t)]
            if missing:
                found.block(
                    rule.code,
                    f"{call.tool} cannot run before {', '.join(missing)} has run successfully",
                    rule,
                )
        for rule in facts.rules_of(RuleKind.PRECONDITION):
            try:
                verdict = holds(rule, call, facts)
            except ConditionEvaluationError as exc:
                found.block(rule.code, f"precondition cannot be evaluated: {exc}", rule)
                continue
            if verdict is False:
                found.block(rule.code, f"precondition not met: {rule.text}", rule)


class Institutional:
    """``once_only`` per job or per key, ``permanent`` effects, call limits."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        runs = None
        for rule in facts.rules_of(RuleKind.ONCE_ONLY, RuleKind.PERMANENT, RuleKind.MAX_CALLS):
            if runs is None:
                runs = call.succeeded(facts.name)
            if rule.kind is RuleKind.MAX_CALLS:
                if rule.limit is not None and len(runs) >= rule.limit:
                    found.block(
                        rule.code,
                        f"{call.tool} already ran {len(runs)} times (limit {rule.limit})",
                        rule,
                    )
                continue
            if rule.per is None:
                if runs:
                    found.block(rule.code, f"{call.tool} already ran in this job", rule)
            elif rule.per in call.args and any(
                r.args.get(rule.per) == call.args[rule.per] for r in runs
            ):
                found.block(
                    rule.code,
                    f"{call.tool} already ran for {rule.per}={call.args[rule.per]!r}",
                    rule,
                )


class EffectSafety:
    """Declared effects within the skill's ``allowed_state_changes``."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        for rule in facts.rules_of(RuleKind.EFFECT):
            found.block(rule.code, rule.text, rule)


class ProposalConsistency:
    """The proposal's own stated tool or arguments agree with the call it makes."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        if call.stated_tool is not None and call.stated_tool not in (call.tool, facts.name):
            found.block(
                ReasonCode.INCONSISTENT_PROPOSAL,
                f"the proposal says it calls {call.stated_tool} but calls {call.tool}",
            )
        if call.stated_args is not None:
            for key, value in call.stated_args.items():
                if key in call.args and call.args[key] != value:
                    found.block(
                        ReasonCode.INCONSISTENT_PROPOSAL,
                        f"the proposal states "
                        f"{key}={value!r} but calls with {key}={call.args[key]!r}",
                    )
