"""The offline backend: skillwire's embedded default, no key, no network, no download.

One model for every stage:

- ``intent``: character n-gram similarity of the message to each intent's examples
  and description; a message that shares no content word or four-letter stem with any
  of them, or scores below the threshold (the skill's ``intents.thresholds.reject``,
  else :data:`DEFAULT_THRESHOLD`), is out of domain (:mod:`.similarity`); entities by
  declared pattern, enum, examples, name and type (:mod:`.entities`);
- ``planner``: follows the job's sub-goals and tool schemas (:mod:`.planner`);
- ``gate``: the mechanical checks only (every required field filled, a non-empty
  answer); it cannot judge goal coverage or tone, and says so in its reasons;
- ``polisher``: the persona applied by a template; the content is never changed.
"""

from __future__ import annotations

import json
from typing import Any

from skillwire.core.chat import ChatRequest, ChatResponse, ToolCall
from skillwire.models.offline.entities import extract_entities
from skillwire.models.offline.planner import next_step
from skillwire.models.offline.similarity import NgramIndex

__all__ = ["DEFAULT_THRESHOLD", "OfflineModel"]

JOB_STATE_MARKER = "JOB STATE (JSON):"
DEFAULT_THRESHOLD = 0.25
"""Below this similarity a message is out of domain (a skill's
``intents.thresholds.reject`` overrides it)."""

_WARM = ("friendly", "empathetic", "warm", "caring", "kind", "cheerful")


def job_state(request: ChatRequest) -> dict[str, Any]:
    """The engine's JOB STATE block of a request, or an empty dict."""
    for message in request.messages:
        if message.role == "system" and JOB_STATE_MARKER in message.content:
            raw = message.content.split(JOB_STATE_MARKER, 1)[1]
            try:
                value = json.loads(raw)
            except ValueError:
                return {}
            return value if isinstance(value, dict) else {}
    return {}


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
        """``{intent, entities, confidence}`` for the intent request."""
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
        related = index.related(message)
        scores = {k: v for k, v in index.scores(message).items() if k in related}
        best, score = max(scores.items(), key=lambda kv: kv[1], default=("", 0.0))
        threshold = (state.get("thresholds") or {}).get("reject") or self.threshold
        if not best or score < threshold:
            return {"intent": None, "entities": {}, "confidence": round(score, 3)}
        specs = next(i.get("entities") or [] for i in intents if i["id"] == best)
        return {
            "intent": best,
            "entities": extract_entities(message, specs),
            "confidence": round(score, 3),
        }

    def _gate(self, prompt: str) -> dict[str, Any]:
        required = [
            line[2:].strip()
            for line in _section(
                prompt, "REQUIRED FIELDS IN RESPONSE:", "DRAFT RESPONSE:"
            ).splitlines()
            if line.startswith("- ")
        ]
        draft = _section(prompt, "DRAFT RESPONSE:", "\n\nFIELDS:")
        try:
            fields = json.loads(_section(prompt, "FIELDS:", "VALIDATE and return JSON"))
        except ValueError:
            fields = {}
        reasons = [
            {"code": "MISSING_REQUIRED_FIELD", "detail": f"missing field '{f}'"}
            for f in required
            if fields.get(f) in (None, "", [], {})
        ]
        if not draft:
            reasons.append({"code": "OUTPUT_INCOMPLETE", "detail": "the answer is empty"})
        return {
            "passed": not reasons,
            "score": 1.0 if not reasons else 0.0,
            "reasons": reasons,
            "missing_fields": [r["detail"].split("'")[1] for r in reasons if "'" in r["detail"]],
            "suggested_action": "TOOL_CALL" if reasons else "REWRITE",
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
