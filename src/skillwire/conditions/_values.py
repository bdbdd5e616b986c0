"""What the CEL extension makes of the Python values a condition reads, for the fast path.

Every rule here was checked against the ``cel`` package itself
(``tests/conditions/test_fastpath.py``), not taken from the CEL specification; where the
two differ, the package is the reference:

* a Python ``int`` within 64 bits is a CEL int; from 2**63 to 2**64 - 1 it becomes a
  uint (which never equals an int) and beyond that a double, so such ints are unsure here;
* an int and a double are compared as doubles (``2**53 + 1 == 2.0**53`` is true), so
  they are compared here only when the int is within 2**53, where that is exact;
* equality between values of different kinds is false, never an error (``true == 1``,
  ``'1' == 1``, ``null == 0``, ``[1] == 'x'``, ``type(x) == 'string'``); NaN equals
  nothing, ``-0.0`` equals ``0``;
* ordering is defined for two numbers (NaN excepted), two strings (code-point order) and
  two bools; anything else is an error;
* the size of a string is its length in UTF-8 bytes, not in characters.

Two outcomes stand for "no answer here". :data:`UNSURE` is a value: CEL raises an
evaluation error there (or gives an answer the fast path does not reproduce), which
``false && ...`` still absorbs. :class:`GiveUp` is raised for a value the fast path does
not read at all: a string with a lone surrogate, an int too large for a double, or any
type other than the exact JSON-like ones (a ``bool`` is never an int; a dict subclass, a
datetime or a ``Decimal`` is not a dict or a number here). The extension fails to
convert some of these, and then nothing absorbs the error, so the whole fast path stops.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

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
    "is_text",
    "kind",
    "order",
    "size_of",
    "truth",
    "type_of",
    "unequal",
]


class Unsure:
    """The type of :data:`UNSURE`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSURE"


UNSURE: Final = Unsure()
"""CEL raises an evaluation error here, or the fast path cannot tell what it gives."""


class GiveUp(ControlFlowSignal):
    """A value the fast path does not read: CEL alone decides (and may fail to convert it)."""


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
_UINT_MAX = 2**64 - 1
_CONVERTIBLE = 2**1000  # well inside a double's range: the extension converts such ints
_EXACT = 2**53
_KINDS: dict[type, str] = {
    str: "string", int: "int", float: "double", bool: "bool", type(None): "null",
    list: "list", tuple: "list", dict: "map", CelType: "type",
}  # fmt: skip
_NUMBERS = frozenset({"int", "double"})
_TYPES = {
    name: CelType(cel_name)
    for name, cel_name in [
        *(("bool", "bool"), ("int", "int"), ("double", "double"), ("string", "string")),
        *(("null", "null_type"), ("list", "list"), ("map", "map"), ("type", "type")),
        ("uint", "uint"),
    ]
}
_PLAIN_TYPES = {
    of: _TYPES[name] for of, name in _KINDS.items() if name not in ("string", "int")
}  # the types whose every value converts


def is_text(value: str) -> bool:
    """False for a string the extension cannot convert (one with a lone surrogate)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def kind(value: Any) -> str | None:
    """The CEL kind of ``value`` (``int``, ``string``, ``list``, ...); None when unsure.

    Raises :class:`GiveUp` for a value the fast path does not read. A list or a map is
    classified by its type alone: its elements are read only where an operation needs them.
    """
    found = _KINDS.get(type(value))
    if found is None:
        if value is UNSURE:
            return None
        raise GiveUp
    if found == "string":
        if not is_text(value):
            raise GiveUp
    elif found == "int" and not INT_MIN <= value <= INT_MAX:
        if -_CONVERTIBLE < value < _CONVERTIBLE:
            return None  # a uint or a double in CEL: converted, but not compared here
        raise GiveUp
    return found


def truth(value: Any) -> bool | Unsure:
    """``value`` as an operand of ``&&``, ``||``, ``!`` or ``? :``: a bool, else UNSURE."""
    if value is True or value is False:
        return value
    kind(value)
    return UNSURE


def equal(left: Any, right: Any) -> bool | Unsure:
    """``left == right`` as CEL answers it."""
    a, b = kind(left), kind(right)
    if a is None or b is None:
        return UNSURE
    if a == b:
        if a in ("list", "map"):
            return UNSURE
        return bool(left == right)  # a double NaN equals nothing, -0.0 equals 0.0
    if a in _NUMBERS and b in _NUMBERS:
        whole = left if a == "int" else right
        return bool(left == right) if -_EXACT <= whole <= _EXACT else UNSURE
    return False


def unequal(left: Any, right: Any) -> bool | Unsure:
    """``left != right`` as CEL answers it."""
    found = equal(left, right)
    return found if found is UNSURE else not found


def order(compare: Callable[[Any, Any], bool], left: Any, right: Any) -> bool | Unsure:
    """``compare(left, right)`` (``<``, ``<=``, ``>`` or ``>=``) as CEL answers it."""
    a, b = kind(left), kind(right)
    if a is None or b is None:
        return UNSURE
    if a == b and a in ("int", "string", "bool"):
        return compare(left, right)
    if a not in _NUMBERS or b not in _NUMBERS or math.isnan(left) or math.isnan(right):
        return UNSURE  # CEL does not order NaN
    if a == b or -_EXACT <= (left if a == "int" else right) <= _EXACT:
        return compare(left, right)
    return UNSURE


def contains(collection: Any, item: Any) -> bool | Unsure:
    """``item in collection``: an element of a list, or a string key of a map."""
    of, item_kind = kind(collection), kind(item)
    if item_kind is None:
        return UNSURE
    if of == "list":
        for element in collection:
            found = equal(item, element)
            if found is not False:
                return found
        return False
    if of == "map" and item_kind == "string":
        return item in collection
    return UNSURE


def size_of(value: Any) -> int | Unsure:
    """``size(value)``: entries of a list or a map; UTF-8 bytes (not characters) of a
    string, as the package counts them (``size('é')`` is 2)."""
    found = kind(value)
    if found == "string":
        return len(value) if value.isascii() else len(value.encode("utf-8"))
    if found in ("list", "map"):
        return len(value)
    return UNSURE


def type_of(value: Any) -> CelType | Unsure:
    """``type(value)``."""
    found = _PLAIN_TYPES.get(type(value))
    if found is not None:
        return found
    of = kind(value)
    if of is not None:
        return _TYPES[of]
    if type(value) is int:
        return _TYPES["uint" if 0 < value <= _UINT_MAX else "double"]
    return UNSURE
