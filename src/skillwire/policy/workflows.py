"""Workflows become sub-goals with ``depends_on`` (spec 000 section 4.6), and the
intents each workflow and each required input applies to.

The planner sees the sub-goals; the gate enforces the order of steps that name tools
in required workflows (see :class:`~skillwire.policy.compiler.RuleKind.WORKFLOW_ORDER`).

Scope: a workflow applies to the intents whose ``maps_to_workflow`` names it and to the
intents it names in ``intents``; one that no intent maps to and that names none applies
to every intent. A ``required_inputs`` entry applies to its ``intents``, or to every
intent. The job's active intents decide (a set: a job may have several); when none is
known, or one is not an intent of the skill, every workflow and every required input
applies (the strictest reading, never none).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from skillwire.core.issues import Severity, SkillIssue
from skillwire.core.location import FieldPath
from skillwire.skills.model import RequiredInput, Skill
from skillwire.skills.model_policy import Workflow, WorkflowStep
from skillwire.skills.semantics import workflow_step_tool

__all__ = [
    "IntentScope",
    "SubGoal",
    "active_scope",
    "applies",
    "input_scope",
    "order_applies",
    "scope_findings",
    "step_scopes",
    "tool_users",
    "workflow_scope",
    "workflow_scopes",
    "workflows_to_subgoals",
]

IntentScope = frozenset[str] | None
"""The intents a workflow, a required input or a rule applies to; None: every intent."""


def workflow_scope(skill: Skill, workflow: Workflow) -> IntentScope:
    """The intents ``workflow`` applies to: those whose ``maps_to_workflow`` names it (by
    ``name`` or ``id``) and those it names in ``intents``; None (every intent) when there
    are none."""
    names = {workflow.key(), workflow.name, workflow.id} - {None, ""}
    scope = {
        intent.id
        for intent in skill.intents.supported
        if intent.maps_to_workflow is not None and intent.maps_to_workflow in names
    }
    scope.update(workflow.intents or ())
    return frozenset(scope) if scope else None


def workflow_scopes(skill: Skill) -> dict[str, IntentScope]:
    """Each workflow's scope by the name a job uses for it (:meth:`Workflow.key`); two
    workflows of one name share the wider scope."""
    scopes: dict[str, IntentScope] = {}
    for wf in skill.policy.workflows:
        name, scope = wf.key(), workflow_scope(skill, wf)
        if name not in scopes:
            scopes[name] = scope
        else:
            known = scopes[name]
            scopes[name] = None if known is None or scope is None else known | scope
    return scopes


def scope_findings(skill: Skill) -> list[SkillIssue]:
    """The load report's word on each workflow (``check -v``): the intents it applies to
    and why, or that it applies to every intent."""
    found = []
    for wi, wf in enumerate(skill.policy.workflows):
        scope = workflow_scope(skill, wf)
        if scope is None:
            text = "applies to every intent (no intent maps to it and it names no intents)"
        else:
            mapped = [i for i in sorted(scope) if i not in (wf.intents or ())]
            why = [f"maps_to_workflow of {', '.join(mapped)}"] if mapped else []
            why += [f"its intents: [{', '.join(wf.intents)}]"] if wf.intents else []
            text = f"applies to intents {', '.join(sorted(scope))} only ({'; '.join(why)})"
        path: FieldPath = ("policy", "workflows", wi)
        found.append(
            SkillIssue(
                Severity.INFO,
                f"workflow '{wf.key()}' {text}",
                skill.locate(path),
                path,
                code="workflow-scope",
            )
        )
    return found


def step_scopes(skill: Skill) -> dict[str, tuple[IntentScope, ...]]:
    """For each tool that a workflow step names (by full name), the scopes of the
    workflows that name it."""
    found: dict[str, list[IntentScope]] = {}
    for wf in skill.policy.workflows:
        scope = workflow_scope(skill, wf)
        for step in wf.steps:
            tool = workflow_step_tool(skill, step)
            if tool is not None:
                found.setdefault(tool.name, []).append(scope)
    return {name: tuple(scopes) for name, scopes in found.items()}


def input_scope(required: RequiredInput) -> IntentScope:
    """The intents a ``required_inputs`` entry is asked for; None: every intent."""
    return frozenset(required.intents) if required.intents else None


def active_scope(known: frozenset[str], given: Iterable[str]) -> IntentScope:
    """The active intents that decide which scoped workflows and inputs apply: ``given``,
    when it is not empty and every one is in ``known`` (the skill's intent ids);
    otherwise None, and everything applies (an unknown or missing intent gets the
    strictest reading)."""
    active = frozenset(given)
    if not active or not active <= known:
        return None
    return active


def order_applies(
    rule_scope: IntentScope,
    active: IntentScope,
    tool_scopes: Iterable[IntentScope],
    users: IntentScope,
) -> bool:
    """Whether a workflow's order rule (its workflow scoped to ``rule_scope``) holds a
    call of a tool that the workflows scoped to ``tool_scopes`` name: when the workflow
    applies to the job, and also when no workflow that applies names the tool (a scope
    never leaves a tool unguarded: a password-reset job calling the admin workflow's
    ``grant_admin`` is held to that workflow's order).

    ``users`` are the active intents that may use the tool (:func:`tool_users`): only
    their workflows make the tool the job's own. A workflow of an intent that may not
    use it names it in vain: with another intent that may, the call would escape the
    orders every job of one of those intents is held to."""
    return applies(rule_scope, active) or not any(applies(s, users) for s in tool_scopes)


def tool_users(
    active: IntentScope, tool: str, intent_tools: Mapping[str, frozenset[str]]
) -> IntentScope:
    """The intents among ``active`` that may use ``tool`` (one that lists no ``tools``
    may use any); None when ``active`` is None (every workflow applies)."""
    if active is None:
        return None
    return frozenset(i for i in active if (listed := intent_tools.get(i)) is None or tool in listed)


def applies(scope: IntentScope, active: IntentScope) -> bool:
    """Whether something scoped to ``scope`` applies to a job whose active intents are
    ``active`` (:func:`active_scope`): unscoped, or no intent known, or one in common."""
    return scope is None or active is None or not scope.isdisjoint(active)


@dataclass(frozen=True, slots=True)
class SubGoal:
    """One step of a workflow, as the planner sees it."""

    id: str
    intent: str
    depends_on: tuple[str, ...]
    from_workflow: str
    workflow_required: bool
    tool: str | None
    status: Literal["todo", "done"] = "todo"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with the spec's field names."""
        return {
            "id": self.id,
            "intent": self.intent,
            "depends_on": list(self.depends_on),
            "status": self.status,
            "from_workflow": self.from_workflow,
            "workflow_required": self.workflow_required,
            "tool": self.tool,
        }


def workflows_to_subgoals(skill: Skill) -> list[SubGoal]:
    """``sg_<workflow>_<n>`` for every step, each depending on the one before."""
    goals: list[SubGoal] = []
    for wf in skill.policy.workflows:
        name = wf.key()
        for i, step in enumerate(wf.steps):
            tool = workflow_step_tool(skill, step)
            label = step if isinstance(step, str) else (step.id or step.tool or step.description)
            goals.append(
                SubGoal(
                    id=f"sg_{name}_{i + 1}",
                    intent=label
                    if not isinstance(step, WorkflowStep) or not step.description
                    else f"{label}: {step.description}",
                    depends_on=(f"sg_{name}_{i}",) if i > 0 else (),
                    from_workflow=name,
                    workflow_required=wf.required,
                    tool=tool.name if tool else None,
                )
            )
    return goals
