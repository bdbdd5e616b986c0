"""The intent stage of a job: its intents and entities, or the out-of-domain reply.

:func:`detect_intents` reads the job's message (the classifier's shortcut first, else
the intent model; :mod:`skillwire.engine.intent` checks what either says), records
``intent_detected`` and ``bootstrapped``, and moves the job to planning; a message
with no intent of the skill ends the job with the skill's out-of-domain reply.
:func:`add_intents` reads a later user message (an answer given on resume) for
intents to add.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skillwire.core.chat import ChatMessage, ChatModel
from skillwire.core.job import EventKind, JobStatus, OutcomeClass
from skillwire.engine.adapter import parse_json_object
from skillwire.engine.intent import (
    EntityChecks,
    IntentReading,
    added_intents,
    classified,
    entity_specs,
    read_intents,
)
from skillwire.engine.prompts import intent_request
from skillwire.engine.run import JobRun
from skillwire.engine.state import Phase, RetryPoint
from skillwire.policy.arguments import FieldCheck
from skillwire.skills.model_fields import Intent

__all__ = ["add_intents", "detect_intents", "valid_entities"]


async def detect_intents(run: JobRun, model: ChatModel, classifier: ChatModel | None) -> None:
    """The intent stage on the job's message (see the module's docstring)."""
    compiled = run.compiled
    skill = compiled.skill
    run.retry_point = RetryPoint("intent")
    request = intent_request(
        skill, run.state.message, system=compiled.intent_system, data=compiled.intent_data
    )
    data = await classified(classifier, request, skill)
    if data is None:
        response = await run.call_model(model, request)
        data = parse_json_object(response.text) or {}
    reading = read_intents(data, skill)
    if not reading.intents:
        await _out_of_domain(run, reading.said)
        return
    entities, rejected = valid_entities(
        reading.intents, data.get("entities"), compiled.entity_checks
    )
    run.state.entities = entities
    _record(run, reading, data, entities, rejected)
    policy = compiled.gate.policy
    run.event(
        EventKind.BOOTSTRAPPED,
        "sub-goals built, rules compiled",
        subgoals=compiled.goals_for(run.state.intents),
        compiled_rules=len(policy.rules),
        planner_tokens=policy.planner_tokens,
    )
    run.state.phase = Phase.PLANNING
    run.state.add_message(ChatMessage("user", run.state.message))


async def add_intents(run: JobRun, classifier: ChatModel | None, text: str) -> None:
    """Add the intents a later user message names to the job's
    (:func:`~skillwire.engine.intent.added_intents`: the classifier alone, no model
    call); they are recorded as ``intent_detected`` with ``source: input``, and the
    entities they declare that the job does not know yet are taken from the message.
    Nothing is removed and no known entity changes."""
    text = text.strip()
    if not text or run.state.phase is not Phase.PLANNING:
        return
    compiled = run.compiled
    request = intent_request(
        compiled.skill, text, system=compiled.intent_system, data=compiled.intent_data
    )
    found = await added_intents(classifier, request, compiled.skill, run.state.intents)
    if found is None:
        return
    reading, data = found
    new = [i for i in reading.intents if i.id in reading.added]
    entities, rejected = valid_entities(new, data.get("entities"), compiled.entity_checks)
    entities = {k: v for k, v in entities.items() if k not in run.state.entities}
    run.state.entities = {**run.state.entities, **entities}
    _record(run, reading, {**data, "decided_by": "classifier"}, entities, rejected, "input")


def _record(
    run: JobRun,
    reading: IntentReading,
    data: dict[str, Any],
    entities: dict[str, Any],
    rejected: list[str],
    source: str = "",
) -> None:
    """Make :attr:`reading`'s intents the job's, and record ``intent_detected``."""
    run.state.intents = [i.id for i in reading.intents]
    extra: dict[str, Any] = {"decided_by": "classifier"} if data.get("decided_by") else {}
    if source:
        extra["source"] = source
    run.event(
        EventKind.INTENT_DETECTED,
        ", ".join(run.state.intents),
        intent=run.state.intents[0],
        intents=list(run.state.intents),
        added=list(reading.added),
        rejected_intents=list(reading.rejected),
        entities=entities,
        rejected_entities=rejected,
        confidence=data.get("confidence"),
        **extra,
    )


async def _out_of_domain(run: JobRun, said: str) -> None:
    ood = run.skill.intents.resolved_out_of_domain()
    reply = ood.message or "Sorry, I can't help with that."
    if ood.suggest_domains:
        reply += " You may want: " + ", ".join(ood.suggest_domains) + "."
    run.event(
        EventKind.OUT_OF_DOMAIN,
        reply,
        reason_code=OutcomeClass.OUT_OF_DOMAIN,
        model_said=said,
        action=ood.action,
    )
    run.record.reply = reply
    run.state.phase = Phase.DONE
    status = JobStatus.ESCALATED if ood.action == "escalate" else JobStatus.COMPLETED
    run.set_status(status, OutcomeClass.OUT_OF_DOMAIN)
    await run.persist()


def valid_entities(
    intents: Sequence[Intent],
    raw: Any,
    checks: EntityChecks | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The entities the ``intents`` declare (:func:`~skillwire.engine.intent.
    entity_specs`) whose values in ``raw`` fit their schema; the names of values
    refused. Nothing is coerced. ``checks`` (:func:`entity_checks` of the skill's
    intents) saves building an entity's check; one not found there is built here."""
    if not isinstance(raw, dict):
        return {}, []
    kept: dict[str, Any] = {}
    rejected: list[str] = []
    known = checks or {}
    for spec in entity_specs(intents):
        if spec.name not in raw or raw[spec.name] in (None, ""):
            continue
        value = raw[spec.name]
        found = known.get(id(spec))
        check = (
            found[1]
            if found is not None and found[0] is spec
            else FieldCheck(spec.name, spec.json_schema())
        )
        if check.problem(value) is None and spec.problem(value) is None:
            kept[spec.name] = value
        else:
            rejected.append(spec.name)
    return kept, rejected
