"""``--input k=v`` and ``--context k=v``: text, typed by the schema of the field it fills.

A value is typed by its field's schema: a string field keeps the text as written
(``order_id=12345`` is ``"12345"``); an integer, number, boolean, null, object or array
field reads the text as JSON (``true``/``false`` in any case for a boolean); an ``enum``
takes the option written. A value that does not fit is a :class:`UsageError` naming the
field and what it expects. A field no schema types is text, unless the text is a JSON
object or array. ``k:=JSON`` always reads JSON (for a field no schema types; it must
still fit a schema that does).

Where the schemas are: for ``resume --input``, the waiting object's ``field_schemas``;
for ``run --context``, the skill's tool inputs, intent entities and ``required_inputs``
of the same name (``user_id``, the job's owner, is text).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillwire.core.errors import UsageError
from skillwire.skills.model import Skill

__all__ = ["Pair", "context_schemas", "split_pairs", "typed_value", "typed_values"]

Schema = Mapping[str, Any]

_EXPECTED = {
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
    "object": "a JSON object",
    "array": "a JSON array",
    "string": "text",
}


@dataclass(frozen=True)
class Pair:
    """One ``key=value`` (or ``key:=JSON``) as written."""

    key: str
    raw: str
    as_json: bool = False
    """Written ``key:=value``: the value is JSON whatever the schema."""

    def shown(self, option: str) -> str:
        """The pair as the user wrote it, for messages."""
        return f"{option} {self.key}{':=' if self.as_json else '='}{self.raw}"


def split_pairs(pairs: Iterable[str], option: str) -> list[Pair]:
    """Each ``key=value`` or ``key:=JSON``; a :class:`UsageError` for anything else."""
    out: list[Pair] = []
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        as_json = key.endswith(":")
        key = key.removesuffix(":") if as_json else key
        if not sep or not key:
            raise UsageError(f"{option} expects key=value (or key:=JSON), got {pair!r}")
        out.append(Pair(key, raw, as_json))
    return out


def typed_values(
    pairs: Sequence[Pair], schemas: Mapping[str, Sequence[Schema]], option: str
) -> dict[str, Any]:
    """Each pair's value typed by the schemas of its field (see the module docstring)."""
    return {p.key: typed_value(p, schemas.get(p.key, ()), option) for p in pairs}


def typed_value(pair: Pair, schemas: Sequence[Schema], option: str) -> Any:
    """``pair``'s value, typed by the first of ``schemas`` it fits (any one will do);
    a :class:`UsageError` when it fits none."""
    typing = [s for s in schemas if _types(s) or "enum" in s]
    if pair.as_json:
        value = _json(pair.raw)
        if value is _NOT_JSON:
            raise UsageError(f"{pair.shown(option)}: not JSON")
        if not typing or any(_fits(value, s) for s in typing):
            return value
        raise UsageError(f"{pair.shown(option)}: expected {_expectation(typing)}")
    if not typing:
        value = _json(pair.raw)
        return value if isinstance(value, dict | list) else pair.raw
    for schema in typing:
        found = _from_text(pair.raw, schema)
        if found is not _NOT_JSON:
            return found
    raise UsageError(f"{pair.shown(option)}: expected {_expectation(typing)}")


def context_schemas(skill: Skill) -> dict[str, list[dict[str, Any]]]:
    """The schemas a ``--context`` key may be typed by: the skill's tool inputs, intent
    entities and ``required_inputs`` (by path and by its last part) of that name;
    ``user_id`` (the job's owner) is text."""
    found: dict[str, list[dict[str, Any]]] = {"user_id": [{"type": "string"}]}

    def add(name: str, schema: dict[str, Any]) -> None:
        if name != "user_id":
            found.setdefault(name, []).append(schema)

    for tool in skill.tools:
        for spec in tool.input_fields():
            add(spec.name, spec.json_schema())
    for intent in skill.intents.supported:
        for entity in intent.entities:
            add(entity.name, entity.json_schema())
    for req in skill.required_inputs:
        schema: dict[str, Any] = {"type": req.type}
        if req.input_type == "choice" and req.options:
            schema["enum"] = list(req.options)
        add(req.path, schema)
        if "." in req.path:
            add(req.path.rsplit(".", 1)[-1], schema)
    return found


_NOT_JSON: Any = object()
"""What :func:`_json` and :func:`_from_text` give for text that is not a value."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json(raw: str) -> Any:
    """``raw`` read as JSON (no NaN or infinity), else :data:`_NOT_JSON`."""
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except ValueError:  # JSONDecodeError, or a number too long to read
        return _NOT_JSON
    if isinstance(value, float) and not math.isfinite(value):
        return _NOT_JSON  # 1e999
    return value


def _types(schema: Schema) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    return []


def _from_text(raw: str, schema: Schema) -> Any:
    """``raw`` as a value of ``schema``'s type or enum, else :data:`_NOT_JSON`."""
    if "enum" in schema:
        options = schema["enum"] if isinstance(schema["enum"], list) else []
        for option in options:
            if isinstance(option, str) and option == raw:
                return option
        value = _json(raw)
        for option in options:
            if not isinstance(option, str) and _same(value, option):
                return option
        return _NOT_JSON
    kinds = _types(schema)
    if "string" in kinds:
        return raw
    if "boolean" in kinds and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    value = _json(raw)
    if value is _NOT_JSON or not _fits(value, schema):
        return _NOT_JSON
    if isinstance(value, float) and value.is_integer() and "number" not in kinds:
        return int(value)  # 3.0 for an integer field
    return value


def _same(value: Any, option: Any) -> bool:
    """Equal and of the same JSON type (``1`` is not ``true``)."""
    return isinstance(value, bool) == isinstance(option, bool) and value == option


def _fits(value: Any, schema: Schema) -> bool:
    """Whether ``value`` has a type ``schema`` allows (and is one of its ``enum``)."""
    if "enum" in schema:
        options = schema["enum"] if isinstance(schema["enum"], list) else []
        if not any(_same(value, option) for option in options):
            return False
    kinds = _types(schema)
    return not kinds or any(_is(value, kind) for kind in kinds)


def _is(value: Any, kind: str) -> bool:
    if isinstance(value, bool):
        return kind == "boolean"
    if kind == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    checks: dict[str, type | tuple[type, ...]] = {
        "number": (int, float),
        "string": str,
        "object": dict,
        "array": list,
        "null": type(None),
    }
    wanted = checks.get(kind)
    return wanted is not None and isinstance(value, wanted)


def _expectation(schemas: Sequence[Schema]) -> str:
    """What the schemas want, in words: ``an integer``, ``one of 'ran', 'not_run'``."""
    wants: list[str] = []
    for schema in schemas:
        if "enum" in schema and isinstance(schema["enum"], list):
            want = "one of " + ", ".join(json.dumps(o) for o in schema["enum"])
            wants.append(want)
            continue
        wants += [_EXPECTED.get(kind, kind) for kind in _types(schema)]
    return " or ".join(dict.fromkeys(wants))
