"""The reference the evaluator is checked against: the ``cel`` package itself.

:func:`by_cel` runs the CEL a condition compiled to (its ``expression``) with the
package, as skillwire ran it before it had one evaluator: every whole number as a double
when the expression computes, the helpers and the job's functions given as Python
functions, ``matches`` on the skill pattern engine (the package's own engine is another
dialect). :func:`outcome` is what the evaluator gives for the same values.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from typing import Any

import cel

from skillwire.conditions import (
    HELPERS,
    PROVENANCE_KEY,
    RUNS_KEY,
    CelCondition,
    CelExpression,
    ConditionEvaluationError,
    Provenance,
    Runs,
    tokenize,
)
from skillwire.conditions._values import CelType
from skillwire.core.patterns import PatternError, compile_pattern

ERROR = "error"
"""What either side gives when it cannot evaluate."""

_WHOLE_LIMIT = 2**53
_MATCHES = "skillwire_matches"
_JOB = {"untrusted": (PROVENANCE_KEY, "untrusted"), "origin": (PROVENANCE_KEY, "origins")}
_JOB["latest"] = (RUNS_KEY, "latest")
_HOLDERS: dict[str, type] = {PROVENANCE_KEY: Provenance, RUNS_KEY: Runs}


def _matches(value: Any, pattern: Any) -> bool:
    if type(value) is not str or type(pattern) is not str:
        raise ValueError("matches() takes text")
    try:
        return compile_pattern(pattern).search(value) is not None
    except PatternError as exc:
        raise ValueError(str(exc)) from None


def _routed(expression: str) -> str:
    tokens = tokenize(expression)
    parts: list[str] = []
    at = 0
    for i, token in enumerate(tokens[:-1]):
        if token.kind == "name" and token.text == "matches" and tokens[i + 1].text == "(":
            parts += [expression[at : token.start], _MATCHES]
            at = token.end
    return "".join([*parts, expression[at:]])


def _decimal(value: Any) -> Any:
    kind = type(value)
    if kind is int:
        return float(value) if -_WHOLE_LIMIT <= value <= _WHOLE_LIMIT else value
    if kind is dict:
        return {key: _decimal(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [_decimal(item) for item in value]
    return value


def by_cel(condition: CelCondition, variables: Mapping[str, Any]) -> Any:
    """What the package gives for ``condition`` on ``variables``: a value or
    :data:`ERROR` (for a condition, anything but a bool is an error)."""
    calls = condition.calls
    values: dict[str, Any] = {}
    for name in condition.names:
        if name in variables:
            values[name] = variables[name]
        elif not name.startswith("$"):
            return ERROR  # a name without a value
    for name in ("bool", "bytes", "double", "int", "list", "map", "null_type", "string"):
        if name in variables and name not in values and name in condition.expression:
            values[name] = variables[name]
    functions: dict[str, Any] = {name: HELPERS[name] for name in calls if name in HELPERS}
    for name, (key, method) in _JOB.items():
        if name in calls:
            holder = values.pop(key, None)
            if not isinstance(holder, _HOLDERS[key]):
                return ERROR
            functions[name] = getattr(holder, method)
    expression = condition.expression
    if "matches" in calls:
        expression = _routed(expression)
        functions[_MATCHES] = _matches
    if condition._rewrite.arithmetic:
        values = {name: _decimal(value) for name, value in values.items()}
    try:
        program = cel.compile(expression)
        if functions:
            result = program.execute(cel.Context(values, functions))
        else:
            result = program.execute(values)
    except Exception:
        return ERROR
    except BaseException as exc:  # the extension's panic
        if type(exc).__name__ != "PanicException":
            raise
        return ERROR
    if not isinstance(condition, CelExpression) and type(result) is not bool:
        return ERROR
    return result


def outcome(condition: CelCondition, variables: Mapping[str, Any]) -> Any:
    """What the evaluator gives: a value (lists as lists, types by name) or :data:`ERROR`."""
    try:
        return plain(condition.evaluate(variables))
    except ConditionEvaluationError:
        return ERROR


def plain(value: Any) -> Any:
    """``value`` as the package gives it back: tuples as lists, a type by its name."""
    if type(value) in (list, tuple):
        return [plain(item) for item in value]
    if type(value) is dict:
        return {key: plain(item) for key, item in value.items()}
    if type(value) is CelType:
        return value.name
    return value


def same(ours: Any, theirs: Any, *, inner: bool = False) -> bool:
    """Equal values of the same types (``1`` is not ``1.0``, NaN is NaN). Inside a list
    or a map (``inner``) a whole number equals the same double: an expression that
    computes reads the numbers of the data as doubles where it reads them, and gives a
    list or map it read whole as it is (the package converted every value first)."""
    numbers = (int, float)
    if inner and type(ours) in numbers and type(theirs) in numbers:
        return ours == theirs or (math.isnan(ours) and math.isnan(theirs))
    if type(ours) is not type(theirs):
        return False
    if type(ours) is float:
        return ours == theirs or (math.isnan(ours) and math.isnan(theirs))
    if type(ours) is list:
        return len(ours) == len(theirs) and all(
            same(a, b, inner=True) for a, b in zip(ours, theirs, strict=True)
        )
    if type(ours) is dict:
        return ours.keys() == theirs.keys() and all(
            same(ours[k], theirs[k], inner=True) for k in ours
        )
    if type(ours) is datetime.datetime:
        return bool(ours == theirs)
    return bool(ours == theirs)
