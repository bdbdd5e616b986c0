"""The value types an intent entity may declare beyond JSON's: list, date, money.

- ``list``: several values of one kind (``items``, a JSON Schema, text by default);
  the entity's ``pattern`` and ``enum`` apply to each item; at most ``maxItems`` (else
  :data:`MAX_LIST_ITEMS`) items. ``items: {type: string, format: email}`` is an e-mail
  address (checked by :data:`EMAIL_PATTERN`).
- ``date``: a calendar date as ISO text, ``"2026-03-14"``.
- ``date_range``: ``{"start": date, "end": date}``, the start not after the end.
- ``money``: an amount as a JSON number (``"$1,250.50"`` is ``1250.5``), never below
  ``minimum`` (0 unless set), with at most two decimals. ``currency`` (an ISO 4217
  code, or a list of them) names the currencies a value may be written in: the
  offline extractor does not take an amount written in another (it never converts).

:func:`entity_schema` is the JSON Schema of such a value and :func:`value_problem`
what JSON Schema cannot say (a real calendar date, a range in order, whole cents);
the engine keeps an entity's value only when both accept it.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Final

__all__ = [
    "DATE_PATTERN",
    "EMAIL_PATTERN",
    "ENTITY_TYPES",
    "MAX_LIST_ITEMS",
    "entity_schema",
    "value_problem",
]

ENTITY_TYPES: Final = ("list", "date", "date_range", "money")
"""The entity types that are not JSON types."""
MAX_LIST_ITEMS = 20
"""The most items a ``list`` entity holds unless it sets ``maxItems``."""
DATE_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
"""The text of a ``date`` value (a real calendar date besides: :func:`value_problem`)."""
EMAIL_PATTERN = "^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,}$"
"""An e-mail address, as a ``list`` item of ``format: email`` is checked."""
_MONEY_DECIMALS = 2


def _date_schema() -> dict[str, Any]:
    return {"type": "string", "pattern": DATE_PATTERN}


def _item_schema(items: dict[str, Any] | None, pattern: str | None, enum: Any) -> dict[str, Any]:
    item: dict[str, Any] = dict(items) if items else {"type": "string"}
    if item.get("format") == "email" and "pattern" not in item:
        item["pattern"] = EMAIL_PATTERN
    if pattern is not None and "pattern" not in item:
        item["pattern"] = pattern
    if enum is not None and "enum" not in item:
        item["enum"] = list(enum)
    return item


def entity_schema(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a value of entity type ``kind`` (one of
    :data:`ENTITY_TYPES`), given the entity's other keys (``items``, ``pattern``,
    ``enum``, ``minimum``, ``maximum``, ``maxItems``, ``description``)."""
    schema: dict[str, Any]
    if kind == "list":
        schema = {
            "type": "array",
            "items": _item_schema(spec.get("items"), spec.get("pattern"), spec.get("enum")),
            "maxItems": spec.get("maxItems") or MAX_LIST_ITEMS,
        }
    elif kind == "date":
        schema = _date_schema()
    elif kind == "date_range":
        schema = {
            "type": "object",
            "properties": {"start": _date_schema(), "end": _date_schema()},
            "required": ["start", "end"],
            "additionalProperties": False,
        }
    else:  # money
        minimum = spec.get("minimum")
        schema = {"type": "number", "minimum": 0 if minimum is None else minimum}
        if spec.get("maximum") is not None:
            schema["maximum"] = spec["maximum"]
    if spec.get("description"):
        schema["description"] = spec["description"]
    return schema


def _date_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return None  # the schema says what is wrong
    try:
        date.fromisoformat(value)
    except ValueError:
        return f"{value!r} is not a date of the calendar"
    return None


def value_problem(kind: str, value: Any) -> str | None:
    """What is wrong with a value of entity type ``kind`` that its JSON Schema lets
    through, or None (a type that is not one of :data:`ENTITY_TYPES`: None)."""
    if kind == "date":
        return _date_problem(value)
    if kind == "date_range" and isinstance(value, dict):
        start, end = value.get("start"), value.get("end")
        problem = _date_problem(start) or _date_problem(end)
        if problem is not None:
            return problem
        if isinstance(start, str) and isinstance(end, str) and start > end:
            return f"the range starts ({start}) after it ends ({end})"
        return None
    money = kind == "money" and isinstance(value, int | float) and not isinstance(value, bool)
    if money and round(value, _MONEY_DECIMALS) != value:
        return f"{value!r} has more than {_MONEY_DECIMALS} decimals"
    return None
