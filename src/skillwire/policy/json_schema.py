"""JSON Schema validation (Draft 2020-12) whose patterns run on the skill pattern engine.

``jsonschema`` matches ``pattern``, ``patternProperties`` and the names
``additionalProperties`` weighs with Python's ``re``: a backtracking engine, on which
``^(a+)+$`` takes seconds for 26 characters, and whose ``$`` matches before a final
newline. :func:`schema_validator` gives a validator whose pattern keywords run on
:mod:`skillwire.core.patterns` instead, so tool arguments, input given on resume, the
gate and the offline extractor agree on every value.

Two parts of a schema would still reach ``re`` whatever validator is given (a
``$schema`` below the root, ``unevaluatedProperties`` with ``patternProperties``): the
skill loader refuses them, and a validator given one anyway rejects every value with the
reason, failing closed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators

from skillwire.core.patterns import Pattern, PatternError, compile_pattern, schema_pattern_problem

__all__ = ["schema_validator"]

_REFUSED = "x-skillwire-refused"


def schema_validator(schema: Mapping[str, Any] | bool) -> Any:
    """A Draft 2020-12 validator for ``schema`` that runs its patterns on the skill
    pattern engine (``iter_errors``, ``is_valid`` ... as ``jsonschema``'s).

    A pattern the engine cannot take is an error of every value it applies to, never a
    pass. Never fetches a remote ``$ref``.
    """
    if isinstance(schema, Mapping):
        problem = schema_pattern_problem(schema)
        if problem is not None:
            message, path = problem
            where = "/".join(path)
            return _Validator({_REFUSED: f"the schema cannot be checked at {where}: {message}"})
        return _Validator(dict(schema))
    return _Validator(schema)


def _compiled(pattern: Any) -> Pattern | ValidationError:
    if not isinstance(pattern, str):
        return ValidationError(f"the pattern {pattern!r} is not text")
    try:
        return compile_pattern(pattern)
    except PatternError as exc:
        return ValidationError(str(exc))


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    compiled = _compiled(pattern)
    if isinstance(compiled, ValidationError):
        yield compiled
    elif not compiled.accepts(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = _compiled(pattern)
        if isinstance(compiled, ValidationError):
            yield compiled
            continue
        for name, value in instance.items():
            if compiled.search(name) is not None:
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(
    validator: Any, extra: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """``jsonschema``'s own keyword, with names matched on the skill pattern engine."""
    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties", {})
    compiled = [_compiled(p) for p in schema.get("patternProperties", {})]
    patterns = [p for p in compiled if isinstance(p, Pattern)]
    if len(patterns) != len(compiled):
        return  # patternProperties reports the pattern that does not compile
    extras = [
        name
        for name in instance
        if name not in named and not any(p.search(name) is not None for p in patterns)
    ]
    if validator.is_type(extra, "object"):
        for name in extras:
            yield from validator.descend(instance[name], extra, path=name)
    elif not extra and extras:
        listed = ", ".join(repr(name) for name in sorted(extras, key=str))
        if patterns:
            regexes = ", ".join(repr(p.source) for p in sorted(patterns, key=lambda p: p.source))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{listed} {verb} not match any of the regexes: {regexes}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({listed} {verb} unexpected)"
            )


def _refused(validator: Any, reason: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    yield ValidationError(str(reason))


_Validator: Any = validators.extend(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        _REFUSED: _refused,
    },
)
