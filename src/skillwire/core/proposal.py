"""What the planner proposes, once a model adapter has parsed its reply (spec 002).

A proposal is a tool call, a final answer (the built-in ``final_answer`` tool with
``{answer, fields}``), or do-nothing (the safe fallback when a reply cannot be parsed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FINAL_ANSWER_TOOL", "DoNothing", "FinalAnswer", "Proposal", "ToolProposal"]

FINAL_ANSWER_TOOL = "final_answer"
"""The built-in tool the planner calls to answer: ``{answer: str, fields: {...}}``."""


@dataclass(frozen=True, slots=True)
class ToolProposal:
    """Call ``tool`` with ``args``. ``stated_*`` is what the reply said it would do."""

    tool: str
    args: dict[str, Any]
    call_id: str = ""
    stated_tool: str | None = None
    stated_args: dict[str, Any] | None = None
    reasoning: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON form (persisted while a job waits)."""
        return {
            "tool": self.tool,
            "args": self.args,
            "call_id": self.call_id,
            "stated_tool": self.stated_tool,
            "stated_args": self.stated_args,
            "reasoning": self.reasoning,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolProposal:
        """Read the JSON form back."""
        return cls(
            data["tool"],
            dict(data.get("args") or {}),
            data.get("call_id", ""),
            data.get("stated_tool"),
            data.get("stated_args"),
            data.get("reasoning", ""),
        )


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    """The planner's answer: text, and the output contract's fields."""

    answer: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DoNothing:
    """No usable proposal (the reply could not be parsed within the retry bound)."""

    reason: str


Proposal = ToolProposal | FinalAnswer | DoNothing
