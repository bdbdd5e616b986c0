"""The skill's policy: guardrails, workflows, approvals, escalation.

A guardrail is a sentence (compiled where its meaning is mechanical, otherwise kept
as text for the planner) or a structured rule with exact mechanics. Conditions are
strings here; the loader compiles them and keeps the compiled form beside the model.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from skillwire.skills._base import SkillPart
from skillwire.skills.model_tools import PolicyCondition, SelfApproval

__all__ = [
    "Approval",
    "Escalation",
    "GuardrailRule",
    "Guardrails",
    "Policy",
    "PolicyAccess",
    "StructuredRule",
    "Workflow",
    "WorkflowStep",
]


class StructuredRule(SkillPart):
    """A guardrail with exact mechanics, for authors who do not want a sentence parsed.

    Example: ``{rule: "Refunds above the order total need a supervisor",
    tool: process_refund, when: "amount > order_total", action: require_approval,
    approver: supervisor}``.
    """

    rule: str = Field(min_length=1)
    """The rule in words; quoted in decisions and given to the finalization gate."""
    tool: str | None = None
    """The tool the rule applies to; without one, to the tools whose inputs define
    every argument the condition reads."""
    when: str | None = None
    """When the rule applies; without one, always."""
    action: Literal["block", "require_approval", "require_input"] = "block"
    """What happens when the rule applies."""
    approver: str | None = None
    """The approving role, for ``require_approval``."""
    self_approval: SelfApproval | None = None
    """For ``require_approval``: ``allowed`` lets the job's owner approve their own call
    when they hold the approver role; by default (``refused``) the approval must come
    from someone else."""
    fields: list[str] = Field(default_factory=list)
    """The inputs to ask for, for ``require_input``."""
    message: str = ""
    """The prompt or reason shown to the user."""


GuardrailRule = str | StructuredRule
"""A guardrail: a sentence, or a structured rule."""


class Guardrails(SkillPart):
    """Rules the agent must follow. Sentences that have a mechanical meaning compile."""

    never: list[GuardrailRule] = Field(default_factory=list)
    """Things the agent must never do."""
    always: list[GuardrailRule] = Field(default_factory=list)
    """Things the agent must always do."""


_ArgumentName = Annotated[str, Field(min_length=1)]
"""The name of a tool argument."""

_IntentId = Annotated[str, Field(min_length=1)]
"""The id of one of the skill's intents."""


def _names(same: str | list[str] | None) -> tuple[str, ...]:
    if same is None:
        return ()
    return (same,) if isinstance(same, str) else tuple(dict.fromkeys(same))


class WorkflowStep(SkillPart):
    """A workflow step written as an object instead of a plain name."""

    id: str | None = None
    """The step's name."""
    tool: str | None = None
    """The tool the step calls; a step that names a tool is ordered mechanically."""
    description: str = ""
    """What the step does."""
    same: _ArgumentName | list[_ArgumentName] | None = None
    """Replaces the workflow's ``same`` for this step: the arguments (one name or a list)
    by which this step's call follows the earlier steps; ``[]`` leaves it unbound."""


class Workflow(SkillPart):
    """An ordered procedure. Steps that name tools are enforced in order when required."""

    name: str = ""
    """The workflow's name."""
    id: str | None = None
    """An identifier (authoring tools)."""
    description: str = ""
    """What the workflow achieves."""
    trigger: Any = None
    """When the workflow starts, as authoring tools write it (informational)."""
    steps: list[str | WorkflowStep] = Field(default_factory=list)
    """The steps, in order: tool names, or conversational steps for the planner."""
    intents: list[_IntentId] | None = Field(default=None, min_length=1)
    """The intents (by id) this workflow applies to, with every intent whose
    ``maps_to_workflow`` names it. A workflow that no intent maps to and that names no
    intents applies to every intent."""
    required: bool = False
    """When true, a step's tool cannot run before the earlier steps' tools have run."""
    same: _ArgumentName | list[_ArgumentName] | None = None
    """Binds the steps by these arguments (one name, e.g. ``order_id``, or a list): a
    step's call follows an earlier step only through a successful run of that step's
    tool made with the same values, so verifying order A does not let order B be
    refunded. Every tool step must take these arguments (a step may give its own
    ``same``)."""
    on_deviation: Any = None
    """What to do on deviation, as authoring tools write it (not enforced)."""

    def key(self) -> str:
        """The name a job uses for this workflow: ``name``, else ``id``."""
        return self.name or self.id or "workflow"

    def keys(self, step: str | WorkflowStep | None = None) -> tuple[str, ...]:
        """The arguments that bind ``step`` to the earlier steps (its own ``same``, else
        the workflow's); without a step, the workflow's."""
        if isinstance(step, WorkflowStep) and step.same is not None:
            return _names(step.same)
        return _names(self.same)


class Approval(SkillPart):
    """A rule that pauses a tool call until the named role approves it."""

    tool_id: str = Field(min_length=1)
    """The tool, by ``name`` or by ``id``."""
    id: str | None = None
    """An identifier (authoring tools)."""
    when: str | None = None
    """When approval is needed; without ``when`` or ``conditions``, always."""
    conditions: list[str | PolicyCondition] = Field(default_factory=list)
    """Alternative to ``when``: approval is needed when any of these holds."""
    action: Literal["require_approval"] = "require_approval"
    """Always ``require_approval``."""
    approver: str | None = None
    """The role that may approve (default ``policy.default_approver``)."""
    self_approval: SelfApproval | None = None
    """``allowed`` lets the job's owner approve their own call when they hold the
    approver role; by default (``refused``) the approval must come from someone else.
    A condition in ``conditions[]`` may say its own."""
    reason: str = ""
    """Why approval is needed, shown to the approver."""


class Escalation(SkillPart):
    """Hand-off to a human role."""

    enabled: bool = False
    """Whether escalation is used."""
    conditions: list[str | PolicyCondition] = Field(default_factory=list)
    """Conditions under which a tool call escalates to ``target``."""
    target: str | None = None
    """The role that receives escalations."""


class PolicyAccess(SkillPart):
    """Who may use the skill (read, reported as not enforced)."""

    requires_roles: list[str] = Field(default_factory=list)
    """Roles a caller must have."""


class Policy(SkillPart):
    """Guardrails, workflows, approvals and escalation."""

    guardrails: Guardrails = Field(default_factory=Guardrails)
    """Rules in words or structured form."""
    workflows: list[Workflow] = Field(default_factory=list)
    """Ordered procedures; each becomes sub-goals with ``depends_on``."""
    approvals: list[Approval] = Field(default_factory=list)
    """Approval rules."""
    default_approver: str = "supervisor"
    """The approving role when a rule names none."""
    escalation: Escalation | None = None
    """Hand-off settings."""
    access: PolicyAccess | None = None
    """Who may use the skill (not enforced)."""
