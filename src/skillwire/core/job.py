"""Jobs as they are persisted: status, outcome, the ``waiting`` object, events.

The field names and values are the contract of spec 001 and DESIGN.md: ``status`` is
one of ``queued running paused completed failed escalated``; ``outcome_class`` says
why a job stopped (waiting for input or approval is never an error). Every state
change of a job is an :class:`Event`; every model call is a :class:`ModelCallRecord`.
The engine's working state is a JSON object in :attr:`JobRecord.state`, versioned by
:data:`JOB_STATE_VERSION`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "JOB_STATE_VERSION",
    "Event",
    "JobRecord",
    "JobStatus",
    "ModelCallRecord",
    "OutcomeClass",
    "Waiting",
]

JOB_STATE_VERSION = 1
"""Version of :attr:`JobRecord.state`. Bump it with a note when the shape changes;
readers refuse a newer version."""


class JobStatus(StrEnum):
    """Where a job is in its life."""

    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    ESCALATED = "escalated"


class OutcomeClass(StrEnum):
    """Why a job is where it is."""

    SUCCESS = "SUCCESS"
    USER_ACTION_REQUIRED = "USER_ACTION_REQUIRED"
    APPROVAL_REQUIRED = "APPROVAL_REQUIRED"
    OPERATOR_ACTION_REQUIRED = "OPERATOR_ACTION_REQUIRED"
    OUT_OF_DOMAIN = "OUT_OF_DOMAIN"
    ENGINE_BUDGET_EXHAUSTED = "ENGINE_BUDGET_EXHAUSTED"
    FINALIZATION_FAILED = "FINALIZATION_FAILED"
    INTERNAL_ERROR = "INTERNAL_ERROR"


@dataclass
class Waiting:
    """Spec 001's ``waiting`` object, field for field, plus what an approval needs.

    For input: ``reason_code``, ``requested_fields``, ``prompt_message``,
    ``correlation_id``, ``created_at``, ``last_prompt_at``. For an approval also
    ``tool``, ``arguments``, ``approver`` and ``reason``.
    """

    reason_code: str
    requested_fields: list[str]
    prompt_message: str
    correlation_id: str
    created_at: str
    last_prompt_at: str
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    approver: str | None = None
    reason: str | None = None
    field_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form; approval fields only when set."""
        out: dict[str, Any] = {
            "reason_code": self.reason_code,
            "requested_fields": list(self.requested_fields),
            "prompt_message": self.prompt_message,
            "correlation_id": self.correlation_id,
            "created_at": self.created_at,
            "last_prompt_at": self.last_prompt_at,
        }
        for key in ("tool", "arguments", "approver", "reason", "error"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.field_schemas:
            out["field_schemas"] = self.field_schemas
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Waiting:
        """Read the JSON form back."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


@dataclass
class Event:
    """One state change of a job. ``seq`` counts from 1 within the job."""

    job_id: str
    seq: int
    at: str
    stage: str
    kind: str
    reason_code: str = ""
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "seq": self.seq,
            "at": self.at,
            "stage": self.stage,
            "kind": self.kind,
            "reason_code": self.reason_code,
            "message": self.message,
            "data": self.data,
        }


@dataclass
class ModelCallRecord:
    """One model call: the stage, sizes, tokens when known, and latency."""

    job_id: str
    seq: int
    at: str
    stage: str
    model: str
    prompt_chars: int
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float
    ok: bool = True
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "seq": self.seq,
            "at": self.at,
            "stage": self.stage,
            "model": self.model,
            "prompt_chars": self.prompt_chars,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "latency_ms": self.latency_ms,
            "ok": self.ok,
            "error": self.error,
        }


@dataclass
class JobRecord:
    """A job as stored. ``version`` increases by one with every saved change; a save
    that expects another version is refused, so a resume is applied exactly once."""

    id: str
    skill_id: str
    status: JobStatus
    outcome_class: OutcomeClass | None
    owner: str
    created_at: str
    updated_at: str
    version: int = 0
    waiting: Waiting | None = None
    reply: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    state_version: int = JOB_STATE_VERSION
