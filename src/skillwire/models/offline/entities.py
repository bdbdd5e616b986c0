"""Entities from a message, by declared ``pattern``, ``enum``, examples, name and type.

An order id such as ``ORD-12345`` is found by the entity's ``pattern``, or by a shape
learned from its examples (letters stay literal, digits become ``[0-9]``); with neither,
an entity named like an identifier (``order_id``) takes the token its name announces
(``order 12345``, ``order #A-1234``); an amount such as ``$750`` is found by its numeric
type, an amount-like name preferring money, never a number inside a span another entity
already took (:mod:`.values`); a ``money`` entity takes no amount written in a currency
its ``currency`` does not name. ``date``, ``date_range`` and ``list`` entities are found
first (:mod:`.typed`): a list takes every value of its items' kind (an e-mail address,
a date, a pattern, an enum's options, numbers). A value that is not in the message is
never made up.

Patterns run on the skill pattern engine (:mod:`skillwire.core.patterns`), as validation
does. To find a value inside a sentence, the pattern's anchors stand for the edges of a
word (no letter, digit, ``_`` or ``-`` next to the value); a value found is kept only if
the whole pattern, anchors included, accepts it, so the extractor never hands the gate a
value that validation then rejects.
"""

from __future__ import annotations

import re
from typing import Any

from skillwire.core.patterns import Pattern, PatternError, compile_pattern, strip_anchors
from skillwire.models.offline.typed import find_dates, find_emails, find_range
from skillwire.models.offline.values import (
    cues_of,
    find_amount,
    find_identifier,
    is_identifier_name,
)

__all__ = ["extract_entities", "shape_of"]

_ID_TYPES = ("string", "integer", "number", None)
_NUMBER_TYPES = ("number", "integer", "money", "amount")
_EDGE = "[^\\w-]"
"""What may stand next to a value found in a sentence (RE2's ASCII ``\\w``)."""
_TRIES = 64
"""Candidates looked at per pattern before giving up (each is one linear search)."""
MAX_LIST_ITEMS = 20
"""The most values a ``list`` entity takes unless it sets ``maxItems`` (as
``skillwire.skills.entity_types`` checks them)."""


def shape_of(example: str) -> str:
    """A regular expression of an example's shape: ``ORD-12345`` -> ``ORD\\-[0-9]{5}``."""
    out: list[str] = []
    i = 0
    while i < len(example):
        ch = example[i]
        if ch.isdigit():
            j = i
            while j < len(example) and example[j].isdigit():
                j += 1
            out.append(f"[0-9]{{{j - i}}}")
            i = j
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


def _finder(pattern: str, *, ignore_case: bool) -> Pattern | None:
    """The pattern within word edges, its value in group 1; None if it does not compile."""
    try:
        inner = strip_anchors(pattern)
        flags = "(?i)" if ignore_case else ""
        return compile_pattern(f"(?:^|{_EDGE})({flags}(?:{inner}))(?:{_EDGE}|$)")
    except PatternError:
        return None


def _search(
    pattern: str, text: str, taken: list[tuple[int, int]], whole: Pattern | None
) -> tuple[str | None, tuple[int, int] | None]:
    """The first free value ``pattern`` finds that ``whole`` (the entity's own pattern;
    else ``pattern`` itself, anchored) accepts, case-sensitive first. A case-insensitive
    find is kept as written, else upper-cased, else lower-cased, whichever is accepted."""
    check = whole if whole is not None else _whole(f"^(?:{pattern})$")
    for ignore_case in (False, True):
        finder = _finder(pattern, ignore_case=ignore_case)
        if finder is None or check is None:
            return None, None
        start = 0
        for _ in range(_TRIES):
            span = finder.search(text, start, group=1)
            if span is None:
                break
            start = span[0] or 1  # the next value starts further on, after an edge
            if span[0] == span[1] or not _free(span, taken):
                continue
            found = text[span[0] : span[1]]
            for value in (found, found.upper(), found.lower()) if ignore_case else (found,):
                if check.accepts(value):
                    return value, span
    return None, None


def _free(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return all(span[1] <= a or span[0] >= b for a, b in taken)


def _whole(pattern: str) -> Pattern | None:
    try:
        return compile_pattern(pattern)
    except PatternError:  # refused at load; a skill built by hand finds nothing with it
        return None


def _by_pattern(text: str, spec: dict[str, Any], taken: list[tuple[int, int]]) -> Any:
    """A string entity's value by its ``pattern``, examples' shapes or ``enum``."""
    patterns = []
    whole = None
    if isinstance(spec.get("pattern"), str) and spec["pattern"]:
        patterns.append(spec["pattern"])
        whole = _whole(spec["pattern"])
    patterns += [shape_of(str(e)) for e in spec.get("examples") or [] if str(e).strip()]
    for pattern in patterns:
        value, span = _search(pattern, text, taken, whole)
        if value is not None and span is not None:
            taken.append(span)
            return value
    for option in spec.get("enum") or []:
        match = re.search(rf"\b{re.escape(str(option))}\b", text, re.IGNORECASE)
        if match and _free(match.span(), taken):
            taken.append(match.span())
            return option
    return None


def _allowed(value: Any, spec: dict[str, Any]) -> bool:
    """Whether a value found by name passes the entity's own ``pattern`` and ``enum``."""
    pattern = spec.get("pattern")
    if isinstance(pattern, str) and pattern:
        whole = _whole(pattern)
        if whole is None or not whole.accepts(str(value)):
            return False
    options = spec.get("enum")
    return not isinstance(options, list) or value in options


def _numeric_items(spec: dict[str, Any]) -> bool:
    items = spec.get("items")
    return isinstance(items, dict) and items.get("type") in ("number", "integer", "money")


def _currencies(spec: dict[str, Any]) -> frozenset[str] | None:
    """A money entity's currencies (``currency``: a code or a list), or None: any."""
    given = spec.get("currency")
    codes = [given] if isinstance(given, str) else given if isinstance(given, list) else None
    return None if codes is None else frozenset(str(c).upper() for c in codes)


def _typed(text: str, spec: dict[str, Any], taken: list[tuple[int, int]]) -> Any:
    """The value of a ``date``, ``date_range`` or ``list`` entity, or None."""
    kind = spec.get("type")
    if kind == "date_range":
        hit = find_range(text, taken)
        if hit is None:
            return None
        taken.append(hit[1])
        return hit[0]
    if kind == "date":
        dates = find_dates(text, taken)
        if not dates:
            return None
        taken.append(dates[0][1])
        return dates[0][0]
    return _items(text, spec, taken)


def _items(text: str, spec: dict[str, Any], taken: list[tuple[int, int]]) -> list[Any] | None:
    """A ``list`` entity's values: every one its items' kind finds, in order, each
    once, at most its ``maxItems`` (else :data:`MAX_LIST_ITEMS`); None when none is."""
    items = spec.get("items") if isinstance(spec.get("items"), dict) else {}
    assert isinstance(items, dict)
    cap = spec.get("maxItems")
    cap = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else MAX_LIST_ITEMS
    item = {"name": spec["name"], **items}
    for key in ("pattern", "enum", "examples"):
        if key not in item and key in spec:
            item[key] = spec[key]
    hits: list[tuple[Any, tuple[int, int]]]
    if item.get("format") == "email":
        hits = find_emails(text, taken)
    elif item.get("format") == "date":
        hits = find_dates(text, taken)
    else:
        hits = []
        local = list(taken)
        for _ in range(cap):
            value, span = _one_item(text, item, local)
            if value is None or span is None:
                break
            hits.append((value, span))
            local.append(span)
    values: list[Any] = []
    for value, span in hits:
        if value not in values and len(values) < cap and _allowed(value, item):
            values.append(value)
            taken.append(span)
    return values or None


def _one_item(
    text: str, item: dict[str, Any], taken: list[tuple[int, int]]
) -> tuple[Any, tuple[int, int] | None]:
    """The first free item of a list in ``text``: by pattern, examples or enum for
    text, by type for numbers."""
    kind = item.get("type", "string")
    if kind in ("number", "integer", "money"):
        hit = find_amount(text, item["name"], kind, taken=taken, cues=set())
        return (hit.value, hit.span) if hit is not None else (None, None)
    before = len(taken)
    value = _by_pattern(text, item, taken)
    if value is None or len(taken) == before:
        return None, None
    return value, taken.pop()


def extract_entities(text: str, specs: list[dict[str, Any]]) -> dict[str, Any]:
    """Values for the declared entities found in ``text``; an entity not there is left
    out, never guessed. Declared patterns, shapes and enums first, then identifiers by
    name (``order 12345``), then numbers by type (:mod:`.values`)."""
    found: dict[str, Any] = {}
    taken: list[tuple[int, int]] = []
    named = [s for s in specs if isinstance(s.get("name"), str) and s["name"]]
    numeric_lists = [s for s in named if s.get("type") == "list" and _numeric_items(s)]
    for typed in ("date_range", "date", "list"):  # before numbers: dates hold digits
        for spec in (s for s in named if s.get("type") == typed and s not in numeric_lists):
            value = _typed(text, spec, taken)
            if value is not None:
                found[spec["name"]] = value
    for spec in named:
        if spec.get("type", "string") in ("string", None):
            value = _by_pattern(text, spec, taken)
            if value is not None:
                found[spec["name"]] = value
    ids = [
        s for s in named if is_identifier_name(s["name"]) and s.get("type", "string") in _ID_TYPES
    ]
    waiting = [s for s in ids if s["name"] not in found]
    for spec in waiting:
        kind = spec.get("type", "string")
        hit = find_identifier(
            text,
            spec["name"],
            whole_number=kind in ("integer", "number"),
            taken=taken,
            alone=len(waiting) == 1,
        )
        if hit is not None and _allowed(hit.value, spec):
            found[spec["name"]] = hit.value
            taken.append(hit.span)
    cues = {c for s in ids for c in cues_of(s["name"])}
    for spec in named:
        name, kind = spec["name"], spec.get("type")
        if name in found or spec in ids or kind not in _NUMBER_TYPES:
            continue
        hit = find_amount(text, name, kind, taken=taken, cues=cues, currencies=_currencies(spec))
        if hit is not None and _allowed(hit.value, spec):
            found[name] = hit.value
            taken.append(hit.span)
    for spec in numeric_lists:  # last: a single amount is taken before a list of them
        value = _typed(text, spec, taken)
        if value is not None:
            found[spec["name"]] = value
    return found
