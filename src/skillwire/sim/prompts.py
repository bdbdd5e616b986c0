"""The agent's prompt: the agent type's template with its ``{placeholders}`` filled.

skillwire fills ``memory``, ``options_text``, ``rating_scale`` and ``response_format``;
the world's ``prompt_fields`` hook fills the rest (``narrative_persona``, ...). A
placeholder is ``{name}`` with ``name`` a Python identifier; other braces are text. A
placeholder that nothing fills is an error (a prompt must never reach a model with a
hole in it).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from skillwire.core.errors import UsageError
from skillwire.sim.definitions import AgentTypeSpec, Experiment, ResponseField

__all__ = ["fill_template", "options", "placeholders", "response_format_text"]


def placeholders(template: str) -> list[str]:
    """The ``{name}`` placeholders of ``template``, in order."""
    return [name for kind, name in _pieces(template) if kind == "name"]


@functools.lru_cache(maxsize=64)
def _pieces(template: str) -> tuple[tuple[str, str], ...]:
    """The template cut into text and placeholder names (cached: one template serves
    every agent of a type)."""
    out: list[tuple[str, str]] = []
    text_start = 0
    i = template.find("{")
    while i >= 0:
        end = template.find("}", i + 1)
        if end < 0:
            break
        name = template[i + 1 : end]
        if name.isidentifier():
            if i > text_start:
                out.append(("text", template[text_start:i]))
            out.append(("name", name))
            text_start = end + 1
            i = template.find("{", text_start)
        else:
            i = template.find("{", i + 1)
    if text_start < len(template):
        out.append(("text", template[text_start:]))
    return tuple(out)


def fill_template(template: str, values: Mapping[str, str], agent_type: str) -> str:
    """``template`` with every placeholder replaced (values are inserted as text, never
    read as templates themselves)."""
    parts: list[str] = []
    for kind, piece in _pieces(template):
        if kind == "text":
            parts.append(piece)
            continue
        value = values.get(piece)
        if value is None:
            raise UsageError(
                f"the prompt of agent type '{agent_type}' has a placeholder {{{piece}}} that "
                "neither skillwire nor the world's prompt_fields hook fills"
            )
        parts.append(value)
    return "".join(parts)


def options(
    spec: AgentTypeSpec, experiment: Experiment, state: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """``(number, skill)`` of the options this agent is offered."""
    mapping = spec.skill_map(dict(state))
    if mapping:
        return list(mapping)
    eligible = [s for s in experiment.skills.values() if s.eligible_for(spec.name)]
    return [(str(i), s.id) for i, s in enumerate(eligible, 1)]


def options_text(
    spec: AgentTypeSpec, experiment: Experiment, offered: Sequence[tuple[str, str]]
) -> str:
    """One line per option: its number and the action's (or skill's) description."""
    described = {a.id: a.description for a in spec.actions}
    lines = []
    for number, skill in offered:
        text = described.get(skill) or experiment.skills[skill].description or skill
        lines.append(f"{number}. {text}")
    return "\n".join(lines)


def response_format_text(
    fields: Sequence[ResponseField],
    delimiters: tuple[str, str],
    labels: Sequence[str],
    numbers: Sequence[str],
) -> str:
    """The response format section: a JSON skeleton between the delimiters."""
    shown_labels = "/".join(labels) or "label"
    lines = []
    for f in fields:
        if f.type == "appraisal":
            value = f'{{"label": "{shown_labels}", "reason": "{f.description or "..."}"}}'
        elif f.type == "choice":
            value = f'"<numeric ID, one of {", ".join(numbers)}>"'
        elif f.type == "secondary_choice":
            value = "0"
        elif f.type == "numeric":
            value = "<number>"
        else:
            value = json_text(f.description or "...")
        lines.append(f'  "{f.key}": {value}')
    body = ",\n".join(lines)
    return f"{delimiters[0]}\n{{\n{body}\n}}\n{delimiters[1]}"


def json_text(text: str) -> str:
    """``text`` as a JSON string."""
    import json

    return json.dumps(text, ensure_ascii=False)
