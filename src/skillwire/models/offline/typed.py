"""Dates, date ranges, e-mail addresses and lists found in a message.

- A **date** is written ``2026-03-14``, ``14 March 2026``, ``14 Mar 2026``, ``March 14,
  2026`` or ``Mar 14 2026`` (a month by name or its first three letters, any case);
  it is taken as ISO text, and only when it is a day of the calendar. Dates written
  with slashes (``03/04/2026``: March or April?) and dates relative to today
  (``tomorrow``) are not read: the offline extractor does not guess.
- A **date range** is two dates joined by ``to``, ``until``, ``till``, ``through``,
  ``-`` or ``and`` (``between ... and ...``; ``from`` before the first is allowed):
  ``{"start": ..., "end": ...}``, never one that ends before it starts.
- An **e-mail address** is ``local@domain.tld`` (letters, digits, ``._%+-``).
- A **list** takes every value its items' kind finds, in order, each once, at most its
  ``maxItems`` (else 20).

Every search here is linear in the message (no backtracking pattern over it).
"""

from __future__ import annotations

import itertools
import re
from datetime import date

__all__ = ["find_dates", "find_emails", "find_range"]

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(?P<{0}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ISO = r"(?P<y1>[0-9]{4})-(?P<m1>[0-9]{2})-(?P<d1>[0-9]{2})"
_DAY_FIRST = (
    r"(?P<d2>[0-9]{1,2})(?:st|nd|rd|th)?\s+" + _MONTH.format("n2") + r",?\s+(?P<y2>[0-9]{4})"
)
_MONTH_FIRST = _MONTH.format("n3") + r"\s+(?P<d3>[0-9]{1,2})(?:st|nd|rd|th)?,?\s+(?P<y3>[0-9]{4})"
_DATE = re.compile(
    rf"(?<![\w-])(?:{_ISO}|{_DAY_FIRST}|{_MONTH_FIRST})(?![\w-]|[.,/:][0-9])", re.IGNORECASE
)
_JOINS = frozenset({"to", "until", "till", "through", "thru", "-", "–", "—", "and"})
_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*"
    r"\.[A-Za-z]{2,24}(?![\w-])"
)

Span = tuple[int, int]


def _free(span: Span, taken: list[Span]) -> bool:
    return all(span[1] <= a or span[0] >= b for a, b in taken)


def _iso(match: re.Match[str]) -> str | None:
    """The ISO text of a date found, or None when it is no day of the calendar."""
    parts = match.groupdict()
    try:
        if parts["y1"]:
            day = date(int(parts["y1"]), int(parts["m1"]), int(parts["d1"]))
        elif parts["y2"]:
            day = date(int(parts["y2"]), _MONTHS[parts["n2"].lower()], int(parts["d2"]))
        else:
            day = date(int(parts["y3"]), _MONTHS[parts["n3"].lower()], int(parts["d3"]))
    except (ValueError, KeyError, TypeError):
        return None
    return day.isoformat()


def find_dates(text: str, taken: list[Span]) -> list[tuple[str, Span]]:
    """Every calendar date written in ``text`` outside the ``taken`` spans, in order."""
    found = []
    for match in _DATE.finditer(text):
        value = _iso(match)
        if value is not None and _free(match.span(), taken):
            found.append((value, match.span()))
    return found


def find_range(text: str, taken: list[Span]) -> tuple[dict[str, str], Span] | None:
    """The first two dates joined as a range (see the module's docstring), or None."""
    dates = find_dates(text, taken)
    for (first, a), (second, b) in itertools.pairwise(dates):
        between = text[a[1] : b[0]].strip().lower()
        if between in _JOINS and first <= second:
            return {"start": first, "end": second}, (a[0], b[1])
    return None


def find_emails(text: str, taken: list[Span]) -> list[tuple[str, Span]]:
    """Every e-mail address in ``text`` outside the ``taken`` spans, in order."""
    return [(m.group(0), m.span()) for m in _EMAIL.finditer(text) if _free(m.span(), taken)]
