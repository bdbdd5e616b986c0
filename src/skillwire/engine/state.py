"""The engine's working state of one job, persisted as JSON in ``JobRecord.state``.

Everything a job needs to continue after a pause or a crash is here: the message,
intent and entities, inputs given, tools run, approvals granted and denied, the
planner's conversation, the proposal waiting for input or approval, the tool in flight,
and the counters that budgets and the finalization gate read. Version:
:data:`skillwire.core.job.JOB_STATE_VERSION` (1: first version; ``denials`` was added
within it, with a default, so states written without it read the same).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from skillwire.core.chat import ChatMessage, ToolCall
from skillwire.policy.call import ApprovalGrant, ToolRun

__all__ = ["JobState", "message_from_dict", "message_to_dict"]


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
    calls = tuple(ToolCall(**c) for c in data.get("tool_calls") or ())
    return ChatMessage(data["role"], data.get("content", ""), calls, data.get("tool_call_id", ""))


@dataclass
class JobState:
    """What the engine keeps about one job between steps."""

    message: str
    skill_source: str = ""
    context: dict[str, Any] = field(default_factory=dict)
    phase: str = "intent"
    intent: str | None = None
    entities: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    grants: list[dict[str, Any]] = field(default_factory=list)
    denials: list[dict[str, Any]] = field(default_factory=list)
    conversation: list[dict[str, Any]] = field(default_factory=list)
    pending: dict[str, Any] | None = None
    pause_kind: str | None = None
    in_flight: dict[str, Any] | None = None
    draft: dict[str, Any] | None = None
    iterations: int = 0
    model_calls: int = 0
    gate_attempts: int = 0
    evidence: int = 0
    evidence_at_last_gate: int | None = None
    event_seq: int = 0
    call_seq: int = 0
    _messages: list[ChatMessage] = field(default_factory=list, repr=False, compare=False)
    """:attr:`conversation` as messages, as far as read (not persisted)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form: a shallow copy (its values are already plain JSON data), so that
        saving a job does not deep-copy its conversation every time."""
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobState:
        """Read the JSON form back (unknown keys are ignored)."""
        return cls(**{k: v for k, v in data.items() if k in _FIELDS})

    def runs(self) -> list[ToolRun]:
        """The tool runs, in the form the gate reads."""
        return [
            ToolRun(h["tool"], h["args"], h.get("result"), h.get("ok", True)) for h in self.history
        ]

    def approvals(self) -> list[ApprovalGrant]:
        """Approvals granted so far."""
        return [ApprovalGrant(g["tool"], g["args"], g["role"]) for g in self.grants]

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


_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(JobState) if not f.name.startswith("_"))
