"""The offline planner: follows the job's sub-goals and the tools' schemas.

It reads the job's state as the engine gives it in structure (``ChatRequest.data``: the
prompt a language model reads holds no copy of the tool results), picks the next tool
(the intent's own tools, else the steps of the intent's workflow, else the tool whose
description best matches the request; in a job of several intents, then the steps of
the other workflows that apply to it and the tools the other intents list, in order),
fills its arguments from inputs, entities and earlier results by name (else from the
user's message, as entities are found), and leaves a missing argument missing so that
the gate asks the user for it. When every step has run it answers (a ``final_answer``
call, which the engine reads as the answer) with the output contract's fields taken
from tool results. A denied, blocked or failed call ends the plan with an answer
that says so.
"""

from __future__ import annotations

from typing import Any

from skillwire.core.chat import ChatMessage, ChatRequest, ToolSpec
from skillwire.models.offline.entities import extract_entities
from skillwire.models.offline.similarity import NgramIndex

__all__ = ["next_step"]

_STATUS_FIELDS = {"status", "state", "outcome", "result"}
_FIELD_KEYS = ("type", "pattern", "enum", "examples")
_FIELD_VALUE = (str, list)
_ENDINGS = {"DENIED": "denied", "BLOCKED": "blocked", "ERROR": "failed"}


def _known(state: dict[str, Any]) -> dict[str, Any]:
    """Values by name: earlier results and their arguments, then entities, then inputs."""
    known: dict[str, Any] = {}
    for run in state.get("results") or []:
        if not run.get("ok", True):
            continue
        known.update({k: v for k, v in (run.get("args") or {}).items() if v is not None})
        result = run.get("result")
        if isinstance(result, dict):
            known.update({k: v for k, v in result.items() if v is not None})
    known.update(state.get("entities") or {})
    known.update(state.get("inputs") or {})
    return known


def _plan(state: dict[str, Any], tools: dict[str, ToolSpec], request_text: str) -> list[str]:
    """The tools to run, in order: the first intent's (:func:`_plan_one`), then, in a
    job of several intents, the steps of every other workflow that applies to it, then
    the tools the other intents list."""
    steps = _plan_one(state, tools, request_text)
    if len(state.get("intents") or ()) < 2:
        return steps
    names = state.get("model_tool_names") or {}
    by_full = {full: model for model, full in names.items()}
    for goal in state.get("subgoals") or []:
        tool = by_full.get(goal.get("tool") or "", goal.get("tool"))
        if tool in tools and tool not in steps:
            steps.append(tool)
    for tool in state.get("other_intent_tools") or []:
        if tool in tools and tool not in steps:
            steps.append(tool)
    return steps


def _plan_one(state: dict[str, Any], tools: dict[str, ToolSpec], request_text: str) -> list[str]:
    scoped = [t for t in state.get("intent_tools") or [] if t in tools]
    if scoped:
        return scoped
    names = state.get("model_tool_names") or {}
    by_full = {full: model for model, full in names.items()}
    goals = state.get("subgoals") or []
    wanted = state.get("intent_workflow")
    workflows = [g.get("from_workflow") for g in goals if g.get("tool")]
    chosen = wanted if wanted in workflows else (workflows[0] if workflows else None)
    if chosen is not None:
        steps = [
            by_full.get(g["tool"], g["tool"])
            for g in goals
            if g.get("from_workflow") == chosen and g.get("tool")
        ]
        return [s for s in steps if s in tools]
    candidates = [t for t in tools.values() if t.name != "final_answer"]
    if not candidates:
        return []
    index = NgramIndex((t.name, f"{t.name.replace('_', ' ')} {t.description}") for t in candidates)
    scores = index.scores(f"{request_text} {state.get('intent_description', '')}")
    best = max(scores.items(), key=lambda kv: kv[1], default=(None, 0.0))
    return [best[0]] if best[0] else []


def _arguments(spec: ToolSpec, known: dict[str, Any], message: str) -> dict[str, Any]:
    """Arguments by name from what is known, else found in the user's message the way
    entities are (an argument in neither stays missing, for the gate to ask)."""
    props = (spec.parameters or {}).get("properties") or {}
    args = {name: known[name] for name in props if name in known}
    if len(args) < len(props) and message:
        fields = [
            {"name": name}
            | {k: v for k, v in prop.items() if k in _FIELD_KEYS and isinstance(v, _FIELD_VALUE)}
            for name, prop in props.items()
            if isinstance(prop, dict)
        ]
        found = extract_entities(message, fields)
        args.update({k: v for k, v in found.items() if k not in args})
    return args


def _final(
    state: dict[str, Any], known: dict[str, Any], ending: str | None, detail: str
) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name in state.get("required_fields") or []:
        value = known.get(name)
        if value in (None, "") and ending is not None:
            value = ending if name in _STATUS_FIELDS else f"not available: the request was {ending}"
        fields[name] = value
    parts = [
        f"{name.replace('_', ' ').capitalize()}: {str(value).rstrip('.')}."
        for name, value in fields.items()
        if value not in (None, "")
    ]
    if ending is not None:
        answer = f"I could not complete this request: {detail}"
        if parts:
            answer += " " + " ".join(parts)
    else:
        answer = " ".join(parts) or "Done."
    return {"answer": answer, "fields": fields}


def _why(content: str, ending: str) -> str:
    """A user-facing reason from the engine's message about a call that did not run."""
    head = content.split(":", 1)[0]
    if ending == "denied":
        return f"it was {head.lower()}." if head.startswith("DENIED by") else "it was denied."
    if ending == "blocked":
        return "the skill's rules do not allow it."
    return "a tool failed (" + content.removeprefix("ERROR:").strip()[:120] + ")."


def next_step(request: ChatRequest, state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The next call: a tool name (as the model sees it) and its arguments."""
    tools = {t.name: t for t in request.tools}
    known = _known(state)
    convo = [m for m in request.messages if m.role != "system"]
    last: ChatMessage | None = convo[-1] if convo else None
    if last is not None and last.role == "tool":
        for word, ending in _ENDINGS.items():
            if last.content.startswith(word):
                return "final_answer", _final(state, known, ending, _why(last.content, ending))
    first_user = next((m.content for m in convo if m.role == "user"), "")
    done = {run["tool"] for run in state.get("results") or [] if run.get("ok", True)}
    names = state.get("model_tool_names") or {}
    for tool in _plan(state, tools, first_user):
        if names.get(tool, tool) not in done:
            return tool, _arguments(tools[tool], known, first_user)
    return "final_answer", _final(state, known, None, "")
