"""The model adapter (spec 002): a model's reply becomes a proposal, or a retry prompt.

Its only two jobs: parse a reply into a :class:`~skillwire.core.proposal.Proposal`,
and format the errors of an unusable reply as a retry prompt. No domain logic. The
final answer is the planner's last message, a JSON object ``{"answer", "fields"}`` (no
tool to describe for it); a ``final_answer`` tool call is read as one too.
Tool names are shown to models with dots replaced by ``__`` (some APIs refuse dots).
"""

from __future__ import annotations

import json
from typing import Any

from skillwire.core.chat import ChatResponse, ToolCall
from skillwire.core.errors import ParseFailure
from skillwire.core.plainjson import mended_text as readable
from skillwire.core.proposal import FINAL_ANSWER_TOOL, FinalAnswer, Proposal, ToolProposal
from skillwire.policy.gate_input import not_plain

__all__ = [
    "ModelAdapter",
    "model_tool_name",
    "parse_json_object",
    "readable",
    "tool_name_from_model",
]


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a reply (a ```json fence allowed), or None.

    An object that is not plain JSON (nested deeper than the gate reads, a lone
    surrogate, a number that is not finite) is no object: a reply is untrusted input,
    and such a value would fail later, where it could not be told to the model.
    """
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            return None
        try:
            value = json.loads(body[start : end + 1])
        except (ValueError, RecursionError):
            return None
    if not isinstance(value, dict) or not_plain(value, "reply") is not None:
        return None
    return value


def model_tool_name(name: str) -> str:
    """The name a model sees for a tool."""
    return name.replace(".", "__")


def tool_name_from_model(name: str) -> str:
    """The tool name a model's call means."""
    return name.replace("__", ".")


class ModelAdapter:
    """Parses planner replies; formats retry prompts."""

    def parse(self, response: ChatResponse) -> tuple[Proposal, ToolCall | None]:
        """The proposal in ``response`` and the tool call it came from (None for an
        answer given as the reply's text: a JSON object with ``answer`` and ``fields``,
        the planner's last message; a ``final_answer`` tool call is read too).

        Raises :class:`ParseFailure` when the reply calls no tool, calls several, or
        gives arguments that are not a JSON object or not plain JSON (nested deeper
        than the gate reads, a lone surrogate, a number that is not finite).
        """
        calls = response.tool_calls
        if not calls:
            text = response.text.strip()
            if not text:
                raise ParseFailure(["the reply was empty"])
            answer = parse_json_object(text)
            if answer is not None and "answer" in answer:  # the planner's last message
                return self._final(answer), None
            raise ParseFailure(
                [
                    "the reply called no tool: call a tool, or answer with only JSON "
                    '{"answer": <reply>, "fields": {...}}'
                ]
            )
        if len(calls) > 1:
            names = ", ".join(c.name for c in calls)
            raise ParseFailure(
                [f"the reply called {len(calls)} tools ({names}): call exactly one tool per step"]
            )
        call = calls[0]
        if call.arguments is None:
            raw = call.raw_arguments[:200]
            raise ParseFailure(
                [f"the arguments of {readable(call.name)} are not a JSON object: {raw!r}"]
            )
        problem = not_plain(call.arguments, "arguments")
        if problem is not None:
            where, what = problem
            raise ParseFailure([f"the {where} of {readable(call.name)[:60]} are unusable: {what}"])
        name = tool_name_from_model(call.name)
        if name == FINAL_ANSWER_TOOL:
            return self._final(call.arguments), call
        reasoning = readable(response.text)
        return ToolProposal(name, dict(call.arguments), call.id, reasoning=reasoning), call

    def _final(self, args: dict[str, Any]) -> FinalAnswer:
        errors: list[str] = []
        answer = args.get("answer")
        fields = args.get("fields", {})
        if not isinstance(answer, str) or not answer.strip():
            errors.append(f"{FINAL_ANSWER_TOOL}.answer must be a non-empty string")
        if not isinstance(fields, dict):
            errors.append(f"{FINAL_ANSWER_TOOL}.fields must be an object")
        if errors:
            raise ParseFailure(errors)
        return FinalAnswer(str(answer), dict(fields))

    def retry_prompt(self, errors: list[str]) -> str:
        """The message that asks the model to try again, listing what was wrong."""
        lines = "\n".join(f"- {e}" for e in errors)
        return f"Your last reply could not be used:\n{lines}\nReply again with one tool call."
