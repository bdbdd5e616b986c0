"""Text as the SQLite store writes it: JSON documents and text columns.

What is stored reads back equal to what was given, or is refused here with a
``TypeError`` naming the path: a plain ``json.dumps`` would quietly turn tuples into
lists and ``{1: ...}`` into ``{"1": ...}``. A plain value
(:mod:`skillwire.core.plainjson`: the exact JSON types) is written by orjson; anything
else takes the standard library's path, which accepts what reads back equal and names
what does not.

One exception, so that no text can keep a job from being stored: SQLite holds text as
UTF-8, which cannot hold a lone surrogate (a code point from U+D800 to U+DFFF that is
not half of a pair; a model, a user or a tool can hand one over, e.g. as the JSON escape
``"\\ud800"``). :func:`storable` (:func:`skillwire.core.plainjson.mended_text`)
replaces each with U+FFFD, the replacement character, as a UTF-8 decoder does with a
byte it cannot read, and joins a high and a low surrogate that stand in a row into the
character they encode. Texts that differ only
in their lone surrogates are then stored as the same text. The store maps the ids and
filters it is given the same way, so a job whose id held one is found by it again.

Mended, not refused: refusing the write would lose the job it saves (a pause, the
reply, the events of a step), for text the job did not choose and could not mend, and
no reader (the API, the CLI, an SQL query) could have shown it as it was anyway.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

from skillwire.core.plainjson import mended_text as storable
from skillwire.core.plainjson import plain_dumps

__all__ = ["checked_json", "storable", "stored_json"]


def stored_json(value: object, what: str) -> str:
    """Compact JSON of ``value``, as stored; a ``TypeError`` naming the path in ``what``
    if it is not plain JSON (see the module)."""
    data = plain_dumps(value)  # refuses surrogates: orjson writes only valid UTF-8
    return data.decode() if data is not None else storable(checked_json(value, what))


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def checked_json(value: object, what: str) -> str:
    """:func:`stored_json` with the standard library, surrogates kept: the encoder
    refuses what JSON cannot hold, then the text is read back and compared
    (subclasses, tuples and odd keys may not read back equal)."""
    try:  # first: it also refuses circular values
        text = _encode(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what}: {_first_non_json(value) or err}") from err
    if json.loads(text) != value:
        raise TypeError(f"{what}: {_first_non_json(value) or 'does not read back equal'}")
    return text


def _first_non_json(value: object, path: str = "$") -> str | None:
    for where, item in _walk(value, path):
        if isinstance(item, float) and not math.isfinite(item):
            return f"{where} is {item!r}, which JSON cannot hold"
        if item is not None and not isinstance(item, str | int | float | list | dict):
            return f"{where} has type {type(item).__name__}, which is not JSON"
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return f"{where} has a key of type {type(key).__name__} ({key!r})"
    return None


def _walk(
    value: object, path: str, above: frozenset[int] = frozenset()
) -> Iterator[tuple[str, object]]:
    yield path, value
    if isinstance(value, dict | list):
        if id(value) in above:  # a circular value: the encoder's error names it
            return
        above = above | {id(value)}
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}", above)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]", above)
