"""CEL's arithmetic, conversions, timestamps and durations, as the evaluator applies them.

Checked against the ``cel`` package (``tests/conditions/test_semantics.py``):

* ``+ - * / %`` take two ints (64-bit, an overflow is an error; ``/`` truncates toward
  zero, ``%`` takes the dividend's sign, by zero is an error) or two doubles (IEEE:
  ``1.0 / 0.0`` is infinity); an int and a double do not mix (a condition that computes
  reads its numbers as doubles, :mod:`skillwire.conditions.dialect`); ``%`` of doubles
  is an error. ``+`` also joins two strings or two lists;
* a timestamp minus a timestamp is a duration; a timestamp plus or minus a duration is
  a timestamp; durations add and subtract;
* ``int()`` of a double truncates toward zero (out of range, NaN: an error), of a text
  reads a whole number in base ten (``'+12'``, not ``' 12'``); ``double()`` of a text
  reads a decimal (``'1e5'``, ``'inf'``); ``string()`` of a double writes it without
  an exponent (``1e20`` as ``100000000000000000000``, ``1.0`` as ``1``);
* ``timestamp('2025-01-01T10:00:00Z')`` reads RFC 3339; ``duration('1h30m')`` reads
  numbers with the units ``h m s ms us ns``; the getters of a timestamp read it at
  the offset it carries (UTC for ``now``)
  (``getMonth``, ``getDayOfMonth``, ``getDayOfYear`` count from 0, ``getDate`` from 1,
  ``getDayOfWeek`` from Sunday = 0); those of a duration give its whole length in the
  unit (``duration('90m').getHours()`` is 1).
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Callable
from typing import Any, Final

from skillwire.conditions._values import INT_MAX, INT_MIN, Unsure, fail, kind

__all__ = [
    "ARITHMETIC",
    "CONVERSIONS",
    "GETTERS",
    "as_double",
    "double_text",
    "negate",
]

_UTC = datetime.UTC
_US = datetime.timedelta(microseconds=1)
_EXACT = 2**53


def _whole(value: int) -> int | Unsure:
    return value if INT_MIN <= value <= INT_MAX else fail("integer overflow")


def _operands(left: Any, right: Any) -> tuple[str, str] | Unsure:
    a = kind(left)
    if a is None:
        return left  # type: ignore[no-any-return]
    b = kind(right)
    if b is None:
        return right  # type: ignore[no-any-return]
    return a, b


def _mismatch(op: str, a: str, b: str) -> Unsure:
    return fail(f"no such overload: {a} {op} {b}")


def _add(left: Any, right: Any) -> Any:
    kinds = _operands(left, right)
    if type(kinds) is Unsure:
        return kinds
    a, b = kinds  # type: ignore[misc]
    if a != b:
        if a == "timestamp" and b == "duration":
            return _moved(left, right)
        return _mismatch("+", a, b)
    if a == "int":
        return _whole(left + right)
    if a in ("double", "string"):
        return left + right
    if a == "list":
        return [*left, *right]
    if a == "duration":
        return _span(left + right)
    return _mismatch("+", a, b)


def _subtract(left: Any, right: Any) -> Any:
    kinds = _operands(left, right)
    if type(kinds) is Unsure:
        return kinds
    a, b = kinds  # type: ignore[misc]
    if a == "timestamp" and b == "duration":
        return _moved(left, -right)
    if a != b:
        return _mismatch("-", a, b)
    if a == "int":
        return _whole(left - right)
    if a == "double":
        return left - right
    if a == "duration":
        return _span(left - right)
    if a == "timestamp":
        return _span(_instant(left) - _instant(right))
    return _mismatch("-", a, b)


def _multiply(left: Any, right: Any) -> Any:
    kinds = _operands(left, right)
    if type(kinds) is Unsure:
        return kinds
    a, b = kinds  # type: ignore[misc]
    if a != b:
        return _mismatch("*", a, b)
    if a == "int":
        return _whole(left * right)
    if a == "double":
        return left * right
    return _mismatch("*", a, b)


def _divide(left: Any, right: Any) -> Any:
    kinds = _operands(left, right)
    if type(kinds) is Unsure:
        return kinds
    a, b = kinds  # type: ignore[misc]
    if a != b:
        return _mismatch("/", a, b)
    if a == "int":
        if right == 0:
            return fail("division by zero")
        quotient = abs(left) // abs(right)
        return _whole(quotient if (left < 0) == (right < 0) else -quotient)
    if a == "double":
        if right == 0.0:
            if math.isnan(left) or left == 0.0:
                return math.nan
            return math.copysign(math.inf, left) * math.copysign(1.0, right)
        return left / right
    return _mismatch("/", a, b)


def _remainder(left: Any, right: Any) -> Any:
    kinds = _operands(left, right)
    if type(kinds) is Unsure:
        return kinds
    a, b = kinds  # type: ignore[misc]
    if a != b or a != "int":
        return _mismatch("%", a, b)
    if right == 0:
        return fail("modulo by zero")
    rest = abs(left) % abs(right)
    return rest if left >= 0 else -rest


ARITHMETIC: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "+": _add, "-": _subtract, "*": _multiply, "/": _divide, "%": _remainder,
}  # fmt: skip
"""The binary arithmetic operators, by their CEL spelling."""


def negate(value: Any) -> Any:
    """``-value``."""
    of = kind(value)
    if of == "int":
        return _whole(-value)
    if of == "double":
        return -value
    if of is None:
        return value
    return fail(f"no such overload: -{of}")


def as_double(value: Any) -> Any:
    """A whole number read from the data of a condition that computes, as a double
    (within 2**53, where that is exact); anything else unchanged."""
    if type(value) is int and -_EXACT <= value <= _EXACT:
        return float(value)
    return value


# timestamps and durations ------------------------------------------------------------

_MAX_SPAN = datetime.timedelta(seconds=315_576_000_000)


def _instant(value: datetime.datetime) -> datetime.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=_UTC)


def _moved(moment: datetime.datetime, by: datetime.timedelta) -> Any:
    try:
        found = _instant(moment) + by
    except OverflowError:
        return fail("timestamp overflow")
    return found


def _span(value: datetime.timedelta) -> Any:
    return value if -_MAX_SPAN <= value <= _MAX_SPAN else fail("duration overflow")


_NANOS = {"h": 3_600_000_000_000, "m": 60_000_000_000, "s": 1_000_000_000}
_NANOS |= {"ms": 1_000_000, "us": 1_000, "ns": 1}


def parse_duration(text: str) -> datetime.timedelta | Unsure:
    """``duration(text)``: ``[-+]`` then numbers each with a unit (``1h30m``, ``1.5s``)."""
    at, sign = 0, 1
    if text[:1] in ("-", "+"):
        sign = -1 if text[0] == "-" else 1
        at = 1
    if text[at:] == "0":
        return datetime.timedelta(0)
    nanos = decimal.Decimal(0)
    parts = 0
    while at < len(text):
        start = at
        while at < len(text) and ((text[at].isascii() and text[at].isdigit()) or text[at] == "."):
            at += 1
        number = text[start:at]
        unit_start = at
        while at < len(text) and text[at].isascii() and text[at].isalpha():
            at += 1
        unit = text[unit_start:at]
        if not number or number == "." or number.count(".") > 1 or unit not in _NANOS:
            return fail(f"{text!r} is not a duration")
        nanos += decimal.Decimal(number) * _NANOS[unit]
        parts += 1
    if not parts:
        return fail(f"{text!r} is not a duration")
    if nanos > (_MAX_SPAN // _US) * 1000:
        return fail("duration overflow")
    return datetime.timedelta(microseconds=int(nanos // 1000) * sign)


def parse_timestamp(text: str) -> datetime.datetime | Unsure:
    """``timestamp(text)``: RFC 3339, ``2025-01-01T10:00:00Z`` or with an offset."""
    bad = fail(f"{text!r} is not an RFC 3339 timestamp")
    if len(text) < 20 or not text.isascii() or text[10] not in "Tt ":
        return bad
    date, clock = text[:10], text[11:]
    if not (date[4] == date[7] == "-" and date.replace("-", "").isdigit() and len(date) == 10):
        return bad
    if clock[-1:] in ("Z", "z"):
        clock, offset = clock[:-1], "+00:00"
    else:
        clock, offset = clock[:-6], clock[-6:]
        if not (offset[0] in "+-" and offset[3] == ":" and offset[1:].replace(":", "").isdigit()):
            return bad
    whole, _, fraction = clock.partition(".")
    if len(whole) != 8 or whole[2] != ":" or whole[5] != ":":
        return bad
    if not whole.replace(":", "").isdigit():
        return bad
    if "." in clock and (not fraction.isdigit() or len(fraction) > 9):
        return bad
    micros = (fraction + "000000")[:6] if fraction else "0"
    try:
        found = datetime.datetime.fromisoformat(f"{date}T{whole}.{micros:0>6}{offset}")
    except ValueError:
        return bad
    return found


def _text_of_time(value: datetime.datetime) -> str:
    moment = _instant(value)
    micros = moment.microsecond
    if micros == 0:
        fraction = ""
    elif micros % 1000 == 0:
        fraction = f".{micros // 1000:03d}"
    else:
        fraction = f".{micros:06d}"
    offset = moment.utcoffset() or datetime.timedelta(0)
    minutes = abs(offset) // datetime.timedelta(minutes=1)
    sign = "-" if offset < datetime.timedelta(0) else "+"
    zone = f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S") + fraction + zone


def _text_of_span(value: datetime.timedelta) -> str:
    """A duration as Go writes one (``1h30m0s``, ``1.5s``, ``24h0m0.123s``)."""
    micros = value // _US
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    if micros < 1_000_000:
        if micros < 1000:
            return f"{sign}{micros}µs"
        return f"{sign}{_decimal_text(micros, 1000)}ms"
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    text = f"{_decimal_text(rest, 1_000_000)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _decimal_text(amount: int, unit: int) -> str:
    whole, part = divmod(amount, unit)
    if not part:
        return str(whole)
    digits = f"{part:0{len(str(unit)) - 1}d}".rstrip("0")
    return f"{whole}.{digits}"


def _time_getter(read: Callable[[datetime.datetime], int]) -> Callable[[Any], Any]:
    def getter(value: Any) -> Any:
        of = kind(value)
        if of == "timestamp":
            return read(_instant(value))
        return value if of is None else fail(f"no such overload for {of}")

    return getter


def _span_getter(unit: int, read: Callable[[datetime.datetime], int]) -> Callable[[Any], Any]:
    def getter(value: Any) -> Any:
        of = kind(value)
        if of == "timestamp":
            return read(_instant(value))
        if of == "duration":
            micros = value // _US
            whole = abs(micros) // unit
            return whole if micros >= 0 else -whole
        return value if of is None else fail(f"no such overload for {of}")

    return getter


GETTERS: Final[dict[str, Callable[[Any], Any]]] = {
    "getFullYear": _time_getter(lambda t: t.year),
    "getMonth": _time_getter(lambda t: t.month - 1),
    "getDate": _time_getter(lambda t: t.day),
    "getDayOfMonth": _time_getter(lambda t: t.day - 1),
    "getDayOfWeek": _time_getter(lambda t: (t.weekday() + 1) % 7),
    "getDayOfYear": _time_getter(lambda t: t.timetuple().tm_yday - 1),
    "getHours": _span_getter(3_600_000_000, lambda t: t.hour),
    "getMinutes": _span_getter(60_000_000, lambda t: t.minute),
    "getSeconds": _span_getter(1_000_000, lambda t: t.second),
    "getMilliseconds": _span_getter(1_000, lambda t: t.microsecond // 1000),
}
"""The methods of a timestamp (and, for hours to seconds, of a duration), no arguments."""


def _no(value: Any, of: str | None) -> Any:
    return value if of is None else fail(f"no such overload for {of}")


# conversions -------------------------------------------------------------------------


def double_text(value: float) -> str:
    """A double as CEL writes it: no exponent, no ``.0`` on a whole number."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = format(decimal.Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _to_int(value: Any) -> Any:
    of = kind(value)
    if of == "int":
        return value
    if of == "double":
        if math.isnan(value) or not -(2.0**63) < value < 2.0**63:
            return fail("integer overflow")
        return int(value)
    if of == "string":
        digits = value[1:] if value[:1] in ("+", "-") else value
        if not digits or not digits.isascii() or not digits.isdigit():
            return fail(f"int() cannot read {value!r}")
        significant = digits.lstrip("0") or "0"
        if len(significant) > 19:
            return fail("integer overflow")  # and Python reads no more than 4,300 digits
        return _whole(-int(significant) if value[0] == "-" else int(significant))
    return _no(value, of) if of is None else fail(f"int() of {of}")


def _to_double(value: Any) -> Any:
    of = kind(value)
    if of == "double":
        return value
    if of == "int":
        return float(value)
    if of == "string":
        if not value.isascii() or "_" in value or value != value.strip() or not value:
            return fail(f"double() cannot read {value!r}")
        try:
            return float(value)
        except ValueError:
            return fail(f"double() cannot read {value!r}")
    return _no(value, of) if of is None else fail(f"double() of {of}")


def _to_string(value: Any) -> Any:
    of = kind(value)
    if of == "string":
        return value
    if of == "int":
        return str(value)
    if of == "double":
        return double_text(value)
    if of == "timestamp":
        return _text_of_time(value)
    if of == "duration":
        return _text_of_span(value)
    return _no(value, of) if of is None else fail(f"string() of {of}")


def _to_timestamp(value: Any) -> Any:
    of = kind(value)
    if of == "string":
        return parse_timestamp(value)
    if of == "timestamp":
        return value
    return _no(value, of) if of is None else fail(f"timestamp() of {of}")


def _to_duration(value: Any) -> Any:
    of = kind(value)
    if of == "string":
        return parse_duration(value)
    if of == "duration":
        return value
    return _no(value, of) if of is None else fail(f"duration() of {of}")


def _dyn(value: Any) -> Any:
    kind(value)
    return value


CONVERSIONS: Final[dict[str, Callable[[Any], Any]]] = {
    "int": _to_int, "double": _to_double, "string": _to_string, "dyn": _dyn,
    "timestamp": _to_timestamp, "duration": _to_duration,
}  # fmt: skip
"""The conversion functions of one value, by name."""
