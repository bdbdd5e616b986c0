"""The offline extractor and validation agree: a value pulled out is one the pattern accepts.

Both run on :mod:`skillwire.core.patterns`. The extractor looks for the entity's pattern
inside the message (its ``^`` and ``$`` standing for the edges of a word), then keeps a
value only when the whole pattern accepts it, so the user is never asked again for what
they gave.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwire.core.patterns import compile_pattern
from skillwire.models.offline.entities import extract_entities

PATTERNS = [
    "^ORD-[0-9]{5}$",
    "^[A-Z]{3}-[0-9]{5}$",
    "^\\d{5}$",
    "^ORD-[0-9]{5}$|^REF-[0-9]{3}$",
    "^[a-z]+@[a-z]+\\.com$",
    "[0-9]{3}",
    "^(ab)+$",
    "^\\$[0-9]+$",
    "^[$]?[0-9]+$",
]


def extract(pattern: str, text: str, **spec: Any) -> Any:
    found = extract_entities(text, [{"name": "x", "type": "string", "pattern": pattern, **spec}])
    return found.get("x")


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("^ORD-[0-9]{5}$", "refund ORD-12345 please", "ORD-12345"),
        ("^ORD-[0-9]{5}$", "refund ord-12345 please", "ORD-12345"),
        ("^[A-Z]{3}-[0-9]{5}$", "ref abc-12345", "ABC-12345"),
        ("^\\d{5}$", "code ٣٣٣٣٣ or 12345", "12345"),  # `\d` is ASCII, as validation says
        ("^ORD-[0-9]{5}$|^REF-[0-9]{3}$", "about REF-123 today", "REF-123"),
        ("^ORD-[0-9]{5}$", "ORD-123456 is too long", None),
        ("^ORD-[0-9]{5}$", "see xORD-12345", None),
        ("^\\$[0-9]+$", "it costs $40", "$40"),  # an escaped dollar is not an anchor
        ("^[$][0-9]+$", "it costs $40", "$40"),  # nor one in a class
    ],
)
def test_values_found_in_a_message(pattern: str, text: str, expected: str | None) -> None:
    assert extract(pattern, text) == expected


def test_a_shape_learned_from_examples_must_pass_the_pattern_too() -> None:
    assert extract("^ORD-[0-9]{5}$", "order ORD-999", examples=["ORD-123"]) is None
    assert extract("^ORD-[0-9]{3}$", "order ORD-999", examples=["ORD-123"]) == "ORD-999"


@settings(max_examples=300, deadline=None)
@given(
    pattern=st.sampled_from(PATTERNS),
    text=st.text(alphabet="aAbBoOrRdD-0123456789٣ $@.\n", max_size=40),
)
def test_every_value_extracted_is_one_validation_accepts(pattern: str, text: str) -> None:
    value = extract(pattern, text)
    if value is not None:
        assert compile_pattern(pattern).accepts(value), (pattern, text, value)
