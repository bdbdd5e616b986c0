"""What the page shows of a job: the conversation, the input widget's fields, the status.

Nothing here decides anything: the facts are the job's record and events, the same as
``skillwire show``; these functions only arrange them for a person.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from skillwire.core.job import JobRecord, JobStatus, OutcomeClass, Waiting
from skillwire.engine import JobView
from skillwire.server.auth import Principal
from skillwire.server.service import waits_for_approval_by, waits_for_input
from skillwire.skills import FieldSpec, Skill

__all__ = [
    "Bubble",
    "FieldWidget",
    "JobPanel",
    "conversation",
    "field_widgets",
    "form_values",
    "job_panel",
    "pretty",
]

FIELD_PREFIX = "input."
"""Form names of the input widget's fields: ``input.<requested field>``."""


def pretty(value: Any) -> str:
    """Indented JSON, for the page."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=True)


def humanize(name: str) -> str:
    """``order_id`` -> ``Order id``; ``identity.email_or_phone`` -> ``Identity email or phone``."""
    text = name.replace(".", " ").replace("_", " ").strip()
    return text[:1].upper() + text[1:]


@dataclass
class Bubble:
    """One turn of the conversation."""

    who: Literal["user", "agent", "system"]
    text: str
    seq: int = 0
    reply: bool = False
    """The job's final reply."""


def conversation(view: JobView) -> list[Bubble]:
    """The job's turns, from its events: the message, each question and answer, each
    approval decision, and the reply."""
    out: list[Bubble] = []
    for e in view.events:
        if e.stage == "job" and e.kind == "created":
            out.append(Bubble("user", e.message, e.seq))
        elif e.stage == "pause" and e.kind == "paused":
            waiting = e.data.get("waiting") or {}
            if waiting.get("approver"):
                text = f"This needs {waiting['approver']} approval: {waiting.get('tool')}."
                out.append(Bubble("system", text, e.seq))
            else:
                out.append(Bubble("agent", e.message, e.seq))
        elif e.kind == "input_received":
            inputs = e.data.get("inputs") or {}
            text = ", ".join(f"{humanize(k)}: {v}" for k, v in inputs.items()) or e.message
            out.append(Bubble("user", text, e.seq))
        elif e.kind == "input_rejected":
            out.append(Bubble("system", f"Not accepted: {e.message}", e.seq))
        elif e.kind == "approval_granted":
            out.append(Bubble("system", f"Approved by {e.data.get('role')}", e.seq))
        elif e.kind == "approval_denied":
            out.append(Bubble("system", f"Denied by {e.data.get('role')}", e.seq))
        elif e.kind == "operator_decided":
            out.append(Bubble("system", e.message, e.seq))
    record = view.record
    if record.reply:
        out.append(Bubble("agent", record.reply, reply=True))
    elif record.status in (JobStatus.FAILED, JobStatus.ESCALATED):
        out.append(Bubble("system", f"The job {record.status}: {record.outcome_class or ''}"))
    return out


_NOT_DONE = frozenset((OutcomeClass.BLOCKED, OutcomeClass.DENIED, OutcomeClass.TOOL_FAILED))
"""Outcomes of a job that completed without doing what was asked (its reply says why)."""


@dataclass
class FieldWidget:
    """One input of the widget, for one requested field."""

    name: str
    """The requested field."""
    form_name: str
    label: str
    help: str = ""
    kind: Literal["text", "number", "select"] = "text"
    options: list[str] = field(default_factory=list)
    placeholder: str = ""
    step: str = ""


def field_widgets(waiting: Waiting, examples: Mapping[str, Any] | None = None) -> list[FieldWidget]:
    """One widget per requested field, typed by the field's schema when it has one;
    ``examples`` (by field name, from the skill) fill the placeholders."""
    widgets = []
    for name in waiting.requested_fields:
        schema = waiting.field_schemas.get(name) or {}
        w = FieldWidget(name, FIELD_PREFIX + name, humanize(name))
        w.help = str(schema.get("description") or "")
        kind = schema.get("type")
        if "enum" in schema:
            w.kind = "select"
            w.options = [str(v) for v in schema["enum"]]
        elif kind == "boolean":
            w.kind = "select"
            w.options = ["true", "false"]
        elif kind in ("number", "integer"):
            w.kind = "number"
            w.step = "1" if kind == "integer" else "any"
        example = (schema.get("examples") or [None])[0]
        if example is None and examples:
            example = examples.get(name)
        if example is not None:
            w.placeholder = f"e.g. {example}"
        if schema.get("pattern"):
            w.help = f"{w.help} (format: {schema['pattern']})".strip()
        widgets.append(w)
    return widgets


def _convert(raw: str, schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    text = raw.strip()
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            number = float(text)
            return int(number) if number.is_integer() and "." not in text else number
        if kind == "boolean" and text.lower() in ("true", "false"):
            return text.lower() == "true"
    except ValueError:
        return text  # the runtime rejects it and says why; the job stays paused
    if "enum" in schema:
        for option in schema["enum"]:
            if str(option) == text:
                return option
    return text


def form_values(waiting: Waiting, form: Mapping[str, Any]) -> dict[str, Any]:
    """The widget's submitted values, typed by each field's schema (an empty field is
    left out, so the runtime names it as missing)."""
    values: dict[str, Any] = {}
    for name in waiting.requested_fields:
        raw = form.get(FIELD_PREFIX + name)
        if isinstance(raw, str) and raw.strip():
            values[name] = _convert(raw, waiting.field_schemas.get(name) or {})
    return values


@dataclass
class JobPanel:
    """The state panel of a job page: what the viewer can see and do now."""

    view: JobView
    show_widget: bool
    """Spec 001's UI contract holds and the viewer owns the job: the input widget."""
    can_decide: bool
    """The job waits for an approval the viewer may give."""
    can_answer_operator: bool
    """The job waits for an operator (an admin answers)."""
    headline: str
    tone: Literal["wait", "busy", "ok", "bad"]
    widgets: list[FieldWidget]
    bubbles: list[Bubble]
    finished: bool


def field_examples(skill: Skill | None) -> dict[str, Any]:
    """An example value per field name, from the skill's tool inputs and intent entities."""
    found: dict[str, Any] = {}
    if skill is None:
        return found
    specs: list[FieldSpec] = [f for t in skill.tools for f in t.input_fields()]
    specs += [e for i in skill.intents.supported for e in i.entities]
    for spec in specs:
        if spec.examples and spec.name not in found:
            found[spec.name] = spec.examples[0]
    return found


def job_panel(view: JobView, principal: Principal, skill: Skill | None = None) -> JobPanel:
    """Arrange ``view`` for ``principal`` (``skill`` gives example values for the widget)."""
    r: JobRecord = view.record
    w = r.waiting
    contract = waits_for_input(r)
    show_widget = contract and r.owner == principal.name
    can_decide = waits_for_approval_by(principal, r)
    operator = (
        r.status is JobStatus.PAUSED
        and r.outcome_class is OutcomeClass.OPERATOR_ACTION_REQUIRED
        and principal.is_admin
        and w is not None
    )
    tone: Literal["wait", "busy", "ok", "bad"]
    if r.status is JobStatus.PAUSED and w is not None:
        tone = "wait"
        if contract:
            headline = (
                "Waiting for your answer"
                if show_widget
                else f"Waiting for {r.owner} to answer ({', '.join(w.requested_fields)})"
            )
        elif r.outcome_class is OutcomeClass.APPROVAL_REQUIRED:
            headline = (
                f"Waiting for your approval as {w.approver}"
                if can_decide
                else f"Waiting for approval by a {w.approver}"
            )
        else:
            headline = f"Waiting: {w.reason_code}"
    elif r.status in (JobStatus.QUEUED, JobStatus.RUNNING):
        tone, headline = "busy", "Working on it…"
    elif r.status is JobStatus.COMPLETED and r.outcome_class in _NOT_DONE:
        tone, headline = "bad", f"Not done: {r.outcome_class}"
    elif r.status is JobStatus.COMPLETED:
        tone, headline = "ok", "Done"
    else:
        tone, headline = "bad", f"Stopped: {r.status} ({r.outcome_class or 'no outcome'})"
    return JobPanel(
        view=view,
        show_widget=show_widget,
        can_decide=can_decide,
        can_answer_operator=operator,
        headline=headline,
        tone=tone,
        widgets=(
            field_widgets(w, field_examples(skill))
            if w is not None and (show_widget or operator)
            else []
        ),
        bubbles=conversation(view),
        finished=r.status in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.ESCALATED),
    )
