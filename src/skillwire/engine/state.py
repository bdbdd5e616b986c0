"""The engine's working state of one job, persisted as JSON in ``JobRecord.state``.

Everything a job needs to continue after a pause or a crash is here: the message,
intents and entities, inputs given, tools run, approvals granted and denied, the
planner's conversation, the proposal waiting for input or approval, the tool in flight,
and the counters that budgets and the finalization gate read.

The JSON form is versioned by :data:`skillwire.core.job.JOB_STATE_VERSION` (its
docstring lists what each version changed). :meth:`JobState.from_dict` reads any older
version through :func:`upgrade_state`, one version at a time, and refuses a newer one.
Entries (:class:`HistoryEntry`, :class:`Ruling`, :class:`InFlightCall`) are frozen;
each builds its JSON form once, so that saving a job often costs no conversion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, TypeVar

from skillwire.core.chat import ChatMessage, ToolCall
from skillwire.core.errors import StateVersionError
from skillwire.core.job import JOB_STATE_VERSION
from skillwire.core.proposal import ToolProposal
from skillwire.policy.call import ApprovalGrant, ToolRun, args_key

__all__ = [
    "HistoryEntry",
    "InFlightCall",
    "JobState",
    "PauseKind",
    "Phase",
    "RetryPoint",
    "Ruling",
    "StateVersionError",
    "message_from_dict",
    "message_to_dict",
    "upgrade_state",
]


class Phase(StrEnum):
    """Where the pipeline is with a job."""

    INTENT = "intent"
    """The intent is not detected yet."""
    PLANNING = "planning"
    """The planner loop (the finalization gate included)."""
    DONE = "done"
    """The job ended."""


class PauseKind(StrEnum):
    """What a paused job waits for, and so which resume it takes."""

    INPUT = "input"
    """Values for the fields the gate asked for."""
    APPROVAL = "approval"
    """An approver's decision on the pending call."""
    OPERATOR = "operator"
    """An operator's word on a tool a crash interrupted (``outcome=ran|not_run``)."""
    CLARIFY = "clarify"
    """Values the finalization gate found missing (resumed as input)."""
    MODEL = "model"
    """A model that could not be reached: resumed with a retry of :attr:`JobState.retry`."""


_E = TypeVar("_E", bound=StrEnum)
_PHASES: dict[str, Phase] = {p._value_: p for p in Phase}
_PAUSE_KINDS: dict[str, PauseKind] = {k._value_: k for k in PauseKind}


def _member(kind: type[_E], by_text: Mapping[str, _E], value: Any) -> _E:
    """``kind(value)``: a text found in ``by_text`` (each member by its text) is a
    lookup, cheaper than the enum's call; anything else is read by the enum, which
    refuses what it refused before."""
    if type(value) is str:
        found = by_text.get(value)
        if found is not None:
            return found
    return kind(value)


def message_to_dict(message: ChatMessage) -> dict[str, Any]:
    """JSON form of a conversation message."""
    return {
        "role": message.role,
        "content": message.content,
        "tool_calls": [
            {"name": c.name, "arguments": c.arguments, "raw_arguments": c.raw_arguments, "id": c.id}
            for c in message.tool_calls
        ],
        "tool_call_id": message.tool_call_id,
    }


def message_from_dict(data: dict[str, Any]) -> ChatMessage:
    """Read a conversation message back."""
    raw = data.get("tool_calls")
    calls = tuple([ToolCall(**c) for c in raw]) if raw else ()  # most messages: none
    return ChatMessage(data["role"], data.get("content", ""), calls, data.get("tool_call_id", ""))


@dataclass(frozen=True, slots=True)
class _Entry:
    """An immutable part of the state whose JSON form is built once, when first saved.

    The JSON form shares the entry's values (arguments, results): they are JSON data
    that nothing changes in place."""

    _data: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the same dict every time: read it, never change it)."""
        data = self._data
        if data is None:
            # __match_args__: the fields given to __init__, in order (dataclasses.fields
            # would cost five times as much)
            names: tuple[str, ...] = self.__match_args__
            data = {name: getattr(self, name) for name in names}
            object.__setattr__(self, "_data", data)  # a cache of a frozen value
        return data


@dataclass(frozen=True, slots=True)
class HistoryEntry(_Entry):
    """A tool run of the job: the call, and what came of it (``ok`` False: it failed)."""

    tool: str
    args: dict[str, Any]
    result: Any = None
    ok: bool = True
    error: str = ""
    state_changes: dict[str, Any] = field(default_factory=dict)
    _run: ToolRun | None = field(default=None, init=False, repr=False, compare=False)
    _seen: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HistoryEntry:
        """Read the JSON form back."""
        return cls(
            data["tool"],
            data["args"],
            data.get("result"),
            data.get("ok", True),
            data.get("error", ""),
            data.get("state_changes") or {},
        )

    def seen(self) -> dict[str, Any]:
        """The run as the planner's request data shows it (``tool``, ``args``, ``ok``,
        ``result``, ``error``): the same dict every time (read it, never change it)."""
        seen = self._seen
        if seen is None:
            seen = {
                "tool": self.tool,
                "args": self.args,
                "ok": self.ok,
                "result": self.result,
                "error": self.error,
            }
            object.__setattr__(self, "_seen", seen)  # a cache of a frozen value
        return seen

    def as_run(self) -> ToolRun:
        """The run in the form the gate reads: the same object every time, so that the
        gate walks its values once (it marks a run it found plain JSON)."""
        run = self._run
        if run is None:
            run = ToolRun(self.tool, self.args, self.result, self.ok)
            object.__setattr__(self, "_run", run)  # a cache of a frozen value
        return run


@dataclass(frozen=True, slots=True)
class Ruling(_Entry):
    """An approver's decision on exactly these arguments of ``tool``: a grant in
    :attr:`JobState.grants`, a denial in :attr:`JobState.denials`.

    ``correlation_id`` is the pause it answered, ``decided_by`` who gave it (a key's
    principal, ``cli:<user>``). A grant allows one execution: it is ``consumed`` in the
    save that marks the call in flight, and never allows again."""

    tool: str
    args: dict[str, Any]
    role: str
    correlation_id: str = ""
    decided_by: str = ""
    consumed: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ruling:
        """Read the JSON form back."""
        return cls(
            data["tool"],
            data["args"],
            data["role"],
            data.get("correlation_id") or "",
            data.get("decided_by") or "",
            bool(data.get("consumed", False)),
        )

    def grant(self) -> ApprovalGrant:
        """The grant in the form the gate reads."""
        return ApprovalGrant(self.tool, self.args, self.role, self.correlation_id, self.consumed)


@dataclass(frozen=True, slots=True)
class InFlightCall(_Entry):
    """A tool call started and not yet recorded as finished: after a crash, recovery
    runs it again (idempotent tools) or asks an operator."""

    tool: str
    args: dict[str, Any]
    key: str
    """The idempotency key the tool was given."""
    call_id: str = ""
    """The planner's call it answers."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InFlightCall:
        """Read the JSON form back."""
        return cls(data["tool"], data["args"], data["key"], data.get("call_id") or "")


@dataclass(frozen=True, slots=True)
class RetryPoint(_Entry):
    """Where a job a model outage paused goes on: the ``stage`` whose model call failed
    (``intent``, ``planner``, ``gate`` or ``polisher``, as model calls name them) and,
    for the last two, the planner's call the final answer came with (answered when the
    gate sends the planner back)."""

    stage: str
    call_id: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RetryPoint:
        """Read the JSON form back."""
        return cls(str(data["stage"]), str(data.get("call_id") or ""))


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 writes ``denials`` always; a version 1 state without it had none."""
    return {**data, "denials": list(data.get("denials") or [])}


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """Version 3 consumes grants and binds them to the pause they answered; version 2
    kept neither. A grant is consumed when its call has run since (version 2 kept no
    order: each run of the tool with those arguments consumes one grant of them, the
    oldest first). One left unconsumed for the call still pending is bound to it (under
    an id of its own); any other stays unconsumed, bound to no pause, so it allows
    nothing."""
    runs: dict[str, int] = {}
    for run in data.get("history") or ():
        key = args_key(run["tool"], run["args"])
        runs[key] = runs.get(key, 0) + 1
    pending = data.get("pending")
    waits = None if pending is None else args_key(pending["tool"], pending.get("args") or {})
    grants: list[dict[str, Any]] = []
    bound: list[str] = []
    for i, grant in enumerate(data.get("grants") or ()):
        key = args_key(grant["tool"], grant["args"])
        consumed = runs.get(key, 0) > 0
        if consumed:
            runs[key] -= 1
        correlation = ""
        if not consumed and key == waits:
            correlation = f"state-v2-grant-{i}"
            bound.append(correlation)
        grants.append(
            {**grant, "correlation_id": correlation, "decided_by": "", "consumed": consumed}
        )
    denials = [
        {**d, "correlation_id": "", "decided_by": "", "consumed": False}
        for d in data.get("denials") or ()
    ]
    return {**data, "grants": grants, "denials": denials, "pending_grants": bound}


def _v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    """Version 4 adds the ``model`` pause and ``retry``; no version 3 state has either,
    so it reads as it was (a copy)."""
    return dict(data)


def _v4_to_v5(data: dict[str, Any]) -> dict[str, Any]:
    """Version 5 keeps the job's intents as a list, ``intents``; version 4 kept one
    ``intent`` (null while none was known)."""
    out = {k: v for k, v in data.items() if k != "intent"}
    intent = data.get("intent")
    out["intents"] = [intent] if isinstance(intent, str) and intent else []
    return out


_UPGRADES: tuple[Callable[[dict[str, Any]], dict[str, Any]], ...] = (
    _v1_to_v2,
    _v2_to_v3,
    _v3_to_v4,
    _v4_to_v5,
)
"""``_UPGRADES[n - 1]`` takes a state of version ``n`` to version ``n + 1``."""


def upgrade_state(data: dict[str, Any], version: int) -> dict[str, Any]:
    """``data``, a state of ``version``, in the form of :data:`JOB_STATE_VERSION`
    (``data`` itself when it is current, a new dict otherwise).

    Raises :class:`StateVersionError` for a version newer than this code's, or no
    version at all (below 1)."""
    if version == JOB_STATE_VERSION:
        return data
    if not 1 <= version < JOB_STATE_VERSION:
        raise StateVersionError(
            f"the job's state has version {version}; this skillwire reads versions 1 to "
            f"{JOB_STATE_VERSION} (a newer version needs a newer skillwire)"
        )
    for step in _UPGRADES[version - 1 :]:
        data = step(data)
    return data


@dataclass
class JobState:
    """What the engine keeps about one job between steps."""

    message: str
    skill_source: str = ""
    skill_version: str = ""
    """The version (content hash) of the skill the job started on; it resumes on it."""
    context: dict[str, Any] = field(default_factory=dict)
    phase: Phase = Phase.INTENT
    intents: list[str] = field(default_factory=list)
    """The job's active intents, in the order detected (a later user message may add
    one, never remove one); empty while none is known."""
    entities: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    history: list[HistoryEntry] = field(default_factory=list)
    grants: list[Ruling] = field(default_factory=list)
    denials: list[Ruling] = field(default_factory=list)
    conversation: list[dict[str, Any]] = field(default_factory=list)
    """The planner conversation in JSON form (:meth:`messages` reads it)."""
    pending: ToolProposal | None = None
    """The proposal a pause is about: checked by the gate again on resume."""
    pending_grants: list[str] = field(default_factory=list)
    """The correlation ids of the grants given for :attr:`pending` (one per approver,
    when several roles must approve it): only these may allow it."""
    pause_kind: PauseKind | None = None
    in_flight: InFlightCall | None = None
    draft: dict[str, Any] | None = None
    """The last final answer: ``{answer, fields}``."""
    iterations: int = 0
    model_calls: int = 0
    gate_attempts: int = 0
    evidence: int = 0
    evidence_at_last_gate: int | None = None
    event_seq: int = 0
    call_seq: int = 0
    engine_errors: int = 0
    """Unexpected errors the job has met so far (absent in older states: none)."""
    blocks: list[dict[str, Any]] = field(default_factory=list)
    """Calls the gate blocked, ``{tool, reason}`` (absent in older states: none)."""
    retry: RetryPoint | None = None
    """The stage a model outage stopped, run again when the job is retried; cleared by
    the first model call that succeeds after (absent: none)."""
    trace: str = ""
    """The W3C traceparent of the span of the job's first unit of work, when it was
    traced: later units are its children (:mod:`skillwire.core.tracing`; absent: none)."""
    _messages: list[ChatMessage] = field(default_factory=list, repr=False, compare=False)
    """:attr:`conversation` as messages, as far as read (not persisted)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form. Its values are shared, not copied (the conversation, the entries'
        cached forms), so that saving a job does not copy what it saved before."""
        pending, flight, pause = self.pending, self.in_flight, self.pause_kind
        out = {
            "message": self.message,
            "skill_source": self.skill_source,
            "context": self.context,
            "phase": self.phase._value_,
            "intents": self.intents,
            "entities": self.entities,
            "inputs": self.inputs,
            "history": [h.to_dict() for h in self.history],
            "grants": [g.to_dict() for g in self.grants],
            "denials": [d.to_dict() for d in self.denials],
            "conversation": self.conversation,
            "pending": None if pending is None else pending.to_dict(),
            "pending_grants": self.pending_grants,
            "pause_kind": None if pause is None else pause._value_,
            "in_flight": None if flight is None else flight.to_dict(),
            "draft": self.draft,
            "iterations": self.iterations,
            "model_calls": self.model_calls,
            "gate_attempts": self.gate_attempts,
            "evidence": self.evidence,
            "evidence_at_last_gate": self.evidence_at_last_gate,
            "event_seq": self.event_seq,
            "call_seq": self.call_seq,
        }
        # written only when there is something to say, so that a state without them
        # reads back as it was written (their absence means none)
        if self.engine_errors:
            out["engine_errors"] = self.engine_errors
        if self.blocks:
            out["blocks"] = self.blocks
        if self.retry is not None:
            out["retry"] = self.retry.to_dict()
        if self.skill_version:
            out["skill_version"] = self.skill_version
        if self.trace:
            out["trace"] = self.trace
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], version: int = JOB_STATE_VERSION) -> JobState:
        """Read the JSON form of ``version`` back (upgraded first when it is older;
        unknown keys are ignored, missing ones take their defaults). Raises
        :class:`StateVersionError` for a version this code cannot read."""
        data = upgrade_state(data, version)
        pending, flight, pause = data.get("pending"), data.get("in_flight"), data.get("pause_kind")
        retry = data.get("retry")
        return cls(
            message=data["message"],
            skill_source=data.get("skill_source", ""),
            skill_version=data.get("skill_version", ""),
            context=data.get("context") or {},
            phase=_member(Phase, _PHASES, data.get("phase", Phase.INTENT)),
            intents=[i for i in data.get("intents") or () if isinstance(i, str)],
            entities=data.get("entities") or {},
            inputs=data.get("inputs") or {},
            history=[HistoryEntry.from_dict(h) for h in data.get("history") or ()],
            grants=[Ruling.from_dict(g) for g in data.get("grants") or ()],
            denials=[Ruling.from_dict(d) for d in data.get("denials") or ()],
            conversation=data.get("conversation") or [],
            pending=None if pending is None else ToolProposal.from_dict(pending),
            pending_grants=list(data.get("pending_grants") or ()),
            pause_kind=None if pause is None else _member(PauseKind, _PAUSE_KINDS, pause),
            in_flight=None if flight is None else InFlightCall.from_dict(flight),
            draft=data.get("draft"),
            iterations=data.get("iterations", 0),
            model_calls=data.get("model_calls", 0),
            gate_attempts=data.get("gate_attempts", 0),
            evidence=data.get("evidence", 0),
            evidence_at_last_gate=data.get("evidence_at_last_gate"),
            event_seq=data.get("event_seq", 0),
            call_seq=data.get("call_seq", 0),
            engine_errors=data.get("engine_errors", 0),
            blocks=list(data.get("blocks") or ()),
            retry=None if retry is None else RetryPoint.from_dict(retry),
            trace=str(data.get("trace") or ""),
        )

    @property
    def intent(self) -> str | None:
        """The first of :attr:`intents` (the one the message is mostly about), or None."""
        return self.intents[0] if self.intents else None

    def runs(self) -> list[ToolRun]:
        """The tool runs, in the form the gate reads."""
        return [h.as_run() for h in self.history]

    def approvals(self) -> list[ApprovalGrant]:
        """Approvals granted so far (consumed ones included), in the form the gate reads."""
        return [g.grant() for g in self.grants]

    def consume(self, used: Sequence[ApprovalGrant]) -> None:
        """Mark the grants an ``Allow`` used as consumed (by their correlation ids)."""
        ids = {g.correlation_id for g in used} - {""}
        if not ids:
            return
        self.grants = [
            replace(g, consumed=True) if g.correlation_id in ids and not g.consumed else g
            for g in self.grants
        ]

    def messages(self) -> list[ChatMessage]:
        """The planner conversation (each message read from its JSON form once)."""
        known = self._messages
        if len(known) != len(self.conversation):
            known[:] = [message_from_dict(m) for m in self.conversation]
        return list(known)

    def add_message(self, message: ChatMessage) -> None:
        """Append to the planner conversation."""
        if len(self._messages) == len(self.conversation):
            self._messages.append(message)
        self.conversation.append(message_to_dict(message))
