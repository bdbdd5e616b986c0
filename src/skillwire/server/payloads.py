"""The API's request and response bodies, as published in the OpenAPI document.

A job is :class:`JobOut`: the same fields, with the same values, as
``skillwire show JOB --json`` (it is built from ``JobView.to_dict()``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ApprovalIn",
    "ErrorBody",
    "ErrorOut",
    "EventOut",
    "InboxItem",
    "InboxOut",
    "InputIn",
    "JobIn",
    "JobListOut",
    "JobOut",
    "JobSummary",
    "MeOut",
    "ModelCallOut",
    "ReloadOut",
    "SkillIntentOut",
    "SkillListOut",
    "SkillOut",
    "WaitingOut",
]

_FORBID = ConfigDict(extra="forbid")


class ErrorBody(BaseModel):
    """What went wrong."""

    code: str
    """A stable, machine-readable code (``not_found``, ``forbidden``, ``conflict`` ...)."""
    message: str
    """A sentence for a person."""
    details: list[dict[str, Any]] | None = None
    """Per-field problems of a malformed request, or a skill's load issues."""


class ErrorOut(BaseModel):
    """Every error response: ``{"error": {"code": ..., "message": ...}}``."""

    error: ErrorBody


class JobIn(BaseModel):
    """Start a job."""

    model_config = _FORBID

    skill_id: str = Field(min_length=1, max_length=200, examples=["refund-support"])
    """The skill to run (``GET /api/skills``)."""
    message: str = Field(min_length=1, max_length=20_000, examples=["I want a refund of $750"])
    """The user's message."""
    context: dict[str, Any] | None = None
    """Facts rules may read (admin only; ``user_id`` is always the caller)."""


class InputIn(BaseModel):
    """Answer the input a paused job waits for (``waiting.requested_fields``)."""

    model_config = _FORBID

    input: dict[str, Any] = Field(examples=[{"order_id": "ORD-12345"}])
    """One value per requested field."""
    correlation_id: str | None = Field(default=None, max_length=200)
    """``waiting.correlation_id``: when given, a job waiting under another one is a 409."""


class ApprovalIn(BaseModel):
    """Approve or deny the call a paused job waits on."""

    model_config = _FORBID

    decision: Literal["approve", "deny"]
    """``approve`` lets exactly the waiting call (tool and arguments) run, once; ``deny``
    does not."""
    correlation_id: str = Field(min_length=1, max_length=200)
    """``waiting.correlation_id`` of the pause decided (required): a job waiting under
    another one is a 409."""


class RetryIn(BaseModel):
    """Retry a job a model outage paused: the stage that failed runs again."""

    model_config = _FORBID

    correlation_id: str | None = Field(default=None, max_length=200)
    """``waiting.correlation_id``: when given, a job waiting under another one is a 409."""


class WaitingOut(BaseModel):
    """Spec 001's ``waiting`` object; ``tool``, ``arguments``, ``approver`` and ``reason``
    for an approval; ``model``, ``stage`` and ``reason`` (the failure) for a model
    outage."""

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
    self_approval: bool | None = None
    error: str | None = None
    field_schemas: dict[str, dict[str, Any]] | None = None
    model: str | None = None
    stage: str | None = None


class EventOut(BaseModel):
    """One entry of a job's timeline."""

    seq: int
    at: str
    stage: str
    kind: str
    reason_code: str
    message: str
    data: dict[str, Any]


class ModelCallOut(BaseModel):
    """One model call."""

    seq: int
    at: str
    stage: str
    model: str
    prompt_chars: int
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float
    ok: bool
    error: str


class JobOut(BaseModel):
    """A job, as ``skillwire show JOB --json`` prints it."""

    id: str
    skill_id: str
    owner: str
    status: Literal["queued", "running", "paused", "completed", "failed", "escalated"]
    outcome_class: str | None
    waiting: WaitingOut | None
    reply: str | None
    fields: dict[str, Any]
    created_at: str
    updated_at: str
    version: int
    events: list[EventOut]
    model_calls: list[ModelCallOut]


class JobSummary(BaseModel):
    """A job in a list."""

    id: str
    skill_id: str
    owner: str
    status: str
    outcome_class: str | None
    created_at: str
    updated_at: str
    waiting: WaitingOut | None


class JobListOut(BaseModel):
    """A page of jobs, newest first."""

    jobs: list[JobSummary]
    limit: int
    offset: int


class InboxItem(BaseModel):
    """A job waiting for an approval the caller may give."""

    job_id: str
    skill_id: str
    owner: str
    tool: str | None
    arguments: dict[str, Any] | None
    reason: str | None
    approver: str | None
    prompt_message: str
    correlation_id: str
    requested_at: str


class InboxOut(BaseModel):
    """A page of the caller's approvals inbox, oldest request first."""

    approvals: list[InboxItem]
    total: int
    """How many approvals wait for the caller in all (every page)."""
    limit: int
    offset: int
    next_offset: int | None
    """The ``offset`` of the next page; null on the last page."""


class SkillIntentOut(BaseModel):
    """An intent a skill handles, with example messages."""

    id: str
    description: str
    examples: list[str]


class SkillOut(BaseModel):
    """A skill offered for new jobs."""

    id: str
    name: str
    description: str
    version: str | None
    format: str
    source: str | None
    """The file or folder it was loaded from (shown to an admin only)."""
    intents: list[SkillIntentOut]
    tools: list[str]
    approvers: list[str]
    """The roles its rules name as approvers."""
    content_version: str | None = None
    """The version a new job starts on (a hash of its files; docs/lifecycle.md)."""
    state: str | None = None
    """A package's ``status.state``: ``draft``, ``stable`` or ``deprecated``."""


class SkillListOut(BaseModel):
    """The offered skills and the outcome of the last (re)load."""

    skills: list[SkillOut]
    last_load: dict[str, Any] | None
    """The last load's outcome and report (shown to an admin only)."""


class ReloadOut(BaseModel):
    """What a reload did: the report, and the skills kept at their last good version."""

    ok: bool
    at: str
    loaded: list[str]
    kept: list[str]
    removed: list[str]
    report: dict[str, Any]


class MeOut(BaseModel):
    """Who the key belongs to."""

    principal: str
    roles: list[str]
    dev: bool
