"""CEL's rules for the values a condition reads, as the evaluator applies them.

Every rule here was checked against the ``cel`` package
(``tests/conditions/test_evaluator.py`` and ``test_semantics.py``), not taken from the
CEL specification alone; where the two differ, the package is the reference:

* a Python ``int`` is a CEL int when it fits in 64 bits; a ``float`` a double, a
  ``str`` a string, a ``bool`` a bool (never a number), ``None`` null, a ``list`` or
  ``tuple`` a list, a ``dict`` a map, a timezone-aware ``datetime`` a timestamp (a naive
  one is read as UTC) and a ``timedelta`` a duration;
* an int and a double compare as doubles (``2**53 + 1 == 2.0**53`` is true);
* equality between values of different kinds is false, never an error (``true == 1``,
  ``'1' == 1``, ``null == 0``, ``[1] == 'x'``, ``type(x) == 'string'``); lists and maps
  are equal when their elements (entries) are; NaN equals nothing, ``-0.0`` equals ``0``;
* ordering is defined for two numbers (NaN excepted), two strings (code-point order),
  two bools, two timestamps and two durations; anything else is an error;
* the size of a string is its length in UTF-8 bytes, not in characters.

An error is a value, :class:`Unsure` (``false && error`` is false: CEL's ``&&`` and
``||`` absorb it), carrying what went wrong. A value that is none of the above (an
object, a ``Decimal``, a subclass of ``int``, a string with a lone surrogate, an int
beyond 64 bits) is not read at all: :class:`GiveUp` is raised and nothing absorbs it,
as the package fails to convert such a value before it evaluates anything. The gate
only ever passes plain JSON (:mod:`skillwire.policy.gate_input`).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from typing import Any, Final

from skillwire.conditions.functions import History
from skillwire.core.errors import ControlFlowSignal

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "UNSURE",
    "CelType",
    "GiveUp",
    "Unsure",
    "contains",
    "equal",
    "fail",
    "is_text",
    "kind",
    "order",
    "shown",
    "size_of",
    "truth",
    "type_named",
    "type_of",
    "unequal",
]


class Unsure:
    """An evaluation error as a value, with what went wrong."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"Unsure({self.reason!r})"


def fail(reason: str) -> Unsure:
    """An evaluation error saying ``reason``."""
    return Unsure(reason)


UNSURE: Final = Unsure("no such overload")
"""A generic evaluation error."""


class GiveUp(ControlFlowSignal):
    """A value the evaluator does not read (not JSON-like): the evaluation fails."""


class CelType:
    """A CEL type as a value, what ``type(x)`` gives (``type(x) == type('')``).

    There is one instance per type, so that two are equal when they are the same object.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"CelType({self.name!r})"


INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**63 - 1
_UTC = datetime.UTC
_KINDS: dict[type, str] = {
    str: "string", int: "int", float: "double", bool: "bool", type(None): "null",
    list: "list", tuple: "list", dict: "map", CelType: "type",
    datetime.datetime: "timestamp", datetime.timedelta: "duration", History: "list",
}  # fmt: skip
_NUMBERS = frozenset({"int", "double"})
_ORDERED = frozenset({"int", "string", "bool", "timestamp", "duration"})
_TYPES = {
    name: CelType(cel_name)
    for name, cel_name in [
        *(("bool", "bool"), ("int", "int"), ("double", "double"), ("string", "string")),
        *(("null", "null_type"), ("list", "list"), ("map", "map"), ("type", "type")),
        ("timestamp", "google.protobuf.Timestamp"),
        ("duration", "google.protobuf.Duration"),
    ]
}
_BY_CEL_NAME = {t.name: t for t in _TYPES.values()}


def type_named(name: str) -> CelType:
    """The type a CEL type name (``int``, ``list``, ``null_type``) stands for."""
    return _BY_CEL_NAME[name]


def is_text(value: str) -> bool:
    """False for a string the evaluator does not read (one with a lone surrogate)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def kind(value: Any) -> str | None:
    """The CEL kind of ``value`` (``int``, ``string``, ``list``, ...); None for an error.

    Raises :class:`GiveUp` for a value the evaluator does not read. A list or a map is
    classified by its type alone: its elements are read only where an operation needs them.
    """
    found = _KINDS.get(type(value))
    if found is None:
        if type(value) is Unsure:
            return None
        raise GiveUp(f"a value of type {type(value).__name__} is not a JSON value")
    if found == "string":
        if not is_text(value):
            raise GiveUp("a text holds a lone surrogate (not UTF-8)")
    elif found == "int" and not INT_MIN <= value <= INT_MAX:
        raise GiveUp(f"an integer of {value.bit_length()} bits does not fit in 64 bits")
    return found


def shown(value: Any) -> str:
    """The CEL kind of ``value`` for a message (``int``, ``string``, ``map``, ...)."""
    return _KINDS.get(type(value)) or type(value).__name__


def truth(value: Any) -> bool | Unsure:
    """``value`` as an operand of ``&&``, ``||``, ``!`` or ``? :``: a bool, else an error."""
    if value is True or value is False:
        return value
    if kind(value) is None:
        return value  # type: ignore[no-any-return]
    return fail(f"{shown(value)} is not true or false")


def _instant(value: datetime.datetime) -> datetime.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=_UTC)


def equal(left: Any, right: Any) -> bool | Unsure:
    """``left == right`` as CEL answers it."""
    a = kind(left)
    if a is None:
        return left  # type: ignore[no-any-return]
    b = kind(right)
    if b is None:
        return right  # type: ignore[no-any-return]
    if a == b:
        if a == "list":
            if len(left) != len(right):
                return False
            for x, y in zip(left, right, strict=True):
                found = equal(x, y)
                if found is not True:
                    return found
            return True
        if a == "map":
            if len(left) != len(right):
                return False
            for key, item in left.items():
                if key not in right:
                    return False
                found = equal(item, right[key])
                if found is not True:
                    return found
            return True
        if a == "timestamp":
            return _instant(left) == _instant(right)
        return bool(left == right)  # a double NaN equals nothing, -0.0 equals 0.0
    if a in _NUMBERS and b in _NUMBERS:
        return float(left) == float(right)
    return False


def unequal(left: Any, right: Any) -> bool | Unsure:
    """``left != right`` as CEL answers it."""
    found = equal(left, right)
    return found if type(found) is Unsure else not found


def order(compare: Callable[[Any, Any], bool], left: Any, right: Any) -> bool | Unsure:
    """``compare(left, right)`` (``<``, ``<=``, ``>`` or ``>=``) as CEL answers it."""
    a = kind(left)
    if a is None:
        return left  # type: ignore[no-any-return]
    b = kind(right)
    if b is None:
        return right  # type: ignore[no-any-return]
    if a == b and a in _ORDERED:
        if a == "timestamp":
            return compare(_instant(left), _instant(right))
        return compare(left, right)
    if a not in _NUMBERS or b not in _NUMBERS:
        return fail(f"cannot order {a} and {b}")
    if math.isnan(left) or math.isnan(right):
        return fail("NaN has no order")
    if a == b:
        return compare(left, right)
    return compare(float(left), float(right))


def contains(collection: Any, item: Any) -> bool | Unsure:
    """``item in collection``: an element of a list, or a key of a map."""
    of = kind(collection)
    if of is None:
        return collection  # type: ignore[no-any-return]
    item_kind = kind(item)
    if item_kind is None:
        return item  # type: ignore[no-any-return]
    if of == "list":
        for element in collection:
            found = equal(item, element)
            if found is not False:
                return found
        return False
    if of == "map":
        if item_kind in ("string", "int"):
            return item in collection
        if item_kind == "bool":
            return any(type(key) is bool and key is item for key in collection)
        return fail(f"a {item_kind} is not a map key")
    return fail(f"`in` needs a list or a map, not {of}")


def size_of(value: Any) -> int | Unsure:
    """``size(value)``: entries of a list or a map; UTF-8 bytes (not characters) of a
    string, as the package counts them (``size('é')`` is 2)."""
    found = kind(value)
    if found == "string":
        return len(value) if value.isascii() else len(value.encode("utf-8"))
    if found in ("list", "map"):
        return len(value)
    if found is None:
        return value  # type: ignore[no-any-return]
    return fail(f"size() of {found}")


def type_of(value: Any) -> CelType | Unsure:
    """``type(value)``."""
    of = kind(value)
    if of is None:
        return value  # type: ignore[no-any-return]
    return _TYPES[of]
