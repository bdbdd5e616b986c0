"""The pre-tool gate: one decision per proposed tool call, no model involved.

Usable on its own, to guard any agent framework's tool calls::

    from skillwire.skills import load_skill
    from skillwire.policy import Gate

    gate = Gate.for_skill(load_skill("examples/refund_support/domain.yaml"))
    decision = gate.check("process_refund", {"order_id": "ORD-12345", "amount": 750},
                          history=[...], context={"user_id": "u1"})
    if decision.kind == "need_approval":
        ...  # ask decision.approver about decision.args

Whatever a model proposes, a denied tool never gets ``Allow``, a workflow step never
runs before its predecessors, an approval-gated call never runs unapproved, and a call
missing a required input is never allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from skillwire.conditions import compile_condition
from skillwire.core.conditions import ConditionSyntaxError
from skillwire.core.issues import Severity, SkillError, SkillIssue
from skillwire.core.location import SourceLocation
from skillwire.policy.access import AccessPolicy, BasePolicy, merge_access
from skillwire.policy.call import ApprovalGrant, GateCall, ToolRun
from skillwire.policy.compiler import CompiledPolicy, CompiledRule, RuleKind, compile_policy
from skillwire.policy.decisions import (
    Allow,
    Block,
    Decision,
    NeedApproval,
    NeedInput,
    Reason,
    ReasonCode,
)
from skillwire.policy.tooling import ToolFacts
from skillwire.policy.validators import (
    Admissibility,
    EffectSafety,
    Feasibility,
    Findings,
    Institutional,
    ProposalConsistency,
    Validator,
)
from skillwire.policy.validators_input import Approvals, ArgumentValidation, RequiredInputs
from skillwire.skills.model import Skill
from skillwire.skills.semantics import RUNTIME_NAMES

__all__ = ["Gate", "PreToolGate"]

_EMPTY: Mapping[str, Any] = {}


class Gate:
    """The pre-tool gate of one skill (merged with the operator's base policy)."""

    def __init__(self, skill: Skill, policy: CompiledPolicy, access: AccessPolicy) -> None:
        self.skill = skill
        self.policy = policy
        self.access = access
        self.validators: tuple[Validator, ...] = (
            Admissibility(),
            Feasibility(),
            Institutional(),
            EffectSafety(),
            ProposalConsistency(),
            ArgumentValidation(),
            RequiredInputs(),
            Approvals(),
        )
        self._facts = {
            tool.name: ToolFacts(tool, skill, policy.for_tool(tool.name), access)
            for tool in skill.tools
        }

    @classmethod
    def for_skill(cls, skill: Skill, *, base: BasePolicy | None = None) -> Gate:
        """Compile ``skill``'s rules, merge them with ``base`` (skillwire's default when
        None), and build the gate. Raises SkillError if the base cannot apply."""
        base = base or BasePolicy()
        policy = compile_policy(skill)
        policy.rules.extend(_base_rules(skill, base))
        access = merge_access(skill, base)
        for name in sorted(access.disabled_tools):
            policy.rules.append(
                CompiledRule(
                    RuleKind.TOOL_DENY,
                    f"{name} is disabled by the tool-access plan",
                    (name,),
                    skill.locate(("access",)),
                    "toolAccessPlan",
                    ReasonCode.TOOL_DENIED,
                )
            )
        policy.by_tool = {
            t.name: tuple(r for r in policy.rules if r.applies_to(t.name)) for t in skill.tools
        }
        return cls(skill, policy, access)

    @property
    def tools(self) -> list[str]:
        """The skill's tool names."""
        return list(self._facts)

    def facts(self, tool: str) -> ToolFacts | None:
        """Per-tool facts (schema, required fields) by name or id."""
        found = self._facts.get(tool)
        if found is None:
            t = self.skill.tool(tool)
            found = self._facts.get(t.name) if t else None
        return found

    def check(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        context: Mapping[str, Any] | None = None,
        entities: Mapping[str, Any] | None = None,
        history: Sequence[ToolRun] = (),
        inputs: Mapping[str, Any] | None = None,
        approvals: Sequence[ApprovalGrant] = (),
        intent: str | None = None,
        stated_tool: str | None = None,
        stated_args: Mapping[str, Any] | None = None,
    ) -> Decision:
        """Decide about one proposed call. Never raises for a bad proposal."""
        call_args = dict(args or {})
        facts = self.facts(tool)
        if facts is None:
            known = ", ".join(self._facts) or "none"
            return Block(
                tool,
                call_args,
                (Reason(ReasonCode.UNKNOWN_TOOL, f"no tool named '{tool}' (known: {known})"),),
            )
        call = GateCall(
            tool,
            call_args,
            entities or _EMPTY,
            context or _EMPTY,
            history,
            inputs or _EMPTY,
            approvals,
            intent,
            stated_tool,
            stated_args,
        )
        found = Findings()
        for validator in self.validators:
            validator.check(call, facts, found)
        return _decide(call, facts, found)


PreToolGate = Gate
"""The name the design uses for the gate."""


def _decide(call: GateCall, facts: ToolFacts, found: Findings) -> Decision:
    if found.blocks:
        return Block(facts.name, call.args, tuple(found.blocks))
    if found.missing:
        return NeedInput(
            facts.name,
            call.args,
            tuple(found.input_reasons),
            tuple(found.missing),
            _prompt(facts, found.missing),
            {f: _field_schema(facts, f) for f in found.missing},
        )
    if found.approvals:
        first_role = found.approvals[0][0].approver or facts.skill.policy.default_approver
        reasons = tuple(
            r
            for rule, r in found.approvals
            if (rule.approver or facts.skill.policy.default_approver) == first_role
        )
        return NeedApproval(facts.name, call.args, reasons, first_role)
    return Allow(facts.name, call.args, (Reason(ReasonCode.ALLOWED, "all checks passed"),))


def _prompt(facts: ToolFacts, fields: Iterable[str]) -> str:
    hints = {r.path: r.prompt for r in facts.skill.required_inputs if r.prompt}
    hints.update(
        {
            r.path.rsplit(".", 1)[-1]: r.prompt
            for r in facts.skill.required_inputs
            if r.prompt and r.path.rsplit(".", 1)[-1] not in hints
        }
    )
    parts = []
    described = {f.name: f.description for f in facts.tool.input_fields()}
    for name in fields:
        if name in hints:
            parts.append(hints[name])
        elif described.get(name):
            parts.append(f"Please provide {name.replace('_', ' ')} ({described[name]}).")
        else:
            parts.append(f"Please provide {name.replace('_', ' ')}.")
    return " ".join(parts)


def _field_schema(facts: ToolFacts, name: str) -> dict[str, Any]:
    schema = facts.field_schema(name)
    if schema:
        return schema
    for req in facts.skill.required_inputs:
        if req.path == name:
            out: dict[str, Any] = {"type": req.type}
            if req.pattern:
                out["pattern"] = req.pattern
            if req.input_type == "choice":
                out["enum"] = list(req.options)
            return out
    return {"type": "string"}


def _base_rules(skill: Skill, base: BasePolicy) -> list[CompiledRule]:
    where = SourceLocation("base policy")
    rules = []
    names = {t.name for t in skill.tools}
    for name in base.deny_tools:
        rules.append(
            CompiledRule(
                RuleKind.TOOL_DENY,
                f"{name} is denied by the base policy",
                (name,),
                where,
                "base.deny_tools",
                ReasonCode.TOOL_DENIED,
            )
        )
    for i, approval in enumerate(base.approvals):
        tool = skill.tool(approval.tool)
        if tool is None and approval.tool not in names:
            continue
        condition = None
        if approval.when is not None:
            known = RUNTIME_NAMES | set(tool.input_names() if tool else [])
            try:
                condition = compile_condition(approval.when, known_names=known)
            except ConditionSyntaxError as exc:
                raise SkillError(
                    [
                        SkillIssue(
                            Severity.ERROR,
                            f"base policy approval {i}: {exc.message}",
                            where,
                            code="invalid-condition",
                            hint=exc.hint,
                        )
                    ]
                ) from exc
        text = approval.reason or f"{approval.tool} needs {approval.approver} approval (base)"
        rules.append(
            CompiledRule(
                RuleKind.APPROVAL,
                text,
                (tool.name if tool else approval.tool,),
                where,
                f"base.approvals[{i}]",
                ReasonCode.APPROVAL_REQUIRED,
                condition=condition,
                approver=approval.approver,
            )
        )
    for name, limit in base.max_calls.items():
        rules.append(
            CompiledRule(
                RuleKind.MAX_CALLS,
                f"{name} runs at most {limit} times (base)",
                (name,),
                where,
                "base.max_calls",
                ReasonCode.MAX_CALLS,
                limit=limit,
            )
        )
    return rules
