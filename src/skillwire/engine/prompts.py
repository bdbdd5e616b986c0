"""The requests each stage sends to a model, as few characters as keep every rule.

What a model is sent is prose, and only what it cannot do without (issue 21): the
intent stage gets one line per intent; the planner its instructions once, a short
``STATE`` line (intent, entities, inputs, the steps and which are done: never a second
copy of a tool result, which the conversation already holds) and the tools it may call;
it answers in its last message, a JSON object ``{"answer", "fields"}``, with no
``final_answer`` tool to describe. The finalization gate is asked only what no check
can settle mechanically: whether the reply meets the goal and keeps the rules the skill
states as text (the output contract's fields, the rules compiled into the pre-tool gate
and the claims of actions are checked mechanically, and are not sent). The polisher's
prompt follows spec 000 section 4.5.

Each request also carries the same content as structure (``ChatRequest.data``: the
intent catalogue with its examples, the job's state with its tool results), which a
backend that reads structure (the offline model) uses and a language model is never
sent; :func:`request_chars` counts what is sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from skillwire.core.chat import ChatMessage, ChatRequest, ToolSpec
from skillwire.core.proposal import FINAL_ANSWER_TOOL
from skillwire.engine.adapter import model_tool_name
from skillwire.policy import CompiledPolicy, RuleKind, compile_policy
from skillwire.policy.workflows import SubGoal
from skillwire.skills import semantic_escalations
from skillwire.skills.model import Skill

__all__ = [
    "JOB_STATE_MARKER",
    "PlannerIntent",
    "final_answer_spec",
    "gate_head",
    "gate_request",
    "intent_data",
    "intent_request",
    "intent_system",
    "planner_intents",
    "planner_request",
    "planner_system",
    "polisher_request",
    "request_chars",
    "tool_specs",
    "unavailable_line",
]

JOB_STATE_MARKER = "STATE:"


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


def intent_request(
    skill: Skill,
    message: str,
    *,
    system: str | None = None,
    data: dict[str, Any] | None = None,
) -> ChatRequest:
    """Classify ``message`` into the skill's intents (one or more) and extract entities.

    ``system`` and ``data`` are :func:`intent_system` and :func:`intent_data` of the
    skill, when the caller keeps them (the engine's compiled skill does); otherwise they
    are built for this request."""
    return ChatRequest(
        "intent",
        (
            ChatMessage("system", intent_system(skill) if system is None else system),
            ChatMessage("user", message),
        ),
        response_format="json",
        temperature=0.0,
        data=intent_data(skill) if data is None else data,
    )


def intent_system(skill: Skill) -> str:
    """The intent stage's instructions: one line per intent (its id, its description
    or else its first example, and its entities with their type, choices and pattern)."""
    lines = [
        "Which intents below are in the message ([]: none)? JSON: "
        '{"intents":[id],"entities":{name:value},"confidence":0..1}; only values it '
        "states."
    ]
    for intent in skill.intents.supported:
        about = intent.description or (intent.examples[0] if intent.examples else "")
        line = f"- {intent.id}: {about}".rstrip(": ")
        entities = [_entity_text(e) for e in intent.entities]
        if entities:
            line += f" [{', '.join(entities)}]"
        lines.append(line)
    return "\n".join(lines)


_SHAPES = {
    "money": "money as a number",
    "date": "date YYYY-MM-DD",
    "date_range": "{start,end} dates YYYY-MM-DD",
    "list": "list",
}
"""How the intent prompt says an entity type that is not JSON's (its value's shape)."""


def _entity_text(entity: Any) -> str:
    """``name: type, one of a|b (description)``, the parts it has (a ``pattern`` is
    checked when the value is taken, and not sent)."""
    text = f"{entity.name}: {_SHAPES.get(entity.type, entity.type)}"
    currency = getattr(entity, "currency", None)
    if currency:
        text += " in " + (currency if isinstance(currency, str) else "|".join(currency))
    if entity.enum:
        text += ", one of " + "|".join(str(v) for v in entity.enum)
    return f"{text} ({entity.description})" if entity.description else text


def intent_data(skill: Skill) -> dict[str, Any]:
    """The intent catalogue as structure (``ChatRequest.data``, never sent to a language
    model): every intent with its examples and entities, and the skill's thresholds."""
    catalog = [
        {
            "id": i.id,
            "description": i.description,
            "examples": i.examples,
            "entities": [
                e.model_dump(
                    include={
                        "name",
                        "type",
                        "description",
                        "enum",
                        "pattern",
                        "examples",
                        "items",
                        "currency",
                        "maxItems",
                    },
                    exclude_none=True,
                )
                for e in i.entities
            ],
        }
        for i in skill.intents.supported
    ]
    limits = skill.intents.thresholds
    thresholds = limits.model_dump(exclude_none=True) if limits else {}
    return {"intents": catalog, "thresholds": thresholds}


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
    """Tools offered to the planner: every tool not denied outright. (The planner
    answers in its last message; :func:`final_answer_spec` is not offered.)"""
    denied = {
        name
        for r in policy.rules
        if r.kind is RuleKind.TOOL_DENY and r.condition is None
        for name in r.tools
    }
    return tuple(
        ToolSpec(model_tool_name(t.name), t.description or t.name, model_schema(t.input_schema()))
        for t in skill.tools
        if t.name not in denied
    )


CHECKED_KEYWORDS = frozenset(
    {
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
    }
)
"""JSON Schema keywords that only bound a value the model already knows the shape of.
The pre-tool gate checks every call against the tool's whole schema and refuses (or
asks the user) with a message that names the bound, so they are left out of the schema
the planner is sent."""

_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMAS = frozenset(
    {"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"}
)


def model_schema(schema: Any) -> Any:
    """``schema`` as the planner is sent it: without :data:`CHECKED_KEYWORDS`, at every
    level (a property's name is never taken for a keyword); types, properties,
    ``required``, ``enum``, ``const``, formats and descriptions are kept."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in CHECKED_KEYWORDS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: model_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [model_schema(sub) for sub in value]
        elif key in _SCHEMAS:
            out[key] = model_schema(value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True, slots=True)
class PlannerIntent:
    """What the planner is told of one intent of a skill (it depends on the skill alone,
    so the engine's compiled skill builds it once per intent: :func:`planner_intents`)."""

    tools: tuple[str, ...]
    """The tools the intent lists, by the names models see."""
    workflow: str | None
    """The workflow that serves it (:func:`_intent_workflow`)."""
    description: str


def planner_intents(skill: Skill) -> dict[str, PlannerIntent]:
    """:class:`PlannerIntent` of each of the skill's intents, by id (the first intent of
    an id, as the planner's request looks it up)."""
    out: dict[str, PlannerIntent] = {}
    for intent in skill.intents.supported:
        if intent.id not in out:
            out[intent.id] = PlannerIntent(
                tuple(model_tool_name(_full_name(skill, n)) for n in (intent.tools or [])),
                _intent_workflow(skill, intent.id, intent.maps_to_workflow),
                intent.description,
            )
    return out


def planner_request(
    skill: Skill,
    instructions: str,
    subgoals: list[SubGoal] | list[dict[str, Any]],
    state: dict[str, Any],
    conversation: list[ChatMessage],
    tools: tuple[ToolSpec, ...],
    temperature: float | None,
    *,
    intents: Mapping[str, PlannerIntent] | None = None,
    model_names: Mapping[str, str] | None = None,
) -> ChatRequest:
    """One planner step: ``instructions`` (:func:`planner_system`), the ``STATE`` line,
    and the conversation so far; ``state`` in full (tool results included) as the
    request's ``data``.

    ``intents`` (:func:`planner_intents`) and ``model_names`` (each tool's full name to
    the name models see, the inverse of ``state["model_tool_names"]``) are the skill's,
    when the caller keeps them (the engine's compiled skill does); otherwise they are
    worked out for this request."""
    intent_id = state.get("intent")
    if intents is None:
        intents = planner_intents(skill)
    intent = intents.get(intent_id) if isinstance(intent_id, str) else None
    goals = [g if isinstance(g, dict) else g.to_dict() for g in subgoals]
    intent_tools = list(intent.tools) if intent is not None else []
    job_state = {
        **state,
        "subgoals": goals,
        "required_fields": skill.output_contract.required_fields,
        "intent_tools": intent_tools,
        "intent_workflow": intent.workflow if intent is not None else None,
        "intent_description": intent.description if intent is not None else "",
    }
    if model_names is None:
        names = state.get("model_tool_names") or {}
        model_names = {full: model for model, full in names.items()}
    messages = (
        ChatMessage("system", instructions),
        ChatMessage("system", _state_line(state, goals, intent_tools, model_names)),
        *conversation,
    )
    return ChatRequest("planner", messages, tools, temperature=temperature, data=job_state)


def _state_line(
    state: dict[str, Any],
    goals: list[dict[str, Any]],
    tools: list[str],
    model_names: Mapping[str, str],
) -> str:
    """What the planner is told of the job beside the conversation: the intent, the
    entities and inputs known, the tools the intent uses, and the steps of its workflow
    (each marked done once its tool ran; a step's tool by the name models see, from
    ``model_names``). Tool results are not repeated here."""
    parts = [f"{JOB_STATE_MARKER} {', '.join(state.get('intents') or [str(state.get('intent'))])}"]
    if state.get("entities"):
        parts.append(f"entities {_json(state['entities'])}")
    if state.get("inputs"):
        parts.append(f"inputs {_json(state['inputs'])}")
    if tools:
        parts.append(f"tools for it: {', '.join(tools)}")
    if goals:
        steps = [
            f"{model_names.get(g.get('tool') or '', g.get('tool') or g.get('intent'))}"
            + (" (done)" if g.get("status") == "done" else "")
            for g in goals
        ]
        parts.append(f"steps in order: {', '.join(steps)}")
    return "; ".join(parts)


def _intent_workflow(skill: Skill, intent: str, mapped: str | None) -> str | None:
    """The workflow that serves ``intent``: the one its ``maps_to_workflow`` names, else
    the first that lists it in ``intents`` (by the name sub-goals carry)."""
    for wf in skill.policy.workflows:
        if mapped is not None and mapped in (wf.key(), wf.id):
            return wf.key()
    if mapped is not None:
        return mapped
    return next((wf.key() for wf in skill.policy.workflows if intent in (wf.intents or ())), None)


UNAVAILABLE_REASON_CHARS = 160
"""How much of why a tool is unavailable the planner is told (a package's
``messageTemplate`` may be long)."""


def unavailable_line(skill: Skill, unavailable: Mapping[str, str]) -> str:
    """One line telling the planner which tools it is not offered because the runtime
    cannot run them, and why (``""`` when none): by the names models see, each reason
    cut to :data:`UNAVAILABLE_REASON_CHARS` characters."""
    items = []
    for name, why in sorted(unavailable.items()):
        reason = " ".join(why.split())
        if len(reason) > UNAVAILABLE_REASON_CHARS:
            reason = reason[: UNAVAILABLE_REASON_CHARS - 3] + "..."
        items.append(f"{model_tool_name(_full_name(skill, name))} ({reason})")
    if not items:
        return ""
    return "UNAVAILABLE here, not offered, calls refused: " + "; ".join(items)


def planner_system(
    skill: Skill, policy: CompiledPolicy, unavailable: Mapping[str, str] | None = None
) -> str:
    """The planner's instructions: role, problem, the rules handed to it as text, the
    tools it is not offered because the runtime cannot run them (``unavailable``: full
    name to why), how to work and how to answer (they depend only on the skill, its
    compiled policy and the runtime, and are sent once per request, never repeated in
    it)."""
    parts = [f"You are {skill.role.name or 'an assistant'}."]
    if skill.problem.statement:
        parts[0] += f" Job: {skill.problem.statement}"
    if skill.prompt:
        parts.append(skill.prompt.strip())
    if policy.planner_text:
        parts.append(policy.planner_text)
    if skill.role.limitations:
        parts.append("LIMITATIONS:\n" + "\n".join(f"- {x}" for x in skill.role.limitations))
    missing = unavailable_line(skill, unavailable or {})
    if missing:
        parts.append(missing)
    fields = ",".join(skill.output_contract.required_fields)
    parts.append(
        "One tool call per step; never guess a missing value (the user is asked). Done: "
        f'reply only JSON {{"answer":..,"fields":{{{fields}}}}} from tool results.'
    )
    if skill.output_contract.format_hint:
        parts.append(f"Answer format: {skill.output_contract.format_hint}")
    return "\n".join(parts)


def gate_rules(policy: CompiledPolicy) -> list[str]:
    """The rules the finalization gate's model judges: those the skill states as text
    (the rules compiled into the pre-tool gate are enforced there, and not sent)."""
    out = []
    for rule in policy.text_rules:
        text = rule.text.strip()
        word = rule.polarity.lower()
        out.append(text if not word or text.lower().startswith(word) else f"{word.upper()}: {text}")
    return out


def gate_head(skill: Skill, policy: CompiledPolicy) -> str:
    """The finalization gate's instructions before the reply (:func:`gate_request`):
    they depend on the skill and its compiled ``policy`` alone."""
    rules = gate_rules(policy)
    triggers = semantic_escalations(skill)
    codes = ["GOAL_NOT_MET"]
    if rules or triggers:
        codes.append("GUARDRAIL_VIOLATED")
    if skill.persona_text() or skill.role.communication_style:
        codes.append("TONE_MISMATCH")
    lines = [
        f"Does the reply meet the goal{' and keep the rules' if rules else ''}? JSON: "
        f'{{"passed":bool,"reasons":[{{"code":"{"|".join(codes)}","detail":".."}}],'
        '"suggested_action":"TOOL_CALL|CLARIFY_USER|REWRITE|ESCALATE"}; fail only for a '
        "real problem.",
        f"GOAL: {skill.problem.statement}",
    ]
    if rules:
        lines.append("RULES:\n" + "\n".join(f"- {r}" for r in rules))
    if triggers:
        lines.append(
            "ESCALATE WHEN (if one of these holds, fail with suggested_action ESCALATE):\n"
            + "\n".join(f"- {t}" for t in triggers)
        )
    return "\n".join(lines)


def gate_request(
    skill: Skill, draft: str, policy: CompiledPolicy | None = None, *, head: str | None = None
) -> ChatRequest:
    """Spec 000 section 4.4, less what is checked mechanically: goal coverage and the
    rules stated as text, judged on the draft reply. (The output contract's fields are
    checked before, and so are the claims of actions; ``policy`` is the skill's compiled
    policy, compiled here when not given; ``head`` is :func:`gate_head` of the skill,
    when the caller keeps it: the engine's compiled skill does.)"""
    if head is None:
        head = gate_head(skill, policy if policy is not None else compile_policy(skill))
    return ChatRequest(
        "gate",
        (ChatMessage("user", f"{head}\nREPLY:\n{draft}"),),
        response_format="json",
        temperature=0.1,
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
