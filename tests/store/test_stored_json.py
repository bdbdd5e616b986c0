"""What the store writes as JSON: orjson with a walk over exact types, checked against
the standard library's path on random values, odd ones included."""

from __future__ import annotations

import json
import math
from enum import IntEnum
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwire.core.plainjson import plain_dumps
from skillwire.store._stored_json import checked_json, storable, stored_json
from skillwire.tools.python_callable import as_json


class Level(IntEnum):
    LOW = 1


class Text(str):
    """A str subclass."""


ODD = st.sampled_from(
    [math.nan, math.inf, -math.inf, 2**70, -(2**64), (1, 2), Level.LOW, Text("t"), b"x", {1, 2}]
)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text() | ODD
KEYS = st.text(max_size=4) | st.integers(0, 3) | st.sampled_from([Text("k"), None])
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.tuples(inner) | st.dictionaries(KEYS, inner, max_size=4)
    ),
    max_leaves=12,
)


def outcome(dump: Any, value: Any) -> tuple[str, Any]:
    try:
        return "ok", json.loads(dump(value, "v"))
    except TypeError:
        return "refused", None


@settings(max_examples=1500, deadline=None)
@given(VALUES)
def test_the_fast_path_agrees_with_the_standard_library(value: Any) -> None:
    fast, slow = outcome(stored_json, value), outcome(checked_json, value)
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        assert fast[1] == slow[1] == value


@pytest.mark.parametrize("value", [math.nan, [1.0, math.inf], {"a": (1,)}, {"k": {2: 1}}])
def test_values_that_would_not_read_back_are_refused(value: Any) -> None:
    with pytest.raises(TypeError, match=r"not JSON|cannot hold|key of type|does not read back"):
        stored_json({"x": value}, "job j1 state")


def test_big_integers_and_subclasses_take_the_standard_path() -> None:
    assert json.loads(stored_json({"n": 2**70}, "v")) == {"n": 2**70}
    assert stored_json({"level": Level.LOW, "t": Text("é")}, "v") == '{"level":1,"t":"é"}'


@settings(max_examples=1000, deadline=None)
@given(VALUES)
def test_plain_values_and_only_they_take_orjson(value: Any) -> None:
    """What :func:`plain_dumps` writes reads back equal, by orjson and by the standard
    library; what it declines is not plain; :func:`as_json` copies either way alike."""
    data = plain_dumps(value)
    try:
        slow: tuple[str, Any] = ("ok", json.loads(json.dumps(value, allow_nan=False)))
    except (TypeError, ValueError):
        slow = ("refused", None)
    if data is not None:
        assert orjson.loads(data) == json.loads(data) == value
        assert slow == ("ok", value)
        copied = as_json(value)
        assert copied == value and (copied is not value or not isinstance(value, dict | list))
    else:
        assert slow[0] == "refused" or slow[1] != value or _odd(value)
        try:
            assert ("ok", as_json(value)) == slow
        except (TypeError, ValueError):
            assert slow[0] == "refused"


def _odd(value: Any) -> bool:
    """Whether ``value`` holds something not of the exact JSON types (a subclass, a tuple)
    or a key that is not exactly ``str``."""
    kind = type(value)
    if kind is dict:
        return any(type(k) is not str or _odd(v) for k, v in value.items())
    if kind is list:
        return any(_odd(v) for v in value)
    if kind is float:
        return not math.isfinite(value)
    return kind not in (str, int, bool, type(None)) or (kind is int and abs(value) >= 2**63)


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("\ud800", "\ufffd"),
        ({"a\udfff": ["x\ud800y", 1], "b": "é"}, {"a\ufffd": ["x\ufffdy", 1], "b": "é"}),
        ("\ud83d\ude00", "😀"),  # a pair, as two code points: the character it encodes
        ("\ude00\ud83d", "\ufffd\ufffd"),  # the wrong way round: two lone ones
        ("é\udc80", "é\ufffd"),  # a byte that os.fsdecode could not read
    ],
)
def test_lone_surrogates_are_stored_as_the_replacement_character(value: Any, stored: Any) -> None:
    """UTF-8, and so SQLite, cannot hold a lone surrogate: the text stored has U+FFFD in
    its place instead of failing the write (and the batch it shares a commit with)."""
    text = stored_json(value, "v")
    assert json.loads(text.encode("utf-8")) == stored


def test_a_surrogate_does_not_let_a_non_json_value_through() -> None:
    with pytest.raises(TypeError, match=r"\$\.t has type tuple"):
        stored_json({"t": ("\ud800",)}, "job j1 state")


def mended(text: str) -> str:
    """``text`` with each pair of surrogates joined into its character and each lone
    surrogate read as U+FFFD, one code point at a time."""
    out, i = [], 0
    while i < len(text):
        high, low = text[i], text[i + 1 : i + 2]
        if "\ud800" <= high <= "\udbff" and "\udc00" <= low <= "\udfff":
            out.append(chr(0x10000 + ((ord(high) - 0xD800) << 10) + ord(low) - 0xDC00))
            i += 2
            continue
        out.append("\ufffd" if "\ud800" <= high <= "\udfff" else high)
        i += 1
    return "".join(out)


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(codec=None, categories=["Cs", "Ll", "Lo", "So"])))
def test_storable_text_is_the_text_mended(text: str) -> None:
    stored = storable(text)
    assert stored == mended(text)
    stored.encode("utf-8")
    assert (stored is text) == (mended(text) == text)
