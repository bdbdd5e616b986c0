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
missing a required input is never allowed. ``docs/gate.md`` is the user's guide.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from skillwire.core.errors import SkillError
from skillwire.core.store import Claim, ClaimLedger
from skillwire.policy.access import AccessPolicy, BasePolicy, merge_access
from skillwire.policy.base_rules import UNTRUSTED_ARGUMENTS, base_rules
from skillwire.policy.call import ApprovalGrant, GateCall, ToolRun
from skillwire.policy.compiler import access_location, approver_errors, compile_policy
from skillwire.policy.crossjob import CrossJobLimits
from skillwire.policy.decisions import (
    Allow,
    Block,
    Decision,
    NeedApproval,
    NeedInput,
    Reason,
    ReasonCode,
)
from skillwire.policy.facts import SkillFacts, shown_facts
from skillwire.policy.gate_input import (
    GateInputError,
    as_mapping,
    checked_correlations,
    checked_grants,
    checked_history,
    checked_intents,
    checked_texts,
    not_plain,
    plain_state,
    shown,
)
from skillwire.policy.rules import CompiledPolicy, CompiledRule, RuleKind
from skillwire.policy.shell import confirmation_rules
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
from skillwire.policy.workflows import active_scope, step_scopes
from skillwire.skills.model import Skill

__all__ = ["UNTRUSTED_ARGUMENTS", "Gate", "PreToolGate"]

_EMPTY: Mapping[str, Any] = {}
_ALLOWED = (Reason(ReasonCode.ALLOWED, "all checks passed"),)


class Gate:
    """The pre-tool gate of one skill (merged with the operator's base policy).

    Build it with :meth:`for_skill`; it is immutable afterwards and may be shared by
    any number of jobs and threads.
    """

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
        names = _names(skill)
        intents = {
            intent.id: frozenset(names.get(n, n) for n in intent.tools)
            for intent in skill.intents.supported
            if intent.tools is not None
        }
        scopes = step_scopes(skill)
        self._facts = {
            tool.name: ToolFacts(
                tool,
                skill,
                policy.for_tool(tool.name),
                access,
                intents,
                scopes.get(tool.name, ()),
            )
            for tool in skill.tools
        }
        self._names = names
        self._intent_ids = frozenset(intent.id for intent in skill.intents.supported)
        self._count_names = {t.name: t.name for t in skill.tools}
        for t in skill.tools:  # a package tool is also counted under its local name
            self._count_names.setdefault(t.name.removeprefix(f"{skill.id}."), t.name)
        self._counted = _counted(policy.rules, self._count_names)
        self.skill_facts = SkillFacts(skill, policy.rules)
        self._tool_facts = {
            t.name: self.skill_facts.for_rules(policy.for_tool(t.name)) for t in skill.tools
        }
        self._untrusted = frozenset(t.name for t in skill.tools if t.untrusted)
        self._trusted = frozenset(t.name for t in skill.tools if not t.untrusted)
        self.cross_job = CrossJobLimits(skill.id, policy.rules)
        """The skill's limits across jobs (``once_per``, ``rate_limit``)."""

    @classmethod
    def for_skill(
        cls,
        skill: Skill,
        *,
        base: BasePolicy | None = None,
        unavailable: Mapping[str, str] | None = None,
    ) -> Gate:
        """Compile ``skill``'s rules, merge them with ``base`` (skillwire's default when
        None), and build the gate. ``unavailable`` names the tools the runtime cannot
        run, each with why (its executors say: a credential unset, an MCP server
        without the tool): each is blocked with ``TOOL_UNAVAILABLE`` and that reason.
        Raises SkillError if the base cannot apply, or if a rule asks a role every
        caller holds (``user``) to approve."""
        base = base or BasePolicy()
        policy = compile_policy(skill)
        policy.rules.extend(base_rules(skill, base))
        access = merge_access(skill, base)
        policy.rules.extend(confirmation_rules(skill))
        for name in sorted(access.disabled_tools):
            tool = skill.tool(name)
            policy.rules.append(
                CompiledRule(
                    RuleKind.TOOL_DENY,
                    f"{name} is disabled by the tool-access plan",
                    (tool.name if tool else name,),
                    access_location(skill, ("toolAccessPlan",)),
                    "toolAccessPlan",
                    ReasonCode.TOOL_DENIED,
                )
            )
        policy.rules.extend(_unavailable_rules(skill, unavailable or {}))
        policy.by_tool = {
            t.name: tuple(r for r in policy.rules if r.applies_to(t.name)) for t in skill.tools
        }
        caller_roles = approver_errors(policy.rules, skill.policy.default_approver)
        if caller_roles:  # a job's owner could approve their own calls
            raise SkillError(caller_roles)
        return cls(skill, policy, access)

    @property
    def tools(self) -> list[str]:
        """The skill's tool names."""
        return list(self._facts)

    def facts(self, tool: str) -> ToolFacts | None:
        """Per-tool facts (schema, required fields) by full name, local name or id."""
        found = self._facts.get(tool)
        if found is None:
            full = self._names.get(tool)
            found = self._facts.get(full) if full else None
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
        intents: Collection[str] = (),
        stated_tool: str | None = None,
        stated_args: Mapping[str, Any] | None = None,
        effects: Sequence[str] = (),
        correlation_ids: Sequence[str] | None = None,
        user_texts: Sequence[str] = (),
        now: datetime.datetime | None = None,
        ledger: ClaimLedger | None = None,
        user: str | None = None,
    ) -> Decision:
        """Decide about one proposed call. Never raises for a bad proposal.

        ``history`` is what already ran in this job; ``approvals`` the grants given so
        far; ``inputs`` what the user gave when asked (dotted paths allowed);
        ``stated_tool``, ``stated_args`` and ``effects`` what the proposal says about
        itself (checked for consistency and against ``allowed_state_changes``).

        ``intents`` are the job's active intents (``intent`` is one more): every active
        intent's tool list applies, and the workflows and ``required_inputs`` scoped to
        an active intent apply with the unscoped ones. With no intent, or one the skill
        does not have, every workflow and required input applies (strictest reading).

        A grant allows the call only for the same tool and canonical arguments, when it
        is not ``consumed`` and, if ``correlation_ids`` is given, when it answered one of
        those pauses (the pauses this very proposal made; pass ``()`` for a fresh
        proposal, which no earlier grant may allow). An :class:`Allow` lists the grants
        it used: the caller consumes them with the execution (see docs/gate.md).

        ``user_texts`` is what the user wrote in this job (the request and any later
        message); with ``inputs`` (their answers), ``context`` (the operator's) and the
        results in ``history`` they are the sources ``untrusted()`` and ``origin()``
        read (docs/conditions.md, "Where values came from"). ``now`` is the job's clock
        (a timezone-aware datetime), which conditions and facts read as ``now``.

        ``ledger`` answers how many claims other jobs hold on the tool's limits across
        jobs (``once_per``, ``rate_limit``: read it for the keys :meth:`claims` names);
        ``user`` is the job's owner, whom ``rate_limit`` with ``scope: user`` counts.
        Without a ledger a call of a tool with such a rule is blocked (fail closed); an
        :class:`Allow` lists the claims the call takes (see docs/gate.md).

        Raises :class:`~skillwire.policy.gate_input.GateInputError` when what the caller
        keeps about the job (``context``, ``entities``, ``history``, ``inputs``,
        ``approvals``, ``intent``, ``intents``, ``correlation_ids``, ``user_texts``) is
        not plain JSON; a
        proposal that is not is blocked.
        """
        context = as_mapping(context, "context")
        entities = as_mapping(entities, "entities")
        inputs = as_mapping(inputs, "inputs")
        history = checked_history(history)
        approvals = checked_grants(approvals)
        correlations = checked_correlations(correlation_ids)
        active = checked_intents(intent, intents)
        said = checked_texts(user_texts)
        if now is not None and (type(now) is not datetime.datetime or now.tzinfo is None):
            raise GateInputError("now", f"expected a timezone-aware datetime, got {shown(now)}")
        if user is not None and type(user) is not str:
            raise GateInputError("user", f"expected text, got {shown(user)}")
        if args is not None and type(args) is not dict and not isinstance(args, Mapping):
            plain_state(context, entities, inputs, _EMPTY)
            return _invalid(tool, {}, f"arguments must be an object, got {type(args).__name__}")
        call_args = dict(args or {})
        plain_args = plain_state(context, entities, inputs, call_args)
        if not plain_args:
            bad = [k for k in call_args if type(k) is not str]
            if bad:
                return _invalid(tool, call_args, f"argument name {shown(bad[0])} is not a string")
        facts = self.facts(tool) if type(tool) is str else None
        if facts is None:
            known = ", ".join(self._facts) or "none"
            name = tool if type(tool) is str else shown(tool)
            return Block(
                name,
                call_args,
                (Reason(ReasonCode.UNKNOWN_TOOL, f"no tool named '{name}' (known: {known})"),),
            )
        problem = _proposal_problem(plain_args, call_args, stated_tool, stated_args, effects)
        if problem:
            return _invalid(facts.name, call_args, problem)
        try:
            call = GateCall(
                tool,
                call_args,
                entities,
                context,
                self._canonical_history(history),
                inputs,
                self._canonical_grants(approvals),
                intents=active,
                scope=active_scope(self._intent_ids, active),
                stated_tool=stated_tool,
                stated_args=stated_args,
                effects=tuple(effects),
                tools=self._count_names,
                counted=self._counted,
                correlations=correlations,
                defaults=facts.defaults,
                user_texts=said,
                untrusted_tools=self._untrusted,
                trusted_tools=self._trusted,
                now=now,
                facts=self._tool_facts.get(facts.name, _EMPTY),
            )
            found = Findings()
            for validator in self.validators:
                validator.check(call, facts, found)
            claims: tuple[Claim, ...] = ()
            if self.cross_job.applies(facts.name):
                claims = self.cross_job.check(call, facts, found, ledger, user)
            decision = _decide(call, facts, found)
            if claims and isinstance(decision, Allow):
                decision = dataclasses.replace(decision, claims=claims)
            if call.fact_values is not None:
                decision = self._with_facts(decision, call.fact_values)
            return decision
        except Exception as exc:  # a defect must not let a call through: fail closed
            return Block(
                facts.name,
                call_args,
                (
                    Reason(
                        ReasonCode.GATE_ERROR,
                        f"the gate could not check this call ({type(exc).__name__}: {exc}); "
                        "blocked (fail closed)",
                    ),
                ),
            )

    def claims(
        self,
        tool: str,
        args: Mapping[str, Any] | None,
        *,
        context: Mapping[str, Any] | None = None,
        entities: Mapping[str, Any] | None = None,
        inputs: Mapping[str, Any] | None = None,
        user: str | None = None,
        now: datetime.datetime | None = None,
    ) -> tuple[Claim, ...]:
        """The cross-job claims a call of ``tool`` with ``args`` would take: what the
        caller reads from its store into the ``ledger`` it gives :meth:`check`. Empty
        for a tool without such rules and for a call whose keys cannot be told (which
        :meth:`check` then blocks or asks about)."""
        facts = self.facts(tool) if type(tool) is str else None
        if facts is None or not self.cross_job.applies(facts.name):
            return ()
        return self.cross_job.claims_for(
            facts, args, context=context, entities=entities, inputs=inputs, user=user, now=now
        )

    def _with_facts(self, decision: Decision, values: Mapping[str, Any]) -> Decision:
        """The decision with each reason from a rule that reads facts followed by the
        values of those facts (what the rule decided on)."""
        by_source = self.skill_facts.by_source
        reasons = []
        for given in decision.reasons:
            names = by_source.get(given.source) if given.source is not None else None
            if names:
                said = f"{given.message} ({shown_facts(names, values)})"
                given = dataclasses.replace(given, message=said)  # noqa: PLW2901
            reasons.append(given)
        return dataclasses.replace(decision, reasons=tuple(reasons))

    def _canonical_history(self, history: Sequence[ToolRun]) -> Sequence[ToolRun]:
        """History with every tool under its full name (a package's local names and
        tool ids resolved), so order and counts see one name per tool."""
        facts, names = self._facts, self._names
        for run in history:
            if run.tool not in facts:
                break
        else:
            return history  # every run under its full name already: the common case
        return tuple(
            run
            if run.tool in facts or run.tool not in names
            else ToolRun(names[run.tool], run.args, run.result, run.ok)
            for run in history
        )

    def _canonical_grants(self, grants: Sequence[ApprovalGrant]) -> Sequence[ApprovalGrant]:
        facts, names = self._facts, self._names
        if not grants:
            return ()
        return tuple(
            g
            if g.tool in facts or g.tool not in names
            else ApprovalGrant(names[g.tool], g.args, g.role, g.correlation_id, g.consumed)
            for g in grants
        )


PreToolGate = Gate
"""The name the design uses for the gate."""


def _names(skill: Skill) -> dict[str, str]:
    """Every name a tool may be called by (full name, id, a package's local name)."""
    names: dict[str, str] = {}
    for tool in skill.tools:
        local = tool.name.removeprefix(f"{skill.id}.")
        for alias in (local, tool.id):
            if alias and alias not in names:
                names[alias] = tool.name
    for tool in skill.tools:
        names[tool.name] = tool.name
    return names


def _unavailable_rules(skill: Skill, unavailable: Mapping[str, str]) -> list[CompiledRule]:
    """A denial per tool the runtime cannot run (``TOOL_UNAVAILABLE``), at the tool's
    line; a name the skill does not have is ignored."""
    rules = []
    for name, why in sorted(unavailable.items()):
        tool = skill.tool(name)
        if tool is None:
            continue
        index = next(i for i, t in enumerate(skill.tools) if t is tool)
        rules.append(
            CompiledRule(
                RuleKind.TOOL_DENY,
                f"{tool.name} is unavailable in this runtime: {why}",
                (tool.name,),
                skill.locate(("tools", index)),
                "executors",
                ReasonCode.TOOL_UNAVAILABLE,
            )
        )
    return rules


def _counted(rules: Sequence[CompiledRule], names: Mapping[str, str]) -> frozenset[str]:
    """The tool names that conditions reading ``counts`` mention (they get a 0 entry)."""
    texts = [r.condition.expression for r in rules if r.condition and "counts" in r.condition.names]
    return frozenset(
        alias
        for alias in names
        if any(re.search(rf"(?<![\w.-]){re.escape(alias)}(?![\w-])", t) for t in texts)
    )


def _proposal_problem(
    plain_args: bool,
    args: dict[str, Any],
    stated_tool: object,
    stated_args: object,
    effects: object,
) -> str | None:
    """What in the proposal is not plain JSON (the gate does not decide on it), or None."""
    if not plain_args:
        path, problem = not_plain(args, "args") or ("args", "not plain JSON")
        return f"{path.removeprefix('args.')}: {problem}"
    if stated_tool is not None and type(stated_tool) is not str:
        return f"stated_tool: expected text, got {type(stated_tool).__name__}"
    if stated_args is not None:
        if not isinstance(stated_args, Mapping):
            return f"stated_args: expected a JSON object, got {type(stated_args).__name__}"
        found = not_plain(dict(stated_args), "stated_args")
        if found is not None:
            return f"{found[0]}: {found[1]}"
    if effects:
        if isinstance(effects, str) or not isinstance(effects, Sequence):
            return f"effects: expected a list, got {type(effects).__name__}"
        for i, effect in enumerate(effects):
            if type(effect) is not str:
                return f"effects[{i}]: expected text, got {type(effect).__name__}"
    return None


def _invalid(tool: Any, args: dict[str, Any], message: str) -> Block:
    name = tool if type(tool) is str else shown(tool)
    return Block(name, args, (Reason(ReasonCode.ARGUMENT_INVALID, message),))


def _decide(call: GateCall, facts: ToolFacts, found: Findings) -> Decision:
    if found.blocks:
        return Block(facts.name, call.args, tuple(found.blocks))
    if found.missing:
        return NeedInput(
            facts.name,
            call.args,
            tuple(found.input_reasons),
            tuple(found.missing),
            _prompt(facts, found),
            {f: _field_schema(facts, f) for f in found.missing},
        )
    if found.approvals:
        default = facts.skill.policy.default_approver
        first_role = found.approvals[0][0].approver or default
        asking = [
            (rule, r) for rule, r in found.approvals if (rule.approver or default) == first_role
        ]
        reasons = tuple(r for _, r in asking)
        own = all(rule.self_approval for rule, _ in asking)
        return NeedApproval(facts.name, call.args, reasons, first_role, own)
    return Allow(facts.name, call.args, _ALLOWED, tuple(found.grants))


def _prompt(facts: ToolFacts, found: Findings) -> str:
    """One message asking for every missing field: the skill's own prompt text where
    ``required_inputs`` or a ``require_input`` rule gives one."""
    hints: dict[str, str] = {}
    for req in facts.skill.required_inputs:
        if req.prompt:
            hints.setdefault(req.path, req.prompt)
    for req in facts.skill.required_inputs:
        if req.prompt:
            hints.setdefault(req.path.rsplit(".", 1)[-1], req.prompt)
    described = {f.name: f.description for f in facts.tool.input_fields()}
    parts: list[str] = []
    for name in found.missing:
        text = hints.get(name) or found.prompts.get(name)
        if not text:
            what = name.replace("_", " ")
            text = (
                f"Please provide {what} ({described[name]})."
                if described.get(name)
                else f"Please provide {what}."
            )
        if text not in parts:
            parts.append(text)
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
