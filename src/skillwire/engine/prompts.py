"""The requests each stage sends to a model.

Every planner request carries a ``JOB STATE`` block (JSON) with the sub-goals, entities,
inputs and tool results, so that any backend, the offline one included, can plan from
structure rather than prose. The finalization gate's and the polisher's prompts follow
spec 000 sections 4.4 and 4.5.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from skillwire.core.chat import ChatMessage, ChatRequest, ToolSpec
from skillwire.core.proposal import FINAL_ANSWER_TOOL
from skillwire.engine.adapter import model_tool_name
from skillwire.policy import CompiledPolicy, RuleKind
from skillwire.policy.workflows import SubGoal
from skillwire.skills import semantic_escalations
from skillwire.skills.model import Skill

__all__ = [
    "JOB_STATE_MARKER",
    "final_answer_spec",
    "gate_request",
    "intent_request",
    "intent_system",
    "planner_request",
    "planner_system",
    "polisher_request",
    "request_chars",
    "tool_specs",
]

JOB_STATE_MARKER = "JOB STATE (JSON):"


_JSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


_FALLBACK = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)


def _json(value: Any) -> str:
    """Compact JSON, keys sorted, anything else as its ``str`` (a prompt, not storage).

    orjson, which is several times faster; the standard library for what it refuses
    (an integer past 64 bits, mixed key types to sort)."""
    try:
        return orjson.dumps(value, default=str, option=_JSON_OPTIONS).decode()
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        return _FALLBACK.encode(value)


_TOOLS_CHARS: dict[int, tuple[tuple[ToolSpec, ...], int]] = {}
"""The characters of each tuple of tool specs measured (a skill's tuple is shared by its
jobs: measured once; the tuple is kept so that its id is not reused)."""


def request_chars(request: ChatRequest) -> int:
    """The characters a request sends a model: every message's text, the name and
    arguments of every tool call in it, and every tool offered (name, description and
    JSON Schema, as compact JSON). What a backend adds around them (roles, its own
    framing) is not counted."""
    chars = 0
    for message in request.messages:
        chars += len(message.content)
        for call in message.tool_calls:
            chars += len(call.name) + len(call.raw_arguments or _json(call.arguments))
    tools = request.tools
    if tools:
        known = _TOOLS_CHARS.get(id(tools))
        if known is None or known[0] is not tools:
            size = sum(len(t.name) + len(t.description) + len(_json(t.parameters)) for t in tools)
            if len(_TOOLS_CHARS) > 256:
                _TOOLS_CHARS.clear()
            known = _TOOLS_CHARS[id(tools)] = (tools, size)
        chars += known[1]
    return chars


def _full_name(skill: Skill, name: str) -> str:
    tool = skill.tool(name)
    return tool.name if tool is not None else name


def intent_request(skill: Skill, message: str, *, system: str | None = None) -> ChatRequest:
    """Classify ``message`` into one of the skill's intents and extract entities.

    ``system`` is :func:`intent_system` of the skill, when the caller keeps it (the
    engine's compiled skill does); otherwise it is built for this request."""
    return ChatRequest(
        "intent",
        (
            ChatMessage("system", intent_system(skill) if system is None else system),
            ChatMessage("user", message),
        ),
        response_format="json",
        temperature=0.0,
    )


def intent_system(skill: Skill) -> str:
    """The intent stage's instructions: the skill's intent catalogue (it depends only
    on the skill)."""
    catalog = [
        {
            "id": i.id,
            "description": i.description,
            "examples": i.examples,
            "entities": [
                e.model_dump(
                    include={"name", "type", "description", "enum", "pattern", "examples"},
                    exclude_none=True,
                )
                for e in i.entities
            ],
        }
        for i in skill.intents.supported
    ]
    limits = skill.intents.thresholds
    thresholds = limits.model_dump(exclude_none=True) if limits else {}
    return (
        "You classify a customer's message into one of the intents below and extract "
        'entities. Reply with a JSON object {"intent": <intent id or null>, '
        '"entities": {<name>: <value>}, "confidence": <0..1>}. Use null when the '
        "message matches no intent. Never invent entity values.\n"
        f"{JOB_STATE_MARKER}\n{_json({'intents': catalog, 'thresholds': thresholds})}"
    )


def final_answer_spec(skill: Skill) -> ToolSpec:
    """The built-in ``final_answer`` tool, with the output contract's fields."""
    required = skill.output_contract.required_fields
    fields_schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: {} for name in required},
    }
    if required:
        fields_schema["required"] = list(required)
    return ToolSpec(
        FINAL_ANSWER_TOOL,
        "Answer the user. `answer` is the reply; `fields` holds the output contract's "
        "fields, filled from tool results.",
        {
            "type": "object",
            "properties": {"answer": {"type": "string"}, "fields": fields_schema},
            "required": ["answer", "fields"],
        },
    )


def tool_specs(skill: Skill, policy: CompiledPolicy) -> tuple[ToolSpec, ...]:
    """Tools offered to the planner: every tool not denied outright, and final_answer."""
    denied = {
        name
        for r in policy.rules
        if r.kind is RuleKind.TOOL_DENY and r.condition is None
        for name in r.tools
    }
    specs = [
        ToolSpec(model_tool_name(t.name), t.description or t.name, t.input_schema())
        for t in skill.tools
        if t.name not in denied
    ]
    return (*specs, final_answer_spec(skill))


def planner_request(
    skill: Skill,
    instructions: str,
    subgoals: list[SubGoal] | list[dict[str, Any]],
    state: dict[str, Any],
    conversation: list[ChatMessage],
    tools: tuple[ToolSpec, ...],
    temperature: float | None,
) -> ChatRequest:
    """One planner step: ``instructions`` (:func:`planner_system`), the job state, and
    the conversation so far."""
    intent = next((i for i in skill.intents.supported if i.id == state.get("intent")), None)
    job_state = {
        **state,
        "subgoals": [g if isinstance(g, dict) else g.to_dict() for g in subgoals],
        "required_fields": skill.output_contract.required_fields,
        "intent_tools": [model_tool_name(_full_name(skill, n)) for n in (intent.tools or [])]
        if intent
        else [],
        "intent_workflow": _intent_workflow(skill, intent.id, intent.maps_to_workflow)
        if intent
        else None,
        "intent_description": intent.description if intent else "",
    }
    messages = (
        ChatMessage("system", instructions),
        ChatMessage("system", f"{JOB_STATE_MARKER}\n{_json(job_state)}"),
        *conversation,
    )
    return ChatRequest("planner", messages, tools, temperature=temperature)


def _intent_workflow(skill: Skill, intent: str, mapped: str | None) -> str | None:
    """The workflow that serves ``intent``: the one its ``maps_to_workflow`` names, else
    the first that lists it in ``intents`` (by the name sub-goals carry)."""
    for wf in skill.policy.workflows:
        if mapped is not None and mapped in (wf.key(), wf.id):
            return wf.key()
    if mapped is not None:
        return mapped
    return next((wf.key() for wf in skill.policy.workflows if intent in (wf.intents or ())), None)


def planner_system(skill: Skill, policy: CompiledPolicy) -> str:
    """The planner's instructions: role, problem, the rules handed to it as text, how
    to work (they depend only on the skill and its compiled policy)."""
    parts = [f"You are {skill.role.name or 'an assistant'}."]
    if skill.problem.statement:
        parts.append(f"Your job: {skill.problem.statement}")
    if skill.prompt:
        parts.append(skill.prompt.strip())
    if policy.planner_text:
        parts.append(policy.planner_text)
    if skill.role.limitations:
        parts.append("LIMITATIONS:\n" + "\n".join(f"- {x}" for x in skill.role.limitations))
    parts.append(
        "Work through the sub-goals in order. Call exactly one tool per step; the platform "
        "checks every call against the skill's rules and asks the user for anything "
        "missing: never guess a value. When the goal is met, call "
        f"{FINAL_ANSWER_TOOL} with the answer and the fields "
        f"{', '.join(skill.output_contract.required_fields) or '(none)'} taken from tool "
        "results."
    )
    if skill.output_contract.format_hint:
        parts.append(f"Answer format: {skill.output_contract.format_hint}")
    return "\n\n".join(parts)


def gate_request(skill: Skill, draft: str, fields: dict[str, Any]) -> ChatRequest:
    """Spec 000 section 4.4: goal coverage and guardrails, judged on the draft."""
    guardrails = [
        f"NEVER: {r if isinstance(r, str) else r.rule}" for r in skill.policy.guardrails.never
    ]
    guardrails += [
        f"ALWAYS: {r if isinstance(r, str) else r.rule}" for r in skill.policy.guardrails.always
    ]
    required = skill.output_contract.required_fields
    triggers = semantic_escalations(skill)
    escalate = (
        "ESCALATE WHEN (if one of these holds, fail with suggested_action ESCALATE):\n"
        + "\n".join(f"- {t}" for t in triggers)
        + "\n\n"
        if triggers
        else ""
    )
    prompt = (
        "You are a Finalization Gate. Validate this response before it goes to the user.\n\n"
        f"GOAL:\n{skill.problem.statement}\n\n"
        "GUARDRAILS TO CHECK:\n" + "\n".join(f"- {g}" for g in guardrails) + "\n\n"
        f"{escalate}"
        "REQUIRED FIELDS IN RESPONSE:\n" + "\n".join(f"- {f}" for f in required) + "\n\n"
        f"DRAFT RESPONSE:\n{draft}\n\nFIELDS:\n{_json(fields)}\n\n"
        "VALIDATE and return JSON:\n"
        '{"passed": true/false, "score": 0.0-1.0, "reasons": [{"code": '
        '"GOAL_NOT_MET|GUARDRAIL_VIOLATED|MISSING_REQUIRED_FIELD|OUTPUT_INCOMPLETE|'
        'TONE_MISMATCH", "detail": "..."}], "missing_fields": [], "suggested_action": '
        '"TOOL_CALL|CLARIFY_USER|REWRITE|ESCALATE"}\n\n'
        "Be strict but fair. Only fail if there's a real problem."
    )
    return ChatRequest(
        "gate", (ChatMessage("user", prompt),), response_format="json", temperature=0.1
    )


def polisher_request(skill: Skill, draft: str) -> ChatRequest:
    """Spec 000 section 4.5: persona only; the content must not change."""
    persona = skill.persona_text() or "helpful assistant"
    style = skill.role.communication_style
    tone = f"\nTONE: {style.tone}" if style and style.tone else ""
    prompt = (
        f"You are a reply formatter.\n\nPERSONA: {persona}{tone}\n\n"
        "FORMAT this response to be user-friendly. Apply the persona tone.\n"
        "Do NOT validate or change the content, only format it.\n\n"
        f"RESPONSE TO FORMAT:\n{draft}\n\nReturn the formatted response text only."
    )
    return ChatRequest("polisher", (ChatMessage("user", prompt),), temperature=0.3)
