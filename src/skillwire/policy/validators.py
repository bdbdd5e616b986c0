"""The validator chain of spec 002, each a small class with one job.

Order: admissibility, feasibility, institutional constraints, effect safety,
consistency, arguments, required inputs, approvals (the last three live in
:mod:`skillwire.policy.validators_input`). Each validator adds findings to one
:class:`Findings`; the gate turns them into one decision (Block over NeedInput over
NeedApproval over Allow).

A condition that cannot be evaluated fails closed: a deny rule blocks, an approval
rule asks. One exception: a rule whose condition reads a required argument that is
still missing waits for the input instead of blocking (the gate asks for the input,
and checks the rule again with the complete call).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from skillwire.core.errors import ConditionEvaluationError
from skillwire.policy.arguments import same_value
from skillwire.policy.call import ApprovalGrant, GateCall
from skillwire.policy.decisions import Reason, ReasonCode
from skillwire.policy.gate_input import shown
from skillwire.policy.rules import CompiledRule, RuleKind
from skillwire.policy.tooling import ToolFacts
from skillwire.policy.workflows import IntentScope, order_applies, tool_users

__all__ = [
    "Admissibility",
    "EffectSafety",
    "Feasibility",
    "Findings",
    "Institutional",
    "ProposalConsistency",
    "Validator",
    "holds",
    "holds_or_fails_closed",
]


@dataclass(slots=True, init=False)
class Findings:
    """What the validators found about one call (empty when made: one per check)."""

    blocks: list[Reason]
    missing: list[str]
    prompts: dict[str, str]
    input_reasons: list[Reason]
    approvals: list[tuple[CompiledRule, Reason]]
    grants: list[ApprovalGrant]
    """The grants that satisfied approval rules (consumed when the call runs)."""
    waived: bool
    """An ``allow`` condition of the tool holds: its waivable rules do not apply."""

    def __init__(self) -> None:
        # written out: the generated __init__ calls a factory per field, on every check
        self.blocks = []
        self.missing = []
        self.prompts = {}
        self.input_reasons = []
        self.approvals = []
        self.grants = []
        self.waived = False

    def block(self, code: ReasonCode, message: str, rule: CompiledRule | None = None) -> None:
        """Record a blocking reason."""
        self.blocks.append(
            Reason(code, message, rule.text if rule else "", rule.source if rule else None)
        )

    def need(self, fields: list[str], reason: Reason, prompt: str = "") -> None:
        """Record fields the user must give (``prompt``: what to ask them with)."""
        for f in fields:
            if f not in self.missing:
                self.missing.append(f)
                if prompt:
                    self.prompts[f] = prompt
        self.input_reasons.append(reason)

    def skips(self, rule: CompiledRule) -> bool:
        """Whether an ``allow`` exception waives ``rule`` for this call."""
        return self.waived and rule.waivable


class Validator(Protocol):
    """One job: look at the call, add findings."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        """Add what this validator finds about ``call``."""
        ...


def holds(rule: CompiledRule, call: GateCall, facts: ToolFacts) -> bool | None:
    """True or False; None when the condition cannot be evaluated yet because it reads
    a required argument that is still missing. Unconditional rules hold.

    Raises :class:`ConditionEvaluationError` for any other evaluation failure.
    """
    condition = rule.condition
    if condition is None:
        return True
    outcomes = call.outcomes
    known = outcomes.get(condition.expression)
    if known is None:
        try:
            known = condition.evaluate(call.variables)
        except ConditionEvaluationError as exc:
            known = exc
        outcomes[condition.expression] = known
    if isinstance(known, bool):
        return known
    missing = facts.missing_required(call.args)
    if missing and ("args" in condition.names or not condition.names.isdisjoint(missing)):
        return None
    raise known


def holds_or_fails_closed(rule: CompiledRule, call: GateCall, facts: ToolFacts) -> bool | None:
    """:func:`holds`, reading an evaluation failure as "holds" (fail closed)."""
    try:
        return holds(rule, call, facts)
    except ConditionEvaluationError:
        return True


def holds_for_sure(rule: CompiledRule, call: GateCall, facts: ToolFacts) -> bool:
    """True only when the condition is known to hold (for exceptions: fail closed)."""
    try:
        return holds(rule, call, facts) is True
    except ConditionEvaluationError:
        return False


def _unevaluable(exc: Exception, outcome: str) -> str:
    return f"{exc}; {outcome} (fail closed)"


def _for_an_intent(call: GateCall, facts: ToolFacts) -> bool:
    """Whether one of the job's active intents allows the tool: the job's tools are the
    union of its intents' (an intent that lists no ``tools`` allows every tool). An
    intent the skill does not have allows nothing; with none of the skill's active,
    no intent's list applies."""
    known = False
    for intent in call.intents:
        if intent in facts.intent_ids:
            allowed = facts.intent_tools.get(intent)
            if allowed is None or facts.name in allowed:
                return True
            known = True
    return not known


class Admissibility:
    """The tool may be used at all: not ``never``, not denied, suits the intent and the
    shell policy, and no deny condition holds."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        found.blocks.extend(facts.static_blocks)
        if call.intents and not _for_an_intent(call, facts):
            named = ", ".join(f"'{i}'" for i in sorted(call.intents))
            found.block(
                ReasonCode.TOOL_NOT_FOR_INTENT,
                f"{facts.name} is not available for intent {named}",
            )
        if facts.shell:
            for problem in facts.shell_problems(call.args):
                found.block(ReasonCode.SHELL_NOT_ALLOWED, problem)
        for rule in facts.rules_of(RuleKind.ALLOW_EXCEPTION):
            if holds_for_sure(rule, call, facts):
                found.waived = True
                break
        for rule in facts.rules_of(RuleKind.THRESHOLD):
            if found.skips(rule):
                continue
            try:
                verdict = holds(rule, call, facts)
            except ConditionEvaluationError as exc:
                found.block(ReasonCode.CONDITION_UNEVALUABLE, _unevaluable(exc, "blocked"), rule)
                continue
            if verdict:
                found.block(rule.code, rule.text, rule)


class Feasibility:
    """Workflow order (by key, for steps bound by ``same``; the workflows that apply to
    the job's intents, and every workflow naming a tool none of those names) and tool
    preconditions."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        scope = call.scope
        users: IntentScope = None
        known = False  # users are found only for a scoped workflow in a scoped job
        for rule in facts.rules_of(RuleKind.WORKFLOW_ORDER):
            if rule.intents is not None and scope is not None:
                if not known:
                    users, known = tool_users(scope, facts.name, facts.intent_tools), True
                if not order_applies(rule.intents, scope, facts.workflow_scopes, users):
                    continue  # another intent's workflow, and the job's own name the tool
            if rule.fields:
                _keyed_order(rule, call, facts, found)
                continue
            missing = [t for t in rule.after if not call.succeeded(t)]
            if missing:
                found.block(rule.code, _not_after(facts.name, missing), rule)
        for rule in facts.rules_of(RuleKind.PRECONDITION):
            try:
                verdict = holds(rule, call, facts)
            except ConditionEvaluationError as exc:
                found.block(rule.code, _unevaluable(exc, "blocked"), rule)
                continue
            if verdict is False:
                found.block(rule.code, f"precondition not met: {rule.text}", rule)


def _not_after(tool: str, missing: list[str], key: str = "") -> str:
    verb = "has" if len(missing) == 1 else "have"
    return f"{tool} cannot run before {', '.join(missing)} {verb} run successfully{key}"


def _keyed_order(rule: CompiledRule, call: GateCall, facts: ToolFacts, found: Findings) -> None:
    """A step bound by ``same``: the earlier steps must have run successfully with the
    same values of the rule's arguments as this call."""
    key = [(name, call.args.get(name)) for name in rule.fields]
    absent = [name for name, value in key if value is None]
    if not absent:
        missing = [t for t in rule.after if not call.succeeded_with(t, key)]
        if missing:
            values = ", ".join(f"{name}={shown(value)}" for name, value in key)
            found.block(rule.code, _not_after(facts.name, missing, f" for {values}"), rule)
        return
    if any(name not in facts.required for name in absent):
        found.block(
            rule.code,
            f"{facts.name} needs {', '.join(absent)}: the workflow runs it after "
            f"{', '.join(rule.after)} with the same {', '.join(rule.fields)}",
            rule,
        )
        return
    # A required value is asked for first, and the order checked again with it; but a
    # step that has not run for any value cannot be followed, whatever the value.
    missing = [t for t in rule.after if not call.succeeded(t)]
    if missing:
        found.block(rule.code, _not_after(facts.name, missing), rule)


class Institutional:
    """``once_only`` per job or per key, ``permanent`` effects, call limits."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        rules = facts.institutional
        if not rules:
            return
        runs = call.runs(facts.name)
        for rule in rules:
            if rule.kind is RuleKind.MAX_CALLS:
                if rule.limit is not None and len(runs) >= rule.limit:
                    found.block(
                        rule.code,
                        f"{facts.name} already ran {len(runs)} times (limit {rule.limit})",
                        rule,
                    )
                continue
            # once_only counts successful runs; a permanent effect may have happened
            # even when the run reported a failure, so every run counts.
            counted = runs if rule.kind is RuleKind.PERMANENT else [r for r in runs if r.ok]
            if rule.per is None:
                if counted:
                    found.block(rule.code, f"{facts.name} already ran in this job", rule)
                continue
            key = call.args.get(rule.per)
            if key is None and rule.per in facts.required:
                continue  # asked for first; checked again with the value
            if any(same_value(r.args.get(rule.per), key) for r in counted):
                found.block(rule.code, f"{facts.name} already ran for {rule.per}={key!r}", rule)


class EffectSafety:
    """Declared effects within the skill's ``allowed_state_changes`` (and, when the
    proposal states the effects it will have, those too)."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        allowed = facts.skill.allowed_state_changes
        effects = call.effects
        if allowed is None or not effects:
            return  # the tool's declared effects are checked once, in static_blocks
        for effect in effects:
            if effect not in allowed:
                found.block(
                    ReasonCode.EFFECT_NOT_ALLOWED,
                    f"the proposal changes '{effect}', which the skill does not allow",
                )


class ProposalConsistency:
    """The proposal's own stated tool or arguments agree with the call it makes."""

    def check(self, call: GateCall, facts: ToolFacts, found: Findings) -> None:
        stated = call.stated_tool
        if stated is not None and stated not in (call.tool, facts.name):
            other = facts.skill.tool(stated)
            if other is None or other.name != facts.name:
                found.block(
                    ReasonCode.INCONSISTENT_PROPOSAL,
                    f"the proposal says it calls {stated} but calls {call.tool}",
                )
        if call.stated_args is not None:
            for key, value in call.stated_args.items():
                given: Any = call.args.get(key)
                if key not in call.args:
                    found.block(
                        ReasonCode.INCONSISTENT_PROPOSAL,
                        f"the proposal states {key}={value!r} but the call has no {key}",
                    )
                elif not same_value(given, value):
                    found.block(
                        ReasonCode.INCONSISTENT_PROPOSAL,
                        f"the proposal states {key}={value!r} but calls with {key}={given!r}",
                    )
