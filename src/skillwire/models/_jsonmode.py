"""Tool calls and JSON replies written as text, for servers without native tool calling.

In JSON tool mode the tools and a strict reply format go into the system prompt, earlier
tool calls and results are replayed as ordinary assistant and user turns, and the reply
text is read back into :class:`ToolCall` objects. The model is asked for one of::

    {"tool": "<name>", "arguments": {...}}
    {"tool_calls": [{"tool": "<name>", "arguments": {...}}, ...]}

possibly inside a fenced ```json block; ``{"name": ..., "arguments": ...}``, a shape many
open models were trained on, is read too. Any other reply is plain text. Nothing here
checks a tool name or its arguments: the engine validates both against the skill.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal

from skillwire.core.chat import ChatMessage, ChatRequest, ToolCall, ToolSpec

__all__ = [
    "JSON_OBJECT_INSTRUCTION",
    "ToolMode",
    "add_system_text",
    "find_json_object",
    "finish_reply",
    "flatten_tool_turns",
    "new_call_id",
    "parse_arguments",
    "parse_tool_reply",
    "prepare_messages",
    "render_calls",
    "tool_prompt",
    "unwrap_fence",
]

ToolMode = Literal["native", "json"]
"""``native``: the server's own tool calling; ``json``: tool calls written as JSON text."""

JSON_OBJECT_INSTRUCTION = "Reply with a single JSON object and nothing else."

_WHOLE_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?[ \t]*```\s*\Z", re.DOTALL)
_ANY_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


def new_call_id() -> str:
    """A fresh id for a tool call the server did not number itself."""
    return f"call_{uuid.uuid4().hex[:16]}"


def parse_arguments(raw: object) -> tuple[dict[str, Any] | None, str]:
    """Read tool-call arguments: ``(object, raw text)``, the object None unless a JSON object.

    Blank text means no arguments (``{}``). An object a lenient server already decoded is
    accepted as is.
    """
    if isinstance(raw, dict):
        return {str(k): v for k, v in raw.items()}, json.dumps(raw)
    if not isinstance(raw, str):
        return None, "" if raw is None else str(raw)
    if not raw.strip():
        return {}, raw
    try:
        value = json.loads(raw)
    except ValueError:
        return None, raw
    return (value if isinstance(value, dict) else None), raw


def unwrap_fence(text: str) -> str:
    """The inside of ``text`` when all of it is one fenced code block, else ``text``."""
    match = _WHOLE_FENCE.match(text)
    return match.group(1).strip() if match else text


def find_json_object(text: str) -> tuple[dict[str, Any], str] | None:
    """The JSON object ``text`` holds, and the prose around it; None if it holds none.

    The object is the whole text (fenced or not), an object the text starts with, or
    the first fenced block that parses.
    """
    for candidate in (text.strip(), unwrap_fence(text)):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value, ""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            value, end = _DECODER.raw_decode(stripped)
        except ValueError:
            pass
        else:
            if isinstance(value, dict):
                return value, stripped[end:].strip()
    for match in _ANY_FENCE.finditer(text):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(value, dict):
            rest = (text[: match.start()] + text[match.end() :]).strip()
            return value, rest
    return None


def _call_from(entry: object, new_id: Callable[[], str]) -> ToolCall | None:
    """One tool call from ``{"tool"|"name": ..., "arguments": ...}``, or None."""
    if not isinstance(entry, dict):
        return None
    name = entry.get("tool")
    if not isinstance(name, str):
        name = entry.get("name") if "arguments" in entry else None
    if not isinstance(name, str) or not name:
        return None
    args = entry.get("arguments", {})
    if isinstance(args, str | dict):
        arguments, raw = parse_arguments(args)
    else:
        arguments, raw = None, json.dumps(args)
    call_id = entry.get("id")
    return ToolCall(
        name, arguments, raw, call_id if isinstance(call_id, str) and call_id else new_id()
    )


def parse_tool_reply(
    text: str, new_id: Callable[[], str] = new_call_id
) -> tuple[str, tuple[ToolCall, ...]]:
    """Split a JSON-mode reply into ``(text, tool calls)``.

    A reply that is not a tool-call object comes back unchanged with no calls; prose
    around a fenced tool-call block is kept as the text.
    """
    found = find_json_object(text)
    if found is None:
        return text, ()
    obj, rest = found
    entries = obj.get("tool_calls") if "tool_calls" in obj else [obj]
    if not isinstance(entries, list) or not entries:
        return text, ()
    calls = [_call_from(entry, new_id) for entry in entries]
    if any(call is None for call in calls):
        return text, ()
    return rest, tuple(call for call in calls if call is not None)


def tool_prompt(tools: Sequence[ToolSpec]) -> str:
    """The system-prompt text that offers ``tools`` and fixes the reply format."""
    lines = ["You can call these tools:"]
    for tool in tools:
        schema = json.dumps(tool.parameters, sort_keys=True, separators=(",", ":"))
        lines.append(f"- {tool.name}: {tool.description}\n  arguments (JSON Schema): {schema}")
    lines += [
        "",
        "To call a tool, reply with only this JSON object and no other text:",
        '{"tool": "<tool name>", "arguments": {<arguments that match its schema>}}',
        "To call several tools at once, reply with only:",
        '{"tool_calls": [{"tool": "<tool name>", "arguments": {...}}, ...]}',
        "Tool results come back in messages that start with 'Tool result'.",
        "When you need no tool, reply in plain text, not JSON.",
    ]
    return "\n".join(lines)


def render_calls(calls: Sequence[ToolCall]) -> str:
    """Earlier tool calls written in the format :func:`tool_prompt` asks for."""
    entries = [
        {"tool": c.name, "arguments": c.arguments if c.arguments is not None else c.raw_arguments}
        for c in calls
    ]
    return json.dumps(entries[0] if len(entries) == 1 else {"tool_calls": entries})


def flatten_tool_turns(messages: Sequence[ChatMessage]) -> tuple[ChatMessage, ...]:
    """Replay tool calls as assistant text and tool results as user text."""
    names: dict[str, str] = {}
    out: list[ChatMessage] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            names.update((c.id, c.name) for c in message.tool_calls)
            calls = render_calls(message.tool_calls)
            content = f"{message.content}\n{calls}" if message.content else calls
            out.append(ChatMessage("assistant", content))
        elif message.role == "tool":
            name = names.get(message.tool_call_id, "unknown")
            header = f"Tool result for {name} (call {message.tool_call_id}):"
            out.append(ChatMessage("user", f"{header}\n{message.content}"))
        else:
            out.append(message)
    return tuple(out)


def add_system_text(messages: Sequence[ChatMessage], text: str) -> tuple[ChatMessage, ...]:
    """Append ``text`` to the leading system message, or start with one holding it."""
    if messages and messages[0].role == "system":
        first = messages[0]
        joined = f"{first.content}\n\n{text}" if first.content else text
        return (ChatMessage("system", joined), *messages[1:])
    return (ChatMessage("system", text), *messages)


def prepare_messages(
    request: ChatRequest, tool_mode: ToolMode, *, flatten: bool = False
) -> tuple[ChatMessage, ...]:
    """The conversation to send: tool turns flattened and instructions added as needed.

    ``flatten`` forces tool turns into text even in native mode (for APIs that refuse
    tool history when no tools are offered).
    """
    messages = request.messages
    extra: list[str] = []
    if tool_mode == "json" or flatten:
        messages = flatten_tool_turns(messages)
    if tool_mode == "json" and request.tools:
        extra.append(tool_prompt(request.tools))
    if request.response_format == "json":
        extra.append(JSON_OBJECT_INSTRUCTION)
    return add_system_text(messages, "\n\n".join(extra)) if extra else messages


def finish_reply(
    text: str,
    calls: tuple[ToolCall, ...],
    request: ChatRequest,
    tool_mode: ToolMode,
    new_id: Callable[[], str] = new_call_id,
) -> tuple[str, tuple[ToolCall, ...]]:
    """Read JSON-mode tool calls out of the text, and unfence a requested JSON reply."""
    if tool_mode == "json" and request.tools and not calls:
        text, calls = parse_tool_reply(text, new_id)
    if request.response_format == "json" and not calls:
        text = unwrap_fence(text)
    return text, calls
