"""Workflows become sub-goals with ``depends_on`` (spec 000 section 4.6).

The planner sees the sub-goals; the gate enforces the order of steps that name tools
in required workflows (see :class:`~skillwire.policy.compiler.RuleKind.WORKFLOW_ORDER`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from skillwire.skills.model import Skill
from skillwire.skills.model_policy import WorkflowStep
from skillwire.skills.semantics import workflow_step_tool

__all__ = ["SubGoal", "workflows_to_subgoals"]


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
