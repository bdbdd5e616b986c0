"""The offline backend: skillwire's embedded default, no key, no network, no download.

One model for every stage:

- ``intent``: character n-gram similarity of the message to each intent's examples and
  description (read from the request's ``data``: the prompt a language model gets
  carries no examples); its confidence is the best intent's lead over the next one
  (:meth:`.similarity.NgramIndex.best`). Each clause of the message
  (:mod:`.clauses`) that fits another intent on its own, with a lead of at least
  :data:`CLAUSE_LEAD`, adds that intent (``intents``, in the order of the clauses;
  ``intent`` is the first of them, and the reply's confidence is then the least of
  theirs); a message that shares no content word or
  four-letter stem with any of them, or scores below the threshold (the skill's
  ``intents.thresholds.reject``, else :data:`DEFAULT_THRESHOLD`), is out of domain
  (:mod:`.similarity`); entities by declared pattern, enum, examples, name and type
  (:mod:`.entities`);
- ``planner``: follows the job's sub-goals and tool schemas (:mod:`.planner`);
- ``gate``: a non-empty reply passes (the engine has checked the output contract and
  the claims of actions before asking); it cannot judge goal coverage or tone, and says
  so in its reply;
- ``polisher``: the persona applied by a template; the content is never changed.
"""

from __future__ import annotations

import json
from typing import Any

from skillwire.core.chat import ChatRequest, ChatResponse, ToolCall
from skillwire.models.offline.clauses import clauses
from skillwire.models.offline.entities import extract_entities
from skillwire.models.offline.planner import next_step
from skillwire.models.offline.similarity import NgramIndex

__all__ = ["DEFAULT_THRESHOLD", "OfflineModel"]

JOB_STATE_MARKER = "JOB STATE (JSON):"
DEFAULT_THRESHOLD = 0.25
"""Below this similarity a message is out of domain (a skill's
``intents.thresholds.reject`` overrides it)."""
CLAUSE_LEAD = 0.1
"""The confidence (lead over the next intent) a clause needs to add an intent of its
own besides the message's best one."""
_SPLIT_CHARS = 4000
"""A message longer than this is classified whole (one intent), not clause by clause."""

_WARM = ("friendly", "empathetic", "warm", "caring", "kind", "cheerful")


def job_state(request: ChatRequest) -> dict[str, Any]:
    """What the engine gives a backend that reads structure (``ChatRequest.data``), else
    the JSON of a ``JOB STATE`` block in a system message (older engines wrote one), else
    an empty dict."""
    if request.data:
        return dict(request.data)
    for message in request.messages:
        if message.role == "system" and JOB_STATE_MARKER in message.content:
            raw = message.content.split(JOB_STATE_MARKER, 1)[1]
            try:
                value = json.loads(raw)
            except ValueError:
                return {}
            return value if isinstance(value, dict) else {}
    return {}


def _first_of_each(specs: list[Any]) -> list[dict[str, Any]]:
    """The entity specs with a name, each name once (the first intent's wins)."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for spec in specs:
        name = spec.get("name") if isinstance(spec, dict) else None
        if isinstance(name, str) and name not in seen:
            seen.add(name)
            out.append(spec)
    return out


def _section(text: str, title: str, until: str) -> str:
    start = text.find(title)
    if start < 0:
        return ""
    start += len(title)
    end = text.find(until, start)
    return text[start : end if end >= 0 else None].strip()


class OfflineModel:
    """The embedded default model. Deterministic; every call is counted like any other."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        self._indexes: dict[str, NgramIndex] = {}

    @property
    def name(self) -> str:
        """``offline``."""
        return "offline"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one stage's request."""
        if request.stage == "intent":
            return self._text(json.dumps(self.classify(request)))
        if request.stage == "planner":
            tool, args = next_step(request, job_state(request))
            call = ToolCall(tool, args, json.dumps(args), id=f"offline_{len(request.messages)}")
            return ChatResponse(tool_calls=(call,), model=self.name, finish_reason="tool_calls")
        if request.stage == "gate":
            return self._text(json.dumps(self._gate(request.messages[-1].content)))
        return self._text(self._polish(request.messages[-1].content))

    async def aclose(self) -> None:
        """Nothing to release: the offline model holds no connection."""

    def _text(self, text: str) -> ChatResponse:
        return ChatResponse(text=text, model=self.name, finish_reason="stop")

    def classify(self, request: ChatRequest) -> dict[str, Any]:
        """``{intent, intents, entities, confidence}`` for the intent request."""
        state = job_state(request)
        intents = state.get("intents") or []
        message = next((m.content for m in request.messages if m.role == "user"), "")
        key = json.dumps(intents, sort_keys=True)
        index = self._indexes.get(key)
        if index is None:
            docs = [
                (i["id"], text)
                for i in intents
                for text in [*(i.get("examples") or []), i.get("description") or ""]
            ]
            index = self._indexes[key] = NgramIndex(docs)
        best, score, confidence = index.best(message)
        threshold = (state.get("thresholds") or {}).get("reject") or self.threshold
        if not best or score < threshold:
            return {
                "intent": None,
                "intents": [],
                "entities": {},
                "confidence": round(confidence, 3),
            }
        found = {best: confidence}
        parts = clauses(message) if len(message) <= _SPLIT_CHARS else []
        order: list[str] = []  # the intents in the order of the clauses that fit them
        for part in parts if len(parts) > 1 else ():
            label, part_score, lead = index.best(part)
            if not label or part_score < threshold or label in order:
                continue
            if label == best or lead >= CLAUSE_LEAD:
                order.append(label)
                found.setdefault(label, lead)
        if len(found) > 1:  # the best one's lead over the intents not named
            found[best] = index.lead(message, best, set(found))
            found = {label: found[label] for label in [*order, *found] if label in found}
        specs = [
            spec
            for label in found
            for spec in next(i.get("entities") or [] for i in intents if i["id"] == label)
        ]
        return {
            "intent": next(iter(found)),
            "intents": list(found),
            "entities": extract_entities(message, _first_of_each(specs)),
            "confidence": round(min(found.values()), 3),
        }

    def _gate(self, prompt: str) -> dict[str, Any]:
        """Pass a non-empty reply: the engine checks the output contract and the claims
        of actions itself before asking; goal and tone cannot be judged here."""
        draft = prompt.split("REPLY:", 1)[1].strip() if "REPLY:" in prompt else ""
        reasons = []
        if not draft:
            reasons.append({"code": "OUTPUT_INCOMPLETE", "detail": "the answer is empty"})
        return {
            "passed": not reasons,
            "score": 1.0 if not reasons else 0.0,
            "reasons": reasons,
            "missing_fields": [],
            "suggested_action": "REWRITE",
            "note": "offline gate: mechanical checks only (goal and tone not judged)",
        }

    def _polish(self, prompt: str) -> str:
        persona = _section(prompt, "PERSONA:", "\n").lower()
        draft = _section(prompt, "RESPONSE TO FORMAT:", "\n\nReturn the formatted")
        if not draft:
            return ""
        if any(word in persona for word in _WARM):
            return f"Thanks for reaching out! {draft} Is there anything else I can help with?"
        return draft
