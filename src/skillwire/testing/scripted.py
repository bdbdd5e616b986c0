"""A scripted :class:`~skillwire.core.chat.ChatModel`: replies written in advance, used in order.

A script is a list of replies, each naming the stage it answers (``intent``, ``planner``,
``gate``, ``polisher``) and what the model returns: ``text``, ``json`` (an object, sent as
JSON text) or ``tool_call`` / ``tool_calls``. It is read from YAML or JSON (a list of
replies, or ``{replies: [...]}``), or given inline. Every mistake is a test failure::

    ScriptError (AssertionError; defined in skillwire.core.errors)
    ├── ScriptFormatError      the script itself is malformed (raised when it is loaded)
    ├── StageMismatchError     a call's stage differs from the stage of the next reply
    ├── ScriptExhaustedError   a call came after the last reply was used
    └── IncompleteScriptError  assert_complete() found replies that were never used

``ScriptError`` is an ``AssertionError``, not a :class:`~skillwire.core.chat.ModelError`, on
purpose: a ``ModelError`` is a failed model call, which the engine turns into a job outcome
(a retry, a failed job with a reason). A script mistake dressed as one would be absorbed
the same way, and a test expecting a failed job would pass for the wrong reason. As an
``AssertionError`` it passes through the engine to pytest, which reports it as the failing
assertion it is.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.nodes import MappingNode, Node, SequenceNode

from skillwire.core.chat import ChatRequest, ChatResponse, Stage, ToolCall, Usage
from skillwire.core.errors import (
    IncompleteScriptError,
    ScriptError,
    ScriptExhaustedError,
    ScriptFormatError,
    StageMismatchError,
)

__all__ = [
    "IncompleteScriptError",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptFormat",
    "ScriptFormatError",
    "ScriptedModel",
    "ScriptedReply",
    "StageMismatchError",
]

ScriptFormat = Literal["yaml", "json"]
"""The formats a script may be written in."""

_STAGES: tuple[str, ...] = get_args(Stage)
_PAYLOADS = ("text", "json", "tool_call", "tool_calls")
_REPLY_KEYS = frozenset({"stage", *_PAYLOADS, "usage", "finish_reason"})
_TOOL_CALL_KEYS = frozenset({"name", "arguments", "id"})
_USAGE_KEYS = frozenset({"input_tokens", "output_tokens"})
_Fail = Callable[[str], "ScriptFormatError"]
_SUFFIXES: dict[str, ScriptFormat] = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One reply of a script: the stage it answers and exactly one payload.

    The payload is ``text`` (returned as is), ``json`` (an object, returned as its JSON
    text) or ``tool_calls`` (one or more). Tool calls with no ``id`` are numbered
    ``call_<n>`` across the script; with no ``raw_arguments`` they get their arguments'
    JSON. Build replies from data with :meth:`from_mapping`.
    """

    stage: Stage
    """The stage of the call this reply answers."""
    text: str | None = None
    """Plain text, e.g. the polisher's reply or a deliberately malformed JSON reply."""
    json: dict[str, Any] | None = None
    """A JSON object: the intent stage's ``{intent, entities}``, the gate's result."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls, as the planner makes them (``final_answer`` is one too)."""
    usage: Usage = field(default_factory=Usage)
    """Token counts the reply reports (none by default)."""
    finish_reason: str = ""
    """Returned as is; when empty, ``tool_calls`` for a tool call reply, else ``stop``."""
    line: int = field(default=0, compare=False)
    """Where the reply starts in its script file (1-based; 0 when unknown)."""

    def __post_init__(self) -> None:
        if self.stage not in _STAGES:
            raise ScriptFormatError(f"unknown stage {self.stage!r}; use one of {_choices()}")
        given = [self.text is not None, self.json is not None, bool(self.tool_calls)]
        if sum(given) != 1:
            raise ScriptFormatError(
                f"a reply needs exactly one payload: text, json or tool_calls ({sum(given)} given)"
            )

    @classmethod
    def from_mapping(
        cls,
        data: Mapping[str, Any],
        *,
        index: int | None = None,
        file: str | None = None,
        line: int = 0,
    ) -> ScriptedReply:
        """A reply from script data; errors name the reply's ``index``, ``file`` and ``line``."""

        def fail(detail: str) -> ScriptFormatError:
            return ScriptFormatError(detail, index=index, file=file, line=line)

        if not isinstance(data, Mapping):
            raise fail(f"a reply must be a mapping, not {_kind(data)}")
        unknown = sorted(str(key) for key in data if key not in _REPLY_KEYS)
        if unknown:
            raise fail(
                f"unknown key(s) {', '.join(unknown)}; a reply has stage, one of "
                "text / json / tool_call / tool_calls, and optionally usage, finish_reason"
            )
        stage = data.get("stage")
        if stage is None:
            raise fail(f"missing 'stage' (one of {_choices()})")
        if stage not in _STAGES:
            raise fail(f"unknown stage {stage!r}; use one of {_choices()}")
        payloads = [key for key in _PAYLOADS if key in data]
        if len(payloads) != 1:
            found = f"found {' and '.join(payloads)}" if payloads else "found none"
            raise fail(f"a reply needs exactly one of text, json, tool_call, tool_calls ({found})")
        kind = payloads[0]
        value = data[kind]
        text: str | None = None
        obj: dict[str, Any] | None = None
        calls: tuple[ToolCall, ...] = ()
        if kind == "text":
            if not isinstance(value, str):
                raise fail(f"text must be a string, not {_kind(value)} (quote it in YAML)")
            text = value
        elif kind == "json":
            if not isinstance(value, Mapping):
                raise fail(
                    f"json must be an object, not {_kind(value)}; "
                    "script any other model output as text"
                )
            obj = json.loads(_dumps(value, "json", fail))
        elif kind == "tool_call":
            calls = (_tool_call(value, "tool_call", fail),)
        else:
            if not isinstance(value, list) or not value:
                raise fail("tool_calls must be a non-empty list of tool calls")
            calls = tuple(
                _tool_call(item, f"tool_calls[{i}]", fail) for i, item in enumerate(value)
            )
        finish = data.get("finish_reason", "")
        if not isinstance(finish, str):
            raise fail(f"finish_reason must be a string, not {_kind(finish)}")
        return cls(
            stage,
            text=text,
            json=obj,
            tool_calls=calls,
            usage=_usage(data.get("usage"), fail),
            finish_reason=finish,
            line=line,
        )


def _tool_call(value: Any, where: str, fail: _Fail) -> ToolCall:
    if not isinstance(value, Mapping):
        raise fail(f"{where} must be a mapping with name and arguments, not {_kind(value)}")
    unknown = sorted(str(key) for key in value if key not in _TOOL_CALL_KEYS)
    if unknown:
        raise fail(f"{where}: unknown key(s) {', '.join(unknown)}; use name, arguments, id")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise fail(f"{where}: 'name' must be a non-empty string")
    call_id = value.get("id", "")
    if not isinstance(call_id, str):
        raise fail(f"{where}: 'id' must be a string")
    arguments = value.get("arguments", {})
    if isinstance(arguments, str):
        # A string is the model's raw argument text, kept as written so that a test can
        # script arguments that are not JSON, or JSON that is not an object.
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        return ToolCall(name, parsed if isinstance(parsed, dict) else None, arguments, call_id)
    if not isinstance(arguments, Mapping):
        raise fail(
            f"{where}: 'arguments' must be a mapping, or a string for raw argument "
            f"text, not {_kind(arguments)}"
        )
    raw = _dumps(arguments, f"{where}.arguments", fail)
    return ToolCall(name, json.loads(raw), raw, call_id)


def _usage(value: Any, fail: _Fail) -> Usage:
    if value is None:
        return Usage()
    if not isinstance(value, Mapping) or not set(value) <= _USAGE_KEYS:
        raise fail("usage must be a mapping with input_tokens and/or output_tokens")
    counts: list[int | None] = []
    for key in ("input_tokens", "output_tokens"):
        count = value.get(key)
        if count is not None and (
            isinstance(count, bool) or not isinstance(count, int) or count < 0
        ):
            raise fail(f"usage.{key} must be a non-negative integer")
        counts.append(count)
    return Usage(*counts)


def _dumps(value: Any, where: str, fail: _Fail) -> str:
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        msg = f"{where} is not plain JSON data ({exc}); quote dates and times in YAML"
        raise fail(msg) from None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")


def _choices() -> str:
    return ", ".join(_STAGES)


class ScriptedModel:
    """A :class:`~skillwire.core.chat.ChatModel` that answers from a script, in order.

    Each call takes the next reply; a reply for another stage raises
    :class:`StageMismatchError` (and stays unused), a call after the last reply raises
    :class:`ScriptExhaustedError`. Every request is kept in :attr:`calls`. Calls are
    served in arrival order, so give each concurrent job its own model.

    ``latency`` (seconds) is awaited with ``asyncio.sleep`` before each reply, to stand in
    for a model that waits on the network; with 0, ``complete`` never yields to the loop.
    """

    def __init__(
        self,
        replies: Sequence[ScriptedReply | Mapping[str, Any]],
        *,
        name: str = "inline",
        file: str | None = None,
        latency: float = 0.0,
    ) -> None:
        if latency < 0:
            raise ValueError(f"latency must be >= 0 seconds, got {latency}")
        self._name = f"scripted:{name}"
        self._file = file
        self._latency = latency
        self._replies = tuple(_numbered(_as_reply(r, i, file) for i, r in enumerate(replies)))
        self._texts = tuple(_text(reply) for reply in self._replies)  # written once
        self._next = 0
        self.calls: list[ChatRequest] = []
        """Every request received, in order, including those that raised."""

    @classmethod
    def from_file(
        cls, path: str | Path, *, fmt: ScriptFormat | None = None, latency: float = 0.0
    ) -> ScriptedModel:
        """Load a script file; the format follows the suffix (.yaml, .yml, .json)."""
        path = Path(path)
        if fmt is None:
            fmt = _SUFFIXES.get(path.suffix.lower())
            if fmt is None:
                raise ScriptFormatError(
                    "a script file ends in .yaml, .yml or .json (or pass fmt=)", file=str(path)
                )
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ScriptFormatError(f"not UTF-8 text ({exc})", file=str(path)) from None
        return cls._load(text, fmt, name=path.name, file=str(path), latency=latency)

    @classmethod
    def from_text(
        cls, text: str, fmt: ScriptFormat, *, name: str = "inline", latency: float = 0.0
    ) -> ScriptedModel:
        """Load a script from YAML or JSON text; errors give lines but no file."""
        if fmt not in _SUFFIXES.values():
            raise ValueError(f"fmt must be 'yaml' or 'json', got {fmt!r}")
        return cls._load(text, fmt, name=name, file=None, latency=latency)

    @classmethod
    def _load(
        cls, text: str, fmt: ScriptFormat, *, name: str, file: str | None, latency: float
    ) -> ScriptedModel:
        data, root = _parse(text, fmt, file)
        items, lines = _reply_list(data, root, file)
        replies = [
            ScriptedReply.from_mapping(item, index=i, file=file, line=lines.get(i, 0))
            for i, item in enumerate(items)
        ]
        return cls(replies, name=name, file=file, latency=latency)

    @property
    def name(self) -> str:
        """``scripted:<file name>``, or ``scripted:inline``."""
        return self._name

    @property
    def replies(self) -> tuple[ScriptedReply, ...]:
        """The whole script, tool call ids filled in."""
        return self._replies

    @property
    def remaining(self) -> tuple[ScriptedReply, ...]:
        """The replies not used yet, in order."""
        return self._replies[self._next :]

    async def aclose(self) -> None:
        """Nothing to release (unused replies are :meth:`assert_complete`'s business)."""

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer ``request`` with the next reply, after ``latency`` seconds if set."""
        self.calls.append(request)
        index = self._next
        if index >= len(self._replies):
            raise ScriptExhaustedError(
                f"call {len(self.calls)} (stage {request.stage!r}) came after all "
                f"{len(self._replies)} replies were used{self._history()}",
                index=index,
                file=self._file,
                called=request.stage,
            )
        reply = self._replies[index]
        if reply.stage != request.stage:
            raise StageMismatchError(
                f"the script expects stage {reply.stage!r} but call {len(self.calls)} is for "
                f"stage {request.stage!r}{self._history()}",
                index=index,
                file=self._file,
                line=reply.line,
                expected=reply.stage,
                called=request.stage,
            )
        self._next += 1
        if self._latency:
            await asyncio.sleep(self._latency)
        return _response(reply, self._texts[index], self._name)

    def skip(self, count: int) -> None:
        """Count the next ``count`` replies as used, without a call or a stage check.

        For a job resumed in a new process: the replies its earlier calls consumed are
        skipped, so the script goes on where the job stopped.
        """
        if count < 0:
            raise ValueError(f"cannot skip a negative number of replies ({count})")
        if count > len(self.remaining):
            raise ScriptExhaustedError(
                f"cannot skip {count} replies: {len(self.remaining)} of "
                f"{len(self._replies)} are left",
                index=len(self._replies),
                file=self._file,
            )
        self._next += count

    def assert_complete(self) -> None:
        """Raise :class:`IncompleteScriptError` unless every reply has been used."""
        if self._next >= len(self._replies):
            return
        left = list(enumerate(self._replies))[self._next :]
        unused = [(i, reply.stage) for i, reply in left]
        listed = ", ".join(
            f"replies[{i}] ({reply.stage}{f', line {reply.line}' if reply.line else ''})"
            for i, reply in left
        )
        raise IncompleteScriptError(
            f"{len(unused)} of {len(self._replies)} replies not used: {listed}",
            file=self._file,
            unused=unused,
        )

    def _history(self) -> str:
        stages = [call.stage for call in self.calls[:-1]]
        if not stages:
            return ""
        shown = ", ".join(stages[-8:])
        return f" (earlier calls: {'..., ' if len(stages) > 8 else ''}{shown})"

    def __repr__(self) -> str:
        return f"<ScriptedModel {self._name} {self._next}/{len(self._replies)} used>"


def _as_reply(
    item: ScriptedReply | Mapping[str, Any], index: int, file: str | None
) -> ScriptedReply:
    if isinstance(item, ScriptedReply):
        return item
    return ScriptedReply.from_mapping(item, index=index, file=file)


def _numbered(replies: Iterable[ScriptedReply]) -> list[ScriptedReply]:
    """Fill in tool call ids (``call_1``, ``call_2``, ... across the script) and raw text."""
    out: list[ScriptedReply] = []
    count = 0
    for reply in replies:
        calls: list[ToolCall] = []
        for call in reply.tool_calls:
            count += 1
            raw = call.raw_arguments
            if not raw and call.arguments is not None:
                raw = json.dumps(call.arguments)
            calls.append(replace(call, raw_arguments=raw, id=call.id or f"call_{count}"))
        out.append(replace(reply, tool_calls=tuple(calls)) if calls else reply)
    return out


def _text(reply: ScriptedReply) -> str:
    """The text a model would send for ``reply``: its JSON written out, or its text."""
    return json.dumps(reply.json) if reply.json is not None else reply.text or ""


def _response(reply: ScriptedReply, text: str, model: str) -> ChatResponse:
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    return ChatResponse(
        text=text, tool_calls=reply.tool_calls, usage=reply.usage, model=model, finish_reason=finish
    )


# ---------------------------------------------------------------- reading script files


def _parse(text: str, fmt: ScriptFormat, file: str | None) -> tuple[Any, Node | None]:
    """The script's data and, when ruamel can read it, its node tree (for line numbers)."""
    text = text.removeprefix("\ufeff")
    yaml = YAML(typ="safe", pure=True)
    if fmt == "json":
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
        except ValueError as exc:
            line = exc.lineno if isinstance(exc, json.JSONDecodeError) else 0
            raise ScriptFormatError(f"invalid JSON: {exc}", file=file, line=line) from None
        try:
            # JSON is YAML's flow style, so ruamel's composer gives JSON lines too; a text
            # it cannot compose only costs the line numbers.
            root = yaml.compose(text)
        except Exception:
            root = None
        return data, root
    try:
        root = yaml.compose(text)
        data = yaml.constructor.construct_document(root) if root is not None else None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        problem = exc.problem or exc.context or "cannot parse"
        raise ScriptFormatError(f"invalid YAML: {problem}", file=file, line=line) from None
    except Exception as exc:
        # ruamel raises more than MarkedYAMLError on odd input (deep nesting, huge numbers).
        raise ScriptFormatError(f"invalid YAML: {exc!r}", file=file) from None
    return data, root


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _reply_list(data: Any, root: Node | None, file: str | None) -> tuple[list[Any], dict[int, int]]:
    """The list of replies (the document, or its ``replies``) and each reply's line."""
    seq = root
    if isinstance(data, dict):
        extra = sorted(str(key) for key in data if key != "replies")
        if extra or "replies" not in data:
            found = f"unknown key(s) {', '.join(extra)}" if extra else "no 'replies'"
            raise ScriptFormatError(
                f"a script is a list of replies or {{replies: [...]}}; found {found}", file=file
            )
        data = data["replies"]
        seq = _mapping_value(root, "replies")
    if not isinstance(data, list):
        raise ScriptFormatError(
            f"a script is a list of replies or {{replies: [...]}}, not {_kind(data)}", file=file
        )
    lines: dict[int, int] = {}
    if isinstance(seq, SequenceNode) and len(seq.value) == len(data):
        lines = {i: node.start_mark.line + 1 for i, node in enumerate(seq.value)}
    return data, lines


def _mapping_value(node: Node | None, key: str) -> Node | None:
    if isinstance(node, MappingNode):
        for key_node, value_node in node.value:
            if key_node.value == key:
                return value_node  # type: ignore[no-any-return]
    return None
