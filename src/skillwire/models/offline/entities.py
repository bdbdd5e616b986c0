"""Entities from a message, by declared ``pattern``, ``enum``, examples and type.

An order id such as ``ORD-12345`` is found by the entity's ``pattern``, or by a shape
learned from its examples (letters stay literal, digits become ``[0-9]``); an amount such
as ``$750`` by its numeric type, preferring numbers marked as money and never a number
inside a span another entity already took.

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

__all__ = ["extract_entities", "shape_of"]

_NUMBER = re.compile(
    r"(?P<cur>[$€£])?\s?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<after>\s?(?:dollars|usd|eur|euros|gbp|pounds|bucks))?",
    re.IGNORECASE,
)
_EDGE = "[^\\w-]"
"""What may stand next to a value found in a sentence (RE2's ASCII ``\\w``)."""
_TRIES = 64
"""Candidates looked at per pattern before giving up (each is one linear search)."""


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


def extract_entities(text: str, specs: list[dict[str, Any]]) -> dict[str, Any]:
    """Values for the declared entities found in ``text``."""
    found: dict[str, Any] = {}
    taken: list[tuple[int, int]] = []
    for spec in specs:
        name = spec.get("name")
        kind = spec.get("type", "string")
        if not isinstance(name, str) or kind not in ("string", None):
            continue
        patterns = []
        whole = None
        if isinstance(spec.get("pattern"), str) and spec["pattern"]:
            patterns.append(spec["pattern"])
            whole = _whole(spec["pattern"])
        patterns += [shape_of(str(e)) for e in spec.get("examples") or [] if str(e).strip()]
        for pattern in patterns:
            value, span = _search(pattern, text, taken, whole)
            if value is not None and span is not None:
                found[name] = value
                taken.append(span)
                break
        for option in spec.get("enum") or []:
            if name in found:
                break
            match = re.search(rf"\b{re.escape(str(option))}\b", text, re.IGNORECASE)
            if match and _free(match.span(), taken):
                found[name] = option
                taken.append(match.span())
    for spec in specs:
        name = spec.get("name")
        kind = spec.get("type")
        if not isinstance(name, str) or name in found or kind not in ("number", "integer"):
            continue
        candidates = []
        for match in _NUMBER.finditer(text):
            if not _free(match.span(), taken):
                continue
            money = bool(match.group("cur") or match.group("after"))
            candidates.append((not money, match.start(), match))
        if not candidates:
            continue
        _, _, best = min(candidates, key=lambda c: (c[0], c[1]))
        number = float(best.group("num").replace(",", ""))
        found[name] = int(number) if kind == "integer" or number.is_integer() else number
        taken.append(best.span())
    return found
