"""The intents of a job: reading a detector's reply, and the classifier's shortcut.

A message may ask for several things ("pay the bill and then tell my landlord"): the
intent stage's reply names every intent it finds, ``{"intents": [id, ...], "entities":
{...}, "confidence": c}`` (the older ``{"intent": id}`` is read as one). The reply is
untrusted, whoever wrote it (:func:`read_intents`): a name the skill does not have is
dropped (recorded, and fatal only when no name is valid: the message is then out of
domain), a name given twice counts once, anything but text is dropped, and a job holds
at most :data:`MAX_INTENTS` intents; names past the cap are dropped and recorded too.
The first intent kept is the one the message is mostly about (``JobState.intent``).

A skill that sets ``intents.thresholds.accept`` lets a runtime's ``classifier`` (the
offline model's n-gram classifier, which costs microseconds and no tokens) decide on
its own (:func:`classified`) when its confidence is at least ``accept``; with several
intents, its confidence is that of the least sure of them, and it decides only when
every intent it names is one of the skill's and they fit under the cap: otherwise the
intent model is asked about the whole message (it may name one intent or several).
The classifier is given the request the model would get, with the catalogue as
structure in its ``data``; what it answers is untrusted like any reply. The
``intent_detected`` event says ``decided_by: classifier`` when it decided.

A later user message may add an intent, never remove one (:func:`added_intents`): an
answer given on resume is read by the classifier alone (no model call: an answer to a
field's prompt rarely asks for something new, and asking a model at every answer would
double the calls of a paused job); an intent it names with the confidence ``accept``
asks (when the skill sets it) is added, up to the cap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillwire.core.chat import ChatModel, ChatRequest
from skillwire.core.errors import ModelError
from skillwire.engine.adapter import parse_json_object
from skillwire.policy.arguments import FieldCheck
from skillwire.skills.model import Skill
from skillwire.skills.model_fields import Entity, Intent

__all__ = [
    "MAX_INTENTS",
    "EntityChecks",
    "IntentReading",
    "added_intents",
    "classified",
    "entity_checks",
    "entity_specs",
    "read_intents",
]

MAX_INTENTS = 3
"""The most intents one job holds (the first ones named count; later ones are dropped
and recorded): a reply or a message naming every intent of a skill must not widen the
job's tools to all of them."""
_SHOWN = 10
"""Rejected names recorded per reading (each cut to :data:`_NAME_CHARS` characters)."""
_NAME_CHARS = 80


@dataclass(frozen=True, slots=True)
class IntentReading:
    """What a detector's reply says of the job's intents, checked against the skill."""

    intents: tuple[Intent, ...]
    """The intents kept: the skill's, each once, in the order named, within the cap
    (those already active first)."""
    added: tuple[str, ...]
    """The ids of :attr:`intents` that were not active before."""
    rejected: tuple[str, ...]
    """Names dropped: not an intent of the skill, not text, or over the cap (shown
    cut short, at most :data:`_SHOWN`)."""
    said: str
    """The first name the reply gave, as text (for an out-of-domain event)."""


def _named(data: dict[str, Any]) -> list[Any]:
    """The names a reply gives: ``intent`` first, then each of ``intents``."""
    names: list[Any] = []
    if "intent" in data and data["intent"] not in (None, ""):
        names.append(data["intent"])
    listed = data.get("intents")
    if isinstance(listed, list):
        names.extend(listed)
    elif listed not in (None, ""):
        names.append(listed)  # one name, or something else: judged like any name
    return names


def _shown(name: Any) -> str:
    text = name if isinstance(name, str) else repr(name)
    return text[:_NAME_CHARS]


def read_intents(data: dict[str, Any], skill: Skill, active: Sequence[str] = ()) -> IntentReading:
    """The intents a reply names, checked (see the module's docstring); ``active`` are
    the job's intents so far, which stay and count toward the cap."""
    by_id = {i.id: i for i in skill.intents.supported}
    kept = [by_id[i] for i in active if i in by_id]
    seen = {i.id for i in kept}
    added: list[str] = []
    rejected: list[str] = []
    names = _named(data)
    for name in names:
        intent = by_id.get(name) if isinstance(name, str) else None
        if intent is not None and intent.id in seen:
            continue  # named twice: once
        if intent is None or len(kept) >= MAX_INTENTS:
            if len(rejected) < _SHOWN:
                rejected.append(_shown(name))
            continue
        kept.append(intent)
        seen.add(intent.id)
        added.append(intent.id)
    said = _shown(names[0]) if names else ""
    return IntentReading(tuple(kept), tuple(added), tuple(rejected), said)


def entity_specs(intents: Sequence[Intent]) -> list[Entity]:
    """The entities the job's intents declare, each name once (the first intent's
    declaration of a name wins)."""
    seen: set[str] = set()
    specs: list[Entity] = []
    for intent in intents:
        for spec in intent.entities:
            if spec.name not in seen:
                seen.add(spec.name)
                specs.append(spec)
    return specs


EntityChecks = Mapping[int, tuple[Entity, FieldCheck]]
"""The schema check of entities by their ``id()``, each with its entity (see
:func:`entity_checks`)."""


def entity_checks(intents: Iterable[Intent]) -> dict[int, tuple[Entity, FieldCheck]]:
    """The schema check of every entity the ``intents`` declare, by the entity's ``id()``
    (with the entity, so that a lookup can tell it is the same object): what
    :func:`~skillwire.engine.intent_stage.valid_entities` builds for each value
    otherwise. It depends on the skill alone, so the engine's compiled skill keeps it
    (and so keeps the entities alive: their ids are not reused)."""
    return {
        id(spec): (spec, FieldCheck(spec.name, spec.json_schema()))
        for intent in intents
        for spec in intent.entities
    }


def _confident(data: dict[str, Any], accept: float) -> bool:
    confidence = data.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return False
    return bool(confidence >= accept)


async def _ask(classifier: ChatModel, request: ChatRequest) -> dict[str, Any] | None:
    try:
        response = await classifier.complete(request)
    except ModelError:
        return None
    return parse_json_object(response.text)


async def classified(
    classifier: ChatModel | None, request: ChatRequest, skill: Skill
) -> dict[str, Any] | None:
    """The classifier's reply when it decides (see the module's docstring): every
    intent it names is the skill's, within the cap, with a confidence of at least
    the skill's ``intents.thresholds.accept``; None otherwise (no classifier, no
    threshold, a failure or a reply of another shape: the model is asked)."""
    limits = skill.intents.thresholds
    accept = limits.accept if limits is not None else None
    if classifier is None or accept is None:
        return None
    data = await _ask(classifier, request)
    if data is None or not _confident(data, accept):
        return None
    reading = read_intents(data, skill)
    if not reading.intents or reading.rejected:
        return None
    return {**data, "decided_by": "classifier"}


async def added_intents(
    classifier: ChatModel | None, request: ChatRequest, skill: Skill, active: Sequence[str]
) -> tuple[IntentReading, dict[str, Any]] | None:
    """What a later user message (``request``) adds to the job's ``active`` intents,
    read by the classifier alone, and its reply (for the entities); None when it adds
    nothing (no classifier, no intent named, too little confidence, the cap reached)."""
    if classifier is None or len(active) >= MAX_INTENTS:
        return None
    data = await _ask(classifier, request)
    if data is None:
        return None
    limits = skill.intents.thresholds
    accept = limits.accept if limits is not None else None
    if accept is not None and not _confident(data, accept):
        return None
    reading = read_intents(data, skill, active)
    return (reading, data) if reading.added else None
