"""What the gate decides about one proposed tool call.

One decision per proposal: :class:`Allow`, :class:`Block`, :class:`NeedInput` or
:class:`NeedApproval`. Each carries :class:`Reason` values: a reason code, the rule
as its author wrote it, and where it was written. Precedence is
Block > NeedInput > NeedApproval > Allow; every blocking reason is reported.
A pause is a type, not a string: the engine turns ``NeedInput`` and ``NeedApproval``
into a paused job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from skillwire.core.location import SourceLocation
from skillwire.core.store import Claim
from skillwire.policy.call import ApprovalGrant

__all__ = [
    "Allow",
    "Block",
    "Decision",
    "NeedApproval",
    "NeedInput",
    "Reason",
    "ReasonCode",
]


class ReasonCode(StrEnum):
    """Why the gate decided what it did. Stable: persisted in events and shown in UIs."""

    ALLOWED = "ALLOWED"
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    TOOL_NEVER_ALLOWED = "TOOL_NEVER_ALLOWED"
    TOOL_DENIED = "TOOL_DENIED"
    TOOL_NOT_FOR_INTENT = "TOOL_NOT_FOR_INTENT"
    TOOL_UNAVAILABLE = "TOOL_UNAVAILABLE"
    GUARDRAIL_BLOCKED = "GUARDRAIL_BLOCKED"
    CONDITION_UNEVALUABLE = "CONDITION_UNEVALUABLE"
    WORKFLOW_ORDER = "WORKFLOW_ORDER"
    PRECONDITION_FAILED = "PRECONDITION_FAILED"
    ONCE_ONLY = "ONCE_ONLY"
    PERMANENT_EFFECT = "PERMANENT_EFFECT"
    MAX_CALLS = "MAX_CALLS"
    ONCE_PER = "ONCE_PER"
    RATE_LIMITED = "RATE_LIMITED"
    EFFECT_NOT_ALLOWED = "EFFECT_NOT_ALLOWED"
    INCONSISTENT_PROPOSAL = "INCONSISTENT_PROPOSAL"
    ARGUMENT_INVALID = "ARGUMENT_INVALID"
    SHELL_NOT_ALLOWED = "SHELL_NOT_ALLOWED"
    MISSING_REQUIRED_INPUT = "MISSING_REQUIRED_INPUT"
    APPROVAL_REQUIRED = "APPROVAL_REQUIRED"
    ESCALATION_REQUIRED = "ESCALATION_REQUIRED"
    GATE_ERROR = "GATE_ERROR"


@dataclass(frozen=True, slots=True)
class Reason:
    """One reason for a decision: a code, a message, the rule's own text, its source."""

    code: ReasonCode
    message: str
    rule: str = ""
    source: SourceLocation | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for events and the API)."""
        return {
            "code": str(self.code),
            "message": self.message,
            "rule": self.rule,
            "source": str(self.source) if self.source else "",
        }


@dataclass(frozen=True, slots=True)
class Allow:
    """The call may run now. ``grants`` are the approvals it relies on (as the gate
    read them; ``correlation_id`` tells them apart): each allows one execution, so the
    caller marks them consumed when the call starts. ``claims`` are the cross-job
    claims (``once_per``, ``rate_limit``) the call takes: the caller saves them with the
    save that marks the call started, which the store refuses whole when another job
    took the last one meanwhile (docs/gate.md, "Limits across jobs")."""

    tool: str
    args: dict[str, Any]
    reasons: tuple[Reason, ...] = ()
    grants: tuple[ApprovalGrant, ...] = ()
    claims: tuple[Claim, ...] = ()
    kind: str = field(default="allow", init=False)

    @property
    def allowed(self) -> bool:
        """True."""
        return True


@dataclass(frozen=True, slots=True)
class Block:
    """The call never runs. ``reasons`` lists every blocking reason found."""

    tool: str
    args: dict[str, Any]
    reasons: tuple[Reason, ...]
    kind: str = field(default="block", init=False)

    @property
    def allowed(self) -> bool:
        """False."""
        return False


@dataclass(frozen=True, slots=True)
class NeedInput:
    """The call needs values the user must give; the job pauses and asks once for all."""

    tool: str
    args: dict[str, Any]
    reasons: tuple[Reason, ...]
    requested_fields: tuple[str, ...]
    prompt: str
    field_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    kind: str = field(default="need_input", init=False)

    @property
    def allowed(self) -> bool:
        """False."""
        return False


@dataclass(frozen=True, slots=True)
class NeedApproval:
    """The call needs the named role's approval of exactly these arguments, given by
    someone other than the job's owner unless ``self_approval`` (every rule asking
    this role says ``self_approval: allowed``)."""

    tool: str
    args: dict[str, Any]
    reasons: tuple[Reason, ...]
    approver: str
    self_approval: bool = False
    kind: str = field(default="need_approval", init=False)

    @property
    def allowed(self) -> bool:
        """False."""
        return False

    @property
    def reason_text(self) -> str:
        """The reasons in words, for the approver (a rule declared twice is said once)."""
        return "; ".join(dict.fromkeys(r.rule or r.message for r in self.reasons))


Decision = Allow | Block | NeedInput | NeedApproval
"""The gate's answer about one proposal."""
