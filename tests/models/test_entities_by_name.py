"""The offline extractor finds identifiers and amounts by an entity's name and type alone,
and never returns a value that is not in the message."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwire.models.offline.entities import extract_entities
from skillwire.models.offline.values import is_amount_name, is_identifier_name

ORDER_ID = {"name": "order_id", "type": "string"}
ORDER_NO = {"name": "order_number", "type": "integer"}
AMOUNT = {"name": "amount", "type": "number"}
SPECS = [ORDER_ID, AMOUNT]


def found(text: str, *specs: dict[str, Any]) -> dict[str, Any]:
    return extract_entities(text, list(specs) or SPECS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I want a refund for order 12345, it was $750", {"order_id": "12345", "amount": 750}),
        ("Refund $750 for order 12345", {"order_id": "12345", "amount": 750}),
        ("order #A-1234 please", {"order_id": "A-1234"}),
        ("Order number: 98765", {"order_id": "98765"}),
        ("my order no. 555 arrived broken", {"order_id": "555"}),
        ("refund ORD-12345 for 750 dollars", {"order_id": "ORD-12345", "amount": 750}),
        ("refund #8812", {"order_id": "8812"}),
        ("refund $1,250.50 on order 777", {"order_id": "777", "amount": 1250.5}),
        ("I'd like 300 back for order 12345", {"order_id": "12345", "amount": 300}),
        ("Refund EUR 20 for order 123", {"order_id": "123", "amount": 20}),
    ],
)
def test_found_by_name_and_type(text: str, expected: dict[str, Any]) -> None:
    assert found(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I want my money back", {}),  # no number at all
        ("order $750 please", {"amount": 750}),  # money is never the order id
        ("$750", {"amount": 750}),
        ("order 2 pizzas", {}),  # a count after the cue, not an order
        ("order 12/05 please", {}),  # a date
        ("order 12,345.6.7", {}),
        ("ship it at 7am, 15% off", {}),
        ("$1,25 back", {}),  # neither 1 nor 25: ambiguous, not taken
        ("my order-12345", {"order_id": "order-12345"}),  # one token: an identifier
        ("reorder 12345", {}),  # a bare run of digits is no amount either
        ("ticket T-99 for order ORD-12345", {"order_id": "ORD-12345"}),
    ],
)
def test_near_misses(text: str, expected: dict[str, Any]) -> None:
    assert found(text) == expected


def test_orders_listed() -> None:
    assert found("orders 4711 and 4712", ORDER_ID) == {"order_id": "4711"}


def test_a_whole_number_type_takes_digits_only() -> None:
    assert found("order #A-1234", ORDER_NO) == {}
    assert found("order 12345 for $750", ORDER_NO, AMOUNT) == {"order_number": 12345, "amount": 750}
    assert found("order A-1234 for $750", ORDER_NO, AMOUNT) == {"amount": 750}


def test_an_integer_never_takes_a_decimal() -> None:
    assert found("$1,250.50", {"name": "amount", "type": "integer"}) == {}
    assert found("$1,250", {"name": "amount", "type": "integer"}) == {"amount": 1250}


def test_amounts_prefer_money_other_numbers_prefer_plain() -> None:
    specs = [{"name": "count", "type": "integer"}, AMOUNT]
    assert found("3 items for $20", *specs) == {"count": 3, "amount": 20}
    assert found("$20 for 3 items", *specs) == {"count": 3, "amount": 20}


def test_a_declared_pattern_still_decides() -> None:
    strict = {"name": "order_id", "type": "string", "pattern": "^ORD-[0-9]{5}$"}
    assert found("order 12345", strict) == {}
    assert found("order ORD-12345", strict) == {"order_id": "ORD-12345"}
    options = {"name": "order_id", "type": "string", "enum": ["777"]}
    assert found("order 12345", options) == {}


def test_without_a_cue_an_identifier_shape_is_taken_only_when_alone() -> None:
    both = [ORDER_ID, {"name": "customer_id", "type": "string"}]
    assert found("refund ORD-12345", ORDER_ID) == {"order_id": "ORD-12345"}
    assert found("refund ORD-12345", *both) == {}  # whose is it? not guessed
    assert found("customer C-100 order 12345", *both) == {
        "order_id": "12345",
        "customer_id": "C-100",
    }
    assert found("refund 12345", ORDER_ID) == {}  # bare digits need their cue


def test_names() -> None:
    assert all(map(is_identifier_name, ["order_id", "orderId", "ticket_no", "order-number"]))
    assert not any(map(is_identifier_name, ["amount", "identity", "video", "order"]))
    assert is_amount_name("refund_amount") and is_amount_name("totalPrice")
    assert is_amount_name("x", "money") and not is_amount_name("refund_id")


def _appears(value: Any, text: str) -> bool:
    if isinstance(value, str):
        return value.lower() in text.lower()
    digits = f"{value}".replace(".", "")
    plain = "".join(ch for ch in text if ch.isdigit())
    return digits.rstrip("0") in plain or digits in plain


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="order #$€,.:-/%A-Z0123456789dlas ", max_size=50))
def test_nothing_is_made_up(text: str) -> None:
    for spec_set in (SPECS, [ORDER_NO, AMOUNT], [{"name": "count", "type": "integer"}]):
        for name, value in extract_entities(text, spec_set).items():
            assert _appears(value, text), (text, name, value)


@pytest.mark.parametrize(
    "text",
    ["1" * 5000, "order " + "1" * 5000, "$" + "1" * 5000, "1" * 5000 + ".5", "0." + "1" * 5000],
)
def test_a_number_too_long_to_be_exact_is_not_taken(text: str) -> None:
    """Python refuses to read more than 4,300 digits (and a float of them is infinite):
    such a run is no number, and nothing fails."""
    specs = [ORDER_NO, AMOUNT, {"name": "count", "type": "integer"}]
    assert found(text, *specs) == {}


def test_fifteen_digits_are_the_most_a_number_takes() -> None:
    assert found("order " + "9" * 15, ORDER_NO) == {"order_number": 10**15 - 1}
    assert found("order " + "9" * 16, ORDER_NO) == {}
    assert found("order " + "9" * 16, ORDER_ID) == {"order_id": "9" * 16}  # as text


def test_a_cue_is_looked_for_just_before_the_number() -> None:
    far = "order" + " " * 60 + "300"
    assert found(far, AMOUNT) == {"amount": 300}
    assert found("order 300", AMOUNT) == {}
