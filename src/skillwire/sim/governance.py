"""The validator chain of spec 002 for one agent's proposal, on skillwire's gate.

Each agent type's eligible skills become the tools of a skill, its registry
preconditions the tools' preconditions, ``once_only`` and ``permanent`` the tools'
institutional rules, and the ``ERROR`` thinking and identity rules of the chosen
governance profile ``deny`` conditions: :class:`~skillwire.policy.Gate` checks them
(feasibility, institutional, consistency), exactly as it checks a job's tool calls.
What only an agent-based simulation has is checked here, around the gate:
admissibility against the registry (the skill exists, the agent type may use it), an
agent that executed a ``permanent`` skill never deciding again, ``annual`` skills once
per step, ``WARNING`` rules (recorded, never sent to the model). Effect safety, which needs the
execution, is the runner's (:mod:`skillwire.sim.runner`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillwire.conditions import Condition
from skillwire.core.errors import ConditionEvaluationError
from skillwire.core.location import FieldPath, SourceLocation
from skillwire.policy import Gate, ReasonCode, ToolRun
from skillwire.sim.definitions import AgentTypeSpec, Experiment, GovernanceRule, SkillSpec
from skillwire.skills import Skill

__all__ = ["AgentHistory", "Governance", "RuleResult"]

_VALIDATOR_OF_CODE = {
    ReasonCode.UNKNOWN_TOOL: "admissibility",
    ReasonCode.TOOL_DENIED: "consistency",
    ReasonCode.TOOL_NEVER_ALLOWED: "admissibility",
    ReasonCode.PRECONDITION_FAILED: "feasibility",
    ReasonCode.ONCE_ONLY: "institutional",
    ReasonCode.PERMANENT_EFFECT: "institutional",
    ReasonCode.MAX_CALLS: "institutional",
    ReasonCode.EFFECT_NOT_ALLOWED: "effect_safety",
}


@dataclass(frozen=True, slots=True)
class RuleResult:
    """One validator's verdict on one rule, as the audit records it."""

    validator: str
    rule: str
    level: str
    ok: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        """The audit's form."""
        return {
            "validator": self.validator,
            "rule": self.rule,
            "level": self.level,
            "ok": self.ok,
            "message": self.message,
        }

    @property
    def blocks(self) -> bool:
        """A failed ``ERROR`` result: the proposal is rejected."""
        return not self.ok and self.level == "ERROR"


@dataclass(frozen=True, slots=True)
class AgentHistory:
    """What an agent executed so far: ``(step, skill)`` in order."""

    runs: tuple[tuple[int, str], ...] = ()

    def plus(self, step: int, skill: str) -> AgentHistory:
        """This history and one more execution."""
        return AgentHistory((*self.runs, (step, skill)))


@dataclass(frozen=True, slots=True)
class _TypeGates:
    full: Gate
    """With the profile's ERROR rules (a proposal)."""
    base: Gate
    """Without them (the default skill as a fallback: there is no appraisal to check)."""
    inputs: dict[str, str]
    error_rules: dict[str, dict[str, GovernanceRule]]
    """Skill -> gate rule text -> rule."""
    warnings: dict[str, tuple[GovernanceRule, ...]]


class Governance:
    """The chain for one experiment under one governance profile (immutable, shared)."""

    def __init__(self, experiment: Experiment, profile: str) -> None:
        self.experiment = experiment
        self.profile = profile
        self.skills = experiment.skills
        self._permanent = frozenset(s.id for s in experiment.skills.values() if s.permanent)
        self._types = {
            name: self._gates(spec) for name, spec in sorted(experiment.agent_types.items())
        }

    def rules(self, agent_type: str) -> tuple[GovernanceRule, ...]:
        """The profile's thinking and identity rules for ``agent_type``."""
        return self.experiment.agent_types[agent_type].governance.get(self.profile, ())

    def _gates(self, spec: AgentTypeSpec) -> _TypeGates:
        rules = spec.governance.get(self.profile, ())
        inputs = _input_types(self.experiment, spec)
        eligible = [s for s in self.skills.values() if s.eligible_for(spec.name)]
        errors = {
            s.id: {
                _gate_text(r): r for r in rules if r.level == "ERROR" and s.id in r.blocked_skills
            }
            for s in eligible
        }
        warnings = {
            s.id: tuple(r for r in rules if r.level == "WARNING" and s.id in r.blocked_skills)
            for s in eligible
        }
        full = _gate(spec, eligible, inputs, errors)
        base = _gate(spec, eligible, inputs, {s.id: {} for s in eligible})
        return _TypeGates(full, base, inputs, errors, warnings)

    def check(
        self,
        agent_type: str,
        skill_id: str,
        state: Mapping[str, Any],
        constructs: Mapping[str, Any],
        history: AgentHistory,
        step: int,
        *,
        consistency: bool = True,
    ) -> tuple[list[RuleResult], list[RuleResult]]:
        """The results before execution, in spec 002's order, split where effect safety
        goes: ``(admissibility + feasibility + institutional, consistency)``."""
        skill = self.skills.get(skill_id)
        if skill is None:
            known = ", ".join(self.skills)
            return [
                RuleResult(
                    "admissibility",
                    "skill_exists",
                    "ERROR",
                    False,
                    f"no skill named '{skill_id}' (known: {known})",
                )
            ], []
        pre = [
            RuleResult(
                "admissibility",
                "skill_exists",
                "ERROR",
                True,
                f"{skill_id} is a skill of the registry",
            )
        ]
        if not skill.eligible_for(agent_type):
            pre.append(
                RuleResult(
                    "admissibility",
                    "eligible_agent_types",
                    "ERROR",
                    False,
                    f"agents of type '{agent_type}' may not use {skill_id}",
                )
            )
            return pre, []
        pre.append(
            RuleResult(
                "admissibility",
                "eligible_agent_types",
                "ERROR",
                True,
                f"{agent_type} may use {skill_id}",
            )
        )
        gates = self._types[agent_type]
        variables = {
            k: v for k, v in state.items() if k in gates.inputs and _fits(gates.inputs[k], v)
        }
        if consistency:
            variables.update(
                {k: v for k, v in constructs.items() if k in gates.inputs and isinstance(v, str)}
            )
        variables["agent_type"] = agent_type
        gate = gates.full if consistency else gates.base
        runs = [ToolRun(name, {}, None, True) for _, name in history.runs]
        decision = gate.check(skill_id, variables, history=runs)
        failed: dict[str, list[tuple[ReasonCode, str]]] = {}
        for reason in decision.reasons:
            if reason.code is not ReasonCode.ALLOWED:
                failed.setdefault(reason.rule, []).append((reason.code, reason.message))
        used: set[str] = set()

        def verdict(
            validator: str, rule: str, text: str, ok_message: str, fail: str = ""
        ) -> RuleResult:
            found = failed.get(text)
            if found:
                used.add(text)
                return RuleResult(
                    validator, rule, "ERROR", False, fail or "; ".join(m for _, m in found)
                )
            return RuleResult(validator, rule, "ERROR", True, ok_message)

        for pre_cond in skill.preconditions:
            pre.append(
                verdict(
                    "feasibility",
                    pre_cond.source,
                    f"{skill_id} needs {pre_cond.source}",
                    f"{pre_cond.source} holds",
                )
            )
        if self._permanent:
            retired = [(s, n) for s, n in history.runs if n in self._permanent]
            pre.append(
                RuleResult(
                    "institutional",
                    "permanent",
                    "ERROR",
                    False,
                    f"the agent executed {retired[0][1]} (permanent) in step {retired[0][0]}: "
                    "it never decides again",
                )
                if retired
                else RuleResult(
                    "institutional", "permanent", "ERROR", True, "no permanent skill executed"
                )
            )
        if skill.once_only:
            once = [s for s, n in history.runs if n == skill_id]
            pre.append(
                verdict(
                    "institutional",
                    "once_only",
                    f"{skill_id} runs once per job",
                    f"{skill_id} not executed before",
                    f"{skill_id} may be executed once, and this agent executed it in step "
                    f"{once[0] if once else '?'}",
                )
            )
        if skill.permanent:
            used.add(f"{skill_id} has permanent effects: it runs once")
        if skill.annual:
            again = any(s == step and n == skill_id for s, n in history.runs)
            pre.append(
                RuleResult(
                    "institutional",
                    "annual",
                    "ERROR",
                    not again,
                    f"{skill_id} was already executed in step {step}"
                    if again
                    else f"{skill_id} once in step {step}",
                )
            )
        post: list[RuleResult] = []
        if consistency:
            for text, rule in gates.error_rules.get(skill_id, {}).items():
                result = verdict("consistency", rule.id, text, f"{rule.id} does not apply")
                post.append(
                    RuleResult(
                        result.validator,
                        result.rule,
                        "ERROR",
                        result.ok,
                        _message(rule, state, constructs)
                        if not result.ok and failed[text][0][0] is ReasonCode.TOOL_DENIED
                        else result.message,
                    )
                )
            for rule in gates.warnings.get(skill_id, ()):
                post.append(_warning(rule, {**variables}, state, constructs))
        for text, found in failed.items():
            if text not in used:
                for code, message in found:
                    post.append(
                        RuleResult(
                            _VALIDATOR_OF_CODE.get(code, "gate"), str(code), "ERROR", False, message
                        )
                    )
        return pre, post

    def inactive(self, state: Mapping[str, Any], history: AgentHistory) -> bool:
        """Whether the agent no longer decides (a permanent skill ran, or
        ``agents.inactive_when`` holds; a condition that cannot be evaluated keeps it
        deciding, and its proposals face the chain)."""
        if any(n in self._permanent for _, n in history.runs):
            return True
        condition = self.experiment.inactive_when
        if condition is None:
            return False
        try:
            return condition.evaluate(state)
        except ConditionEvaluationError:
            return False


def _gate_text(rule: GovernanceRule) -> str:
    return f"[{rule.id}] {rule.message}"


def _message(rule: GovernanceRule, state: Mapping[str, Any], constructs: Mapping[str, Any]) -> str:
    """The rule's message with ``{context.NAME}`` filled from the proposal and state."""
    text = rule.message
    for source in (constructs, state):
        for key, value in source.items():
            marker = "{context." + key + "}"
            if marker in text:
                text = text.replace(marker, str(value))
    return text


def _warning(
    rule: GovernanceRule,
    variables: dict[str, Any],
    state: Mapping[str, Any],
    constructs: Mapping[str, Any],
) -> RuleResult:
    variables.update({k: v for k, v in constructs.items() if v is not None})
    try:
        holds = rule.condition.evaluate(variables)
    except ConditionEvaluationError as exc:
        return RuleResult("consistency", rule.id, "WARNING", False, f"cannot be evaluated: {exc}")
    return RuleResult(
        "consistency",
        rule.id,
        "WARNING",
        not holds,
        _message(rule, state, constructs) if holds else f"{rule.id} does not apply",
    )


def _fits(kind: str, value: Any) -> bool:
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str)


def _input_types(experiment: Experiment, spec: AgentTypeSpec) -> dict[str, str]:
    """Every scalar state key (typed by the first agent of the type) and construct."""
    first = next((a.state for a in experiment.agents if a.agent_type == spec.name), {})
    types: dict[str, str] = {}
    for key in experiment.state_keys:
        value = first.get(key)
        if isinstance(value, bool):
            types[key] = "boolean"
        elif isinstance(value, int | float):
            types[key] = "number"
        elif isinstance(value, str):
            types[key] = "string"
    for construct in spec.constructs:
        types.setdefault(construct.name, "string")
    types["agent_type"] = "string"
    return types


def _gate(
    spec: AgentTypeSpec,
    eligible: Sequence[SkillSpec],
    inputs: dict[str, str],
    errors: dict[str, dict[str, GovernanceRule]],
) -> Gate:
    fields = [{"name": k, "type": t} for k, t in inputs.items()]
    tools: list[dict[str, Any]] = []
    conditions: dict[FieldPath, Condition] = {}
    locations: dict[FieldPath, SourceLocation] = {}
    for ti, skill in enumerate(eligible):
        for pi, pre in enumerate(skill.preconditions):
            conditions[("tools", ti, "preconditions", pi)] = pre.condition
            locations[("tools", ti, "preconditions", pi)] = pre.location
        denies = []
        for ci, (text, rule) in enumerate(errors[skill.id].items()):
            conditions[("tools", ti, "policy", "conditions", ci, "when")] = rule.condition
            locations[("tools", ti, "policy", "conditions", ci, "when")] = rule.location
            denies.append({"when": rule.condition.source, "action": "deny", "message": text})
        tools.append(
            {
                "name": skill.id,
                "description": skill.description,
                "inputs": fields,
                "preconditions": [p.source for p in skill.preconditions],
                "permanent": skill.permanent,
                "policy": {"once_only": skill.once_only, "conditions": denies},
            }
        )
        locations[("tools", ti)] = skill.location
    definition = {
        "id": f"sim-{spec.name}",
        "problem": {"statement": f"decisions of {spec.name} agents"},
        "intents": {"supported": [{"id": "decide", "description": "choose a skill"}]},
        "tools": tools,
    }
    skill_model = Skill.model_validate(definition)
    # The conditions are already compiled (and located) in the experiment's own files.
    skill_model.attach_compiled(conditions, lambda path: locations.get(path, spec.location))
    return Gate.for_skill(skill_model)
