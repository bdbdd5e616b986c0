"""Checking a call's arguments against the tool's input schema, strictly and fast.

Nothing is coerced: ``"750"`` is not a number, ``1`` is not ``true``. A value that is
not JSON (a set, bytes, an object) and a number that is not finite (``NaN`` slips past
every comparison) are errors. An argument the schema does not name is an error unless
the schema's root says ``additionalProperties: true`` (or gives a schema for them).

Schemas written as ``inputs[]`` and the flat ``inputSchema`` objects packages carry are
checked by :class:`FieldCheck` (the keywords below, with ``jsonschema``'s semantics); a
property using any other keyword (``items``, ``oneOf``, ``$ref`` ...) is checked by a
``jsonschema`` validator of its own, and a schema whose root uses anything else is
checked by ``jsonschema`` (Draft 2020-12, compiled once, never fetching a remote
``$ref``) as a whole.

Every ``pattern`` runs on the skill pattern engine (:mod:`skillwire.core.patterns`,
through :func:`~skillwire.policy.json_schema.schema_validator` for ``jsonschema``): a
search in the value, ``$`` at its very end, linear time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from skillwire.core.patterns import Pattern, PatternError, compile_pattern
from skillwire.policy.json_schema import schema_validator

__all__ = ["ArgumentChecker", "FieldCheck", "json_problem", "same_value"]

_TYPE_CHECKS: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
_FIELD_KEYS = frozenset(
    {
        "type",
        "enum",
        "const",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "description",
        "title",
        "default",
        "examples",
        "format",  # an annotation only: jsonschema checks formats only when asked to
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_ROOT_KEYS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "description",
        "title",
        "$schema",
        "$id",
        "$comment",
        "examples",
    }
)


def json_problem(value: Any, where: str = "") -> str | None:
    """Why ``value`` is not a JSON value (or holds a non-finite number), or None."""
    kind = type(value)
    if kind is str or kind is bool or kind is int or value is None:
        return None
    if kind is float:
        return None if math.isfinite(value) else f"{where or 'value'}: {value!r} is not a number"
    if isinstance(value, bool | int | str):
        return None
    if isinstance(value, float):
        return json_problem(float(value), where)
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            problem = json_problem(item, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where or 'value'}: key {key!r} is not a string"
            problem = json_problem(item, f"{where}.{key}" if where else key)
            if problem:
                return problem
        return None
    return f"{where or 'value'}: a {kind.__name__} is not a JSON value"


_SCALAR_TYPES = frozenset((str, int, float, type(None)))
"""Exact types whose values compare by ``==`` as JSON compares them (``bool`` is not
one of them: ``True == 1``)."""


def same_value(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``; ``1`` is ``1.0``."""
    kind = type(a)
    if kind is type(b) and kind in _SCALAR_TYPES:
        equal: bool = a == b  # the common case: no subclass, so ``==`` is the type's own
        return equal
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class FieldCheck:
    """The check of one argument: type, enum/const, pattern, bounds, lengths."""

    __slots__ = (
        "_bounded",
        "_check",
        "_measured",
        "enum",
        "name",
        "pattern",
        "schema",
        "type",
        "validator",
    )

    def __init__(self, name: str, schema: Mapping[str, Any]) -> None:
        self.name = name
        self.schema = dict(schema)
        kind = schema.get("type")
        self.type = kind if isinstance(kind, str) and kind in _TYPE_CHECKS else None
        self._check = _TYPE_CHECKS[self.type] if self.type else None
        enum = schema.get("enum")
        if "const" in schema:
            enum = [schema["const"]]
        self.enum: list[Any] | None = list(enum) if isinstance(enum, list) else None
        self.pattern: Pattern | PatternError | None = None
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                self.pattern = compile_pattern(pattern)
            except PatternError as exc:  # the loader refuses it; never a pass if it gets here
                self.pattern = exc
        self._measured = "minLength" in schema or "maxLength" in schema
        self._bounded = not _BOUNDS.isdisjoint(schema)
        simple = set(schema) <= _FIELD_KEYS and (kind is None or self.type is not None)
        self.validator = None if simple else schema_validator(dict(schema))

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value``, or None. Never coerces."""
        if self.validator is not None:
            for err in self.validator.iter_errors(value):
                inner = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.path)
                return f"{inner.lstrip('.') + ': ' if inner else ''}{err.message}"
            return None
        if self._check is not None and not self._check(value):
            shown = "boolean" if isinstance(value, bool) else type(value).__name__
            return f"expected {self.type}, got {shown} {value!r}"
        if self.enum is not None and not any(same_value(value, e) for e in self.enum):
            return f"{value!r} is not one of {self.enum!r}"
        if isinstance(value, str):
            if isinstance(self.pattern, PatternError):
                return str(self.pattern)
            if self.pattern is not None and not self.pattern.accepts(value):
                return f"{value!r} does not match pattern {self.pattern.source!r}"
            return self._length(value) if self._measured else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return self._bounds(value) if self._bounded else None
        return None

    def _length(self, value: str) -> str | None:
        low, high = self.schema.get("minLength"), self.schema.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            return f"{value!r} is shorter than {low} characters"
        if isinstance(high, int) and len(value) > high:
            return f"{value!r} is longer than {high} characters"
        return None

    def _bounds(self, value: float) -> str | None:
        s = self.schema
        if "minimum" in s and value < s["minimum"]:
            return f"{value!r} is below the minimum {s['minimum']}"
        if "maximum" in s and value > s["maximum"]:
            return f"{value!r} is above the maximum {s['maximum']}"
        if "exclusiveMinimum" in s and value <= s["exclusiveMinimum"]:
            return f"{value!r} is not above {s['exclusiveMinimum']}"
        if "exclusiveMaximum" in s and value >= s["exclusiveMaximum"]:
            return f"{value!r} is not below {s['exclusiveMaximum']}"
        return None


class ArgumentChecker:
    """Every problem with a call's arguments (a missing required one is not a problem
    here: the gate asks for it)."""

    __slots__ = ("_extra_allowed", "_fields", "_validator", "tool")

    def __init__(self, tool: str, schema: Mapping[str, Any]) -> None:
        self.tool = tool
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties", False)
        self._extra_allowed = extra is not False
        simple = (
            set(schema) <= _ROOT_KEYS
            and extra in (True, False)
            and all(isinstance(p, dict) for p in props.values())
        )
        self._fields = {name: FieldCheck(name, p) for name, p in props.items()} if simple else {}
        whole = {k: v for k, v in schema.items() if k != "required"}
        self._validator = None if simple else schema_validator(whole)

    def errors(self, args: Mapping[str, Any]) -> list[str]:
        """``"<argument>: <problem>"`` for each problem found, in argument order."""
        errors: list[str] = []
        fields = self._fields
        for key, value in args.items():
            if value is None:
                continue  # absent; a required one is asked for
            problem = json_problem(value, key)
            if problem:
                errors.append(problem)
                continue
            check = fields.get(key)
            if check is not None:
                found = check.problem(value)
                if found:
                    errors.append(f"{key}: {found}")
            elif self._validator is None and not self._extra_allowed:
                errors.append(f"{key}: unknown argument of {self.tool}")
        if self._validator is not None and not errors:
            present = {k: v for k, v in args.items() if v is not None}
            for err in self._validator.iter_errors(present):
                where = ".".join(str(p) for p in err.absolute_path) or "arguments"
                errors.append(f"{where}: {err.message}")
            if not self._extra_allowed:
                known = self._known()
                errors.extend(
                    f"{k}: unknown argument of {self.tool}" for k in present if k not in known
                )
        return errors

    def _known(self) -> frozenset[str]:
        assert self._validator is not None
        props = self._validator.schema.get("properties")
        return frozenset(props) if isinstance(props, dict) else frozenset()
