"""A skill's facts as the gate computes them: compiled once, per tool the facts its
rules read (with the facts those read), computed once per check when a rule reads one.

A fact that cannot be computed (a missing field, no matching run) has no value: a rule
reading it cannot be evaluated and fails closed, as for any missing value.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from skillwire.conditions import RUNTIME_NAMES, CelExpression, compile_expression
from skillwire.core.conditions import Condition
from skillwire.core.location import SourceLocation
from skillwire.policy.rules import CompiledRule
from skillwire.skills.facts import facts_read
from skillwire.skills.model import Skill

__all__ = ["SkillFacts", "shown_facts"]


class SkillFacts:
    """The compiled facts of one skill, and which rules read which."""

    def __init__(self, skill: Skill, rules: Iterable[CompiledRule]) -> None:
        self.expressions: dict[str, CelExpression] = {
            name: compile_expression(text, known_names=RUNTIME_NAMES)
            for name, text in skill.facts.items()
        }
        self._needs = {name: _read(e, self.expressions) for name, e in self.expressions.items()}
        self.by_source: dict[SourceLocation, tuple[str, ...]] = {}
        """The facts each rule reads, by the rule's source (as a decision's reasons name it)."""
        self.readers: dict[str, list[CompiledRule]] = {name: [] for name in self.expressions}
        """The rules that read each fact (``check --explain``)."""
        self._rules = tuple(rules)
        for rule in self._rules:
            names = self.read_by(rule.condition)
            if names:
                self.by_source[rule.source] = names
                for name in names:
                    self.readers[name].append(rule)

    def read_by(self, condition: Condition | None) -> tuple[str, ...]:
        """The facts a condition reads, in declaration order."""
        if condition is None or "facts" not in condition.names:
            return ()
        return _read(condition, self.expressions)

    def for_rules(self, rules: Iterable[CompiledRule]) -> dict[str, CelExpression]:
        """The facts ``rules`` read and those they depend on, in declaration order."""
        wanted: set[str] = set()
        for rule in rules:
            for name in self.read_by(rule.condition):
                wanted.add(name)
        for name in reversed(list(self.expressions)):  # a fact reads only earlier facts
            if name in wanted:
                wanted.update(self._needs[name])
        return {name: e for name, e in self.expressions.items() if name in wanted}


def _read(condition: Condition, known: Mapping[str, CelExpression]) -> tuple[str, ...]:
    read = facts_read(condition)
    if read is None:
        return tuple(known)
    return tuple(name for name in known if name in read)


def shown_facts(names: Iterable[str], values: Mapping[str, Any]) -> str:
    """``facts: cabin = "business", total = 950`` for a decision's reasons."""
    parts = []
    for name in names:
        if name in values:
            parts.append(f"{name} = {_short(values[name])}")
        else:
            parts.append(f"{name} has no value")
    return "facts: " + ", ".join(parts)


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."
