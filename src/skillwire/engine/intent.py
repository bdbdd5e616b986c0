"""The intent stage's shortcut: a confident classifier decides without a model call.

A skill that sets ``intents.thresholds.accept`` lets a runtime's ``classifier`` (the
offline model's n-gram classifier, which costs microseconds and no tokens) decide the
intent on its own when its confidence is at least ``accept``: its intent and entities
are used and the intent model is not asked. Below it, or with no intent found, the
model is asked as before (a compact intent list: :func:`~skillwire.engine.prompts.
intent_system`). The classifier is given the request the model would get, with the
catalogue as structure in its ``data``; what it answers is untrusted like any reply.
The ``intent_detected`` event says ``decided_by: classifier`` when it decided.
"""

from __future__ import annotations

from typing import Any

from skillwire.core.chat import ChatModel, ChatRequest
from skillwire.core.errors import ModelError
from skillwire.engine.adapter import parse_json_object
from skillwire.skills.model import Skill

__all__ = ["classified"]


async def classified(
    classifier: ChatModel | None, request: ChatRequest, skill: Skill
) -> dict[str, Any] | None:
    """The classifier's ``{intent, entities, confidence}`` when it names an intent of
    the skill with a confidence of at least the skill's ``intents.thresholds.accept``;
    None otherwise (no classifier, no threshold, a failure or a reply of another
    shape: the model is asked)."""
    limits = skill.intents.thresholds
    accept = limits.accept if limits is not None else None
    if classifier is None or accept is None:
        return None
    try:
        response = await classifier.complete(request)
    except ModelError:
        return None
    data = parse_json_object(response.text)
    if data is None:
        return None
    confidence = data.get("confidence")
    intent = data.get("intent")
    known = any(i.id == intent for i in skill.intents.supported)
    if not known or isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return None
    if confidence < accept:
        return None
    return {**data, "decided_by": "classifier"}
