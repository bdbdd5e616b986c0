"""CEL's ``matches()`` on the skill pattern engine, compiled once.

The ``cel`` package compiles a ``matches`` pattern on every evaluation, with an engine of
its own. A condition instead calls :func:`matches` under the name :data:`FUNCTION`: the
expression CEL runs has each ``matches`` call renamed (:func:`route_matches`), and a
pattern written in the condition is compiled at load (:func:`check_literal_patterns`),
so one the engine cannot take is an error at its column. A pattern that comes from the
data is compiled on first use and cached by its text.

Semantics are those of :mod:`skillwire.core.patterns`, as for a tool input's
``pattern``: a search, ``^`` and ``$`` at the ends of the whole value, RE2 syntax.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from skillwire.conditions._fastpath import string_value
from skillwire.conditions._scanner import Token, tokenize
from skillwire.conditions.dialect import Rewrite
from skillwire.core.errors import ConditionSyntaxError, ControlFlowSignal
from skillwire.core.patterns import PatternError, compile_pattern

__all__ = [
    "FUNCTION",
    "MatchesError",
    "check_literal_patterns",
    "failure_text",
    "matches",
    "route_matches",
]

FUNCTION: Final = "skillwire_matches"
"""The name ``matches`` calls run under in CEL (not a name an author may call)."""

_CALL_FAILED = f"Function '{FUNCTION}' error: Python function call failed: "


class MatchesError(ControlFlowSignal, ValueError):
    """``matches`` cannot answer: a value that is not text, or a pattern the engine
    cannot take. CEL turns it into an evaluation error (the condition fails closed)."""


def matches(value: Any, pattern: Any) -> bool:
    """``value.matches(pattern)``: whether ``pattern`` is found in ``value``."""
    if type(value) is not str or type(pattern) is not str:
        raise MatchesError(
            f"matches() takes text and a pattern, not {type(value).__name__} "
            f"and {type(pattern).__name__}"
        )
    try:
        compiled = compile_pattern(pattern)
    except PatternError as exc:
        raise MatchesError(str(exc)) from None
    return compiled.search(value) is not None


def route_matches(expression: str) -> str | None:
    """``expression`` with every ``matches`` call renamed to :data:`FUNCTION` (the same
    length is not kept: the renamed text is only ever run, never shown); None when it
    calls no ``matches``."""
    tokens = tokenize(expression)
    calls = [t for i, t in enumerate(tokens) if _is_call(tokens, i)]
    if not calls:
        return None
    parts: list[str] = []
    at = 0
    for token in calls:
        parts += [expression[at : token.start], FUNCTION]
        at = token.end
    parts.append(expression[at:])
    return "".join(parts)


def check_literal_patterns(rewritten: Rewrite) -> None:
    """Compile, once and at load, the patterns written as literals in
    ``receiver.matches('...')`` calls (later uses of the same text find them cached).

    Raises :class:`~skillwire.core.conditions.ConditionSyntaxError` at the literal's
    column for a pattern the engine cannot take.
    """
    tokens = tokenize(rewritten.expression)
    for index in range(1, len(tokens) - 3):
        if not _is_call(tokens, index) or tokens[index - 1].text != ".":
            continue
        literal, after = tokens[index + 2], tokens[index + 3]
        if literal.kind != "string" or after.text != ")":
            continue
        text = string_value(literal)
        if text is None:
            continue  # an escape the fast path does not read: compiled on first use
        try:
            compile_pattern(text)
        except PatternError as exc:
            raise ConditionSyntaxError(
                f"matches(): {exc}",
                column=rewritten.original_offset(literal.start) + 1,
                hint=exc.hint or "see docs/conditions.md for what a pattern may use",
            ) from None


def failure_text(detail: str) -> str:
    """CEL's message for a failed ``matches`` call, in the author's words."""
    if _CALL_FAILED in detail:
        detail = detail.split(_CALL_FAILED, 1)[1].split(": ", 1)[-1]
    return detail.replace(FUNCTION, "matches")


def _is_call(tokens: list[Token], index: int) -> bool:
    """Whether ``tokens[index]`` names ``matches`` in a call (the last token is ``end``)."""
    token, after = tokens[index], tokens[min(index + 1, len(tokens) - 1)]
    return token.kind == "name" and token.text == "matches" and after.text == "("


class _QuietMatchesFailures(logging.Filter):
    """The ``cel`` package logs a warning for every exception a Python function raises;
    a failed ``matches`` already becomes an evaluation error, so it is not logged twice."""

    def filter(self, record: logging.LogRecord) -> bool:
        return f"'{FUNCTION}'" not in record.getMessage()


logging.getLogger("cel").addFilter(_QuietMatchesFailures())
