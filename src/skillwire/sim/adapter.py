"""The model adapter of spec 002: raw text -> proposal, and rejection -> retry prompt.

Parsing takes the text between the response format's delimiters (or, without them, the
first ``{`` to the last ``}``), reads it as JSON, and when that fails and the agent type
asks for ``smart_repair``, mends near-JSON first: code fences, single quotes, bare
rating labels (``"threat": H``), trailing commas, a missing closing brace. The decision
goes through the numeric skill map that applies to the agent (a string of digits too),
else the actions' aliases, else a skill id; appraisal labels are taken as whole words
among the construct's labels. No domain logic lives here: the validators decide.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillwire.sim.definitions import AgentTypeSpec, ResponseField

__all__ = ["Proposal", "parse_output", "repair_json", "retry_prompt"]

_MAX_RAW = 200_000


@dataclass(frozen=True, slots=True)
class Proposal:
    """A parsed answer: the chosen skill, the constructs and the other fields."""

    skill: str
    decision: Any
    constructs: dict[str, str] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    repaired: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The audit's form."""
        return {
            "skill": self.skill,
            "decision": self.decision,
            "constructs": dict(self.constructs),
            "fields": dict(self.fields),
            "repaired": self.repaired,
        }


def _between(text: str, start: str, end: str) -> str | None:
    begin = text.rfind(start)
    if begin < 0:
        return None
    rest = text[begin + len(start) :]
    stop = rest.find(end)
    return rest if stop < 0 else rest[:stop]


def _object_text(text: str) -> str | None:
    begin = text.find("{")
    if begin < 0:
        return None
    stop = text.rfind("}")
    return text[begin:] if stop < begin else text[begin : stop + 1]


def repair_json(text: str, labels: Sequence[str]) -> str:
    """Near-JSON mended on tokens (never by regular expressions): code fences dropped,
    single-quoted strings double-quoted, bare ``labels`` quoted, trailing commas removed,
    unclosed brackets closed."""
    body = text.strip()
    if body.startswith("```"):
        body = body[3:]
        if body[:4].lower() == "json":
            body = body[4:]
    body = body.replace("```", "")
    wanted = frozenset(labels)
    out: list[str] = []
    stack: list[str] = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch in "\"'":
            j = i + 1
            chunk: list[str] = []
            while j < n and body[j] != ch:
                if body[j] == "\\" and j + 1 < n:
                    chunk.append(body[j : j + 2])
                    j += 2
                    continue
                chunk.append('\\"' if body[j] == '"' else body[j])
                j += 1
            out.append('"' + "".join(chunk) + '"')
            i = j + 1
            continue
        if ch.isalpha() or ch == "_":
            j = i
            while j < n and (body[j].isalnum() or body[j] == "_"):
                j += 1
            word = body[i:j]
            k = j
            while k < n and body[k] in " \t":
                k += 1
            is_key = k < n and body[k] == ":"
            quote = is_key or word in wanted or word.upper() in wanted
            out.append(json.dumps(word) if quote else word)
            i = j
            continue
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            while out and out[-1].strip() == "":
                out.pop()
            if out and out[-1] == ",":
                out.pop()
            if stack:
                stack.pop()
        out.append(ch)
        i += 1
    while out and out[-1].strip() in ("", ","):
        out.pop()
    out.extend(reversed(stack))
    return "".join(out)


def _load(text: str, labels: Sequence[str], repair: bool) -> tuple[Any, bool] | None:
    try:
        return json.loads(text), False
    except (ValueError, RecursionError):
        pass
    if not repair:
        return None
    try:
        return json.loads(repair_json(text, labels)), True
    except (ValueError, RecursionError):
        return None


def _find(data: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, Any] | None:
    lowered = {k.lower(): k for k in data}
    for key in keys:
        found = lowered.get(key.lower())
        if found is not None:
            return found, data[found]
    return None


def _label(value: Any, labels: Sequence[str]) -> str | None:
    if isinstance(value, dict):
        value = _find(value, ("label", "level", "rating", "value"))
        value = value[1] if value else None
    if not isinstance(value, str):
        return None
    canonical = {label.upper(): label for label in labels}
    word: list[str] = []
    for ch in value + " ":
        if ch.isalnum():
            word.append(ch)
            continue
        if word:
            found = canonical.get("".join(word).upper())
            if found is not None:
                return found
            word = []
    return None


def _text(value: Any) -> str:
    if isinstance(value, dict):
        found = _find(value, ("reason", "reasoning", "explanation", "text"))
        value = found[1] if found else ""
    return value if isinstance(value, str) else ""


def _decision(
    value: Any, spec: AgentTypeSpec, state: Mapping[str, Any], skills: Sequence[str]
) -> str | list[str]:
    mapping = dict(spec.skill_map(dict(state)))
    if isinstance(value, bool) or value is None:
        return [f"the decision must be one of the option numbers {', '.join(mapping)}"]
    if isinstance(value, int | float):
        if isinstance(value, float) and not value.is_integer():
            return [f"the decision {value} is not an option number"]
        value = str(int(value))
    if isinstance(value, list | dict):
        return ["the decision must be one number, not a list or an object"]
    text = str(value).strip()
    if text.isdigit():
        skill = mapping.get(str(int(text)))
        if skill is None:
            return [f"the decision {text} is not one of the options {', '.join(mapping)}"]
        return skill
    head = text.split(".", 1)[0].strip() if "." in text else ""
    if head.isdigit() and str(int(head)) in mapping:
        return mapping[str(int(head))]
    lowered = text.lower()
    for action in spec.actions:
        if lowered == action.id.lower() or any(lowered == a.lower() for a in action.aliases):
            return action.id
    if text in skills:
        return text
    return [f"the decision '{text[:60]}' is neither an option number nor a known action"]


def parse_output(
    raw: str,
    spec: AgentTypeSpec,
    state: Mapping[str, Any],
    fields: Sequence[ResponseField],
    delimiters: tuple[str, str],
    skills: Sequence[str],
) -> Proposal | list[str]:
    """The proposal in ``raw``, or the errors that say why there is none."""
    if not isinstance(raw, str) or not raw.strip():
        return ["the answer is empty"]
    if len(raw) > _MAX_RAW:
        return [f"the answer is longer than {_MAX_RAW} characters"]
    block = _between(raw, *delimiters)
    candidate = _object_text(block if block is not None else raw)
    if candidate is None:
        return [f"no JSON object found: put it between {delimiters[0]} and {delimiters[1]}"]
    labels = [label for c in spec.constructs for label in c.labels] or list(spec.quote_values)
    loaded = _load(candidate, labels, repair=bool(spec.quote_values))
    if loaded is None:
        return [f"the answer between {delimiters[0]} and {delimiters[1]} is not valid JSON"]
    data, repaired = loaded
    if not isinstance(data, dict):
        return ["the answer must be a JSON object"]
    errors: list[str] = []
    found = _find(data, spec.decision_keywords)
    skill: str | list[str] = [
        "no decision given (a field named " + " or ".join(spec.decision_keywords) + ")"
    ]
    decision: Any = None
    if found is not None:
        decision = found[1]
        skill = _decision(decision, spec, state, skills)
    if isinstance(skill, list):
        errors.extend(skill)
    constructs: dict[str, str] = {}
    for construct in spec.constructs:
        hit = _find(data, construct.keywords)
        if hit is None:
            continue
        if construct.labels:
            label = _label(hit[1], construct.labels)
            if label is not None:
                constructs[construct.name] = label
        else:
            constructs[construct.name] = _text(hit[1])[:2000]
    others: dict[str, Any] = {}
    for f in fields:
        hit = _find(data, (f.key,))
        value = hit[1] if hit else None
        if f.type == "appraisal":
            if f.construct and f.construct not in constructs and f.required:
                labels_of = next((c.labels for c in spec.constructs if c.name == f.construct), ())
                errors.append(f"{f.key} needs one of the labels {', '.join(labels_of)}")
            continue
        if f.type in ("choice",):
            continue
        if value is None or (f.type == "secondary_choice"):
            if f.required and value is None:
                errors.append(f"the field {f.key} is required")
            continue
        if f.type == "numeric":
            if isinstance(value, bool) or not isinstance(value, int | float):
                errors.append(f"{f.key} must be a number")
            elif (f.minimum is not None and value < f.minimum) or (
                f.maximum is not None and value > f.maximum
            ):
                errors.append(f"{f.key} must lie between {f.minimum:g} and {f.maximum:g}")
            else:
                others[f.key] = value
            continue
        text = value if isinstance(value, str) else json.dumps(value)[:2000]
        if f.required and not text.strip():
            errors.append(f"the field {f.key} is required")
        others[f.key] = text[:2000]
    if errors or isinstance(skill, list):
        return errors
    return Proposal(skill, decision, constructs, others, repaired)


def retry_prompt(prompt: str, errors: Sequence[str], limit: int) -> str:
    """The original prompt and the errors that rejected the last answer (at most
    ``limit``; only ``ERROR`` findings are ever passed here)."""
    shown = list(errors)[: max(1, limit)]
    lines = "\n".join(f"- {e}" for e in shown)
    more = len(errors) - len(shown)
    extra = f"\n- and {more} more" if more > 0 else ""
    return (
        f"{prompt}\n\nYour previous answer was rejected:\n{lines}{extra}\n"
        "Choose again and answer in the exact format above."
    )
