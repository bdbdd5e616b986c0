"""Plain JSON values, written fast.

A value is *plain* when it is made of the exact JSON types only: dicts with ``str`` keys,
lists, strings, ints (within 64 bits), bools, None and finite floats. Such a value reads
back from its JSON equal to itself, so it can be stored and copied through orjson, which
is several times faster than the standard library. Anything else (a tuple, NaN, an enum,
a subclass, a non-string key) needs the standard library's path and its checks: orjson
would quietly write a tuple as a list, NaN as ``null`` and an enum as its value.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Sequence
from typing import TypeVar

import orjson

__all__ = ["mended", "mended_text", "plain_dumps", "plain_dumps_all"]

_V = TypeVar("_V")

_SCALARS = frozenset((str, int, bool, type(None)))
"""Exact types that are always plain (a float only when finite)."""
_NOT_FLOATS = _SCALARS | {dict, list}
"""The exact types a plain value is made of, but float."""
_LEVELS_FROM = 1024
"""JSON of at least this many bytes is proved plain level by level (:func:`_plain_levels`)."""
_STRICT = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
"""orjson hands subclasses, dataclasses and datetimes to ``default`` (none: it raises)
instead of writing them as their base type; it refuses non-string keys (str subclasses
included) and integers past 64 bits by itself."""


def plain_dumps(value: object) -> bytes | None:
    """The compact JSON of ``value`` (UTF-8) if it is plain, else None.

    orjson writes it, refusing keys that are not exactly ``str``, integers past 64 bits,
    subclasses and other types; then a walk over the exact types of the values proves
    that what orjson accepted reads back equal (no tuple, no enum, no NaN or infinity),
    without building a copy to compare: value by value for a small value, level by
    level for a large one (see :func:`_plain_levels`).
    """
    try:
        data = orjson.dumps(value, option=_STRICT)
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        return None
    if type(value) in _SCALARS:
        return data
    try:
        plain = _plain(value) if len(data) < _LEVELS_FROM else _plain_levels([value])
    except RecursionError:  # pragma: no cover - orjson refuses nesting past 255 levels
        return None
    return data if plain else None


def plain_dumps_all(values: Sequence[object]) -> list[bytes] | None:
    """:func:`plain_dumps` of each of ``values``, the same bytes, if every one is plain,
    else None (then :func:`plain_dumps` tells which).

    One proof for all of them: their levels of nesting are walked together, so a
    store's save (a job's body and its journal entry) pays the walk's cost per level
    once, not once per document.
    """
    try:
        dumped = [orjson.dumps(value, option=_STRICT) for value in values]
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        return None
    try:
        if sum(map(len, dumped)) < _LEVELS_FROM:
            plain = all(map(_plain, values))
        else:
            plain = _plain_levels(values)
    except RecursionError:  # pragma: no cover - orjson refuses nesting past 255 levels
        return None
    return dumped if plain else None


def _plain(value: object) -> bool:
    """Whether the values in ``value`` are of the exact JSON types (keys are orjson's to
    check: it has written ``value`` already)."""
    kind = type(value)
    if kind is dict:
        items = value.values()  # type: ignore[attr-defined]
    elif kind is list:
        items = value
    elif kind is float:
        return math.isfinite(value)  # type: ignore[arg-type]
    else:
        return kind in _SCALARS
    for item in items:
        if type(item) in _SCALARS or _plain(item):
            continue
        return False
    return True


def _plain_levels(level: Sequence[object]) -> bool:
    """Whether :func:`_plain` holds for every value of ``level``, proved one level of
    nesting at a time, each level a list, so that the interpreter runs a few steps per
    level rather than several per value (orjson has refused nesting past 255 levels,
    so circular values too).

    The exact types at a level must all be plain ones, and ``gc.get_referents`` gives
    the next level, in C: the values of each dict (its keys too if they are not all
    ``str``: orjson refused those already), the items of each list, nothing for a
    scalar. Only a level that holds a float (or a type that is not plain) is walked
    value by value, for the floats' finiteness. On a job's saves (1 to 6 KB of JSON) it
    costs a quarter fewer instructions than :func:`_plain`; on a value under
    :data:`_LEVELS_FROM` bytes, a few levels of a few values, more (callgrind).
    """
    while level:
        if not _NOT_FLOATS.issuperset(map(type, level)):
            for item in level:
                kind = type(item)
                if kind is float:
                    if not math.isfinite(item):  # type: ignore[arg-type]
                        return False
                elif kind not in _NOT_FLOATS:
                    return False
        level = gc.get_referents(*level)
    return True


def mended_text(text: str) -> str:
    """``text`` as UTF-8 can hold it: itself, unless it holds a surrogate code point
    (U+D800 to U+DFFF, e.g. from the JSON escape ``"\\ud800"``): then each lone one
    becomes U+FFFD, as a UTF-8 decoder does with a byte it cannot read, and a high and
    a low surrogate in a row become the character they encode."""
    if text.isascii():  # constant time: CPython keeps the answer on the string
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def mended(value: _V) -> _V:
    """``value`` with :func:`mended_text` applied to every text in it, keys included
    (dicts and lists are copied only where something changed)."""
    kind = type(value)
    if kind is str:
        return mended_text(value)  # type: ignore[arg-type,return-value]
    if kind is dict:
        items = value.items()  # type: ignore[attr-defined]
        fixed = {mended(k): mended(v) for k, v in items}
        same = all(a is b and x is y for (a, x), (b, y) in zip(items, fixed.items(), strict=True))
        return value if same and len(fixed) == len(value) else fixed  # type: ignore[arg-type,return-value]
    if kind is list:
        fixed_list = [mended(v) for v in value]  # type: ignore[attr-defined]
        same = all(a is b for a, b in zip(value, fixed_list, strict=True))  # type: ignore[call-overload]
        return value if same else fixed_list  # type: ignore[return-value]
    return value
