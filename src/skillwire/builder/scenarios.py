"""Dry-run scenarios generated for a skill: one per intent, one per approval, one out of
the skill's domain. Each is an entry of the skill's ``tests:`` section
(:class:`~skillwire.skills.DryRunTest`, docs/authoring.md), so ``skillwire test`` runs
exactly what the interview wrote: an id, the user's message, the model that answers (a
script of replies, so the run is exact and offline) and the end the job must reach.

The approval scenario's arguments are searched, not assumed: candidate values are tried
against the skill's real gate until it asks for that approval; a tool whose approval
cannot be reached directly (its workflow needs earlier steps, an argument has a pattern
and no example) gets no scenario, and the reason is returned to show the author.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from skillwire.policy import Gate, NeedApproval, schema_validator
from skillwire.skills import Skill

__all__ = ["OUT_OF_DOMAIN_MESSAGE", "GeneratedScenarios", "generate_scenarios"]

OUT_OF_DOMAIN_MESSAGE = "What will the weather be like on Mars next Tuesday?"
"""The message of the out-of-domain scenario."""

_NUMBERS = (1, 10, 100, 1_000, 10_000, 1_000_000)
_MAX_TRIES = 200


@dataclass
class GeneratedScenarios:
    """The scenarios, and a sentence for each one that could not be generated."""

    tests: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _intent_reply(intent: str | None) -> dict[str, Any]:
    return {"stage": "intent", "json": {"intent": intent, "entities": {}}}


def _final(skill: Skill) -> list[dict[str, Any]]:
    """A final answer that fills the output contract, the gate passing it, a polish."""
    fields = {name: "dry run" for name in skill.output_contract.required_fields}
    answer = {"answer": "Dry run: done.", "fields": fields}
    replies: list[dict[str, Any]] = [
        {"stage": "planner", "tool_call": {"name": "final_answer", "arguments": answer}}
    ]
    if skill.engine_config().finalization_gate.enabled:
        replies.append({"stage": "gate", "json": {"passed": True, "reasons": []}})
    replies.append({"stage": "polisher", "text": "Dry run: done."})
    return replies


def _values(name: str, spec: Mapping[str, Any], known: Mapping[str, list[Any]]) -> list[Any]:
    """Candidate values for one argument: its schema's enum or examples, the examples of
    the intents' entity of that name, else values of its type."""
    if "enum" in spec and isinstance(spec["enum"], list):
        return list(spec["enum"])
    examples = spec.get("examples")
    if isinstance(examples, list) and examples:
        return list(examples)
    if known.get(name):
        return list(known[name])
    kind = spec.get("type")
    if kind in ("number", "integer"):
        return list(_NUMBERS)
    if kind == "boolean":
        return [True, False]
    if kind == "string" and "pattern" not in spec and "format" not in spec:
        return [f"dry-run-{name}".replace("_", "-")]
    return []


def _entity_examples(skill: Skill) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for intent in skill.intents.supported:
        for entity in intent.entities:
            found.setdefault(entity.name, []).extend(entity.examples)
    return found


def _candidates(
    schema: Mapping[str, Any], known: Mapping[str, list[Any]]
) -> Iterator[dict[str, Any]] | str:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    names = [n for n in props if n in required]
    options = []
    for name in names:
        spec = props[name] if isinstance(props[name], Mapping) else {}
        values = _values(name, spec, known)
        if not values:
            return f"argument {name} has a pattern or format and no example to try"
        options.append(values)
    return (dict(zip(names, combo, strict=True)) for combo in itertools.product(*options))


def _approval_args(gate: Gate, skill: Skill, tool: str, intent: str | None) -> dict[str, Any] | str:
    found = skill.tool(tool)
    if found is None:
        return f"no tool {tool}"
    schema = found.input_schema()
    candidates = _candidates(schema, _entity_examples(skill))
    if isinstance(candidates, str):
        return candidates
    valid = schema_validator(schema)
    last = "no candidate arguments"
    for args in itertools.islice(candidates, _MAX_TRIES):
        if not valid.is_valid(args):
            continue
        decision = gate.check(found.name, args, intent=intent, intents=[intent] if intent else [])
        if isinstance(decision, NeedApproval):
            return args
        last = f"the gate answers {decision.kind} (e.g. a workflow step or an input comes first)"
    return last


def _intent_for(skill: Skill, tool: str) -> tuple[str | None, str]:
    """An intent that may use ``tool`` and its first example."""
    for intent in skill.intents.supported:
        if intent.tools is None or tool in intent.tools:
            example = intent.examples[0] if intent.examples else intent.description
            return intent.id, example or f"Please use {tool}"
    return None, f"Please use {tool}"


def generate_scenarios(skill: Skill) -> GeneratedScenarios:
    """One scenario per intent, per approval, and one out of domain."""
    out = GeneratedScenarios()
    for intent in skill.intents.supported:
        message = intent.examples[0] if intent.examples else intent.description
        if not message:
            out.skipped.append(f"intent {intent.id}: no example to send")
            continue
        out.tests.append(
            {
                "id": f"intent-{intent.id}",
                "title": f"{intent.id} is understood and answered",
                "message": message,
                "model": "scripted",
                "script": [_intent_reply(intent.id), *_final(skill)],
                "expect": {"status": "completed", "outcome": "SUCCESS"},
            }
        )
    gate = Gate.for_skill(skill)
    for index, approval in enumerate(skill.policy.approvals):
        intent_id, message = _intent_for(skill, approval.tool_id)
        args = _approval_args(gate, skill, approval.tool_id, intent_id)
        if isinstance(args, str):
            out.skipped.append(f"approval of {approval.tool_id}: {args}")
            continue
        call = {"name": approval.tool_id, "arguments": args}
        out.tests.append(
            {
                "id": f"approval-{approval.tool_id}-{index + 1}",
                "title": f"{approval.tool_id} waits for {approval.approver or 'an approver'}",
                "message": message,
                "model": "scripted",
                "script": [_intent_reply(intent_id), {"stage": "planner", "tool_call": call}],
                "expect": {"status": "paused", "outcome": "APPROVAL_REQUIRED"},
            }
        )
    out.tests.append(
        {
            "id": "out-of-domain",
            "title": "a message outside the skill is not handled",
            "message": OUT_OF_DOMAIN_MESSAGE,
            "model": "scripted",
            "script": [_intent_reply(None)],
            "expect": {"status": "completed", "outcome": "OUT_OF_DOMAIN"},
        }
    )
    return out
