"""Entities from a message, by declared ``pattern``, ``enum``, examples and type.

An order id such as ``ORD-12345`` is found by the entity's ``pattern`` (anchors
dropped so it can match inside a sentence), or by a shape learned from its examples
(letters stay literal, digits become ``[0-9]``); an amount such as ``$750`` by its
numeric type, preferring numbers marked as money and never a number inside a span
another entity already took.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["extract_entities", "shape_of"]

_NUMBER = re.compile(
    r"(?P<cur>[$€£])?\s?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<after>\s?(?:dollars|usd|eur|euros|gbp|pounds|bucks))?",
    re.IGNORECASE,
)


def shape_of(example: str) -> str:
    """A regular expression of an example's shape: ``ORD-12345`` -> ``ORD-[0-9]{5}``."""
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


def _unanchored(pattern: str) -> str:
    return pattern.removeprefix("^").removesuffix("$")


def _search(
    pattern: str, text: str, taken: list[tuple[int, int]]
) -> tuple[str | None, tuple[int, int] | None]:
    """The first free match, case-sensitive first; a case-insensitive match is
    upper-cased when the pattern's literal letters are all upper case."""
    bounded = rf"(?<![\w-])(?:{pattern})(?![\w-])"
    literal = re.sub(r"\[[^\]]*\]|\{[^}]*\}|\\.", "", pattern)
    for flags in (0, re.IGNORECASE):
        try:
            matches = list(re.finditer(bounded, text, flags))
        except re.error:
            return None, None
        for match in matches:
            if _free(match.span(), taken):
                value = match.group(0)
                if flags and literal.upper() == literal and any(c.isalpha() for c in literal):
                    value = value.upper()
                return value, match.span()
    return None, None


def _free(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return all(span[1] <= a or span[0] >= b for a, b in taken)


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
        if spec.get("pattern"):
            patterns.append(_unanchored(str(spec["pattern"])))
        patterns += [shape_of(str(e)) for e in spec.get("examples") or [] if str(e).strip()]
        for pattern in patterns:
            value, span = _search(pattern, text, taken)
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
