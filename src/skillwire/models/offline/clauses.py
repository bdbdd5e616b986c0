"""A message cut into the requests it strings together, for several intents.

"Pay the electricity bill and then tell my landlord" asks for two things. The offline
classifier scores the whole message, and then each clause on its own
(:func:`clauses`): a clause is cut at the end of a sentence (``.``, ``!``, ``?``,
``;``) and before a word that joins two requests (``and then``, ``then``, ``also``,
``after that``, ``as well as``, ``plus``, ``and``). A clause that fits another intent
well on its own adds that intent (:mod:`skillwire.models.offline`); a clause that fits
none adds nothing, so cutting too often costs no intent.
"""

from __future__ import annotations

import re

__all__ = ["MAX_CLAUSES", "clauses"]

MAX_CLAUSES = 8
"""Clauses looked at per message (a longer list is cut here: a message of a thousand
``and`` costs no more than this)."""

_CUT = re.compile(
    r"[.!?;]+(?:\s+|$)"
    r"|,?\s+(?:and\s+then|and\s+also|after\s+that|as\s+well\s+as|then|also|plus|and)\s+",
    re.IGNORECASE,
)


def clauses(message: str) -> list[str]:
    """The clauses of ``message`` with text in them, in order (at most
    :data:`MAX_CLAUSES`; the message itself when it has one)."""
    parts = [p.strip() for p in _CUT.split(message)]
    return [p for p in parts if p][:MAX_CLAUSES]
