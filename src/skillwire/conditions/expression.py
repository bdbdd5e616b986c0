"""Expressions that give a value, not a condition: a skill's named facts.

``compile_expression("latest('get_reservation', {'id': args.reservation_id}).result")``
compiles like a condition (the same dialect, names, functions, checks and evaluator) and
:meth:`CelExpression.evaluate` returns whatever it gives: a number, a text, a list, a
map, null, a timestamp, reading only what the value needs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from skillwire.conditions.cel import CelCondition, compiled_parts
from skillwire.conditions.dialect import Rewrite
from skillwire.conditions.functions import History

__all__ = ["CelExpression", "compile_expression"]


class CelExpression(CelCondition):
    """An expression compiled once; :meth:`evaluate` gives its value."""

    __slots__ = ("_lists",)

    def __init__(
        self, rewritten: Rewrite, required: tuple[str, ...], optional: tuple[str, ...]
    ) -> None:
        super().__init__(rewritten, required, optional, value=True)
        self._lists = "history" in required or "[" in rewritten.expression
        """The value may hold a constant list or the job's history (given as lists)."""

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """The expression's value; raises
        :class:`~skillwire.core.conditions.ConditionEvaluationError` when it has none
        (a missing name or field, a type mismatch)."""
        found = self._execute(variables)
        return _materialised(found) if self._lists else found


def _materialised(value: Any) -> Any:
    """A fact's value as plain data: a list for a constant list or the job's history
    (:class:`~skillwire.conditions.functions.History`), in lists and maps too."""
    kind = type(value)
    if kind is History or kind is tuple:
        return [_materialised(item) for item in value]
    if kind is list and any(type(item) in _CONTAINERS for item in value):
        return [_materialised(item) for item in value]
    if kind is dict and any(type(item) in _CONTAINERS for item in value.values()):
        return {key: _materialised(item) for key, item in value.items()}
    return value


_CONTAINERS = (History, tuple, list, dict)


def compile_expression(source: str, *, known_names: Collection[str] | None = None) -> CelExpression:
    """Compile an expression that gives a value, as :func:`compile_condition` does."""
    return CelExpression(*compiled_parts(source, known_names))
