"""Is a tool's input schema a valid JSON Schema (Draft 2020-12)? Fast, with the same answer.

``Draft202012Validator.check_schema`` validates a schema against the metaschema, resolving
its ``$dynamicRef`` chain at every level: several milliseconds per tool, most of a package
load. :func:`schema_problem` answers the same question in two steps:

1. :func:`_plainly_valid` walks the schema and accepts it only when every keyword is one
   whose metaschema rule it can check exactly (``type``, ``properties``, ``required``,
   ``pattern``, ``$ref`` ...), with a value that rule accepts. It never accepts a schema
   the metaschema rejects; anything else it is unsure of (``$id``, an unknown keyword, a
   float where an integer belongs) goes to step 2.
2. jsonschema's own check, cached by the schema's JSON text, so its message and path are
   exactly the ones it gives. Whatever else it raises on hostile input is a problem to
   report, not a traceback.

A ``pattern`` is a valid ``regex`` when the skill pattern engine takes it
(:mod:`skillwire.core.patterns`), in both steps: the metaschema's ``format: regex`` is
checked with that engine, not with Python's ``re``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker, SchemaError

from skillwire.core.patterns import PatternError, compile_pattern

__all__ = ["schema_problem"]

Problem = tuple[str, tuple[str, ...]]
"""The metaschema's message and the path inside the schema where it applies."""

_MAX_WALK_DEPTH = 64
_CACHE_SIZE = 1024

_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_SUBSCHEMA = frozenset(
    {
        *("items", "contains", "additionalProperties", "propertyNames", "not"),
        *("if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"),
    }
)
_SCHEMA_MAP = frozenset({"properties", "$defs", "dependentSchemas", "definitions"})
_SCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_NUMBER = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_COUNT = frozenset(
    {
        *("minLength", "maxLength", "minItems", "maxItems"),
        *("minProperties", "maxProperties", "minContains", "maxContains"),
    }
)
_TEXT = frozenset(
    {"title", "description", "$comment", "format", "contentEncoding", "contentMediaType"}
)
_FLAG = frozenset({"uniqueItems", "deprecated", "readOnly", "writeOnly"})
_ANY = frozenset({"const", "default"})
_REF_FORMAT_CHECKED = "uri-reference" in Draft202012Validator.FORMAT_CHECKER.checkers
"""Whether jsonschema checks ``$ref`` as a URI reference (only with an optional package);
without it, the metaschema accepts any string."""
_ARRAY = frozenset({"enum", "examples"})


def schema_problem(schema: Any) -> Problem | None:
    """None when ``schema`` is a valid Draft 2020-12 schema, else what is wrong and where."""
    if _plainly_valid(schema, 0):
        return None
    try:
        key = json.dumps(schema, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return _full_check(schema)
    return _cached_check(key)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _cached_check(text: str) -> Problem | None:
    return _full_check(json.loads(text))


def _takes_pattern(value: object) -> bool:
    """The metaschema's ``format: regex``, on the skill pattern engine (raises its error)."""
    if isinstance(value, str):
        compile_pattern(value)
    return True


_FORMATS = FormatChecker(Draft202012Validator.FORMAT_CHECKER.checkers)
_FORMATS.checks("regex", raises=PatternError)(_takes_pattern)


def _full_check(schema: Any) -> Problem | None:
    try:
        Draft202012Validator.check_schema(schema, format_checker=_FORMATS)
    except SchemaError as exc:
        return exc.message, tuple(str(part) for part in exc.path)
    except Exception as exc:  # hostile input reaching jsonschema: report, never raise
        if isinstance(exc, RecursionError):
            return "it is nested too deeply to check", ()
        return f"it cannot be checked ({type(exc).__name__}: {exc})", ()
    return None


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _is_regex(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        compile_pattern(value)
    except PatternError:  # step 2 says so, in jsonschema's words
        return False
    return True


def _unique_strings(value: Any, *, non_empty: bool = False) -> bool:
    if not isinstance(value, list) or (non_empty and not value):
        return False
    if not all(isinstance(item, str) for item in value):
        return False
    return len(set(value)) == len(value)


def _plainly_valid(schema: Any, depth: int) -> bool:
    """True only if the metaschema certainly accepts ``schema`` (False: not sure)."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or depth > _MAX_WALK_DEPTH:
        return False
    deeper = depth + 1
    for key, value in schema.items():
        if key == "type":
            ok = (
                value in _TYPES
                if isinstance(value, str)
                else _unique_strings(value, non_empty=True) and all(v in _TYPES for v in value)
            )
        elif key in _SCHEMA_MAP:
            ok = isinstance(value, dict) and all(
                _plainly_valid(sub, deeper) for sub in value.values()
            )
        elif key in _SUBSCHEMA:
            ok = _plainly_valid(value, deeper)
        elif key == "required":
            ok = _unique_strings(value)
        elif key in _TEXT:
            ok = isinstance(value, str)
        elif key in _NUMBER:
            ok = _is_number(value)
        elif key in _COUNT:
            ok = _is_count(value)
        elif key == "pattern":
            ok = _is_regex(value)
        elif key in _SCHEMA_LIST:
            ok = (
                isinstance(value, list)
                and bool(value)
                and all(_plainly_valid(sub, deeper) for sub in value)
            )
        elif key in _ANY:
            ok = True
        elif key in _ARRAY:
            ok = isinstance(value, list)
        elif key in _FLAG:
            ok = isinstance(value, bool)
        elif key == "multipleOf":
            ok = _is_number(value) and value > 0
        elif key == "patternProperties":
            ok = isinstance(value, dict) and all(
                _is_regex(name) and _plainly_valid(sub, deeper) for name, sub in value.items()
            )
        elif key == "dependentRequired":
            ok = isinstance(value, dict) and all(_unique_strings(v) for v in value.values())
        elif key == "$ref":
            ok = isinstance(value, str) and not _REF_FORMAT_CHECKED
        else:  # $id, $schema, $anchor, an unknown keyword ...: the metaschema decides
            ok = False
        if not ok:
            return False
    return True
