"""The assistant's first draft: one model call (through the core ``ChatModel`` protocol)
turns the author's description into every section, then each section goes into the draft
as an answer would (checked by the loader, refused with its errors when it does not
load). The interview then asks only for what is still missing.

The model's reply is untrusted text: it is parsed as JSON, every value is type-checked
before use, conditions are compiled before they are written, and nothing it says is
run or fetched.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

from skillwire.builder import edits
from skillwire.builder.condition_view import view_condition
from skillwire.builder.interview import Session
from skillwire.builder.phases_content import slug
from skillwire.builder.phases_tools import INPUT_TYPES
from skillwire.builder.tool_effects import PolicyChoice
from skillwire.builder.yaml_text import plain
from skillwire.core.chat import ChatMessage, ChatModel, ChatRequest
from skillwire.core.errors import ModelError

__all__ = ["DRAFT_INSTRUCTIONS", "apply_model_draft", "ask_model_for_draft", "draft_with_model"]

DRAFT_INSTRUCTIONS = """You help a person write a skill for an agent runtime. Reply with one \
JSON object and nothing else, with these keys (leave out what the description does not say):
"problem": {"statement": one sentence, "goals": [sentences]},
"scenarios": [{"title": short, "description": a sentence}],
"intents": [{"id": "intent_<words>", "description": a sentence, "examples": [3 to 6 things \
a user would write]}],
"tools": [{"name": snake_case, "description": a sentence, "inputs": [{"name": snake_case, \
"type": "string" | "number" | "integer" | "boolean", "required": true | false}]}] (only \
tools the description needs that are not in EXISTING TOOLS),
"policies": [{"tool": name, "choice": "free" | "approval" | "approval_when" | "never", \
"when": a condition over the tool's inputs such as "amount > 500" (approval_when only), \
"approver": a role}] (reads run freely; writes, payments and deletions need approval),
"workflows": [{"name": text, "steps": [tool names in order]}],
"required_inputs": [{"path": field name, "prompt": the question}],
"output_contract": [field names every final answer must carry],
"persona": {"name": role name, "persona": a sentence, "tone": "warm" | "neutral" | \
"formal" | "concise"},
"out_of_domain": the reply to a message the skill does not handle."""


async def ask_model_for_draft(
    model: ChatModel, description: str, existing_tools: Iterable[Mapping[str, Any]]
) -> dict[str, Any] | str:
    """The model's draft as a mapping, or a sentence saying why there is none."""
    tools = [
        {"name": t.get("name"), "description": t.get("description", "")} for t in existing_tools
    ]
    request = ChatRequest(
        stage="planner",
        messages=(
            ChatMessage("system", DRAFT_INSTRUCTIONS),
            ChatMessage(
                "user",
                f"DESCRIPTION:\n{description}\n\nEXISTING TOOLS:\n{json.dumps(tools)}",
            ),
        ),
        response_format="json",
        temperature=0.2,
    )
    try:
        response = await model.complete(request)
    except ModelError as exc:
        return f"the model could not draft: {exc}"
    try:
        data = json.loads(response.text)
    except ValueError:
        return "the model's draft is not JSON: asking instead"
    if not isinstance(data, dict):
        return "the model's draft is not a JSON object: asking instead"
    return data


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _texts(value: Any) -> list[str]:
    return [t for t in (_text(v) for v in value) if t] if isinstance(value, list) else []


def _items(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _inputs(value: Any) -> list[dict[str, Any]]:
    found = []
    for item in _items(value):
        name = _text(item.get("name"))
        kind = item.get("type") if item.get("type") in INPUT_TYPES else "string"
        if name.isidentifier():
            found.append(
                {"name": name, "type": kind, "required": item.get("required") is not False}
            )
    return found


def _tool_names(session: Session) -> set[str]:
    data = plain(session.draft.data)
    return {str(t.get("name")) for t in data.get("tools") or [] if isinstance(t, dict)}


def apply_model_draft(session: Session, data: Mapping[str, Any]) -> None:
    """Put each section of the model's draft into the session's draft, checked."""
    problem = _mapping(data.get("problem"))
    statement = _text(problem.get("statement"))
    if statement:
        goals = _texts(problem.get("goals"))
        session.apply(partial(edits.set_problem, statement=statement, goals=goals), "problem")
    for number, item in enumerate(_items(data.get("scenarios")), start=1):
        text = _text(item.get("description")) or _text(item.get("title"))
        if text:
            title = _text(item.get("title")) or " ".join(text.split()[:6])
            change = partial(
                edits.add_scenario, scenario_id=f"scenario_{number}", title=title, description=text
            )
            session.apply(change, f"scenario {number}")
    for item in _items(data.get("intents")):
        intent_id = slug(_text(item.get("id")), 8)
        examples = _texts(item.get("examples"))
        if intent_id and examples:
            change = partial(
                edits.add_intent,
                intent_id=intent_id,
                description=_text(item.get("description")) or intent_id,
                examples=examples,
            )
            session.apply(change, f"intent {intent_id}")
    _apply_tools(session, data)
    _apply_policies(session, data)
    for item in _items(data.get("workflows")):
        steps = _texts(item.get("steps"))
        if len(steps) >= 2:
            name = _text(item.get("name")) or " then ".join(steps)
            change = partial(edits.add_workflow, name=name, steps=steps, required=True)
            session.apply(change, f"workflow {name}")
    for item in _items(data.get("required_inputs")):
        path = _text(item.get("path"))
        if path and all(p.isidentifier() for p in path.split(".")):
            entry = {"path": path, "prompt": _text(item.get("prompt")) or f"What is your {path}?"}
            session.apply(partial(edits.add_required_input, entry=entry), f"input {path}")
    fields = [f for f in _texts(data.get("output_contract")) if f.isidentifier()]
    if fields:
        session.apply(partial(edits.set_output_contract, fields=fields), "output contract")
    persona = _mapping(data.get("persona"))
    if _text(persona.get("persona")):
        change = partial(
            edits.set_persona,
            name=_text(persona.get("name")),
            persona=_text(persona.get("persona")),
            tone=_text(persona.get("tone")),
        )
        session.apply(change, "persona")
    message = _text(data.get("out_of_domain"))
    if message:
        change = partial(edits.set_out_of_domain, action="redirect", message=message)
        session.apply(change, "out of domain")


def _apply_tools(session: Session, data: Mapping[str, Any]) -> None:
    known = _tool_names(session)
    for item in _items(data.get("tools")):
        name = slug(_text(item.get("name")), 8)
        if not name or name in known:
            continue
        entry = {
            "name": name,
            "description": _text(item.get("description")) or name,
            "inputs": _inputs(item.get("inputs")),
            "executor": {"type": "simulate", "result": {"status": "simulated"}},
        }
        session.apply(partial(edits.add_tool, tool=entry), f"tool {name} (simulated)")


def _apply_policies(session: Session, data: Mapping[str, Any]) -> None:
    known = _tool_names(session)
    for item in _items(data.get("policies")):
        tool, choice = _text(item.get("tool")), _text(item.get("choice"))
        if tool not in known or choice not in {c.value for c in PolicyChoice}:
            continue
        approver = slug(_text(item.get("approver")), 3) or "supervisor"
        if choice == PolicyChoice.NEVER:
            session.apply(partial(edits.forbid_tool, name=tool), f"{tool} never runs")
        elif choice == PolicyChoice.APPROVAL:
            change = partial(edits.add_approval, tool=tool, when="always", approver=approver)
            session.apply(change, f"{tool} needs approval")
        elif choice == PolicyChoice.APPROVAL_WHEN:
            when = _text(item.get("when"))
            view = view_condition(when) if when else None
            if view is None or not view.ok:
                session.say(f"the drafted condition of {tool} does not compile: asking", "error")
                continue
            session.say(str(view), "note")
            change = partial(edits.add_approval, tool=tool, when=when, approver=approver)
            session.apply(change, f"{tool} needs approval when {when}")


async def draft_with_model(
    session: Session, model: ChatModel, existing_tools: Iterable[Mapping[str, Any]]
) -> bool:
    """Ask ``model`` for a draft of every section and apply it; True when it drafted
    (the interview then asks only for what is missing)."""
    data = await ask_model_for_draft(model, session.description, existing_tools)
    if isinstance(data, str):
        session.say(data, "error")
        return False
    session.say("the assistant drafted from your description:", "note")
    apply_model_draft(session, data)
    session.only_missing = True
    return True
