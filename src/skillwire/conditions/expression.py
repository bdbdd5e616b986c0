"""Expressions that give a value, not a condition: a skill's named facts.

``compile_expression("latest('get_reservation', {'id': args.reservation_id}).result")``
compiles like a condition (the same dialect, names, functions and checks) and
:meth:`CelExpression.evaluate` returns whatever it gives: a number, a text, a list, a
map, null, a timestamp. A value the fast path reads (:mod:`skillwire.conditions._fastpath`)
is given as the inputs hold it; otherwise CEL evaluates it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from skillwire.conditions._fastpath import FastValue, compile_fast_value
from skillwire.conditions._values import UNSURE
from skillwire.conditions.cel import CelCondition, compiled_parts

__all__ = ["CelExpression", "compile_expression"]


class CelExpression(CelCondition):
    """An expression compiled once; :meth:`evaluate` gives its value."""

    __slots__ = ("_value",)

    def __init__(
        self, rewritten: Any, program: Any, required: tuple[str, ...], optional: tuple[str, ...]
    ) -> None:
        super().__init__(rewritten, program, required, optional, value=True)
        self._value: FastValue | None = compile_fast_value(rewritten, self._required)

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """The expression's value; raises
        :class:`~skillwire.core.conditions.ConditionEvaluationError` when it has none
        (a missing name or field, a type mismatch)."""
        if self._value is not None:
            found = self._value(variables)
            if found is not UNSURE:
                return found
        return self._execute(variables)


def compile_expression(source: str, *, known_names: Collection[str] | None = None) -> CelExpression:
    """Compile an expression that gives a value, as :func:`compile_condition` does."""
    return CelExpression(*compiled_parts(source, known_names))
