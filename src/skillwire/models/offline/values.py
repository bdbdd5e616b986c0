"""Identifiers and amounts found by an entity's name and type, with no pattern declared.

An entity named like an identifier (its last word ``id``, ``number``, ``no``, ``code``,
``ref`` ...: ``order_id``, ``orderNumber``, ``ticket_no``) takes the token that follows
one of its other words in the message: ``order 12345``, ``order #A-1234``, ``order
number: 555``. Without such a cue word, only a token written as an identifier
(``#1234``, ``ORD-12345``) is taken, and only when the entity is the sole identifier
asked for. A money value (``$750``) is never an identifier; a whole-number type takes
digits only.

A number entity takes a number written as a whole token (``$1,250.50``, ``750 dollars``,
``3``), never one inside another token (``A-1234``, ``12/05``, ``7am``, ``15%``) or one
an identifier cue announces (``order 12345``). An entity named like an amount
(``amount``, ``price``, ``total`` ...) prefers a money value; any other prefers a plain
number. An ``integer`` never takes ``2.5`` (rounding would make up a value).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "Found",
    "currency_of",
    "find_amount",
    "find_identifier",
    "is_amount_name",
    "is_identifier_name",
]

_ID_WORDS = frozenset({"id", "number", "num", "no", "nr", "code", "ref", "reference", "ident"})
_AMOUNT_WORDS = frozenset(
    {
        "amount",
        "price",
        "total",
        "cost",
        "sum",
        "fee",
        "refund",
        "payment",
        "charge",
        "balance",
        "money",
        "paid",
        "value",
        "subtotal",
    }
)
_MAX_DIGITS = 15
"""Digits a number taken may have (before the point): up to here every integer is exact
as a JSON number anywhere (2**53 has 16); a longer run is no number, only text."""
_PLAIN_AMOUNT_DIGITS = 4
"""An amount written with no currency has at most this many digits before the point."""
_MONEY_TYPES = frozenset({"money", "amount", "currency"})
_GENERIC_CUES = frozenset({"order", "ticket", "invoice", "account", "case", "ref", "id"})
"""Words that announce an identifier whatever the entity is called."""

_CONNECTOR = r"(?:(?:#|:|=|-|no\b\.?|nr\b\.?|num\b\.?|number\b|id\b|is\b)\s*)*"
_TOKEN = r"#?(?P<val>[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?)"
_AFTER = r"(?![A-Za-z0-9_%]|[.,/:-][0-9])"
_SHAPED = re.compile(
    r"(?<![\w$€£#-])(?:#(?P<hash>[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?)"
    r"|(?P<code>[A-Za-z]{1,6}-?[0-9]{3,}))" + _AFTER
)
_NUMBER = re.compile(
    r"(?<![\w.,/:#-])(?P<pre>(?:[$€£]|(?:usd|eur|gbp)\s?)\s?)?"
    r"(?P<num>[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?)"
    r"(?![\w%]|[.,/:-][0-9])"
    r"(?P<post>\s?(?:dollars?|usd|eur|euros?|gbp|pounds?|bucks)\b)?",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Found:
    """A value found in a message, and where."""

    value: str | int | float
    span: tuple[int, int]


def _words(name: str) -> list[str]:
    """``orderId`` / ``order_id`` / ``order-id`` -> ``["order", "id"]``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_identifier_name(name: str) -> bool:
    """Whether ``name`` reads as an identifier: its last word is ``id``, ``number`` ..."""
    words = _words(name)
    return bool(words) and words[-1] in _ID_WORDS


def is_amount_name(name: str, kind: str | None = None) -> bool:
    """Whether ``name`` (or the type ``kind``) reads as an amount of money."""
    if kind in _MONEY_TYPES:
        return True
    return not is_identifier_name(name) and any(w in _AMOUNT_WORDS for w in _words(name))


def cues_of(name: str) -> list[str]:
    """The words of an identifier's name that announce it: ``order_id`` -> ``order``."""
    return [w for w in _words(name) if w not in _ID_WORDS]


def _free(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return all(span[1] <= a or span[0] >= b for a, b in taken)


def _fits(value: str, whole_number: bool) -> bool:
    if whole_number:
        return value.isdigit() and len(value) <= _MAX_DIGITS
    return any(ch.isdigit() for ch in value)


def find_identifier(
    text: str,
    name: str,
    *,
    whole_number: bool,
    taken: list[tuple[int, int]],
    alone: bool,
) -> Found | None:
    """The identifier ``name`` announces in ``text``, or None. ``whole_number``: digits
    only (an ``integer`` or ``number`` entity); ``alone``: the only identifier asked for,
    so that a token shaped like one may be taken with no cue word."""
    for cue in cues_of(name):
        pattern = re.compile(
            rf"(?<![\w-]){re.escape(cue)}s?(?![\w-])\s*{_CONNECTOR}{_TOKEN}{_AFTER}", re.IGNORECASE
        )
        for match in pattern.finditer(text):
            value, span = match.group("val"), match.span("val")
            if not _fits(value, whole_number) or not _free(span, taken):
                continue
            if value.isdigit() and len(value) < 3 and "#" not in match.group(0):
                continue  # "order 2 pizzas": a count, not an order
            return Found(int(value) if whole_number else value, span)
    if not alone:
        return None
    for match in _SHAPED.finditer(text):
        group = "hash" if match.group("hash") else "code"
        value, span = match.group(group), match.span(group)
        if _fits(value, whole_number) and _free(span, taken):
            return Found(int(value) if whole_number else value, span)
    return None


_CUE_WINDOW = 40
"""How far before a number a cue is looked for (a bounded look keeps a message full of
numbers linear to read)."""
_CONNECTOR_WORDS = frozenset({"#", ":", "=", "no", "nr", "num", "number", "id", "is"})


def _announced(text: str, start: int, cues: set[str]) -> bool:
    """Whether the number at ``start`` follows an identifier cue: ``order 12345``,
    ``order no. 12345``, ``#12345``, ``id: 12345``."""
    words = re.findall(r"[A-Za-z]+|[#:=]", text[max(0, start - _CUE_WINDOW) : start].lower())
    while words and words[-1] in _CONNECTOR_WORDS:
        if words.pop() in ("#", "id", "number", "no", "nr", "num"):
            return True
    return bool(words) and (words[-1] in cues or words[-1].rstrip("s") in cues)


_CURRENCIES = {
    "$": "USD",
    "usd": "USD",
    "dollar": "USD",
    "dollars": "USD",
    "bucks": "USD",
    "€": "EUR",
    "eur": "EUR",
    "euro": "EUR",
    "euros": "EUR",
    "£": "GBP",
    "gbp": "GBP",
    "pound": "GBP",
    "pounds": "GBP",
}
"""The ISO 4217 code of each currency sign or word the number pattern reads."""


def currency_of(match: re.Match[str]) -> str | None:
    """The currency a number found was written in (``$750``: ``USD``), or None."""
    written = (match.group("pre") or match.group("post") or "").strip().lower()
    return _CURRENCIES.get(written) if written else None


def find_amount(
    text: str,
    name: str,
    kind: str | None,
    *,
    taken: list[tuple[int, int]],
    cues: set[str],
    currencies: frozenset[str] | None = None,
) -> Found | None:
    """The number for entity ``name`` of type ``kind`` in ``text``, or None: the first
    of the preferred kind (money for an amount, else plain), else the first other.
    A ``money`` value has at most two decimals; with ``currencies``, one written in
    another currency is not taken (never converted)."""
    money_first = is_amount_name(name, kind)
    fallback: Found | None = None
    for match in _NUMBER.finditer(text):
        if not _free(match.span(), taken):
            continue
        currency = currency_of(match)
        if currencies is not None and currency is not None and currency not in currencies:
            continue
        if kind == "money" and len(match.group("num").partition(".")[2]) > 2:
            continue  # fractions of a cent: not an amount of money
        money = bool(match.group("pre") or match.group("post"))
        if fallback is not None and money != money_first:
            continue  # another of the kind not preferred: the first one stands
        if not money and _announced(text, match.start("num"), cues | _GENERIC_CUES):
            continue
        digits = match.group("num").replace(",", "")
        whole, _, fraction = digits.partition(".")
        if len(whole) > _MAX_DIGITS or len(fraction) > _MAX_DIGITS:
            continue
        if not money and money_first and len(whole) > _PLAIN_AMOUNT_DIGITS:
            continue  # a long bare run of digits is an identifier, not a sum
        if fraction.strip("0"):
            if kind == "integer":
                continue  # rounding would make a value up
            value: int | float = float(digits)
        else:
            value = int(whole)  # exact, however long
        found = Found(value, match.span())
        if money == money_first:
            return found
        fallback = found
    return fallback
