"""Jobs as they are persisted: status, outcome, the ``waiting`` object, events.

The field names and values are the contract of spec 001 and DESIGN.md: ``status`` is
one of ``queued running paused completed failed escalated``; ``outcome_class`` says
why a job stopped (waiting for input or approval is never an error). Every state
change of a job is an :class:`Event` of one :class:`EventKind` (each kind is documented
there, with its stage and data); every model call is a :class:`ModelCallRecord`. The
engine's working state is a JSON object in :attr:`JobRecord.state`, versioned by
:data:`JOB_STATE_VERSION`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "JOB_STATE_VERSION",
    "Event",
    "EventKind",
    "JobRecord",
    "JobStatus",
    "ModelCallRecord",
    "OutcomeClass",
    "Stage",
    "Waiting",
]

JOB_STATE_VERSION = 5
"""Version of :attr:`JobRecord.state`. Bump it with a note when the shape changes;
readers upgrade an older version (``skillwire.engine`` does, step by step) and refuse a
newer one.

1. The first version. ``denials`` was added within it (a state without it has none).
2. ``denials`` is always written (a version 1 state is read with none). The entries of
   ``history``, ``grants``, ``denials``, ``pending`` and ``in_flight`` keep the keys
   version 1 wrote; ``phase`` and ``pause_kind`` keep their texts.
3. Grants and denials add ``correlation_id`` (the pause answered), ``decided_by`` and
   ``consumed`` (a grant allows one execution); ``pending_grants`` lists the grants
   given for the pending call. A version 2 grant is read as consumed when its call has
   run since (see ``skillwire.engine.state``). ``engine_errors`` (unexpected engine
   errors so far, default 0) and ``blocks`` (calls the gate blocked, default none) are
   written only when they are not empty, so an older state reads as having neither.
4. A job a model outage paused: ``pause_kind`` may be ``model``, and ``retry`` (written
   only when set) names the stage to retry, ``{stage, call_id}`` (``stage`` one of
   ``intent planner gate polisher``, as model calls name them; ``call_id`` the final
   answer's call, for the last two). A version 3 state has neither; it reads as it
   was.
5. A job has several intents: ``intents`` (a list, in the order detected; empty while
   none is known) replaces ``intent`` (one id or null). A version 4 state is read with
   ``intents`` of its one ``intent`` (none when it was null)."""


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
    BLOCKED = "BLOCKED"
    """Completed, but the gate blocked a call the request needed (and the tool never
    ran later): the reply says what was not done and why."""
    DENIED = "DENIED"
    """Completed, but an approver denied a call the request needed."""
    TOOL_FAILED = "TOOL_FAILED"
    """Completed, but a tool the request needed failed (and never ran later)."""
    MODEL_UNAVAILABLE = "MODEL_UNAVAILABLE"
    """Paused: a model could not be reached after its retries (timeouts, rate limits,
    server errors). Everything done so far is saved; an operator resumes the job with a
    retry once the model is back, and the stage that failed runs again."""


@dataclass
class Waiting:
    """Spec 001's ``waiting`` object, field for field, plus what an approval needs.

    For input: ``reason_code``, ``requested_fields``, ``prompt_message``,
    ``correlation_id``, ``created_at``, ``last_prompt_at``. For an approval also
    ``tool``, ``arguments``, ``approver``, ``reason`` and, when the rule lets the job's
    owner approve their own call, ``self_approval``. For a model outage
    (``reason_code`` ``MODEL_UNAVAILABLE``, no requested fields: it is resumed with a
    retry) also ``model`` (the model's name), ``stage`` (the stage to retry) and
    ``reason`` (the failure, redacted of secrets).
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
    self_approval: bool | None = None
    """True when the rule lets the job's owner approve their own call (absent otherwise)."""
    field_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None
    model: str | None = None
    """The model that could not be reached (a model outage only)."""
    stage: str | None = None
    """The stage a retry runs again: ``intent``, ``planner``, ``gate`` or ``polisher``
    (a model outage only)."""

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
        for key in (
            "tool",
            "arguments",
            "approver",
            "reason",
            "self_approval",
            "error",
            "model",
            "stage",
        ):
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


class Stage(StrEnum):
    """The part of the engine an event comes from (:attr:`Event.stage`)."""

    JOB = "job"
    """The job's life: created, status changes, recovered."""
    INTENT = "intent"
    """Intent detection."""
    BOOTSTRAP = "bootstrap"
    """Sub-goals and rules prepared for the planner."""
    PLANNER = "planner"
    """The planner's proposals."""
    GATE = "gate"
    """The pre-tool gate's decisions."""
    EXECUTE = "execute"
    """Tool runs."""
    PAUSE = "pause"
    """A pause for input, an approval or an operator."""
    RESUME = "resume"
    """What a paused job was given."""
    FINALIZE = "finalize"
    """The finalization gate."""
    POLISH = "polish"
    """The reply polisher."""
    ENGINE = "engine"
    """Failures of the job as a whole: budgets, model errors."""


class EventKind(StrEnum):
    """Every kind of event a job records (:attr:`Event.kind`), each with its stage.

    Each member's text says when the event is recorded and what its ``data`` holds; its
    ``reason_code`` is empty unless said. The values are stored and read by the store,
    the API and the web page: they never change.
    """

    stage: Stage
    """The stage every event of this kind comes from."""

    def __new__(cls, value: str, stage: Stage) -> EventKind:
        member = str.__new__(cls, value)
        member._value_ = value
        member.stage = stage
        return member

    CREATED = "created", Stage.JOB
    """The job was stored, before any model call; the message is the user's.
    ``skill``, ``context``."""
    STATUS = "status", Stage.JOB
    """The status changed; ``reason_code`` is the outcome class. ``status``."""
    RECOVERED = "recovered", Stage.JOB
    """A job a crash left queued or running is continued."""

    INTENT_DETECTED = "intent_detected", Stage.INTENT
    """The message matched one intent or more (recorded again when a later user
    message adds one). ``intents`` (every active intent, in order), ``intent`` (the
    first), ``added`` (those this message added), ``rejected_intents`` (names given that
    the skill does not have, or over the cap), ``entities`` (valid values),
    ``rejected_entities`` (names whose values were refused), ``confidence``;
    ``source`` is ``input`` for an answer given on resume."""
    OUT_OF_DOMAIN = "out_of_domain", Stage.INTENT
    """The message matched no intent; the job ends with the skill's out-of-domain
    reply. ``reason_code`` OUT_OF_DOMAIN; ``model_said``, ``action``."""

    BOOTSTRAPPED = "bootstrapped", Stage.BOOTSTRAP
    """Sub-goals built from the workflows and rules compiled. ``subgoals``,
    ``compiled_rules``, ``planner_tokens``."""

    PROPOSAL = "proposal", Stage.PLANNER
    """The planner proposed a tool call. ``tool``, ``args``, ``iteration``."""
    INPUTS_APPLIED = "inputs_applied", Stage.PLANNER
    """Required arguments the proposal left out were filled from input the user gave
    earlier. ``tool``, ``inputs``."""
    DO_NOTHING = "do_nothing", Stage.PLANNER
    """No usable proposal; the planner is asked again. ``iteration``."""
    PARSE_ERROR = "parse_error", Stage.PLANNER
    """The planner's reply could not be used; it is asked to try again. ``errors``."""

    GATE_DECISION = "gate_decision", Stage.GATE
    """The pre-tool gate's decision on a proposal; ``reason_code`` is its first
    reason's. ``decision``, ``tool``, ``args``, ``reasons``."""
    DENIED_BEFORE = "denied_before", Stage.GATE
    """The same call was denied by an approver earlier in the job; it does not run and
    the approver is not asked again. ``reason_code`` APPROVAL_DENIED; ``tool``,
    ``args``."""

    TOOL_STARTED = "tool_started", Stage.EXECUTE
    """An allowed tool starts (a call that is not idempotent is saved in flight first).
    ``tool``, ``args``, ``idempotency_key``."""
    TOOL_FINISHED = "tool_finished", Stage.EXECUTE
    """The tool ran. ``tool``, ``result``, ``state_changes``."""
    TOOL_FAILED = "tool_failed", Stage.EXECUTE
    """The tool failed; the message is its error. ``tool``."""
    TOOL_RERUN = "tool_rerun", Stage.EXECUTE
    """Recovery runs an idempotent tool that was in flight again. ``tool``,
    ``idempotency_key``."""

    PAUSED = "paused", Stage.PAUSE
    """The job paused; ``reason_code`` is the waiting object's. ``waiting``."""

    INPUT_REJECTED = "input_rejected", Stage.RESUME
    """Input given does not satisfy the fields asked for; the job stays paused under
    the same correlation id. ``correlation_id``."""
    INPUT_RECEIVED = "input_received", Stage.RESUME
    """Input was accepted. ``inputs``, ``ignored`` (names not asked for),
    ``correlation_id``."""
    APPROVAL_GRANTED = "approval_granted", Stage.RESUME
    """The approver approved the exact call, for one execution. ``role``,
    ``decided_by`` (who: a key's principal, ``cli:<user>``), ``tool``, ``args``,
    ``correlation_id``."""
    APPROVAL_DENIED = "approval_denied", Stage.RESUME
    """The approver denied the call; it does not run. ``reason_code`` APPROVAL_DENIED;
    ``role``, ``decided_by``, ``tool``, ``args``, ``correlation_id``."""
    OPERATOR_DECIDED = "operator_decided", Stage.RESUME
    """An operator said whether an interrupted tool ran. ``outcome`` (``ran`` or
    ``not_run``), ``tool``, ``result_given`` (the operator gave the run's result)."""
    RETRY_REQUESTED = "retry_requested", Stage.RESUME
    """A job a model outage paused is retried: the stage that failed runs again from
    the saved state. ``stage``, ``model``, ``requested_by``, ``correlation_id``."""

    FINAL_ANSWER = "final_answer", Stage.FINALIZE
    """The planner answered. ``fields``."""
    GATE_SKIPPED = "gate_skipped", Stage.FINALIZE
    """The finalization gate is disabled; the output contract was checked
    mechanically. ``missing_fields``."""
    GATE_PASSED = "gate_passed", Stage.FINALIZE
    """The answer passed the finalization gate."""
    GATE_FAILED = "gate_failed", Stage.FINALIZE
    """The answer failed the finalization gate; ``reason_code`` is the first reason
    code in order. ``reasons``, ``suggested_action``, ``attempt``."""
    GATE_UNPARSED = "gate_unparsed", Stage.FINALIZE
    """The gate's reply was not a verdict: treated as failed. ``reply``."""
    REQUEST_NOT_DONE = "request_not_done", Stage.FINALIZE
    """The planner answered, but a call the request needed was denied, blocked or
    failed: the job completes with that outcome, no gate or polisher is asked.
    ``reason_code`` DENIED, BLOCKED or TOOL_FAILED; ``tools`` (not done), ``claims``
    (past-tense action words of the answer that no tool run supports)."""
    ESCALATED = "escalated", Stage.FINALIZE
    """The job escalated: retries used up, no new evidence, or the gate asked.
    ``reason_code`` FINALIZATION_FAILED; ``draft``."""

    POLISHED = "polished", Stage.POLISH
    """The persona was applied to the reply."""
    POLISH_REJECTED = "polish_rejected", Stage.POLISH
    """The polished text was empty or dropped a contract value; the unpolished reply is
    kept. ``dropped`` (the fields lost, when some were)."""
    POLISH_SKIPPED = "polish_skipped", Stage.POLISH
    """The skill has no persona."""

    BUDGET_EXHAUSTED = "budget_exhausted", Stage.ENGINE
    """The job used up its iterations or model calls and fails. ``reason_code``
    ENGINE_BUDGET_EXHAUSTED."""
    MODEL_ERROR = "model_error", Stage.ENGINE
    """A model call failed in a way no retry mends (the backend refused its
    configuration or credentials, the server refused the request, or the reply was not
    one) and the job fails. ``reason_code`` INTERNAL_ERROR; ``error_type``, ``model``,
    ``stage``."""
    MODEL_UNAVAILABLE = "model_unavailable", Stage.ENGINE
    """A model could not be reached after its retries; the job pauses
    (``MODEL_UNAVAILABLE``) until an operator retries it. ``reason_code``
    MODEL_UNAVAILABLE; ``model``, ``stage`` (the stage to retry), ``error``."""
    ENGINE_ERROR = "engine_error", Stage.ENGINE
    """An unexpected error (a bug) stopped a stage; the job goes on from its last save,
    and fails after ``skillwire.engine.MAX_ENGINE_ERRORS`` of them. Internal: never
    shown in the reply. ``reason_code`` INTERNAL_ERROR; ``error_type``, ``phase``,
    ``attempt``, ``final`` (True when the job failed)."""


@dataclass(slots=True)
class Event:
    """One state change of a job. ``seq`` counts from 1 within the job; ``stage`` and
    ``kind`` are the plain text of a :class:`Stage` and an :class:`EventKind`."""

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


@dataclass(slots=True)
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
