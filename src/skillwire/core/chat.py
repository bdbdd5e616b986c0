"""The ``ChatModel`` protocol: what the engine needs of any language model.

Messages and tool definitions go in; text or tool calls, with usage, come out. This
module imports no SDK; each backend in :mod:`skillwire.models` adapts one. A call fails
with a :class:`~skillwire.core.errors.ModelError` (in :mod:`skillwire.core.errors`)::

    ModelError                  a model call failed
    ├── ModelConfigError        not usable as configured (no key, SDK extra missing, bad URL)
    ├── ModelRequestError       the server refused the request (bad request, unknown model)
    └── ModelUnavailableError   timeouts, 429 and 5xx that outlived the retries
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "Stage",
    "ToolCall",
    "ToolSpec",
    "Usage",
]

Stage = Literal["intent", "planner", "gate", "polisher"]
"""The pipeline stage a model call serves; recorded with every call."""

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call: its name, what it does, and its JSON Schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call as the model made it.

    ``arguments`` is None when the model's argument text was not a JSON object;
    ``raw_arguments`` keeps that text so the adapter can say what was wrong.
    """

    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str = ""
    id: str = ""


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a conversation. ``tool`` messages answer ``tool_call_id``."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a call used, when the backend reports them."""

    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One call: the stage it serves, the conversation, and the tools on offer.

    ``response_format="json"`` asks for a JSON object in the text (used where a
    stage wants structured output and no tools are offered).

    ``data`` is what the prompt says, as structure, for a backend that reads structure
    rather than prose (the offline model): the intent catalogue with its examples, the
    job's state with its tool results. It is never sent to a language model, so it is
    not counted in a call's prompt characters; a backend that sends prompts ignores it.
    """

    stage: Stage
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    response_format: Literal["text", "json"] = "text"
    temperature: float | None = None
    max_tokens: int | None = None
    data: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """What came back: text, tool calls, or both, with usage and the model's name."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str = ""


@runtime_checkable
class ChatModel(Protocol):
    """Any language model skillwire can call."""

    @property
    def name(self) -> str:
        """A name for accounting and logs, e.g. ``openai:gpt-4o-mini``."""
        ...

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Run one call. Raises :class:`ModelError` subclasses, never SDK exceptions."""
        ...

    async def aclose(self) -> None:
        """Release connections; the runtime calls it once when it closes. No call
        follows it. A model that holds nothing does nothing."""
        ...
