"""The plainness proof of :func:`skillwire.core.plainjson.plain_dumps`: a small value is
walked value by value, a large one a level of nesting at a time (``gc.get_referents``).
What both must refuse, wherever it hides; and that they agree."""

from __future__ import annotations

import gc
import math
import uuid
from enum import Enum, IntEnum
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwire.core.plainjson import (
    _LEVELS_FROM,
    _plain,
    _plain_levels,
    plain_dumps,
    plain_dumps_all,
)

PADDING = "p" * _LEVELS_FROM
"""A text that makes a value large enough for the level-by-level walk."""


class Level(IntEnum):
    LOW = 1


class Colour(Enum):
    RED = "red"


class Liar(float):
    """A float subclass that says it equals anything."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = float.__hash__


class Lying(dict[str, Any]):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]


def padded(value: Any, large: bool) -> Any:
    """``value`` in a list, with a text that sends it to the level walk if ``large``."""
    return [value, PADDING] if large else [value]


def nested(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = {"a": [1, "x", None, True, 2.5], "b": [value]}
    return value


ODD = [
    (1, 2),
    math.nan,
    math.inf,
    -math.inf,
    Level.LOW,
    Colour.RED,
    uuid.UUID(int=1),
    orjson.Fragment(b"1"),
    Liar(1.0),
    Lying(a=1),
    "\ud800",  # a lone surrogate: orjson refuses it
]


LARGE = pytest.mark.parametrize("large", [False, True], ids=["small", "large"])


@LARGE
@pytest.mark.parametrize("odd", ODD, ids=repr)
@pytest.mark.parametrize("depth", [0, 1, 5, 60])
def test_a_value_that_is_not_plain_is_refused_at_any_depth(
    odd: Any, depth: int, large: bool
) -> None:
    # A level with finite floats, and the odd value last in it, after plain ones.
    assert plain_dumps(padded(nested({"k": [0.5, "s", 3, odd]}, depth), large)) is None
    assert plain_dumps(padded(nested([odd], depth), large)) is None


@LARGE
@pytest.mark.parametrize("odd", [math.nan, math.inf, (1.5,), Liar(2.0)], ids=repr)
def test_a_bad_float_among_good_ones_is_refused(odd: Any, large: bool) -> None:
    assert plain_dumps(padded([1.0, 2.0, {"x": [3.0, odd, 4.0]}, 5.0], large)) is None
    assert plain_dumps(padded({"x": 1.0, "y": odd}, large)) is None


@LARGE
def test_non_string_keys_are_refused_wherever_they_are(large: bool) -> None:
    assert plain_dumps(padded(nested({1: "a"}, 3), large)) is None
    assert plain_dumps(padded(nested({"a": {None: 1}}, 3), large)) is None


def test_plain_values_are_written_as_orjson_writes_them() -> None:
    shared = {"s": [1, 2.5, None]}
    value = {"a": [shared, shared], "b": nested(shared, 30), "c": list(range(5000)), "d": {}}
    assert plain_dumps(value) == orjson.dumps(value)
    assert plain_dumps(nested("x", 120)) is not None  # 240 levels: within orjson's 255
    for scalar in ("é", 0, -(2**63), 2**64 - 1, 1.5, -0.0, True, None):
        assert plain_dumps(scalar) == orjson.dumps(scalar)


def test_the_level_walk_does_not_depend_on_the_collector_being_on() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        assert plain_dumps({"x": [1.0, (1,)], "p": PADDING}) is None
        assert plain_dumps({"x": [1.0, [1]], "p": PADDING}) is not None
    finally:
        if was:
            gc.enable()


def test_circular_values_are_refused() -> None:
    loop: list[Any] = [1.0]
    loop.append(loop)
    assert plain_dumps(loop) is None
    assert plain_dumps({"a": loop}) is None


ODDS = st.sampled_from([math.nan, math.inf, (1,), Level.LOW, Colour.RED, Liar(1.0), Lying()])
SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats() | st.text()
VALUES = st.recursive(
    SCALARS | ODDS,
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=3), inner, max_size=6)
    ),
    max_leaves=40,
)


@settings(max_examples=1500, deadline=None)
@given(VALUES)
def test_the_two_walks_agree(value: Any) -> None:
    try:
        orjson.dumps(value, option=orjson.OPT_PASSTHROUGH_SUBCLASS)
    except TypeError:
        return  # orjson refuses it: neither walk sees it
    assert _plain(value) == _plain_levels([value])


@settings(max_examples=500, deadline=None)
@given(st.lists(VALUES, max_size=3), st.booleans())
def test_all_at_once_agrees_with_one_at_a_time(values: list[Any], large: bool) -> None:
    """One proof for several values (their levels walked together) says what a proof of
    each says, and writes the same bytes."""
    if large:
        values = [*values, PADDING]
    each = [plain_dumps(value) for value in values]
    together = plain_dumps_all(values)
    if None in each:
        assert together is None
    else:
        assert together == each


@pytest.mark.parametrize("odd", ODD, ids=repr)
@pytest.mark.parametrize("where", [0, 1])
def test_all_at_once_refuses_an_odd_value_in_any_of_them(odd: Any, where: int) -> None:
    values: list[Any] = [nested({"k": [0.5, "s"]}, 3), padded(nested({"p": 1}, 2), True)]
    values[where] = padded(nested({"k": [0.5, "s", 3, odd]}, 2), where == 1)
    assert plain_dumps_all(values) is None
    written = [b'{"a":[1,2.5]}', f'"{PADDING}"'.encode()]
    assert plain_dumps_all([{"a": [1, 2.5]}, PADDING]) == written
